//! The idle gaps of each GPU, as the exporters draw them: the analyzers'
//! idle segments (every idle nanosecond of the analysis window, one cause
//! each, with the operator, annotation and source blamed), so the timeline
//! and `gapscope analyze` always agree.

use gapscope_analyzers::intervals::{union, Span};
use gapscope_analyzers::names::display_source;
use gapscope_analyzers::segments::IdleAnalyzer;
use gapscope_analyzers::window::window;
use gapscope_collectors::trace::{Ns, Strings, Trace};

/// One idle interval of one device.
#[derive(Clone, Debug, PartialEq)]
pub struct IdleGap {
    /// GPU index.
    pub device: u32,
    /// Start, ns since the trace origin.
    pub start: Ns,
    /// End, ns since the trace origin.
    pub end: Ns,
    /// Cause name (`idle` when no attribution is available).
    pub cause: String,
    /// The operator held responsible, when attributed.
    pub op: Option<String>,
    /// Its nearest user annotation, when attributed.
    pub annotation: Option<String>,
    /// Source line, when the trace has stacks.
    pub source: Option<String>,
}

/// The busy spans of each active device, unioned: `(device, spans)`.
pub fn busy_by_device(trace: &Trace) -> Vec<(u32, Vec<Span>)> {
    trace
        .active_devices()
        .into_iter()
        .map(|d| {
            let spans = (0..trace.gpu.len())
                .filter(|&i| trace.gpu.device[i] == d && trace.gpu.is_busy(i))
                .map(|i| (trace.gpu.start[i], trace.gpu.end[i]))
                .collect();
            (d, union(spans))
        })
        .collect()
}

/// Every active device's idle segments inside the analysis window (the
/// profiled steps, else the whole trace), in device then time order.
pub fn idle_gaps(trace: &Trace) -> Vec<IdleGap> {
    let span = window(trace).span;
    let analyzer = IdleAnalyzer::new(trace);
    let mut out = Vec::new();
    for device in trace.active_devices() {
        for seg in analyzer.segments(device, span) {
            out.push(IdleGap {
                device,
                start: seg.start,
                end: seg.end,
                cause: seg.cause.name().to_string(),
                op: trace.op_name(seg.op).map(str::to_string),
                annotation: trace.op_name(seg.annotation).map(str::to_string),
                source: (seg.source != Strings::EMPTY)
                    .then(|| display_source(trace.strings.get(seg.source)).to_string()),
            });
        }
    }
    out
}

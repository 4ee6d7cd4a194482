//! The idle gaps of each GPU, as the exporters draw them: the session's
//! idle segments (every idle nanosecond of the analysis window, one cause
//! each, with the operator, annotation and source blamed), so the timeline
//! and `gapscope analyze` always agree.

use gapscope_analyzers::Session;
use gapscope_collectors::trace::Ns;

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

/// Every active device's idle segments inside the session's window (the
/// profiled steps, else the whole trace), in device then time order, with
/// the names they blame.
pub fn idle_gaps(session: &Session) -> Vec<IdleGap> {
    let mut out = Vec::new();
    for d in session.devices() {
        for seg in &d.segments {
            let names = session.segment_names(seg);
            out.push(IdleGap {
                device: d.device,
                start: seg.start,
                end: seg.end,
                cause: seg.cause.name().to_string(),
                op: names.operator.map(str::to_string),
                annotation: names.annotation.map(str::to_string),
                source: names.source.map(str::to_string),
            });
        }
    }
    out
}

//! The idle gaps of each GPU, as the exporters draw them: the session's
//! idle segments (every idle nanosecond of the analysis window, one cause
//! each, with the operator, annotation and source blamed), so the timeline
//! and `gapscope analyze` always agree.

use gapscope_analyzers::Session;
use gapscope_collectors::trace::Ns;

/// One idle interval of one device. Its names borrow from the session's
/// trace: a big trace has millions of segments, and a `String` per name
/// made the export hold every segment's names twice over (250 MB on a
/// 551 MB DDP trace).
#[derive(Clone, Debug, PartialEq)]
pub struct IdleGap<'t> {
    /// GPU index.
    pub device: u32,
    /// Start, ns since the trace origin.
    pub start: Ns,
    /// End, ns since the trace origin.
    pub end: Ns,
    /// Cause name (`idle` when no attribution is available).
    pub cause: &'static str,
    /// The operator held responsible, when attributed.
    pub op: Option<&'t str>,
    /// Its nearest user annotation, when attributed.
    pub annotation: Option<&'t str>,
    /// Source line, when the trace has stacks.
    pub source: Option<&'t str>,
}

/// Every active device's idle segments inside the session's window (the
/// profiled steps, else the whole trace), in device then time order, with
/// the names they blame.
pub fn idle_gaps<'t>(session: &'t Session) -> Vec<IdleGap<'t>> {
    let devices = session.devices();
    let mut out = Vec::with_capacity(devices.iter().map(|d| d.segments.len()).sum());
    for d in devices {
        for seg in &d.segments {
            let names = session.segment_names(seg);
            out.push(IdleGap {
                device: d.device,
                start: seg.start,
                end: seg.end,
                cause: seg.cause.name(),
                op: names.operator,
                annotation: names.annotation,
                source: names.source,
            });
        }
    }
    out
}

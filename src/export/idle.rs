//! The idle gaps of each GPU, as the exporters draw them: the session's
//! idle segments (every idle nanosecond of the analysis window, one cause
//! each, with the operator, annotation and source blamed), so the timeline
//! and `gapscope analyze` always agree.

use gapscope_analyzers::names::display_source;
use gapscope_analyzers::segments::IdleSegment;
use gapscope_analyzers::Session;
use gapscope_collectors::trace::{Ns, Strings, Trace};

/// One idle interval of one device: the session's segment itself, whose
/// names are read from the trace when the gap is drawn (a big trace has
/// millions of segments: 16 bytes each here, where a copy of the names
/// took 80 and resolving them all up front took a pass of its own).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct IdleGap<'t> {
    /// GPU index.
    pub device: u32,
    /// The segment: times, cause and blamed rows.
    pub segment: &'t IdleSegment,
}

impl IdleGap<'_> {
    /// Start, ns since the trace origin.
    pub fn start(&self) -> Ns {
        self.segment.start
    }

    /// End, ns since the trace origin.
    pub fn end(&self) -> Ns {
        self.segment.end
    }

    /// Cause name (`idle` when no attribution is available).
    pub fn cause(&self) -> &'static str {
        self.segment.cause.name()
    }

    /// The source line blamed, as reports show it, when the trace has
    /// stacks.
    pub fn source<'a>(&self, trace: &'a Trace) -> Option<&'a str> {
        let s = self.segment.source;
        (s != Strings::EMPTY).then(|| display_source(trace.strings.get(s)))
    }
}

/// Every active device's idle segments inside the session's window (the
/// profiled steps, else the whole trace), in device then time order.
pub fn idle_gaps<'t>(session: &'t Session) -> Vec<IdleGap<'t>> {
    let devices = session.devices();
    let mut out = Vec::with_capacity(devices.iter().map(|d| d.segments.len()).sum());
    for d in devices {
        out.extend(d.segments.iter().map(|segment| IdleGap {
            device: d.device,
            segment,
        }));
    }
    out
}

//! [`Session`]: the analysis of one trace (one rank), built once, that
//! every view reads: text, JSON, HTML and Markdown reports, Perfetto,
//! Chrome and Parquet exports, diff, the Python package and the analysis of
//! a job of many ranks. Views format what a session holds; they compute
//! nothing of their own.
//!
//! ```text
//! Trace ──► Session::new ──► selection + window   (at once)
//!                          ├─ devices()   timelines, busy spans, kernel spans,
//!                          │              CPU evidence, idle segments
//!                          ├─ findings()  detectors, ranked
//!                          ├─ kernels()   kernel table, Tensor Core shares
//!                          └─ analysis()  Analysis: the serializable view
//! ```
//!
//! Each part is computed the first time it is asked for and kept, so a
//! view pays only for what it reads (a Chrome export reads the trace and
//! nothing else) and nothing is computed twice (the report's timeline
//! strips bin the same idle segments the analysis summed).
//!
//! # Public API
//!
//! - [`Session::new`] borrows a trace, [`Session::owned`] takes it (a
//!   `Session<'static>`, which a Python object can hold);
//! - [`Session::trace`]: the analysed trace, after `--steps` /
//!   `--exclude-last-step` / `--time-window` selection. Every row index in
//!   the session (segments, findings' evidence, launches) is into this
//!   trace. [`Session::whole_trace`]: the trace as read;
//! - [`Session::options`], [`Session::window`] (span and steps);
//! - [`Session::devices`] / [`Session::device`]: one [`DeviceSession`] per
//!   device with busy GPU work, sorted by id;
//! - [`Session::findings`]: every device's findings, ranked by estimated
//!   savings;
//! - [`Session::kernels`]: the kernel table; [`Session::launches`]: every
//!   launch with its CPU time, GPU time and delay;
//! - [`Session::analysis`] / [`Session::into_analysis`]: the
//!   [`Analysis`] (the JSON of `gapscope analyze --format json`);
//! - [`Session::blame`]: the per-row blame columns;
//!   [`Session::segment_names`] names a segment's operator, annotation and
//!   source;
//! - [`Session::strip`], [`Session::utilization`],
//!   [`Session::launch_queue`]: the binned and counter series timelines
//!   draw; [`Session::counters`]: both binned over the window, as the JSON
//!   holds them.
//!
//! ```
//! use gapscope_analyzers::analysis::AnalyzeOptions;
//! use gapscope_analyzers::session::Session;
//! use gapscope_collectors::trace::Sketch;
//!
//! // µs        0    10   20   30   40
//! // thread 1  [ProfilerStep#1............]
//! //           [L1]        [L2]
//! // stream 7    [k1....]       [k2......]
//! let trace = Sketch::in_units(1_000)
//!     .step(1, 0, 40)
//!     .call(0, 2, "cudaLaunchKernel", 1)
//!     .call(20, 22, "cudaLaunchKernel", 2)
//!     .kernel(7, 2, 10, 1)
//!     .kernel(7, 25, 40, 2)
//!     .finish();
//! let session = Session::new(&trace, &AnalyzeOptions::default());
//! assert_eq!(session.window().span, (0, 40_000));
//! let gpu = &session.devices()[0];
//! assert_eq!(gpu.busy, vec![(2_000, 10_000), (25_000, 40_000)]);
//! let idle: i64 = gpu.segments.iter().map(|s| s.dur()).sum();
//! assert_eq!(idle, session.analysis().devices[0].breakdown.idle_ns);
//! ```

use crate::analysis::{Analysis, AnalyzeOptions};
use crate::attribution::OpContext;
use crate::breakdown::{timelines_with, DeviceTimeline};
use crate::collectives::communication_rows;
use crate::counters::{self, Counters};
use crate::detectors::{detect_device, rank, Finding};
use crate::evidence::DeviceEvidence;
use crate::free::free_beside;
use crate::intervals::Span;
use crate::kernels::{kernel_table, KernelTable};
use crate::launch_stats::{launches, Launch};
use crate::names::display_source;
use crate::segments::{IdleAnalyzer, IdleSegment};
use crate::strip::{strip, Strip};
use crate::window::{self, Window};
use gapscope_collectors::trace::{Strings, Trace};
use std::borrow::Cow;
use std::sync::OnceLock;

/// The analysis of one trace. See the [module docs](self) for the API.
pub struct Session<'t> {
    whole: Cow<'t, Trace>,
    /// The selection when the options cut the trace; `None`: the whole.
    selected: Option<Trace>,
    options: AnalyzeOptions,
    window: Window,
    blame: OnceLock<OpContext>,
    communication: OnceLock<Vec<bool>>,
    devices: OnceLock<Vec<DeviceSession>>,
    findings: OnceLock<Vec<Finding>>,
    kernels: OnceLock<KernelTable>,
    launches: OnceLock<Vec<Launch>>,
    pub(crate) analysis: OnceLock<Analysis>,
}

/// What a session knows about one device.
#[derive(Clone, Debug)]
pub struct DeviceSession {
    /// GPU index.
    pub device: u32,
    /// Where each class of work owns time, over the whole selection
    /// (not clipped to the window).
    pub timeline: DeviceTimeline,
    /// Busy time (kernels, copies, memsets), sorted and disjoint, over the
    /// whole selection.
    pub busy: Vec<Span>,
    /// Kernel time alone, sorted and disjoint, over the whole selection.
    pub kernels: Vec<Span>,
    /// The CPU side: launching threads, blocking calls, profiler markers.
    pub evidence: DeviceEvidence,
    /// Every idle nanosecond of the window, one cause and one blame each,
    /// in time order.
    pub segments: Vec<IdleSegment>,
}

/// The names a segment blames: operator, annotation and source line.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SegmentNames<'a> {
    /// Innermost operator.
    pub operator: Option<&'a str>,
    /// Nearest annotation / module / DataLoader range.
    pub annotation: Option<&'a str>,
    /// Source frame, as reports show it.
    pub source: Option<&'a str>,
}

impl<'t> Session<'t> {
    /// The session of `trace`, selected as `options` say. Only the
    /// selection and the window are computed here; the rest on first use.
    pub fn new(trace: &'t Trace, options: &AnalyzeOptions) -> Session<'t> {
        Self::build(Cow::Borrowed(trace), options)
    }

    fn build(whole: Cow<'t, Trace>, options: &AnalyzeOptions) -> Session<'t> {
        let selected = (!window::selects_all(&whole, &options.window, options.time_window))
            .then(|| window::select_in(&whole, &options.window, options.time_window));
        let window = window::window(selected.as_ref().unwrap_or(&whole));
        Session {
            whole,
            selected,
            options: options.clone(),
            window,
            blame: OnceLock::new(),
            communication: OnceLock::new(),
            devices: OnceLock::new(),
            findings: OnceLock::new(),
            kernels: OnceLock::new(),
            launches: OnceLock::new(),
            analysis: OnceLock::new(),
        }
    }

    /// The analysis if computed, keeping nothing else. The rest is freed
    /// on a thread of its own while the caller goes on (to write the
    /// analysis, as a rule).
    pub(crate) fn take_analysis(self) -> Option<Analysis> {
        let trace = self.trace();
        let rows = trace.gpu.len() + trace.runtime.len() + trace.cpu_ops.len();
        let whole = match self.whole {
            Cow::Owned(t) => Some(t),
            Cow::Borrowed(_) => None,
        };
        let rest = (whole, self.selected, self.blame, self.communication);
        free_beside(
            (rest, self.devices, self.findings, self.kernels, self.launches),
            rows,
        );
        self.analysis.into_inner()
    }

    /// The analysed trace: the selection the options make, or the whole
    /// trace when they select all of it. Session row indices point here.
    pub fn trace(&self) -> &Trace {
        self.selected.as_ref().unwrap_or(&self.whole)
    }

    /// The trace as read, before any selection.
    pub fn whole_trace(&self) -> &Trace {
        &self.whole
    }

    /// The options the session was made with.
    pub fn options(&self) -> &AnalyzeOptions {
        &self.options
    }

    /// The analysed window and its steps.
    pub fn window(&self) -> &Window {
        &self.window
    }

    /// Per `cpu_ops` row of [`Session::trace`]: the operator, annotation,
    /// DataLoader range and source line to blame.
    pub fn blame(&self) -> &OpContext {
        self.blame.get_or_init(|| OpContext::new(self.trace()))
    }

    /// Per `gpu` row of [`Session::trace`]: whether it is a collective
    /// ([`communication_rows`], the one definition every view uses).
    pub fn communication(&self) -> &[bool] {
        self.communication
            .get_or_init(|| communication_rows(self.trace()))
    }

    /// One entry per device with busy GPU work, sorted by id.
    pub fn devices(&self) -> &[DeviceSession] {
        self.devices.get_or_init(|| {
            let trace = self.trace();
            let idle = IdleAnalyzer::with_context(trace, self.blame());
            timelines_with(trace, self.communication())
                .into_iter()
                .map(|timeline| {
                    let evidence = DeviceEvidence::new(trace, timeline.device);
                    let segments = idle.segments_with(&evidence, self.window.span);
                    DeviceSession {
                        device: timeline.device,
                        busy: timeline.busy(),
                        kernels: timeline.kernel_spans(),
                        timeline,
                        evidence,
                        segments,
                    }
                })
                .collect()
        })
    }

    /// The session of `device`, if it ran busy GPU work.
    pub fn device(&self, device: u32) -> Option<&DeviceSession> {
        self.devices().iter().find(|d| d.device == device)
    }

    /// Every device's findings, ranked by estimated savings.
    pub fn findings(&self) -> &[Finding] {
        self.findings.get_or_init(|| {
            let trace = self.trace();
            let mut all: Vec<Finding> = self
                .devices()
                .iter()
                .flat_map(|d| {
                    detect_device(
                        trace,
                        self.blame(),
                        self.communication(),
                        &d.evidence,
                        &self.window,
                        &d.segments,
                    )
                })
                .collect();
            rank(&mut all);
            all
        })
    }

    /// The kernel table of the selection.
    pub fn kernels(&self) -> &KernelTable {
        self.kernels.get_or_init(|| kernel_table(self.trace()))
    }

    /// Every launch of the selection (a runtime or driver call that put
    /// work on a GPU; a graph launch is one), in order of the call's start.
    pub fn launches(&self) -> &[Launch] {
        self.launches.get_or_init(|| launches(self.trace()))
    }

    /// The names `seg` blames, read from [`Session::trace`].
    pub fn segment_names(&self, seg: &IdleSegment) -> SegmentNames<'_> {
        let t = self.trace();
        SegmentNames {
            operator: t.op_name(seg.op),
            annotation: t.op_name(seg.annotation),
            source: (seg.source != Strings::EMPTY).then(|| display_source(t.strings.get(seg.source))),
        }
    }

    /// `device`'s window cut into `columns` equal columns (a report's
    /// timeline strip); `None` for a device without busy work.
    pub fn strip(&self, device: u32, columns: usize) -> Option<Strip> {
        let d = self.device(device)?;
        Some(strip(
            self.trace(),
            device,
            self.window.span,
            &d.busy,
            &d.segments,
            columns,
        ))
    }

    /// `device`'s busy percentage in bins of `bin_ns`, as a counter series
    /// ([`counters::utilization`]); empty for a device without busy work.
    pub fn utilization(&self, device: u32, bin_ns: i64) -> Vec<(i64, f64)> {
        self.device(device)
            .map(|d| counters::utilization(&d.busy, bin_ns.max(1)))
            .unwrap_or_default()
    }

    /// `device`'s launch queue length as a counter series
    /// ([`counters::launch_queue`]).
    pub fn launch_queue(&self, device: u32) -> Vec<(i64, f64)> {
        counters::launch_queue(self.trace(), device)
    }

    /// `device`'s utilization and launch queue binned over the window, in
    /// bins of [`counters::counter_bin`] ([`counters::window_counters`]):
    /// the `counters` of its JSON report. `None` for a device without busy
    /// work.
    pub fn counters(&self, device: u32) -> Option<Counters> {
        let d = self.device(device)?;
        let span = self.window.span;
        let bin = counters::counter_bin(span.1.saturating_sub(span.0));
        Some(counters::window_counters(
            &d.busy,
            counters::launch_queue_steps(self.trace(), device),
            span,
            bin,
        ))
    }
}

impl Session<'static> {
    /// The session of an owned trace (for holders that cannot borrow, such
    /// as a Python object).
    pub fn owned(trace: Trace, options: &AnalyzeOptions) -> Session<'static> {
        Self::build(Cow::Owned(trace), options)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::window::WindowOptions;
    use gapscope_collectors::trace::Sketch;

    /// ```text
    /// ns        0    10   20   30   40   50   60
    /// thread 1  [ProfilerStep#1...][ProfilerStep#2...]
    ///           [L1]          [L2]
    /// stream 7     [k1.....]       [k2..........]
    /// ```
    fn two_steps() -> Trace {
        Sketch::new()
            .step(1, 0, 30)
            .step(2, 30, 60)
            .call(0, 3, "cudaLaunchKernel", 1)
            .call(30, 33, "cudaLaunchKernel", 2)
            .kernel(7, 3, 20, 1)
            .kernel(7, 35, 60, 2)
            .finish()
    }

    #[test]
    fn parts_agree_with_the_analysis_and_are_computed_once() {
        let t = two_steps();
        let s = Session::new(&t, &AnalyzeOptions::default());
        assert!(std::ptr::eq(s.trace(), s.whole_trace()));
        let d = &s.devices()[0];
        assert_eq!(d.busy, vec![(3, 20), (35, 60)]);
        assert_eq!(d.kernels, d.busy);
        let a = s.analysis();
        let idle: i64 = d.segments.iter().map(|x| x.dur()).sum();
        assert_eq!(idle, a.devices[0].breakdown.idle_ns);
        assert_eq!(a.findings, s.findings());
        assert!(std::ptr::eq(s.devices(), s.devices()));
        let strip = s.strip(0, 6).unwrap();
        let busy: i64 = strip.columns.iter().map(|c| c.busy_ns).sum();
        assert_eq!(busy, a.devices[0].breakdown.busy_ns());
        assert!(s.strip(1, 6).is_none());
        assert_eq!(crate::analyze(&t, &AnalyzeOptions::default()), s.into_analysis());
    }

    #[test]
    fn a_selection_is_the_analysed_trace() {
        let t = two_steps();
        let opts = AnalyzeOptions {
            window: WindowOptions {
                steps: Some((2, 2)),
                exclude_last_step: false,
            },
            ..Default::default()
        };
        let s = Session::owned(t.clone(), &opts);
        assert_eq!(s.window().span, (30, 60));
        assert_eq!(s.trace().gpu.len(), 1);
        assert_eq!(s.whole_trace().gpu.len(), 2);
        assert_eq!(s.devices()[0].busy, vec![(35, 60)]);
    }
}

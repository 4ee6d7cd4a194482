//! [`Analysis`]: everything gapscope computes about one trace, as plain
//! serializable data: the view of a [`Session`] that `gapscope analyze
//! --format json` writes. [`analyze`] builds one in a single call.
//!
//! The JSON form is versioned by [`SCHEMA_VERSION`]. Fields added later are
//! `Option`/`Vec` with `#[serde(default, skip_serializing_if = ...)]`, so
//! older files still read and the version only moves on breaking changes.

use crate::bounds::{bounds, Bounds};
use crate::breakdown::Breakdown;
use crate::causes::CauseTotals;
use crate::detectors::Finding;
use crate::gpu_metrics::{gpu_metrics, GpuMetrics};
use crate::idle::{by_cause_in, summarize, TopGap, TopIdleOperator};
use crate::intervals::Span;
use crate::kernels::{tensor_core_share, KernelTable};
use crate::launch_stats::{stats_by_device, LaunchOptions, LaunchStats};
use crate::session::Session;
use crate::temporal::{temporal, Temporal};
use crate::window::{self, TimeRange, WindowOptions};
use gapscope_collectors::trace::{Ns, Trace};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Version of the [`Analysis`] JSON schema.
pub const SCHEMA_VERSION: u32 = 1;

/// What to analyse and with which thresholds.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AnalyzeOptions {
    /// Step selection (`--steps`, `--exclude-last-step`).
    pub window: WindowOptions,
    /// Launch-statistics cutoffs.
    pub launch: LaunchOptions,
    /// Time window (`--time-window`), intersected with the step selection.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_window: Option<TimeRange>,
}

/// The result of analysing one trace.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Analysis {
    /// [`SCHEMA_VERSION`] of this value.
    pub schema_version: u32,
    /// Where the trace came from.
    pub source: SourceInfo,
    /// The analysed range.
    pub window: WindowInfo,
    /// One report per device with busy GPU activity, sorted by id (empty for
    /// a CPU-only trace).
    pub devices: Vec<DeviceReport>,
    /// The selected steps, each with its per-device breakdown.
    pub steps: Vec<StepReport>,
    /// What to fix, every device's findings ranked by estimated savings
    /// ([`detectors`](crate::detectors)). Evidence rows index the analysed
    /// (step-selected) trace; times are ns since the trace origin.
    #[serde(default)]
    pub findings: Vec<Finding>,
    /// Counts of rows and of oddities.
    pub diagnostics: AnalysisDiagnostics,
    /// Kernel rows of the selection grouped by name, most time first
    /// ([`crate::kernels`]).
    #[serde(default)]
    pub kernels: KernelTable,
}

/// Provenance of the analysed trace.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SourceInfo {
    /// The file or capture, as the user named it.
    pub path: String,
    /// The format read (`kineto-json`, ...).
    pub format: String,
    /// Absolute time of the trace's 0 in the source's clock, ns.
    pub origin_ns: i64,
    /// Distributed rank, when known.
    pub rank: Option<i64>,
    /// Distributed world size, when known.
    pub world_size: Option<i64>,
}

/// The analysed range and how it was chosen.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WindowInfo {
    /// Start, ns since the trace origin.
    pub start_ns: Ns,
    /// End, ns since the trace origin.
    pub end_ns: Ns,
    /// `end_ns − start_ns`.
    pub duration_ns: Ns,
    /// `steps` when bounded by ProfilerSteps, `trace` when by the first and
    /// last event, `empty` when the selection kept nothing.
    pub basis: String,
    /// Number of ProfilerSteps in the whole trace.
    pub steps_in_trace: u64,
    /// Numbers of the selected steps.
    pub steps_selected: Vec<u64>,
    /// The options that chose it.
    pub options: WindowOptions,
    /// The time window asked for (`--time-window`), ns since the origin.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_window: Option<TimeRange>,
}

/// Everything about one device.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DeviceReport {
    /// GPU index.
    pub device: u32,
    /// Its name from the trace, else `GPU n`.
    pub name: String,
    /// Where the window's time went.
    pub breakdown: Breakdown,
    /// HTA-compatible temporal breakdown over the selection.
    pub temporal: Temporal,
    /// Kernel launch statistics over the selection.
    pub launch_stats: LaunchStats,
    /// The window's idle time by cause; the causes add up to
    /// `breakdown.idle_ns` exactly.
    pub idle_by_cause_ns: CauseTotals,
    /// The longest idle gaps, longest first, each described by its largest
    /// cause segment.
    pub top_gaps: Vec<TopGap>,
    /// The operators behind the most idle time, per cause, most first.
    pub top_idle_operators: Vec<TopIdleOperator>,
    /// Lower bounds over the window: busy time, kernel sum, and the largest
    /// speedup removing idle time could give.
    #[serde(default)]
    pub bounds: Bounds,
    /// Share of the device's kernel time (whole selection) in kernels
    /// whose name says Tensor Cores, 0 to 1.
    #[serde(default)]
    pub tensor_core_share: f64,
    /// TensorBoard's GPU utilization, estimated SM efficiency and
    /// utilization timeline ([`crate::gpu_metrics`]).
    #[serde(default)]
    pub gpu_metrics: GpuMetrics,
    /// Busy time inside the window (kernels, copies, memsets), as sorted,
    /// disjoint `[start, end)` pairs, ns since the trace origin: what the
    /// breakdown's busy time is made of.
    #[serde(default)]
    pub busy_spans_ns: Vec<Span>,
}

/// One selected step.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StepReport {
    /// `N` of `ProfilerStep#N`.
    pub step: u64,
    /// Start, ns since the trace origin.
    pub start_ns: Ns,
    /// End, ns since the trace origin.
    pub end_ns: Ns,
    /// Breakdown of the step's range, per device (same order as
    /// [`Analysis::devices`]).
    pub devices: Vec<StepDevice>,
}

/// One device's breakdown over one step.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StepDevice {
    /// GPU index.
    pub device: u32,
    /// Where the step's time went.
    pub breakdown: Breakdown,
    /// The step's idle time by cause (adds up to `breakdown.idle_ns`).
    pub idle_by_cause_ns: CauseTotals,
}

/// Row counts and oddities, for users to judge how far to trust the result.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AnalysisDiagnostics {
    /// Rows per table in the whole trace.
    pub rows: RowCounts,
    /// Rows per table kept by the step selection.
    pub rows_selected: RowCounts,
    /// Sync records in the selection (never counted busy).
    pub sync_records: u64,
    /// Selected GPU rows with no launching runtime call.
    pub gpu_rows_without_launch: u64,
    /// What the importer counted (skipped events and the like), by reason.
    pub importer: BTreeMap<String, u64>,
}

/// Number of rows per table.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RowCounts {
    /// GPU activity rows (kernels, copies, memsets, sync records).
    pub gpu: u64,
    /// Runtime/driver calls.
    pub runtime: u64,
    /// CPU ranges.
    pub cpu_ops: u64,
    /// Markers.
    pub markers: u64,
}

impl RowCounts {
    fn of(t: &Trace) -> Self {
        RowCounts {
            gpu: t.gpu.len() as u64,
            runtime: t.runtime.len() as u64,
            cpu_ops: t.cpu_ops.len() as u64,
            markers: t.markers.len() as u64,
        }
    }
}

/// Analyses `trace`: selects the window, then computes the per-device and
/// per-step breakdowns, the idle time's causes and culprits, the
/// HTA-compatible temporal block, the launch statistics, the bounds, the
/// detectors' findings, the kernel table and TensorBoard's GPU metrics.
/// The same as `Session::new(trace, opts).into_analysis()`.
pub fn analyze(trace: &Trace, opts: &AnalyzeOptions) -> Analysis {
    Session::new(trace, opts).into_analysis()
}

/// The [`Analysis`] of a session, from the parts it holds.
///
/// On two threads: what reads only the tables (the HTA-compatible temporal
/// block, the launches and their statistics, the kernel table) beside the
/// devices' idle segments, then the per-device and per-step reports beside
/// the detectors (the longest part; its replays use every core). The
/// session computes each part once whichever thread asks first, and the
/// results are joined in a fixed order, so the output does not depend on
/// the timing.
pub(crate) fn assemble(session: &Session) -> Analysis {
    let trace = session.whole_trace();
    let selected = session.trace();
    let opts = session.options();
    let win = session.window();
    let ((temporal, launches), _) = both(
        || {
            session.kernels();
            (
                temporal(selected),
                stats_by_device(session.launches(), &opts.launch),
            )
        },
        || session.devices(),
    );
    let ((devices, steps), findings) = both(
        || (device_reports(session, temporal, launches), step_reports(session)),
        || session.findings(),
    );
    Analysis {
        schema_version: SCHEMA_VERSION,
        source: source_info(trace),
        window: window_info(trace, selected, win, opts),
        devices,
        steps,
        findings: findings.to_vec(),
        diagnostics: diagnostics(trace, selected),
        kernels: session.kernels().clone(),
    }
}

/// Runs `a` on a thread of its own and `b` on this one; both results.
fn both<A: Send, B: Send>(a: impl FnOnce() -> A + Send, b: impl FnOnce() -> B + Send) -> (A, B) {
    std::thread::scope(|s| {
        let other = s.spawn(a);
        let rb = b();
        (other.join().unwrap_or_else(|p| std::panic::resume_unwind(p)), rb)
    })
}

/// One report per device with busy GPU work.
fn device_reports(
    session: &Session,
    temporal: Vec<(u32, Temporal)>,
    launches: Vec<(u32, LaunchStats)>,
) -> Vec<DeviceReport> {
    let trace = session.whole_trace();
    let selected = session.trace();
    let win = session.window();
    let mut temporal = temporal.into_iter();
    let mut launches = launches.into_iter().peekable();
    session
        .devices()
        .iter()
        .map(|d| {
            let segs = &d.segments;
            let attribution = summarize(selected, d.device, win.span, segs);
            DeviceReport {
                device: d.device,
                name: device_name(trace, d.device),
                breakdown: d.timeline.breakdown(win.span),
                // Both lists hold the same active devices in the same order.
                temporal: temporal.next().map(|(_, t)| t).unwrap_or_default(),
                launch_stats: launches
                    .next_if(|(dev, _)| *dev == d.device)
                    .map(|(_, s)| s)
                    .unwrap_or_default(),
                idle_by_cause_ns: attribution.idle_by_cause_ns,
                top_gaps: attribution.top_gaps,
                top_idle_operators: attribution.top_idle_operators,
                bounds: bounds(selected, d.device, win.span).with_idle(&attribution.idle_by_cause_ns),
                tensor_core_share: tensor_core_share(selected, d.device),
                gpu_metrics: gpu_metrics(selected, d.device, win.span, &d.kernels),
                busy_spans_ns: clip(&d.busy, win.span),
            }
        })
        .collect()
}

/// The selected steps, each with its per-device breakdown.
fn step_reports(session: &Session) -> Vec<StepReport> {
    session
        .window()
        .steps
        .iter()
        .map(|s| StepReport {
            step: s.number,
            start_ns: s.start,
            end_ns: s.end,
            devices: session
                .devices()
                .iter()
                .map(|d| StepDevice {
                    device: d.device,
                    breakdown: d.timeline.breakdown((s.start, s.end)),
                    idle_by_cause_ns: by_cause_in(&d.segments, (s.start, s.end)),
                })
                .collect(),
        })
        .collect()
}

/// The parts of sorted, disjoint `spans` inside `window`.
fn clip(spans: &[Span], (ws, we): Span) -> Vec<Span> {
    let first = spans.partition_point(|s| s.1 <= ws);
    spans[first..]
        .iter()
        .take_while(|s| s.0 < we)
        .map(|&(s, e)| (s.max(ws), e.min(we)))
        .filter(|(s, e)| e > s)
        .collect()
}

fn device_name(trace: &Trace, device: u32) -> String {
    (0..trace.devices.len())
        .find(|&i| trace.devices.id[i] == device)
        .map(|i| trace.strings.get(trace.devices.name[i]))
        .filter(|n| !n.is_empty())
        .map_or_else(|| format!("GPU {device}"), str::to_string)
}

fn source_info(trace: &Trace) -> SourceInfo {
    SourceInfo {
        path: trace.meta.source.clone(),
        format: trace.meta.format.clone(),
        origin_ns: trace.meta.origin_ns,
        rank: trace.meta.rank,
        world_size: trace.meta.world_size,
    }
}

fn window_info(trace: &Trace, selected: &Trace, win: &window::Window, opts: &AnalyzeOptions) -> WindowInfo {
    let basis = if !win.steps.is_empty() {
        "steps"
    } else if RowCounts::of(selected) == RowCounts::default() {
        "empty"
    } else {
        "trace"
    };
    WindowInfo {
        start_ns: win.span.0,
        end_ns: win.span.1,
        duration_ns: win.span.1 - win.span.0,
        basis: basis.to_string(),
        steps_in_trace: window::steps(trace).len() as u64,
        steps_selected: win.steps.iter().map(|s| s.number).collect(),
        options: opts.window,
        time_window: opts.time_window,
    }
}

fn diagnostics(trace: &Trace, selected: &Trace) -> AnalysisDiagnostics {
    let gpu = &selected.gpu;
    AnalysisDiagnostics {
        rows: RowCounts::of(trace),
        rows_selected: RowCounts::of(selected),
        sync_records: (0..gpu.len()).filter(|&i| !gpu.is_busy(i)).count() as u64,
        gpu_rows_without_launch: selected.links.gpu_launch.iter().filter(|r| r.is_none()).count() as u64,
        importer: trace.diagnostics.counts.clone(),
    }
}

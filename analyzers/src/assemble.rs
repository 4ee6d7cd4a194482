//! Assembling a [`Session`]'s [`Analysis`]: the per-device and per-step
//! reports, the window and source info, joined from the parts the session
//! computes once. Kept apart from `analysis` (the plain data) and `session`
//! (the parts), so neither names the other's module in a circle.

use crate::analysis::{
    Analysis, AnalysisDiagnostics, AnalyzeOptions, DeviceReport, RowCounts, SourceInfo, StepDevice,
    StepReport, WindowInfo, SCHEMA_VERSION,
};
use crate::bounds::bounds;
use crate::gpu_metrics::gpu_metrics;
use crate::idle::{by_cause_in, summarize};
use crate::intervals::Span;
use crate::kernels::tensor_core_share;
use crate::launch_stats::{launches, stats_by_device, LaunchStats};
use crate::session::Session;
use crate::temporal::{temporal, Temporal};
use crate::window;
use gapscope_collectors::trace::parallel::both;
use gapscope_collectors::trace::{MarkerKind, Trace};

impl Session<'_> {
    /// The serializable analysis.
    pub fn analysis(&self) -> &Analysis {
        self.analysis.get_or_init(|| assemble(self))
    }

    /// The analysis, keeping nothing else.
    pub fn into_analysis(self) -> Analysis {
        self.analysis();
        self.take_analysis().expect("computed above")
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
fn assemble(session: &Session) -> Analysis {
    let trace = session.whole_trace();
    let selected = session.trace();
    let opts = session.options();
    let win = session.window();
    let ((temporal, launch_stats), _) = both(
        true,
        || {
            session.kernels();
            // The launch list is made here and dropped once summed, not
            // kept in the session: only its statistics are reported, and
            // kept it was 10 MiB of nccl x62's peak, beside the detectors.
            (
                temporal(selected),
                stats_by_device(&launches(selected), &opts.launch),
            )
        },
        || session.devices(),
    );
    let ((devices, steps), findings) = both(
        true,
        || {
            (
                device_reports(session, temporal, launch_stats),
                step_reports(session),
            )
        },
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
                counters: session.counters(d.device).unwrap_or_default(),
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
        counter_ranges: selected
            .markers
            .kind
            .iter()
            .filter(|&&k| k == MarkerKind::CounterRange)
            .count() as u64,
    }
}

//! [`Analysis`]: everything gapscope computes about one trace, as plain
//! serializable data: the view of a [`Session`] that `gapscope analyze
//! --format json` writes. [`crate::analyze`] builds one in a single call.
//!
//! The JSON form is versioned by [`SCHEMA_VERSION`]. Fields added later are
//! `Option`/`Vec` with `#[serde(default, skip_serializing_if = ...)]`, so
//! older files still read and the version only moves on breaking changes.

use crate::bounds::Bounds;
use crate::breakdown::Breakdown;
use crate::causes::CauseTotals;
use crate::counters::Counters;
use crate::detectors::Finding;
use crate::gpu_metrics::GpuMetrics;
use crate::idle::{TopGap, TopIdleOperator};
use crate::intervals::Span;
use crate::kernels::KernelTable;
use crate::launch_stats::{LaunchOptions, LaunchStats};
use crate::temporal::Temporal;
use crate::window::{TimeRange, WindowOptions};
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
    /// Utilization and launch queue binned over the window, and the launch
    /// queue's whole-window mean and max ([`crate::counters`]).
    #[serde(default)]
    pub counters: Counters,
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
    /// CUPTI range-profiler records in the selection (per-kernel hardware
    /// counters, `torch.profiler._ExperimentalConfig(profiler_metrics=...)`):
    /// the profiler records them in place of GPU activity.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub counter_ranges: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl Analysis {
    /// Why the analysis has no device, for views to say after "no GPU
    /// activity found": the trace holds counter records instead, or the
    /// profiler was not asked for GPU activity at all.
    pub fn why_no_gpu_activity(&self) -> String {
        match self.diagnostics.counter_ranges {
            0 => "was the profiler run with ProfilerActivity.CUDA?".to_string(),
            n => format!(
                "it holds {} instead (per-kernel hardware counters \
                 from `torch.profiler._ExperimentalConfig(profiler_metrics=...)`, which the \
                 profiler records in place of kernel, copy and memset activity). Profile again \
                 without `profiler_metrics` to see where the GPU's time goes.",
                crate::format::count(n, "CUPTI range-profiler record", "CUPTI range-profiler records")
            ),
        }
    }
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
    pub(crate) fn of(t: &Trace) -> Self {
        RowCounts {
            gpu: t.gpu.len() as u64,
            runtime: t.runtime.len() as u64,
            cpu_ops: t.cpu_ops.len() as u64,
            markers: t.markers.len() as u64,
        }
    }
}

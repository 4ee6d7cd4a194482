//! The one data model every collector fills and every analyzer reads.
//!
//! A [`Trace`] is a set of columnar tables (one struct of `Vec`s per kind of
//! thing), with integer nanosecond times relative to the trace's own origin
//! and interned names. Collectors never build a `Trace` directly: they feed a
//! [`TraceBuilder`], whose [`finish`](TraceBuilder::finish) rebases times,
//! sorts the tables, nests CPU ranges and links GPU work to the calls and
//! operators that caused it.
//!
//! ```
//! use gapscope_collectors::trace::*;
//!
//! let mut b = TraceBuilder::new();
//! let main = b.thread(1, 1);
//! let op = b.intern("aten::mm");
//! let launch = b.intern("cudaLaunchKernel");
//! let gemm = b.intern("gemm");
//! b.push_cpu_op(CpuOp::new(main, 1_000, 9_000, op, CpuOpKind::Operator));
//! b.push_runtime(RuntimeCall::new(main, 2_000, 3_000, launch, 7));
//! b.push_gpu(GpuActivity::kernel(0, 7, 4_000, 6_000, gemm, 7));
//! let trace = b.finish();
//! assert_eq!(trace.gpu.start[0], 3_000); // rebased: the origin is the first event
//! let call = trace.links.gpu_launch[0].expect("linked by correlation id");
//! assert_eq!(trace.strings.get(trace.runtime.name[call.index()]), "cudaLaunchKernel");
//! assert_eq!(trace.op_name(trace.links.runtime_op[call.index()]), Some("aten::mm"));
//! ```

pub mod api;
mod builder;
mod hash;
mod links;
mod op_cursors;
pub mod parallel;
mod reorder;
mod rows;
mod sketch;
mod strings;
mod tables;
mod time_range;

pub use builder::TraceBuilder;
pub use hash::{FxBuildHasher, FxHashMap, FxHashSet, FxHasher};
pub use links::Links;
pub use op_cursors::{innermost_op, OpCursors};
pub use rows::{CallRow, CollectiveRow, GpuRow, MarkerRow, OpRow};
pub use sketch::Sketch;
pub use strings::{StrId, Strings};
pub use tables::*;
pub use time_range::TimeRange;

use serde::Serialize;
use std::collections::BTreeMap;

/// Nanoseconds. In tables: since the trace origin ([`TraceMeta::origin_ns`]).
pub type Ns = i64;

/// Where a trace came from and how to place it in absolute time.
#[derive(Clone, Debug, Default, Serialize)]
pub struct TraceMeta {
    /// Absolute time of the trace's 0, in ns, in the source's clock (for
    /// Kineto: µs since the Unix epoch × 1000).
    pub origin_ns: i64,
    /// The file or capture this came from, as the user named it.
    pub source: String,
    /// The format that was read (`kineto-json`, `gapscope-capture`, `generated`).
    pub format: String,
    /// Distributed rank, when the source says.
    pub rank: Option<i64>,
    /// Distributed world size, when the source says.
    pub world_size: Option<i64>,
}

/// What an importer skipped or found odd, counted by reason. Hard errors
/// (unreadable files) are not here: they stop the import.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Diagnostics {
    /// Count per reason (`event_missing_ts`, `negative_duration`, ...).
    pub counts: BTreeMap<String, u64>,
    /// The first few examples, each naming the event, for the user to look at.
    pub examples: Vec<String>,
}

impl Diagnostics {
    /// How many examples are kept in total.
    pub const MAX_EXAMPLES: usize = 20;

    /// Counts one occurrence of `reason`, keeping `example` if there is room.
    pub fn note(&mut self, reason: &str, example: impl FnOnce() -> String) {
        let n = self.counts.entry(reason.to_string()).or_insert(0);
        *n += 1;
        if *n <= 3 && self.examples.len() < Self::MAX_EXAMPLES {
            self.examples.push(example());
        }
    }

    /// Adds all counts and examples of `other`.
    pub fn absorb(&mut self, other: Diagnostics) {
        for (k, v) in other.counts {
            *self.counts.entry(k).or_insert(0) += v;
        }
        for e in other.examples {
            if self.examples.len() < Self::MAX_EXAMPLES {
                self.examples.push(e);
            }
        }
    }

    /// Total number of noted occurrences, kept rows' reasons included.
    pub fn total(&self) -> u64 {
        self.counts.values().sum()
    }

    /// Number of events skipped (every reason but [`Self::KEPT`]).
    pub fn skipped_count(&self) -> u64 {
        self.skipped().map(|(_, n)| n).sum()
    }

    /// CPU ranges that overlap another without nesting in it (real PyTorch
    /// traces hold them: Python frames around ops); they stay in the tables
    /// unnested.
    pub const PARTIAL_OVERLAP: &'static str = "cpu_op_partial_overlap";

    /// GPU rows whose correlation id several runtime calls share (ids
    /// reused, or files joined); each is linked to the latest of those
    /// calls that started at or before it.
    pub const CORRELATION_REUSED: &'static str = "correlation_id_reused";

    /// Copies whose GPU record names another direction than the runtime
    /// call that launched them asked for (ROCm's tracer records host copies
    /// as `Memcpy DtoD`); they are counted in the call's direction.
    pub const COPY_DIRECTION_FROM_CALL: &'static str = "copy_direction_from_call";

    /// Reasons that describe rows kept as they are, not events dropped.
    pub const KEPT: &'static [&'static str] = &[
        Self::PARTIAL_OVERLAP,
        Self::CORRELATION_REUSED,
        Self::COPY_DIRECTION_FROM_CALL,
    ];

    /// The kept reasons [`TraceBuilder::finish`](super::TraceBuilder::finish)
    /// counts from the rows, so a capture read back or merged counts them
    /// again (a copy's direction is stored as applied, so the count of
    /// directions taken from calls is the importer's).
    pub const RECOUNTED: &'static [&'static str] = &[Self::PARTIAL_OVERLAP, Self::CORRELATION_REUSED];

    /// The counts of events that were skipped, by reason (without [`Self::KEPT`]).
    pub fn skipped(&self) -> impl Iterator<Item = (&str, u64)> {
        self.counts
            .iter()
            .filter(|(k, _)| !Self::KEPT.contains(&k.as_str()))
            .map(|(k, &v)| (k.as_str(), v))
    }

    /// One line for everything skipped, as every front end prints it:
    /// `NAME: skipped N events (reason: n, ...)`; `None` when nothing was.
    pub fn skipped_line(&self, name: &str) -> Option<String> {
        let skipped: Vec<(&str, u64)> = self.skipped().collect();
        let n: u64 = skipped.iter().map(|(_, v)| v).sum();
        if n == 0 {
            return None;
        }
        let reasons: Vec<String> = skipped.iter().map(|(k, v)| format!("{k}: {v}")).collect();
        let events = if n == 1 { "event" } else { "events" };
        Some(format!("{name}: skipped {n} {events} ({})", reasons.join(", ")))
    }
}

/// A finished trace: every table sorted, nested and linked.
#[derive(Clone, Debug, Default)]
pub struct Trace {
    /// Origin and provenance.
    pub meta: TraceMeta,
    /// The string pool every `StrId` column points into.
    pub strings: Strings,
    /// CPU threads.
    pub threads: ThreadTable,
    /// GPU properties (may be empty when the source has none).
    pub devices: DeviceTable,
    /// Kernels, copies, memsets and sync records.
    pub gpu: GpuActivityTable,
    /// Runtime and driver API calls.
    pub runtime: RuntimeCallTable,
    /// Operators, annotations, Python frames and steps.
    pub cpu_ops: CpuOpTable,
    /// Instants, counters, GPU annotations, profiler overhead.
    pub markers: MarkerTable,
    /// Collectives' process groups and sequence numbers, which `gpu` and
    /// `cpu_ops` rows point to.
    pub collectives: CollectiveTable,
    /// GPU ↔ runtime call ↔ operator links.
    pub links: Links,
    /// Where each thread's rows start in `cpu_ops`: thread `t` owns rows
    /// `cpu_op_thread_start[t]..cpu_op_thread_start[t + 1]`.
    pub cpu_op_thread_start: Vec<u32>,
    /// What the importer skipped or found odd.
    pub diagnostics: Diagnostics,
}

impl Trace {
    /// The rows of `cpu_ops` that belong to `thread`, in start order.
    pub fn cpu_ops_of(&self, thread: ThreadId) -> std::ops::Range<usize> {
        let t = thread.0 as usize;
        self.cpu_op_thread_start[t] as usize..self.cpu_op_thread_start[t + 1] as usize
    }

    /// Name of cpu op row `op`, if there is one.
    pub fn op_name(&self, op: Option<OpRow>) -> Option<&str> {
        op.map(|o| self.strings.get(self.cpu_ops.name[o.index()]))
    }

    /// First start and last end over every row with a duration (GPU
    /// activities, runtime calls, CPU ops and markers), ns since the
    /// origin; `(0, 0)` for an empty trace.
    pub fn event_extent(&self) -> (Ns, Ns) {
        let columns = [
            (&self.gpu.start, &self.gpu.end),
            (&self.runtime.start, &self.runtime.end),
            (&self.cpu_ops.start, &self.cpu_ops.end),
            (&self.markers.start, &self.markers.end),
        ];
        let start = columns.iter().filter_map(|(s, _)| s.iter().min()).min();
        let end = columns.iter().filter_map(|(_, e)| e.iter().max()).max();
        match (start, end) {
            (Some(&s), Some(&e)) => (s, e),
            _ => (0, 0),
        }
    }

    /// The GPU indices that have at least one busy activity, sorted.
    pub fn active_devices(&self) -> Vec<u32> {
        let mut d: Vec<u32> = (0..self.gpu.len())
            .filter(|&i| self.gpu.is_busy(i))
            .map(|i| self.gpu.device[i])
            .collect();
        d.sort_unstable();
        d.dedup();
        d
    }

    /// Walks from cpu op `op` up through its ancestors (itself first).
    pub fn ancestors(&self, op: Option<OpRow>) -> impl Iterator<Item = OpRow> + '_ {
        std::iter::successors(op, move |&o| self.cpu_ops.parent[o.index()])
    }
}

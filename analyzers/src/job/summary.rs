//! [`RankSummary`]: what the job analysis needs of one rank, as small plain
//! data. It is a pure function of one trace ([`summarize_rank`]), so ranks
//! are summarised independently (in parallel, or as tasks on other
//! machines) and only the summaries meet. It is read from the rank's
//! [`Session`] ([`summarize`]): the selection, window, device timeline,
//! idle segments and blame columns its own analysis uses, computed once.
//!
//! For every collective kernel the summary keeps when it ran (the rank's
//! own clock), which step launched it, which GPU time overlapped it, and
//! its *lead-in*: how the device spent the time between the previous
//! collective's end (or the window's start) and this one's start, split
//! into compute, communication, copies and idle time by cause, with the
//! operators behind the largest parts. Comparing lead-ins across ranks is
//! what says why one rank arrived late.
//!
//! ```text
//! stream 84      [all_to_all]                        [all_reduce]
//! stream 7                    [mm][mm]      [relu]
//! GPU state                   CCCCCCCC......CCCCCC
//! lead-in of all_reduce       |<-- compute 8, idle 6 (dataloader), compute 6 -->|
//! ```

use super::collective::{kind_from_kernel, kind_from_name, kind_from_op};
use crate::analysis::{Analysis, AnalyzeOptions};
use crate::attribution::OpContext;
use crate::breakdown::{Breakdown, DeviceTimeline};
use crate::causes::{Cause, CauseTotals};
use crate::idle::by_cause_in;
use crate::intervals::{self, Span};
use crate::kinds::{classify, WorkClass};
use crate::segments::IdleSegment;
use crate::session::Session;
use crate::window::Step;
use crate::workload::Workload;
use gapscope_collectors::trace::{Ns, Trace};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// Version of the [`RankSummary`] format (JSON and Parquet summaries).
pub const SUMMARY_VERSION: u32 = 1;

/// How many operators each part of a lead-in names.
pub const LEAD_IN_TOP_OPS: usize = 3;

/// One rank, summarised for the job analysis.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RankSummary {
    /// [`SUMMARY_VERSION`].
    pub summary_version: u32,
    /// The rank: `distributedInfo.rank`, else the number in the file name.
    pub rank: i64,
    /// `distributedInfo.world_size`, when the trace says.
    pub world_size: Option<i64>,
    /// The file, as the user named it.
    pub source: String,
    /// Absolute time of the trace's 0 in the rank's clock, ns.
    pub origin_ns: i64,
    /// The GPU the rank's collectives ran on (the one with the most), else
    /// its first active GPU; `None` for a CPU-only trace.
    pub device: Option<u32>,
    /// The analysed window, ns since the trace's origin.
    pub window: Span,
    /// The selected steps with the device's breakdown.
    pub steps: Vec<RankStep>,
    /// The device's collective kernels, by start.
    pub collectives: Vec<CollectiveCall>,
    /// Collectives the rank ran through gloo on the CPU (`gloo:all_reduce`
    /// and other `gloo:*` ranges in the window). They are not matched
    /// across ranks: only GPU collective kernels are, so a job whose ranks
    /// talk through gloo alone cannot have its clocks aligned, and says so.
    #[serde(default)]
    pub gloo_collectives: u64,
    /// What the rank's CPU operators show: training (a backward pass or an
    /// optimizer step), neither, or cannot tell (absent in older
    /// summaries, read as cannot tell). Job hints give the advice that
    /// applies.
    #[serde(default)]
    pub workload: Workload,
    /// The rank's own analysis (every device), for per-rank views; left
    /// out of summaries written for a distributed reduce.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub analysis: Option<Box<Analysis>>,
}

/// One step of one rank.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RankStep {
    /// `N` of `ProfilerStep#N`.
    pub number: u64,
    /// Start, ns since the trace's origin.
    pub start_ns: Ns,
    /// End, ns since the trace's origin.
    pub end_ns: Ns,
    /// The device's breakdown of the step.
    pub breakdown: Breakdown,
    /// The step's idle time by cause.
    pub idle_by_cause_ns: CauseTotals,
}

/// One collective kernel of one rank.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CollectiveCall {
    /// Normalised kind (`all_reduce`, `all_to_all`, ...; see
    /// [`kind_from_op`]).
    pub kind: String,
    /// Process group, when the trace names it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
    /// Sequence number within the process group, when the trace gives it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seq: Option<u64>,
    /// The step whose CPU range holds the launch (else the kernel's start).
    pub step: Option<u64>,
    /// The stream it ran on.
    pub stream: i64,
    /// Kernel start, ns since the trace's origin: when this rank arrived.
    pub start_ns: Ns,
    /// Kernel end, ns since the trace's origin.
    pub end_ns: Ns,
    /// Start of the launch call on the CPU, when linked.
    pub launch_ns: Option<Ns>,
    /// Compute-kernel time on the device inside `[start_ns, end_ns)`, as
    /// disjoint sorted spans (the communication that compute hid).
    pub compute_overlap: Vec<Span>,
    /// How the device spent the time before this call.
    pub lead_in: LeadIn,
}

/// The device's time from the previous collective's end (or the window's
/// start) to a collective's start. Its parts add up to
/// `call.start_ns - start_ns` exactly.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LeadIn {
    /// Start, ns since the trace's origin.
    pub start_ns: Ns,
    /// Compute kernels ran.
    pub compute_ns: Ns,
    /// Another collective ran and no compute.
    pub communication_ns: Ns,
    /// A copy ran and no kernel.
    pub memcpy_ns: Ns,
    /// A memset ran and nothing above.
    pub memset_ns: Ns,
    /// Idle time, by cause.
    pub idle_by_cause_ns: CauseTotals,
    /// The operators behind the largest parts: up to [`LEAD_IN_TOP_OPS`]
    /// per part, most first.
    pub top_ops: Vec<LeadOp>,
}

/// One operator's share of a part of a lead-in.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LeadOp {
    /// The part ([`LeadIn::parts`] names: `compute`, `memcpy`, a cause).
    pub part: String,
    /// The operator (`aten::mm`, `aten::addmm in DistributedDataParallel.forward`).
    pub operator: String,
    /// Its time in that part, ns (kernels on several streams may overlap).
    pub ns: Ns,
}

impl LeadIn {
    /// Every part with its time, in a fixed order: `compute`,
    /// `communication`, `memcpy`, `memset`, then one per idle cause.
    pub fn parts(&self) -> Vec<(&'static str, Ns)> {
        let mut v = vec![
            ("compute", self.compute_ns),
            ("communication", self.communication_ns),
            ("memcpy", self.memcpy_ns),
            ("memset", self.memset_ns),
        ];
        v.extend(self.idle_by_cause_ns.iter().map(|(c, ns)| (c.name(), ns)));
        v
    }

    /// Length of the lead-in: the sum of its parts.
    pub fn total_ns(&self) -> Ns {
        self.parts().iter().map(|(_, ns)| ns).sum()
    }
}

/// Analyses one rank's trace and summarises it for the job analysis, with
/// the rank's own [`Analysis`]: one [`Session`] gives both.
/// `rank` is the rank when the trace does not say (from the file name).
pub fn summarize_rank(trace: &Trace, opts: &AnalyzeOptions, rank: Option<i64>) -> RankSummary {
    let session = Session::new(trace, opts);
    let mut s = summarize(&session, rank);
    s.analysis = Some(Box::new(session.into_analysis()));
    s
}

/// [`summarize_rank`] without the rank's own [`Analysis`]: what a
/// distributed reduce reads.
pub fn summarize_selected(trace: &Trace, opts: &AnalyzeOptions, rank: Option<i64>) -> RankSummary {
    summarize(&Session::new(trace, opts), rank)
}

/// The summary of the rank `session` analysed, read from the session's
/// selection, window, device timelines, idle segments and blame columns
/// (nothing analysed twice). Its `analysis` is left out; the session
/// holds it.
pub fn summarize(session: &Session, rank: Option<i64>) -> RankSummary {
    let selected = session.trace();
    let meta = &session.whole_trace().meta;
    let win = session.window();
    let comm = session.communication();
    let raw = collective_rows(selected, comm);
    let device = pick_device(selected, &raw);
    let mut summary = RankSummary {
        summary_version: SUMMARY_VERSION,
        rank: meta.rank.or(rank).unwrap_or(-1),
        world_size: meta.world_size,
        source: meta.source.clone(),
        origin_ns: meta.origin_ns,
        device,
        window: win.span,
        steps: Vec::new(),
        collectives: Vec::new(),
        gloo_collectives: gloo_ranges(selected),
        workload: Workload::of(selected),
        analysis: None,
    };
    let Some(d) = device.and_then(|device| session.device(device)) else {
        return summary;
    };
    let (tl, segs) = (&d.timeline, &d.segments[..]);
    summary.steps = win
        .steps
        .iter()
        .map(|s| RankStep {
            number: s.number,
            start_ns: s.start,
            end_ns: s.end,
            breakdown: tl.breakdown((s.start, s.end)),
            idle_by_cause_ns: by_cause_in(segs, (s.start, s.end)),
        })
        .collect();
    let compute_rows = compute_rows(selected, comm, d.device);
    let compute = compute_spans(selected, &compute_rows);
    let lead = LeadInBuilder {
        trace: selected,
        cx: session.blame(),
        tl,
        segs,
        compute_rows,
    };
    let mut rows: Vec<&RawCall> = raw.iter().filter(|c| c.device == d.device).collect();
    rows.sort_by_key(|c| (c.start, c.end));
    let mut ends: Vec<Ns> = Vec::new();
    for c in rows {
        // The latest end at or before this start; calls on other streams
        // still running do not bound the lead-in.
        let prev = ends.iter().copied().filter(|&e| e <= c.start).max();
        let from = prev.unwrap_or(win.span.0).max(win.span.0).min(c.start);
        ends.push(c.end);
        summary.collectives.push(CollectiveCall {
            kind: c.kind.to_string(),
            group: c.group.map(str::to_string),
            seq: c.seq,
            step: step_of(&win.steps, c.launch.unwrap_or(c.start)),
            stream: c.stream,
            start_ns: c.start,
            end_ns: c.end,
            launch_ns: c.launch,
            compute_overlap: intervals::clip(&compute, (c.start, c.end)),
            lead_in: lead.build((from, c.start)),
        });
    }
    summary
}

/// A collective kernel as found, before its lead-in.
struct RawCall<'t> {
    device: u32,
    stream: i64,
    start: Ns,
    end: Ns,
    launch: Option<Ns>,
    kind: &'static str,
    group: Option<&'t str>,
    seq: Option<u64>,
}

/// The GPU rows `comm` ([`communication_rows`](crate::collectives::communication_rows): the one definition of a
/// collective) marks, with their kind, process group and sequence number.
fn collective_rows<'t>(trace: &'t Trace, comm: &[bool]) -> Vec<RawCall<'t>> {
    let gpu = &trace.gpu;
    let mut kernel_kind: HashMap<u32, &'static str> = HashMap::new();
    (0..gpu.len())
        .filter(|&i| comm[i])
        .map(|i| {
            let name = gpu.name[i];
            let call = trace.links.gpu_launch[i];
            let launch = call.map(|c| trace.runtime.start[c.index()]);
            let op = call.and_then(|c| trace.links.runtime_op[c.index()]);
            let coll = gpu.collective[i].map(|c| c.index());
            let text = |id| Some(trace.strings.get(id)).filter(|s| !s.is_empty());
            // The operator's word, else the args' `Collective name`, else
            // the kernel's name.
            let kind = trace
                .ancestors(op)
                .find_map(|o| kind_from_op(trace.strings.get(trace.cpu_ops.name[o.index()])))
                .or_else(|| {
                    coll.and_then(|c| text(trace.collectives.name[c]))
                        .and_then(kind_from_name)
                })
                .unwrap_or_else(|| {
                    kernel_kind
                        .entry(name.0)
                        .or_insert_with(|| kind_from_kernel(trace.strings.get(name)).unwrap_or("collective"))
                });
            RawCall {
                device: gpu.device[i],
                stream: gpu.stream[i],
                start: gpu.start[i],
                end: gpu.end[i],
                launch,
                kind,
                group: coll.and_then(|c| text(trace.collectives.group[c])),
                seq: coll.and_then(|c| trace.collectives.seq[c]),
            }
        })
        .collect()
}

/// How many CPU ranges of `trace` are gloo collectives (`gloo:*`: PyTorch
/// names the work of its gloo backend `gloo:all_reduce`, `gloo:broadcast`,
/// ... on the thread that runs it).
fn gloo_ranges(trace: &Trace) -> u64 {
    let gloo: Vec<bool> = trace
        .strings
        .iter()
        .map(|(_, s)| s.starts_with("gloo:"))
        .collect();
    if !gloo.contains(&true) {
        return 0;
    }
    trace.cpu_ops.name.iter().filter(|n| gloo[n.0 as usize]).count() as u64
}

/// The device with the most collectives, else the first active one.
fn pick_device(trace: &Trace, calls: &[RawCall]) -> Option<u32> {
    let mut count: HashMap<u32, usize> = HashMap::new();
    for c in calls {
        *count.entry(c.device).or_default() += 1;
    }
    let best = count
        .into_iter()
        .max_by_key(|&(d, n)| (n, std::cmp::Reverse(d)))
        .map(|(d, _)| d);
    best.or_else(|| trace.active_devices().first().copied())
}

fn step_of(steps: &[Step], t: Ns) -> Option<u64> {
    steps.iter().find(|s| s.start <= t && t < s.end).map(|s| s.number)
}

/// The device's compute kernels: kernels that are not collectives.
fn compute_rows(trace: &Trace, comm: &[bool], device: u32) -> Vec<u32> {
    (0..trace.gpu.len())
        .filter(|&i| {
            trace.gpu.device[i] == device && !comm[i] && classify(trace, i) == Some(WorkClass::Compute)
        })
        .map(|i| i as u32)
        .collect()
}

fn compute_spans(trace: &Trace, rows: &[u32]) -> Vec<Span> {
    intervals::union(
        rows.iter()
            .map(|&i| (trace.gpu.start[i as usize], trace.gpu.end[i as usize]))
            .collect(),
    )
}

/// Builds lead-ins from one device's timeline and idle segments.
struct LeadInBuilder<'a> {
    trace: &'a Trace,
    cx: &'a OpContext,
    tl: &'a DeviceTimeline,
    segs: &'a [IdleSegment],
    /// The device's compute kernels, by start.
    compute_rows: Vec<u32>,
}

impl LeadInBuilder<'_> {
    fn build(&self, range: Span) -> LeadIn {
        let b = self.tl.breakdown(range);
        let mut lead = LeadIn {
            start_ns: range.0,
            compute_ns: b.compute_ns,
            communication_ns: b.communication_ns,
            memcpy_ns: b.memcpy_ns,
            memset_ns: b.memset_ns,
            idle_by_cause_ns: by_cause_in(self.segs, range),
            top_ops: Vec::new(),
        };
        // Idle segments cover the analysed window; a collective that starts
        // after it (GPU work of the last step running on) has idle beyond
        // the window that no CPU evidence was read for: untraced, so that
        // the parts still add up.
        let beyond = b.idle_ns - lead.idle_by_cause_ns.total();
        if beyond > 0 {
            lead.idle_by_cause_ns.add(Cause::Untraced, beyond);
        }
        lead.top_ops = self.top_ops(range);
        lead
    }

    fn top_ops(&self, (lo, hi): Span) -> Vec<LeadOp> {
        let mut by: HashMap<(String, String), Ns> = HashMap::new();
        let gpu = &self.trace.gpu;
        let first = self
            .compute_rows
            .partition_point(|&r| gpu.start[r as usize] < lo.saturating_sub(MAX_KERNEL_LOOKBACK));
        for &r in &self.compute_rows[first..] {
            let r = r as usize;
            if gpu.start[r] >= hi {
                break;
            }
            let ns = gpu.end[r].min(hi) - gpu.start[r].max(lo);
            if ns > 0 {
                *by.entry(("compute".into(), self.kernel_op(r))).or_default() += ns;
            }
        }
        let first = self.segs.partition_point(|s| s.end <= lo);
        for s in self.segs[first..].iter().take_while(|s| s.start < hi) {
            let ns = s.end.min(hi) - s.start.max(lo);
            *by.entry((s.cause.name().into(), self.segment_op(s))).or_default() += ns;
        }
        let mut rows: Vec<((String, String), Ns)> = by.into_iter().collect();
        rows.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        let mut out: Vec<LeadOp> = Vec::new();
        for ((part, operator), ns) in rows {
            if out.iter().filter(|o| o.part == part).count() < LEAD_IN_TOP_OPS {
                out.push(LeadOp { part, operator, ns });
            }
        }
        out
    }

    /// The operator that launched GPU row `r`, else the kernel's name.
    fn kernel_op(&self, r: usize) -> String {
        let op = self.trace.links.gpu_launch[r]
            .and_then(|c| self.trace.links.runtime_op[c.index()])
            .and_then(|o| self.cx.operator[o.index()]);
        match self.trace.op_name(op) {
            Some(n) => n.to_string(),
            None => short_kernel(self.trace.strings.get(self.trace.gpu.name[r])),
        }
    }

    /// `aten::addmm in DistributedDataParallel.forward`, the annotation
    /// alone, or `-`.
    fn segment_op(&self, s: &IdleSegment) -> String {
        let op = self.trace.op_name(s.op);
        let ann = self.trace.op_name(s.annotation);
        match (op, ann) {
            (Some(o), Some(a)) => format!("{o} in {a}"),
            (Some(o), None) => o.to_string(),
            (None, Some(a)) => a.to_string(),
            (None, None) => match s.cause {
                Cause::Untraced => "-".to_string(),
                c => c.name().to_string(),
            },
        }
    }
}

/// Kernels longer than this that started before a lead-in are not looked
/// for (the compute rows are sorted by start, not end).
const MAX_KERNEL_LOOKBACK: Ns = 1_000_000_000;

/// A kernel name without its argument list.
fn short_kernel(name: &str) -> String {
    let n = name.strip_prefix("void ").unwrap_or(name);
    let n = n.split('(').next().unwrap_or(n);
    n.chars().take(80).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze;
    use crate::window::WindowOptions;
    use gapscope_collectors::trace::{CopyKind, CpuOpKind, Sketch};

    /// ```text
    /// µs        0    10   20   30   40   50   60   70   80
    /// thread 1  [ProfilerStep#1.......][ProfilerStep#2..........]
    ///           [L1]           [L2]        [L3]
    /// stream 7    [k1.....]                  [k3....]
    /// stream 9                [all_reduce]             [all_reduce]
    /// ```
    fn two_steps() -> Trace {
        Sketch::in_units(1_000)
            .step(1, 0, 40)
            .step(2, 40, 80)
            .call(0, 2, "cudaLaunchKernel", 1)
            .call(44, 46, "cudaLaunchKernel", 3)
            .kernel(7, 2, 12, 1)
            .nccl(9, 20, 30)
            .kernel(7, 48, 58, 3)
            .nccl(9, 60, 75)
            .finish()
    }

    /// DDP over gloo with CUDA tensors, one rank of two: the all-reduce is
    /// CPU work on gloo's thread around two copies, no collective kernel.
    /// ```text
    /// µs        0    10   20   30   40
    /// thread 1  [ProfilerStep#1..............]
    ///           [L1]     [L2]      [L3]
    /// thread 2         [gloo:all_reduce.]
    /// stream 7    [k1...] [d2h]    [h2d]
    /// ```
    fn gloo_rank(rank: i64) -> RankSummary {
        let mut t = Sketch::in_units(1_000)
            .step(1, 0, 40)
            .call(0, 2, "cudaLaunchKernel", 1)
            .call(12, 14, "cudaMemcpyAsync", 2)
            .call(28, 30, "cudaMemcpyAsync", 3)
            .kernel(7, 2, 10, 1)
            .copy(7, 14, 18, 2, CopyKind::DtoH)
            .copy(7, 30, 34, 3, CopyKind::HtoD)
            .on_thread(1, 2)
            .op_as(10, 28, "gloo:all_reduce", CpuOpKind::UserAnnotation)
            .finish();
        t.meta.rank = Some(rank);
        t.meta.world_size = Some(2);
        summarize_selected(&t, &AnalyzeOptions::default(), None)
    }

    #[test]
    fn a_job_over_gloo_says_why_its_ranks_cannot_be_aligned() {
        let ranks = [gloo_rank(0), gloo_rank(1)];
        assert!(ranks
            .iter()
            .all(|r| r.collectives.is_empty() && r.gloo_collectives == 1));
        let job = super::super::analyze_job(&ranks, &Default::default());
        for r in 0..2 {
            assert!(
                job.warnings.contains(&format!(
                    "rank {r}: its 1 collective ran through gloo on the CPU (`gloo:*`), and the job analysis \
                     matches only GPU collective kernels (NCCL, RCCL) across ranks, so its clock cannot be aligned; \
                     it is left out of the cross-rank analysis"
                )),
                "{:?}",
                job.warnings
            );
        }
        // A rank with collective kernels counts its gloo ranges too, but is
        // matched by its kernels.
        assert_eq!(
            summarize_selected(&two_steps(), &AnalyzeOptions::default(), None).gloo_collectives,
            0
        );
    }

    #[test]
    fn a_summary_reads_the_session_and_agrees_with_its_analysis() {
        let t = two_steps();
        for opts in [
            AnalyzeOptions::default(),
            AnalyzeOptions {
                window: WindowOptions {
                    steps: Some((2, 2)),
                    exclude_last_step: false,
                },
                ..Default::default()
            },
        ] {
            let s = summarize_rank(&t, &opts, Some(3));
            let a = s.analysis.as_deref().expect("summarize_rank keeps the analysis");
            assert_eq!(*a, analyze(&t, &opts));
            assert_eq!(s.rank, 3);
            assert_eq!(s.device, Some(0));
            // Each step's breakdown and idle causes are the analysis's.
            assert_eq!(s.steps.len(), a.steps.len());
            for (mine, theirs) in s.steps.iter().zip(&a.steps) {
                assert_eq!(mine.number, theirs.step);
                assert_eq!(mine.breakdown, theirs.devices[0].breakdown);
                assert_eq!(mine.idle_by_cause_ns, theirs.devices[0].idle_by_cause_ns);
            }
            // A lead-in's parts add up to its length.
            for c in &s.collectives {
                assert_eq!(c.lead_in.total_ns(), c.start_ns - c.lead_in.start_ns);
            }
            let without = summarize_selected(&t, &opts, Some(3));
            assert_eq!(without.analysis, None);
            assert_eq!(RankSummary { analysis: None, ..s }, without);
        }
        let all = summarize_selected(&t, &AnalyzeOptions::default(), None);
        assert_eq!(all.collectives.len(), 2);
        assert_eq!(all.collectives[1].lead_in.start_ns, 30_000);
        assert_eq!(all.collectives[1].lead_in.compute_ns, 10_000);
    }
}

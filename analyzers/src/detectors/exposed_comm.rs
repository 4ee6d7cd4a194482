//! D15, exposed communication (context): collective kernels run while no
//! compute kernel runs on the device, so the step waits for the
//! interconnect.
//!
//! ```text
//! stream 7    [gemm....]               [gemm....]
//! stream 20        [all_reduce.............]
//! exposed                    [..........]        communication, no compute
//! ```
//!
//! Evidence: the device's collective kernels
//! ([`collectives::communication_rows`](crate::collectives::communication_rows):
//! by kernel name or by the collective operator that launched them) and the
//! part of their time no compute kernel overlaps
//! ([`collectives::exposed`](crate::collectives::exposed)). Threshold: the
//! exposed time is at least [`MIN_SHARE`] of the window (ours, as D2: below
//! it no change moves the step measurably) and at least
//! [`NOISE_NS`](super::NOISE_NS). The device is busy meanwhile, so the
//! finding claims no idle time (`primary: false`); `explained_ns` is the
//! exposed time, the most that overlapping it with compute could save,
//! which the trace of one rank cannot estimate (it depends on the other
//! ranks and on what can overlap). Attribution: the operator that launched
//! the most exposed collective time.

use super::{Cx, Draft, MAX_EVIDENCE, NOISE_NS};
use crate::collectives::exposed;
use crate::format::{duration, percent_whole};
use crate::intervals::{subtract, total, union, Span};
use crate::names::is_collective_op_name;
use crate::workload::Workload;
use gapscope_collectors::trace::{GpuKind, GpuRow, Ns, OpRow};
use std::collections::HashMap;

/// Share of the window the exposed communication must hold (ours).
pub const MIN_SHARE: f64 = 0.01;

pub(super) fn detect(cx: &Cx) -> Option<Draft> {
    let e = exposed(cx.trace, cx.comm, cx.device, cx.window);
    let floor = ((MIN_SHARE * cx.window_ns() as f64) as Ns).max(NOISE_NS);
    if e.exposed_ns < floor {
        return None;
    }
    let t = cx.trace;
    let g = &t.gpu;
    let (ws, we) = cx.window;
    // Exposed time per collective kernel: its span minus compute.
    let compute: Vec<Span> = union(
        (0..g.len())
            .filter(|&i| g.device[i] == cx.device && g.kind[i] == GpuKind::Kernel && !cx.comm[i])
            .map(|i| (g.start[i].max(ws), g.end[i].min(we)))
            .collect(),
    );
    let mut by_op: HashMap<Option<OpRow>, Ns> = HashMap::new();
    let mut by_kernel: HashMap<u32, (Ns, GpuRow)> = HashMap::new();
    let mut rows: Vec<(Ns, GpuRow)> = Vec::new();
    for i in 0..g.len() {
        if g.device[i] != cx.device || !cx.comm[i] {
            continue;
        }
        let (s, e) = (g.start[i].max(ws), g.end[i].min(we));
        if e <= s {
            continue;
        }
        let first = compute.partition_point(|c| c.1 <= s);
        let near: Vec<Span> = compute[first..].iter().take_while(|c| c.0 < e).copied().collect();
        let x = total(&subtract(&[(s, e)], &near));
        let op = t.links.gpu_launch[i].and_then(|c| collective_op(cx, t.links.runtime_op[c.index()]));
        *by_op.entry(op).or_default() += x;
        let row = GpuRow::new(i);
        by_kernel.entry(g.name[i].0).or_insert((0, row)).0 += x;
        rows.push((x, row));
    }
    let (&op, _) = by_op
        .iter()
        .max_by(|a, b| a.1.cmp(b.1).then_with(|| b.0.cmp(a.0)))?;
    let (_, &(_, row)) = by_kernel
        .iter()
        .max_by(|a, b| a.1 .0.cmp(&b.1 .0).then_with(|| b.0.cmp(a.0)))?;
    let kernel: String = t.strings.get(g.name[row.index()]).chars().take(80).collect();
    let (launcher, annotation, source) = cx.launch_blame(row);
    let blame = (op.and_then(|o| cx.name(Some(o))).or(launcher), annotation, source);
    let hidden = e.communication_ns - e.exposed_ns;
    let title = format!(
        "{} collective kernels run {} with no compute to hide them ({} of the window; {} of their time overlaps compute)",
        e.kernels,
        duration(e.exposed_ns),
        percent_whole(e.exposed_ns, cx.window_ns()),
        percent_whole(hidden, e.communication_ns)
    );
    let by = blame
        .0
        .as_ref()
        .map(|o| format!(" launched by `{o}`"))
        .unwrap_or_default();
    let hint = format!(
        "Collectives (mostly `{kernel}`{by}) take {} on this GPU, {} of it with nothing else \
         running: the step waits for the interconnect and for the other ranks. {} Compare the \
         ranks' traces: a rank that arrives late makes the others wait inside the collective.",
        duration(e.communication_ns),
        duration(e.exposed_ns),
        overlap_advice(cx.workload)
    );
    let mut d = Draft::new("D15", "exposed_communication", title, hint);
    d.occurrences = e.kernels;
    d.primary = false;
    d.estimable = false;
    d.removed_busy_ns = e.exposed_ns;
    // Hidden entirely behind compute, the exposed time is the most the
    // step could gain.
    d.savings_bound_ns = Some(e.exposed_ns);
    d.blame = Some(blame);
    rows.sort_by_key(|&(x, r)| (std::cmp::Reverse(x), r));
    for &(_, r) in rows.iter().take(MAX_EVIDENCE) {
        d.evidence.push(cx.gpu_evidence(r));
    }
    Some(d)
}

/// How to hide the collectives: overlap with backward where the trace may
/// show training, fewer and larger collectives in a forward-only run
/// (tensor-parallel inference); both where it cannot tell.
fn overlap_advice(workload: Workload) -> String {
    const TRAINING: &str = "let communication overlap backward (DDP gradient buckets, \
         `bucket_cap_mb`; FSDP `forward_prefetch` / `backward_prefetch`; `async_op=True` with \
         `work.wait()` as late as possible) and skip it during gradient accumulation \
         (`no_sync()`).";
    const FORWARD: &str = "each layer's all-reduce is on the critical path: fewer, larger \
         collectives (fused all-reduce kernels, a smaller tensor-parallel degree) are what \
         shortens it.";
    match workload {
        Workload::Training => format!("In training, {TRAINING}"),
        Workload::NoBackwardOrOptimizer => format!(
            "The trace has no backward pass or optimizer step, so there is no gradient \
             communication to overlap with backward; in a tensor-parallel forward pass \
             {FORWARD}"
        ),
        Workload::Unknown => {
            format!("In training, {TRAINING} In tensor-parallel inference {FORWARD}")
        }
    }
}

/// The innermost collective operator at or above `row` (`vllm::all_reduce`,
/// `c10d::allreduce_`), else the outermost operator around it.
fn collective_op(cx: &Cx, row: Option<OpRow>) -> Option<OpRow> {
    cx.ranges_up(row)
        .find(|r| is_collective_op_name(cx.trace.strings.get(cx.trace.cpu_ops.name[r.index()])))
        .or_else(|| cx.outer_operator(row))
}

//! D11, input-pipeline stall: the training thread is inside the
//! DataLoader's `__next__` while the GPU has nothing to do, the signature of
//! `num_workers=0` or of workers that cannot keep up (docs/detectors.md,
//! D11; the TensorBoard plugin's DataLoader recommendation).
//!
//! ```text
//! stream 7    [fwd/bwd kernels....]                         [fwd/bwd...]
//! thread 1    [step N ............][enumerate(DataLoader)#...__next__][step N+1
//! piece                            [dataloader.......................]  D11
//! ```
//!
//! Evidence: pieces of cause `dataloader`. Threshold: DataLoader ranges on
//! the launching threads take more than [`MIN_SHARE`] of the window (the
//! TensorBoard plugin's 5 % of step time). Attribution: the DataLoader range
//! and whatever operator runs inside it. Savings: replay with the
//! DataLoader ranges' CPU time removed from the launching threads (batches
//! ready when asked for, as with enough workers), capped at the idle time.
//! Advice: `pin_memory=True` only when no DataLoader range of the finding
//! pins its batch itself (`aten::pin_memory` / `aten::_pin_memory` inside
//! `__next__`); when the trace shows pinning, the hint says it is done.

use super::{Cx, Draft, MAX_EVIDENCE};
use crate::causes::Cause;
use crate::format::{duration, percent_whole};
use crate::intervals::{total, union};
use crate::workload::Workload;
use gapscope_collectors::trace::{Ns, OpRow};

/// DataLoader share of the window above which it is reported (TB: 5 %).
pub const MIN_SHARE: f64 = 0.05;

pub(super) fn detect(cx: &Cx, claims: &mut [bool]) -> Vec<Draft> {
    let (ws, we) = cx.window;
    let ops = &cx.trace.cpu_ops;
    let mut ranges: Vec<OpRow> = Vec::new();
    for &t in &cx.ev.launchers {
        for i in cx.trace.cpu_ops_of(t) {
            let row = OpRow::new(i);
            if cx.ops.dataloader[i] == Some(row) && ops.start[i] < we && ops.end[i] > ws {
                ranges.push(row);
            }
        }
    }
    let spans = union(
        ranges
            .iter()
            .map(|&r| (ops.start[r.index()].max(ws), ops.end[r.index()].min(we)))
            .collect(),
    );
    let dl_ns = total(&spans);
    if (dl_ns as f64) <= MIN_SHARE * cx.window_ns() as f64 {
        return Vec::new();
    }
    let pieces = cx.take_of(claims, &[Cause::Dataloader], |_| true);
    if pieces.is_empty() {
        return Vec::new();
    }
    let idle: Ns = cx.total(&pieces);
    let n = cx.n_steps();
    let title = format!(
        "The GPU waits for the DataLoader: {} idle; loading batches takes {} of the window",
        duration(idle),
        percent_whole(dl_ns, cx.window_ns())
    );
    let per = cx.per_step();
    let pinning = if pins_batches(cx, &ranges) {
        "`persistent_workers=True` (the loader already pins its batches: `aten::pin_memory` \
         runs inside `__next__`, so keep `pin_memory=True`)"
    } else {
        "`pin_memory=True` and `persistent_workers=True`"
    };
    let hint = format!(
        "Loading the next batch on the {} takes {} of each step, and the GPU \
         idles {} {per} waiting for it. Load batches in worker processes: \
         `DataLoader(..., num_workers=N)` with N > 0 (start with the number of CPU cores per \
         GPU), {pinning}; raise `prefetch_factor` if the workers still fall behind, and move \
         heavy transforms to the GPU or to preprocessing.",
        loading_thread(cx.workload),
        percent_whole(dl_ns, cx.window_ns()),
        duration(idle / n)
    );
    let mut d = Draft::new("D11", "dataloader_stall", title, hint);
    d.occurrences = ranges.len() as u64;
    for &r in &ranges {
        let r = r.index();
        d.edit
            .remove_cpu
            .push((ops.thread[r], (ops.start[r].max(ws), ops.end[r].min(we))));
    }
    for &r in ranges.iter().take(MAX_EVIDENCE / 2) {
        d.evidence.push(cx.op_evidence(r));
    }
    d.pieces = pieces;
    vec![d]
}

/// The thread that loads batches, named as the trace supports: "training
/// thread" only where it shows (or cannot rule out) training.
fn loading_thread(workload: Workload) -> &'static str {
    if workload.may_train() {
        "training thread"
    } else {
        "thread that launches the GPU work"
    }
}

/// Whether the DataLoader pins its batches already: an `aten::pin_memory`
/// or `aten::_pin_memory` runs inside one of `ranges` (the DLRM ranks'
/// `__next__` pins five tensors per batch), so advising `pin_memory=True`
/// would ask for what is done. Reads only the rows inside the ranges: a
/// thread's rows are in start order, a range's children follow it.
fn pins_batches(cx: &Cx, ranges: &[OpRow]) -> bool {
    let ops = &cx.trace.cpu_ops;
    ranges.iter().any(|&r| {
        let end = ops.end[r.index()];
        let rows = cx.trace.cpu_ops_of(ops.thread[r.index()]);
        (r.index() + 1..rows.end)
            .take_while(|&i| ops.start[i] < end)
            .any(|i| {
                matches!(
                    cx.trace.strings.get(ops.name[i]),
                    "aten::pin_memory" | "aten::_pin_memory"
                )
            })
    })
}

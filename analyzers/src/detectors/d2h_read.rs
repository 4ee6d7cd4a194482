//! D5, blocking device→host reads (`.item()`, `.cpu()`, `.tolist()`,
//! `nonzero`, printing a CUDA tensor, Python `if` on a CUDA value): the host
//! waits for the queue to drain to read a value, and the GPU sits idle
//! until the host has launched new work (docs/detectors.md, D5).
//!
//! ```text
//! stream 7    [k1.............]                 [k2...]
//! thread 1    [aten::item.......................]
//!               [MemcpyAsync DtoH][StreamSynchronize]
//! gpu copy                      [DtoH]
//! piece (sync)                        [.........]   claimed by D5
//! ```
//!
//! Evidence: a `sync` piece whose blocking call is, or starts within
//! [`COPY_SYNC_PAIR_NS`](super::COPY_SYNC_PAIR_NS) after the return of, a
//! call on its thread that issued a device→host copy. Threshold: at least
//! [`NOISE_NS`](super::NOISE_NS) of idle per call site (TraceLens's noise
//! floor). Attribution: the outermost operator around the blocking call
//! (`aten::item`) and its source line.
//! Savings: replay with those calls no longer waiting (the read deferred or
//! moved off the critical path), capped at the idle claimed plus the drain
//! after each read (the rest of its gap, while the host launches again:
//! [`Cx::drain_after`](super::Cx::drain_after)); that drain stays claimed
//! by whoever explains the host's time in it (usually D2). A read after
//! which no GPU work follows (the pipeline's final result) has no saving:
//! nothing on the GPU waits behind it.

use super::{Cx, Draft, SyncKind, TINY_COPY_BYTES};
use crate::causes::Cause;
use crate::format::{count, duration};
use crate::workload::Workload;

pub(super) fn detect(cx: &Cx, claims: &mut [bool]) -> Vec<Draft> {
    let groups = cx.site_groups(claims, true, |p| {
        p.cause == Cause::Sync
            && p.blocking
                .is_some_and(|b| cx.sync_kind(b).0 == SyncKind::DtoHRead)
    });
    groups
        .iter()
        .map(|g| {
            let (op, _, src) = &g.blame;
            let place = cx.where_(op, src);
            let scalar = g.max_bytes <= TINY_COPY_BYTES;
            let what = if scalar {
                "reads a scalar"
            } else {
                "copies a tensor"
            };
            let title = format!(
                "{place} {what} to the host and waits for the GPU ({}, {} idle)",
                count(g.calls.len() as u64, "call", "calls"),
                duration(g.idle_ns)
            );
            let advice = if scalar {
                scalar_advice(cx.workload)
            } else {
                "Copy to the host only where the data is consumed, with \
                 `.to(\"cpu\", non_blocking=True)` into pinned memory and one \
                 `torch.cuda.current_stream().synchronize()` before reading; avoid `nonzero()` / \
                 boolean-mask indexing inside the step, which read back a size."
            };
            let per = cx.per_step();
            let hint = format!(
                "{place} blocks the CPU until the GPU finishes, then the GPU idles {} {per} \
                 while the CPU catches up. {advice} Find every such call with \
                 `torch.cuda.set_sync_debug_mode(\"warn\")`.",
                duration(g.idle_ns / cx.n_steps())
            );
            let last_read = !g.pieces.iter().any(|&i| cx.followed_by_work(i));
            let hint = if last_read {
                format!(
                    "{place} blocks the CPU until the GPU finishes and no GPU work follows in the \
                     window: it waits for the final result, which the host needs anyway, so \
                     there is nothing to save here unless the result is not needed at all."
                )
            } else {
                hint
            };
            let mut d = cx.sync_draft(g, "D5", "blocking_device_to_host_read", title, hint);
            d.drain_ns = cx.drain_after(&g.pieces);
            // No GPU work waits behind the last read of a run: no saving.
            d.estimable = !last_read;
            d
        })
        .collect()
}

/// What to do about a scalar read: accumulating losses is training advice,
/// given only where the trace may show training.
fn scalar_advice(workload: Workload) -> &'static str {
    if workload.may_train() {
        "Keep the value on the GPU: accumulate losses and metrics in a CUDA tensor and \
         call `.item()` once every N steps (or at the end), and do not branch in Python \
         on CUDA values."
    } else {
        "Keep the value on the GPU: compute with it as a CUDA tensor instead of a Python \
         number, call `.item()` only for what the host needs, once every N steps (or at the \
         end), and do not branch in Python on CUDA values."
    }
}

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
//! A read made by an operator whose result's size depends on the data
//! (`aten::nonzero`, which boolean-mask indexing calls, `masked_select`,
//! `unique`, `repeat_interleave`: [`is_data_dependent_size_op`]) is named
//! as such: the operator reads the count it needs to allocate its result,
//! and the advice is to avoid data-dependent shapes, not to defer `.item()`.
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
use crate::names::is_data_dependent_size_op;
use crate::workload::Workload;
use gapscope_collectors::trace::CallRow;

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
            let sizer = g.calls.iter().find_map(|&c| sizing_op(cx, c));
            let what = if sizer.is_some() {
                "reads the size of a data-dependent result"
            } else if scalar {
                "reads a scalar"
            } else {
                "copies a tensor"
            };
            let title = format!(
                "{place} {what} to the host and waits for the GPU ({}, {} idle)",
                count(g.calls.len() as u64, "call", "calls"),
                duration(g.idle_ns)
            );
            let sized;
            let advice = if let Some(op) = sizer {
                sized = format!(
                    "`{op}` cannot allocate its result before it knows how many elements it \
                     holds, so it reads that count from the GPU. Avoid data-dependent shapes \
                     inside the step: compute with the mask instead of indexing with it \
                     (`torch.where(mask, x, 0)`, `x * mask`), give the size where it is known \
                     (`torch.nonzero_static(x, size=n)`, `repeat_interleave(..., \
                     output_size=n)`), or index once outside the loop."
                );
                sized.as_str()
            } else if scalar {
                scalar_advice(cx.workload)
            } else {
                "Copy to the host only where the data is consumed, with \
                 `.to(\"cpu\", non_blocking=True)` into pinned memory and one \
                 `torch.cuda.current_stream().synchronize()` before reading; avoid `nonzero()` / \
                 boolean-mask indexing inside the step, which read back a size."
            };
            let per = cx.per_step();
            // The idle claimed here ends when the call returns; the drain
            // after it is the host's (claimed by whoever explains it), yet
            // it is what the read costs the GPU too.
            let drain = cx.drain_after(&g.pieces);
            let relaunch = if drain > 0 {
                format!(
                    ", and {} more while the CPU launches the next work",
                    duration(drain / cx.n_steps())
                )
            } else {
                String::new()
            };
            let hint = format!(
                "{place} blocks the CPU until the GPU finishes: the GPU idles {} {per} until \
                 the call returns{relaunch}. {advice} Find every such call with \
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
            d.drain_ns = drain;
            // No GPU work waits behind the last read of a run: no saving.
            d.estimable = !last_read;
            d
        })
        .collect()
}

/// The data-dependent-size operator ([`is_data_dependent_size_op`]) that
/// makes runtime call `c`: its operator or one of that operator's parents
/// (boolean-mask indexing, `aten::index`, calls `aten::nonzero`).
fn sizing_op<'t>(cx: &Cx<'t>, c: CallRow) -> Option<&'t str> {
    cx.ranges_up(cx.trace.links.runtime_op[c.index()])
        .map(|r| cx.trace.strings.get(cx.trace.cpu_ops.name[r.index()]))
        .find(|name| is_data_dependent_size_op(name))
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

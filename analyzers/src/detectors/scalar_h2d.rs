//! D7, scalar or tiny host→device copies: `torch.tensor(x, device="cuda")`,
//! `torch.rsqrt(torch.tensor(d, device=...))`, a Python number turned into a
//! CUDA tensor each step. PyTorch copies the few bytes from pageable memory
//! and, with `non_blocking=False`, synchronizes the stream, so the GPU
//! drains for a value the host already had (docs/detectors.md, D7;
//! transformers PR #21496).
//!
//! ```text
//! stream 7    [k1..........]                    [k2 rsqrt]
//! thread 1    [aten::to...............................]
//!              [MemcpyAsync HtoD 8 B][StreamSynchronize]
//! piece            (in the call)      [sync.......]        claimed by D7
//! ```
//!
//! Evidence: a `sync` piece whose paired copy is host→device and at most
//! [`TINY_COPY_BYTES`](super::TINY_COPY_BYTES) bytes, or a piece inside such
//! a copy call. Threshold: [`NOISE_NS`](super::NOISE_NS) of idle per call
//! site. Savings: replay without the waits, without the host time of the
//! operators that make the copies and without the copies (the constant
//! computed on the host or created once on the device: see
//! `remove_copy_ops`), capped at the idle claimed, the copies' GPU time and
//! the drain after each sync ([`Cx::drain_after`](super::Cx::drain_after),
//! as for D5).

use super::{CallClass, Cx, Draft, SiteGroup, SyncKind};
use crate::causes::Cause;
use crate::format::{a_or_an, duration, times};

pub(super) fn detect(cx: &Cx, claims: &mut [bool]) -> Vec<Draft> {
    let groups = cx.site_groups(claims, true, |p| {
        (p.cause == Cause::Sync
            && p.blocking
                .is_some_and(|b| cx.sync_kind(b).0 == SyncKind::TinyHtoD))
            || (p.cause != Cause::Sync && p.class == Some(CallClass::TinyHtoD))
    });
    groups
        .iter()
        .map(|g| {
            let (op, _, src) = &g.blame;
            let place = cx.where_(op, src);
            let title = format!(
                "{place} copies {} {}-byte value from the host to the GPU {} ({} idle)",
                a_or_an(g.max_bytes),
                g.max_bytes,
                times(g.copies.len().max(1)),
                duration(g.idle_ns)
            );
            let per = cx.per_step();
            let per_step = duration(g.idle_ns / cx.n_steps());
            // Only a sync after the copy makes the host wait for the GPU;
            // an asynchronous copy (pinned memory, no sync: B200's vLLM
            // metadata) idles the GPU only while the host issues it.
            let waits = g.pieces.iter().any(|&i| cx.piece(i).cause == Cause::Sync);
            let hint = if waits {
                format!(
                    "{place} turns a host number into a CUDA tensor (`torch.tensor(x, device=\"cuda\")` \
                     or similar), a copy that waits for the GPU every call: {per_step} idle {per}. Do \
                     the scalar math on the host (`math.sqrt(d)` instead of \
                     `torch.sqrt(torch.tensor(d, device=\"cuda\"))`), pass the Python number \
                     straight to the tensor op (`x * scale`), or create the constant once on the \
                     device outside the loop."
                )
            } else {
                format!(
                    "{place} copies a few bytes from the host to the GPU each call. The copies do \
                     not wait for the GPU (no synchronization follows them), but the GPU has \
                     nothing to run while the host issues them: {per_step} idle {per}. Keep the \
                     value on the device (compute it there, or update a device tensor in place), \
                     or gather such small host values into one tensor copied once per step."
                )
            };
            let mut d = cx.sync_draft(g, "D7", "scalar_host_to_device_copy", title, hint);
            d.drain_ns = cx.drain_after(&g.pieces);
            remove_copy_ops(cx, g, &mut d);
            d
        })
        .collect()
}

/// The fix (a Python number, or a constant made once) does not create the
/// tensor at all: the replay also removes the host time of the outermost
/// operator around each copy (`aten::to`, `aten::copy_`: its dispatch,
/// the pageable staging and the sync inside it) and the copy itself on the
/// GPU. Other work on the scalar (an `rsqrt` kernel on it) is not known
/// from the trace and stays.
fn remove_copy_ops(cx: &Cx, g: &SiteGroup, d: &mut Draft) {
    let rt = &cx.trace.runtime;
    let ops = &cx.trace.cpu_ops;
    for &copy in &g.copies {
        let Some(call) = cx.trace.links.gpu_launch[copy.index()].map(|c| c.index()) else {
            continue;
        };
        let (t, span) = match cx.outer_operator(cx.trace.links.runtime_op[call]) {
            None => (rt.thread[call], (rt.start[call], rt.end[call])),
            Some(op) => {
                let o = op.index();
                (ops.thread[o], (ops.start[o], ops.end[o]))
            }
        };
        d.edit.remove_cpu.push((t, span));
        if d.edit.remove_gpu.binary_search(&copy).is_err() {
            let i = d.edit.remove_gpu.partition_point(|&r| r < copy);
            d.edit.remove_gpu.insert(i, copy);
            let gpu = &cx.trace.gpu;
            d.removed_busy_ns += gpu.end[copy.index()] - gpu.start[copy.index()];
        }
    }
    d.edit.remove_cpu.sort_unstable();
    d.edit.remove_cpu.dedup();
}

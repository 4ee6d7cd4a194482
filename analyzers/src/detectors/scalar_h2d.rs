//! D7, scalar or tiny host→device copies: `torch.tensor(x, device="cuda")`,
//! `torch.rsqrt(torch.tensor(d, device=...))`, a Python number turned into a
//! CUDA tensor each step. PyTorch copies the few bytes from pageable memory
//! and, with `non_blocking=False`, synchronizes the stream, so the GPU
//! drains for a value the host already had (notes/detectors.md D7;
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
//! site. Savings: replay without the waits and without the copy calls' CPU
//! time (the constant computed on the host or created once on the device).

use super::{fmt_ns, CallClass, Cx, Draft, SyncKind};
use crate::causes::Cause;
use gapscope_collectors::trace::NONE;

pub(super) fn detect(cx: &Cx, claims: &mut [bool]) -> Vec<Draft> {
    let groups = cx.site_groups(claims, |p| {
        (p.seg.cause == Cause::Sync && p.blocking != NONE && cx.sync_kind(p.blocking).0 == SyncKind::TinyHtoD)
            || (p.seg.cause != Cause::Sync && p.class == Some(CallClass::TinyHtoD))
    });
    groups
        .iter()
        .map(|g| {
            let (op, _, src) = &g.blame;
            let place = cx.where_(op, src);
            let title = format!(
                "{place} copies a {}-byte value from the host to the GPU {} times ({} idle)",
                g.max_bytes,
                g.copies.len().max(1),
                fmt_ns(g.idle_ns)
            );
            let hint = format!(
                "{place} turns a host number into a CUDA tensor (`torch.tensor(x, device=\"cuda\")` \
                 or similar), a copy that waits for the GPU every call: {} idle per step. Do the \
                 scalar math on the host (`math.sqrt(d)` instead of \
                 `torch.sqrt(torch.tensor(d, device=\"cuda\"))`), pass the Python number \
                 straight to the tensor op (`x * scale`), or create the constant once on the \
                 device outside the loop.",
                fmt_ns(g.idle_ns / cx.n_steps())
            );
            cx.sync_draft(g, "D7", "scalar_host_to_device_copy", title, hint)
        })
        .collect()
}

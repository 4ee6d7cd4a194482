//! D9, synchronous copies and memsets: a non-`Async` `cudaMemcpy` /
//! `cudaMemset` (nsys `cuda_memcpy_sync`, `cuda_memset_sync`), or PyTorch's
//! blocking `.to()`, which is `cudaMemcpyAsync` followed by
//! `cudaStreamSynchronize` and which nsys does not see as a synchronous
//! copy (docs/detectors.md, D9).
//!
//! ```text
//! stream 7    [k1.......]                               [k2..]
//! thread 1    [aten::copy_........................................]
//!               [MemcpyAsync HtoD 4 MB][StreamSynchronize..]
//! gpu copy                   [HtoD 4 MB.............]
//! piece (sync)                                     [....]          D9
//! ```
//!
//! Evidence: a `sync` piece whose paired copy (its own, or that of a copy
//! call on its thread that returned at most 50 µs before it started) is
//! not a device→host read (D5) nor a tiny host→device copy (D7); or a
//! piece inside a non-`Async` copy/memset call. Host→device copies of 64 KB or less are excluded (they return
//! before the copy completes; nsys's rule does the same). Threshold:
//! [`NOISE_NS`](super::NOISE_NS) per call site. Savings: replay without
//! the waits (the copy issued `non_blocking` from pinned memory, one sync
//! where the data is consumed).

use super::{CallClass, Cx, Draft, SyncKind};
use crate::causes::Cause;
use crate::format::duration;

pub(super) fn detect(cx: &Cx, claims: &mut [bool]) -> Vec<Draft> {
    let groups = cx.site_groups(claims, false, |p| {
        (p.cause == Cause::Sync && p.blocking.is_some_and(|b| cx.sync_kind(b).0 == SyncKind::Copy))
            || (p.cause != Cause::Sync && p.class == Some(CallClass::SyncCopy))
    });
    groups
        .iter()
        .map(|g| {
            let (op, _, src) = &g.blame;
            let place = cx.where_(op, src);
            let title = format!(
                "{place} makes {} copies synchronous ({} idle)",
                g.calls.len(),
                duration(g.idle_ns)
            );
            let per = cx.per_step();
            let hint = format!(
                "Copies at {place} block the CPU until they finish, {} idle {per}. Issue them \
                 with `non_blocking=True` from pinned memory (`tensor.pin_memory()` once, or \
                 `DataLoader(pin_memory=True)`) and synchronize once, only where the result is \
                 used on the host; use `{}` / `{}` in extensions.",
                duration(g.idle_ns / cx.n_steps()),
                cx.platform.api("cudaMemcpyAsync"),
                cx.platform.api("cudaMemsetAsync")
            );
            cx.sync_draft(g, "D9", "synchronous_copy", title, hint)
        })
        .collect()
}

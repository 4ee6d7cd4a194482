//! D6, explicit synchronizations: `torch.cuda.synchronize()`,
//! `stream.synchronize()`, `event.synchronize()` (cudaDeviceSynchronize,
//! cudaStreamSynchronize, cudaEventSynchronize and their driver forms) with
//! no copy behind them: the host waits for the queue to drain, then the GPU
//! waits for the host (docs/detectors.md, D6; nsys `cuda_api_sync`).
//!
//! ```text
//! stream 7    [k1..........]               [k2..]
//! thread 1    [cudaDeviceSynchronize..]  [L2]
//! piece (sync)             [.........]           claimed by D6
//! ```
//!
//! Evidence: a `sync` piece whose blocking call has no paired copy. Only
//! threads that launch work on the device count (TraceLens's same-thread
//! rule; [`DeviceEvidence`](crate::evidence::DeviceEvidence) applies it).
//! Threshold: [`NOISE_NS`](super::NOISE_NS) of idle per call site (ours).
//! Savings: replay with the calls not waiting.

use super::{Cx, Draft, SyncKind};
use crate::causes::Cause;
use crate::format::{duration, times};

pub(super) fn detect(cx: &Cx, claims: &mut [bool]) -> Vec<Draft> {
    let groups = cx.site_groups(claims, false, |p| {
        p.cause == Cause::Sync && p.blocking.is_some_and(|b| cx.sync_kind(b).0 == SyncKind::Plain)
    });
    groups
        .iter()
        .map(|g| {
            let (op, _, src) = &g.blame;
            let place = cx.where_(op, src);
            let api = g
                .calls
                .first()
                .map(|&c| cx.trace.strings.get(cx.trace.runtime.name[c.index()]).to_string())
                .unwrap_or_default();
            let title = format!(
                "{place} calls {api} {} and the GPU drains ({} idle)",
                times(g.calls.len()),
                duration(g.idle_ns)
            );
            let per = cx.per_step();
            let hint = format!(
                "{place} waits for all queued GPU work ({api}), {} idle {per}. Remove the \
                 synchronization (timing code often adds it: use `torch.cuda.Event(enable_timing=True)` \
                 and read the times after the loop), or make the dependency GPU-side with \
                 `stream.wait_event(event)` / `stream.wait_stream(other)` so the host keeps \
                 queueing work.",
                duration(g.idle_ns / cx.n_steps())
            );
            cx.sync_draft(g, "D6", "explicit_sync", title, hint)
        })
        .collect()
}

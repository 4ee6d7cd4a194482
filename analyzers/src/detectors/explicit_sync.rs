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
//!
//! What each call waits for is said by its API ([`SyncScope`]): device
//! and context synchronize wait for all queued GPU work, stream
//! synchronize for one stream's, event synchronize for the work queued
//! before a recorded event. A site that mixes APIs names each. An event
//! synchronize that its thread follows with `cudaEventElapsedTime` is a
//! timer being read ([`reads_elapsed_time`]): the advice is to read timers
//! after the loop, or, inside `DistributedDataParallel.forward`, that they
//! are DDP's own runtime statistics (its first 10 iterations and every
//! 100th after), not the steady state.

use super::{Cx, Draft, SyncKind};
use crate::causes::Cause;
use crate::format::{and_list, duration, times};
use crate::names::{is_event_elapsed_api, is_launch_api, sync_scope, SyncScope};
use gapscope_collectors::trace::CallRow;

pub(super) fn detect(cx: &Cx, claims: &mut [bool]) -> Vec<Draft> {
    let groups = cx.site_groups(claims, false, |p| {
        p.cause == Cause::Sync && p.blocking.is_some_and(|b| cx.sync_kind(b).0 == SyncKind::Plain)
    });
    groups
        .iter()
        .map(|g| {
            let (op, _, src) = &g.blame;
            let place = cx.where_(op, src);
            let apis = api_counts(cx, &g.calls);
            let counted = |a: &(String, usize, SyncScope)| format!("{} {}", a.0, times(a.1));
            let title = match apis.as_slice() {
                [one] => format!(
                    "{place} calls {} and the GPU drains ({} idle)",
                    counted(one),
                    duration(g.idle_ns)
                ),
                _ => format!(
                    "{place} synchronizes {} ({}) and the GPU drains ({} idle)",
                    times(g.calls.len()),
                    apis.iter().map(counted).collect::<Vec<_>>().join(", "),
                    duration(g.idle_ns)
                ),
            };
            let mut scopes: Vec<SyncScope> = apis.iter().map(|a| a.2).collect();
            scopes.sort_unstable();
            scopes.dedup();
            let waits = and_list(scopes.iter().map(|&s| {
                let named = and_list(apis.iter().filter(|a| a.2 == s).map(|a| a.0.clone()));
                format!("{} ({named})", waited_for(s))
            }));
            let per = cx.per_step();
            let hint = format!(
                "{place} waits for {waits}, {} idle {per}. {}",
                duration(g.idle_ns / cx.n_steps()),
                advice(cx, &g.calls)
            );
            cx.sync_draft(g, "D6", "explicit_sync", title, hint)
        })
        .collect()
}

/// What to do about `calls`: timers read every step (DDP's own, or the
/// program's), else synchronizations to remove or move to the GPU.
fn advice(cx: &Cx, calls: &[CallRow]) -> String {
    const GPU_SIDE: &str = "make the dependency GPU-side with `stream.wait_event(event)` / \
                            `stream.wait_stream(other)` so the host keeps queueing work";
    let (timers, others): (Vec<CallRow>, Vec<CallRow>) =
        calls.iter().partition(|&&c| reads_elapsed_time(cx, c));
    if timers.is_empty() {
        return format!(
            "Remove the synchronization (timing code often adds it: use \
             `torch.cuda.Event(enable_timing=True)` and read the times after the loop), or \
             {GPU_SIDE}."
        );
    }
    let mut out = if timers.iter().all(|&c| in_ddp_forward(cx, c)) {
        "The host waits for CUDA events and reads `cudaEventElapsedTime` inside \
         `DistributedDataParallel.forward`: DDP's own runtime statistics, which it collects in \
         the first 10 iterations and every 100th after. They are not the steady state: profile \
         steps after the tenth, or sample later iterations less often with \
         `model._set_ddp_runtime_logging_sample_rate(n)`."
            .to_string()
    } else {
        "The host waits for an event and then reads `cudaEventElapsedTime`: timing code that \
         reads its events every step. Record the events without waiting and read the times \
         once after the loop (`torch.cuda.synchronize()`, then `start.elapsed_time(end)` for \
         each step's pair), or time fewer steps."
            .to_string()
    };
    if !others.is_empty() {
        out += &format!(
            " The other {} ({}): remove {} where the host does not need the GPU's result, or \
             {GPU_SIDE}.",
            if others.len() == 1 {
                "synchronization"
            } else {
                "synchronizations"
            },
            and_list(api_counts(cx, &others).into_iter().map(|a| a.0)),
            if others.len() == 1 { "it" } else { "them" },
        );
    }
    out
}

/// The DDP forward range whose timers [`advice`] names.
const DDP_FORWARD: &str = "DistributedDataParallel.forward";

/// Whether runtime call `c` runs inside a `DistributedDataParallel.forward`
/// range (its operator or one of that operator's parents).
fn in_ddp_forward(cx: &Cx, c: CallRow) -> bool {
    cx.ranges_up(cx.trace.links.runtime_op[c.index()]).any(|r| {
        cx.trace
            .strings
            .get(cx.trace.cpu_ops.name[r.index()])
            .starts_with(DDP_FORWARD)
    })
}

/// The synchronize APIs of `calls`: name, how many calls, scope; most
/// calls first (then by name).
fn api_counts(cx: &Cx, calls: &[CallRow]) -> Vec<(String, usize, SyncScope)> {
    let rt = &cx.trace.runtime;
    let mut out: Vec<(String, usize, SyncScope)> = Vec::new();
    for &c in calls {
        let name = cx.trace.strings.get(rt.name[c.index()]);
        match out.iter_mut().find(|a| a.0 == name) {
            Some(a) => a.1 += 1,
            None => out.push((name.to_string(), 1, sync_scope(name).unwrap_or(SyncScope::Device))),
        }
    }
    out.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    out
}

/// What a synchronize of `scope` waits for.
fn waited_for(scope: SyncScope) -> &'static str {
    match scope {
        SyncScope::Device => "all queued GPU work",
        SyncScope::Stream => "the work queued on one stream",
        SyncScope::Event => "the work queued before a recorded event",
    }
}

/// Longest run of the thread's calls after an event synchronize searched
/// for the elapsed-time read (ours: timing code reads right after it
/// waits; the shared traces read within 2 calls).
const ELAPSED_READ_WITHIN: usize = 4;

/// Most rows of the runtime table (all threads') looked at after the
/// call: a bound on the search, not a rule.
const ELAPSED_SCAN_ROWS: usize = 256;

/// `call` is an event synchronize whose thread reads an elapsed time
/// (`cudaEventElapsedTime`) within its next [`ELAPSED_READ_WITHIN`]
/// calls, before launching anything: the wait is there to read a timer.
fn reads_elapsed_time(cx: &Cx, call: CallRow) -> bool {
    let rt = &cx.trace.runtime;
    let c = call.index();
    let name = cx.trace.strings.get(rt.name[c]);
    if sync_scope(name) != Some(SyncScope::Event) {
        return false;
    }
    let thread = rt.thread[c];
    // Runtime rows are sorted by start: the thread's next calls follow.
    (c + 1..rt.len().min(c + 1 + ELAPSED_SCAN_ROWS))
        .filter(|&i| rt.thread[i] == thread)
        .take(ELAPSED_READ_WITHIN)
        .map(|i| cx.trace.strings.get(rt.name[i]))
        .take_while(|n| !is_launch_api(n))
        .any(is_event_elapsed_api)
}

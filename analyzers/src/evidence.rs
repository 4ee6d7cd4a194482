//! CPU-side evidence about one device, gathered once before its gaps are
//! split: which threads launch its work, when a host thread was blocked
//! waiting for it, and when the profiler itself was working.
//!
//! ```text
//! thread 1   [aten::item.............................]
//!              [cudaMemcpyAsync DtoH] [cudaStreamSynchronize....]
//! stream 7   [k1.............................]  (DtoH)
//! blocking                            [.........]   the sync call: the host
//!                                                   waits for the device
//! ```
//!
//! Blocking calls (CUDA "API synchronization behavior"; detectors.md D5, D6,
//! D9): stream / device / context / event synchronize, a non-`Async`
//! `cudaMemcpy*` that is not host→device, and a `cudaMemcpyAsync` into
//! pageable host memory (device→host), which returns only once the copy is
//! done. `cudaStreamWaitEvent` is a GPU-side wait and never blocks the host.

use crate::intervals::Span;
use crate::names::{is_async_api, is_memcpy_api, is_sync_api};
use gapscope_collectors::trace::{CallRow, CopyKind, GpuKind, MarkerKind, MemKind, Ns, ThreadId, Trace};

/// One interval where a host thread was blocked on the device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Blocking {
    /// Start of the blocking call, ns.
    pub start: Ns,
    /// When it returned, ns.
    pub end: Ns,
    /// The `runtime` row of the call.
    pub call: CallRow,
}

/// What the CPU side says about one device.
#[derive(Clone, Debug, Default)]
pub struct DeviceEvidence {
    /// The GPU index.
    pub device: u32,
    /// Threads that launched work on the device, busiest first.
    pub launchers: Vec<ThreadId>,
    /// Blocking calls on those threads, disjoint and sorted: where calls
    /// overlap, the earlier call keeps the overlap.
    pub blocking: Vec<Blocking>,
    /// Profiler-overhead marker spans for the device (or for no device),
    /// merged and sorted.
    pub profiler: Vec<Span>,
}

impl DeviceEvidence {
    /// Gathers the evidence for `device`.
    pub fn new(trace: &Trace, device: u32) -> DeviceEvidence {
        let launchers = launcher_threads(trace, device);
        let blocking = blocking_calls(trace, device, &launchers);
        DeviceEvidence {
            device,
            launchers,
            blocking,
            profiler: profiler_spans(trace, device),
        }
    }

    /// The blocking interval holding `t`, if any.
    pub fn blocking_at(&self, t: Ns) -> Option<&Blocking> {
        let k = self.blocking.partition_point(|b| b.start <= t);
        self.blocking[..k].last().filter(|b| b.end > t)
    }

    /// True when `t` is inside a profiler-overhead marker.
    pub fn profiler_at(&self, t: Ns) -> bool {
        let k = self.profiler.partition_point(|s| s.0 <= t);
        self.profiler[..k].last().is_some_and(|s| s.1 > t)
    }
}

fn launcher_threads(trace: &Trace, device: u32) -> Vec<ThreadId> {
    let mut count = vec![0u64; trace.threads.len()];
    for i in 0..trace.gpu.len() {
        let call = trace.links.gpu_launch[i];
        if let Some(call) = call.filter(|_| trace.gpu.device[i] == device) {
            let t = trace.runtime.thread[call.index()].0 as usize;
            if t < count.len() {
                count[t] += 1;
            }
        }
    }
    let mut threads: Vec<ThreadId> = (0..count.len() as u32)
        .filter(|&t| count[t as usize] > 0)
        .map(ThreadId)
        .collect();
    threads.sort_by_key(|t| std::cmp::Reverse(count[t.0 as usize]));
    threads
}

/// What the GPU rows linked to each runtime call say: the device and, for
/// copies, the direction and destination memory.
#[derive(Clone, Copy)]
struct CallTarget {
    device: u32,
    kind: GpuKind,
    copy: CopyKind,
    dst: MemKind,
}

fn call_targets(trace: &Trace) -> Vec<Option<CallTarget>> {
    let mut out = vec![None; trace.runtime.len()];
    let g = &trace.gpu;
    for i in 0..g.len() {
        if let Some(call) = trace.links.gpu_launch[i] {
            out[call.index()] = Some(CallTarget {
                device: g.device[i],
                kind: g.kind[i],
                copy: g.copy_kind[i],
                dst: g.dst_mem[i],
            });
        }
    }
    out
}

fn blocking_calls(trace: &Trace, device: u32, launchers: &[ThreadId]) -> Vec<Blocking> {
    let mut is_launcher = vec![false; trace.threads.len()];
    for t in launchers {
        is_launcher[t.0 as usize] = true;
    }
    let targets = call_targets(trace);
    let rt = &trace.runtime;
    let mut calls: Vec<Blocking> = (0..rt.len())
        .filter(|&r| is_launcher.get(rt.thread[r].0 as usize).copied().unwrap_or(false))
        .filter(|&r| rt.end[r] > rt.start[r])
        .filter(|&r| is_blocking(trace.strings.get(rt.name[r]), targets[r], device))
        .map(|r| Blocking {
            start: rt.start[r],
            end: rt.end[r],
            call: CallRow::new(r),
        })
        .collect();
    calls.sort_by_key(|b| (b.start, b.end));
    disjoint(calls)
}

/// Whether a runtime call named `name` blocks the host on `device`.
fn is_blocking(name: &str, target: Option<CallTarget>, device: u32) -> bool {
    // A call linked to work on another device (a sync record, a copy) is
    // that device's business.
    if target.is_some_and(|t| t.device != device) {
        return false;
    }
    if is_sync_api(name) {
        return true;
    }
    if !is_memcpy_api(name) {
        return false;
    }
    let copy = target.filter(|t| t.kind == GpuKind::Memcpy);
    if is_async_api(name) {
        copy.is_some_and(|c| c.copy == CopyKind::DtoH && c.dst == MemKind::Pageable)
    } else {
        copy.is_none_or(|c| c.copy != CopyKind::HtoD)
    }
}

/// Trims sorted intervals so they no longer overlap (the earlier keeps the
/// overlap), dropping what becomes empty.
fn disjoint(sorted: Vec<Blocking>) -> Vec<Blocking> {
    let mut out: Vec<Blocking> = Vec::with_capacity(sorted.len());
    for mut b in sorted {
        if let Some(last) = out.last() {
            b.start = b.start.max(last.end);
        }
        if b.end > b.start {
            out.push(b);
        }
    }
    out
}

fn profiler_spans(trace: &Trace, device: u32) -> Vec<Span> {
    let m = &trace.markers;
    let spans = (0..m.len())
        .filter(|&i| m.kind[i] == MarkerKind::ProfilerOverhead)
        .filter(|&i| m.device[i] == device || m.device[i] == u32::MAX)
        .map(|i| (m.start[i], m.end[i]))
        .collect();
    crate::intervals::union(spans)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocking_names() {
        assert!(is_blocking("cudaStreamSynchronize", None, 0));
        assert!(is_blocking("cudaMemcpy", None, 0));
        assert!(!is_blocking("cudaMemcpyAsync", None, 0));
        assert!(!is_blocking("cudaStreamWaitEvent", None, 0));
        assert!(!is_blocking("cudaLaunchKernel", None, 0));
        let d2h_pageable = CallTarget {
            device: 0,
            kind: GpuKind::Memcpy,
            copy: CopyKind::DtoH,
            dst: MemKind::Pageable,
        };
        assert!(is_blocking("cudaMemcpyAsync", Some(d2h_pageable), 0));
        assert!(!is_blocking("cudaMemcpyAsync", Some(d2h_pageable), 1));
        let h2d = CallTarget {
            copy: CopyKind::HtoD,
            ..d2h_pageable
        };
        assert!(!is_blocking("cudaMemcpy", Some(h2d), 0));
    }
}

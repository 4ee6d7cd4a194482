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
use crate::names::{
    is_async_api, is_capture_begin_api, is_capture_end_api, is_graph_setup_api, is_lazy_loading_name,
    is_memcpy_api, is_step_name, is_sync_api,
};
use gapscope_collectors::trace::{
    CallRow, CopyKind, CpuOpKind, FxHashMap, GpuKind, MarkerKind, MemKind, Ns, OpRow, ThreadId, Trace,
};

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
    /// CUPTI's `Lazy Function Loading` spans (Kineto writes them among its
    /// `overhead` records): the driver loading a kernel's module on its
    /// first launch, a cost the program pays without the profiler too, so
    /// not profiler overhead. Merged and sorted.
    pub lazy_loading: Vec<Span>,
    /// CUDA/HIP graph setup on each thread, sorted by thread then start
    /// ([`graph_setup_spans`]).
    pub graph_setup: Vec<GraphSetup>,
}

/// One stretch of CUDA/HIP graph setup on a host thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GraphSetup {
    /// The thread doing it.
    pub thread: ThreadId,
    /// Start, ns (`Ns::MIN` when a capture began before the trace).
    pub start: Ns,
    /// End, ns (`Ns::MAX` when the trace ends inside a capture).
    pub end: Ns,
    /// The call that opens it (`BeginCapture`, or the instantiate / upload /
    /// destroy call); none for a capture begun before the trace.
    pub call: Option<CallRow>,
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
            profiler: overhead_spans(trace, device, false),
            lazy_loading: overhead_spans(trace, device, true),
            graph_setup: graph_setup_spans(trace),
        }
    }

    /// The graph setup of `thread` holding `t`, if any.
    pub fn graph_setup_at(&self, thread: ThreadId, t: Ns) -> Option<&GraphSetup> {
        let k = self
            .graph_setup
            .partition_point(|g| (g.thread, g.start) <= (thread, t));
        self.graph_setup[..k]
            .iter()
            .rev()
            .take_while(|g| g.thread == thread)
            .find(|g| g.end > t)
    }

    /// The blocking interval holding `t`, if any.
    pub fn blocking_at(&self, t: Ns) -> Option<&Blocking> {
        blocking_at(&self.blocking, t)
    }

    /// The blocking intervals overlapping `[s, e)`, in order: what
    /// [`blocking_at`] needs for any instant inside it.
    pub fn blocking_in(&self, (s, e): Span) -> &[Blocking] {
        let first = self.blocking.partition_point(|b| b.end <= s);
        let n = self.blocking[first..].partition_point(|b| b.start < e);
        &self.blocking[first..first + n]
    }

    /// True when `t` is inside a profiler-overhead marker.
    pub fn profiler_at(&self, t: Ns) -> bool {
        let k = self.profiler.partition_point(|s| s.0 <= t);
        self.profiler[..k].last().is_some_and(|s| s.1 > t)
    }
}

/// The interval of `blocking` (sorted, disjoint) holding `t`, if any.
pub fn blocking_at(blocking: &[Blocking], t: Ns) -> Option<&Blocking> {
    let k = blocking.partition_point(|b| b.start <= t);
    blocking[..k].last().filter(|b| b.end > t)
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

/// The time each `cpu_ops` row spent in blocking calls (on any device)
/// made inside it, its own or its children's, for the rows that made any:
/// an operator that waits for the GPU is slow because of the GPU, not
/// because of its host work. Calls are walked up from the innermost
/// operator that made them; a trace has few blocking calls, so the map is
/// small.
pub fn blocked_in_ops(trace: &Trace) -> FxHashMap<OpRow, Ns> {
    let rt = &trace.runtime;
    let mut out: FxHashMap<OpRow, Ns> = FxHashMap::default();
    // Per name: whether calls of it can block at all (sync or copy APIs).
    let mut may_block: Vec<Option<bool>> = vec![None; trace.strings.len()];
    let mut targets: Option<Vec<Option<CallTarget>>> = None;
    for r in 0..rt.len() {
        let (start, end, name) = (rt.start[r], rt.end[r], rt.name[r]);
        if end <= start {
            continue;
        }
        let text = trace.strings.get(name);
        let maybe = match may_block.get_mut(name.0 as usize) {
            Some(slot) => *slot.get_or_insert_with(|| is_sync_api(text) || is_memcpy_api(text)),
            None => is_sync_api(text) || is_memcpy_api(text),
        };
        if !maybe {
            continue;
        }
        let target = targets.get_or_insert_with(|| call_targets(trace))[r];
        // The call's own device: blocking anywhere counts here.
        if !is_blocking(text, target, target.map_or(0, |t| t.device)) {
            continue;
        }
        let mut at = trace.links.runtime_op[r];
        while let Some(op) = at {
            *out.entry(op).or_default() += end - start;
            at = trace.cpu_ops.parent[op.index()];
        }
    }
    out
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

/// The spans of the device's overhead markers: the profiler's own
/// (`lazy` false) or the driver's lazy kernel loading (`lazy` true).
fn overhead_spans(trace: &Trace, device: u32, lazy: bool) -> Vec<Span> {
    let m = &trace.markers;
    let spans = (0..m.len())
        .filter(|&i| m.kind[i] == MarkerKind::ProfilerOverhead)
        .filter(|&i| m.device[i].is_none_or(|d| d == device))
        .filter(|&i| is_lazy_loading_name(trace.strings.get(m.name[i])) == lazy)
        .map(|i| (m.start[i], m.end[i]))
        .collect();
    crate::intervals::union(spans)
}

/// What a runtime call does to CUDA/HIP graph setup.
#[derive(Clone, Copy, PartialEq, Eq)]
enum GraphCall {
    BeginCapture,
    EndCapture,
    /// Instantiate, upload or destroy: setup in one call.
    Setup,
}

fn graph_call(api: &str) -> Option<GraphCall> {
    if is_capture_begin_api(api) {
        Some(GraphCall::BeginCapture)
    } else if is_capture_end_api(api) {
        Some(GraphCall::EndCapture)
    } else if is_graph_setup_api(api) {
        Some(GraphCall::Setup)
    } else {
        None
    }
}

/// An open capture: thread, start, the `BeginCapture` call, nesting depth,
/// and the end of the user range around it.
type OpenCapture = (ThreadId, Ns, Option<CallRow>, u32, Ns);

/// Every thread's graph setup: each capture from its `BeginCapture` call
/// to its `EndCapture` call (nested captures, on several streams of one
/// thread, count once), widened to the innermost user range around the
/// `BeginCapture` call (vLLM's `capture_32_FULL`: the warm-up run and the
/// allocator calls that prepare the capture are setup too; never a
/// ProfilerStep or an `nn.Module`), and each instantiate / upload /
/// destroy call. Disjoint per thread.
pub fn graph_setup_spans(trace: &Trace) -> Vec<GraphSetup> {
    let rt = &trace.runtime;
    let mut kind: Vec<Option<Option<GraphCall>>> = vec![None; trace.strings.len()];
    let mut calls: Vec<(ThreadId, Ns, Ns, CallRow, GraphCall)> = Vec::new();
    for r in 0..rt.len() {
        let id = rt.name[r].0 as usize;
        let k = *kind[id].get_or_insert_with(|| graph_call(trace.strings.get(rt.name[r])));
        if let Some(k) = k {
            calls.push((rt.thread[r], rt.start[r], rt.end[r], CallRow::new(r), k));
        }
    }
    calls.sort_by_key(|c| (c.0, c.1, c.3));
    let mut out = Vec::new();
    let mut open: Option<OpenCapture> = None;
    for (thread, start, end, call, k) in calls {
        if let Some((t, s, c, _, _)) = open.filter(|o| o.0 != thread) {
            out.push(GraphSetup {
                thread: t,
                start: s,
                end: Ns::MAX,
                call: c,
            });
            open = None;
        }
        match k {
            GraphCall::BeginCapture => match &mut open {
                Some(o) => o.3 += 1,
                None => {
                    let (rs, re) = user_range_around(trace, thread, start).unwrap_or((start, start));
                    open = Some((thread, rs.min(start), Some(call), 1, re));
                }
            },
            GraphCall::EndCapture => match open {
                Some((t, s, c, 1, re)) => {
                    out.push(GraphSetup {
                        thread: t,
                        start: s,
                        end: end.max(re),
                        call: c,
                    });
                    open = None;
                }
                Some(ref mut o) => o.3 -= 1,
                None => out.push(GraphSetup {
                    thread,
                    start: Ns::MIN,
                    end,
                    call: None,
                }),
            },
            GraphCall::Setup if open.is_none() => out.push(GraphSetup {
                thread,
                start,
                end,
                call: Some(call),
            }),
            GraphCall::Setup => {}
        }
    }
    if let Some((t, s, c, _, _)) = open {
        out.push(GraphSetup {
            thread: t,
            start: s,
            end: Ns::MAX,
            call: c,
        });
    }
    out.sort_by_key(|g| (g.thread, g.start, g.end));
    // Widened spans may overlap (an instantiate call inside the user
    // range): keep them disjoint per thread.
    let mut merged: Vec<GraphSetup> = Vec::with_capacity(out.len());
    for g in out {
        match merged.last_mut() {
            Some(m) if m.thread == g.thread && g.start <= m.end => m.end = m.end.max(g.end),
            _ => merged.push(g),
        }
    }
    merged
}

/// The innermost user range (`record_function`, not a ProfilerStep or an
/// `nn.Module`) of `thread` holding `t`.
fn user_range_around(trace: &Trace, thread: ThreadId, t: Ns) -> Option<(Ns, Ns)> {
    let ops = &trace.cpu_ops;
    let mut at = gapscope_collectors::trace::innermost_op(trace, thread, t);
    while let Some(r) = at.map(|r| r.index()) {
        let name = trace.strings.get(ops.name[r]);
        if ops.kind[r] == CpuOpKind::UserAnnotation && !is_step_name(name) && !name.starts_with("nn.Module:")
        {
            return Some((ops.start[r], ops.end[r]));
        }
        at = ops.parent[r];
    }
    None
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

//! Splits each idle gap of a device into [`IdleSegment`]s, one [`Cause`]
//! and one attribution each. The segments of a gap cover it exactly, so the
//! idle time by cause always sums to the device's idle time.
//!
//! # Whose CPU time explains a gap
//!
//! The *issuing thread* is the thread of the launch call of the first GPU
//! row after the gap (`L` below is that call's start). With no next work (a
//! gap at the end of the trace) or no known launch, it is the thread that
//! launched the row before the gap, else the device's busiest launcher.
//! Blocking calls count on every thread that launches work on the device.
//!
//! # The rules
//!
//! The gap is cut wherever the issuing thread enters or leaves a range,
//! at `L`, and at the edges of blocking calls and profiler markers; each
//! piece takes the first cause of [`Cause::PRECEDENCE`] whose rule holds
//! at its start (the order is stated there, once). The rules:
//!
//! - `profiler`: a `ProfilerOverhead` marker covers it, or the thread is
//!   inside the profiler's own code (CUPTI, `torch/profiler/` frames).
//! - `sync`: a launching thread is inside a blocking call (synchronize, a
//!   blocking device→host copy). The segment runs from the drain (the gap
//!   start) until the call returns; what follows is judged on its own.
//! - `dataloader`: the thread is inside a DataLoader `__next__` range.
//! - `launch_overhead`: from `L` on, the next work is being launched or
//!   is queued; the CPU is no longer what the GPU waits for.
//! - `cpu_op`: the thread is inside an operator.
//! - `framework_overhead`: the thread is inside a step, annotation or
//!   Python frame but no operator.
//! - `untraced`: always holds; the last resort (no range at all on the
//!   thread).
//!
//! A blocking `.item()` whose drain is followed by the next batch and some
//! Python before the next launch:
//!
//! ```text
//! ns          0    10   20   30   40   50   60   70   80   90  100
//! stream 7    [k1...........]                              [k2....]
//! thread 1    [aten::item........]     [DataLoader#__next__]
//!               [cudaStreamSynchronize]            [launch k2]
//! thread 1    [ProfilerStep#1..............................................]
//! gap                        [...........................]
//! segments                   [sync]  [fw] [dataloader...][fw][launch]
//!                            25   35  40   45          75 80 85   90
//! ```
//!
//! Kernels replayed from one `cudaGraphLaunch` share its correlation: the
//! gaps between them start after `L`, so they are `launch_overhead`.
//!
//! # Attribution
//!
//! `sync`: the operator around the blocking call (`aten::_local_scalar_dense`
//! under `aten::item`); `launch_overhead`: the operator that launched the
//! next work; every other cause: the innermost range of the issuing thread
//! (through [`OpContext`]). Each segment names the innermost operator, the
//! nearest annotation (the DataLoader range for `dataloader`), and the best
//! source frame.

use crate::attribution::{innermost_op, OpContext};
use crate::causes::Cause;
use crate::evidence::DeviceEvidence;
use crate::gaps::{device_gaps, Gap};
use crate::intervals::Span;
use gapscope_collectors::trace::{GpuRow, Ns, OpRow, StrId, Strings, ThreadId, Trace};
use std::borrow::Cow;

/// One piece of an idle gap with a single cause and attribution.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IdleSegment {
    /// Start, ns since the trace origin.
    pub start: Ns,
    /// End (exclusive), ns.
    pub end: Ns,
    /// Why the device was idle.
    pub cause: Cause,
    /// Innermost operator (`cpu_ops` row, kind `Operator`) to blame, if any.
    pub op: Option<OpRow>,
    /// Nearest annotation / module / optimizer / DataLoader range (`cpu_ops`
    /// row), if any.
    pub annotation: Option<OpRow>,
    /// Source frame (`file.py(N): fn`, or a `;`-separated stack from the
    /// trace; see [`display_source`](crate::names::display_source)),
    /// or empty.
    pub source: StrId,
}

impl IdleSegment {
    /// Length in ns.
    pub fn dur(&self) -> Ns {
        self.end - self.start
    }

    fn same_blame(&self, o: &IdleSegment) -> bool {
        (self.cause, self.op, self.annotation, self.source) == (o.cause, o.op, o.annotation, o.source)
    }
}

/// The idle segments of `device` inside `window`, in time order. Builds an
/// [`IdleAnalyzer`]; reuse one to analyze several devices or windows.
pub fn idle_segments(trace: &Trace, device: u32, window: Span) -> Vec<IdleSegment> {
    IdleAnalyzer::new(trace).segments(device, window)
}

/// Splits gaps into segments; holds the per-trace [`OpContext`] so that it
/// is computed once.
pub struct IdleAnalyzer<'t> {
    trace: &'t Trace,
    cx: Cow<'t, OpContext>,
}

/// The CPU side of one gap: who issues the next work and when.
struct Issuer {
    thread: Option<ThreadId>,
    /// Start of the next work's launch call (`Ns::MAX`: none known).
    launch_start: Ns,
    /// The `cpu_ops` row holding the launch call, if any.
    launch_op: Option<OpRow>,
}

/// The attribution triple of a segment.
type Blame = (Option<OpRow>, Option<OpRow>, StrId);
const NO_BLAME: Blame = (None, None, Strings::EMPTY);

impl<'t> IdleAnalyzer<'t> {
    /// Prepares `trace` (one pass over its CPU ranges).
    pub fn new(trace: &'t Trace) -> Self {
        IdleAnalyzer {
            trace,
            cx: Cow::Owned(OpContext::new(trace)),
        }
    }

    /// Reuses blame columns already computed for `trace`.
    pub fn with_context(trace: &'t Trace, cx: &'t OpContext) -> Self {
        IdleAnalyzer {
            trace,
            cx: Cow::Borrowed(cx),
        }
    }

    /// The trace analyzed.
    pub fn trace(&self) -> &'t Trace {
        self.trace
    }

    /// The per-row blame columns.
    pub fn context(&self) -> &OpContext {
        &self.cx
    }

    /// The idle segments of `device` inside `window`, in time order.
    pub fn segments(&self, device: u32, window: Span) -> Vec<IdleSegment> {
        self.segments_with(&DeviceEvidence::new(self.trace, device), window)
    }

    /// The idle segments of the device `ev` describes (gathered already)
    /// inside `window`, in time order.
    pub fn segments_with(&self, ev: &DeviceEvidence, window: Span) -> Vec<IdleSegment> {
        let mut out = Vec::new();
        for gap in device_gaps(self.trace, ev.device, window) {
            self.split_gap(ev, &gap, &mut out);
        }
        out
    }

    fn split_gap(&self, ev: &DeviceEvidence, gap: &Gap, out: &mut Vec<IdleSegment>) {
        let who = self.issuer(ev, gap);
        let cuts = self.cuts(ev, gap, &who);
        for w in cuts.windows(2) {
            let (cause, (op, annotation, source)) = self.classify(ev, &who, w[0]);
            let seg = IdleSegment {
                start: w[0],
                end: w[1],
                cause,
                op,
                annotation,
                source,
            };
            match out.last_mut() {
                Some(last) if last.end == seg.start && last.same_blame(&seg) => last.end = seg.end,
                _ => out.push(seg),
            }
        }
    }

    fn issuer(&self, ev: &DeviceEvidence, gap: &Gap) -> Issuer {
        let rt = &self.trace.runtime;
        let call_of = |row: Option<GpuRow>| row.and_then(|r| self.trace.links.gpu_launch[r.index()]);
        if let Some(next) = call_of(gap.next_row) {
            let c = next.index();
            return Issuer {
                thread: Some(rt.thread[c]),
                launch_start: rt.start[c],
                launch_op: self.trace.links.runtime_op[c],
            };
        }
        let thread = match call_of(gap.prev_row) {
            None => ev.launchers.first().copied(),
            Some(c) => Some(rt.thread[c.index()]),
        };
        Issuer {
            thread,
            launch_start: Ns::MAX,
            launch_op: None,
        }
    }

    /// Every instant inside the gap where the answer may change, with the
    /// gap's edges, sorted and unique.
    fn cuts(&self, ev: &DeviceEvidence, gap: &Gap, who: &Issuer) -> Vec<Ns> {
        let (gs, ge) = (gap.start, gap.end);
        let inside = |t: Ns| t > gs && t < ge;
        let mut cuts = vec![gs, ge, who.launch_start];
        let first = ev.blocking.partition_point(|b| b.end <= gs);
        for b in ev.blocking[first..].iter().take_while(|b| b.start < ge) {
            cuts.extend([b.start, b.end]);
        }
        let first = ev.profiler.partition_point(|s| s.1 <= gs);
        for s in ev.profiler[first..].iter().take_while(|s| s.0 < ge) {
            cuts.extend([s.0, s.1]);
        }
        if let Some(thread) = who.thread {
            self.thread_cuts(thread, gap, &mut cuts);
        }
        cuts.retain(|&t| inside(t) || t == gs || t == ge);
        cuts.sort_unstable();
        cuts.dedup();
        cuts
    }

    /// Starts and ends of the thread's ranges inside the gap: the ends of
    /// the ranges open at its start, and every range starting inside it.
    fn thread_cuts(&self, thread: ThreadId, gap: &Gap, cuts: &mut Vec<Ns>) {
        let t = self.trace;
        let ops = &t.cpu_ops;
        for a in t.ancestors(innermost_op(t, thread, gap.start)) {
            cuts.push(ops.end[a.index()]);
        }
        if thread.0 as usize + 1 >= t.cpu_op_thread_start.len() {
            return;
        }
        let range = t.cpu_ops_of(thread);
        let from = range.start + ops.start[range.clone()].partition_point(|&s| s <= gap.start);
        for i in from..range.end {
            if ops.start[i] >= gap.end {
                break;
            }
            cuts.extend([ops.start[i], ops.end[i]]);
        }
    }

    /// The cause and blame of the instant `t`: the first cause of
    /// [`Cause::PRECEDENCE`] whose rule (module docs) holds.
    fn classify(&self, ev: &DeviceEvidence, who: &Issuer, t: Ns) -> (Cause, Blame) {
        let inner = who.thread.and_then(|th| innermost_op(self.trace, th, t));
        let cx = &self.cx;
        let inner_blame = || self.blame(inner);
        for cause in Cause::PRECEDENCE {
            let blame = match cause {
                Cause::Profiler => {
                    (ev.profiler_at(t) || inner.is_some_and(|i| cx.profiler[i.index()])).then(inner_blame)
                }
                Cause::Sync => ev
                    .blocking_at(t)
                    .map(|b| self.blame(self.trace.links.runtime_op[b.call.index()])),
                Cause::Dataloader => inner
                    .map(OpRow::index)
                    .filter(|&i| cx.dataloader[i].is_some())
                    .map(|i| (cx.operator[i], cx.dataloader[i], cx.source[i])),
                Cause::LaunchOverhead => (t >= who.launch_start).then(|| self.blame(who.launch_op)),
                Cause::CpuOp => Some(inner_blame()).filter(|b| b.0.is_some()),
                Cause::FrameworkOverhead => inner.map(|_| {
                    let (_, annotation, source) = inner_blame();
                    (None, annotation, source)
                }),
                Cause::Untraced => Some(NO_BLAME),
            };
            if let Some(blame) = blame {
                return (cause, blame);
            }
        }
        unreachable!("`untraced` always holds")
    }

    fn blame(&self, row: Option<OpRow>) -> Blame {
        let Some(r) = row.map(OpRow::index) else {
            return NO_BLAME;
        };
        (self.cx.operator[r], self.cx.annotation[r], self.cx.source[r])
    }
}

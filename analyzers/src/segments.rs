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
//! # The rules, in precedence order
//!
//! The gap is cut wherever the issuing thread enters or leaves a range,
//! at `L`, and at the edges of blocking calls and profiler markers; each
//! piece takes the first cause that holds at its start:
//!
//! 1. `profiler`: a `ProfilerOverhead` marker covers it, or the thread is
//!    inside the profiler's own code (CUPTI, `torch/profiler/` frames).
//! 2. `sync`: a launching thread is inside a blocking call (synchronize, a
//!    blocking device→host copy). The segment runs from the drain (the gap
//!    start) until the call returns; what follows is judged on its own.
//! 3. `dataloader`: the thread is inside a DataLoader `__next__` range.
//! 4. `launch_overhead`: from `L` on, the next work is being launched or
//!    is queued; the CPU is no longer what the GPU waits for.
//! 5. `cpu_op`: before `L`, the thread is inside an operator.
//! 6. `framework_overhead`: before `L`, inside a step, annotation or Python
//!    frame but no operator.
//! 7. `untraced`: no range at all on the thread.
//!
//! `launch_overhead` is listed after `framework_overhead` in the cause
//! precedence ([`Cause::ALL`]); the two never compete because the others
//! only apply before `L`.
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
use gapscope_collectors::trace::{Ns, StrId, Strings, ThreadId, Trace, NONE};

/// One piece of an idle gap with a single cause and attribution.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IdleSegment {
    /// Start, ns since the trace origin.
    pub start: Ns,
    /// End (exclusive), ns.
    pub end: Ns,
    /// Why the device was idle.
    pub cause: Cause,
    /// Innermost operator (`cpu_ops` row, kind `Operator`) to blame, or
    /// [`NONE`].
    pub op: u32,
    /// Nearest annotation / module / optimizer / DataLoader range (`cpu_ops`
    /// row), or [`NONE`].
    pub annotation: u32,
    /// Source frame (`file.py(N): fn`, or a `;`-separated stack from the
    /// trace; see [`display_source`](crate::attribution::display_source)),
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
    cx: OpContext,
}

/// The CPU side of one gap: who issues the next work and when.
struct Issuer {
    thread: Option<ThreadId>,
    /// Start of the next work's launch call (`Ns::MAX`: none known).
    launch_start: Ns,
    /// The `cpu_ops` row holding the launch call, or [`NONE`].
    launch_op: u32,
}

/// The attribution triple of a segment.
type Blame = (u32, u32, StrId);
const NO_BLAME: Blame = (NONE, NONE, Strings::EMPTY);

impl<'t> IdleAnalyzer<'t> {
    /// Prepares `trace` (one pass over its CPU ranges).
    pub fn new(trace: &'t Trace) -> Self {
        IdleAnalyzer {
            trace,
            cx: OpContext::new(trace),
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
        let ev = DeviceEvidence::new(self.trace, device);
        let mut out = Vec::new();
        for gap in device_gaps(self.trace, device, window) {
            self.split_gap(&ev, &gap, &mut out);
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
        let call_of = |row: u32| match row {
            NONE => NONE,
            r => self.trace.links.gpu_launch[r as usize],
        };
        let next = call_of(gap.next_row);
        if next != NONE {
            let c = next as usize;
            return Issuer {
                thread: Some(rt.thread[c]),
                launch_start: rt.start[c],
                launch_op: self.trace.links.runtime_op[c],
            };
        }
        let prev = call_of(gap.prev_row);
        let thread = match prev {
            NONE => ev.launchers.first().copied(),
            c => Some(rt.thread[c as usize]),
        };
        Issuer {
            thread,
            launch_start: Ns::MAX,
            launch_op: NONE,
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
            cuts.push(ops.end[a as usize]);
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

    /// The cause and blame of the instant `t` (rules in the module docs).
    fn classify(&self, ev: &DeviceEvidence, who: &Issuer, t: Ns) -> (Cause, Blame) {
        let inner = who.thread.map_or(NONE, |th| innermost_op(self.trace, th, t));
        let cx = &self.cx;
        if ev.profiler_at(t) || (inner != NONE && cx.profiler[inner as usize]) {
            return (Cause::Profiler, self.blame(inner));
        }
        if let Some(b) = ev.blocking_at(t) {
            let op = self.trace.links.runtime_op[b.call as usize];
            return (Cause::Sync, self.blame(op));
        }
        if inner != NONE && cx.dataloader[inner as usize] != NONE {
            let i = inner as usize;
            return (
                Cause::Dataloader,
                (cx.operator[i], cx.dataloader[i], cx.source[i]),
            );
        }
        if t >= who.launch_start {
            return (Cause::LaunchOverhead, self.blame(who.launch_op));
        }
        if inner == NONE {
            return (Cause::Untraced, NO_BLAME);
        }
        let (op, annotation, source) = self.blame(inner);
        if op != NONE {
            (Cause::CpuOp, (op, annotation, source))
        } else {
            (Cause::FrameworkOverhead, (NONE, annotation, source))
        }
    }

    fn blame(&self, row: u32) -> Blame {
        if row == NONE {
            return NO_BLAME;
        }
        let r = row as usize;
        (self.cx.operator[r], self.cx.annotation[r], self.cx.source[r])
    }
}

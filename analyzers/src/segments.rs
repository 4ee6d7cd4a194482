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
//! at `L` and `R` (the start and end of the next work's launch call), and
//! at the edges of blocking calls, graph setup, profiler markers and lazy
//! kernel loading (which decides no cause, but D16's warm-up finding claims
//! the time under it); each piece takes the first cause of
//! [`Cause::PRECEDENCE`] whose rule holds at its start (the order is stated
//! there, once). The rules:
//!
//! - `profiler`: a `ProfilerOverhead` marker covers it, or the thread is
//!   inside the profiler's own code (CUPTI, `torch/profiler/` frames).
//!   CUPTI's `Lazy Function Loading` records are not the profiler's: they
//!   are the driver loading a kernel on its first launch.
//! - `queued`: from *Q* on, the next work is queued on the device, and it
//!   started more than [`QUEUED_AFTER_NS`] after *Q*. *Q* is `R`, or the
//!   gap's start when `R` is earlier, or when the next work was launched
//!   before the trace began (its correlation id is below every call's), or
//!   when it belongs to a graph whose earlier kernels already ran (the
//!   graph is submitted whole). Nothing the host does from *Q* on holds the
//!   work, so no host cause applies after it, a sync included: a long
//!   `cudaDeviceSynchronize` over queued kernels drains only after the last
//!   of them.
//! - `graph_capture`: before *Q*, the issuing thread is capturing a
//!   CUDA/HIP graph or instantiating, uploading or destroying one
//!   ([`GraphSetup`](crate::evidence::GraphSetup)).
//! - `sync`: before *Q*, a launching thread is inside a blocking call
//!   (synchronize, a blocking device→host copy). The segment runs from the
//!   drain (the gap start) until the call returns; what follows is judged
//!   on its own.
//! - `dataloader`: before *Q*, the thread is inside a DataLoader
//!   `__next__` range.
//! - `launch_overhead`: from `L` on, the next work is being launched, or
//!   from *Q* on it is queued and starts within [`QUEUED_AFTER_NS`]; the
//!   CPU is no longer what the GPU waits for.
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
//! Work that waited in the queue: the launch returned at 14 but the kernel
//! started at 414, with nothing on the CPU holding it (a stream waiting on
//! an event of another process, say):
//!
//! ```text
//! µs          0    10 12 14  20                                     414
//! stream 7    [k1..]                                                [k2....]
//! thread 1           [L2]    [cudaStreamSynchronize..........................]
//! gap              [..][L][queued 14..414: no operator to blame...........]
//! ```
//!
//! Kernels replayed from one `cudaGraphLaunch` share its correlation: once
//! the graph's first kernel ran the whole graph is submitted, so the gaps
//! between its kernels are `launch_overhead` (or `queued`), even while the
//! launch call is still running. Not so for `hipGraphLaunch`: ROCm's
//! runtime enqueues a graph's nodes from the host one by one inside the
//! call, so while the call runs the rest of the graph is not known to be
//! submitted (TraceLens' SGLang decode on MI300X: a 1.57 ms call, 74 of
//! its 544 kernels started before it returns, and a 274 µs gap inside it
//! between two of them). There, as for any launch, the device waits for
//! the call until it returns.
//!
//! # Attribution
//!
//! `sync`: the operator around the blocking call (`aten::_local_scalar_dense`
//! under `aten::item`); `launch_overhead`: the operator that launched the
//! next work; `queued`: nobody (nothing in the trace held the work); every
//! other cause: the innermost range of the issuing thread
//! (through [`OpContext`]). Each segment names the innermost operator, the
//! nearest annotation (the DataLoader range for `dataloader`), and the best
//! source frame.

use crate::attribution::OpContext;
use crate::causes::Cause;
use crate::evidence::{blocking_at, Blocking, DeviceEvidence};
use crate::gaps::{device_gaps, Gap};
use crate::intervals::Span;
use gapscope_collectors::trace::{GpuRow, Ns, OpCursors, OpRow, StrId, Strings, ThreadId, Trace};
use std::borrow::Cow;

/// Launched work that has not started this long after it was queued (its
/// launch call returned, or the device went idle, whichever is later) is
/// held by something outside the trace: HTA's `launch_delay_cutoff`,
/// 100 µs. Measured on the shared traces: idle devices start launched work
/// 1–10 µs after the call returns on CUDA and up to 86 µs on ROCm
/// (MI300X), while held work waits milliseconds.
pub const QUEUED_AFTER_NS: Ns = 100_000;

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
    /// The CPU time is inside an operator's first call that costs far more
    /// than its later ones ([`first_calls`](crate::attribution::first_calls)):
    /// warm-up, not steady state.
    pub first_call: bool,
}

// 32 bytes: a big trace has millions of segments, held through the whole
// analysis. When the next work of a segment's gap was queued (*Q*) is the
// same for every segment of the gap, so it is kept per gap
// ([`IdleAnalyzer::queued_by_gap`]), not here.
const _: () = assert!(std::mem::size_of::<IdleSegment>() == 32);

impl IdleSegment {
    /// `[start, end)` with `cause` and no blame: what tests draw.
    #[cfg(test)]
    pub(crate) fn unblamed(start: Ns, end: Ns, cause: Cause) -> IdleSegment {
        IdleSegment {
            start,
            end,
            cause,
            op: None,
            annotation: None,
            source: Strings::EMPTY,
            first_call: false,
        }
    }

    /// Length in ns.
    pub fn dur(&self) -> Ns {
        self.end - self.start
    }

    fn same_blame(&self, o: &IdleSegment) -> bool {
        (self.cause, self.op, self.annotation, self.source, self.first_call)
            == (o.cause, o.op, o.annotation, o.source, o.first_call)
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
    /// The smallest correlation id of the trace's runtime calls: a GPU row
    /// with a smaller one was launched before the trace began.
    first_correlation: u64,
}

/// The CPU side of one gap: who issues the next work and when.
struct Issuer {
    thread: Option<ThreadId>,
    /// Start of the next work's launch call (`Ns::MAX`: none known).
    launch_start: Ns,
    /// When the next work was queued (*Q*; `Ns::MAX`: not known).
    queued_from: Ns,
    /// The device waited more than [`QUEUED_AFTER_NS`] from `queued_from`.
    held: bool,
    /// The `cpu_ops` row holding the launch call, if any.
    launch_op: Option<OpRow>,
}

/// The smallest correlation id of `trace`'s runtime calls (0: none): a
/// GPU row with a smaller one was launched before the trace began.
fn first_correlation(trace: &Trace) -> u64 {
    trace
        .runtime
        .correlation
        .iter()
        .copied()
        .filter(|&c| c != 0)
        .min()
        .unwrap_or(0)
}

/// Segments being cut from gaps in time order, with the *Q* of the gaps
/// of the first and the last (what a merge across gaps compares).
struct Split {
    segments: Vec<IdleSegment>,
    first_q: Ns,
    last_q: Ns,
}

impl Default for Split {
    fn default() -> Split {
        Split {
            segments: Vec::new(),
            first_q: Ns::MAX,
            last_q: Ns::MAX,
        }
    }
}

/// The attribution triple of a segment.
type Blame = (Option<OpRow>, Option<OpRow>, StrId);

/// Below this many gaps a device's segments are cut on one thread.
const PARALLEL_GAPS: usize = 4096;
const NO_BLAME: Blame = (None, None, Strings::EMPTY);

impl<'t> IdleAnalyzer<'t> {
    /// Prepares `trace` (one pass over its CPU ranges).
    pub fn new(trace: &'t Trace) -> Self {
        IdleAnalyzer {
            trace,
            cx: Cow::Owned(OpContext::new(trace)),
            first_correlation: first_correlation(trace),
        }
    }

    /// Reuses blame columns already computed for `trace`.
    pub fn with_context(trace: &'t Trace, cx: &'t OpContext) -> Self {
        IdleAnalyzer {
            trace,
            cx: Cow::Borrowed(cx),
            first_correlation: first_correlation(trace),
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
    ///
    /// A device with many gaps is cut on two threads, each half of the
    /// gaps on its own; a segment that a single pass would have merged
    /// across the cut is merged when the halves are joined (blame is
    /// compared by equality, so at most the first segment of the later
    /// half merges), so the result is the one pass's.
    pub fn segments_with(&self, ev: &DeviceEvidence, window: Span) -> Vec<IdleSegment> {
        let gaps = device_gaps(self.trace, ev.device, window);
        // Gaps come in time order, and so do the instants classified
        // inside each: the innermost range of a thread is found by
        // galloping from the last answer, not by a binary search over
        // the thread's (possibly millions of) ranges each time.
        let split = |gaps: &[Gap]| {
            let mut out = Split::default();
            let mut cursors = OpCursors::new(self.trace);
            for gap in gaps {
                self.split_gap(ev, gap, &mut cursors, &mut out);
            }
            out
        };
        if gaps.len() < PARALLEL_GAPS {
            return split(&gaps).segments;
        }
        let (early, late) = gaps.split_at(gaps.len() / 2);
        let (mut out, late) = std::thread::scope(|s| {
            let late = s.spawn(|| split(late));
            let early = split(early);
            (
                early,
                late.join().unwrap_or_else(|p| std::panic::resume_unwind(p)),
            )
        });
        let mut rest = late.segments.into_iter();
        if let Some(first) = rest.next() {
            match out.segments.last_mut() {
                Some(last)
                    if last.end == first.start && out.last_q == late.first_q && last.same_blame(&first) =>
                {
                    last.end = first.end
                }
                _ => out.segments.push(first),
            }
        }
        out.segments.extend(rest);
        out.segments
    }

    /// For each gap of the device `ev` describes inside `window`, in time
    /// order: its end, and when its next work was queued (*Q*; `Ns::MAX`
    /// when not known): what each of its [`IdleSegment`]s would repeat.
    /// A segment's gap is the first whose end is past the segment's start
    /// (segments merged across two gaps that touch share their *Q*).
    pub fn queued_by_gap(&self, ev: &DeviceEvidence, window: Span) -> Vec<(Ns, Ns)> {
        device_gaps(self.trace, ev.device, window)
            .iter()
            .map(|gap| (gap.end, self.issuer(ev, gap).queued_from))
            .collect()
    }

    fn split_gap(&self, ev: &DeviceEvidence, gap: &Gap, ops: &mut OpCursors, out: &mut Split) {
        let who = self.issuer(ev, gap);
        // The few blocking calls inside the gap, looked up once: a search
        // over all of a big trace's for every instant was half the time
        // of splitting its gaps.
        let blocking = ev.blocking_in((gap.start, gap.end));
        let cuts = self.cuts(ev, gap, &who, blocking, ops);
        for w in cuts.windows(2) {
            let (cause, (op, annotation, source), first_call) = self.classify(ev, &who, blocking, w[0], ops);
            let seg = IdleSegment {
                start: w[0],
                end: w[1],
                cause,
                op,
                annotation,
                source,
                first_call,
            };
            // Segments of two gaps that touch (a zero-length kernel
            // between them) merge only when their *Q* is the same too.
            match out.segments.last_mut() {
                Some(last)
                    if last.end == seg.start && out.last_q == who.queued_from && last.same_blame(&seg) =>
                {
                    last.end = seg.end
                }
                _ => {
                    if out.segments.is_empty() {
                        out.first_q = who.queued_from;
                    }
                    out.segments.push(seg)
                }
            }
            out.last_q = who.queued_from;
        }
    }

    fn issuer(&self, ev: &DeviceEvidence, gap: &Gap) -> Issuer {
        let rt = &self.trace.runtime;
        let call_of = |row: Option<GpuRow>| row.and_then(|r| self.trace.links.gpu_launch[r.index()]);
        if let Some(next) = call_of(gap.next_row) {
            let c = next.index();
            // A CUDA graph whose earlier kernels already ran was submitted
            // whole: the rest of it is queued, the call still running or
            // not. A HIP graph is enqueued node by node inside the call
            // (module docs).
            let whole_graph =
                call_of(gap.prev_row) == Some(next) && !self.trace.strings.get(rt.name[c]).starts_with("hip");
            let submitted = if whole_graph {
                gap.start
            } else {
                rt.end[c].max(rt.start[c])
            };
            let queued_from = submitted.max(gap.start);
            return Issuer {
                thread: Some(rt.thread[c]),
                launch_start: rt.start[c],
                queued_from,
                held: gap.end - queued_from > QUEUED_AFTER_NS,
                launch_op: self.trace.links.runtime_op[c],
            };
        }
        let thread = match call_of(gap.prev_row) {
            None => ev.launchers.first().copied(),
            Some(c) => Some(rt.thread[c.index()]),
        };
        // Correlation ids grow with every call: a row whose id is below
        // every call of the trace was launched before the trace began, so
        // it was queued all along.
        let before_trace = gap.next_row.is_some_and(|r| {
            let c = self.trace.gpu.correlation[r.index()];
            c != 0 && c < self.first_correlation
        });
        Issuer {
            thread,
            launch_start: Ns::MAX,
            queued_from: if before_trace { gap.start } else { Ns::MAX },
            held: before_trace && gap.end - gap.start > QUEUED_AFTER_NS,
            launch_op: None,
        }
    }

    /// Every instant inside the gap where the answer may change, with the
    /// gap's edges, sorted and unique.
    /// `blocking`: the gap's blocking calls
    /// ([`blocking_in`](DeviceEvidence::blocking_in)).
    fn cuts(
        &self,
        ev: &DeviceEvidence,
        gap: &Gap,
        who: &Issuer,
        blocking: &[Blocking],
        cursors: &mut OpCursors,
    ) -> Vec<Ns> {
        let (gs, ge) = (gap.start, gap.end);
        let inside = |t: Ns| t > gs && t < ge;
        let mut cuts = vec![gs, ge, who.launch_start, who.queued_from];
        for b in blocking {
            cuts.extend([b.start, b.end]);
        }
        for spans in [&ev.profiler, &ev.lazy_loading] {
            let first = spans.partition_point(|s| s.1 <= gs);
            for s in spans[first..].iter().take_while(|s| s.0 < ge) {
                cuts.extend([s.0, s.1]);
            }
        }
        if let Some(thread) = who.thread {
            self.thread_cuts(thread, gap, cursors, &mut cuts);
            let setup = &ev.graph_setup;
            let first = setup.partition_point(|g| g.thread < thread || (g.thread == thread && g.end <= gs));
            for g in setup[first..]
                .iter()
                .take_while(|g| g.thread == thread && g.start < ge)
            {
                cuts.extend([g.start, g.end]);
            }
        }
        cuts.retain(|&t| inside(t) || t == gs || t == ge);
        cuts.sort_unstable();
        cuts.dedup();
        cuts
    }

    /// Starts and ends of the thread's ranges inside the gap: the ends of
    /// the ranges open at its start, and every range starting inside it.
    fn thread_cuts(&self, thread: ThreadId, gap: &Gap, cursors: &mut OpCursors, cuts: &mut Vec<Ns>) {
        let t = self.trace;
        let ops = &t.cpu_ops;
        for a in t.ancestors(cursors.innermost(t, thread, gap.start)) {
            cuts.push(ops.end[a.index()]);
        }
        // The cursor now stands at the first range starting after the gap's start.
        let Some(from) = cursors.seek(t, thread, gap.start) else {
            return;
        };
        for i in from..t.cpu_ops_of(thread).end {
            if ops.start[i] >= gap.end {
                break;
            }
            cuts.extend([ops.start[i], ops.end[i]]);
        }
    }

    /// The cause and blame of the instant `t`: the first cause of
    /// [`Cause::PRECEDENCE`] whose rule (module docs) holds.
    /// Also says whether the time is a first call's (warm-up): for the
    /// host's own time (`cpu_op`, `framework_overhead`, inside the launch
    /// call). `blocking`: the gap's blocking calls.
    fn classify(
        &self,
        ev: &DeviceEvidence,
        who: &Issuer,
        blocking: &[Blocking],
        t: Ns,
        ops: &mut OpCursors,
    ) -> (Cause, Blame, bool) {
        let inner = who.thread.and_then(|th| ops.innermost(self.trace, th, t));
        let cx = &self.cx;
        let inner_blame = || self.blame(inner);
        let warm = |row: Option<OpRow>| row.is_some_and(|r| cx.first_call[r.index()]);
        let queued = t >= who.queued_from;
        for cause in Cause::PRECEDENCE {
            let blame = match cause {
                Cause::Profiler => {
                    (ev.profiler_at(t) || inner.is_some_and(|i| cx.profiler[i.index()])).then(inner_blame)
                }
                Cause::Queued => (queued && who.held).then_some(NO_BLAME),
                Cause::GraphCapture => {
                    let setup = who.thread.is_some_and(|th| ev.graph_setup_at(th, t).is_some());
                    (!queued && setup).then(inner_blame)
                }
                Cause::Sync => blocking_at(blocking, t)
                    .filter(|_| !queued)
                    .map(|b| self.blame(self.trace.links.runtime_op[b.call.index()])),
                Cause::Dataloader => inner
                    .map(OpRow::index)
                    .filter(|&i| !queued && cx.dataloader[i].is_some())
                    .map(|i| (cx.operator[i], cx.dataloader[i], cx.source[i])),
                Cause::LaunchOverhead => (t >= who.launch_start || queued).then(|| self.blame(who.launch_op)),
                Cause::CpuOp => Some(inner_blame()).filter(|b| b.0.is_some()),
                Cause::FrameworkOverhead => inner.map(|_| {
                    let (_, annotation, source) = inner_blame();
                    (None, annotation, source)
                }),
                Cause::Untraced => Some(NO_BLAME),
            };
            if let Some(blame) = blame {
                let first_call = match cause {
                    Cause::CpuOp | Cause::FrameworkOverhead => warm(inner),
                    Cause::LaunchOverhead => !queued && warm(who.launch_op),
                    _ => false,
                };
                return (cause, blame, first_call);
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

#[cfg(test)]
mod tests {
    use super::*;
    use gapscope_collectors::trace::Sketch;

    /// Cut on two threads, a device's segments are what one pass gives,
    /// a merge across the cut included: empty kernels around the middle
    /// leave gaps that touch, with the same blame on both sides.
    #[test]
    fn two_threads_give_what_one_pass_gives() {
        let n = 3 * PARALLEL_GAPS as Ns;
        let mut s = Sketch::new();
        for k in 0..n {
            let t = k * 100;
            if (n / 2 - 20..n / 2 + 20).contains(&k) {
                // No host work: the idle time on both sides of each empty
                // kernel has one blame.
                s.named_kernel("k", 7, t + 70, t + 70, 0);
                continue;
            }
            let name = if k % 3 == 0 { "aten::a" } else { "aten::b" };
            s.op(t, t + 60, name)
                .call(t + 10, t + 20, "cudaLaunchKernel", k as u64 + 1);
            s.named_kernel("k", 7, t + 70, t + 80, k as u64 + 1);
        }
        let t = s.finish();
        let idle = IdleAnalyzer::new(&t);
        let window = (0, n * 100);
        let ev = DeviceEvidence::new(&t, 0);
        let gaps = device_gaps(&t, 0, window);
        assert!(gaps.len() >= PARALLEL_GAPS, "{} gaps", gaps.len());
        let mut one = Split::default();
        let mut cursors = OpCursors::new(&t);
        for g in &gaps {
            idle.split_gap(&ev, g, &mut cursors, &mut one);
        }
        let one = one.segments;
        let cut = gaps.len() / 2;
        assert_eq!(
            gaps[cut - 1].end,
            gaps[cut].start,
            "the halves do not touch at the cut"
        );
        assert_eq!(idle.segments_with(&ev, window), one);
    }
}

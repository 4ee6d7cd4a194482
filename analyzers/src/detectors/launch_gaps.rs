//! D17, kernel launch gaps: the GPU idles while its next kernel is being
//! launched, or is already queued and about to start, in gaps that no
//! other detector explains (docs/detectors.md, D17).
//!
//! ```text
//! stream 7   [k1....][k2......] [k3....]  [k4......] [k5...]
//! gaps               ^        ^^        ^^         ^^          (1-3 µs each)
//! thread 1   [L2][L3][L4][L5] ...            (launched long before: queued)
//! ```
//!
//! Every kernel costs the device a moment to start, and every launch call
//! costs the host a few microseconds: a step of thousands of kernels pays
//! this thousands of times. These are the `launch_overhead` pieces left
//! after D3 (runs of small kernels, where the CPU cannot keep up): gaps
//! between kernels that were already queued (their launch calls had
//! returned: the device's own time to start the next kernel), and gaps
//! while the next kernel's launch call was still running on the CPU.
//!
//! Reported when the pieces hold at least [`MIN_SHARE`] of the window
//! (ours, as D2: below 1 % a fix cannot move the step time measurably)
//! and at least [`NOISE_NS`]. Claims: the remaining `launch_overhead`
//! pieces, one group per device. Attribution: none (the gaps are the
//! device's, before kernels of every operator); the hint names the
//! operator that launched the kernels after the most of it, with its share.
//! Savings: not estimable. How many gaps a fix removes depends on how
//! many kernels fusion or a graph merges, which the trace does not say;
//! the bound is the idle time claimed.

use super::{Cx, Draft, NOISE_NS};
use crate::causes::Cause;
use crate::format::{duration, percent_whole};
use gapscope_collectors::trace::{GpuRow, Ns, Strings};

/// Least share of the window the gaps must hold to be reported (ours, as
/// D2's).
pub const MIN_SHARE: f64 = 0.01;

/// Where the idle time of the claimed pieces went, by what the next kernel
/// was doing.
#[derive(Default)]
struct Split {
    /// After the next work's launch call had returned: queued on the
    /// device, not started yet.
    queued: Ns,
    /// While the next work's launch call was still running.
    launching: Ns,
    /// Before work replayed from one graph launch (several GPU rows share
    /// its call).
    in_graph: Ns,
    /// Gaps the pieces are in: one per next kernel (a gap's pieces can
    /// belong to several segments, cut where the CPU thread enters or
    /// leaves a range).
    gaps: u64,
    /// Gaps with queued time in them.
    queued_gaps: u64,
}

/// Claims the `launch_overhead` pieces no earlier detector claimed: what
/// [`draft`] reads. D2 claims none of them, so this may run before it and
/// the drafting beside it.
pub(super) fn take(cx: &Cx, claims: &mut [bool]) -> Vec<u32> {
    cx.take_of(claims, &[Cause::LaunchOverhead], |_| true)
}

/// The finding of the `pieces` [`take`] claimed, if they reach the floor.
pub(super) fn draft(cx: &Cx, pieces: Vec<u32>) -> Vec<Draft> {
    let floor = ((MIN_SHARE * cx.window_ns() as f64) as Ns).max(NOISE_NS);
    let idle = cx.total(&pieces);
    if idle < floor {
        return Vec::new();
    }
    let split = split(cx, &pieces);
    let gaps = split.gaps;
    let (top, top_idle) = cx.heaviest_operator(&pieces).unwrap_or((Strings::EMPTY, 0));
    let top_name = (top != Strings::EMPTY).then(|| cx.trace.strings.get(top).to_string());
    let api = cx.platform.name();
    let title = format!(
        "The GPU waits for its next kernel to start, {gaps} times ({} idle, {} of the window; {} a gap)",
        duration(idle),
        percent_whole(idle, cx.window_ns()),
        duration(idle / gaps.max(1) as Ns),
    );
    let queued = format!(
        "between kernels already queued on the GPU ({} gaps, {} each on average; their launch \
         calls had returned: the device's own time to start the next kernel)",
        split.queued_gaps,
        duration(split.queued / split.queued_gaps.max(1) as Ns)
    );
    const LAUNCHING: &str = "while the next kernel's launch call was still running on the CPU";
    // Shares that round to 0 % are not worth a clause of their own.
    let sliver = |part: Ns| 200 * part < idle;
    let parts = match (split.queued, split.launching) {
        (_, l) if sliver(l) => format!("Nearly all of it is {queued}."),
        (q, _) if sliver(q) => format!("Nearly all of it is {LAUNCHING}."),
        (q, l) => format!(
            "{} of it is {queued}, {} {LAUNCHING}.",
            percent_whole(q, idle),
            percent_whole(l, idle)
        ),
    };
    // The hint names the operator after the most of it; the finding names
    // none. A step's gaps are spread over every operator that launches
    // kernels (naming the largest of many would blame it for all of
    // them), and a finding about the device as a whole keeps one subject,
    // so that `diff` pairs it across two traces.
    let owner = top_name.as_ref().filter(|_| 2 * top_idle >= idle);
    let who = match (&top_name, owner) {
        (Some(name), Some(_)) => format!(
            " Most of it ({}) is before kernels that `{name}` launched.",
            percent_whole(top_idle, idle)
        ),
        (Some(name), None) => format!(
            " It is spread over the operators that launch kernels; the most ({}) is before \
             kernels that `{name}` launched.",
            percent_whole(top_idle, idle)
        ),
        (None, _) => String::new(),
    };
    let advice = if 2 * split.in_graph > idle {
        format!(
            "Most of these gaps are inside {api} graph replays ({}), which already launch \
             their kernels at once: what is left is each kernel's start on the device. Fewer, \
             larger kernels shorten it: fuse the small ones between the graph's big kernels \
             (`torch.compile`, fused kernels for normalization, activation and rotary \
             embedding).",
            percent_whole(split.in_graph, idle)
        )
    } else {
        format!(
            "Every kernel pays such a gap, so fewer, larger kernels remove them: fuse operators \
             with `torch.compile(model)`, use fused or multi-tensor (`foreach=True`) variants \
             where they exist, and replay the step as {api} graphs \
             (`torch.compile(mode=\"reduce-overhead\")`, `torch.cuda.graph`), which launch its \
             kernels without the CPU and start them with shorter gaps."
        )
    };
    let hint = format!(
        "The GPU idles {} {} waiting for its next kernel to start. {parts}{who} {advice} How \
         much of it a fix removes depends on how many kernels it merges, which the trace does \
         not say.",
        duration(idle / cx.n_steps()),
        cx.per_step(),
    );
    let mut d = Draft::new("D17", "kernel_launch_gaps", title, hint);
    d.occurrences = gaps;
    d.estimable = false;
    d.blame = Some((None, None, None));
    d.pieces = pieces;
    vec![d]
}

/// What the next kernel was doing during each piece: launched and queued,
/// still being launched, or replayed from a graph.
fn split(cx: &Cx, pieces: &[u32]) -> Split {
    let t = cx.trace;
    let mut out = Split::default();
    // One gap's pieces share the next row: look it up once per gap, the
    // busy rows walked once in all (the pieces are in time order).
    let mut memo: Option<(Ns, Option<GpuRow>)> = None;
    let mut at = 0;
    let mut last: Option<Option<GpuRow>> = None;
    let mut counted: Option<Option<GpuRow>> = None;
    for &i in pieces {
        let p = cx.piece(i);
        let gap_end = cx.seg(&p).end;
        let next = match memo {
            Some((end, next)) if end == gap_end => next,
            _ => {
                let next = cx.next_row_from(gap_end, &mut at);
                memo = Some((gap_end, next));
                next
            }
        };
        if last != Some(next) {
            out.gaps += 1;
            last = Some(next);
        }
        let call = next.and_then(|r| t.links.gpu_launch[r.index()]);
        // No known launch: the work was queued before the trace began.
        let launching = call.map_or(0, |c| (t.runtime.end[c.index()].min(p.end) - p.start).max(0));
        out.launching += launching;
        out.queued += p.dur() - launching;
        // A gap with queued time in several pieces counts once.
        if p.dur() > launching && counted != Some(next) {
            out.queued_gaps += 1;
            counted = Some(next);
        }
        if call.is_some_and(|c| t.links.runtime_gpu_count[c.index()] > 1) {
            out.in_graph += p.dur();
        }
    }
    out
}

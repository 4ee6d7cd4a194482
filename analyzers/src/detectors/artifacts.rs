//! D16, collection artifacts: idle time that is the profiler's doing or that
//! the capture cannot explain, excluded before anyone blames the workload
//! (docs/detectors.md, D16).
//!
//! ```text
//! window      |<--------------------------------------------------->|
//! stream 7    |      [k1....]   [k2...]                [k3.....]     |
//! markers     |               [CUPTI flush]                          |
//! thread 1    |                               [aten::x..]            |
//! pieces      [untraced]    [pr][profiler]     ...              [untraced]
//!              ^ capture_edges                                  ^ capture_edges
//!                            ^ profiler_overhead
//! ```
//!
//! - `profiler_overhead`: pieces of cause `profiler` (overhead markers such
//!   as buffer flushes, which nsys counts as busy; the CPU inside
//!   `torch/profiler/` code).
//! - `partial_last_step`: every idle piece of the window's last step when
//!   the capture cut that step short: fewer GPU rows were launched in it
//!   than [`PARTIAL_STEP_SHARE`] of the step before (the TensorBoard
//!   plugin's rule for dropping a tail step, `_update_steps_duration`).
//!   That is the step `prof.step()` opened last, which runs until the
//!   profiler stops (and holds the profiler's own exit synchronization), or
//!   a step the capture ended inside. Its idle time says nothing about a
//!   training step, so it is claimed before any detector can blame it on
//!   the code, and "per step" figures count only the complete steps.
//!
//!   ```text
//!   steps       [ProfilerStep#1......][ProfilerStep#2......][#3.......]
//!   stream 7      [k][k][k]  [k][k]     [k][k][k]  [k][k]     [k]
//!   rows            5                     5                    1 < 0.8 × 5
//!   pieces                                                        [....] partial_last_step
//!   ```
//!
//! - `capture_edges`: `untraced` pieces of the gaps touching the window's
//!   start or end: the capture began or stopped with no CPU record to
//!   explain them (nsys's `gpu_gaps` leaves the first and last gap out for
//!   the same reason).
//! - `cuda_graph_replays` (context): kernels replayed by one
//!   `cudaGraphLaunch` share its correlation; they are one launch, never
//!   "small serial kernels", and their per-kernel operators are not in the
//!   trace.
//!
//! None of them has a saving to estimate: removing the profiler is not a
//! change to the program.

use super::{Cx, Draft};
use crate::causes::Cause;
use crate::format::duration;
use crate::names::is_graph_launch_api;
use crate::window::Step;
use crate::workload::Workload;
use gapscope_collectors::trace::{CallRow, CpuOpKind, OpRow, Trace};

/// A last step with fewer GPU rows than this share of the step before was
/// cut short by the capture (the TensorBoard plugin drops such a step).
pub const PARTIAL_STEP_SHARE: f64 = 0.8;

/// The window's last step, cut short by the end of the capture.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct PartialStep {
    pub step: Step,
    /// Busy GPU rows of the device launched in it.
    pub rows: u64,
    /// The same in the step before.
    pub before: u64,
}

/// The last of `steps` when it holds fewer than [`PARTIAL_STEP_SHARE`] of
/// the previous step's GPU rows on `device`. A row counts for the step in
/// which its launch call started; CPU time between two steps belongs to the
/// earlier one (as in [`window::select`](crate::window::select)).
pub(crate) fn partial_last_step(trace: &Trace, device: u32, steps: &[Step]) -> Option<PartialStep> {
    let n = steps.len();
    if n < 2 {
        return None;
    }
    let (prev, last) = (steps[n - 2], steps[n - 1]);
    let (mut rows, mut before) = (0u64, 0u64);
    let g = &trace.gpu;
    for i in 0..g.len() {
        let Some(call) = trace.links.gpu_launch[i] else {
            continue;
        };
        if g.device[i] != device || !g.is_busy(i) {
            continue;
        }
        let at = trace.runtime.start[call.index()];
        if at >= last.start {
            rows += 1;
        } else if at >= prev.start {
            before += 1;
        }
    }
    (before > 0 && (rows as f64) < PARTIAL_STEP_SHARE * before as f64).then_some(PartialStep {
        step: last,
        rows,
        before,
    })
}

pub(super) fn detect(cx: &Cx, claims: &mut [bool]) -> Vec<Draft> {
    let mut out = Vec::new();
    let prof = cx.take_of(claims, &[Cause::Profiler], |_| true);
    if !prof.is_empty() {
        let ns = cx.total(&prof);
        let mut d = Draft::new(
            "D16",
            "profiler_overhead",
            format!("{} of idle time is profiler overhead", duration(ns)),
            format!(
                "This idle time comes from the profiler itself (buffer flushes, profiler \
                 callbacks), not from the {}; it is left out of every other finding. Profile \
                 fewer steps per capture (a shorter `schedule(active=...)`) to reduce it.",
                profiled_code(cx.workload)
            ),
        );
        d.occurrences = prof.len() as u64;
        d.pieces = prof;
        d.estimable = false;
        out.push(d);
    }
    out.extend(partial_step(cx, claims));
    // The gaps touching the window's edges: the first run of pieces from
    // `ws` and the last run up to `we`.
    let edge = edge_spans(cx);
    let edges = cx.take_of(claims, &[Cause::Untraced], |p| {
        edge.iter().any(|&(s, e)| p.start >= s && p.end <= e)
    });
    if !edges.is_empty() {
        let ns = cx.total(&edges);
        let mut d = Draft::new(
            "D16",
            "capture_edges",
            format!(
                "{} idle at the start or end of the capture with no CPU activity recorded",
                duration(ns)
            ),
            "The device was idle where the capture starts or stops and no CPU thread was \
             recorded then, so the cause is outside the trace. Capture whole steps with \
             `torch.profiler.schedule(wait=1, warmup=1, active=N)` and call `prof.step()` \
             at the end of every iteration so the window holds complete steps."
                .to_string(),
        );
        d.occurrences = edges.len() as u64;
        d.pieces = edges;
        d.estimable = false;
        out.push(d);
    }
    out.extend(graph_replays(cx));
    out
}

fn partial_step(cx: &Cx, claims: &mut [bool]) -> Option<Draft> {
    let p = cx.partial_last?;
    let pieces = cx.take(claims, |q| q.start >= p.step.start);
    let ns = cx.total(&pieces);
    let name = format!("ProfilerStep#{}", p.step.number);
    let mut d = Draft::new(
        "D16",
        "partial_last_step",
        format!(
            "The last step ({name}) was cut short by the end of the capture: {} GPU rows \
             against {} in the step before ({} idle left out)",
            p.rows,
            p.before,
            duration(ns)
        ),
        format!(
            "{name} holds {} GPU rows against {} in the step before, so the capture stopped \
             inside it (the step opened by the last `prof.step()` runs until the profiler \
             stops, and holds the profiler's own synchronization); its {} of idle time is left \
             out of every other finding and of the per-step figures. Analyze complete steps \
             only (`gapscope analyze --exclude-last-step`, or `--steps A..B`), and stop the \
             profiler right after a `prof.step()` call.",
            p.rows,
            p.before,
            duration(ns)
        ),
    );
    d.occurrences = 1;
    d.estimable = false;
    let ops = &cx.trace.cpu_ops;
    if let Some(r) =
        (0..ops.len()).find(|&r| ops.kind[r] == CpuOpKind::ProfilerStep && ops.start[r] == p.step.start)
    {
        d.evidence.push(cx.op_evidence(OpRow::new(r)));
    }
    d.pieces = pieces;
    Some(d)
}

fn edge_spans(cx: &Cx) -> Vec<(i64, i64)> {
    let (ws, we) = cx.window;
    let mut spans = Vec::new();
    if let Some(first) = cx.all_pieces().next().filter(|f| f.start == ws) {
        let mut end = first.end;
        for q in cx.all_pieces().skip(1) {
            if q.start != end {
                break;
            }
            end = q.end;
        }
        spans.push((ws, end));
    }
    if let Some(last) = cx.all_pieces().next_back().filter(|l| l.end == we) {
        let mut start = last.start;
        for q in cx.all_pieces().rev().skip(1) {
            if q.end != start {
                break;
            }
            start = q.start;
        }
        spans.push((start, we));
    }
    spans
}

fn graph_replays(cx: &Cx) -> Option<Draft> {
    let t = cx.trace;
    let (ws, we) = cx.window;
    let (mut launches, mut kernels) = (0u64, 0u64);
    let mut first = None;
    for r in 0..t.runtime.len() {
        let n = t.links.runtime_gpu_count[r];
        if n > 1 && cx.call_gpu[r].is_some() && t.runtime.start[r] < we && t.runtime.end[r] > ws {
            let name = t.strings.get(t.runtime.name[r]);
            if is_graph_launch_api(name) {
                launches += 1;
                kernels += u64::from(n);
                first.get_or_insert(CallRow::new(r));
            }
        }
    }
    let first = first?;
    let mut d = Draft::new(
        "D16",
        "cuda_graph_replays",
        format!(
            "{launches} {} {} {kernels} kernels",
            cx.platform.name(),
            if launches == 1 {
                "graph launch replays"
            } else {
                "graph launches replay"
            }
        ),
        "These kernels run from captured graphs (`torch.cuda.graph` or \
         `torch.compile(mode=\"reduce-overhead\")`): each graph is one launch, so they are \
         not launch-bound small kernels, and the operators that made them are not in the \
         trace. Profile one eager (uncaptured) step to see which operators the graph holds."
            .to_string(),
    );
    d.occurrences = launches;
    d.primary = false;
    d.estimable = false;
    d.evidence.push(cx.runtime_evidence(first));
    Some(d)
}

/// What the profiled program is, in words the trace supports: "training
/// code" only where it shows a backward pass or an optimizer step.
fn profiled_code(workload: Workload) -> &'static str {
    match workload {
        Workload::Training => "training code",
        Workload::NoBackwardOrOptimizer | Workload::Unknown => "program's own code",
    }
}

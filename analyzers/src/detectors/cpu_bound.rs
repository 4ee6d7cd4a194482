//! D2, CPU-bound launch starvation ("host wait"): the GPU finished its work
//! and the launching thread had not issued the next yet, because it was
//! computing inside an operator or running Python / framework code between
//! operators (notes/detectors.md D2; HTA's host wait, TraceLens's
//! `cpu_bottleneck`).
//!
//! ```text
//! stream 7    [k1.....]                              [k2...]
//! thread 1    [aten::a][train.py: python.....][aten::nonzero (CPU)...][L2]
//! pieces              [framework_overhead....][cpu_op................]
//!                      -> framework_overhead   -> cpu_bound_operator
//! ```
//!
//! Evidence: the pieces of cause `cpu_op` and `framework_overhead` that no
//! earlier detector claimed, in *stretches*: maximal runs of such pieces with
//! no gap between them (the host's time from the GPU going idle to the next
//! launch, or to a piece another detector claimed).
//!
//! Grouping, so that each idle nanosecond is claimed by one group:
//!
//! - **by user range** (`cpu_bound_range`): a run of a stretch's pieces
//!   whose innermost user range (`record_function`, NVTX, `Optimizer.step#`;
//!   not a ProfilerStep, not an `nn.Module`) is one range instance, and
//!   whose operator pieces name at least two distinct operators. The range
//!   did host work through several operators without launching anything:
//!   the fix is to the range as a whole (a whole function moved to the GPU),
//!   so the finding explains all of the range's idle time in the stretch,
//!   the Python between its operators included. Its `operator` is the
//!   operator with the most idle time in it, its `annotation` the range.
//!   With one operator the operator is the thing to fix, and the pieces
//!   stay in the operator grouping below;
//! - **by operator** (`cpu_bound_operator`): the other `cpu_op` pieces, by
//!   operator name;
//! - **framework overhead** (`framework_overhead`): the other pieces, one
//!   group.
//!
//! ```text
//! stream 7   [k1.]                                         [k2....]
//! thread 1   [features (record_function)......][L2]
//!              [aten::sort....][py][aten::cumsum]
//! pieces         [cpu_op.......][fw][cpu_op......]
//!                -> one cpu_bound_range `features`, operator aten::sort
//! ```
//!
//! A group is reported when it holds at least [`MIN_SHARE`] of the window
//! (ours: below 1 % a fix cannot move the step time measurably) and at
//! least [`NOISE_NS`](super::NOISE_NS). Attribution: the operator with the
//! most idle time (TraceLens's `dominant_op`), its annotation and source
//! line. Savings: replay without that CPU time (moved off the critical
//! path), capped at the idle time.

use super::{Cx, Draft, NOISE_NS};
use crate::causes::Cause;
use crate::format::{duration, percent_whole};
use gapscope_collectors::trace::{CpuOpKind, OpRow};
use std::collections::HashSet;

/// Share of the window a group must explain to be reported (ours).
pub const MIN_SHARE: f64 = 0.01;

/// How a piece is grouped: by user range (the range's row), by operator, or
/// as framework overhead.
#[derive(Clone, Copy, PartialEq, Eq)]
enum By {
    Range(OpRow),
    Operator,
    Framework,
}

pub(super) fn detect(cx: &Cx, claims: &mut [bool]) -> Vec<Draft> {
    let taken = cx.take(claims, |p| {
        matches!(p.seg.cause, Cause::CpuOp | Cause::FrameworkOverhead)
    });
    let by = grouping(cx, &taken);
    // Keys: `r:` + range name, `o:` + operator name, empty for overhead.
    let key: std::collections::HashMap<usize, String> = taken
        .iter()
        .zip(&by)
        .map(|(&i, b)| {
            let k = match *b {
                By::Range(r) => format!("r:{}", cx.name(Some(r)).unwrap_or_default()),
                By::Operator => format!("o:{}", cx.name(cx.pieces[i].seg.op).unwrap_or_default()),
                By::Framework => String::new(),
            };
            (i, k)
        })
        .collect();
    let range_of: std::collections::HashMap<usize, OpRow> = taken
        .iter()
        .zip(&by)
        .filter_map(|(&i, b)| match *b {
            By::Range(r) => Some((i, r)),
            _ => None,
        })
        .collect();
    let groups = cx.groups_by_index(taken, |i| key[&i].clone());
    let floor = ((MIN_SHARE * cx.window_ns() as f64) as i64).max(NOISE_NS);
    let mut out = Vec::new();
    for (key, pieces) in groups {
        let idle = cx.total(&pieces);
        if idle < floor || out.len() >= super::MAX_GROUPS {
            for &i in &pieces {
                claims[i] = false;
            }
            continue;
        }
        let per_step = duration(idle / cx.n_steps());
        let share = percent_whole(idle, cx.window_ns());
        let mut d = if let Some(range) = key.strip_prefix("r:") {
            // The dominant operator of the range's operator pieces; the
            // range itself as the annotation.
            let ops: Vec<usize> = pieces
                .iter()
                .copied()
                .filter(|&i| cx.pieces[i].seg.cause == Cause::CpuOp)
                .collect();
            let (op, _, src) = cx.blame(&ops);
            let n_ops = {
                let names: HashSet<u32> = ops
                    .iter()
                    .filter_map(|&i| cx.pieces[i].seg.op)
                    .map(|op| cx.trace.cpu_ops.name[op.index()].0)
                    .collect();
                names.len()
            };
            let place = match &src {
                Some(s) => format!("The `{range}` range at {s}"),
                None => format!("The `{range}` range"),
            };
            let dominant = op.as_deref().unwrap_or("its operators");
            let mut d = Draft::new(
                "D2",
                "cpu_bound_range",
                format!(
                    "The GPU waits while the `{range}` range works on the CPU ({} idle, {share} of the window)",
                    duration(idle)
                ),
                format!(
                    "{place} keeps the CPU busy in {n_ops} operators (most of the time in \
                     `{dominant}`) and the Python between them for {per_step} per step while \
                     nothing is queued on the GPU. If it computes on CPU tensors, move \
                     its inputs to the GPU once and run the range there, or precompute its \
                     result outside the loop (or in DataLoader workers); if it is many small \
                     operators, batch them or compile the region with `torch.compile`."
                ),
            );
            let mut rows: Vec<OpRow> = pieces.iter().map(|i| range_of[i]).collect();
            rows.sort_unstable();
            rows.dedup();
            d.occurrences = rows.len() as u64;
            d.blame = Some((op, Some(range.to_string()), src));
            d
        } else if let Some(op) = key.strip_prefix("o:") {
            let blame = cx.blame(&pieces);
            let place = cx.where_(&Some(op.to_string()), &blame.2);
            let mut d = Draft::new(
                "D2",
                "cpu_bound_operator",
                format!(
                    "The GPU waits while `{op}` works on the CPU ({} idle, {share} of the window)",
                    duration(idle)
                ),
                format!(
                    "{place} keeps the CPU busy for {per_step} per step before the next GPU work \
                     is launched. If it computes on CPU tensors, move the tensors to the GPU or \
                     precompute the result outside the loop (or in DataLoader workers); if it is \
                     many small operators, batch them or compile the region with \
                     `torch.compile`."
                ),
            );
            d.occurrences = cx.distinct(&pieces, |p| p.seg.op);
            d.blame = Some(blame);
            d
        } else {
            let blame = cx.blame(&pieces);
            let inside = blame
                .1
                .as_ref()
                .map(|a| format!(" inside `{a}`"))
                .unwrap_or_default();
            let at = blame.2.as_ref().map(|s| format!(" at {s}")).unwrap_or_default();
            let mut d = Draft::new(
                "D2",
                "framework_overhead",
                format!("The GPU waits for Python / framework code between operators ({} idle, {share} of the window)", duration(idle)),
                format!(
                    "Between operators{inside}{at} the CPU runs Python and framework code for \
                     {per_step} per step while the GPU has nothing queued. Remove per-step Python \
                     work from the loop (logging, list building, shape checks), use \
                     `torch.compile(model)` to cut interpreter and dispatch overhead, raise the \
                     batch size so each launch does more work, or capture the step with CUDA \
                     Graphs (`torch.compile(mode=\"reduce-overhead\")`)."
                ),
            );
            d.occurrences = pieces.len() as u64;
            d.blame = Some(blame);
            d
        };
        d.pieces = pieces;
        out.push(d);
    }
    out
}

/// How each of `taken` (piece indices, in time order) is grouped: see the
/// module documentation.
fn grouping(cx: &Cx, taken: &[usize]) -> Vec<By> {
    let default = |i: usize| {
        if cx.pieces[i].seg.cause == Cause::CpuOp {
            By::Operator
        } else {
            By::Framework
        }
    };
    let mut out: Vec<By> = taken.iter().map(|&i| default(i)).collect();
    let ranges: Vec<Option<OpRow>> = taken.iter().map(|&i| user_range(cx, i)).collect();
    // Runs: consecutive pieces of one stretch (no gap between them) inside
    // one range instance.
    let mut a = 0;
    while a < taken.len() {
        let mut b = a + 1;
        while b < taken.len()
            && ranges[b] == ranges[a]
            && cx.pieces[taken[b]].start == cx.pieces[taken[b - 1]].end
        {
            b += 1;
        }
        if let Some(range) = ranges[a] {
            let names: HashSet<u32> = (a..b)
                .map(|k| &cx.pieces[taken[k]].seg)
                .filter(|s| s.cause == Cause::CpuOp)
                .filter_map(|s| s.op)
                .map(|op| cx.trace.cpu_ops.name[op.index()].0)
                .collect();
            if names.len() >= 2 {
                for o in &mut out[a..b] {
                    *o = By::Range(range);
                }
            }
        }
        a = b;
    }
    out
}

/// The innermost user range (`record_function`, NVTX, `Optimizer.step#`)
/// around piece `i`, if any: ProfilerSteps are the step itself and
/// `nn.Module` ranges are the model's structure, not a region the user
/// marked.
fn user_range(cx: &Cx, i: usize) -> Option<OpRow> {
    let seg = &cx.pieces[i].seg;
    let ops = &cx.trace.cpu_ops;
    cx.trace.ancestors(seg.op.or(seg.annotation)).find(|at| {
        let r = at.index();
        ops.kind[r] == CpuOpKind::UserAnnotation && {
            let name = cx.trace.strings.get(ops.name[r]);
            !name.starts_with("ProfilerStep#") && !name.starts_with("nn.Module:")
        }
    })
}

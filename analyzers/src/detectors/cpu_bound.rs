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
//! earlier detector claimed. Grouped by the operator (cpu_op) or as one
//! framework-overhead group; a group is reported when it holds at least
//! [`MIN_SHARE`] of the window (ours: below 1 % a fix cannot move the step
//! time measurably) and at least [`NOISE_NS`](super::NOISE_NS).
//! Attribution: the operator with the most idle time (TraceLens's
//! `dominant_op`), its annotation and source line. Savings: replay without
//! that CPU time (moved off the critical path), capped at the idle time.

use super::{fmt_ns, pct, Cx, Draft, NOISE_NS};
use crate::causes::Cause;

/// Share of the window a group must explain to be reported (ours).
pub const MIN_SHARE: f64 = 0.01;

pub(super) fn detect(cx: &Cx, claims: &mut [bool]) -> Vec<Draft> {
    let taken = cx.take(claims, |p| {
        matches!(p.seg.cause, Cause::CpuOp | Cause::FrameworkOverhead)
    });
    let groups = cx.groups_all(taken, |p| match p.seg.cause {
        Cause::CpuOp => cx.name(p.seg.op).unwrap_or_default(),
        _ => String::new(),
    });
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
        let blame = cx.blame(&pieces);
        let per_step = fmt_ns(idle / cx.n_steps());
        let share = pct(idle, cx.window_ns());
        let d = if key.is_empty() {
            let inside = blame
                .1
                .as_ref()
                .map(|a| format!(" inside `{a}`"))
                .unwrap_or_default();
            let at = blame.2.as_ref().map(|s| format!(" at {s}")).unwrap_or_default();
            Draft::new(
                "D2",
                "framework_overhead",
                format!("The GPU waits for Python / framework code between operators ({} idle, {share} of the window)", fmt_ns(idle)),
                format!(
                    "Between operators{inside}{at} the CPU runs Python and framework code for \
                     {per_step} per step while the GPU has nothing queued. Remove per-step Python \
                     work from the loop (logging, list building, shape checks), use \
                     `torch.compile(model)` to cut interpreter and dispatch overhead, raise the \
                     batch size so each launch does more work, or capture the step with CUDA \
                     Graphs (`torch.compile(mode=\"reduce-overhead\")`)."
                ),
            )
        } else {
            let place = cx.where_(&Some(key.clone()), &blame.2);
            Draft::new(
                "D2",
                "cpu_bound_operator",
                format!(
                    "The GPU waits while `{key}` works on the CPU ({} idle, {share} of the window)",
                    fmt_ns(idle)
                ),
                format!(
                    "{place} keeps the CPU busy for {per_step} per step before the next GPU work \
                     is launched. If it computes on CPU tensors, move the tensors to the GPU or \
                     precompute the result outside the loop (or in DataLoader workers); if it is \
                     many small operators, batch them or compile the region with \
                     `torch.compile`."
                ),
            )
        };
        let mut d = d;
        d.occurrences = if key.is_empty() {
            pieces.len() as u64
        } else {
            cx.distinct(&pieces, |p| p.seg.op)
        };
        d.blame = Some(blame);
        d.pieces = pieces;
        out.push(d);
    }
    out
}

//! D4, per-parameter loops in `zero_grad`, the optimizer step or gradient
//! clipping: the same small operator runs once per parameter tensor, each
//! launching one tiny kernel, instead of one multi-tensor (`foreach`) or
//! fused kernel (docs/detectors.md, D4; PyTorch PR #82777 measured ~3× on
//! `zero_grad` alone).
//!
//! ```text
//! thread 1  [Optimizer.zero_grad#SGD.zero_grad..............................]
//!             [aten::zero_][aten::zero_][aten::zero_] ... × 161
//! stream 7       [fill]       [fill]       [fill]
//! pieces            [..]         [..]         [..]       claimed by D4
//! ```
//!
//! Evidence: a range named `Optimizer.zero_grad#…`, `…zero_grad…`,
//! `Optimizer.step#…` or `…clip_grad_norm…` on a launching thread in which
//! one operator launches at least [`MIN_REPEATS`] kernels (ours: a model
//! has tens to hundreds of parameter tensors; 16 is well above any fixed
//! per-step bookkeeping) and no `multi_tensor_apply` kernel or graph launch
//! runs. Claims: idle pieces of cause cpu_op / framework_overhead /
//! launch_overhead inside those ranges. Explained: their idle time, plus,
//! for `zero_grad`, the busy time of its kernels (`set_to_none=True` runs
//! none); reported when that is at least [`NOISE_NS`] (a loop the GPU
//! never waits for costs nothing). Savings: replay without that CPU time
//! (and those kernels).

use super::{Cx, Draft, MAX_GROUPS, NOISE_NS};
use crate::causes::Cause;
use crate::format::duration;
use gapscope_collectors::trace::{GpuRow, Ns, OpRow};
use std::collections::HashMap;

/// Launches of one operator inside one range that make it a loop (ours).
pub const MIN_REPEATS: usize = 16;

#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
enum Loop {
    ZeroGrad,
    Step,
    Clip,
}

fn loop_kind(name: &str) -> Option<Loop> {
    if name.contains("zero_grad") {
        Some(Loop::ZeroGrad)
    } else if name.starts_with("Optimizer.step#") || is_user_optimizer_range(name) {
        Some(Loop::Step)
    } else if name.contains("clip_grad_norm") {
        Some(Loop::Clip)
    } else {
        None
    }
}

/// A user range around a hand-written optimizer step (`record_function(
/// "optimizer")`, `opt_step`): a loop of small kernels there is the same
/// pattern as in `Optimizer.step#…` (the fused check still applies).
fn is_user_optimizer_range(name: &str) -> bool {
    let l = name.to_ascii_lowercase();
    l == "optimizer" || l == "optimizer_step" || l == "opt_step" || l == "optimizer.step"
}

struct Found {
    range: OpRow,
    kind: Loop,
    op: String,
    repeats: usize,
    kernels: Vec<GpuRow>,
}

pub(super) fn detect(cx: &Cx, claims: &mut [bool]) -> Vec<Draft> {
    let t = cx.trace;
    let ops = &t.cpu_ops;
    let rt = &t.runtime;
    let (ws, we) = cx.window;
    let mut found: Vec<Found> = Vec::new();
    let mut kinds: HashMap<u32, Option<Loop>> = HashMap::new();
    for &th in &cx.ev.launchers {
        for i in t.cpu_ops_of(th) {
            if ops.start[i] >= we || ops.end[i] <= ws || cx.ops.annotation[i] != Some(OpRow::new(i)) {
                continue;
            }
            let name = ops.name[i];
            let Some(kind) = *kinds
                .entry(name.0)
                .or_insert_with(|| loop_kind(t.strings.get(name)))
            else {
                continue;
            };
            let (s, e) = (ops.start[i], ops.end[i]);
            let mut per_op: HashMap<u32, usize> = HashMap::new();
            let mut kernels = Vec::new();
            let mut fused = false;
            let first = rt.start.partition_point(|&x| x < s);
            for r in first..rt.len() {
                if rt.start[r] >= e {
                    break;
                }
                let Some(g) = cx.call_gpu[r].filter(|g| rt.thread[r] == th && t.gpu.is_busy(g.index()))
                else {
                    continue;
                };
                let kname = t.strings.get(t.gpu.name[g.index()]);
                if t.links.runtime_gpu_count[r] > 1 || kname.contains("multi_tensor_apply") {
                    fused = true;
                    break;
                }
                let op = t.links.runtime_op[r];
                let key = cx.name_key(cx.outer_operator(op));
                *per_op.entry(key).or_default() += 1;
                kernels.push(g);
            }
            if fused {
                continue;
            }
            if let Some((&op, &repeats)) = per_op.iter().max_by_key(|(k, n)| (**n, std::cmp::Reverse(**k))) {
                if repeats >= MIN_REPEATS {
                    let op = if op == u32::MAX {
                        String::new()
                    } else {
                        t.strings.get(gapscope_collectors::trace::StrId(op)).to_string()
                    };
                    found.push(Found {
                        range: OpRow::new(i),
                        kind,
                        op,
                        repeats,
                        kernels,
                    });
                }
            }
        }
    }
    // Nested loop ranges (a user `optimizer` range around
    // `Optimizer.step#…`): keep the innermost, the more specific name.
    let contains = |a: &Found, b: &Found| {
        let (a, b) = (a.range.index(), b.range.index());
        a != b && ops.thread[a] == ops.thread[b] && ops.start[a] <= ops.start[b] && ops.end[b] <= ops.end[a]
    };
    let inner: Vec<bool> = found
        .iter()
        .map(|f| !found.iter().any(|g| contains(f, g)))
        .collect();
    let found: Vec<Found> = found
        .into_iter()
        .zip(inner)
        .filter_map(|(f, keep)| keep.then_some(f))
        .collect();
    // One finding per range name, largest first.
    let mut by_name: HashMap<u32, Vec<Found>> = HashMap::new();
    for f in found {
        by_name.entry(ops.name[f.range.index()].0).or_default().push(f);
    }
    let mut drafts: Vec<(Ns, Draft)> = Vec::new();
    for (_, fs) in by_name {
        let mut pieces = Vec::new();
        for f in &fs {
            let r = f.range.index();
            let (s, e, th) = (ops.start[r], ops.end[r], ops.thread[r]);
            pieces.extend(cx.take_in(claims, (s, e), |p| {
                cx.thread(p) == Some(th)
                    && matches!(
                        p.cause,
                        Cause::CpuOp | Cause::FrameworkOverhead | Cause::LaunchOverhead
                    )
            }));
        }
        let idle = cx.total(&pieces);
        let f0 = &fs[0];
        let kernels: Vec<GpuRow> = fs.iter().flat_map(|f| f.kernels.iter().copied()).collect();
        let busy: Ns = kernels.iter().map(|&g| t.gpu.dur(g.index())).sum();
        // A loop the GPU never waits for (its launches run ahead of the
        // queue) and whose kernels the fix would not remove costs nothing.
        let removed = if f0.kind == Loop::ZeroGrad { busy } else { 0 };
        if idle + removed < NOISE_NS {
            for &i in &pieces {
                claims[i as usize] = false;
            }
            continue;
        }
        let range_name = t.strings.get(ops.name[f0.range.index()]).to_string();
        let n = cx.n_steps();
        let repeats = fs.iter().map(|f| f.repeats).max().unwrap_or(0);
        let title = format!(
            "`{range_name}` launches `{}` {repeats} times, one small kernel per parameter ({} idle)",
            f0.op,
            duration(idle)
        );
        let fix = match f0.kind {
            Loop::ZeroGrad => "Use `optimizer.zero_grad(set_to_none=True)` (the default since \
                 PyTorch 2.0; also `model.zero_grad(set_to_none=True)`): gradients are dropped \
                 instead of zeroed, so no kernel runs at all."
                .to_string(),
            Loop::Step => "Construct the optimizer with `foreach=True` (one multi-tensor kernel \
                 per group of parameters) or `fused=True` (one fused kernel, for Adam/AdamW/SGD on \
                 CUDA), and keep all parameters on the same device and dtype so the fast path \
                 applies."
                .to_string(),
            Loop::Clip => "Call `torch.nn.utils.clip_grad_norm_(params, max_norm, foreach=True)` \
                 so the norms are computed with multi-tensor kernels."
                .to_string(),
        };
        let per = cx.per_step();
        let hint = format!(
            "`{range_name}` runs `{}` once per parameter tensor ({repeats} launches), so the GPU \
             idles {} {per} between tiny kernels. {fix}",
            f0.op,
            duration(idle / n)
        );
        let mut d = Draft::new("D4", "per_parameter_loop", title, hint);
        d.occurrences = fs.len() as u64;
        if f0.kind == Loop::ZeroGrad {
            d.removed_busy_ns = busy;
            d.edit.remove_gpu = kernels.clone();
            d.edit.remove_gpu.sort_unstable();
            for f in &fs {
                let r = f.range.index();
                d.edit
                    .remove_cpu
                    .push((ops.thread[r], (ops.start[r], ops.end[r])));
            }
        }
        for f in fs.iter().take(super::MAX_EVIDENCE / 2) {
            d.evidence.push(cx.op_evidence(f.range));
        }
        let blame = cx.blame(&pieces);
        d.blame = Some((
            Some(f0.op.clone()).filter(|o| !o.is_empty()).or(blame.0),
            Some(range_name),
            blame.2,
        ));
        d.pieces = pieces;
        drafts.push((idle + d.removed_busy_ns, d));
    }
    drafts.sort_by_key(|(k, _)| std::cmp::Reverse(*k));
    drafts.into_iter().take(MAX_GROUPS).map(|(_, d)| d).collect()
}

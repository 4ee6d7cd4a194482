//! Who to blame for a CPU instant: for every `cpu_ops` row, the innermost
//! operator, the nearest user annotation / module / optimizer range, the
//! DataLoader range and the source line around it.
//!
//! ```text
//! thread 1  [ProfilerStep#3.............................................]
//!             [train.py(42): train_step................................]
//!               [Optimizer.zero_grad#SGD.zero_grad.....]
//!                 [aten::zero_.......]
//!                   [aten::fill_..]
//!                      ^ instant t
//!
//! at t:  operator   = aten::fill_                 (innermost Operator)
//!        annotation = Optimizer.zero_grad#SGD.zero_grad
//!        source     = train.py(42): train_step    (innermost user frame)
//! ```
//!
//! Names decide more than the kind column, because older Kineto traces
//! (2021) store `record_function` ranges such as
//! `enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__` and
//! `Optimizer.step#SGD.step` with category `Operator`: a range whose name
//! has a `#` (record_function's `Owner#method` convention) or starts with
//! `nn.Module:` counts as an annotation whatever its kind. Everything is
//! computed once, in one pass over the rows (parents precede children).

use crate::evidence::blocked_in_ops;
use crate::names::{
    is_annotation_name, is_dataloader_name, is_frame, is_profiler_name, is_step_name, is_warmup_name,
    user_frame,
};
use crate::window::step_number;
use crate::workload::Workload;
use gapscope_collectors::trace::FxHashMap;
use gapscope_collectors::trace::{CpuOpKind, Ns, OpRow, StrId, Strings, Trace};

/// Per-row blame, computed once per trace.
#[derive(Clone, Debug, Default)]
pub struct OpContext {
    /// Innermost `Operator` row at or above each row (not an annotation-like
    /// name), if any.
    pub operator: Vec<Option<OpRow>>,
    /// Nearest annotation / module / optimizer / DataLoader range at or above
    /// each row (ProfilerSteps excluded), if any.
    pub annotation: Vec<Option<OpRow>>,
    /// Nearest DataLoader `__next__` range at or above each row, if any.
    pub dataloader: Vec<Option<OpRow>>,
    /// Best source location for each row: the innermost user-code frame at
    /// or above it, else the innermost frame of any kind, else empty.
    pub source: Vec<StrId>,
    /// True when the row is, or is inside, the profiler's own code.
    pub profiler: Vec<bool>,
    /// The outermost annotation at or above each row that the program names
    /// warm-up ([`is_warmup_name`]), if any.
    pub warmup_range: Vec<Option<OpRow>>,
    /// True when the row is, or is inside, a first call that costs far more
    /// than the same operator's later calls ([`first_calls`]), or a range
    /// the program names warm-up: warm-up either way.
    pub first_call: Vec<bool>,
    /// True when the row itself is such a first call ([`first_calls`]).
    pub first_call_own: Vec<bool>,
    /// True when the row, or a row inside it, made a runtime call that
    /// launched GPU work: the operator runs on the GPU, whatever its host
    /// side costs.
    pub launches: Vec<bool>,
    /// Time spent in blocking calls (waiting for the GPU) inside each row
    /// that made any ([`blocked_in_ops`]): not the operator's own cost.
    pub blocked: FxHashMap<OpRow, Ns>,
    /// What the trace shows the program doing (training or not): one fact
    /// for the whole trace, which hints read to give the advice that applies.
    pub workload: Workload,
}

/// A first call is warm-up when it takes more than this many times the
/// median of the operator's later calls with the same input shapes (ours:
/// on the b200 trace the first `aten::addmm` of each shape takes 21–42×
/// its steady state, while steady calls vary by under 3×) ...
pub const FIRST_CALL_FACTOR: i64 = 5;
/// ... and at least this much longer (HTA's `runtime_cutoff`, 50 µs), so
/// microsecond noise is no warm-up.
pub const FIRST_CALL_MIN_EXCESS_NS: Ns = 50_000;
/// Later calls needed to know the steady state.
pub const FIRST_CALL_MIN_LATER: usize = 2;

/// Whether the trace begins after steps it does not hold: its first
/// `ProfilerStep#N` has N ≥ 1. The profiler numbers the steps it sees from
/// 0, recorded or not (a schedule's `wait` and `warmup` steps run the same
/// code unrecorded), so a trace from `ProfilerStep#5` on comes after five
/// steps that already made every first call of the steady shapes
/// (control: #1009; the ResNet-50 sample: #5).
pub fn begins_after_earlier_steps(trace: &Trace) -> bool {
    let ops = &trace.cpu_ops;
    (0..ops.len())
        .filter(|&i| ops.kind[i] == CpuOpKind::ProfilerStep)
        .min_by_key(|&i| (ops.start[i], i))
        .and_then(|i| step_number(trace.strings.get(ops.name[i])))
        .is_some_and(|n| n >= 1)
}

/// The host time of `cpu_ops` row `row`: its duration without the time it
/// spent blocked waiting for the GPU (`blocked`, from [`blocked_in_ops`]).
/// A first `.item()` that waits 400 ms for queued kernels is not 400 ms of
/// warm-up.
pub fn host_ns(trace: &Trace, blocked: &FxHashMap<OpRow, Ns>, row: usize) -> Ns {
    let ops = &trace.cpu_ops;
    let dur = ops.end[row] - ops.start[row];
    if blocked.is_empty() {
        return dur;
    }
    (dur - blocked.get(&OpRow::new(row)).copied().unwrap_or(0)).max(0)
}

/// Per `cpu_ops` row: whether it is the first call of its operator name and
/// input shapes in the trace and its host time ([`host_ns`]: without the
/// time it waited for the GPU) is over [`FIRST_CALL_FACTOR`] times, and
/// [`FIRST_CALL_MIN_EXCESS_NS`] more than, the median of the later calls'
/// (at least [`FIRST_CALL_MIN_LATER`] of them), and over twice the slowest
/// of them. Library handles, workspaces, kernel selection and lazily
/// loaded kernels make first calls slow; steady-state steps do not pay
/// that again. So a slowness that a later call repeats is no warm-up
/// (control's first `MulBackward0`, 2.41 ms against a 37 µs median, takes
/// 2.14 ms again a step later), nor is any first call of a trace that
/// [`begins_after_earlier_steps`]: those steps made the first calls.
pub fn first_calls(trace: &Trace, blocked: &FxHashMap<OpRow, Ns>) -> Vec<bool> {
    let ops = &trace.cpu_ops;
    if begins_after_earlier_steps(trace) {
        return vec![false; ops.len()];
    }
    let mut by: FxHashMap<(StrId, StrId), Vec<usize>> = FxHashMap::default();
    for i in 0..ops.len() {
        if ops.kind[i] == CpuOpKind::Operator {
            by.entry((ops.name[i], ops.shapes[i])).or_default().push(i);
        }
    }
    let mut out = vec![false; ops.len()];
    for (_, mut rows) in by {
        if rows.len() < 1 + FIRST_CALL_MIN_LATER {
            continue;
        }
        rows.sort_by_key(|&r| (ops.start[r], r));
        let dur = |r: usize| host_ns(trace, blocked, r);
        let mut later: Vec<Ns> = rows[1..].iter().map(|&r| dur(r)).collect();
        let k = later.len() / 2;
        let median = *later.select_nth_unstable(k).1;
        let slowest = later.iter().copied().max().unwrap_or(0);
        let first = dur(rows[0]);
        if first > FIRST_CALL_FACTOR * median
            && first - median >= FIRST_CALL_MIN_EXCESS_NS
            && first > 2 * slowest
        {
            out[rows[0]] = true;
        }
    }
    out
}

/// Per `cpu_ops` row: whether it or a row inside it made a runtime call
/// that launched GPU work.
fn launching_rows(trace: &Trace) -> Vec<bool> {
    let ops = &trace.cpu_ops;
    let mut out = vec![false; ops.len()];
    for c in 0..trace.runtime.len() {
        if trace.links.runtime_gpu_count[c] == 0 {
            continue;
        }
        let mut at = trace.links.runtime_op[c];
        while let Some(r) = at.map(OpRow::index).filter(|&r| !out[r]) {
            out[r] = true;
            at = ops.parent[r];
        }
    }
    out
}

/// The module class of an `nn.Module: Name_N` range (`nn.Module: Name`):
/// PyTorch numbers each instance, so the 36 layers of a model are 36
/// names; grouped by class they are one. Other names are returned as is.
pub fn module_class(name: &str) -> &str {
    if !name.starts_with("nn.Module: ") {
        return name;
    }
    match name.rsplit_once('_') {
        Some((class, n)) if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => class,
        _ => name,
    }
}

/// What a name says about a range, cached per string.
#[derive(Clone, Copy, Default)]
struct NameClass {
    annotation: bool,
    dataloader: bool,
    profiler: bool,
    warmup: bool,
    /// The name is a frame `file.py(N): fn`; `user` when outside libraries.
    frame: bool,
    user: bool,
}

impl OpContext {
    /// Computes the blame columns of every `cpu_ops` row of `trace`.
    pub fn new(trace: &Trace) -> OpContext {
        let ops = &trace.cpu_ops;
        let n = ops.len();
        let mut cx = OpContext {
            operator: vec![None; n],
            annotation: vec![None; n],
            dataloader: vec![None; n],
            source: vec![Strings::EMPTY; n],
            profiler: vec![false; n],
            warmup_range: vec![None; n],
            first_call: Vec::new(),
            first_call_own: Vec::new(),
            launches: launching_rows(trace),
            blocked: blocked_in_ops(trace),
            workload: Workload::of(trace),
        };
        cx.first_call = first_calls(trace, &cx.blocked);
        cx.first_call_own = cx.first_call.clone();
        let mut user_src = vec![Strings::EMPTY; n];
        let mut classes = NameCache::new(&trace.strings);
        for i in 0..n {
            let parent = ops.parent[i].map(OpRow::index);
            let inherit = |v: &[Option<OpRow>]| parent.and_then(|p| v[p]);
            let name = classes.get(&trace.strings, ops.name[i]);
            let kind = ops.kind[i];
            let me = Some(OpRow::new(i));
            cx.operator[i] = if kind == CpuOpKind::Operator && !name.annotation {
                me
            } else {
                inherit(&cx.operator)
            };
            let is_annotation = name.annotation
                || (kind == CpuOpKind::UserAnnotation && !is_step_name(trace.strings.get(ops.name[i])));
            cx.annotation[i] = if is_annotation {
                me
            } else {
                inherit(&cx.annotation)
            };
            cx.dataloader[i] = if name.dataloader {
                me
            } else {
                inherit(&cx.dataloader)
            };
            cx.profiler[i] = name.profiler || parent.is_some_and(|p| cx.profiler[p]);
            cx.warmup_range[i] = inherit(&cx.warmup_range).or(me.filter(|_| is_annotation && name.warmup));
            cx.first_call[i] =
                cx.first_call[i] || cx.warmup_range[i].is_some() || parent.is_some_and(|p| cx.first_call[p]);
            let (own_any, own_user) = own_frame(trace, &mut classes, i, name);
            let up = |v: &[StrId]| parent.map_or(Strings::EMPTY, |p| v[p]);
            user_src[i] = own_user.unwrap_or_else(|| up(&user_src));
            let any = own_any.unwrap_or_else(|| up(&cx.source));
            // `source` holds "any frame" while walking; replaced below.
            cx.source[i] = any;
        }
        for (src, user) in cx.source.iter_mut().zip(user_src) {
            if user != Strings::EMPTY {
                *src = user;
            }
        }
        cx
    }
}

/// The row's own frame (any, user-code): its name when it is a Python frame,
/// else its `source` column.
fn own_frame(
    trace: &Trace,
    classes: &mut NameCache,
    i: usize,
    name: NameClass,
) -> (Option<StrId>, Option<StrId>) {
    let ops = &trace.cpu_ops;
    if ops.kind[i] == CpuOpKind::PythonFunction && name.frame {
        let id = ops.name[i];
        return (Some(id), name.user.then_some(id));
    }
    let src = ops.source[i];
    if src == Strings::EMPTY {
        return (None, None);
    }
    let c = classes.get(&trace.strings, src);
    (Some(src), c.user.then_some(src))
}

struct NameCache {
    done: Vec<bool>,
    class: Vec<NameClass>,
}

impl NameCache {
    fn new(strings: &Strings) -> Self {
        NameCache {
            done: vec![false; strings.len()],
            class: vec![NameClass::default(); strings.len()],
        }
    }

    fn get(&mut self, strings: &Strings, id: StrId) -> NameClass {
        let i = id.0 as usize;
        if !self.done[i] {
            self.class[i] = classify(strings.get(id));
            self.done[i] = true;
        }
        self.class[i]
    }
}

fn classify(name: &str) -> NameClass {
    let user = user_frame(name).is_some();
    NameClass {
        annotation: is_annotation_name(name),
        dataloader: is_dataloader_name(name),
        profiler: is_profiler_name(name),
        warmup: is_warmup_name(name),
        frame: user || name.split(';').any(is_frame),
        user,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gapscope_collectors::trace::*;

    #[test]
    fn module_instances_share_a_class() {
        assert_eq!(module_class("nn.Module: FusedMoE_35"), "nn.Module: FusedMoE");
        assert_eq!(module_class("nn.Module: Linear_0"), "nn.Module: Linear");
        assert_eq!(module_class("nn.Module: Linear"), "nn.Module: Linear");
        assert_eq!(module_class("nn.Module: Conv2d_x"), "nn.Module: Conv2d_x");
        assert_eq!(module_class("step_3"), "step_3");
    }

    /// ```text
    /// thread 1  [ProfilerStep#1.......................................]
    ///             [train.py(42): step.................................]
    ///               [torch/nn/module.py(9): fwd.....................]
    ///                 [Optimizer.zero_grad#SGD.zero_grad..........]
    ///                   [aten::zero_.........]
    ///                     [aten::fill_...]
    /// ```
    #[test]
    fn context_finds_operator_annotation_and_user_frame() {
        let tr = Sketch::new()
            .op(0, 100, "ProfilerStep#1")
            .op(1, 99, "train.py(42): step")
            .op(2, 98, "torch/nn/module.py(9): fwd")
            .op_as(3, 97, "Optimizer.zero_grad#SGD.zero_grad", CpuOpKind::Operator)
            .op(4, 50, "aten::zero_")
            .op(5, 40, "aten::fill_")
            .finish();
        let cx = OpContext::new(&tr);
        let fill = 5;
        assert_eq!(tr.op_name(cx.operator[fill]), Some("aten::fill_"));
        assert_eq!(
            tr.op_name(cx.annotation[fill]),
            Some("Optimizer.zero_grad#SGD.zero_grad")
        );
        assert_eq!(tr.strings.get(cx.source[fill]), "train.py(42): step");
        assert_eq!(cx.operator[3], None);
        assert_eq!(cx.annotation[0], None);
        assert!(!cx.profiler[fill]);
    }
}

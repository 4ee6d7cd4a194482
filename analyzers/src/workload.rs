//! What the trace shows the program doing, so that hints give the advice
//! that applies to it: training advice (overlap gradient communication
//! with backward, accumulate losses) only where the trace shows training.
//!
//! ```text
//! thread 1  [aten::addmm][autograd::engine::evaluate_function: AddmmBackward0][Optimizer.step#SGD.step]
//!           -> Training
//! thread 1  [aten::addmm][aten::softmax][aten::argmax]
//!           -> NoBackwardOrOptimizer: "this trace has no backward pass", not "inference"
//! (no CPU operators recorded)
//!           -> Unknown: hints keep both kinds of advice
//! ```
//!
//! The trace never says "inference": a program without a backward pass or
//! an optimizer step in the trace may still train outside the profiled
//! steps. Hints therefore say what was not seen, never what the program is.

use crate::names::{is_backward_name, is_optimizer_name};
use gapscope_collectors::trace::{CpuOpKind, Trace};
use serde::{Deserialize, Serialize};

/// What the trace's CPU operators show about the workload.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Workload {
    /// An autograd backward node (`autograd::engine::evaluate_function:
    /// ...`, `AddmmBackward0`) or an optimizer range
    /// (`Optimizer.step#...`, `Optimizer.zero_grad#...`) is in the trace.
    Training,
    /// The trace records CPU operators, and none of them is a backward node
    /// or an optimizer range.
    NoBackwardOrOptimizer,
    /// The trace records no CPU operators: it cannot tell.
    #[default]
    Unknown,
}

impl Workload {
    /// Reads the workload from `trace`'s CPU rows (computed once per trace,
    /// in [`OpContext::new`](crate::attribution::OpContext::new)).
    pub fn of(trace: &Trace) -> Workload {
        let ops = &trace.cpu_ops;
        let mut seen = vec![false; trace.strings.len()];
        let mut any_operator = false;
        for i in 0..ops.len() {
            any_operator |= ops.kind[i] == CpuOpKind::Operator;
            let id = ops.name[i];
            if std::mem::replace(&mut seen[id.0 as usize], true) {
                continue;
            }
            let name = trace.strings.get(id);
            if is_backward_name(name) || is_optimizer_name(name) {
                return Workload::Training;
            }
        }
        if any_operator {
            Workload::NoBackwardOrOptimizer
        } else {
            Workload::Unknown
        }
    }

    /// The name summaries and JSON use: `training`,
    /// `no_backward_or_optimizer`, `unknown`.
    pub fn as_str(self) -> &'static str {
        match self {
            Workload::Training => "training",
            Workload::NoBackwardOrOptimizer => "no_backward_or_optimizer",
            Workload::Unknown => "unknown",
        }
    }

    /// The workload [`as_str`](Self::as_str) names; `None` for any other
    /// text.
    pub fn from_name(name: &str) -> Option<Workload> {
        [
            Workload::Training,
            Workload::NoBackwardOrOptimizer,
            Workload::Unknown,
        ]
        .into_iter()
        .find(|w| w.as_str() == name)
    }

    /// What several traces (a job's ranks) show together: training when
    /// any rank shows it, no backward or optimizer when every rank with
    /// CPU operators shows none, else cannot tell.
    pub fn of_all(each: impl IntoIterator<Item = Workload>) -> Workload {
        let mut all = Workload::Unknown;
        for w in each {
            match w {
                Workload::Training => return Workload::Training,
                Workload::NoBackwardOrOptimizer => all = Workload::NoBackwardOrOptimizer,
                Workload::Unknown => {}
            }
        }
        all
    }

    /// Whether training advice may apply: the trace shows training, or
    /// cannot tell.
    pub fn may_train(self) -> bool {
        self != Workload::NoBackwardOrOptimizer
    }

    /// Whether advice for a program without a backward pass may apply: the
    /// trace shows none, or cannot tell.
    pub fn may_be_forward_only(self) -> bool {
        self != Workload::Training
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gapscope_collectors::trace::{CpuOp, TraceBuilder};

    fn of(ops: &[(&str, CpuOpKind)]) -> Workload {
        let mut b = TraceBuilder::new();
        let t = b.thread(1, 1);
        for (k, &(name, kind)) in ops.iter().enumerate() {
            let s = k as i64 * 10;
            let name = b.intern(name);
            b.push_cpu_op(CpuOp::new(t, s, s + 5, name, kind));
        }
        Workload::of(&b.finish())
    }

    #[test]
    fn backward_or_optimizer_is_training() {
        let fwd = ("aten::addmm", CpuOpKind::Operator);
        assert_eq!(
            of(&[fwd, ("AddmmBackward0", CpuOpKind::Operator)]),
            Workload::Training
        );
        assert_eq!(
            of(&[fwd, ("Optimizer.step#SGD.step", CpuOpKind::UserAnnotation)]),
            Workload::Training
        );
        assert_eq!(of(&[fwd]), Workload::NoBackwardOrOptimizer);
        assert_eq!(
            of(&[("ProfilerStep#1", CpuOpKind::ProfilerStep)]),
            Workload::Unknown
        );
        assert_eq!(of(&[]), Workload::Unknown);
    }
}

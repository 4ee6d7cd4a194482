//! Per-name counts and total times of operators, kernels and every other
//! named event, and their comparison between two traces, classified the way
//! HTA's `TraceDiff.ops_diff` does (by count): added, removed, increased,
//! decreased, unchanged.
//!
//! Which rows count ([`collect`]): those that start inside the analysed
//! window (the selected steps, else the whole trace), as HTA counts the
//! events of one iteration:
//!
//! ```text
//! cpu    [ProfilerStep#5 .................)[ProfilerStep#6 ...
//!          [aten::mm)  [cudaLaunchKernel c=9)        [cudaLaunchKernel c=10)
//! gpu                          [gemm c=9 ...........]     [gemm c=10]
//!
//! window = step 5: aten::mm, ProfilerStep#*, launch c=9 and gemm c=9
//! (by its launch, although it ends after the step); not launch c=10 or
//! gemm c=10.
//! ```
//!
//! A CPU-side row (operator, annotation, step, Python frame, runtime call)
//! counts when its start is in the window; a GPU row when the runtime call
//! that launched it does, or, for a GPU row with no launch in the trace,
//! when its own start is. `ProfilerStep#N` rows are named `ProfilerStep#*`
//! so that runs profiled at different step numbers still line up.

use crate::intervals::Span;
use gapscope_collectors::trace::{CpuOpKind, GpuKind, Ns, Trace};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// What kind of event a name belongs to. Rows with the same name but a
/// different category are counted apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OpCategory {
    /// A framework operator (`aten::mm`, autograd nodes).
    Operator,
    /// A user annotation (`record_function`, `Optimizer.step#...`).
    Annotation,
    /// A `ProfilerStep#N` range (all named `ProfilerStep#*`).
    Step,
    /// A Python frame.
    Python,
    /// Another CPU range (unknown categories, profiler spans).
    OtherCpu,
    /// A CUDA/HIP runtime or driver call.
    Runtime,
    /// A GPU kernel (compute or collective).
    Kernel,
    /// A memory copy on the GPU.
    Memcpy,
    /// A memset on the GPU.
    Memset,
    /// A CUDA synchronization record.
    Sync,
}

impl OpCategory {
    /// The stable snake_case name used in JSON and reports.
    pub fn name(self) -> &'static str {
        match self {
            OpCategory::Operator => "operator",
            OpCategory::Annotation => "annotation",
            OpCategory::Step => "step",
            OpCategory::Python => "python",
            OpCategory::OtherCpu => "other_cpu",
            OpCategory::Runtime => "runtime",
            OpCategory::Kernel => "kernel",
            OpCategory::Memcpy => "memcpy",
            OpCategory::Memset => "memset",
            OpCategory::Sync => "sync",
        }
    }

    /// True for what runs on the GPU (kernels, copies, memsets, syncs).
    pub fn is_gpu(self) -> bool {
        matches!(
            self,
            OpCategory::Kernel | OpCategory::Memcpy | OpCategory::Memset | OpCategory::Sync
        )
    }
}

/// Count and summed duration of one name.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct OpTotal {
    /// How many rows.
    pub count: u64,
    /// Their durations added up, ns.
    pub total_ns: Ns,
}

/// Per `(category, name)` totals of one trace's window.
pub type OpTotals = BTreeMap<(OpCategory, String), OpTotal>;

/// Counts every named row of `trace` that starts in `window` (see the
/// module docs for which rows those are).
pub fn collect(trace: &Trace, window: Span) -> OpTotals {
    let inside = |t: Ns| t >= window.0 && t < window.1;
    let mut out = OpTotals::new();
    let mut add = |cat: OpCategory, name: &str, dur: Ns| {
        let e = out.entry((cat, name.to_string())).or_default();
        e.count += 1;
        e.total_ns += dur;
    };
    let ops = &trace.cpu_ops;
    for i in 0..ops.len() {
        if !inside(ops.start[i]) {
            continue;
        }
        let cat = match ops.kind[i] {
            CpuOpKind::Operator => OpCategory::Operator,
            CpuOpKind::UserAnnotation => OpCategory::Annotation,
            CpuOpKind::PythonFunction => OpCategory::Python,
            CpuOpKind::ProfilerStep => OpCategory::Step,
            CpuOpKind::Other => OpCategory::OtherCpu,
        };
        let name = if cat == OpCategory::Step {
            "ProfilerStep#*"
        } else {
            trace.strings.get(ops.name[i])
        };
        add(cat, name, ops.end[i] - ops.start[i]);
    }
    let rt = &trace.runtime;
    for i in 0..rt.len() {
        if inside(rt.start[i]) {
            add(
                OpCategory::Runtime,
                trace.strings.get(rt.name[i]),
                rt.end[i] - rt.start[i],
            );
        }
    }
    let gpu = &trace.gpu;
    for i in 0..gpu.len() {
        let at = trace.links.gpu_launch[i].map_or(gpu.start[i], |c| rt.start[c.index()]);
        if !inside(at) {
            continue;
        }
        let cat = match gpu.kind[i] {
            GpuKind::Kernel => OpCategory::Kernel,
            GpuKind::Memcpy => OpCategory::Memcpy,
            GpuKind::Memset => OpCategory::Memset,
            GpuKind::Sync => OpCategory::Sync,
        };
        add(cat, trace.strings.get(gpu.name[i]), gpu.dur(i));
    }
    out
}

/// How a name's count changed from base to new (HTA `ops_diff`'s classes).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Change {
    /// Only in new.
    Added,
    /// Only in base (HTA calls it "deleted").
    Removed,
    /// In both, more often in new.
    Increased,
    /// In both, less often in new.
    Decreased,
    /// In both, as often.
    Unchanged,
}

impl Change {
    /// Every class, in report order.
    pub const ALL: [Change; 5] = [
        Change::Added,
        Change::Removed,
        Change::Increased,
        Change::Decreased,
        Change::Unchanged,
    ];

    /// Classifies by count, as HTA does.
    pub fn of(base_count: u64, new_count: u64) -> Change {
        match (base_count, new_count) {
            (0, _) => Change::Added,
            (_, 0) => Change::Removed,
            (b, n) if n > b => Change::Increased,
            (b, n) if n < b => Change::Decreased,
            _ => Change::Unchanged,
        }
    }

    /// The stable snake_case name.
    pub fn name(self) -> &'static str {
        match self {
            Change::Added => "added",
            Change::Removed => "removed",
            Change::Increased => "increased",
            Change::Decreased => "decreased",
            Change::Unchanged => "unchanged",
        }
    }
}

/// One name compared.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct OpChange {
    /// What kind of event.
    pub category: OpCategory,
    /// Its name.
    pub name: String,
    /// How its count changed.
    pub change: Change,
    /// Count and total time in base (zeros when absent).
    pub base: OpTotal,
    /// Count and total time in new (zeros when absent).
    pub new: OpTotal,
}

impl OpChange {
    /// `new.total_ns − base.total_ns`.
    pub fn delta_ns(&self) -> Ns {
        self.new.total_ns - self.base.total_ns
    }
}

/// How many names fall in each class.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChangeCounts {
    /// See [`Change::Added`].
    pub added: u64,
    /// See [`Change::Removed`].
    pub removed: u64,
    /// See [`Change::Increased`].
    pub increased: u64,
    /// See [`Change::Decreased`].
    pub decreased: u64,
    /// See [`Change::Unchanged`].
    pub unchanged: u64,
}

impl ChangeCounts {
    /// Counts one name of class `c`.
    pub fn add(&mut self, c: Change) {
        *match c {
            Change::Added => &mut self.added,
            Change::Removed => &mut self.removed,
            Change::Increased => &mut self.increased,
            Change::Decreased => &mut self.decreased,
            Change::Unchanged => &mut self.unchanged,
        } += 1;
    }

    /// The count of class `c`.
    pub fn get(&self, c: Change) -> u64 {
        match c {
            Change::Added => self.added,
            Change::Removed => self.removed,
            Change::Increased => self.increased,
            Change::Decreased => self.decreased,
            Change::Unchanged => self.unchanged,
        }
    }
}

/// Every name of either trace, compared.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct OpsDiff {
    /// One entry per `(category, name)`, largest time change first.
    pub changes: Vec<OpChange>,
    /// Classes of names per category (categories present only).
    pub by_category: BTreeMap<OpCategory, ChangeCounts>,
    /// Classes of names with categories pooled, names only, as HTA's
    /// `ops_diff` over all device types counts them.
    pub all_names: ChangeCounts,
}

impl OpsDiff {
    /// The entries of one category, in [`OpsDiff::changes`] order.
    pub fn of(&self, category: OpCategory) -> impl Iterator<Item = &OpChange> {
        self.changes.iter().filter(move |c| c.category == category)
    }
}

/// Compares the totals of two windows.
pub fn diff(base: &OpTotals, new: &OpTotals) -> OpsDiff {
    let mut keys: Vec<&(OpCategory, String)> = base.keys().chain(new.keys()).collect();
    keys.sort_unstable();
    keys.dedup();
    let mut out = OpsDiff::default();
    // Names pooled across categories: (base count, new count).
    let mut pooled: BTreeMap<&str, (u64, u64)> = BTreeMap::new();
    for key in keys {
        let b = base.get(key).copied().unwrap_or_default();
        let n = new.get(key).copied().unwrap_or_default();
        let change = Change::of(b.count, n.count);
        out.by_category.entry(key.0).or_default().add(change);
        let p = pooled.entry(key.1.as_str()).or_default();
        p.0 += b.count;
        p.1 += n.count;
        out.changes.push(OpChange {
            category: key.0,
            name: key.1.clone(),
            change,
            base: b,
            new: n,
        });
    }
    for (b, n) in pooled.values() {
        out.all_names.add(Change::of(*b, *n));
    }
    out.changes.sort_by(|a, b| {
        b.delta_ns()
            .abs()
            .cmp(&a.delta_ns().abs())
            .then_with(|| (a.category, &a.name).cmp(&(b.category, &b.name)))
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn totals(rows: &[(OpCategory, &str, u64, Ns)]) -> OpTotals {
        rows.iter()
            .map(|&(c, n, count, total_ns)| ((c, n.to_string()), OpTotal { count, total_ns }))
            .collect()
    }

    #[test]
    fn classes_follow_hta_by_count() {
        assert_eq!(Change::of(0, 3), Change::Added);
        assert_eq!(Change::of(3, 0), Change::Removed);
        assert_eq!(Change::of(2, 3), Change::Increased);
        assert_eq!(Change::of(3, 2), Change::Decreased);
        // Same count: unchanged even when the time moved (HTA's rule).
        assert_eq!(Change::of(3, 3), Change::Unchanged);
    }

    #[test]
    fn pooled_names_sum_categories() {
        use OpCategory::*;
        let base = totals(&[(Operator, "x", 1, 10), (Runtime, "x", 1, 5), (Kernel, "k", 2, 40)]);
        let new = totals(&[(Operator, "x", 2, 10), (Kernel, "k", 2, 90), (Kernel, "j", 1, 1)]);
        let d = diff(&base, &new);
        // Per category: x/operator increased, x/runtime removed, k unchanged, j added.
        assert_eq!(d.by_category[&Operator].increased, 1);
        assert_eq!(d.by_category[&Runtime].removed, 1);
        assert_eq!(d.by_category[&Kernel].unchanged, 1);
        assert_eq!(d.by_category[&Kernel].added, 1);
        // Pooled by name: x has 2 in both (unchanged), k unchanged, j added.
        assert_eq!(
            d.all_names,
            ChangeCounts {
                added: 1,
                unchanged: 2,
                ..Default::default()
            }
        );
        // Largest time change first: k (+50 ns).
        assert_eq!(d.changes[0].name, "k");
        assert_eq!(d.changes[0].delta_ns(), 50);
    }
}

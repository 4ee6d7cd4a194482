//! Links between GPU work, the runtime calls that launched it and the CPU
//! operators those calls ran in.
//!
//! ```text
//! cpu_ops   thread 1: [aten::mm........................]
//! runtime   thread 1:     [cudaLaunchKernel corr=7]
//! gpu       stream 7:                          [gemm corr=7]
//!
//! gpu_launch[gemm] = the cudaLaunchKernel row        (same correlation id)
//! runtime_op[cudaLaunchKernel] = the aten::mm row    (innermost range on the
//!                                                     same thread holding the
//!                                                     call's start)
//! ```

use super::hash::FxHashMap;
use super::rows::{CallRow, OpRow};
use super::tables::*;

/// Row-index links, computed once by `TraceBuilder::finish`.
#[derive(Clone, Debug, Default)]
pub struct Links {
    /// For each `gpu` row: the `runtime` row with the same correlation id, if
    /// any. Several GPU rows may share one call (a `cudaGraphLaunch` replays
    /// many kernels under one correlation).
    pub gpu_launch: Vec<Option<CallRow>>,
    /// For each `runtime` row: the innermost `cpu_ops` row on the same thread
    /// whose range holds the call's start; failing that, the operator with
    /// the call's external id; else `None`.
    pub runtime_op: Vec<Option<OpRow>>,
    /// For each `runtime` row: how many GPU rows it launched.
    pub runtime_gpu_count: Vec<u32>,
}

impl Links {
    pub(super) fn build(
        gpu: &GpuActivityTable,
        runtime: &RuntimeCallTable,
        ops: &CpuOpTable,
        thread_start: &[u32],
    ) -> Links {
        let mut by_corr: FxHashMap<u64, CallRow> =
            FxHashMap::with_capacity_and_hasher(runtime.len(), Default::default());
        for i in (0..runtime.len()).rev() {
            if runtime.correlation[i] != 0 {
                // Iterating backwards keeps the earliest call for a duplicated id.
                by_corr.insert(runtime.correlation[i], CallRow::new(i));
            }
        }
        let mut runtime_gpu_count = vec![0u32; runtime.len()];
        let gpu_launch = (0..gpu.len())
            .map(|i| match gpu.correlation[i] {
                0 => None,
                c => by_corr.get(&c).map(|&r| {
                    runtime_gpu_count[r.index()] += 1;
                    r
                }),
            })
            .collect();

        // Kineto gives operators and runtime calls an "External id"; it is
        // the fallback when containment finds nothing (calls recorded on a
        // thread the operator did not run on).
        let mut by_ext: FxHashMap<u64, OpRow> = FxHashMap::default();
        for i in 0..ops.len() {
            if ops.external_id[i] != 0 && ops.kind[i] == CpuOpKind::Operator {
                by_ext.entry(ops.external_id[i]).or_insert(OpRow::new(i));
            }
        }
        let runtime_op = (0..runtime.len())
            .map(|r| {
                let contained = innermost_holding(ops, thread_start, runtime.thread[r], runtime.start[r]);
                if contained.is_some() || runtime.external_id[r] == 0 {
                    return contained;
                }
                by_ext.get(&runtime.external_id[r]).copied()
            })
            .collect();
        Links {
            gpu_launch,
            runtime_op,
            runtime_gpu_count,
        }
    }
}

/// The innermost op of `thread` with `start <= t < end`. Ops are in
/// preorder, so the last op starting at or before `t` is either that op or a
/// descendant of it: walk up from there.
pub(crate) fn innermost_holding(
    ops: &CpuOpTable,
    thread_start: &[u32],
    thread: ThreadId,
    t: i64,
) -> Option<OpRow> {
    let ti = thread.0 as usize;
    if ti + 1 >= thread_start.len() {
        return None;
    }
    let (lo, hi) = (thread_start[ti] as usize, thread_start[ti + 1] as usize);
    let k = lo + ops.start[lo..hi].partition_point(|&s| s <= t);
    if k == lo {
        return None;
    }
    let mut o = Some(OpRow::new(k - 1));
    while let Some(row) = o {
        if ops.end[row.index()] > t {
            return Some(row);
        }
        o = ops.parent[row.index()];
    }
    None
}

#[cfg(test)]
mod tests {
    use super::super::*;

    /// ```text
    /// thread 1: [step.......................................]
    ///             [aten::mm.......]      [aten::sum....]
    ///               [launch c=1]           (launch c=2 on thread 2,
    ///                                       external id of aten::sum)
    /// thread 2:                              [launch c=2]
    /// gpu:                  [k1 c=1]  [k1b c=1]     [k2 c=2]   [orphan c=9]
    /// ```
    #[test]
    fn links_by_correlation_containment_and_external_id() {
        let mut b = TraceBuilder::new();
        let t1 = b.thread(1, 1);
        let t2 = b.thread(1, 2);
        let names: Vec<StrId> = ["ProfilerStep#3", "aten::mm", "aten::sum", "cudaLaunchKernel", "k"]
            .iter()
            .map(|s| b.intern(s))
            .collect();
        b.push_cpu_op(CpuOp::new(t1, 0, 100, names[0], CpuOpKind::ProfilerStep));
        b.push_cpu_op(CpuOp::new(t1, 5, 30, names[1], CpuOpKind::Operator));
        let mut sum = CpuOp::new(t1, 40, 60, names[2], CpuOpKind::Operator);
        sum.external_id = 77;
        b.push_cpu_op(sum);
        b.push_runtime(RuntimeCall::new(t1, 10, 15, names[3], 1));
        let mut r2 = RuntimeCall::new(t2, 45, 50, names[3], 2);
        r2.external_id = 77;
        b.push_runtime(r2);
        b.push_gpu(GpuActivity::kernel(0, 7, 20, 25, names[4], 1));
        b.push_gpu(GpuActivity::kernel(0, 7, 26, 28, names[4], 1));
        b.push_gpu(GpuActivity::kernel(0, 7, 55, 58, names[4], 2));
        b.push_gpu(GpuActivity::kernel(0, 7, 60, 70, names[4], 9));
        let tr = b.finish();
        let call = |i| Some(CallRow::new(i));
        assert_eq!(tr.links.gpu_launch, vec![call(0), call(0), call(1), None]);
        assert_eq!(tr.links.runtime_gpu_count, vec![2, 1]);
        assert_eq!(tr.op_name(tr.links.runtime_op[0]), Some("aten::mm"));
        assert_eq!(tr.op_name(tr.links.runtime_op[1]), Some("aten::sum"));
    }

    #[test]
    fn a_call_between_operators_links_to_the_enclosing_step() {
        let mut b = TraceBuilder::new();
        let t = b.thread(1, 1);
        let step = b.intern("ProfilerStep#0");
        let op = b.intern("aten::add");
        let sync = b.intern("cudaDeviceSynchronize");
        b.push_cpu_op(CpuOp::new(t, 0, 100, step, CpuOpKind::ProfilerStep));
        b.push_cpu_op(CpuOp::new(t, 10, 20, op, CpuOpKind::Operator));
        b.push_runtime(RuntimeCall::new(t, 20, 30, sync, 0));
        let tr = b.finish();
        assert_eq!(tr.op_name(tr.links.runtime_op[0]), Some("ProfilerStep#0"));
    }
}

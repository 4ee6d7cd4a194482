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
use super::op_cursors::OpCursors;
use super::parallel::{both, PARALLEL_ROWS};
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
        // GPU rows to their calls on another thread, calls to their
        // operators here: neither reads what the other writes.
        let ((gpu_launch, runtime_gpu_count), mut runtime_op) = both(
            runtime.len() >= PARALLEL_ROWS,
            || {
                // (correlation, row) of every call that has one, sorted: a
                // lookup is a binary search, and the first of equal ids is
                // the earliest call (the one kept for a duplicated id). Half
                // the memory of a hash map. Ids mostly come in the calls'
                // time order, which the stable sort finds in runs.
                let mut by_corr: Vec<(u64, u32)> = Vec::with_capacity(runtime.len());
                by_corr.extend(
                    (0..runtime.len())
                        .filter(|&i| runtime.correlation[i] != 0)
                        .map(|i| (runtime.correlation[i], i as u32)),
                );
                by_corr.sort();
                let mut runtime_gpu_count = vec![0u32; runtime.len()];
                let gpu_launch: Vec<Option<CallRow>> = gpu
                    .correlation
                    .iter()
                    .map(|&c| {
                        if c == 0 {
                            return None;
                        }
                        let k = by_corr.partition_point(|&(id, _)| id < c);
                        match by_corr.get(k) {
                            Some(&(id, r)) if id == c => {
                                runtime_gpu_count[r as usize] += 1;
                                Some(CallRow::new(r as usize))
                            }
                            _ => None,
                        }
                    })
                    .collect();
                (gpu_launch, runtime_gpu_count)
            },
            || -> Vec<Option<OpRow>> {
                // Calls are in time order: each thread's cursor gallops
                // forward from its last answer.
                let mut cursors = OpCursors::over(thread_start);
                (0..runtime.len())
                    .map(|r| cursors.innermost_in(ops, thread_start, runtime.thread[r], runtime.start[r]))
                    .collect()
            },
        );

        // Kineto gives operators and runtime calls an "External id"; it is
        // the fallback when containment finds nothing (calls recorded on a
        // thread the operator did not run on): the first operator row with
        // the call's id.
        // The ids wanted are few (thousands) and the operators many: one
        // hash lookup per operator, after a range test that most skip.
        let mut first: FxHashMap<u64, Option<OpRow>> = (0..runtime.len())
            .filter(|&r| runtime_op[r].is_none() && runtime.external_id[r] != 0)
            .map(|r| (runtime.external_id[r], None))
            .collect();
        if let (Some(&lo), Some(&hi)) = (first.keys().min(), first.keys().max()) {
            for i in 0..ops.len() {
                let ext = ops.external_id[i];
                if (lo..=hi).contains(&ext) && ops.kind[i] == CpuOpKind::Operator {
                    if let Some(slot) = first.get_mut(&ext) {
                        slot.get_or_insert(OpRow::new(i));
                    }
                }
            }
            for (op, ext) in runtime_op.iter_mut().zip(&runtime.external_id) {
                if op.is_none() && *ext != 0 {
                    *op = first.get(ext).copied().flatten();
                }
            }
        }
        Links {
            gpu_launch,
            runtime_op,
            runtime_gpu_count,
        }
    }
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

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
use super::{Ns, Trace};

/// Row-index links, computed once by `TraceBuilder::finish`.
#[derive(Clone, Debug, Default)]
pub struct Links {
    /// For each `gpu` row: the `runtime` row with the same correlation id, if
    /// any; of several calls with that id, the latest that started at or
    /// before the row. Several GPU rows may share one call (a
    /// `cudaGraphLaunch` replays many kernels under one correlation).
    pub gpu_launch: Vec<Option<CallRow>>,
    /// For each `runtime` row: the innermost `cpu_ops` row on the same thread
    /// whose range holds the call's start; failing that, the operator with
    /// the call's external id; else `None`.
    pub runtime_op: Vec<Option<OpRow>>,
    /// For each `runtime` row: how many GPU rows it launched.
    pub runtime_gpu_count: Vec<u32>,
    /// GPU rows whose correlation id several calls share, linked by time.
    pub reused_correlation: u64,
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
        let ((gpu_launch, runtime_gpu_count, reused_correlation), mut runtime_op) = both(
            runtime.len() >= PARALLEL_ROWS,
            || {
                // (correlation, row) of every call that has one, sorted: a
                // lookup is a binary search. Rows are in start order, so the
                // calls sharing an id are in time order too. Half the memory
                // of a hash map. Ids mostly come in the calls' time order,
                // which the stable sort finds in runs.
                let mut by_corr: Vec<(u64, u32)> = Vec::with_capacity(runtime.len());
                by_corr.extend(
                    (0..runtime.len())
                        .filter(|&i| runtime.correlation[i] != 0)
                        .map(|i| (runtime.correlation[i], i as u32)),
                );
                by_corr.sort();
                let mut runtime_gpu_count = vec![0u32; runtime.len()];
                let mut reused = 0u64;
                let gpu_launch: Vec<Option<CallRow>> = gpu
                    .correlation
                    .iter()
                    .zip(&gpu.start)
                    .map(|(&c, &start)| {
                        if c == 0 {
                            return None;
                        }
                        let lo = by_corr.partition_point(|&(id, _)| id < c);
                        let calls = &by_corr[lo..lo + by_corr[lo..].partition_point(|&(id, _)| id == c)];
                        reused += u64::from(calls.len() > 1);
                        let r = launcher(calls, start, &runtime.start)?;
                        runtime_gpu_count[r as usize] += 1;
                        Some(CallRow::new(r as usize))
                    })
                    .collect();
                (gpu_launch, runtime_gpu_count, reused)
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
            reused_correlation,
        }
    }
}

/// Which of the `calls` (rows sharing one correlation id, in start order)
/// launched GPU work starting at `start`: the only one, or, when an id was
/// reused, the latest that started at or before the work, since work never
/// starts before its launch. When all started after the work (clock skew
/// between CPU and GPU), the first of them, the nearest.
fn launcher(calls: &[(u64, u32)], start: Ns, call_start: &[Ns]) -> Option<u32> {
    match calls {
        [] => None,
        [(_, r)] => Some(*r),
        _ => {
            let before = calls.partition_point(|&(_, r)| call_start[r as usize] <= start);
            Some(calls[before.saturating_sub(1)].1)
        }
    }
}

impl Trace {
    /// Links the rows again, after rows were left out: a link to a row that
    /// went finds the next best among the rows kept, as a trace of only
    /// those rows would be linked. The tables must be sorted as
    /// [`TraceBuilder::finish`](super::TraceBuilder::finish) leaves them,
    /// with `cpu_op_thread_start` set.
    pub fn relink(&mut self) {
        self.links = Links::build(&self.gpu, &self.runtime, &self.cpu_ops, &self.cpu_op_thread_start);
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

    /// ```text
    /// µs        0    10   20   30   40   50   60   70   80   90
    /// calls     [c5]      [c5]      [c5]           c6   c6   c7
    /// gpu        [k5]       [k5]    k5   [k6]               k7
    /// ```
    /// An id used by several calls links each row to the latest call that
    /// started at or before it; with every such call after the row (clock
    /// skew), to the first of them; a call alone with its id, whatever the
    /// times.
    #[test]
    fn a_reused_correlation_id_links_the_latest_call_before_the_work() {
        let t = Sketch::in_units(1_000)
            .call(0, 5, "cudaLaunchKernel", 5)
            .call(20, 25, "cudaLaunchKernel", 5)
            .call(40, 45, "cudaLaunchKernel", 5)
            .call(70, 72, "cudaLaunchKernel", 6)
            .call(80, 82, "cudaLaunchKernel", 6)
            .call(90, 92, "cudaLaunchKernel", 7)
            .kernel(7, 2, 8, 5)
            .kernel(7, 25, 30, 5)
            .kernel(7, 41, 45, 5)
            .kernel(7, 50, 55, 6)
            .kernel(7, 88, 89, 7)
            .finish();
        let call = |i| Some(CallRow::new(i));
        assert_eq!(
            t.links.gpu_launch,
            vec![call(0), call(1), call(2), call(3), call(5)]
        );
        assert_eq!(t.links.runtime_gpu_count, vec![1, 1, 1, 1, 0, 1]);
        assert_eq!(t.links.reused_correlation, 4);
        assert_eq!(t.diagnostics.counts[Diagnostics::CORRELATION_REUSED], 4);
    }
}

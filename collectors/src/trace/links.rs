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
        // (correlation, row) of every call that has one, sorted: a lookup is
        // a binary search, and the first of equal ids is the earliest call
        // (the one kept for a duplicated id). Half the memory of a hash map.
        let mut by_corr: Vec<(u64, u32)> = (0..runtime.len())
            .filter(|&i| runtime.correlation[i] != 0)
            .map(|i| (runtime.correlation[i], i as u32))
            .collect();
        by_corr.sort_unstable();
        // GPU rows to their calls here, calls to their operators on another
        // thread: neither reads what the other writes.
        let ((gpu_launch, runtime_gpu_count), mut runtime_op) = both(
            runtime.len() >= PARALLEL_ROWS,
            || {
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
                let mut holding = Holding::new(ops, thread_start);
                (0..runtime.len())
                    .map(|r| holding.innermost(runtime.thread[r], runtime.start[r]))
                    .collect()
            },
        );
        drop(by_corr);

        // Kineto gives operators and runtime calls an "External id"; it is
        // the fallback when containment finds nothing (calls recorded on a
        // thread the operator did not run on): the first operator row with
        // the call's id.
        let mut wanted: Vec<u64> = (0..runtime.len())
            .filter(|&r| runtime_op[r].is_none() && runtime.external_id[r] != 0)
            .map(|r| runtime.external_id[r])
            .collect();
        if !wanted.is_empty() {
            wanted.sort_unstable();
            wanted.dedup();
            let mut first: Vec<Option<OpRow>> = vec![None; wanted.len()];
            for i in 0..ops.len() {
                if ops.external_id[i] != 0 && ops.kind[i] == CpuOpKind::Operator {
                    if let Ok(k) = wanted.binary_search(&ops.external_id[i]) {
                        first[k].get_or_insert(OpRow::new(i));
                    }
                }
            }
            for (op, &ext) in runtime_op.iter_mut().zip(&runtime.external_id) {
                if op.is_none() && ext != 0 {
                    if let Ok(k) = wanted.binary_search(&ext) {
                        *op = first[k];
                    }
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

/// Finds the innermost operator holding a time on a thread, for calls met
/// in time order: each thread keeps where its last search ended, so the
/// next one gallops forward from there instead of searching all the
/// thread's operators (millions of calls, each a binary search over
/// millions of operators, was the longest step of the import's end).
pub(crate) struct Holding<'t> {
    ops: &'t CpuOpTable,
    thread_start: &'t [u32],
    /// Per thread: the number of its operators (from its first) that start
    /// at or before the last time asked about.
    seen: Vec<u32>,
}

impl<'t> Holding<'t> {
    pub(crate) fn new(ops: &'t CpuOpTable, thread_start: &'t [u32]) -> Holding<'t> {
        let seen = thread_start
            .iter()
            .take(thread_start.len().saturating_sub(1))
            .copied()
            .collect();
        Holding {
            ops,
            thread_start,
            seen,
        }
    }

    /// The innermost op of `thread` with `start <= t < end`. Ops are in
    /// preorder, so the last op starting at or before `t` is either that
    /// op or a descendant of it: walk up from there. Any order of asking is
    /// answered exactly; time order is the fast one.
    pub(crate) fn innermost(&mut self, thread: ThreadId, t: i64) -> Option<OpRow> {
        let ti = thread.0 as usize;
        if ti + 1 >= self.thread_start.len() {
            return None;
        }
        let (lo, hi) = (self.thread_start[ti] as usize, self.thread_start[ti + 1] as usize);
        let starts = &self.ops.start[..hi];
        let from = self.seen[ti] as usize;
        let k = if from > lo && starts[from - 1] > t {
            // Asked about an earlier time: search from the thread's start.
            lo + starts[lo..from].partition_point(|&s| s <= t)
        } else {
            gallop(starts, from, t)
        };
        self.seen[ti] = k as u32;
        if k == lo {
            return None;
        }
        let mut o = Some(OpRow::new(k - 1));
        while let Some(row) = o {
            if self.ops.end[row.index()] > t {
                return Some(row);
            }
            o = self.ops.parent[row.index()];
        }
        None
    }
}

/// The end of the run of `starts[from..]` that are at most `t`, given
/// `starts` is sorted: steps of 1, 2, 4, ... then a binary search within
/// the last step, so a short way costs a few reads.
fn gallop(starts: &[i64], from: usize, t: i64) -> usize {
    let (mut at, mut step) = (from, 1);
    while at + step <= starts.len() && starts[at + step - 1] <= t {
        at += step;
        step *= 2;
    }
    let bound = (at + step - 1).min(starts.len());
    at + starts[at..bound].partition_point(|&s| s <= t)
}

#[cfg(test)]
mod tests {
    use super::super::*;
    use super::Holding;

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

    /// The innermost holding operator, found by looking at every one.
    fn innermost_by_scan(tr: &Trace, thread: ThreadId, t: i64) -> Option<OpRow> {
        let ops = &tr.cpu_ops;
        (0..ops.len())
            .filter(|&i| ops.thread[i] == thread && ops.start[i] <= t && t < ops.end[i])
            .max_by_key(|&i| (ops.start[i], std::cmp::Reverse(ops.end[i]), i))
            .map(OpRow::new)
    }

    /// ```text
    /// thread 1: [step 0..1000...........................................]
    ///             [op ][op ][op ]...  each with a child   (100 ops)
    /// thread 2:        [op 30..60]    [op 500..900 [op 600..700]]
    /// ```
    /// Asked in time order (the import's way), backwards, and in a
    /// scrambled order, with times on every edge: the same answers as a
    /// scan of every operator.
    #[test]
    fn holding_gallops_forward_and_answers_any_order_exactly() {
        let mut b = TraceBuilder::new();
        let t1 = b.thread(1, 1);
        let t2 = b.thread(1, 2);
        let t3 = b.thread(1, 3);
        let n = b.intern("op");
        b.push_cpu_op(CpuOp::new(t1, 0, 1000, n, CpuOpKind::ProfilerStep));
        for i in 0..100 {
            b.push_cpu_op(CpuOp::new(t1, 5 + 9 * i, 12 + 9 * i, n, CpuOpKind::Operator));
            b.push_cpu_op(CpuOp::new(t1, 7 + 9 * i, 9 + 9 * i, n, CpuOpKind::Operator));
        }
        b.push_cpu_op(CpuOp::new(t2, 30, 60, n, CpuOpKind::Operator));
        b.push_cpu_op(CpuOp::new(t2, 500, 900, n, CpuOpKind::Operator));
        b.push_cpu_op(CpuOp::new(t2, 600, 700, n, CpuOpKind::Operator));
        let tr = b.finish();
        let origin = tr.meta.origin_ns;
        let mut asks: Vec<(ThreadId, i64)> = Vec::new();
        for t in -3..1010 {
            for th in [t1, t2, t3] {
                asks.push((th, t - origin));
            }
        }
        let expect: Vec<Option<OpRow>> = asks
            .iter()
            .map(|&(th, t)| innermost_by_scan(&tr, th, t))
            .collect();
        assert!(expect.iter().filter(|o| o.is_some()).count() > 1000);
        let ask_all = |order: &[usize]| {
            let mut h = Holding::new(&tr.cpu_ops, &tr.cpu_op_thread_start);
            for &i in order {
                let (th, t) = asks[i];
                assert_eq!(h.innermost(th, t), expect[i], "thread {th:?} at {t}");
            }
        };
        let forward: Vec<usize> = (0..asks.len()).collect();
        ask_all(&forward);
        ask_all(&forward.iter().rev().copied().collect::<Vec<_>>());
        let scrambled: Vec<usize> = (0..asks.len()).map(|i| i * 7919 % asks.len()).collect();
        ask_all(&scrambled);
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

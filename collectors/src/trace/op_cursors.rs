//! The innermost CPU range of a thread at a time: by one binary search
//! ([`innermost_op`]), or through cursors that gallop forward from the last
//! answer ([`OpCursors`]) when the times come in order, as a table's rows
//! or a device's gaps do.

use super::rows::OpRow;
use super::tables::{CpuOpTable, ThreadId};
use super::{Ns, Trace};

/// The innermost `cpu_ops` row of `thread` whose range holds `t`
/// (`start <= t < end`), if any. Rows are in preorder per thread, so the
/// last row starting at or before `t` is that row or a descendant of it:
/// walk up from there.
pub fn innermost_op(trace: &Trace, thread: ThreadId, t: Ns) -> Option<OpRow> {
    if thread.0 as usize + 1 >= trace.cpu_op_thread_start.len() {
        return None;
    }
    let range = trace.cpu_ops_of(thread);
    let ops = &trace.cpu_ops;
    let k = range.start + ops.start[range.clone()].partition_point(|&s| s <= t);
    if k == range.start {
        return None;
    }
    enclosing(ops, OpRow::new(k - 1), t)
}

/// `row` or its nearest ancestor that is still open at `t`.
fn enclosing(ops: &CpuOpTable, row: OpRow, t: Ns) -> Option<OpRow> {
    let mut o = Some(row);
    while let Some(r) = o {
        if ops.end[r.index()] > t {
            break;
        }
        o = ops.parent[r.index()];
    }
    o
}

/// Finds the innermost range of a thread at increasing times, galloping
/// forward from the last answer instead of a full binary search each time
/// (a search over millions of rows costs a cache miss per level; gaps and
/// calls are visited in time order, so the next answer is usually a few
/// rows ahead). Any order of asking is answered exactly; time order is the
/// fast one.
#[derive(Clone, Debug)]
pub struct OpCursors {
    /// Per thread: the first row (global index) starting after the last
    /// time sought.
    pos: Vec<usize>,
}

impl OpCursors {
    /// Cursors at the start of every thread of `trace`.
    pub fn new(trace: &Trace) -> Self {
        Self::over(&trace.cpu_op_thread_start)
    }

    /// Cursors at the start of every thread, whose rows begin at
    /// `thread_start` (a [`Trace::cpu_op_thread_start`] before the trace
    /// is made).
    pub(crate) fn over(thread_start: &[u32]) -> Self {
        OpCursors {
            pos: thread_start[..thread_start.len().saturating_sub(1)]
                .iter()
                .map(|&s| s as usize)
                .collect(),
        }
    }

    /// The first row of `thread` (global index) whose start is after `t`;
    /// `None` for a thread with no rows table entry.
    pub fn seek(&mut self, trace: &Trace, thread: ThreadId, t: Ns) -> Option<usize> {
        self.seek_in(&trace.cpu_ops.start, &trace.cpu_op_thread_start, thread, t)
    }

    /// Like [`innermost_op`], through the cursor of `thread`.
    pub fn innermost(&mut self, trace: &Trace, thread: ThreadId, t: Ns) -> Option<OpRow> {
        self.innermost_in(&trace.cpu_ops, &trace.cpu_op_thread_start, thread, t)
    }

    /// [`OpCursors::seek`] over the rows' `starts`, each thread's from
    /// `thread_start`.
    fn seek_in(&mut self, starts: &[Ns], thread_start: &[u32], thread: ThreadId, t: Ns) -> Option<usize> {
        let ti = thread.0 as usize;
        let pos = self.pos.get_mut(ti)?;
        let range = thread_start[ti] as usize..thread_start[ti + 1] as usize;
        if *pos > range.start && starts[*pos - 1] > t {
            // Moved back in time: start over.
            *pos = range.start + starts[range.clone()].partition_point(|&s| s <= t);
            return Some(*pos);
        }
        let (mut lo, end, mut step) = (*pos, range.end, 1);
        while lo < end && starts[lo] <= t {
            let probe = (lo + step).min(end);
            if probe < end && starts[probe] <= t {
                lo = probe + 1;
                step *= 2;
            } else {
                lo = lo + 1 + starts[lo + 1..probe].partition_point(|&s| s <= t);
                break;
            }
        }
        *pos = lo;
        Some(lo)
    }

    /// [`OpCursors::innermost`] over the table `ops`, each thread's rows
    /// from `thread_start`.
    pub(crate) fn innermost_in(
        &mut self,
        ops: &CpuOpTable,
        thread_start: &[u32],
        thread: ThreadId,
        t: Ns,
    ) -> Option<OpRow> {
        let k = self.seek_in(&ops.start, thread_start, thread, t)?;
        if k == thread_start[thread.0 as usize] as usize {
            return None;
        }
        enclosing(ops, OpRow::new(k - 1), t)
    }
}

#[cfg(test)]
mod tests {
    use super::super::*;

    #[test]
    fn cursor_agrees_with_binary_search() {
        let mut b = TraceBuilder::new();
        b.set_origin(0);
        let t = b.thread(1, 1);
        let u = b.thread(1, 2);
        let n = b.intern("aten::x");
        for i in 0..200 {
            b.push_cpu_op(CpuOp::new(t, i * 10, i * 10 + 5, n, CpuOpKind::Operator));
            b.push_cpu_op(CpuOp::new(t, i * 10 + 1, i * 10 + 3, n, CpuOpKind::Operator));
        }
        b.push_cpu_op(CpuOp::new(u, 0, 1, n, CpuOpKind::Operator));
        let tr = b.finish();
        let mut c = OpCursors::new(&tr);
        let times = (0..2100).step_by(3).chain([700, 5, 1999, 0, -1, 3000]);
        for time in times {
            assert_eq!(
                c.innermost(&tr, t, time),
                innermost_op(&tr, t, time),
                "t = {time}"
            );
            assert_eq!(
                c.innermost(&tr, u, time),
                innermost_op(&tr, u, time),
                "t = {time}"
            );
        }
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
    /// thread 3: (no operators)
    /// ```
    /// Asked in time order (the import's way), backwards, and in a
    /// scrambled order, with times on every edge: the same answers as a
    /// scan of every operator.
    #[test]
    fn cursors_answer_any_order_exactly() {
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
            let mut c = OpCursors::new(&tr);
            for &i in order {
                let (th, t) = asks[i];
                assert_eq!(c.innermost(&tr, th, t), expect[i], "thread {th:?} at {t}");
            }
        };
        let forward: Vec<usize> = (0..asks.len()).collect();
        ask_all(&forward);
        ask_all(&forward.iter().rev().copied().collect::<Vec<_>>());
        let scrambled: Vec<usize> = (0..asks.len()).map(|i| i * 7919 % asks.len()).collect();
        ask_all(&scrambled);
    }
}

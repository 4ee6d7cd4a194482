//! Device-level idle gaps: the maximal intervals of a window where no
//! kernel, memcpy or memset runs on any stream of one GPU.
//!
//! ```text
//! window          |<------------------------------------------------>|
//! stream 7        |   [k1......]        [k3...]                      |
//! stream 9        |        [k2.......]            [m1]               |
//! busy (union)    |   [..............]  [.....]   [..]               |
//! gaps            [..]                [.]      [..]    [.............]
//!                 ^ leading gap                        ^ trailing gap
//! ```
//!
//! Sync records ([`GpuKind::Sync`](gapscope_collectors::trace::GpuKind)) are
//! waits, not work: they never make a device busy. Each [`Gap`] also names
//! the busy row that ended just before it and the row that starts right after
//! it (even outside the window), because the causes of a gap are read from the
//! CPU thread that launched the next work.

use crate::intervals::Span;
use gapscope_collectors::trace::{GpuRow, Ns, Trace};

/// One maximal idle interval of a device inside a window.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Gap {
    /// Start, ns (inclusive).
    pub start: Ns,
    /// End, ns (exclusive).
    pub end: Ns,
    /// The `gpu` row whose end is the last busy instant before the gap;
    /// `None` when nothing ran on the device before it.
    pub prev_row: Option<GpuRow>,
    /// The `gpu` row that starts when the device becomes busy again; `None`
    /// when nothing runs after the gap. Among rows starting at the same
    /// instant, one with a known launch call is preferred, the earliest
    /// launched first.
    pub next_row: Option<GpuRow>,
}

impl Gap {
    /// Length in ns.
    pub fn dur(&self) -> Ns {
        self.end - self.start
    }
}

/// The busy `gpu` rows of `device` (kernels, copies, memsets), in start order.
pub fn busy_rows(trace: &Trace, device: u32) -> Vec<GpuRow> {
    let g = &trace.gpu;
    (0..g.len())
        .filter(|&i| g.device[i] == device && g.is_busy(i))
        .map(GpuRow::new)
        .collect()
}

/// The gaps of `device` inside `window`, in time order. Their total is the
/// window minus the union of the device's busy rows, exactly.
pub fn device_gaps(trace: &Trace, device: u32, window: Span) -> Vec<Gap> {
    let rows = busy_rows(trace, device);
    all_gaps(trace, &rows)
        .into_iter()
        .filter_map(|g| clip_gap(g, window))
        .collect()
}

/// Gaps over all time, from `Ns::MIN` before the first row to `Ns::MAX`
/// after the last, for `rows` sorted by start.
fn all_gaps(trace: &Trace, rows: &[GpuRow]) -> Vec<Gap> {
    let g = &trace.gpu;
    let mut out = Vec::new();
    let (mut busy_until, mut prev_row) = (Ns::MIN, None);
    let mut i = 0;
    while i < rows.len() {
        let start = g.start[rows[i].index()];
        if start > busy_until {
            let next_row = Some(best_next(trace, rows, i));
            out.push(Gap {
                start: busy_until,
                end: start,
                prev_row,
                next_row,
            });
        }
        // Extend over every row starting at this instant before looking for
        // the next gap, so `best_next` saw all of them.
        while i < rows.len() && g.start[rows[i].index()] == start {
            let r = rows[i].index();
            if g.end[r] > busy_until {
                (busy_until, prev_row) = (g.end[r], Some(rows[i]));
            }
            i += 1;
        }
    }
    out.push(Gap {
        start: busy_until,
        end: Ns::MAX,
        prev_row,
        next_row: None,
    });
    out
}

/// Among the rows starting where `rows[i]` starts, the one launched
/// earliest (rows with no launch call last).
fn best_next(trace: &Trace, rows: &[GpuRow], i: usize) -> GpuRow {
    let g = &trace.gpu;
    let start = g.start[rows[i].index()];
    let launch_start =
        |r: GpuRow| trace.links.gpu_launch[r.index()].map_or(Ns::MAX, |c| trace.runtime.start[c.index()]);
    rows[i..]
        .iter()
        .take_while(|&&r| g.start[r.index()] == start)
        .copied()
        .min_by_key(|&r| launch_start(r))
        .unwrap_or(rows[i])
}

fn clip_gap(g: Gap, (ws, we): Span) -> Option<Gap> {
    let (s, e) = (g.start.max(ws), g.end.min(we));
    (e > s).then_some(Gap {
        start: s,
        end: e,
        ..g
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use gapscope_collectors::trace::*;

    /// ```text
    /// ns        0    10   20   30   40   50   60   70   80   90   100
    /// window         |<------------------------------------------>|
    /// stream 7            [k1......]         [k3.]
    /// stream 9                 [k2.......]
    /// sync rec                                      [sync...]
    /// gaps           [....]              [..]    [................]
    /// ```
    #[test]
    fn gaps_are_the_union_complement_and_ignore_sync_records() {
        let t = Sketch::new()
            .kernel(7, 20, 35, 1)
            .kernel(9, 25, 45, 2)
            .kernel(7, 50, 55, 3)
            .sync_record("Stream Sync", 7, 60, 70, 4)
            .on_device(1)
            .kernel(7, 0, 100, 5)
            .finish();
        let gaps: Vec<_> = device_gaps(&t, 0, (10, 100))
            .iter()
            .map(|g| (g.start, g.end, g.prev_row, g.next_row))
            .collect();
        // Rows sorted by start: 0:dev1 k, 1:k1, 2:k2, 3:k3, 4:sync.
        let row = |i| Some(GpuRow::new(i));
        assert_eq!(
            gaps,
            vec![
                (10, 20, None, row(1)),
                (45, 50, row(2), row(3)),
                (55, 100, row(3), None)
            ]
        );
    }
}

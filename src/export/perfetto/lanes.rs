//! Turning intervals into BEGIN/END events that the trace processor rebuilds
//! exactly.
//!
//! Two rules of Perfetto's trace processor drive this file:
//! - an END closes the most recent open slice on its track, so two slices
//!   that overlap without nesting get reshaped silently: we
//!   spread them over *lanes*, extra tracks in which everything nests;
//! - at an equal timestamp on one track, ENDs must come before BEGINs,
//!   and a zero-length slice is BEGIN then END right away.

/// An interval of some table, by item index.
pub trait Intervals {
    /// Start of item `i` (ns).
    fn start(&self, i: u32) -> i64;
    /// End of item `i` (ns, `>= start`).
    fn end(&self, i: u32) -> i64;
}

/// One slice edge on a lane, in emission order: the item, with
/// [`Edge::END`] set for an END. Its time is the item's start or end
/// ([`Edge::ts`]), read from the items rather than stored: a big trace has
/// millions of edges, and four bytes each instead of sixteen keep them
/// cheap.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Edge {
    /// The item, with [`Edge::END`] set for an END.
    pub code: u32,
}

impl Edge {
    /// Flag bit of an END edge.
    pub const END: u32 = 1 << 31;

    /// The item this edge belongs to.
    pub fn item(self) -> u32 {
        self.code & !Self::END
    }

    /// True for an END edge.
    pub fn is_end(self) -> bool {
        self.code & Self::END != 0
    }

    /// Its time: the item's end for an END, else its start.
    #[inline]
    pub fn ts<I: Intervals>(self, items: &I) -> i64 {
        if self.is_end() {
            items.end(self.item())
        } else {
            items.start(self.item())
        }
    }
}

/// Splits `order` (items sorted by start ascending, end descending, outer
/// kind first) into lanes in which every item either follows or nests in
/// the ones before it. Greedy: an item goes to the first lane that takes it,
/// so a well-nested track stays one lane.
pub fn assign<I: Intervals>(items: &I, order: &[u32]) -> Vec<Vec<u32>> {
    let mut lanes: Vec<Vec<u32>> = Vec::new();
    let mut stacks: Vec<Vec<u32>> = Vec::new();
    for &i in order {
        let (s, e) = (items.start(i), items.end(i));
        let mut placed = false;
        for (lane, stack) in lanes.iter_mut().zip(stacks.iter_mut()) {
            // `end <= s` has ended: a zero-length slice at `s` and a slice
            // ending at `s` are siblings of this one, not parents.
            while stack.last().is_some_and(|&t| items.end(t) <= s) {
                stack.pop();
            }
            if stack.last().is_none_or(|&t| items.end(t) >= e) {
                stack.push(i);
                lane.push(i);
                placed = true;
                break;
            }
        }
        if !placed {
            lanes.push(vec![i]);
            stacks.push(vec![i]);
        }
    }
    lanes
}

/// The BEGIN/END edges of one lane (as made by [`assign`]), in the order
/// to emit them: time ascending, ENDs before BEGINs at equal times.
pub fn edges<I: Intervals>(items: &I, lane: &[u32]) -> Vec<Edge> {
    let mut out = Vec::with_capacity(lane.len() * 2);
    let mut stack: Vec<u32> = Vec::new();
    for &i in lane {
        let s = items.start(i);
        while let Some(&t) = stack.last() {
            if items.end(t) > s {
                break;
            }
            stack.pop();
            out.push(Edge { code: t | Edge::END });
        }
        out.push(Edge { code: i });
        stack.push(i);
    }
    while let Some(t) = stack.pop() {
        out.push(Edge { code: t | Edge::END });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    struct V(Vec<(i64, i64)>);
    impl Intervals for V {
        fn start(&self, i: u32) -> i64 {
            self.0[i as usize].0
        }
        fn end(&self, i: u32) -> i64 {
            self.0[i as usize].1
        }
    }

    fn sorted(v: &V) -> Vec<u32> {
        let mut o: Vec<u32> = (0..v.0.len() as u32).collect();
        o.sort_by_key(|&i| (v.start(i), std::cmp::Reverse(v.end(i))));
        o
    }

    #[test]
    fn overlapping_items_get_a_second_lane_nested_ones_do_not() {
        // A 0-100, B 50-150 (overlaps A), C 10-20 (in A), D 60-70 (in A and B).
        let v = V(vec![(0, 100), (50, 150), (10, 20), (60, 70)]);
        let lanes = assign(&v, &sorted(&v));
        assert_eq!(lanes, vec![vec![0, 2, 3], vec![1]]);
    }

    #[test]
    fn ends_come_before_begins_at_equal_times_and_zero_length_closes_at_once() {
        // A 0-10, B 10-20, Z 10-10 (zero length), Y 20-20.
        let v = V(vec![(0, 10), (10, 20), (10, 10), (20, 20)]);
        let lanes = assign(&v, &sorted(&v));
        assert_eq!(lanes.len(), 1);
        let e: Vec<(i64, u32, bool)> = edges(&v, &lanes[0])
            .iter()
            .map(|e| (e.ts(&v), e.item(), e.is_end()))
            .collect();
        assert_eq!(
            e,
            vec![
                (0, 0, false),
                (10, 0, true),
                (10, 1, false),
                (10, 2, false), // Z nests in B at B's start...
                (10, 2, true),  // ...and ends at once
                (20, 1, true),
                (20, 3, false),
                (20, 3, true),
            ]
        );
    }
}

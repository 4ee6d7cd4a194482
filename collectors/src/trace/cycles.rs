//! Reordering a table's columns in place: a permutation as its cycles,
//! applied to each column by swaps along them. Gathering each column into
//! a new one instead wrote every column of a big table to fresh pages: a
//! page fault per 4 KiB, a quarter of an import's faults.

/// The cycles of a permutation, each as the positions it visits; fixed
/// points left out (a table that is almost in order has few cycles).
pub(super) struct Cycles {
    /// The positions of every cycle, one cycle after another.
    walk: Vec<u32>,
    /// Where each cycle ends in `walk`.
    ends: Vec<u32>,
}

impl Cycles {
    /// The cycles of `order`, a permutation of `0..order.len()`: new
    /// position `i` takes the element at old position `order[i]`.
    pub(super) fn of(order: &[u32]) -> Cycles {
        let mut seen = vec![false; order.len()];
        let (mut walk, mut ends) = (Vec::new(), Vec::new());
        for start in 0..order.len() {
            if seen[start] || order[start] as usize == start {
                continue;
            }
            let mut at = start;
            while !seen[at] {
                seen[at] = true;
                walk.push(at as u32);
                at = order[at] as usize;
            }
            debug_assert_eq!(at, start, "not a permutation");
            ends.push(walk.len() as u32);
        }
        Cycles { walk, ends }
    }

    /// Reorders `column` so that new position `i` holds what old position
    /// `order[i]` held. Along a cycle `p0 -> p1 -> ... -> pk` (each the
    /// source of the one before), swapping each position with the next
    /// moves every element one step back and the first to the last.
    pub(super) fn apply<T>(&self, column: &mut [T]) {
        let mut from = 0;
        for &end in &self.ends {
            let cycle = &self.walk[from..end as usize];
            for pair in cycle.windows(2) {
                column.swap(pair[0] as usize, pair[1] as usize);
            }
            from = end as usize;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Cycles;

    /// Every permutation of 0..5 and a long scrambled one: the same as
    /// gathering into a new column.
    #[test]
    fn applying_the_cycles_is_gathering() {
        fn check(order: &[u32]) {
            let column: Vec<u64> = (0..order.len() as u64).map(|i| i * 10 + 7).collect();
            let gathered: Vec<u64> = order.iter().map(|&i| column[i as usize]).collect();
            let mut swapped = column.clone();
            Cycles::of(order).apply(&mut swapped);
            assert_eq!(swapped, gathered, "order {order:?}");
        }
        fn all(prefix: &mut Vec<u32>, n: u32) {
            if prefix.len() == n as usize {
                check(prefix);
                return;
            }
            for i in 0..n {
                if !prefix.contains(&i) {
                    prefix.push(i);
                    all(prefix, n);
                    prefix.pop();
                }
            }
        }
        for n in 0..=5 {
            all(&mut Vec::new(), n);
        }
        let n = 10_007u32;
        check(&(0..n).map(|i| (i * 7919 + 13) % n).collect::<Vec<_>>());
        check(&(0..n).rev().collect::<Vec<_>>());
    }
}

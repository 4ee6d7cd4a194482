//! Claiming pieces: a piece of idle time belongs to at most one primary
//! finding, claimed in the order `detect_device` runs the detectors; and
//! grouping what one detector claimed into findings.

use super::context::Cx;
use super::pieces::Piece;
use crate::causes::Cause;
use crate::intervals::Span;
use gapscope_collectors::trace::{FxHashMap, Ns};
use std::collections::HashMap;

/// TraceLens's idle noise floor: shorter pieces are not worth a finding on
/// their own.
pub(crate) const NOISE_NS: Ns = 5_000;

impl Cx<'_> {
    /// Claims every unclaimed piece for which `pred` holds.
    pub fn take(&self, claims: &mut [bool], pred: impl Fn(&Piece) -> bool) -> Vec<u32> {
        let mut out = Vec::new();
        for (i, claimed) in claims.iter_mut().enumerate().take(self.n_pieces()) {
            if !*claimed && pred(&self.piece(i)) {
                *claimed = true;
                out.push(i as u32);
            }
        }
        out
    }

    /// Claims every unclaimed piece for which `pred` holds, where `pred`
    /// holds only of pieces with a call, a blocking call or a class (it
    /// reads one of them): only the pieces kept whole are read, not every
    /// piece. The same as [`take`](Self::take) with such a `pred`; debug
    /// builds check that.
    pub fn take_kept(&self, claims: &mut [bool], pred: impl Fn(&Piece) -> bool) -> Vec<u32> {
        debug_assert!(
            (0..self.n_pieces())
                .filter(|&i| self.pieces.is_whole(i))
                .all(|i| !pred(&self.piece(i))),
            "take_kept's predicate holds of a piece without a call"
        );
        let mut out = Vec::new();
        for (i, p) in self.pieces.kept() {
            if !claims[i] && pred(p) {
                claims[i] = true;
                out.push(i as u32);
            }
        }
        out
    }

    /// Claims every unclaimed piece of one of `causes` for which `pred`
    /// holds, reading only the pieces of those causes.
    pub fn take_of(&self, claims: &mut [bool], causes: &[Cause], pred: impl Fn(&Piece) -> bool) -> Vec<u32> {
        let mut out = Vec::new();
        for (i, c) in self.pieces.causes().iter().enumerate() {
            if causes.contains(c) && !claims[i] && pred(&self.piece(i)) {
                claims[i] = true;
                out.push(i as u32);
            }
        }
        out
    }

    /// Claims the unclaimed pieces inside `span` for which `pred` holds.
    pub fn take_in(&self, claims: &mut [bool], (s, e): Span, pred: impl Fn(&Piece) -> bool) -> Vec<u32> {
        let first = self.piece_partition_point(|p| p.start < s);
        let mut out = Vec::new();
        for (i, claimed) in claims.iter_mut().enumerate().take(self.n_pieces()).skip(first) {
            let p = self.piece(i);
            if p.start >= e {
                break;
            }
            if p.end <= e && !*claimed && pred(&p) {
                *claimed = true;
                out.push(i as u32);
            }
        }
        out
    }

    /// Groups pieces by `key`, largest idle first.
    pub fn groups_all(&self, pieces: Vec<u32>, key: impl Fn(&Piece) -> String) -> Vec<(String, Vec<u32>)> {
        self.groups_by_index(pieces, |i| key(&self.piece(i)))
    }

    /// Groups pieces by `key` of their index, largest idle first.
    pub fn groups_by_index(&self, pieces: Vec<u32>, key: impl Fn(u32) -> String) -> Vec<(String, Vec<u32>)> {
        let mut by: HashMap<String, Vec<u32>> = HashMap::new();
        for i in pieces {
            by.entry(key(i)).or_default().push(i);
        }
        self.largest_first(by)
    }

    /// Groups pieces by a cheap key, each group named by `label(key)` (keys
    /// with one label make one group), largest idle first, then by label:
    /// what [`groups_by_index`](Self::groups_by_index) gives with the label
    /// as the key, without making a string per piece. `keyed` holds the
    /// pieces in ascending order, as [`take`](Self::take) returns them.
    pub fn groups_by_label<K: std::hash::Hash + Eq + Clone>(
        &self,
        keyed: impl IntoIterator<Item = (K, u32)>,
        label: impl Fn(&K) -> String,
    ) -> Vec<(String, Vec<u32>)> {
        // Pieces by key, in order of each key's first piece; runs of pieces
        // share a key, so a run is looked up once.
        let mut at: FxHashMap<K, usize> = FxHashMap::default();
        let mut by: Vec<(K, Vec<u32>)> = Vec::new();
        let mut last: Option<(K, usize)> = None;
        for (k, i) in keyed {
            let n = match &last {
                Some((key, n)) if *key == k => *n,
                _ => {
                    let n = *at.entry(k.clone()).or_insert_with(|| {
                        by.push((k.clone(), Vec::new()));
                        by.len() - 1
                    });
                    last = Some((k, n));
                    n
                }
            };
            by[n].1.push(i);
        }
        let mut named: HashMap<String, Vec<u32>> = HashMap::new();
        for (k, v) in by {
            let group = named.entry(label(&k)).or_default();
            // Moved, not copied, unless keys share a label (a group can
            // hold millions of pieces).
            if group.is_empty() {
                *group = v;
            } else {
                group.extend(v);
                group.sort_unstable();
            }
        }
        self.largest_first(named)
    }

    /// The groups, largest idle first, then by name. Each group's total is
    /// summed once, not once per comparison (a trace with many small
    /// groups spent seconds summing here).
    fn largest_first(&self, by: HashMap<String, Vec<u32>>) -> Vec<(String, Vec<u32>)> {
        let mut groups: Vec<(Ns, String, Vec<u32>)> =
            by.into_iter().map(|(k, v)| (self.total(&v), k, v)).collect();
        groups.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
        groups.into_iter().map(|(_, k, v)| (k, v)).collect()
    }

    /// Runs of consecutive `pieces` (indices) with one `key`: each run's
    /// first piece and its summed idle time. Pieces of one segment follow
    /// each other and say the same, so weighing runs gives what weighing
    /// each piece gives, with one lookup per run (a group can hold
    /// millions of pieces).
    pub fn runs<'s, K: PartialEq>(
        &'s self,
        pieces: &'s [u32],
        key: impl Fn(&Piece) -> K + 's,
    ) -> impl Iterator<Item = (Piece, Ns)> + 's {
        let mut k = 0;
        std::iter::from_fn(move || {
            let first = self.piece(*pieces.get(k)?);
            let want = key(&first);
            let mut idle = 0;
            while let Some(q) = pieces.get(k).map(|&i| self.piece(i)).filter(|q| key(q) == want) {
                idle += q.dur();
                k += 1;
            }
            Some((first, idle))
        })
    }

    /// Distinct values of `f` over pieces (for occurrence counts).
    pub fn distinct<K: Ord>(&self, pieces: &[u32], f: impl Fn(&Piece) -> K) -> u64 {
        let mut v: Vec<K> = pieces.iter().map(|&i| f(&self.piece(i))).collect();
        v.sort_unstable();
        v.dedup();
        v.len() as u64
    }
}

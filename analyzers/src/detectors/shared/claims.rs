//! Claiming pieces: a piece of idle time belongs to at most one primary
//! finding, claimed in the order `detect_device` runs the detectors; and
//! grouping what one detector claimed into findings.

use super::context::Cx;
use super::pieces::Piece;
use crate::intervals::Span;
use gapscope_collectors::trace::Ns;
use std::collections::HashMap;

/// TraceLens's idle noise floor: shorter pieces are not worth a finding on
/// their own.
pub(crate) const NOISE_NS: Ns = 5_000;

impl Cx<'_> {
    /// Claims every unclaimed piece for which `pred` holds.
    pub fn take(&self, claims: &mut [bool], pred: impl Fn(&Piece) -> bool) -> Vec<usize> {
        let mut out = Vec::new();
        for (i, p) in self.pieces.iter().enumerate() {
            if !claims[i] && pred(p) {
                claims[i] = true;
                out.push(i);
            }
        }
        out
    }

    /// Claims the unclaimed pieces inside `span` for which `pred` holds.
    pub fn take_in(&self, claims: &mut [bool], (s, e): Span, pred: impl Fn(&Piece) -> bool) -> Vec<usize> {
        let first = self.pieces.partition_point(|p| p.start < s);
        let mut out = Vec::new();
        for (i, p) in self.pieces.iter().enumerate().skip(first) {
            if p.start >= e {
                break;
            }
            if p.end <= e && !claims[i] && pred(p) {
                claims[i] = true;
                out.push(i);
            }
        }
        out
    }

    /// Groups pieces by `key`, largest idle first.
    pub fn groups_all(
        &self,
        pieces: Vec<usize>,
        key: impl Fn(&Piece) -> String,
    ) -> Vec<(String, Vec<usize>)> {
        self.groups_by_index(pieces, |i| key(&self.pieces[i]))
    }

    /// Groups pieces by `key` of their index, largest idle first.
    pub fn groups_by_index(
        &self,
        pieces: Vec<usize>,
        key: impl Fn(usize) -> String,
    ) -> Vec<(String, Vec<usize>)> {
        let mut by: HashMap<String, Vec<usize>> = HashMap::new();
        for i in pieces {
            by.entry(key(i)).or_default().push(i);
        }
        let mut groups: Vec<(String, Vec<usize>)> = by.into_iter().collect();
        groups.sort_by(|a, b| {
            self.total(&b.1)
                .cmp(&self.total(&a.1))
                .then_with(|| a.0.cmp(&b.0))
        });
        groups
    }

    /// Distinct values of `f` over pieces (for occurrence counts).
    pub fn distinct<K: Ord>(&self, pieces: &[usize], f: impl Fn(&Piece) -> K) -> u64 {
        let mut v: Vec<K> = pieces.iter().map(|&i| f(&self.pieces[i])).collect();
        v.sort_unstable();
        v.dedup();
        v.len() as u64
    }
}

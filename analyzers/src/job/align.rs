//! Which calls of different ranks are the same collective, and how each
//! rank's clock relates to the others'.
//!
//! # Matching
//!
//! A process group whose every call, on every rank, carries a sequence
//! number (PyTorch's `Seq` arg, from 2.5 on) is matched by `(group, seq)`:
//! the same pair is the same collective on every rank that holds it,
//! whatever the ranks' order, steps or missing calls. Collectives of
//! different groups are never matched to each other.
//!
//! The other calls are keyed by step, kind and process group (when the
//! trace names it) and each rank is matched against a reference rank (the
//! one with the most calls):
//!
//! 1. **By order**: when both ranks have the same number of calls under
//!    every key, the n-th call of a key is the n-th on the other rank. The
//!    pairing is accepted when, with the clock offset it implies, at least
//!    90 % of the pairs overlap in time (a collective cannot end on one rank
//!    before it started on another); pairs that do not are dropped.
//! 2. **By time**, when counts differ (a rank's trace cut short, sampled
//!    traces) or order fails: every pair of calls with the same key votes
//!    for the offset between their ends; the densest 200 µs of votes gives
//!    the offset (the one nearest zero on ties), and calls are paired one to one, closest ends first,
//!    among pairs that overlap once shifted and end within 1 ms.
//!
//! # Clock offsets
//!
//! A collective ends at about the same true time on every rank: the last
//! peer's data arrives and everyone finishes within microseconds. The
//! offset of rank r is the median over its matched calls of
//! `consensus end - its end`, where the consensus end of a collective is
//! the median of its members' shifted ends; three rounds refine both. The
//! offsets are then made relative to the lowest aligned rank (offset 0).
//! The residual of a rank, `|shifted end - consensus end|` over its calls
//! (median and maximum), says how well one constant offset fits.
//!
//! ```text
//! rank 0 clock   ....[all_reduce....]....      ends at 1000
//! rank 1 clock   ......[all_reduce..]....      ends at 1250
//!                offset(rank 1) = 1000 - 1250 = -250
//! ```

use super::summary::{CollectiveCall, RankSummary};
use gapscope_collectors::trace::Ns;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// Pairs by order are accepted when this share of them overlap.
const ORDER_MIN_OVERLAP: f64 = 0.9;
/// Slack when testing whether two shifted calls overlap.
const OVERLAP_SLACK_NS: Ns = 10_000;
/// Half the width of the densest window of offset votes.
const VOTE_TOLERANCE_NS: Ns = 100_000;
/// Matching by time pairs calls whose shifted ends lie at most this far
/// apart: the same collective ends within microseconds on every rank
/// (hundreds for a large all-to-all), while the collectives before and
/// after it are usually milliseconds away.
const TIME_MATCH_END_NS: Ns = 1_000_000;
/// Calls per key and rank that vote (the offset is one number: a few
/// hundred pairs find it).
const VOTE_MAX_CALLS: usize = 256;
/// Refinement rounds of offsets and consensus ends.
const ROUNDS: usize = 3;

/// How a rank's calls were matched to the others'.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MatchMethod {
    /// The reference rank itself.
    Reference,
    /// Process group and sequence number, for every call of the rank that
    /// was matched.
    Sequence,
    /// The n-th call of each kind and step.
    Order,
    /// Offset votes and time overlap.
    Time,
    /// Nothing matched: the rank shares no collective with the reference.
    None,
}

/// One rank's clock alignment.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RankAlignment {
    /// The rank.
    pub rank: i64,
    /// How its calls were matched.
    pub method: MatchMethod,
    /// Added to the rank's absolute clock to put it on the job's clock
    /// (the reference rank's); `None` when it could not be aligned.
    pub offset_ns: Option<Ns>,
    /// Its collectives matched to other ranks'.
    pub matched: u64,
    /// Of them, those matched by process group and sequence number (the
    /// rest by order or time).
    #[serde(default)]
    pub matched_by_seq: u64,
    /// Its collectives left unmatched.
    pub unmatched: u64,
    /// Median of `|shifted end - consensus end|` over its matched calls.
    pub residual_median_ns: Option<Ns>,
    /// Maximum of the same.
    pub residual_max_ns: Option<Ns>,
}

impl RankAlignment {
    /// How its collectives were matched, in a word or two: `seq` (process
    /// group and sequence number), `order`, `time`, `seq+order` when some
    /// groups had sequence numbers and the rest did not, `reference`.
    pub fn match_label(&self) -> String {
        let fallback = match self.method {
            MatchMethod::Reference => return "reference".into(),
            MatchMethod::Sequence => return "seq".into(),
            MatchMethod::None => return "none".into(),
            MatchMethod::Order => "order",
            MatchMethod::Time => "time",
        };
        if self.matched_by_seq > 0 {
            format!("seq+{fallback}")
        } else {
            fallback.into()
        }
    }
}

/// The same collective on several ranks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Instance {
    /// `(rank index, call index)` of each member, by rank index.
    pub members: Vec<(usize, usize)>,
}

/// Matching and offsets of a set of ranks.
#[derive(Clone, Debug)]
pub struct Alignment {
    /// Per rank index: the offset to add to `origin_ns + local ns`.
    pub offsets: Vec<Option<Ns>>,
    /// Collectives with two or more members, by their consensus end.
    pub instances: Vec<Instance>,
    /// Per rank index.
    pub ranks: Vec<RankAlignment>,
    /// Index of the rank whose clock is the job's.
    pub reference: Option<usize>,
}

type Key<'a> = (Option<u64>, &'a str, Option<&'a str>);

fn key(c: &CollectiveCall) -> Key<'_> {
    (c.step, c.kind.as_str(), c.group.as_deref())
}

fn abs_start(s: &RankSummary, c: &CollectiveCall) -> Ns {
    s.origin_ns + c.start_ns
}

fn abs_end(s: &RankSummary, c: &CollectiveCall) -> Ns {
    s.origin_ns + c.end_ns
}

/// Matches the ranks' collectives and aligns their clocks.
pub fn align(ranks: &[RankSummary]) -> Alignment {
    let n = ranks.len();
    let reference = best_reference(ranks);
    let seq_groups = seq_groups(ranks);
    let by_seq =
        |c: &CollectiveCall| c.seq.is_some() && c.group.as_deref().is_some_and(|g| seq_groups.contains(g));
    // Collectives of groups every rank numbers: the same (group, seq) is
    // the same collective, whichever ranks hold it.
    let mut seq_members: BTreeMap<(&str, u64), Vec<(usize, usize)>> = BTreeMap::new();
    for (r, s) in ranks.iter().enumerate() {
        for (i, c) in s.collectives.iter().enumerate() {
            if let (true, Some(g), Some(q)) = (by_seq(c), c.group.as_deref(), c.seq) {
                seq_members.entry((g, q)).or_default().push((r, i));
            }
        }
    }
    // The rest, against the reference rank, by order or by time.
    let rest = |c: &CollectiveCall| !by_seq(c);
    let pairs: Vec<(MatchMethod, Vec<(usize, usize)>)> = (0..n)
        .map(|r| {
            if r == reference {
                let own = (0..ranks[r].collectives.len())
                    .filter(|&i| rest(&ranks[r].collectives[i]))
                    .map(|i| (i, i))
                    .collect();
                (MatchMethod::Reference, own)
            } else {
                match_pair(&ranks[reference], &ranks[r], &rest)
            }
        })
        .collect();
    let mut members: BTreeMap<usize, Vec<(usize, usize)>> = BTreeMap::new();
    for (r, (_, p)) in pairs.iter().enumerate() {
        if r == reference {
            continue;
        }
        for &(ref_call, call) in p {
            members.entry(ref_call).or_default().push((r, call));
        }
    }
    let mut instances: Vec<Instance> = members
        .into_iter()
        .map(|(ref_call, mut m)| {
            m.push((reference, ref_call));
            m.sort_unstable();
            Instance { members: m }
        })
        .chain(seq_members.into_values().map(|mut m| {
            m.sort_unstable();
            Instance { members: m }
        }))
        .filter(|i| i.members.len() >= 2)
        .collect();
    // A first offset per rank from the collectives it shares with the
    // reference; the rounds below refine it over every collective.
    let mut offsets: Vec<Option<Ns>> = vec![None; n];
    if n > 0 {
        offsets[reference] = Some(0);
    }
    let mut diffs: Vec<Vec<Ns>> = vec![Vec::new(); n];
    for inst in &instances {
        let Some(&(_, a)) = inst.members.iter().find(|(r, _)| *r == reference) else {
            continue;
        };
        let ref_end = abs_end(&ranks[reference], &ranks[reference].collectives[a]);
        for &(r, c) in &inst.members {
            if r != reference {
                diffs[r].push(ref_end - abs_end(&ranks[r], &ranks[r].collectives[c]));
            }
        }
    }
    for (r, d) in diffs.into_iter().enumerate() {
        if r != reference && !d.is_empty() {
            offsets[r] = Some(median(d));
        }
    }
    let mut consensus = vec![0; instances.len()];
    for _ in 0..ROUNDS {
        consensus = consensus_ends(ranks, &instances, &offsets);
        offsets = refine(ranks, &instances, &consensus, &offsets);
    }
    // The job's clock: the lowest aligned rank's.
    if let Some(anchor) = (0..n)
        .filter(|&r| offsets[r].is_some())
        .min_by_key(|&r| ranks[r].rank)
    {
        let a = offsets[anchor].unwrap_or(0);
        for o in offsets.iter_mut().flatten() {
            *o -= a;
        }
        for c in &mut consensus {
            *c -= a;
        }
    }
    let order: Vec<usize> = {
        let mut idx: Vec<usize> = (0..instances.len()).collect();
        idx.sort_by_key(|&i| consensus[i]);
        idx
    };
    let residuals = residuals(ranks, &instances, &consensus, &offsets);
    let report = (0..n)
        .map(|r| {
            let matched = residuals[r].len() as u64;
            let (med, max) = if residuals[r].is_empty() {
                (None, None)
            } else {
                (
                    Some(median(residuals[r].clone())),
                    residuals[r].iter().copied().max(),
                )
            };
            let calls = &ranks[r].collectives;
            let matched_by_seq = instances
                .iter()
                .flat_map(|i| &i.members)
                .filter(|&&(m, c)| m == r && by_seq(&calls[c]))
                .count() as u64;
            let left_to_fallback = calls.iter().any(&rest);
            let method = if offsets[r].is_none() || (matched == 0 && n > 1) {
                MatchMethod::None
            } else if r == reference {
                MatchMethod::Reference
            } else if matched_by_seq > 0 && (!left_to_fallback || pairs[r].1.is_empty()) {
                MatchMethod::Sequence
            } else {
                pairs[r].0
            };
            RankAlignment {
                rank: ranks[r].rank,
                method,
                offset_ns: if method == MatchMethod::None && n > 1 {
                    None
                } else {
                    offsets[r]
                },
                matched,
                matched_by_seq,
                unmatched: calls.len() as u64 - matched,
                residual_median_ns: med,
                residual_max_ns: max,
            }
        })
        .collect::<Vec<_>>();
    let offsets = report.iter().map(|a| a.offset_ns).collect();
    instances = order.into_iter().map(|i| instances[i].clone()).collect();
    Alignment {
        offsets,
        instances,
        ranks: report,
        reference: (n > 0).then_some(reference),
    }
}

/// The process groups whose every call, on every rank, has a sequence
/// number: those are matched by `(group, seq)`.
fn seq_groups(ranks: &[RankSummary]) -> BTreeSet<&str> {
    let mut numbered: BTreeMap<&str, bool> = BTreeMap::new();
    for c in ranks.iter().flat_map(|r| &r.collectives) {
        if let Some(g) = c.group.as_deref() {
            *numbered.entry(g).or_insert(true) &= c.seq.is_some();
        }
    }
    numbered
        .into_iter()
        .filter(|&(_, all)| all)
        .map(|(g, _)| g)
        .collect()
}

/// The rank with the most collectives (the lowest rank on ties).
fn best_reference(ranks: &[RankSummary]) -> usize {
    (0..ranks.len())
        .max_by_key(|&r| (ranks[r].collectives.len(), std::cmp::Reverse(ranks[r].rank)))
        .unwrap_or(0)
}

/// The calls of `s` that `keep` accepts, by key, each list by start.
fn by_key<'a>(s: &'a RankSummary, keep: &dyn Fn(&CollectiveCall) -> bool) -> BTreeMap<Key<'a>, Vec<usize>> {
    let mut m: BTreeMap<Key<'_>, Vec<usize>> = BTreeMap::new();
    for (i, c) in s.collectives.iter().enumerate() {
        if keep(c) {
            m.entry(key(c)).or_default().push(i);
        }
    }
    m
}

/// Pairs `(reference call, call)` of `b` against the reference `a`, among
/// the calls `keep` accepts.
fn match_pair(
    a: &RankSummary,
    b: &RankSummary,
    keep: &dyn Fn(&CollectiveCall) -> bool,
) -> (MatchMethod, Vec<(usize, usize)>) {
    let ka = by_key(a, keep);
    let kb = by_key(b, keep);
    let same_counts = ka.len() == kb.len()
        && ka
            .iter()
            .all(|(k, v)| kb.get(k).is_some_and(|w| w.len() == v.len()));
    if same_counts && !ka.is_empty() {
        let pairs: Vec<(usize, usize)> = ka
            .iter()
            .flat_map(|(k, v)| v.iter().copied().zip(kb[k].iter().copied()))
            .collect();
        let offset = median(
            pairs
                .iter()
                .map(|&(i, j)| abs_end(a, &a.collectives[i]) - abs_end(b, &b.collectives[j]))
                .collect(),
        );
        let kept: Vec<(usize, usize)> = pairs
            .iter()
            .copied()
            .filter(|&(i, j)| overlaps(a, i, b, j, offset))
            .collect();
        if kept.len() as f64 >= ORDER_MIN_OVERLAP * pairs.len() as f64 {
            return (MatchMethod::Order, kept);
        }
    }
    match vote_offset(&ka, &kb, a, b) {
        Some(offset) => (MatchMethod::Time, pair_by_time(&ka, &kb, a, b, offset)),
        None => (MatchMethod::None, Vec::new()),
    }
}

/// Whether call `i` of `a` and call `j` of `b`, shifted by `offset`, overlap.
fn overlaps(a: &RankSummary, i: usize, b: &RankSummary, j: usize, offset: Ns) -> bool {
    let (ca, cb) = (&a.collectives[i], &b.collectives[j]);
    let (sa, ea) = (abs_start(a, ca), abs_end(a, ca));
    let (sb, eb) = (abs_start(b, cb) + offset, abs_end(b, cb) + offset);
    sa <= eb + OVERLAP_SLACK_NS && sb <= ea + OVERLAP_SLACK_NS
}

/// The offset most pairs of same-key calls agree on, within
/// [`VOTE_TOLERANCE_NS`]; `None` when no two pairs agree.
fn vote_offset(
    ka: &BTreeMap<Key<'_>, Vec<usize>>,
    kb: &BTreeMap<Key<'_>, Vec<usize>>,
    a: &RankSummary,
    b: &RankSummary,
) -> Option<Ns> {
    let mut votes: Vec<Ns> = Vec::new();
    for (k, va) in ka {
        let Some(vb) = kb.get(k) else { continue };
        for &i in va.iter().take(VOTE_MAX_CALLS) {
            for &j in vb.iter().take(VOTE_MAX_CALLS) {
                votes.push(abs_end(a, &a.collectives[i]) - abs_end(b, &b.collectives[j]));
            }
        }
    }
    votes.sort_unstable();
    // Every densest window; on ties the offset nearest zero wins (ranks'
    // clocks are usually synchronised).
    let mut windows: Vec<(usize, usize)> = Vec::new();
    let (mut most, mut lo) = (0usize, 0usize);
    for hi in 0..votes.len() {
        while votes[hi] - votes[lo] > 2 * VOTE_TOLERANCE_NS {
            lo += 1;
        }
        let n = hi + 1 - lo;
        if n > most {
            most = n;
            windows.clear();
        }
        if n == most {
            windows.push((lo, hi + 1));
        }
    }
    if most < 2 {
        return None;
    }
    windows
        .into_iter()
        .map(|(a, b)| median(votes[a..b].to_vec()))
        .min_by_key(|o| (o.abs(), *o))
}

/// One-to-one pairs of same-key calls that overlap once shifted by
/// `offset`, closest ends first.
fn pair_by_time(
    ka: &BTreeMap<Key<'_>, Vec<usize>>,
    kb: &BTreeMap<Key<'_>, Vec<usize>>,
    a: &RankSummary,
    b: &RankSummary,
    offset: Ns,
) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    for (k, va) in ka {
        let Some(vb) = kb.get(k) else { continue };
        let mut cand: Vec<(Ns, usize, usize)> = Vec::new();
        for &i in va {
            for &j in vb {
                let d = abs_end(a, &a.collectives[i]) - abs_end(b, &b.collectives[j]) - offset;
                if overlaps(a, i, b, j, offset) && d.abs() <= TIME_MATCH_END_NS {
                    cand.push((d.abs(), i, j));
                }
            }
        }
        cand.sort_unstable();
        let (mut used_a, mut used_b) = (vec![false; a.collectives.len()], vec![false; b.collectives.len()]);
        for (_, i, j) in cand {
            if !used_a[i] && !used_b[j] {
                used_a[i] = true;
                used_b[j] = true;
                out.push((i, j));
            }
        }
    }
    out.sort_unstable();
    out
}

fn consensus_ends(ranks: &[RankSummary], instances: &[Instance], offsets: &[Option<Ns>]) -> Vec<Ns> {
    instances
        .iter()
        .map(|inst| {
            let ends: Vec<Ns> = inst
                .members
                .iter()
                .filter_map(|&(r, c)| Some(abs_end(&ranks[r], &ranks[r].collectives[c]) + offsets[r]?))
                .collect();
            median(ends)
        })
        .collect()
}

fn refine(
    ranks: &[RankSummary],
    instances: &[Instance],
    consensus: &[Ns],
    offsets: &[Option<Ns>],
) -> Vec<Option<Ns>> {
    let mut diffs: Vec<Vec<Ns>> = vec![Vec::new(); ranks.len()];
    for (inst, &c) in instances.iter().zip(consensus) {
        for &(r, call) in &inst.members {
            diffs[r].push(c - abs_end(&ranks[r], &ranks[r].collectives[call]));
        }
    }
    diffs
        .into_iter()
        .zip(offsets)
        .map(|(d, &o)| o.map(|o| if d.is_empty() { o } else { median(d) }))
        .collect()
}

fn residuals(
    ranks: &[RankSummary],
    instances: &[Instance],
    consensus: &[Ns],
    offsets: &[Option<Ns>],
) -> Vec<Vec<Ns>> {
    let mut out: Vec<Vec<Ns>> = vec![Vec::new(); ranks.len()];
    for (inst, &c) in instances.iter().zip(consensus) {
        for &(r, call) in &inst.members {
            if let Some(o) = offsets[r] {
                out[r].push((abs_end(&ranks[r], &ranks[r].collectives[call]) + o - c).abs());
            }
        }
    }
    out
}

/// The median (the lower middle for an even count); 0 for none.
pub fn median(mut v: Vec<Ns>) -> Ns {
    if v.is_empty() {
        return 0;
    }
    v.sort_unstable();
    let m = v.len() / 2;
    if v.len() % 2 == 1 {
        v[m]
    } else {
        // The mean of the two middle values, rounded down.
        (v[m - 1] + v[m]).div_euclid(2)
    }
}

//! `load_imbalance`: one rank computes consistently more than the others,
//! so the others wait for it at every collective that follows.
//!
//! Per step, the rank with the most GPU compute time is compared with the
//! median rank; the step counts when the heaviest rank's excess is at
//! least 100 µs and 5 % of the median. A rank that is the heaviest in at
//! least half of the steps (and two of them, when the job has two or
//! more) gets a finding. Its saving is the replay in which, at each of the
//! rank's collectives, the rank arrives earlier by the compute its lead-in
//! had beyond its peers' mean: what balancing the work would give back.

use super::align::median;
use super::arrivals::{Clock, Timed};
use super::finding::JobFinding;
use super::replay::StepModel;
use super::summary::RankSummary;
use crate::format::duration_coarse;
use gapscope_collectors::trace::Ns;
use std::collections::{BTreeMap, HashMap};

/// Smallest excess of the heaviest rank over the median, ns.
const MIN_EXCESS_NS: Ns = 100_000;
/// Smallest excess as a share of the median.
const MIN_EXCESS_SHARE: f64 = 0.05;

/// The `load_imbalance` findings.
pub fn findings(
    ranks: &[RankSummary],
    clock: &Clock,
    timed: &[Timed],
    models: &HashMap<u64, StepModel>,
    steps: &[u64],
) -> Vec<JobFinding> {
    let mut heavy: BTreeMap<usize, Vec<(u64, Ns, Ns)>> = BTreeMap::new();
    let mut counted = 0usize;
    for &step in steps {
        let compute: Vec<(usize, Ns)> = ranks
            .iter()
            .enumerate()
            .filter(|(r, _)| clock.shift[*r].is_some())
            .filter_map(|(r, s)| Some((r, s.steps.iter().find(|x| x.number == step)?.breakdown.compute_ns)))
            .collect();
        if compute.len() < 2 {
            continue;
        }
        counted += 1;
        let med = median(compute.iter().map(|c| c.1).collect());
        let &(r, max) = compute
            .iter()
            .max_by_key(|c| (c.1, std::cmp::Reverse(ranks[c.0].rank)))
            .expect("two ranks");
        let excess = max - med;
        if excess >= MIN_EXCESS_NS && excess as f64 >= MIN_EXCESS_SHARE * med as f64 {
            heavy.entry(r).or_default().push((step, excess, med));
        }
    }
    let need = if counted >= 2 { 2 } else { 1 };
    heavy
        .into_iter()
        .filter(|(_, v)| v.len() >= need && v.len() * 2 >= counted)
        .map(|(r, v)| finding(ranks, r, &v, counted, timed, models))
        .collect()
}

fn finding(
    ranks: &[RankSummary],
    r: usize,
    steps: &[(u64, Ns, Ns)],
    counted: usize,
    timed: &[Timed],
    models: &HashMap<u64, StepModel>,
) -> JobFinding {
    let rank = ranks[r].rank;
    let excess: Ns = steps.iter().map(|s| s.1).sum();
    let per_step = excess / steps.len() as Ns;
    let med: Ns = steps.iter().map(|s| s.2).sum::<Ns>() / steps.len() as Ns;
    let mut wait: BTreeMap<i64, Ns> = BTreeMap::new();
    let mut saving = 0;
    for &(step, _, _) in steps {
        let mut cuts: HashMap<(usize, usize), Ns> = HashMap::new();
        for t in timed.iter().filter(|t| t.step == Some(step)) {
            let Some(me) = t.arrivals.iter().find(|a| a.rank == r) else {
                continue;
            };
            let peers: Vec<Ns> = t
                .arrivals
                .iter()
                .filter(|a| a.rank != r)
                .map(|a| ranks[a.rank].collectives[a.call].lead_in.compute_ns)
                .collect();
            let mean = peers.iter().sum::<Ns>() / peers.len().max(1) as Ns;
            let extra = ranks[r].collectives[me.call].lead_in.compute_ns - mean;
            if extra > 0 {
                cuts.insert((r, me.call), extra);
            }
            if t.last().rank == r {
                for a in &t.arrivals[..t.arrivals.len() - 1] {
                    *wait.entry(ranks[a.rank].rank).or_default() += a.wait_ns;
                }
            }
        }
        if let Some(m) = models.get(&step) {
            saving += m.saving(&cuts);
        }
    }
    let share = per_step as f64 * 100.0 / med.max(1) as f64;
    JobFinding {
        id: "load_imbalance".into(),
        title: format!(
            "rank {rank} computes {} more per step than the median rank ({share:.0}% more), in {} of {counted} steps",
            duration_coarse(per_step),
            steps.len()
        ),
        hint: format!(
            "Give rank {rank} less work or make its work faster: equal batch, sequence or shard sizes per rank (with \
             variable-length inputs, bucket by length; with embedding tables or experts, rebalance the sharding), and \
             compare its GPU's clocks and temperature with the others'."
        ),
        culprit_rank: Some(rank),
        step: None,
        steps: steps.iter().map(|s| s.0).collect(),
        collective: None,
        collective_ordinal: None,
        collectives: 0,
        cause: Some("compute".into()),
        operator: None,
        cause_ns: excess,
        lateness_ns: 0,
        total_wait_ns: wait.values().sum(),
        wait_ns: wait,
        est_savings_ns: saving,
        untraced_ranks: 0,
        savings_bound_ns: None,
    }
}

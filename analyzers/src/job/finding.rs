//! [`JobFinding`]: one thing to fix in a job of many ranks, with its
//! culprit, its victims and what fixing it would save.

use gapscope_collectors::trace::Ns;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A job-level finding. `id` says which rule found it:
///
/// - `straggler_wait`: in one step, the other ranks waited at collectives
///   for one late rank; names the culprit, the collective and what the
///   culprit was doing instead.
/// - `consistent_straggler`: one rank is the late one in most steps.
/// - `load_imbalance`: one rank computes consistently more than the others.
/// - `exposed_communication`: collective transfers that no compute hides.
/// - `staggered_start`: the ranks began a step apart, and those that began
///   first waited at its first collective for those that began later.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct JobFinding {
    /// The rule (above).
    pub id: String,
    /// One sentence saying what happened, with the numbers.
    pub title: String,
    /// What to change.
    pub hint: String,
    /// The rank that held the others back (or computes more).
    pub culprit_rank: Option<i64>,
    /// The step (for a finding about one step).
    pub step: Option<u64>,
    /// The steps it covers.
    pub steps: Vec<u64>,
    /// The collective the others waited in (its kind), e.g. `all_reduce`.
    pub collective: Option<String>,
    /// Its position among the step's collectives of that kind, from 1.
    pub collective_ordinal: Option<u64>,
    /// How many collectives the finding covers.
    pub collectives: u64,
    /// What the culprit was doing instead: a lead-in part (`compute`,
    /// `communication`, `memcpy`, `memset`), an idle cause (`dataloader`,
    /// `cpu_op`, `sync`, ...) or `late_start` (it began the step or left
    /// the previous collective later).
    pub cause: Option<String>,
    /// The operator behind that cause on the culprit, when one stands out.
    pub operator: Option<String>,
    /// How much longer the cause took on the culprit than on its peers
    /// (their mean), ns.
    pub cause_ns: Ns,
    /// The culprit's lead over the second-last rank, summed over the
    /// collectives covered: how long it alone held the others back.
    pub lateness_ns: Ns,
    /// Time each waiting rank spent waiting, by rank.
    pub wait_ns: BTreeMap<i64, Ns>,
    /// Sum of `wait_ns`.
    pub total_wait_ns: Ns,
    /// What the job's step time would lose if the culprit's delay went
    /// away, by the replay (see `job::replay`), summed over the steps.
    pub est_savings_ns: Ns,
    /// Ranks of the job with no trace (0 when every rank was traced). When
    /// some are missing, the culprit is the last of the traced ranks only:
    /// an untraced one may have arrived later still, so `est_savings_ns`
    /// is at most what fixing the culprit saves.
    #[serde(default)]
    pub untraced_ranks: u64,
    /// When the trace cannot estimate the saving (`est_savings_ns` is
    /// then 0): the most fixing it could save of the job's step time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub savings_bound_ns: Option<Ns>,
}

impl JobFinding {
    /// ` over 2 steps` when the saving is summed over more than one step
    /// (else empty): a per-step reading would double it.
    pub fn over_steps(&self) -> String {
        match self.steps.len() {
            0 | 1 => String::new(),
            n => format!(" over {n} steps"),
        }
    }
}

/// Orders findings: largest saving first; culprit findings before the
/// others on ties, then by step.
pub fn rank_findings(f: &mut [JobFinding]) {
    let order = |id: &str| match id {
        "straggler_wait" => 0,
        "consistent_straggler" => 1,
        "load_imbalance" => 2,
        "staggered_start" => 3,
        _ => 4,
    };
    // A finding whose saving the trace cannot estimate ranks by the most
    // it could save, as a single trace's do.
    let weight = |f: &JobFinding| f.est_savings_ns.max(f.savings_bound_ns.unwrap_or(0));
    f.sort_by(|a, b| {
        weight(b)
            .cmp(&weight(a))
            .then_with(|| order(&a.id).cmp(&order(&b.id)))
            .then_with(|| a.step.cmp(&b.step))
            .then_with(|| a.culprit_rank.cmp(&b.culprit_rank))
    });
}

/// `0-2, 4-7` for ranks 0, 1, 2, 4, 5, 6, 7.
pub fn rank_list(ranks: &[i64]) -> String {
    let mut v = ranks.to_vec();
    v.sort_unstable();
    v.dedup();
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < v.len() {
        let mut j = i;
        while j + 1 < v.len() && v[j + 1] == v[j] + 1 {
            j += 1;
        }
        parts.push(if j >= i + 2 {
            format!("{}-{}", v[i], v[j])
        } else if j == i + 1 {
            format!("{}, {}", v[i], v[j])
        } else {
            v[i].to_string()
        });
        i = j + 1;
    }
    parts.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rank_lists() {
        assert_eq!(rank_list(&[0, 1, 2, 4, 5, 6, 7]), "0-2, 4-7");
        assert_eq!(rank_list(&[3]), "3");
        assert_eq!(rank_list(&[0, 1, 3]), "0, 1, 3");
        assert_eq!(rank_list(&[5, 1, 0, 2]), "0-2, 5");
    }
}

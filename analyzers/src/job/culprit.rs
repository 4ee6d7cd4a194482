//! Culprit and victims: the wait of the ranks that arrived early at a
//! collective is put on the rank that arrived last, and on what that rank
//! was doing instead.
//!
//! # What the late rank was doing
//!
//! Each member's window runs from the end of its previous collective that
//! matched other ranks' (the last point where the ranks were in step; the
//! window's start when there is none) to its arrival, and splits into
//! parts: compute, communication (other collectives, and unmatched calls in
//! between), copies, memsets and idle time by cause (the calls' lead-ins).
//! Arrival is window start plus the parts, so the late rank's arrival minus
//! its peers' mean arrival splits exactly into
//!
//! ```text
//! (start - peers' mean start)  +  sum over parts of (part - peers' mean part)
//!  `late_start`                    `compute`, `dataloader`, `cpu_op`, ...
//! ```
//!
//! The largest term is the cause; within it, the operator whose time grew
//! the most (from the lead-ins' top operators) is named. A rank that
//! started the step later than its peers is said to, with no operator:
//! what delayed it happened before the traced window.
//!
//! # Findings
//!
//! A collective counts when the last rank's lead over the second-last (its
//! lateness) is at least [`JobOptions::min_lateness_ns`] and four times the
//! two ranks' alignment residuals. Collectives of one step with the same
//! culprit and cause make one `straggler_wait` finding; its saving is the
//! replay with the culprit arriving with the second-last at each of them.
//! A rank that is the culprit of at least half of the job's late time, in
//! at least two steps and at least half of the steps with a late rank, gets
//! a `consistent_straggler` finding as well.

use super::arrivals::{Clock, Timed};
use super::finding::{rank_list, JobFinding};
use super::replay::StepModel;
use super::summary::RankSummary;
use super::JobOptions;
use crate::causes::Cause;
use crate::format::duration_coarse;
use crate::intervals;
use gapscope_collectors::trace::Ns;
use std::collections::{BTreeMap, HashMap};

/// Why the last rank of one collective was late.
#[derive(Clone, Debug, PartialEq)]
pub struct Blame {
    /// `late_start` or a lead-in part name.
    pub cause: String,
    /// That term of the split, ns.
    pub excess_ns: Ns,
    /// The operator whose time grew the most in that part.
    pub operator: Option<String>,
    /// How much it grew, ns.
    pub operator_excess_ns: Ns,
    /// Whether the late rank's window began at the window's start (the
    /// step's start) rather than at a previous collective.
    pub from_window_start: bool,
}

/// What one member did since the last collective it shared with the
/// others: from the end of its previous matched call to its arrival.
/// Members whose previous matched call is not the late rank's (a rank
/// whose trace lacks that collective) are left out of the peers' means:
/// their windows cover another stretch of the step.
/// Calls in between that matched no other rank's count as part of it
/// (their kernels as communication, or compute where compute overlapped).
struct MemberWindow {
    /// Start on the job's clock.
    start: Ns,
    /// Part name and ns, in [`LeadIn::parts`](super::summary::LeadIn::parts) order.
    parts: Vec<(&'static str, Ns)>,
    /// `(part, operator)` to ns.
    ops: HashMap<(String, String), Ns>,
    /// Whether it begins at the rank's window start.
    from_window_start: bool,
    /// The collective (index into the timed ones) it begins after; `None`
    /// at the window's start.
    after: Option<usize>,
}

/// Per call of each rank: the timed collective it is a member of, if it
/// matched another rank's.
pub fn matched_calls(ranks: &[RankSummary], timed: &[Timed]) -> Vec<Vec<Option<usize>>> {
    let mut m: Vec<Vec<Option<usize>>> = ranks.iter().map(|r| vec![None; r.collectives.len()]).collect();
    for (i, t) in timed.iter().enumerate() {
        for a in &t.arrivals {
            m[a.rank][a.call] = Some(i);
        }
    }
    m
}

fn member_window(
    ranks: &[RankSummary],
    clock: &Clock,
    matched: &[Vec<Option<usize>>],
    r: usize,
    c: usize,
) -> MemberWindow {
    let calls = &ranks[r].collectives;
    let prev = (0..c).rev().find(|&p| matched[r][p].is_some());
    let first = prev.map_or(0, |p| p + 1);
    let start_local = calls[first].lead_in.start_ns;
    let mut parts: Vec<(&'static str, Ns)> = calls[c]
        .lead_in
        .parts()
        .into_iter()
        .map(|(n, _)| (n, 0))
        .collect();
    let mut ops: HashMap<(String, String), Ns> = HashMap::new();
    for (i, call) in calls.iter().enumerate().take(c + 1).skip(first) {
        for (slot, (_, ns)) in parts.iter_mut().zip(call.lead_in.parts()) {
            slot.1 += ns;
        }
        for o in &call.lead_in.top_ops {
            *ops.entry((o.part.clone(), o.operator.clone())).or_default() += o.ns;
        }
        if i < c {
            // An unmatched call in between: its kernel time.
            let dur = call.end_ns - call.start_ns;
            let hidden = intervals::total(&call.compute_overlap);
            parts[0].1 += hidden;
            parts[1].1 += dur - hidden;
        }
    }
    MemberWindow {
        start: clock.at(r, start_local).unwrap_or(0),
        parts,
        ops,
        from_window_start: start_local <= ranks[r].window.0,
        after: prev.and_then(|p| matched[r][p]),
    }
}

/// Splits the last arriver's delay over its peers into the terms above and
/// returns the largest.
pub fn blame(ranks: &[RankSummary], clock: &Clock, matched: &[Vec<Option<usize>>], t: &Timed) -> Blame {
    let windows: Vec<MemberWindow> = t
        .arrivals
        .iter()
        .map(|a| member_window(ranks, clock, matched, a.rank, a.call))
        .collect();
    let (mine, all_peers) = windows.split_last().expect("an instance has members");
    let same: Vec<&MemberWindow> = all_peers.iter().filter(|w| w.after == mine.after).collect();
    let peers: Vec<&MemberWindow> = if same.is_empty() {
        all_peers.iter().collect()
    } else {
        same
    };
    let n = peers.len().max(1) as f64;
    let mean = |f: &dyn Fn(&MemberWindow) -> f64| peers.iter().map(|w| f(w)).sum::<f64>() / n;
    let mut terms: Vec<(String, f64)> =
        vec![("late_start".into(), mine.start as f64 - mean(&|w| w.start as f64))];
    for (i, &(part, ns)) in mine.parts.iter().enumerate() {
        terms.push((part.to_string(), ns as f64 - mean(&|w| w.parts[i].1 as f64)));
    }
    let (cause, excess) = terms
        .iter()
        .fold(None::<&(String, f64)>, |best, t| match best {
            Some(b) if b.1 >= t.1 => Some(b),
            _ => Some(t),
        })
        .cloned()
        .unwrap_or(("late_start".into(), 0.0));
    let mut operator = None;
    let mut operator_excess = 0.0;
    let mut candidates: Vec<(&(String, String), &Ns)> =
        mine.ops.iter().filter(|((p, _), _)| *p == cause).collect();
    candidates.sort();
    for (key, &ns) in candidates {
        let grew = ns as f64 - mean(&|w| w.ops.get(key).copied().unwrap_or(0) as f64);
        if grew > operator_excess && key.1 != "-" {
            operator_excess = grew;
            operator = Some(key.1.clone());
        }
    }
    Blame {
        cause,
        excess_ns: excess.round() as Ns,
        operator,
        operator_excess_ns: operator_excess.round() as Ns,
        from_window_start: mine.from_window_start,
    }
}

/// The part of the waits at one collective that the ranks' staggered step
/// starts explain ([`staggered_wait`]).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Staggered {
    /// Per waiting member (rank index): its wait put on the starts.
    pub by_rank: Vec<(usize, Ns)>,
    /// The latest member's step start minus the earliest's.
    pub skew_ns: Ns,
}

impl Staggered {
    /// The members' waits put on the starts, summed.
    pub fn total_ns(&self) -> Ns {
        self.by_rank.iter().map(|&(_, ns)| ns).sum()
    }
}

/// The part of the wait at `t` that no single rank caused and that the
/// ranks' staggered step starts explain: none unless every member's window
/// runs from its step's start (the step's first collective). Members
/// arrive at their start plus their lead-in; had they begun the step
/// together, member m would wait only for the longest lead-in, `max L -
/// L_m`. Of m's wait beyond that, the part before the second-last member
/// arrived (the no-culprit part; after it the wait is the last arriver's,
/// and when the last arriver's own cause is its late start, that part is
/// not counted twice) is the staggered starts'. `blame` is `t`'s, when
/// it is late.
pub fn staggered_wait(
    ranks: &[RankSummary],
    clock: &Clock,
    matched: &[Vec<Option<usize>>],
    t: &Timed,
    blame: Option<&Blame>,
) -> Staggered {
    let windows: Vec<MemberWindow> = t
        .arrivals
        .iter()
        .map(|a| member_window(ranks, clock, matched, a.rank, a.call))
        .collect();
    if !windows.iter().all(|w| w.from_window_start) {
        return Staggered::default();
    }
    let lead_in: Vec<Ns> = t
        .arrivals
        .iter()
        .zip(&windows)
        .map(|(a, w)| a.start - w.start)
        .collect();
    let longest = lead_in.iter().copied().max().unwrap_or(0);
    let starts = windows.iter().map(|w| w.start);
    let skew_ns = starts.clone().max().unwrap_or(0) - starts.min().unwrap_or(0);
    let others = &t.arrivals[..t.arrivals.len() - 1];
    let by_rank = others
        .iter()
        .zip(&lead_in)
        .map(|(a, &lead)| {
            let caused = if blame.is_some() { t.caused_wait_of(a) } else { 0 };
            let no_culprit = a.wait_ns - caused;
            let aligned_wait = (longest - lead).max(0);
            let mut by_starts = (a.wait_ns - aligned_wait).max(0);
            if blame.is_some_and(|b| b.cause == "late_start") {
                by_starts = (by_starts - caused).max(0);
            }
            (a.rank, by_starts.clamp(0, no_culprit.max(0)))
        })
        .filter(|&(_, ns)| ns > 0)
        .collect();
    Staggered { by_rank, skew_ns }
}

/// A `staggered_start` finding for one step's collective `t` whose waits
/// the staggered starts explain (`s`), when they reach `min_ns`. The
/// trace cannot say what staggered the starts (it happened in the step
/// before), so the saving is not estimated; aligning the starts could save
/// at most the skew.
pub fn staggered_finding(ranks: &[RankSummary], t: &Timed, s: &Staggered, min_ns: Ns) -> Option<JobFinding> {
    let total = s.total_ns();
    if total < min_ns || s.skew_ns <= 0 {
        return None;
    }
    let mut wait: BTreeMap<i64, Ns> = BTreeMap::new();
    for &(r, ns) in &s.by_rank {
        *wait.entry(ranks[r].rank).or_default() += ns;
    }
    let step_text = t
        .step
        .map_or_else(|| "outside the steps".to_string(), |n| format!("step {n}"));
    let title = format!(
        "{step_text}: the ranks began the step up to {} apart, and at its first collective \
         ({} #{}) those that began first waited {} in all for those that began later (what \
         staggered the starts happened before the traced window)",
        duration_coarse(s.skew_ns),
        t.kind,
        t.ordinal,
        duration_coarse(total)
    );
    Some(JobFinding {
        id: "staggered_start".into(),
        title,
        hint: "The ranks reached the step's first collective as far apart as they began the \
               step, not because of the work in it: what staggered them is in the step before, \
               which the trace does not hold. Profile more steps (a longer `active` window after \
               `warmup`) and look at what the ranks that begin late do after their last \
               collective of the step before (an optimizer step, logging, checkpointing, \
               evaluation, data loading)."
            .to_string(),
        culprit_rank: None,
        step: t.step,
        steps: t.step.into_iter().collect(),
        collective: Some(t.kind.clone()),
        collective_ordinal: Some(t.ordinal as u64),
        collectives: 1,
        cause: Some("staggered_start".into()),
        operator: None,
        cause_ns: s.skew_ns,
        lateness_ns: 0,
        total_wait_ns: total,
        wait_ns: wait,
        est_savings_ns: 0,
        untraced_ranks: 0,
        savings_bound_ns: Some(s.skew_ns),
    })
}

/// Whether the last arriver of `t` held the others back by more than the
/// noise of the clocks.
pub fn is_significant(t: &Timed, residual: &[Ns], opts: &JobOptions) -> bool {
    let n = t.arrivals.len();
    let noise = 4 * (residual[t.arrivals[n - 1].rank] + residual[t.arrivals[n - 2].rank]);
    t.lateness_ns >= opts.min_lateness_ns.max(noise)
}

/// One significant collective with its blame.
pub struct Blamed<'a> {
    /// The collective.
    pub timed: &'a Timed,
    /// Why its last rank was late.
    pub blame: Blame,
}

/// `straggler_wait` findings, one per step, culprit and cause.
pub fn straggler_findings(
    ranks: &[RankSummary],
    blamed: &[Blamed],
    models: &HashMap<u64, StepModel>,
) -> Vec<JobFinding> {
    let mut groups: BTreeMap<(Option<u64>, usize, String), Vec<&Blamed>> = BTreeMap::new();
    for b in blamed {
        groups
            .entry((b.timed.step, b.timed.last().rank, b.blame.cause.clone()))
            .or_default()
            .push(b);
    }
    groups
        .into_iter()
        .map(|((step, culprit, cause), items)| finding(ranks, step, culprit, &cause, &items, models))
        .collect()
}

fn finding(
    ranks: &[RankSummary],
    step: Option<u64>,
    culprit: usize,
    cause: &str,
    items: &[&Blamed],
    models: &HashMap<u64, StepModel>,
) -> JobFinding {
    let worst = items
        .iter()
        .max_by_key(|b| (b.timed.lateness_ns, std::cmp::Reverse(b.timed.last_arrival())))
        .expect("a group has members");
    let mut wait: BTreeMap<i64, Ns> = BTreeMap::new();
    // Only the wait the culprit alone caused: before the second-last
    // member arrived, the others waited for it too.
    for b in items {
        for a in &b.timed.arrivals[..b.timed.arrivals.len() - 1] {
            *wait.entry(ranks[a.rank].rank).or_default() += b.timed.caused_wait_of(a);
        }
    }
    let mut ops: HashMap<&str, Ns> = HashMap::new();
    for b in items {
        if let Some(o) = &b.blame.operator {
            *ops.entry(o).or_default() += b.blame.operator_excess_ns;
        }
    }
    let operator = ops
        .into_iter()
        .max_by(|a, b| a.1.cmp(&b.1).then_with(|| b.0.cmp(a.0)))
        .map(|(o, _)| o.to_string());
    let cuts: HashMap<(usize, usize), Ns> = items
        .iter()
        .map(|b| ((b.timed.last().rank, b.timed.last().call), b.timed.lateness_ns))
        .collect();
    let est_savings_ns = step.and_then(|s| models.get(&s)).map_or(0, |m| m.saving(&cuts));
    let cause_ns: Ns = items.iter().map(|b| b.blame.excess_ns.max(0)).sum();
    let lateness_ns: Ns = items.iter().map(|b| b.timed.lateness_ns).sum();
    let rank = ranks[culprit].rank;
    let waiting: Vec<i64> = wait.keys().copied().collect();
    let (lo, hi) = (
        wait.values().copied().min().unwrap_or(0),
        wait.values().copied().max().unwrap_or(0),
    );
    let waited = if hi - lo <= hi / 20 {
        duration_coarse(hi)
    } else {
        format!("{} to {}", duration_coarse(lo), duration_coarse(hi))
    };
    let kind = &worst.timed.kind;
    let more = match items.len() {
        1 => String::new(),
        2 => " (and at 1 more collective)".to_string(),
        n => format!(" (and at {} more collectives)", n - 1),
    };
    let step_text = step.map_or_else(|| "outside the steps".to_string(), |s| format!("step {s}"));
    let from_start = worst.blame.from_window_start;
    let title = format!(
        "{step_text}: {} {} waited {waited} in {kind} #{}{more} for rank {rank}, {}",
        if waiting.len() == 1 { "rank" } else { "ranks" },
        rank_list(&waiting),
        worst.timed.ordinal,
        cause_phrase(cause, operator.as_deref(), cause_ns, from_start)
    );
    JobFinding {
        id: "straggler_wait".into(),
        title,
        hint: hint(cause, rank, operator.as_deref()),
        culprit_rank: Some(rank),
        step,
        steps: step.into_iter().collect(),
        collective: Some(kind.clone()),
        collective_ordinal: Some(worst.timed.ordinal as u64),
        collectives: items.len() as u64,
        cause: Some(cause.to_string()),
        operator,
        cause_ns,
        lateness_ns,
        total_wait_ns: wait.values().sum(),
        wait_ns: wait,
        est_savings_ns,
        untraced_ranks: 0,
        savings_bound_ns: None,
    }
}

/// `consistent_straggler` findings (see the module's docs).
pub fn consistent_findings(
    ranks: &[RankSummary],
    blamed: &[Blamed],
    models: &HashMap<u64, StepModel>,
) -> Vec<JobFinding> {
    let total: Ns = blamed.iter().map(|b| b.timed.lateness_ns).sum();
    let steps_with_late: std::collections::BTreeSet<u64> =
        blamed.iter().filter_map(|b| b.timed.step).collect();
    let mut by_rank: BTreeMap<usize, Vec<&Blamed>> = BTreeMap::new();
    for b in blamed {
        by_rank.entry(b.timed.last().rank).or_default().push(b);
    }
    let mut out = Vec::new();
    for (culprit, items) in by_rank {
        let mine: Ns = items.iter().map(|b| b.timed.lateness_ns).sum();
        let steps: std::collections::BTreeSet<u64> = items.iter().filter_map(|b| b.timed.step).collect();
        if total == 0 || mine * 2 < total || steps.len() < 2 || steps.len() * 2 < steps_with_late.len() {
            continue;
        }
        let mut by_cause: BTreeMap<&str, Ns> = BTreeMap::new();
        for b in &items {
            *by_cause.entry(&b.blame.cause).or_default() += b.blame.excess_ns.max(0);
        }
        let (cause, cause_ns) = by_cause
            .into_iter()
            .max_by(|a, b| a.1.cmp(&b.1).then_with(|| b.0.cmp(a.0)))
            .map(|(c, ns)| (c.to_string(), ns))
            .unwrap_or_default();
        let mut wait: BTreeMap<i64, Ns> = BTreeMap::new();
        for b in &items {
            for a in &b.timed.arrivals[..b.timed.arrivals.len() - 1] {
                *wait.entry(ranks[a.rank].rank).or_default() += a.wait_ns;
            }
        }
        let est_savings_ns: Ns = steps
            .iter()
            .filter_map(|s| {
                let m = models.get(s)?;
                let cuts: HashMap<(usize, usize), Ns> = items
                    .iter()
                    .filter(|b| b.timed.step == Some(*s))
                    .map(|b| ((b.timed.last().rank, b.timed.last().call), b.timed.lateness_ns))
                    .collect();
                Some(m.saving(&cuts))
            })
            .sum();
        let rank = ranks[culprit].rank;
        let title = format!(
            "rank {rank} is the last to arrive in {} of {} steps with a late rank ({} of the job's {} of lateness); most of it: {}",
            steps.len(),
            steps_with_late.len(),
            duration_coarse(mine),
            duration_coarse(total),
            job_cause_label(&cause)
        );
        out.push(JobFinding {
            id: "consistent_straggler".into(),
            title,
            hint: hint(&cause, rank, None),
            culprit_rank: Some(rank),
            step: None,
            steps: steps.into_iter().collect(),
            collective: None,
            collective_ordinal: None,
            collectives: items.len() as u64,
            cause: Some(cause),
            operator: None,
            cause_ns,
            lateness_ns: mine,
            total_wait_ns: wait.values().sum(),
            wait_ns: wait,
            est_savings_ns,
            untraced_ranks: 0,
            savings_bound_ns: None,
        });
    }
    out
}

/// What a reader sees for a job cause: an idle cause's [`Cause::label`]
/// (the one definition), else the label of a cause only jobs have (a
/// lead-in part, or `late_start`).
pub fn job_cause_label(cause: &str) -> &str {
    if let Some(c) = Cause::from_name(cause) {
        return c.label();
    }
    match cause {
        "compute" => "longer compute",
        "communication" => "time in other collectives",
        "memcpy" => "copies",
        "memset" => "memsets",
        "late_start" => "late start",
        "staggered_start" => "staggered step starts",
        other => other,
    }
}

/// What a `top_causes` row of the job lost its time to, in words.
pub fn job_loss_label(kind: &str, cause: &str) -> String {
    match (kind, cause) {
        ("wait", "no_culprit") => "waiting for peers, no single late rank".to_string(),
        ("wait", "staggered_start") => "waiting for peers that began the step later".to_string(),
        // A cause's label is a noun phrase or an adjective (`untraced`):
        // in brackets it reads either way.
        ("wait", cause) => format!("waiting for a late rank ({})", job_cause_label(cause)),
        (_, cause) => format!("idle GPU: {}", job_cause_label(cause)),
    }
}

fn cause_phrase(cause: &str, op: Option<&str>, ns: Ns, from_window_start: bool) -> String {
    let x = duration_coarse(ns);
    let in_op = |what: &str| match op {
        Some(o) => format!("{what} (most in `{o}`)"),
        None => what.to_string(),
    };
    match cause {
        "dataloader" => format!("whose DataLoader took {x} longer than its peers'"),
        "compute" => in_op(&format!("whose GPU computed {x} longer than its peers'")),
        "cpu_op" => in_op(&format!(
            "whose CPU spent {x} longer in operators before launching GPU work"
        )),
        "framework_overhead" => in_op(&format!(
            "whose Python/framework code between operators took {x} longer"
        )),
        "sync" => in_op(&format!(
            "which waited {x} longer for its own GPU in a synchronize"
        )),
        "launch_overhead" => format!("whose kernels waited {x} longer to be launched or to start"),
        "profiler" => format!("whose profiler overhead took {x} longer"),
        "untraced" => format!("whose GPU sat idle {x} longer with nothing in its trace to say why"),
        "communication" => format!("which spent {x} longer in other collectives"),
        "memcpy" => in_op(&format!("whose copies took {x} longer")),
        "memset" => format!("whose memsets took {x} longer"),
        "late_start" if from_window_start => {
            format!("which began the step {x} after its peers on average (what delayed it happened before the traced window)")
        }
        "late_start" => format!("which came out of its previous collective {x} after its peers on average"),
        other => format!("whose {other} took {x} longer"),
    }
}

fn hint(cause: &str, rank: i64, op: Option<&str>) -> String {
    let op = op.map(|o| format!(" (`{o}`)")).unwrap_or_default();
    match cause {
        "dataloader" => format!(
            "Fix rank {rank}'s input pipeline: give its DataLoader more workers (`num_workers`), `pin_memory=True` and \
             `persistent_workers=True`, and check that its shard of the data loads as fast as the others' (storage, \
             decoding, sample sizes)."
        ),
        "compute" => format!(
            "Rank {rank}'s GPU does more work{op} or works slower: balance the work across ranks (equal batch, sequence \
             or shard sizes; with variable-length inputs, bucket by length), or check that GPU's clocks and \
             temperature (throttling) against the others'."
        ),
        "cpu_op" | "framework_overhead" => format!(
            "Rank {rank}'s CPU runs the same code{op} slower than its peers', or runs code they do not: look for CPU \
             contention on its host (other processes, too few cores per rank, threads not pinned to the GPU's NUMA \
             node) and for work only that rank does (logging, checkpointing, evaluation)."
        ),
        "sync" => format!(
            "Rank {rank} blocks on its GPU{op} where its peers do not: remove that synchronize (or `.item()`) or move \
             it after the collective, so it does not delay the rank's arrival."
        ),
        "late_start" => format!(
            "Rank {rank} entered the step late: profile more steps (a longer `active` window after `warmup`) to see \
             what held it in the steps before."
        ),
        "communication" => format!(
            "Rank {rank} was still in other collectives: check that every rank issues its process groups' collectives \
             in the same order, and what those collectives waited for on rank {rank}."
        ),
        "untraced" | "launch_overhead" | "profiler" => format!(
            "Nothing in rank {rank}'s trace explains its delay: look at its host (CPU contention, garbage-collection \
             pauses, swapping) and profile it with CPU stacks (`with_stack=True`)."
        ),
        _ => format!("Find out why rank {rank} takes longer than its peers before this collective."),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idle_causes_read_as_cause_label_says() {
        for c in Cause::ALL {
            assert_eq!(job_cause_label(c.name()), c.label());
        }
        assert_eq!(job_cause_label("compute"), "longer compute");
        assert_eq!(job_cause_label("late_start"), "late start");
    }

    /// Each label reads in the loss table (and after "cause:"), an
    /// adjective such as `untraced` too.
    #[test]
    fn loss_labels_read_as_phrases() {
        assert_eq!(
            job_loss_label("wait", "communication"),
            "waiting for a late rank (time in other collectives)"
        );
        assert_eq!(
            job_loss_label("wait", "late_start"),
            "waiting for a late rank (late start)"
        );
        assert_eq!(
            job_loss_label("wait", "untraced"),
            "waiting for a late rank (untraced)"
        );
        assert_eq!(
            job_loss_label("wait", "staggered_start"),
            "waiting for peers that began the step later"
        );
        assert_eq!(
            job_loss_label("wait", "no_culprit"),
            "waiting for peers, no single late rank"
        );
        assert_eq!(job_loss_label("idle", "cpu_op"), "idle GPU: CPU-bound operator");
    }
}

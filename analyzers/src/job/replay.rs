//! What a step of the job would take if some ranks arrived earlier at some
//! collectives: the replay behind the job findings' `est_savings_ns`.
//!
//! # The model
//!
//! Each rank's step is a chain of collectives. Call i of rank r depends on
//! the rank's previous call p (the latest that ended before it started) or
//! on the step's start; its *lead* is the time from that end to its start,
//! what the rank did in between. A collective ends, on each member, a fixed
//! transfer time after its last member arrived (or after the member's own
//! arrival, for one that came last). The rank's step ends a fixed tail
//! after its last call. Replaying:
//!
//! ```text
//! A'(i) = A(i) + shift(p) - cut(i)          cut(i) <= lead(i)
//! L'(c) = max over members of A'            (collective c)
//! E'(i) = max(A'(i), L'(c)) + transfer(i)   transfer(i) = E(i) - max(A(i), L(c))
//! shift(i) = E'(i) - E(i)
//! step end'(r) = step end(r) + shift(last call of r)
//! ```
//!
//! The job's step ends when its last rank does; the saving of a set of
//! cuts is the old end minus the replayed end. Cuts only move things
//! earlier, so the saving is never negative, and it is never more than the
//! largest cut: a rank that is late again later, for its own reasons, still
//! holds everyone there.

use super::arrivals::{Clock, Timed};
use super::summary::RankSummary;
use gapscope_collectors::trace::Ns;
use std::collections::HashMap;

/// How many of a rank's latest calls are searched for the one a call
/// waits for (calls on concurrent streams interleave a little).
const PREV_LOOKBACK: usize = 64;

/// One step of the job, ready to replay.
#[derive(Clone, Debug)]
pub struct StepModel {
    /// The calls of the step, in an order where every call comes after
    /// the calls it depends on.
    calls: Vec<ModelCall>,
    /// Per rank in the step: its index, step end on the job's clock, and
    /// the position of its last call in `calls`.
    ends: Vec<(usize, Ns, Option<usize>)>,
    /// Where each `(rank, call)` sits in `calls`.
    index: HashMap<(usize, usize), usize>,
}

#[derive(Clone, Debug)]
struct ModelCall {
    rank: usize,
    arrival: Ns,
    end: Ns,
    /// The instance's last arrival (the call's own arrival when unmatched).
    last: Ns,
    /// Position of the instance in the list of instances, if matched.
    instance: Option<usize>,
    /// Position in `calls` of the call this one waits for, if any.
    prev: Option<usize>,
    /// `arrival - (end of prev, or the step's start)`.
    lead: Ns,
}

impl StepModel {
    /// The model of step `step` from the ranks' summaries and the timed
    /// instances.
    pub fn new(ranks: &[RankSummary], clock: &Clock, timed: &[Timed], step: u64) -> StepModel {
        let mut inst_of: HashMap<(usize, usize), usize> = HashMap::new();
        for (k, t) in timed.iter().enumerate() {
            for a in &t.arrivals {
                inst_of.insert((a.rank, a.call), k);
            }
        }
        struct Raw {
            rank: usize,
            call: usize,
            arrival: Ns,
            end: Ns,
            last: Ns,
            instance: Option<usize>,
        }
        let mut raw: Vec<Raw> = Vec::new();
        let mut starts: Vec<(usize, Ns, Ns)> = Vec::new();
        for (r, s) in ranks.iter().enumerate() {
            let Some(st) = s.steps.iter().find(|x| x.number == step) else {
                continue;
            };
            let (Some(start), Some(end)) = (clock.at(r, st.start_ns), clock.at(r, st.end_ns)) else {
                continue;
            };
            starts.push((r, start, end));
            for (c, call) in s.collectives.iter().enumerate() {
                if call.step != Some(step) {
                    continue;
                }
                let (Some(a), Some(e)) = (clock.at(r, call.start_ns), clock.at(r, call.end_ns)) else {
                    continue;
                };
                let instance = inst_of.get(&(r, c)).copied();
                let last = instance.map_or(a, |k| timed[k].last_arrival());
                raw.push(Raw {
                    rank: r,
                    call: c,
                    arrival: a,
                    end: e,
                    last,
                    instance,
                });
            }
        }
        // Members of one instance share `last`; the instance id keeps them
        // together when two instances end their arrivals at the same ns.
        raw.sort_by_key(|c| (c.last, c.instance.unwrap_or(usize::MAX), c.end, c.rank));
        let mut calls: Vec<ModelCall> = Vec::with_capacity(raw.len());
        let mut index = HashMap::new();
        let mut by_rank: HashMap<usize, Vec<usize>> = HashMap::new();
        for c in &raw {
            let step_start = starts.iter().find(|s| s.0 == c.rank).map_or(c.arrival, |s| s.1);
            // The rank's latest call (processed so far) that ended by this
            // one's start.
            // Calls of a rank come in nearly end order: the few most recent
            // hold the answer.
            let mine = by_rank.entry(c.rank).or_default();
            let prev = mine
                .iter()
                .rev()
                .take(PREV_LOOKBACK)
                .copied()
                .filter(|&p| calls[p].end <= c.arrival)
                .max_by_key(|&p| calls[p].end);
            mine.push(calls.len());
            let from = prev.map_or(step_start, |p| calls[p].end).min(c.arrival);
            index.insert((c.rank, c.call), calls.len());
            calls.push(ModelCall {
                rank: c.rank,
                arrival: c.arrival,
                end: c.end,
                last: c.last,
                instance: c.instance,
                prev,
                lead: c.arrival - from,
            });
        }
        let ends = starts
            .iter()
            .map(|&(r, _, end)| {
                // GPU work may run on past the step's CPU end: the last
                // call's shift moves the rank's end either way.
                let last_call = calls
                    .iter()
                    .enumerate()
                    .filter(|(_, c)| c.rank == r)
                    .max_by_key(|(_, c)| c.end)
                    .map(|(i, _)| i);
                (r, end, last_call)
            })
            .collect();
        StepModel { calls, ends, index }
    }

    /// The job's step end as recorded: the latest rank's.
    pub fn end(&self) -> Ns {
        self.ends.iter().map(|e| e.1).max().unwrap_or(0)
    }

    /// The job's step end with each `(rank, call)` of `cuts` arriving that
    /// many ns earlier (at most its lead).
    pub fn replay(&self, cuts: &HashMap<(usize, usize), Ns>) -> Ns {
        let n = self.calls.len();
        let mut arrival = vec![0; n];
        let mut shift = vec![0; n];
        let mut cut_at = vec![0; n];
        for (key, &ns) in cuts {
            if let Some(&pos) = self.index.get(key) {
                cut_at[pos] += ns;
            }
        }
        // Calls are sorted by their instance's last arrival: all members of
        // an instance come before any call that depends on it, so one pass
        // computes arrivals, and a second the ends, instance by instance.
        let mut i = 0;
        while i < n {
            // The calls of one instance (or one unmatched call).
            let mut j = i + 1;
            if let Some(k) = self.calls[i].instance {
                while j < n && self.calls[j].instance == Some(k) {
                    j += 1;
                }
            }
            for (m, c) in self.calls.iter().enumerate().take(j).skip(i) {
                let before = c.prev.map_or(0, |p| shift[p]);
                let cut = cut_at[m].clamp(0, c.lead.max(0));
                arrival[m] = c.arrival + before - cut;
            }
            let last = (i..j).map(|m| arrival[m]).max().unwrap_or(0);
            for (m, c) in self.calls.iter().enumerate().take(j).skip(i) {
                let transfer = c.end - c.arrival.max(c.last);
                let end = arrival[m].max(if c.instance.is_some() { last } else { arrival[m] }) + transfer;
                shift[m] = end - c.end;
            }
            i = j;
        }
        self.ends
            .iter()
            .map(|&(_, end, last_call)| end + last_call.map_or(0, |c| shift[c]))
            .max()
            .unwrap_or(0)
    }

    /// The saving of `cuts`: recorded end minus replayed end.
    pub fn saving(&self, cuts: &HashMap<(usize, usize), Ns>) -> Ns {
        (self.end() - self.replay(cuts)).max(0)
    }
}

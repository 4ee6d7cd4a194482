//! Who arrived when at each collective, on the job's clock, and how each
//! member's time in it splits into waiting for the last peer (sync skew)
//! and the transfer itself.
//!
//! A collective kernel starts when its rank arrives and cannot finish
//! before the last member has arrived, so on rank r:
//!
//! ```text
//! rank 0   [......wait......|transfer]        wait_0 = A_last - A_0
//! rank 1        [...wait....|transfer]
//! rank 2 (last)             [transfer]        lateness = A_last - A_second_last
//!          A_0  A_1         A_last
//! ```
//!
//! The wait is cut to the kernel's own length (a residual of the clock
//! alignment can put the last arrival after a short kernel's end). The
//! lateness is how long the last rank alone held the others back: had it
//! arrived with the second-last, everyone would have started the transfer
//! that much sooner.

use super::align::{Alignment, Instance};
use super::summary::RankSummary;
use crate::intervals;
use gapscope_collectors::trace::Ns;

/// One member of a collective.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Arrival {
    /// Rank index (into the job's ranks).
    pub rank: usize,
    /// Call index (into that rank's collectives).
    pub call: usize,
    /// Kernel start on the job's clock, ns since the job's origin.
    pub start: Ns,
    /// Kernel end, same clock.
    pub end: Ns,
    /// Time spent waiting for the last peer.
    pub wait_ns: Ns,
    /// The rest of the kernel: the transfer.
    pub transfer_ns: Ns,
    /// The part of the wait no compute kernel overlapped.
    pub exposed_wait_ns: Ns,
    /// The part of the transfer no compute kernel overlapped.
    pub exposed_transfer_ns: Ns,
}

/// One collective across its members.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Timed {
    /// The step it belongs to (its members' step; the most common one).
    pub step: Option<u64>,
    /// The kind (`all_reduce`, ...).
    pub kind: String,
    /// Its position among the collectives of this kind in this step, from 1.
    pub ordinal: usize,
    /// Members, by arrival (last arriver last).
    pub arrivals: Vec<Arrival>,
    /// The last arriver's lead over the second-last: how long it alone
    /// held the others back.
    pub lateness_ns: Ns,
}

impl Timed {
    /// The last arriver.
    pub fn last(&self) -> &Arrival {
        self.arrivals.last().expect("an instance has members")
    }

    /// When the last member arrived.
    pub fn last_arrival(&self) -> Ns {
        self.last().start
    }

    /// Total wait of all members.
    pub fn total_wait_ns(&self) -> Ns {
        self.arrivals.iter().map(|a| a.wait_ns).sum()
    }

    /// The part of `a`'s wait the last arriver alone caused: the wait after
    /// the second-last member arrived. Before that the collective waited
    /// for the second-last too (and maybe others), so a last arriver on
    /// time would not have ended that part.
    pub fn caused_wait_of(&self, a: &Arrival) -> Ns {
        a.wait_ns.clamp(0, self.lateness_ns.max(0))
    }

    /// The wait the last arriver alone caused, summed over the others
    /// ([`Timed::caused_wait_of`]): what it holds the rest back by.
    pub fn caused_wait_ns(&self) -> Ns {
        let others = &self.arrivals[..self.arrivals.len() - 1];
        others.iter().map(|a| self.caused_wait_of(a)).sum()
    }
}

/// Converts rank-local times to the job's clock.
#[derive(Clone, Debug)]
pub struct Clock {
    /// Per rank index: `origin_ns + offset - job origin`, or `None` when the
    /// rank's clock could not be aligned.
    pub shift: Vec<Option<Ns>>,
}

impl Clock {
    /// The job's clock: aligned absolute time, with 0 at the earliest
    /// aligned window start.
    pub fn new(ranks: &[RankSummary], alignment: &Alignment) -> Clock {
        let abs: Vec<Option<Ns>> = ranks
            .iter()
            .zip(&alignment.offsets)
            .map(|(r, o)| o.map(|o| r.origin_ns + o))
            .collect();
        let origin = ranks
            .iter()
            .zip(&abs)
            .filter_map(|(r, a)| a.map(|a| a + r.window.0))
            .min()
            .unwrap_or(0);
        Clock {
            shift: abs.into_iter().map(|a| a.map(|a| a - origin)).collect(),
        }
    }

    /// Rank `r`'s local time `t` on the job's clock.
    pub fn at(&self, r: usize, t: Ns) -> Option<Ns> {
        self.shift[r].map(|s| s + t)
    }
}

/// Times every instance on the job's clock; instances with fewer than two
/// aligned members are left out.
pub fn time_instances(ranks: &[RankSummary], alignment: &Alignment, clock: &Clock) -> Vec<Timed> {
    let mut out: Vec<Timed> = alignment
        .instances
        .iter()
        .filter_map(|inst| time_one(ranks, inst, clock))
        .collect();
    // Ordinals in order of the last arrival.
    out.sort_by_key(|t| (t.last_arrival(), t.step));
    let mut seen: std::collections::HashMap<(Option<u64>, String), usize> = Default::default();
    for t in &mut out {
        let n = seen.entry((t.step, t.kind.clone())).or_default();
        *n += 1;
        t.ordinal = *n;
    }
    out
}

fn time_one(ranks: &[RankSummary], inst: &Instance, clock: &Clock) -> Option<Timed> {
    let mut arrivals: Vec<Arrival> = inst
        .members
        .iter()
        .filter_map(|&(r, c)| {
            let call = &ranks[r].collectives[c];
            Some(Arrival {
                rank: r,
                call: c,
                start: clock.at(r, call.start_ns)?,
                end: clock.at(r, call.end_ns)?,
                wait_ns: 0,
                transfer_ns: 0,
                exposed_wait_ns: 0,
                exposed_transfer_ns: 0,
            })
        })
        .collect();
    if arrivals.len() < 2 {
        return None;
    }
    arrivals.sort_by_key(|a| (a.start, ranks[a.rank].rank));
    let last = arrivals[arrivals.len() - 1].start;
    let second = arrivals[arrivals.len() - 2].start;
    for a in &mut arrivals {
        let call = &ranks[a.rank].collectives[a.call];
        let dur = a.end - a.start;
        a.wait_ns = (last - a.start).clamp(0, dur);
        a.transfer_ns = dur - a.wait_ns;
        // Exposure in the rank's own clock, where its overlap spans live.
        let split = call.start_ns + a.wait_ns;
        let hidden_wait = intervals::total_in(&call.compute_overlap, (call.start_ns, split));
        let hidden_transfer = intervals::total_in(&call.compute_overlap, (split, call.end_ns));
        a.exposed_wait_ns = a.wait_ns - hidden_wait;
        a.exposed_transfer_ns = a.transfer_ns - hidden_transfer;
    }
    let first = &ranks[inst.members[0].0].collectives[inst.members[0].1];
    Some(Timed {
        step: common_step(ranks, inst),
        kind: first.kind.clone(),
        ordinal: 0,
        arrivals,
        lateness_ns: last - second,
    })
}

/// The most common step among the members (the lowest on ties).
fn common_step(ranks: &[RankSummary], inst: &Instance) -> Option<u64> {
    let mut steps: Vec<Option<u64>> = inst
        .members
        .iter()
        .map(|&(r, c)| ranks[r].collectives[c].step)
        .collect();
    steps.sort_unstable();
    steps
        .chunk_by(|a, b| a == b)
        .max_by_key(|g| (g.len(), std::cmp::Reverse(g[0])))
        .map(|g| g[0])
        .unwrap_or(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn arrival(rank: usize, start: Ns, last: Ns) -> Arrival {
        Arrival {
            rank,
            call: 0,
            start,
            end: last + 1_000,
            wait_ns: last - start,
            transfer_ns: 1_000,
            exposed_wait_ns: 0,
            exposed_transfer_ns: 0,
        }
    }

    #[test]
    fn the_last_rank_alone_caused_only_the_wait_after_the_second_last_arrived() {
        // Ranks arrive at 0, 9 and 10 ms: the first waits 10 ms, of which 9
        // for the second rank too; the last rank alone held both back 1 ms.
        let ms = 1_000_000;
        let t = Timed {
            step: Some(1),
            kind: "all_reduce".into(),
            ordinal: 1,
            arrivals: vec![
                arrival(0, 0, 10 * ms),
                arrival(1, 9 * ms, 10 * ms),
                arrival(2, 10 * ms, 10 * ms),
            ],
            lateness_ns: ms,
        };
        assert_eq!(t.total_wait_ns(), 11 * ms);
        assert_eq!(t.caused_wait_of(&t.arrivals[0]), ms);
        assert_eq!(t.caused_wait_of(&t.arrivals[1]), ms);
        assert_eq!(t.caused_wait_ns(), 2 * ms);
        // A wait cut short by its kernel's length is all the late rank's.
        let mut short = t.clone();
        short.arrivals[0].wait_ns = ms / 2;
        assert_eq!(short.caused_wait_ns(), ms + ms / 2);
    }
}

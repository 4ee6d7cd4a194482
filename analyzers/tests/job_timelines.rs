//! The job analysis on small drawn jobs: every number below can be read
//! off the drawing.

use gapscope_analyzers::breakdown::Breakdown;
use gapscope_analyzers::causes::{Cause, CauseTotals};
use gapscope_analyzers::job::align::{align, MatchMethod};
use gapscope_analyzers::job::summary::{CollectiveCall, LeadIn, RankStep, SUMMARY_VERSION};
use gapscope_analyzers::job::{analyze_job, JobOptions, RankSummary};

/// A call: kind, start, end, lead-in start, and the lead-in's parts as
/// (compute, dataloader idle, cpu_op idle).
struct Call(&'static str, i64, i64, i64, (i64, i64, i64));

fn rank(rank: i64, origin: i64, step_end: i64, calls: &[Call]) -> RankSummary {
    RankSummary {
        summary_version: SUMMARY_VERSION,
        rank,
        world_size: Some(3),
        source: format!("rank{rank}"),
        origin_ns: origin,
        device: Some(0),
        window: (0, step_end),
        steps: vec![RankStep {
            number: 1,
            start_ns: 0,
            end_ns: step_end,
            breakdown: Breakdown {
                window_ns: step_end,
                ..Breakdown::default()
            },
            idle_by_cause_ns: CauseTotals::default(),
        }],
        collectives: calls
            .iter()
            .map(|c| {
                let mut idle = CauseTotals::default();
                idle.add(Cause::Dataloader, c.4 .1);
                idle.add(Cause::CpuOp, c.4 .2);
                let lead = LeadIn {
                    start_ns: c.3,
                    compute_ns: c.4 .0,
                    idle_by_cause_ns: idle,
                    ..LeadIn::default()
                };
                assert_eq!(lead.total_ns(), c.1 - c.3, "a lead-in's parts add up to it");
                CollectiveCall {
                    kind: c.0.into(),
                    group: None,
                    seq: None,
                    step: Some(1),
                    stream: 7,
                    start_ns: c.1,
                    end_ns: c.2,
                    launch_ns: None,
                    compute_overlap: vec![],
                    lead_in: lead,
                }
            })
            .collect(),
        analysis: None,
    }
}

/// ```text
/// job clock  0    10   20   30   40   50   60   70   80
/// rank 0     cc..[ar.........................]ccccc[ar]...|
/// rank 1     ccc.[ar.........................]ccccc[ar]...|
/// rank 2     dddddddddddddddddddddddddddddd[ar]ccccc[ar]...|
///                                          ^ 40: rank 2 arrives; all end at 50
/// ```
/// Rank 2's DataLoader (d) takes 30 ns where the others compute 10-12: it
/// arrives 28 after rank 1, 30 after rank 0. Clocks: rank 1's reads 1000
/// more, rank 2's 2000 more.
fn late_dataloader() -> Vec<RankSummary> {
    vec![
        rank(
            0,
            0,
            80,
            &[
                Call("all_reduce", 10, 50, 0, (10, 0, 0)),
                Call("all_reduce", 60, 70, 50, (10, 0, 0)),
            ],
        ),
        rank(
            1,
            1000,
            80,
            &[
                Call("all_reduce", 12, 50, 0, (12, 0, 0)),
                Call("all_reduce", 60, 70, 50, (10, 0, 0)),
            ],
        ),
        rank(
            2,
            2000,
            80,
            &[
                Call("all_reduce", 40, 50, 0, (0, 30, 10)),
                Call("all_reduce", 60, 70, 50, (10, 0, 0)),
            ],
        ),
    ]
}

#[test]
fn offsets_waits_culprit_and_saving() {
    let ranks = late_dataloader();
    let a = align(&ranks);
    assert_eq!(a.offsets, [Some(0), Some(-1000), Some(-2000)]);
    assert_eq!(a.ranks[1].method, MatchMethod::Order);
    assert_eq!(a.ranks[2].residual_max_ns, Some(0));
    let opts = JobOptions { min_lateness_ns: 5 };
    let j = analyze_job(&ranks, &opts);
    let c = &j.collectives[0];
    assert_eq!((c.last_rank, c.lateness_ns, c.total_wait_ns), (2, 28, 30 + 28));
    assert!(!j.collectives[1].late);
    let f = &j.findings[0];
    assert_eq!(f.id, "straggler_wait");
    assert_eq!(f.culprit_rank, Some(2));
    assert_eq!(f.cause.as_deref(), Some("dataloader"));
    // DataLoader 30 vs the peers' mean 0.
    assert_eq!(f.cause_ns, 30);
    assert_eq!(
        f.wait_ns.iter().map(|(&r, &w)| (r, w)).collect::<Vec<_>>(),
        [(0, 30), (1, 28)]
    );
    // Rank 2 arriving with rank 1 (at 12) ends the all-reduce at 22, so
    // everything after moves 28 earlier.
    assert_eq!(f.est_savings_ns, 28);
    assert_eq!(f.title, "step 1: ranks 0, 1 waited 28 ns to 30 ns in all_reduce #1 for rank 2, whose DataLoader took 30 ns longer than its peers'");
    let s = &j.steps[0];
    assert_eq!((s.start_ns, s.end_ns), (0, 80));
    let waits: Vec<i64> = s.ranks.iter().map(|r| r.wait_ns).collect();
    assert_eq!(waits, [30, 28, 0]);
    let transfers: Vec<i64> = s.ranks.iter().map(|r| r.transfer_ns).collect();
    assert_eq!(transfers, [20, 20, 20]);
}

/// ```text
/// rank 0     cc..[ar.........................]
/// rank 1     ddddddddddddddddddddddddddd[ar..]      arrives at 38
/// rank 2     dddddddddddddddddddddddddddddd[ar]     arrives at 40
/// ```
/// Two late ranks: rank 2 is last, but only 2 ns after rank 1, so fixing
/// rank 2 alone saves 2 ns of the 58 the others waited.
#[test]
fn two_late_ranks_fixing_one_saves_little() {
    let ranks = vec![
        rank(0, 0, 80, &[Call("all_reduce", 10, 50, 0, (10, 0, 0))]),
        rank(1, 0, 80, &[Call("all_reduce", 38, 50, 0, (0, 28, 10))]),
        rank(2, 0, 80, &[Call("all_reduce", 40, 50, 0, (0, 30, 10))]),
    ];
    let j = analyze_job(&ranks, &JobOptions { min_lateness_ns: 1 });
    let f = &j.findings[0];
    assert_eq!(f.culprit_rank, Some(2));
    assert_eq!(f.lateness_ns, 2);
    assert_eq!(f.total_wait_ns, 30 + 2);
    assert_eq!(f.est_savings_ns, 2);
}

/// ```text
/// rank 0   [a1]   [a2]   [a3]   [a4]        four all-reduces
/// rank 1   [a1]          [a3]   [a4]        its trace lost a2
/// ```
/// Counts differ, so order cannot pair them: the offset votes (rank 1's
/// clock reads 5 ms more) pair the three it has.
#[test]
fn a_lost_call_is_matched_by_time() {
    let c = |s: i64| Call("all_reduce", s, s + 100, s - 10, (10, 0, 0));
    let ranks = vec![
        rank(0, 0, 10_000, &[c(1_000), c(3_000), c(5_000), c(7_000)]),
        rank(1, 5_000_000, 10_000, &[c(1_000), c(5_000), c(7_000)]),
    ];
    let a = align(&ranks);
    assert_eq!(a.ranks[1].method, MatchMethod::Time);
    assert_eq!(a.offsets[1], Some(-5_000_000));
    assert_eq!((a.ranks[1].matched, a.ranks[1].unmatched), (3, 0));
    assert_eq!(a.ranks[0].unmatched, 1);
    let members: Vec<Vec<(usize, usize)>> = a.instances.iter().map(|i| i.members.clone()).collect();
    assert_eq!(
        members,
        [vec![(0, 0), (1, 0)], vec![(0, 2), (1, 1)], vec![(0, 3), (1, 2)]]
    );
}

/// Same counts, but the calls at 3 ms and 9 ms exist on one rank only
/// (two process groups each rank is in only one of): pairs by order
/// would not overlap once shifted, so order is refused and the offset
/// votes pair the two shared calls.
#[test]
fn order_that_contradicts_time_is_refused() {
    let ms = 1_000_000;
    let c = |s: i64| Call("all_reduce", s, s + 100_000, s - 10, (10, 0, 0));
    let ranks = vec![
        rank(0, 0, 10 * ms, &[c(ms), c(3 * ms), c(5 * ms)]),
        rank(1, 0, 10 * ms, &[c(ms), c(5 * ms), c(9 * ms)]),
    ];
    let a = align(&ranks);
    assert_eq!(a.ranks[1].method, MatchMethod::Time);
    assert_eq!(a.offsets[1], Some(0));
    assert_eq!(a.ranks[1].matched, 2);
}

/// ```text
/// µs         1000  1500  2000  3000   5000  5500  6000  7000
/// rank 0     [A1........]                                     group a
///                  [B1..............]                         group b
///                                     [A2........]
///                                           [B2.............]
/// rank 1     B1 launched first, then A1, B2, A2 (its clock 5 ms ahead):
///              [B1...............]
///                   [A1.]  ...
/// ```
/// Two process groups whose all-reduces the ranks launch in different
/// orders. Every call ends when its group's collective ends, on both ranks.
/// By order (kind and step alike) rank 0's A1 pairs with rank 1's B1: the
/// pairs still overlap, so order is accepted and the residual shows the
/// wrong pairing (1 ms). With process groups and sequence numbers each
/// call pairs with its own, to the nanosecond.
#[test]
fn groups_interleaved_differently_match_by_sequence_not_by_order() {
    let us = 1_000;
    let off = 5_000 * us;
    let c = |s: i64, e: i64| Call("all_reduce", s * us, e * us, s * us - 10, (10, 0, 0));
    let plain = vec![
        rank(
            0,
            0,
            10_000 * us,
            &[c(1000, 2000), c(1500, 3000), c(5000, 6000), c(5500, 7000)],
        ),
        rank(
            1,
            off,
            10_000 * us,
            &[c(1200, 3000), c(1600, 2000), c(5100, 7000), c(5700, 6000)],
        ),
    ];
    let by_order = align(&plain);
    assert_eq!(by_order.ranks[1].method, MatchMethod::Order);
    assert_eq!(by_order.ranks[1].matched_by_seq, 0);
    assert!(
        by_order.ranks[1].residual_max_ns.unwrap() >= 500 * us,
        "{:?}",
        by_order.ranks[1]
    );
    let mut numbered = plain.clone();
    let ids = [
        [("a", 1), ("b", 1), ("a", 2), ("b", 2)],
        [("b", 1), ("a", 1), ("b", 2), ("a", 2)],
    ];
    for (r, calls) in numbered.iter_mut().enumerate() {
        for (call, (g, q)) in calls.collectives.iter_mut().zip(ids[r]) {
            call.group = Some(g.into());
            call.seq = Some(q);
        }
    }
    let a = align(&numbered);
    assert_eq!(a.ranks[0].method, MatchMethod::Reference);
    assert_eq!(a.ranks[1].method, MatchMethod::Sequence);
    assert_eq!((a.ranks[1].matched, a.ranks[1].matched_by_seq), (4, 4));
    assert_eq!(a.ranks[1].residual_max_ns, Some(0));
    assert_eq!(a.offsets[1], Some(-off));
    let members: Vec<Vec<(usize, usize)>> = a.instances.iter().map(|i| i.members.clone()).collect();
    assert_eq!(
        members,
        [
            vec![(0, 0), (1, 1)],
            vec![(0, 1), (1, 0)],
            vec![(0, 2), (1, 3)],
            vec![(0, 3), (1, 2)]
        ]
    );
    // A group one rank numbers and another does not falls back to order
    // for that group only.
    let mut half = numbered.clone();
    for call in half[1]
        .collectives
        .iter_mut()
        .filter(|c| c.group.as_deref() == Some("b"))
    {
        call.seq = None;
    }
    let h = align(&half);
    assert_eq!(h.ranks[1].method, MatchMethod::Order);
    assert_eq!((h.ranks[1].matched, h.ranks[1].matched_by_seq), (4, 2));
    assert_eq!(h.ranks[1].residual_max_ns, Some(0));
}

//! The job analysis on small drawn jobs: every number below can be read
//! off the drawing.

use gapscope_analyzers::analysis::AnalyzeOptions;
use gapscope_analyzers::breakdown::Breakdown;
use gapscope_analyzers::causes::{Cause, CauseTotals};
use gapscope_analyzers::job::align::{align, MatchMethod};
use gapscope_analyzers::job::summary::{CollectiveCall, LeadIn, RankStep, SUMMARY_VERSION};
use gapscope_analyzers::job::{
    analyze_job, summarize_rank, JobAnalysis, JobFinding, JobOptions, RankSummary,
};
use gapscope_analyzers::workload::Workload;
use gapscope_collectors::trace::Sketch;

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
        gloo_collectives: 0,
        workload: Workload::Training,
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
    // Rank 0 waited 30, but its first 2 for rank 1 as well: 28 each is
    // rank 2's alone.
    assert_eq!(
        f.wait_ns.iter().map(|(&r, &w)| (r, w)).collect::<Vec<_>>(),
        [(0, 28), (1, 28)]
    );
    // Rank 2 arriving with rank 1 (at 12) ends the all-reduce at 22, so
    // everything after moves 28 earlier.
    assert_eq!(f.est_savings_ns, 28);
    assert_eq!(f.title, "step 1: ranks 0, 1 waited 28 ns in all_reduce #1 for rank 2, whose DataLoader took 30 ns longer than its peers'");
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
/// rank 2 alone saves 2 ns of the 30 + 2 the others waited; the wait it
/// alone caused is the last 2 ns of each, and the rest has no single
/// culprit.
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
    assert_eq!(f.total_wait_ns, 2 + 2);
    assert_eq!(f.est_savings_ns, 2);
    assert_eq!(j.collectives[0].total_wait_ns, 30 + 2);
    let culprit: i64 = j.summary.wait_by_cause_ns.values().sum();
    assert_eq!(culprit, 4);
    let none = j.summary.top_causes.iter().find(|c| c.cause == "no_culprit");
    assert_eq!(none.map(|c| c.ns), Some(28));
}

/// The job's time lost to `cause` (a `top_causes` row), if any.
fn lost_to(j: &JobAnalysis, cause: &str) -> Option<i64> {
    j.summary
        .top_causes
        .iter()
        .find(|c| c.cause == cause)
        .map(|c| c.ns)
}

/// `rank`, with its step (and window) starting at `start`.
fn rank_starting(r: i64, start: i64, step_end: i64, calls: &[Call]) -> RankSummary {
    let mut s = rank(r, 0, step_end, calls);
    s.window.0 = start;
    s.steps[0].start_ns = start;
    s.steps[0].breakdown.window_ns = step_end - start;
    s
}

/// ```text
/// ns         0    10   20   30        50
/// rank 0     cccccc[ar..................]
/// rank 1          cccccc[ar.............]
/// rank 2               cccccc[ar........]
/// ```
/// The ranks begin the step at 0, 10 and 20 and each computes 10 ns
/// before the all-reduce: begun together, none would have waited. Rank 2
/// alone holds the others back the last 10 ns (its late start); rank 0's
/// first 10 ns of waiting were for rank 1 too, who also began late: the
/// staggered starts, not "no single late rank".
#[test]
fn waits_for_ranks_that_began_the_step_later() {
    let ranks = vec![
        rank_starting(0, 0, 80, &[Call("all_reduce", 10, 50, 0, (10, 0, 0))]),
        rank_starting(1, 10, 80, &[Call("all_reduce", 20, 50, 10, (10, 0, 0))]),
        rank_starting(2, 20, 80, &[Call("all_reduce", 30, 50, 20, (10, 0, 0))]),
    ];
    let j = analyze_job(&ranks, &JobOptions { min_lateness_ns: 1 });
    assert_eq!(j.collectives[0].total_wait_ns, 20 + 10);
    assert_eq!(j.summary.wait_by_cause_ns.get("late_start"), Some(&20));
    let cause = |name: &str| lost_to(&j, name);
    assert_eq!(cause("staggered_start"), Some(10));
    assert_eq!(cause("no_culprit"), None);
    // A finding says so, with no culprit and no estimated saving: at most
    // the 20 ns between the first and the last start.
    let f = j
        .findings
        .iter()
        .find(|f| f.id == "staggered_start")
        .unwrap_or_else(|| panic!("{:#?}", j.findings));
    assert_eq!(f.culprit_rank, None);
    assert_eq!(
        (f.total_wait_ns, f.est_savings_ns, f.savings_bound_ns),
        (10, 0, Some(20))
    );
    assert_eq!(f.wait_ns.get(&0), Some(&10));
    assert!(
        f.title.starts_with(
            "step 1: the ranks began the step up to 20 ns apart, and at its first collective (all_reduce #1)"
        ),
        "{}",
        f.title
    );
}

/// Near miss: the same arrivals from one start, each rank computing longer
/// (10, 20, 30 ns): rank 0's first 10 ns of waiting are for two ranks'
/// longer work, which no start explains.
#[test]
fn waits_for_several_slower_ranks_are_no_staggered_start() {
    let ranks = vec![
        rank_starting(0, 0, 80, &[Call("all_reduce", 10, 50, 0, (10, 0, 0))]),
        rank_starting(1, 0, 80, &[Call("all_reduce", 20, 50, 0, (20, 0, 0))]),
        rank_starting(2, 0, 80, &[Call("all_reduce", 30, 50, 0, (30, 0, 0))]),
    ];
    let j = analyze_job(&ranks, &JobOptions { min_lateness_ns: 1 });
    assert_eq!(j.collectives[0].total_wait_ns, 20 + 10);
    assert_eq!(j.summary.wait_by_cause_ns.get("compute"), Some(&20));
    let cause = |name: &str| lost_to(&j, name);
    assert_eq!(cause("staggered_start"), None);
    assert_eq!(cause("no_culprit"), Some(10));
    assert!(
        !j.findings.iter().any(|f| f.id == "staggered_start"),
        "{:#?}",
        j.findings
    );
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

/// A rank drawn as a trace (µs), summarised as a rank of a job: steps of
/// `step` µs, its clock reading `clock` µs more than the job's. In step
/// n (from 1, at b = clock + (n - 1) * step): a compute kernel on stream 7
/// over `compute`, the all-reduce on stream 9 over `all_reduce`, and
/// compute kernels on stream 8 over `hidden`, each shifted by b.
fn drawn(rank: i64, clock: i64, steps: i64, step: i64, parts: &Parts) -> RankSummary {
    let mut s = Sketch::in_units(1_000);
    for n in 1..=steps {
        let b = clock + (n - 1) * step;
        s.step(n as u64, b, b + step)
            .kernel(7, b + parts.compute.0, b + parts.compute.1, 0)
            .nccl(9, b + parts.all_reduce.0, b + parts.all_reduce.1);
        for &(x, y) in &parts.hidden {
            s.kernel(8, b + x, b + y, 0);
        }
    }
    summarize_rank(&s.finish(), &AnalyzeOptions::default(), Some(rank))
}

struct Parts {
    compute: (i64, i64),
    all_reduce: (i64, i64),
    hidden: Vec<(i64, i64)>,
}

const US: i64 = 1_000;

/// ```text
/// µs         0        500 520 540 600  700 760   900  1000
/// rank 0     [compute..]                                 |   stream 7
///                      [all_reduce.....................]     stream 9
///                          [c.]          [c...]              stream 8
/// rank 1     [compute.........]                          |
///                             [all_reduce..............]
/// ```
/// Rank 0 arrives at 500, rank 1 at 600; both end at 900 (rank 1's clock
/// reads 3 ms more). Rank 0 waits 100 µs, of which compute hides 20, and
/// transfers 300, of which compute hides 60: exposed wait 80, exposed
/// transfer 240. Rank 1 waits nothing and transfers 300, none hidden.
/// The median rank's exposed transfer (mean of 240 and 300: 270 µs) is
/// 27 % of the 1000 µs step: an `exposed_communication` finding whose
/// saving is that, bounded by the median compute (580 and 600: 590 µs).
#[test]
fn wait_and_transfer_split_into_exposed_and_hidden() {
    let ranks = vec![
        drawn(
            0,
            0,
            1,
            1000,
            &Parts {
                compute: (0, 500),
                all_reduce: (500, 900),
                hidden: vec![(520, 540), (700, 760)],
            },
        ),
        drawn(
            1,
            3_000,
            1,
            1000,
            &Parts {
                compute: (0, 600),
                all_reduce: (600, 900),
                hidden: vec![],
            },
        ),
    ];
    assert_eq!(
        ranks[0].collectives[0].compute_overlap,
        [(520 * US, 540 * US), (700 * US, 760 * US)]
    );
    assert_eq!(ranks[1].collectives[0].start_ns, 3_600 * US);
    let j = analyze_job(&ranks, &JobOptions::default());
    assert_eq!(j.alignment.ranks[1].offset_ns, Some(-3_000_000));
    let split = |r: usize| {
        let x = &j.ranks[r];
        (x.wait_ns, x.exposed_wait_ns, x.transfer_ns, x.exposed_transfer_ns)
    };
    assert_eq!(split(0), (100 * US, 80 * US, 300 * US, 240 * US));
    assert_eq!(split(1), (0, 0, 300 * US, 300 * US));
    let step: Vec<_> = j.steps[0]
        .ranks
        .iter()
        .map(|x| {
            (
                x.rank,
                x.wait_ns,
                x.exposed_wait_ns,
                x.transfer_ns,
                x.exposed_transfer_ns,
            )
        })
        .collect();
    assert_eq!(
        step,
        [
            (0, 100 * US, 80 * US, 300 * US, 240 * US),
            (1, 0, 0, 300 * US, 300 * US)
        ]
    );
    assert_eq!(j.steps[0].span_ns, 1000 * US);
    let f = exposed(&j).expect("270 µs of 1000");
    assert_eq!((f.cause_ns, f.est_savings_ns), (270 * US, 270 * US));
    assert_eq!(
        f.title,
        "collective transfers that no compute hides take 270 µs per step on the median rank (27% of the job's step)"
    );
    // Rank 1 arrived 100 µs late: its compute, 100 µs more than rank 0's
    // before the all-reduce.
    let s = j.findings.iter().find(|f| f.id == "straggler_wait").unwrap();
    assert_eq!((s.culprit_rank, s.cause.as_deref()), (Some(1), Some("compute")));
    assert_eq!(
        s.wait_ns.iter().map(|(&r, &w)| (r, w)).collect::<Vec<_>>(),
        [(0, 100 * US)]
    );
}

fn exposed(j: &JobAnalysis) -> Option<&JobFinding> {
    let mut f = j.findings.iter().filter(|f| f.id == "exposed_communication");
    let first = f.next();
    assert!(f.next().is_none(), "one exposed_communication per job");
    first
}

/// Three ranks, two steps of `step` µs, all arriving at the all-reduce
/// together at 600 (no wait); it runs to 900, and compute on stream 8
/// hides all of the transfer but the last `exposed[r]` µs on rank r.
fn exposed_job(exposed: [i64; 3], step: i64) -> JobAnalysis {
    analyze_job(&exposed_ranks(exposed, step), &JobOptions::default())
}

/// The ranks of [`exposed_job`].
fn exposed_ranks(exposed: [i64; 3], step: i64) -> Vec<RankSummary> {
    exposed
        .iter()
        .enumerate()
        .map(|(r, &x)| {
            let hidden = if x < 300 { vec![(600, 900 - x)] } else { vec![] };
            drawn(
                r as i64,
                r as i64 * 1_000,
                2,
                step,
                &Parts {
                    compute: (0, 600),
                    all_reduce: (600, 900),
                    hidden,
                },
            )
        })
        .collect()
}

/// ```text
/// µs        0          600         900   1000
/// rank 0    [compute....][all_reduce..]     |      exposed 300
/// rank 1    [compute....][all_reduce..]     |
///                        [c.......]                exposed 200
/// rank 2    [compute....][all_reduce..]     |
///                        [c...........]            exposed 0
/// ```
/// The median rank exposes 200 µs per step, 20 % of the 1000 µs step:
/// 400 µs over the 2 steps, all of it could hide behind the median
/// rank's 700 µs of compute per step.
#[test]
fn exposed_communication_on_the_median_rank() {
    let j = exposed_job([300, 200, 0], 1000);
    let per_rank: Vec<_> = j
        .ranks
        .iter()
        .map(|r| (r.transfer_ns, r.exposed_transfer_ns))
        .collect();
    assert_eq!(
        per_rank,
        [(600 * US, 600 * US), (600 * US, 400 * US), (600 * US, 0)]
    );
    assert!(j.ranks.iter().all(|r| (r.wait_ns, r.exposed_wait_ns) == (0, 0)));
    for s in &j.steps {
        assert_eq!(s.span_ns, 1000 * US);
        let compute: Vec<i64> = s.ranks.iter().map(|r| r.breakdown.compute_ns).collect();
        assert_eq!(compute, [600 * US, 700 * US, 900 * US]);
    }
    let f = exposed(&j).expect("200 µs of 1000 per step");
    assert_eq!(f.steps, [1, 2]);
    assert_eq!((f.cause_ns, f.est_savings_ns), (400 * US, 400 * US));
    assert_eq!(f.cause.as_deref(), Some("communication"));
    assert_eq!(f.culprit_rank, None);
    assert_eq!(
        f.title,
        "collective transfers that no compute hides take 200 µs per step on the median rank (20% of the job's step)"
    );
}

/// The job's advice follows what its ranks' traces show: with no backward
/// pass or optimizer step on any rank (tensor-parallel inference), no
/// gradient overlap advice; one rank that shows training brings it back.
/// (The drawn ranks record no CPU operators: they cannot tell, and keep
/// the training advice, as in the test above.)
#[test]
fn exposed_communication_advice_follows_the_ranks_workload() {
    let hint = |each: [Workload; 3]| {
        let mut ranks = exposed_ranks([300, 200, 0], 1000);
        for (r, w) in ranks.iter_mut().zip(each) {
            r.workload = w;
        }
        let j = analyze_job(&ranks, &JobOptions::default());
        exposed(&j).expect("exposed").hint.clone()
    };
    let none = Workload::NoBackwardOrOptimizer;
    let forward = hint([none; 3]);
    assert!(!forward.contains("backward_prefetch"), "{forward}");
    assert!(
        forward.contains("No rank's trace has a backward pass"),
        "{forward}"
    );
    let training = hint([none, Workload::Training, none]);
    assert!(
        training.contains("gradient all-reduce with backward"),
        "{training}"
    );
    let unknown = hint([Workload::Unknown; 3]);
    assert_eq!(unknown, training);
}

/// Overlapped and near misses: one rank exposes 300 µs but the median rank
/// none; 90 µs per step exposed everywhere (9 % of the step, under the
/// 100 µs floor) where 110 µs is a finding; 150 µs in a 4 ms step (3.75 %,
/// under 5 %) where a 2 ms step (7.5 %) is one.
#[test]
fn exposed_communication_near_misses() {
    assert!(exposed(&exposed_job([300, 0, 0], 1000)).is_none());
    assert!(exposed(&exposed_job([90, 90, 90], 1000)).is_none());
    let j = exposed_job([110, 110, 110], 1000);
    let f = exposed(&j).expect("110 µs");
    assert_eq!((f.cause_ns, f.est_savings_ns), (220 * US, 220 * US));
    assert!(exposed(&exposed_job([150, 150, 150], 4000)).is_none());
    let j = exposed_job([150, 150, 150], 2000);
    let f = exposed(&j).expect("7.5 %");
    assert_eq!(f.cause_ns, 300 * US);
    assert!(
        f.title
            .ends_with("take 150 µs per step on the median rank (8% of the job's step)"),
        "{}",
        f.title
    );
}

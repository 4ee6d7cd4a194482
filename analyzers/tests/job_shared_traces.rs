//! The job analysis on the real multi-rank traces in ../shared/traces:
//! DLRM's 8 ranks (PARAM) and HTA's two sampled ranks of 128.

mod shared_traces;

use gapscope_analyzers::analysis::AnalyzeOptions;
use gapscope_analyzers::job::align::MatchMethod;
use gapscope_analyzers::job::{analyze_job, summarize_rank, JobAnalysis, JobOptions, RankSummary};
use gapscope_collectors::kineto::{import_file, ImportOptions};
use std::path::Path;

fn summaries(dir: &Path) -> Vec<RankSummary> {
    let mut files = Vec::new();
    shared_traces::trace_files(dir, &mut files);
    files.sort();
    files
        .iter()
        .map(|f| {
            let t = import_file(f, &ImportOptions::default()).expect("imports");
            summarize_rank(&t, &AnalyzeOptions::default(), None)
        })
        .collect()
}

fn job(dir: &str) -> JobAnalysis {
    analyze_job(
        &summaries(&shared_traces::shared().join(dir)),
        &JobOptions::default(),
    )
}

/// All 8 ranks hold the same 8 collectives of step 10 (5 all-to-alls, 3
/// all-reduces): matched by order, and one offset per rank explains every
/// end to within a few µs.
#[test]
fn dlrm_ranks_align_on_their_collectives() {
    let j = job("param/dlrm_8rank");
    assert_eq!(j.world_size, Some(8));
    assert!(j.missing_ranks.is_empty());
    assert_eq!(j.alignment.reference_rank, Some(0));
    assert_eq!(j.alignment.ranks.len(), 8);
    for a in &j.alignment.ranks {
        let expected = if a.rank == 0 {
            MatchMethod::Reference
        } else {
            MatchMethod::Order
        };
        assert_eq!(a.method, expected, "rank {}", a.rank);
        assert_eq!((a.matched, a.unmatched), (8, 0), "rank {}", a.rank);
        // The clocks agree already (one host's clock, or NTP): offsets of a
        // few µs, and the residual is the spread of the ends.
        assert!(
            a.offset_ns.unwrap().abs() < 5_000,
            "rank {}: {:?}",
            a.rank,
            a.offset_ns
        );
        assert!(
            a.residual_median_ns.unwrap() < 2_000,
            "rank {}: {:?}",
            a.rank,
            a.residual_median_ns
        );
        assert!(
            a.residual_max_ns.unwrap() < 5_000,
            "rank {}: {:?}",
            a.rank,
            a.residual_max_ns
        );
    }
    assert_eq!(j.collectives.len(), 8);
    let kinds: Vec<&str> = j.collectives.iter().map(|c| c.kind.as_str()).collect();
    assert_eq!(
        kinds,
        [
            "all_to_all",
            "all_to_all",
            "all_to_all",
            "all_to_all",
            "all_reduce",
            "all_to_all",
            "all_reduce",
            "all_reduce"
        ]
    );
}

/// Rank 7 starts step 10 last (2.1 ms after rank 0 by its own clock) and
/// is the last to arrive at the first four all-to-alls; rank 1, which
/// started 5.5 ms before rank 0, waits 7.6 ms in the first, most of it
/// for the other ranks.
#[test]
fn dlrm_rank_7_holds_the_first_all_to_alls() {
    let j = job("param/dlrm_8rank");
    for c in &j.collectives[..4] {
        assert_eq!(c.last_rank, 7, "{c:?}");
        assert!(c.late, "{c:?}");
    }
    let first = &j
        .findings
        .iter()
        .find(|f| {
            f.id == "straggler_wait"
                && f.collective_ordinal == Some(1)
                && f.collective.as_deref() == Some("all_to_all")
        })
        .unwrap();
    assert_eq!(first.culprit_rank, Some(7));
    assert_eq!(first.cause.as_deref(), Some("late_start"));
    // Rank 1 waits 7.6 ms in the first (all eight waits: 26.4 ms), but
    // only the last 505 µs of it, after rank 6 (the second-last) arrived,
    // for rank 7 alone: that much is rank 7's.
    let w1 = first.wait_ns[&1];
    assert!((500_000..510_000).contains(&w1), "{w1}");
    assert!((26_400_000..26_500_000).contains(&j.collectives[0].total_wait_ns));
    assert_eq!(first.total_wait_ns, 7 * w1);
    // Removing rank 7's lead over the second-last (rank 6, 505 µs) saves
    // that much of the job's step: rank 7 is also late later.
    assert!(
        (500_000..510_000).contains(&first.est_savings_ns),
        "{}",
        first.est_savings_ns
    );
    let top = j.findings.iter().find(|f| f.id == "straggler_wait").unwrap();
    assert_eq!(top.culprit_rank, Some(7));
    assert_eq!(j.steps.len(), 1);
    assert_eq!(j.steps[0].most_late_rank, Some(7));
}

/// The ranks begin step 10 up to 7.5 ms apart (rank 1 first, rank 7 last)
/// and reach the first all-to-all 3.0-3.9 ms after their own starts: the
/// spread of arrivals there is the spread of starts. Of the 22.9 ms of its
/// waits that no single rank caused, 19.56 ms would not have been waited
/// had the ranks begun together.
#[test]
fn dlrm_first_all_to_all_waits_for_ranks_that_began_later() {
    let j = job("param/dlrm_8rank");
    let cause = |name: &str| {
        j.summary
            .top_causes
            .iter()
            .find(|c| c.cause == name)
            .map_or(0, |c| c.ns)
    };
    let staggered = cause("staggered_start");
    assert!((19_500_000..19_600_000).contains(&staggered), "{staggered}");
    let attributed: i64 = j.summary.wait_by_cause_ns.values().sum();
    assert_eq!(
        staggered + cause("no_culprit") + attributed,
        j.summary.total_wait_ns
    );
    // The finding that says so ranks first, by what aligning the starts
    // could save at most: the 7.5 ms between rank 1's start and rank 7's.
    let f = &j.findings[0];
    assert_eq!(f.id, "staggered_start");
    assert_eq!(f.total_wait_ns, staggered);
    assert_eq!(f.est_savings_ns, 0);
    let bound = f.savings_bound_ns.unwrap();
    assert!((7_500_000..7_520_000).contains(&bound), "{bound}");
    assert_eq!(f.collective.as_deref(), Some("all_to_all"));
    assert_eq!(f.collective_ordinal, Some(1));
}

/// HTA's sampled ranks 0 and 1 of 128 hold different samples of their
/// collectives (10 kernels each, not the same ones): matching by order is
/// refused, offset votes find the 5 that both hold.
#[test]
fn sampled_ranks_match_by_time() {
    let j = job("hta/trace_filter");
    assert_eq!(j.world_size, Some(128));
    assert_eq!(j.missing_ranks.len(), 126);
    assert!(
        j.warnings.iter().any(|w| w.contains("ranks 2-127 of 128")),
        "{:?}",
        j.warnings
    );
    let r1 = &j.alignment.ranks[1];
    assert_eq!(r1.method, MatchMethod::Time);
    assert_eq!((r1.matched, r1.unmatched), (5, 5));
    assert!(r1.offset_ns.unwrap().abs() < 100_000, "{:?}", r1.offset_ns);
    assert!(r1.residual_max_ns.unwrap() <= 200_000, "{:?}", r1.residual_max_ns);
    assert_eq!(j.steps.iter().map(|s| s.step).collect::<Vec<_>>(), [551, 552]);
    // Rank 1 is the later of the two traced ranks, not necessarily of the
    // job's 128: every culprit finding says so and bounds its saving.
    let culprit: Vec<_> = j.findings.iter().filter(|f| f.culprit_rank.is_some()).collect();
    assert!(!culprit.is_empty());
    for f in culprit {
        assert_eq!(f.untraced_ranks, 126, "{}", f.title);
        assert!(
            f.title.contains("(only 2 of the job's 128 ranks were traced"),
            "{}",
            f.title
        );
    }
}

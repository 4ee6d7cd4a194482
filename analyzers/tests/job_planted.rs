//! Planted stragglers: jobs made by fixtures/job/plant.py from one real
//! rank (DLRM's rank 0), with clock offsets and late ranks whose answers
//! are known exactly. The job analysis must name the late rank, the step,
//! the collective and the cause, and give every other rank's wait and the
//! saving within 1 %.

mod shared_traces;

use gapscope_analyzers::analysis::AnalyzeOptions;
use gapscope_analyzers::job::align::MatchMethod;
use gapscope_analyzers::job::{analyze_job, summarize_rank, JobAnalysis, JobOptions};
use gapscope_collectors::kineto::{import_file, ImportOptions};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

const BASE: &str = "param/dlrm_8rank/worker0_step_12.1694128201545.pt.trace.json.gz";

/// Runs the generator into a fresh directory; returns it and its truth.
fn plant(name: &str, args: &[&str]) -> (PathBuf, Value) {
    let out = std::env::temp_dir().join(format!("gapscope-planted-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/job/plant.py");
    let status = Command::new("python3")
        .arg(script)
        .arg(shared_traces::shared().join(BASE))
        .arg(&out)
        .args(args)
        .status()
        .expect("python3 runs");
    assert!(status.success(), "plant.py failed");
    let truth = serde_json::from_str(&std::fs::read_to_string(out.join("truth.json")).unwrap()).unwrap();
    (out, truth)
}

fn analyse(dir: &Path) -> JobAnalysis {
    let mut files: Vec<PathBuf> = Vec::new();
    shared_traces::trace_files(dir, &mut files);
    files.retain(|f| !f.ends_with("truth.json"));
    files.sort();
    let s: Vec<_> = files
        .iter()
        .map(|f| {
            summarize_rank(
                &import_file(f, &ImportOptions::default()).unwrap(),
                &AnalyzeOptions::default(),
                None,
            )
        })
        .collect();
    analyze_job(&s, &JobOptions::default())
}

fn within(got: i64, want: i64, share: f64) -> bool {
    (got - want).abs() as f64 <= share * want as f64
}

/// Every plant is found, exactly.
fn check_plants(j: &JobAnalysis, truth: &Value) {
    for p in truth["plants"].as_array().unwrap() {
        let rank = p["rank"].as_i64().unwrap();
        let step = p["step"].as_u64().unwrap();
        let f = j
            .findings
            .iter()
            .find(|f| f.id == "straggler_wait" && f.step == Some(step) && f.culprit_rank == Some(rank))
            .unwrap_or_else(|| panic!("no finding for {p}: {:#?}", j.findings));
        assert_eq!(f.collective.as_deref(), p["collective"].as_str(), "{}", f.title);
        assert_eq!(f.collective_ordinal, p["ordinal"].as_u64(), "{}", f.title);
        assert_eq!(f.cause.as_deref(), p["cause"].as_str(), "{}", f.title);
        assert_eq!(f.collectives, 1, "{}", f.title);
        let delay = p["delay_ns"].as_i64().unwrap();
        let waits = p["wait_ns"].as_object().unwrap();
        assert_eq!(f.wait_ns.len(), waits.len(), "{}", f.title);
        for (r, w) in waits {
            let got = f.wait_ns[&r.parse::<i64>().unwrap()];
            assert!(
                within(got, w.as_i64().unwrap(), 0.01),
                "rank {r} waited {got}, planted {w}: {}",
                f.title
            );
        }
        assert!(
            within(f.lateness_ns, delay, 0.01),
            "lateness {} vs {delay}",
            f.lateness_ns
        );
        assert!(
            within(f.est_savings_ns, delay, 0.01),
            "saving {} vs {delay}",
            f.est_savings_ns
        );
        assert!(within(f.cause_ns, delay, 0.1), "cause {} vs {delay}", f.cause_ns);
        // What the late rank was doing: the operator (and annotation) the
        // plant stretched, or for compute the operator that launched the
        // kernel that grew, named as a lead-in names it.
        let doing = match (p["operator"].as_str(), p["annotation"].as_str()) {
            (Some(o), Some(a)) => Some(format!("{o} in {a}")),
            (o, a) => o.or(a).map(str::to_string),
        };
        assert!(doing.is_some(), "the plant records what it stretched: {p}");
        assert_eq!(f.operator, doing, "{}", f.title);
        // The step table names the same culprit.
        let s = j.steps.iter().find(|s| s.step == step).unwrap();
        assert_eq!(s.most_late_rank, Some(rank));
        assert_eq!(s.worst.as_ref().unwrap().rank, rank);
    }
    // Nothing else is late: the copies are identical apart from the plants.
    let planted: Vec<u64> = truth["plants"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["step"].as_u64().unwrap())
        .collect();
    for s in &j.steps {
        if !planted.contains(&s.step) {
            assert_eq!(s.late_collectives, 0, "step {}: {:?}", s.step, s.worst);
        }
    }
}

fn check_offsets(j: &JobAnalysis, truth: &Value, tolerance: i64) {
    for a in &j.alignment.ranks {
        let want = truth["offsets_ns"][a.rank.to_string()].as_i64().unwrap();
        let got = a.offset_ns.expect("aligned");
        assert!(
            (got - want).abs() <= tolerance,
            "rank {}: offset {got}, planted {want}",
            a.rank
        );
    }
}

#[test]
fn three_causes_in_three_steps() {
    let (dir, truth) = plant(
        "three",
        &[
            "--ranks",
            "8",
            "--steps",
            "4",
            "--plant",
            "3:11:1:12:dataloader",
            "--plant",
            "5:12:5:3:compute",
            "--plant",
            "6:13:2:2:cpu_op",
        ],
    );
    let j = analyse(&dir);
    check_offsets(&j, &truth, 0);
    for a in &j.alignment.ranks {
        assert_eq!(
            a.residual_max_ns,
            Some(0),
            "identical copies end together: rank {}",
            a.rank
        );
    }
    check_plants(&j, &truth);
    // The largest delay saves the most and is listed first.
    assert_eq!(j.findings[0].culprit_rank, Some(3));
    assert!(j.findings[0].title.starts_with("step 11: ranks 0-2, 4-7 waited 12.0 ms in all_to_all #1 for rank 3, whose DataLoader took 12.0 ms longer"), "{}", j.findings[0].title);
    // What each late rank was doing, by name (check_plants compares them
    // with what plant.py stretched): rank 3 in its DataLoader, rank 5's
    // GPU in the kernels `aten::mm` launched, rank 6's CPU in `aten::exp_`
    // inside DDP's forward.
    let culprit = |rank: i64| {
        j.findings
            .iter()
            .find(|f| f.id == "straggler_wait" && f.culprit_rank == Some(rank))
            .unwrap()
    };
    assert_eq!(
        culprit(3).operator.as_deref(),
        Some("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__")
    );
    assert_eq!(culprit(5).operator.as_deref(), Some("aten::mm"));
    assert!(
        culprit(5).hint.contains("does more work (`aten::mm`)"),
        "{}",
        culprit(5).hint
    );
    assert_eq!(
        culprit(6).operator.as_deref(),
        Some("aten::exp_ in DistributedDataParallel.forward")
    );
    assert!(
        culprit(6)
            .title
            .ends_with("(most in `aten::exp_ in DistributedDataParallel.forward`)"),
        "{}",
        culprit(6).title
    );
    let _ = std::fs::remove_dir_all(dir);
}

/// Collective ends that differ by up to ±2 µs per rank (as real ones do):
/// offsets are found to within that, waits still within 1 %.
#[test]
fn jittered_ends() {
    let (dir, truth) = plant(
        "jitter",
        &[
            "--ranks",
            "8",
            "--steps",
            "3",
            "--end-jitter-ns",
            "2000",
            "--plant",
            "2:11:6:1.5:cpu_op",
        ],
    );
    let j = analyse(&dir);
    check_offsets(&j, &truth, 2_000);
    for a in &j.alignment.ranks {
        assert!(
            a.residual_max_ns.unwrap() <= 4_000,
            "rank {}: {:?}",
            a.rank,
            a.residual_max_ns
        );
    }
    check_plants(&j, &truth);
    let _ = std::fs::remove_dir_all(dir);
}

/// The same rank late in every step, for the same reason: one finding per
/// step and one that says it is always that rank.
#[test]
fn consistent_straggler() {
    let (dir, truth) = plant(
        "consistent",
        &[
            "--ranks",
            "4",
            "--steps",
            "3",
            "--plant",
            "1:10:1:4:dataloader",
            "--plant",
            "1:11:1:5:dataloader",
            "--plant",
            "1:12:1:6:dataloader",
        ],
    );
    let j = analyse(&dir);
    check_plants(&j, &truth);
    let c = j
        .findings
        .iter()
        .find(|f| f.id == "consistent_straggler")
        .expect("found");
    assert_eq!(c.culprit_rank, Some(1));
    assert_eq!(c.steps, [10, 11, 12]);
    assert_eq!(c.cause.as_deref(), Some("dataloader"));
    assert!(within(c.est_savings_ns, 15_000_000, 0.01), "{}", c.est_savings_ns);
    assert!(
        within(j.summary.wait_by_cause_ns["dataloader"], 3 * 15_000_000, 0.01),
        "{:?}",
        j.summary.wait_by_cause_ns
    );
    let _ = std::fs::remove_dir_all(dir);
}

/// A rank with no trace: the others are analysed, the gap is said.
#[test]
fn missing_rank() {
    let (dir, truth) = plant(
        "missing",
        &[
            "--ranks",
            "4",
            "--steps",
            "2",
            "--skip-rank",
            "2",
            "--plant",
            "3:11:1:5:dataloader",
        ],
    );
    let j = analyse(&dir);
    assert_eq!(j.missing_ranks, [2]);
    assert!(
        j.warnings.iter().any(|w| w.contains("no trace for rank 2 of 4")),
        "{:?}",
        j.warnings
    );
    let f = &j.findings.iter().find(|f| f.id == "straggler_wait").unwrap();
    assert_eq!(f.culprit_rank, Some(3));
    assert_eq!(f.wait_ns.keys().copied().collect::<Vec<_>>(), [0, 1]);
    let _ = truth;
    let _ = std::fs::remove_dir_all(dir);
}

/// PyTorch 2.5+'s process group and sequence number on every collective
/// (two groups: all-reduces and all-to-alls), and rank 2's trace lacking
/// its first all-to-all of step 11 (a GPU record the profiler lost), right
/// before rank 3 arrives late at the next one. Rank 2's n-th all-to-all is
/// its peers' (n+1)-th from there on, so pairing by order would be wrong;
/// `(group, seq)` pairs every call with its own: exact offsets, no
/// residual, and the straggler, its step, collective, cause and every
/// wait as planted. Without the numbers, rank 2 is matched by time.
#[test]
fn sequence_numbers_match_across_a_lost_collective() {
    let args = [
        "--ranks",
        "4",
        "--steps",
        "3",
        "--drop",
        "2:11:1",
        "--plant",
        "3:11:2:3:cpu_op",
    ];
    let (dir, truth) = plant("seq", &[&args[..], &["--seq"]].concat());
    let j = analyse(&dir);
    check_offsets(&j, &truth, 0);
    for a in &j.alignment.ranks {
        let (method, matched) = if a.rank == 0 {
            (MatchMethod::Reference, 24)
        } else if a.rank == 2 {
            (MatchMethod::Sequence, 23)
        } else {
            (MatchMethod::Sequence, 24)
        };
        assert_eq!(
            (a.method, a.matched, a.matched_by_seq),
            (method, matched, matched),
            "{a:?}"
        );
        assert_eq!((a.unmatched, a.residual_max_ns), (0, Some(0)), "{a:?}");
    }
    check_plants(&j, &truth);
    let lost = j
        .collectives
        .iter()
        .filter(|c| c.ranks == 3)
        .map(|c| (c.step, c.kind.as_str(), c.group.as_deref()))
        .collect::<Vec<_>>();
    // The lost collective is matched among the three ranks that hold it.
    assert_eq!(lost, [(Some(11), "all_to_all", Some("1"))]);
    assert!(j.collectives.iter().all(|c| c.seq.is_some()));
    let _ = std::fs::remove_dir_all(dir);

    let (dir, truth) = plant("noseq", &args);
    let j = analyse(&dir);
    let rank2 = j.alignment.ranks.iter().find(|a| a.rank == 2).unwrap();
    assert_eq!((rank2.method, rank2.matched_by_seq), (MatchMethod::Time, 0));
    check_offsets(&j, &truth, 0);
    check_plants(&j, &truth);
    let _ = std::fs::remove_dir_all(dir);
}

/// `work` plants (fixtures/job/plant.py) on `rank` at the first collective
/// of every step in `steps`, each `ms` long.
fn work_plants(rank: u32, steps: &[u32], ms: &str) -> Vec<String> {
    steps
        .iter()
        .flat_map(|s| ["--plant".to_string(), format!("{rank}:{s}:1:{ms}:work")])
        .collect()
}

fn plant_owned(name: &str, args: &[String]) -> (PathBuf, Value) {
    plant(name, &args.iter().map(String::as_str).collect::<Vec<_>>())
}

/// Rank 2 is given 2 ms more GPU work in each of the 3 steps (its kernel
/// runs longer and its CPU waits for it): a `load_imbalance` naming rank 2,
/// its 2 ms per step over the median rank's compute, in 3 of 3 steps; the
/// others wait 2 ms per step for it, and balancing the work gives those
/// 2 ms back in every step.
#[test]
fn a_rank_with_more_work_every_step_is_load_imbalance() {
    let mut args: Vec<String> = ["--ranks", "4", "--steps", "3"].map(String::from).to_vec();
    args.extend(work_plants(2, &[10, 11, 12], "2"));
    let (dir, truth) = plant_owned("heavy", &args);
    let j = analyse(&dir);
    check_plants(&j, &truth);
    const EXTRA: i64 = 2_000_000;
    // The plant shows in the steps' breakdowns: rank 2 computes 2 ms more
    // than each peer, every step.
    let mut peer_compute = Vec::new();
    for s in &j.steps {
        let heavy = s.ranks.iter().find(|r| r.rank == 2).unwrap().breakdown.compute_ns;
        for r in s.ranks.iter().filter(|r| r.rank != 2) {
            assert!(
                within(heavy - r.breakdown.compute_ns, EXTRA, 0.01),
                "step {}: rank 2 {heavy}, rank {} {}",
                s.step,
                r.rank,
                r.breakdown.compute_ns
            );
            peer_compute.push(r.breakdown.compute_ns);
        }
    }
    let imbalance: Vec<_> = j.findings.iter().filter(|f| f.id == "load_imbalance").collect();
    assert_eq!(imbalance.len(), 1, "{:#?}", j.findings);
    let f = imbalance[0];
    assert_eq!(f.culprit_rank, Some(2));
    assert_eq!(f.steps, [10, 11, 12]);
    assert_eq!(f.cause.as_deref(), Some("compute"));
    assert!(within(f.cause_ns, 3 * EXTRA, 0.01), "{}", f.cause_ns);
    assert!(within(f.est_savings_ns, 3 * EXTRA, 0.01), "{}", f.est_savings_ns);
    assert_eq!(f.wait_ns.keys().copied().collect::<Vec<_>>(), [0, 1, 3]);
    for (r, &w) in &f.wait_ns {
        assert!(within(w, 3 * EXTRA, 0.01), "rank {r} waited {w}");
    }
    assert!(within(f.total_wait_ns, 9 * EXTRA, 0.01), "{}", f.total_wait_ns);
    // The share is of the median rank's compute: a peer's.
    let median = peer_compute[0];
    assert!(peer_compute.iter().all(|&c| c == median), "{peer_compute:?}");
    let share = (EXTRA as f64 * 100.0 / median as f64).round();
    assert_eq!(
        f.title,
        format!("rank 2 computes 2.0 ms more per step than the median rank ({share}% more), in 3 of 3 steps")
    );
    let _ = std::fs::remove_dir_all(dir);
}

/// Near misses of `load_imbalance`, each next to its hit: a rank late in
/// every step for its DataLoader (it holds the others back but computes
/// what they compute), a rank with 2 ms more work in one step of three,
/// and a rank with 90 µs more work in every step (5 % of its peers'
/// 1 ms of compute, but under the rule's 100 µs floor), where 110 µs is a
/// finding.
#[test]
fn load_imbalance_near_misses() {
    let no_imbalance = |j: &JobAnalysis| {
        let f: Vec<_> = j.findings.iter().filter(|f| f.id == "load_imbalance").collect();
        assert!(f.is_empty(), "{f:#?}");
    };
    let steps = ["--ranks", "4", "--steps", "3"].map(String::from).to_vec();

    let mut args = steps.clone();
    for s in [10, 11, 12] {
        args.extend(["--plant".into(), format!("1:{s}:1:3:dataloader")]);
    }
    let (dir, truth) = plant_owned("late-not-heavy", &args);
    let j = analyse(&dir);
    check_plants(&j, &truth);
    no_imbalance(&j);
    let _ = std::fs::remove_dir_all(dir);

    let mut args = steps.clone();
    args.extend(work_plants(2, &[11], "2"));
    let (dir, truth) = plant_owned("heavy-once", &args);
    let j = analyse(&dir);
    check_plants(&j, &truth);
    no_imbalance(&j);
    let _ = std::fs::remove_dir_all(dir);

    for (us, found) in [("0.09", false), ("0.11", true)] {
        let mut args = steps.clone();
        args.extend(work_plants(2, &[10, 11, 12], us));
        let (dir, truth) = plant_owned(&format!("heavy-{us}"), &args);
        let j = analyse(&dir);
        // Late by 90 µs at one collective a step: a straggler all the same.
        check_plants(&j, &truth);
        if found {
            let f = j
                .findings
                .iter()
                .find(|f| f.id == "load_imbalance")
                .expect("110 µs a step");
            assert_eq!((f.culprit_rank, &f.steps[..]), (Some(2), &[10, 11, 12][..]));
            assert!(within(f.cause_ns, 3 * 110_000, 0.01), "{}", f.cause_ns);
            assert!(
                within(f.est_savings_ns, 3 * 110_000, 0.01),
                "{}",
                f.est_savings_ns
            );
        } else {
            no_imbalance(&j);
        }
        let _ = std::fs::remove_dir_all(dir);
    }
}

/// Rank 1's DataLoader takes 20 ms longer in each of the 3 steps, before
/// the first all-to-all; the other 3 ranks wait 20 ms there, each step.
/// Against the same job without the plant (the control):
///
/// - every waiting rank's wait is 60 ms, rank 1's 0, and its share is 60 ms
///   over its steps' time (truth's `step_ns`);
/// - the wait is all exposed: in DLRM's rank 0, no compute kernel runs
///   when a collective kernel starts, so none hides the planted wait at
///   its start; the transfer (and its exposed part) is the control's;
/// - the top cause is waiting for rank 1's DataLoader, 180 ms; the GPU
///   idle by cause is the control's plus rank 1's 60 ms of DataLoader idle;
///   every wait has a culprit (no `no_culprit`).
#[test]
fn summary_wait_share_top_causes_and_the_wait_transfer_split() {
    const LATE: i64 = 20_000_000;
    let mut args: Vec<String> = ["--ranks", "4", "--steps", "3"].map(String::from).to_vec();
    let (dir, _) = plant_owned("control", &args);
    let control = analyse(&dir);
    let _ = std::fs::remove_dir_all(dir);
    for s in [10, 11, 12] {
        args.extend(["--plant".into(), format!("1:{s}:1:20:dataloader")]);
    }
    let (dir, truth) = plant_owned("summary", &args);
    let j = analyse(&dir);
    check_plants(&j, &truth);
    let _ = std::fs::remove_dir_all(dir);

    let step_time = |r: i64| -> i64 {
        truth["step_ns"][r.to_string()]
            .as_object()
            .unwrap()
            .values()
            .map(|v| v.as_i64().unwrap())
            .sum()
    };
    let all_time: i64 = (0..4).map(step_time).sum();
    let close = |got: f64, want: f64| (got - want).abs() <= 0.01 * want;
    let s = &j.summary;
    assert_eq!(s.wait_ns.keys().copied().collect::<Vec<_>>(), [0, 1, 2, 3]);
    for (&r, &w) in &s.wait_ns {
        let want = if r == 1 { 0 } else { 3 * LATE };
        assert!(within(w, want, 0.01), "rank {r} waited {w}");
        assert!(
            close(s.wait_share[&r], want as f64 / step_time(r) as f64),
            "rank {r}: share {} of {} ns",
            s.wait_share[&r],
            step_time(r)
        );
    }
    assert_eq!(s.wait_share[&1], 0.0);
    assert!(within(s.total_wait_ns, 9 * LATE, 0.01), "{}", s.total_wait_ns);
    assert_eq!(s.wait_by_cause_ns.keys().collect::<Vec<_>>(), ["dataloader"]);

    // Per rank and per step: the wait, all exposed; the transfer as without
    // the plant.
    for (r, c) in j.ranks.iter().zip(&control.ranks) {
        let want = if r.rank == 1 { 0 } else { 3 * LATE };
        assert!(within(r.wait_ns, want, 0.01), "rank {}: {}", r.rank, r.wait_ns);
        assert_eq!(r.exposed_wait_ns, r.wait_ns, "rank {}", r.rank);
        assert_eq!(c.wait_ns, 0, "the control's ranks arrive together");
        assert_eq!(
            (r.transfer_ns, r.exposed_transfer_ns),
            (c.transfer_ns, c.exposed_transfer_ns),
            "rank {}",
            r.rank
        );
        assert!(
            r.exposed_transfer_ns < r.transfer_ns,
            "DLRM hides some of its transfers"
        );
    }
    for (st, cs) in j.steps.iter().zip(&control.steps) {
        for (r, c) in st.ranks.iter().zip(&cs.ranks) {
            let want = if r.rank == 1 { 0 } else { LATE };
            assert!(within(r.wait_ns, want, 0.01), "step {} rank {}", st.step, r.rank);
            assert_eq!(r.exposed_wait_ns, r.wait_ns);
            assert_eq!(
                (r.transfer_ns, r.exposed_transfer_ns),
                (c.transfer_ns, c.exposed_transfer_ns)
            );
        }
    }

    // Top causes: the wait for rank 1's DataLoader first, then its idle.
    let top = &s.top_causes;
    assert_eq!(
        (top[0].kind.as_str(), top[0].cause.as_str()),
        ("wait", "dataloader"),
        "{top:#?}"
    );
    assert!(within(top[0].ns, 9 * LATE, 0.01), "{}", top[0].ns);
    assert!(
        close(top[0].share, 9.0 * LATE as f64 / all_time as f64),
        "{}",
        top[0].share
    );
    assert!(top.windows(2).all(|w| w[0].ns >= w[1].ns), "most first: {top:#?}");
    assert!(!top.iter().any(|c| c.cause == "no_culprit"), "{top:#?}");
    let idle = |a: &JobAnalysis, cause: &str| {
        a.summary
            .top_causes
            .iter()
            .find(|c| c.kind == "idle" && c.cause == cause)
            .map_or(0, |c| c.ns)
    };
    assert!(
        within(
            idle(&j, "dataloader") - idle(&control, "dataloader"),
            3 * LATE,
            0.01
        ),
        "{} vs {}",
        idle(&j, "dataloader"),
        idle(&control, "dataloader")
    );
    for c in top.iter().filter(|c| c.kind == "idle") {
        assert!(close(c.share, c.ns as f64 / all_time as f64), "{c:?}");
        if c.cause != "dataloader" {
            assert_eq!(c.ns, idle(&control, &c.cause), "{c:?}");
        }
    }
    assert_eq!(
        top.iter().filter(|c| c.kind == "idle").count(),
        control
            .summary
            .top_causes
            .iter()
            .filter(|c| c.kind == "idle")
            .count()
    );
}

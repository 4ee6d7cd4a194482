//! `gapscope analyze` of a whole job: directories and several traces,
//! grouped into jobs by rank, world size, steps and time; bad inputs left
//! out with one line each.

mod common;
use common::*;
use std::ffi::OsString;

fn args(v: &[&str], paths: &[&std::path::Path]) -> Vec<OsString> {
    let mut a: Vec<OsString> = v.iter().map(OsString::from).collect();
    a.extend(paths.iter().map(|p| p.as_os_str().to_owned()));
    a
}

#[test]
fn dlrm_directory_is_one_job() {
    let dir = shared_trace("param/dlrm_8rank");
    let r = gapscope(args(&["analyze"], &[&dir])).expect_code(0);
    let first = r.stdout.lines().next().unwrap();
    assert_eq!(first, "job: 8 ranks of 8 (0-7), step #10, median step 20.82 ms");
    assert!(
        r.stdout
            .contains("in all_to_all #1 for rank 7, which began the step 3.8 ms after its peers"),
        "{}",
        r.stdout
    );
    assert!(r.stderr.is_empty(), "{}", r.stderr);
    let j = gapscope(args(&["analyze", "--format", "json"], &[&dir]))
        .expect_code(0)
        .json();
    assert_eq!(j["kind"], "job");
    assert_eq!(j["schema_version"], 1);
    let ranks = j["ranks"].as_array().unwrap();
    assert_eq!(ranks.len(), 8);
    // Each rank's own analysis is exactly what analysing its file alone gives.
    let file = std::path::PathBuf::from(ranks[3]["source"].as_str().unwrap());
    let alone = gapscope(args(&["analyze", "--format", "json"], &[&file]))
        .expect_code(0)
        .json();
    assert_eq!(ranks[3]["analysis"], alone);
    assert_eq!(ranks[3]["rank"], 3);
    // Rank 7 is last at all_to_all #1, but only 505 µs after ranks 2 and 6
    // (rank 1 arrived 7.6 ms before it): the others' wait it alone caused
    // is 505 µs each, not their whole wait, which had ranks 2 and 6 (and
    // 0) to wait for too. Its saving is that wait; the rest of the job's
    // waiting was for ranks that began the step later, or has no single
    // culprit.
    let findings = j["findings"].as_array().unwrap();
    let first = findings
        .iter()
        .find(|f| f["id"] == "straggler_wait" && f["collective_ordinal"] == 1)
        .expect("the late start at all_to_all #1");
    assert_eq!(first["culprit_rank"], 7);
    let lateness = first["lateness_ns"].as_i64().unwrap();
    assert!((500_000..510_000).contains(&lateness), "{first}");
    let waits = first["wait_ns"].as_object().unwrap();
    assert_eq!(waits.len(), 7);
    assert!(waits.values().all(|w| w.as_i64() == Some(lateness)), "{first}");
    assert_eq!(first["total_wait_ns"].as_i64(), Some(7 * lateness));
    assert_eq!(first["est_savings_ns"].as_i64(), Some(lateness));
    let summary = &j["summary"];
    let caused: i64 = ranks.iter().map(|r| r["caused_wait_ns"].as_i64().unwrap()).sum();
    let by_cause: i64 = summary["wait_by_cause_ns"]
        .as_object()
        .unwrap()
        .values()
        .map(|v| v.as_i64().unwrap())
        .sum();
    assert_eq!(caused, by_cause);
    let no_culprit = summary["top_causes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["cause"] == "no_culprit")
        .expect("waits without a single culprit");
    // The ranks began step 10 up to 7.5 ms apart: most of the first
    // all-to-all's waiting was for ranks that began later.
    let staggered = summary["top_causes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["cause"] == "staggered_start")
        .expect("waits for ranks that began the step later");
    assert_eq!(
        no_culprit["ns"].as_i64().unwrap() + staggered["ns"].as_i64().unwrap() + by_cause,
        summary["total_wait_ns"].as_i64().unwrap()
    );
    assert!(
        r.stdout.lines().any(|l| {
            l.trim_start()
                .starts_with("waiting for peers that began the step later")
                && l.split_whitespace().any(|w| w == "19.56")
        }),
        "{}",
        r.stdout
    );
    assert!(
        by_cause * 4 < summary["total_wait_ns"].as_i64().unwrap(),
        "{summary}"
    );
    assert!(
        r.stdout.contains("waited 505 µs in all_to_all #1 for rank 7"),
        "{}",
        r.stdout
    );
}

/// HTA's sampled ranks 0 and 1 over steps 551 and 552: a saving summed
/// over both steps says so.
#[test]
fn savings_over_several_steps_say_how_many() {
    let dir = shared_trace("hta/trace_filter");
    let r = gapscope(args(&["analyze"], &[&dir])).expect_code(0);
    let exposed = r
        .stdout
        .lines()
        .skip_while(|l| !l.contains("[exposed_communication]"))
        .nth(1)
        .unwrap_or_else(|| panic!("{}", r.stdout));
    assert!(
        exposed.contains("of the job's step time over 2 steps"),
        "{exposed}"
    );
    let straggler = r
        .stdout
        .lines()
        .skip_while(|l| !l.contains("[straggler_wait] step 552"))
        .nth(1)
        .unwrap_or_else(|| panic!("{}", r.stdout));
    assert!(!straggler.contains("over"), "{straggler}");
}

/// The example, through the command line: rank 3's DataLoader
/// makes the others wait 12 ms in step 11. The ranks are named only by
/// their files (`worker<N>`), so there is no world size.
#[test]
fn planted_straggler_through_the_cli_with_ranks_from_names() {
    let tmp = TempDir::new("job-names");
    plant_job(
        tmp.path(),
        &[
            "--ranks",
            "4",
            "--steps",
            "3",
            "--no-distributed-info",
            "--name",
            "worker{rank}_x.pt.trace.json.gz",
            "--plant",
            "3:11:1:12:dataloader",
        ],
    );
    let j = gapscope(args(&["analyze", "--format", "json"], &[tmp.path()]))
        .expect_code(0)
        .json();
    assert_eq!(j["kind"], "job");
    assert_eq!(j["world_size"], serde_json::Value::Null);
    let f = &j["findings"][0];
    assert_eq!(f["id"], "straggler_wait");
    assert_eq!(f["culprit_rank"], 3);
    assert_eq!(f["step"], 11);
    assert_eq!(f["cause"], "dataloader");
    assert_eq!(f["collective"], "all_to_all");
    for r in ["0", "1", "2"] {
        let w = f["wait_ns"][r].as_i64().unwrap();
        assert!((w - 12_000_000).abs() <= 120_000, "rank {r} waited {w}");
    }
    let e = f["est_savings_ns"].as_i64().unwrap();
    assert!((e - 12_000_000).abs() <= 120_000, "{e}");
    let t = gapscope(args(&["analyze"], &[tmp.path()])).expect_code(0).stdout;
    assert!(t.contains("step 11: ranks 0-2 waited 12.0 ms in all_to_all #1 for rank 3, whose DataLoader took 12.0 ms longer than its peers'"), "{t}");
    assert!(t.contains("Fix rank 3's input pipeline"), "{t}");
}

/// Two runs of the same 2-rank job an hour apart, a 3-rank job, a file
/// that is not a trace, a truncated rank and a missing one, all in one
/// directory: each job is analysed on its own, every problem is one line.
#[test]
fn mixed_directory() {
    let tmp = TempDir::new("job-mixed");
    let dir = tmp.path();
    let sub = |n: &str| {
        let p = dir.join(n);
        std::fs::create_dir_all(&p).unwrap();
        p
    };
    let a = sub("a");
    plant_job(
        &a,
        &[
            "--ranks",
            "2",
            "--steps",
            "2",
            "--name",
            "runA_rank{rank}.json.gz",
            "--plant",
            "1:10:1:2:dataloader",
        ],
    );
    let b = sub("b");
    plant_job(
        &b,
        &[
            "--ranks",
            "2",
            "--steps",
            "2",
            "--time-shift-s",
            "3600",
            "--name",
            "runB_rank{rank}.json.gz",
            "--plant",
            "0:11:1:3:cpu_op",
        ],
    );
    let c = sub("c");
    plant_job(
        &c,
        &[
            "--ranks",
            "4",
            "--steps",
            "2",
            "--skip-rank",
            "2",
            "--name",
            "runC_rank{rank}.json.gz",
        ],
    );
    let all = sub("all");
    for d in [&a, &b, &c] {
        for e in std::fs::read_dir(d).unwrap() {
            let p = e.unwrap().path();
            std::fs::copy(&p, all.join(p.file_name().unwrap())).unwrap();
        }
    }
    std::fs::write(all.join("README.txt"), "notes").unwrap();
    // Rank 3 of run C, cut short in the middle (a copy interrupted).
    let gz = std::fs::read(all.join("runC_rank3.json.gz")).unwrap();
    let mut json = Vec::new();
    std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&gz[..]), &mut json).unwrap();
    std::fs::write(all.join("runC_rank3.json.gz"), []).unwrap();
    std::fs::remove_file(all.join("runC_rank3.json.gz")).unwrap();
    std::fs::write(all.join("runC_rank3.json"), &json[..json.len() * 3 / 4]).unwrap();

    let r = gapscope(args(&["analyze", "--format", "json"], &[&all])).expect_code(0);
    let jobs = r.json();
    let jobs = jobs.as_array().expect("three jobs");
    assert_eq!(jobs.len(), 3, "{}", r.stderr);
    let by_size = |n: usize| {
        jobs.iter()
            .filter(|j| j["ranks"].as_array().unwrap().len() == n)
            .count()
    };
    assert_eq!((by_size(2), by_size(3)), (2, 1));
    let culprits: Vec<(i64, i64)> = jobs
        .iter()
        .filter(|j| j["ranks"].as_array().unwrap().len() == 2)
        .map(|j| {
            let f = j["findings"]
                .as_array()
                .unwrap()
                .iter()
                .find(|f| f["id"] == "straggler_wait")
                .unwrap();
            (f["culprit_rank"].as_i64().unwrap(), f["step"].as_i64().unwrap())
        })
        .collect();
    assert_eq!(culprits, [(1, 10), (0, 11)], "run A then run B");
    let c = jobs
        .iter()
        .find(|j| j["ranks"].as_array().unwrap().len() == 3)
        .unwrap();
    assert_eq!(c["missing_ranks"], serde_json::json!([2]));
    let lines: Vec<&str> = r.stderr.lines().collect();
    assert!(
        lines
            .iter()
            .any(|l| l.contains("README.txt: skipped: not a trace")),
        "{}",
        r.stderr
    );
    assert!(
        lines
            .iter()
            .any(|l| l.contains("runC_rank3.json") && l.contains("cut short")
                || l.contains("runC_rank3.json") && l.contains("truncated")),
        "{}",
        r.stderr
    );
    assert!(
        lines.iter().any(|l| l.contains("no trace for rank 2 of 4")),
        "{}",
        r.stderr
    );
    assert!(
        lines.iter().all(|l| l.starts_with("gapscope: warning: ")),
        "{}",
        r.stderr
    );
}

#[test]
fn an_empty_directory_is_an_error() {
    let tmp = TempDir::new("job-empty");
    std::fs::write(tmp.path().join("x.txt"), "x").unwrap();
    let r = gapscope(args(&["analyze"], &[tmp.path()])).expect_code(2);
    assert!(r.stdout.is_empty());
    assert!(
        r.stderr.lines().last().unwrap().contains("no traces to analyse"),
        "{}",
        r.stderr
    );
}

/// `report` of a job as Markdown: the findings and both tables; and a
/// report of inputs that hold two jobs says so.
#[test]
fn job_report_markdown_and_two_jobs() {
    let tmp = TempDir::new("job-report");
    let a = tmp.path().join("a");
    std::fs::create_dir_all(&a).unwrap();
    plant_job(
        &a,
        &["--ranks", "4", "--steps", "2", "--plant", "2:10:5:4:compute"],
    );
    let r = gapscope(args(&["report", "--format", "md", "-o", "-"], &[&a])).expect_code(0);
    let md = r.stdout;
    assert!(md.starts_with("# Who held the job back\n"), "{md}");
    assert!(md.contains("step 10: ranks 0, 1, 3 waited 4.0 ms in all_reduce #1 for rank 2, whose GPU computed 4.0 ms longer than its peers'"), "{md}");
    assert_eq!(md.matches("\n| 2 | ").count(), 1, "rank 2's row: {md}");
    // How each rank's collectives were paired: the planted traces carry no
    // sequence numbers, so by order against rank 0's clock.
    assert!(md.contains("| clock offset | matched by | residual |"), "{md}");
    assert_eq!(md.matches(" | reference | ").count(), 1, "{md}");
    assert_eq!(md.matches(" | order | ").count(), 3, "{md}");
    let b = tmp.path().join("b");
    std::fs::create_dir_all(&b).unwrap();
    plant_job(&b, &["--ranks", "2", "--steps", "1"]);
    let out = tmp.path().join("r.html");
    let r = gapscope(args(&["report", "-o", out.to_str().unwrap()], &[&a, &b])).expect_code(2);
    assert!(
        r.stderr.contains("hold 2 jobs and 0 traces apart"),
        "{}",
        r.stderr
    );
    assert!(!out.exists());
}

/// Without the `parquet` feature, `summarize` says how to get it.
#[cfg(not(feature = "parquet"))]
#[test]
fn summarize_without_parquet_says_how_to_get_it() {
    let tmp = TempDir::new("job-summarize-nofeature");
    let t = shared_trace("param/dlrm_8rank/worker0_step_12.1694128201545.pt.trace.json.gz");
    let out = tmp.path().join("s");
    let r = gapscope(args(&["summarize", "-o", out.to_str().unwrap()], &[&t])).expect_code(2);
    assert_eq!(r.stderr.lines().count(), 1, "{}", r.stderr);
    assert!(r.stderr.contains("--features parquet"), "{}", r.stderr);
}

/// Two profiling cycles of the same 3 ranks in one directory (as
/// tensorboard_trace_handler writes them: one file per cycle and worker):
/// each cycle is its own snapshot of the job, paired across ranks by its
/// ProfilerStep numbers, reported in time order.
#[test]
fn profiling_cycles_pair_by_step() {
    let tmp = TempDir::new("job-cycles");
    let dir = tmp.path();
    plant_job(
        dir,
        &[
            "--ranks",
            "3",
            "--steps",
            "2",
            "--name",
            "w{rank}.cycle1.pt.trace.json.gz",
            "--plant",
            "0:11:1:2:dataloader",
        ],
    );
    plant_job(
        dir,
        &[
            "--ranks",
            "3",
            "--steps",
            "2",
            "--step-offset",
            "10",
            "--time-shift-s",
            "5",
            "--name",
            "w{rank}.cycle2.pt.trace.json.gz",
            "--plant",
            "2:21:1:3:dataloader",
        ],
    );
    let r = gapscope(args(&["analyze", "--format", "json"], &[dir])).expect_code(0);
    assert!(r.stderr.is_empty(), "{}", r.stderr);
    let j = r.json();
    let jobs = j.as_array().expect("two snapshots");
    assert_eq!(jobs.len(), 2);
    let steps = |k: usize| {
        jobs[k]["steps"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["step"].as_u64().unwrap())
            .collect::<Vec<_>>()
    };
    assert_eq!((steps(0), steps(1)), (vec![10, 11], vec![20, 21]));
    let culprit = |k: usize| {
        let f = jobs[k]["findings"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["id"] == "straggler_wait")
            .unwrap();
        (f["culprit_rank"].as_i64().unwrap(), f["step"].as_u64().unwrap())
    };
    assert_eq!((culprit(0), culprit(1)), ((0, 11), (2, 21)));
    for (k, job) in jobs.iter().enumerate() {
        let sources: Vec<&str> = job["ranks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["source"].as_str().unwrap())
            .collect();
        assert!(
            sources.iter().all(|s| s.contains(&format!("cycle{}", k + 1))),
            "{sources:?}"
        );
    }
}

/// `diff` of two jobs: the same job is no regression (exit 0); a late rank
/// planted in NEW is one, named with its finding (exit 1); a job against a
/// trace is an error (exit 2).
#[test]
fn diff_of_two_jobs() {
    let tmp = TempDir::new("job-diff");
    let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
    plant_job(&a, &["--ranks", "4", "--steps", "3"]);
    plant_job(
        &b,
        &["--ranks", "4", "--steps", "3", "--plant", "1:11:1:8:dataloader"],
    );
    let same = gapscope(args(&["diff"], &[&a, &a])).expect_code(0);
    assert!(same.stdout.contains("no regression"), "{}", same.stdout);
    let r = gapscope(args(&["diff", "--format", "json"], &[&a, &b])).expect_code(1);
    let j = r.json();
    assert_eq!(j["kind"], "job");
    let metrics: Vec<&str> = j["regressions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["metric"].as_str().unwrap())
        .collect();
    assert_eq!(metrics, ["wait", "finding"]);
    assert!(
        j["findings_added"][0]
            .as_str()
            .unwrap()
            .contains("for rank 1, whose DataLoader took 8.0 ms longer"),
        "{j}"
    );
    let t = a.join("rank0.pt.trace.json.gz");
    let r = gapscope(args(&["diff"], &[&a, &t])).expect_code(2);
    assert!(
        r.stderr.contains("diff compares two jobs or two traces"),
        "{}",
        r.stderr
    );
}

/// Collectives with process groups and sequence numbers (PyTorch 2.5+),
/// one rank's trace missing one: the JSON says per rank how its calls
/// were matched and per collective its group and number; the text says it
/// on the clocks line and in the rank table.
#[test]
fn sequence_matching_in_json_and_text() {
    let tmp = TempDir::new("job-seq");
    plant_job(
        tmp.path(),
        &[
            "--ranks",
            "3",
            "--steps",
            "2",
            "--seq",
            "--drop",
            "1:10:2",
            "--plant",
            "2:11:1:4:dataloader",
        ],
    );
    let j = gapscope(args(&["analyze", "--format", "json"], &[tmp.path()]))
        .expect_code(0)
        .json();
    let ranks = j["alignment"]["ranks"].as_array().unwrap();
    let methods: Vec<&str> = ranks.iter().map(|a| a["method"].as_str().unwrap()).collect();
    assert_eq!(methods, ["reference", "sequence", "sequence"]);
    let by_seq: Vec<i64> = ranks
        .iter()
        .map(|a| a["matched_by_seq"].as_i64().unwrap())
        .collect();
    assert_eq!(by_seq, [16, 15, 16]);
    let c = &j["collectives"][0];
    assert_eq!(c["group"], "1");
    assert_eq!(c["kind"], "all_to_all");
    assert_eq!(c["seq"], 1);
    let f = &j["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == "straggler_wait")
        .unwrap();
    assert_eq!(
        (f["culprit_rank"].as_i64(), f["step"].as_i64()),
        (Some(2), Some(11))
    );
    assert_eq!(f["untraced_ranks"], 0);
    let t = gapscope(args(&["analyze"], &[tmp.path()])).expect_code(0).stdout;
    assert!(
        t.contains("aligned to rank 0's on 16 collectives (matched by process group and sequence number)"),
        "{t}"
    );
    let row = t.lines().find(|l| l.trim_start().starts_with("1 ")).unwrap();
    assert!(row.contains(" seq "), "{row}");
}

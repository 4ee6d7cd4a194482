//! `gapscope diff` end to end, on the real binary: bench-result fixtures
//! (fixtures/bench, see its README), the HTA TraceDiff pair from
//! `../shared/traces/hta/trace_diff`, and the documented exit statuses
//! (0 no regression, 1 regression, 2 bad input naming the file).

mod common;

use common::{gapscope, repo, shared_trace, TempDir};
use std::path::PathBuf;

fn bench(name: &str) -> PathBuf {
    repo().join("fixtures/bench").join(name)
}

fn diff_json(base: &str, new: &str, extra: &[&str], code: i32) -> serde_json::Value {
    let (b, n) = (bench(base), bench(new));
    let mut args: Vec<&std::ffi::OsStr> = vec!["diff".as_ref(), "--format".as_ref(), "json".as_ref()];
    args.extend(extra.iter().map(|s| std::ffi::OsStr::new(*s)));
    args.push(b.as_os_str());
    args.push(n.as_os_str());
    gapscope(args).expect_code(code).json()
}

/// The `(subject, metric)` of every regression.
fn regressions(v: &serde_json::Value) -> Vec<(String, String)> {
    v["regressions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["subject"].as_str().unwrap().to_string(),
                r["metric"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

const RESNET: &str = "resnet50 batch_size=32 device=cuda mode=train precision=fp32";

#[test]
fn ten_percent_slowdown_fires() {
    let v = diff_json("base.jsonl", "slower_10pct.jsonl", &[], 1);
    assert_eq!(v["kind"], "bench");
    assert_eq!(v["regression"], true);
    assert_eq!(regressions(&v), [(RESNET.to_string(), "time".to_string())]);
    let change = v["regressions"][0]["change"].as_f64().unwrap();
    assert!((change - 0.10).abs() < 1e-9, "{change}");
}

#[test]
fn five_percent_slowdown_does_not() {
    let v = diff_json("base.jsonl", "slower_5pct.jsonl", &[], 0);
    assert!(regressions(&v).is_empty());
    assert_eq!(v["changes"][0]["time"]["verdict"], "same");
    // ...but does under a 3% time threshold, and --threshold sets both.
    let v = diff_json("base.jsonl", "slower_5pct.jsonl", &["--time-threshold", "3%"], 1);
    assert_eq!(regressions(&v), [(RESNET.to_string(), "time".to_string())]);
    let v = diff_json("base.jsonl", "slower_5pct.jsonl", &["--threshold", "4"], 1);
    assert_eq!(v["thresholds"]["time"], 0.04);
}

#[test]
fn noisy_pair_within_its_spread_does_not_fire() {
    let v = diff_json("base.jsonl", "noisy.jsonl", &[], 0);
    let dlrm = &v["changes"][2];
    assert!(dlrm["key"].as_str().unwrap().starts_with("dlrm"));
    let time = &dlrm["time"];
    // The median moved by 10%, beyond the 7% threshold, but dlrm's runs
    // scatter by ±14% of their median: within noise.
    assert!((time["change"].as_f64().unwrap() - 0.10).abs() < 1e-9);
    assert!((time["noise"].as_f64().unwrap() - 0.14).abs() < 1e-9);
    assert_eq!(time["verdict"], "noisy");
    assert!(regressions(&v).is_empty());
}

#[test]
fn memory_bloat_fires() {
    let v = diff_json("base.jsonl", "memory_bloat.jsonl", &[], 1);
    assert_eq!(regressions(&v), [(RESNET.to_string(), "gpu_memory".to_string())]);
    // Memory has its own threshold: 20% lets a 15% bloat pass.
    diff_json(
        "base.jsonl",
        "memory_bloat.jsonl",
        &["--memory-threshold", "20%"],
        0,
    );
}

#[test]
fn same_file_is_no_regression_in_every_format() {
    let b = bench("base.jsonl");
    for format in ["text", "md", "json"] {
        let run = gapscope([
            "diff".as_ref(),
            "--format".as_ref(),
            format.as_ref(),
            b.as_os_str(),
            b.as_os_str(),
        ])
        .expect_code(0);
        assert!(!run.stdout.is_empty());
    }
    let md = gapscope([
        "diff".as_ref(),
        "--format".as_ref(),
        "md".as_ref(),
        b.as_os_str(),
        bench("slower_10pct.jsonl").as_os_str(),
    ])
    .expect_code(1)
    .stdout;
    assert!(md.starts_with("## gapscope diff"), "{md}");
    assert!(md.contains("| :-- |"), "a Markdown table: {md}");
    assert!(md.contains("(time): median time +10.0%"), "{md}");
}

#[test]
fn bad_inputs_exit_2_with_one_line_naming_the_file() {
    let dir = TempDir::new("diff-bad");
    let base = bench("base.jsonl");
    let missing = dir.path().join("nope.jsonl");
    let empty = dir.file("empty.jsonl", b"");
    let broken = dir.file(
        "broken.jsonl",
        b"{\"schema\": \"gapscope-bench/1\", \"model\": \"m\", \"times_ns\": [1]}\n{\"schema\": \"gapscope-bench/1\", \"model\": 5}\n",
    );
    let future = dir.file(
        "future.jsonl",
        b"{\"schema\": \"gapscope-bench/9\", \"model\": \"m\", \"times_ns\": [1]}\n",
    );
    let not_json = dir.file("trace.json", b"this is not json");
    let trace = shared_trace("hta/trace_diff/control/control.json.gz");
    let cases: [(&PathBuf, &str); 6] = [
        (&missing, "cannot open"),
        (&empty, "empty"),
        (&broken, "line 2: not a bench record"),
        (&future, "schema `gapscope-bench/9`"),
        (&not_json, ""),
        (&trace, "is a trace but"),
    ];
    for (new, says) in cases {
        let run = gapscope(["diff".as_ref(), base.as_os_str(), new.as_os_str()]).expect_code(2);
        let line = run.stderr.trim_end();
        assert_eq!(line.lines().count(), 1, "one line: {line}");
        assert!(line.starts_with("gapscope: "), "{line}");
        assert!(
            line.contains(&*new.display().to_string()),
            "names the file: {line}"
        );
        assert!(line.contains(says), "says `{says}`: {line}");
        assert!(run.stdout.is_empty(), "no partial output: {}", run.stdout);
    }
    // A bad flag is an error too, from clap.
    gapscope([
        "diff".as_ref(),
        "--threshold".as_ref(),
        "lots".as_ref(),
        base.as_os_str(),
        base.as_os_str(),
    ])
    .expect_code(2);
}

#[test]
fn hta_trace_diff_pair() {
    let control = shared_trace("hta/trace_diff/control/control.json.gz");
    let test = shared_trace("hta/trace_diff/test/test.json.gz");
    let args = |format: &'static str| {
        [
            "diff".as_ref(),
            "--steps".as_ref(),
            "1009".as_ref(),
            "--format".as_ref(),
            format.as_ref(),
            control.as_os_str(),
            test.as_os_str(),
        ]
    };
    let v = gapscope(args("json")).expect_code(1).json();
    assert_eq!(v["kind"], "trace");
    // HTA's ops_diff counts 32 added, 138 deleted, 35 increased, 65
    // decreased, 162 unchanged. Added and removed agree; the 614 GPU rows of
    // test's CUDA-graph replays with no runtime call, which HTA drops and we
    // count, move 42 names (analyzers/tests/diff_hta_trace_diff.rs checks
    // each one against HTA's lists).
    let all = &v["ops"]["all_names"];
    let counts: Vec<u64> = ["added", "removed", "increased", "decreased", "unchanged"]
        .iter()
        .map(|k| all[k].as_u64().unwrap())
        .collect();
    assert_eq!(counts, [32, 138, 77, 61, 124]);
    // One GPU each (3 on the A100 rank, 1 on the V100 rank), paired, with
    // idle before/after and causes that add up to it.
    let devices = v["devices"].as_array().unwrap();
    assert_eq!(devices.len(), 1);
    for (side, id) in [("base", 3), ("new", 1)] {
        let d = &devices[0][side];
        assert_eq!(d["device"], id);
        let idle = d["breakdown"]["idle_ns"].as_i64().unwrap();
        let causes: i64 = d["idle_by_cause_ns"]
            .as_object()
            .unwrap()
            .values()
            .map(|x| x.as_i64().unwrap())
            .sum();
        assert_eq!(causes, idle);
        assert!(idle > 0);
    }
    // V100 against A100 is slower per step: a step-time regression.
    let regs = regressions(&v);
    assert!(
        regs.contains(&("trace".to_string(), "step_time".to_string())),
        "{regs:?}"
    );
    // Text and Markdown say the same.
    let text = gapscope(args("text")).expect_code(1).stdout;
    assert!(
        text.contains("32 added, 138 removed, 77 increased, 61 decreased, 124 unchanged"),
        "{text}"
    );
    assert!(text.contains("idle: host waits on GPU (sync)"), "{text}");
    // Context findings save nothing of their own: they say so rather than
    // "could save 0 ns"; an unestimable one says its bound. The operators'
    // classes are by count (HTA's), which the column says.
    assert!(
        text.contains("D15 exposed_communication nccl:all_to_all (context, not idle time)"),
        "{text}"
    );
    assert!(text.contains("(saving not estimable, at most "), "{text}");
    assert!(
        text.contains("D2 cpu_bound_operator aten::mm (could save 1.16 ms)"),
        "{text}"
    );
    assert!(text.contains(" by count "), "{text}");
    // D17 is one finding per device, paired across the two traces, its
    // id said once; a replay of 0 is said as such.
    assert!(
        text.contains("- still there: D17 kernel_launch_gaps (saving not estimable, at most "),
        "{text}"
    );
    assert!(!text.contains("could save 0 ns"), "{text}");
    let whole = gapscope(["diff".as_ref(), control.as_os_str(), test.as_os_str()])
        .expect_code(1)
        .stdout;
    assert!(
        whole.contains("- appeared: D3 small_kernel_launches aten::add_ (saves nothing on its own)"),
        "{whole}"
    );
    assert!(!whole.contains("could save 0 ns"), "{whole}");
    let persisted = &v["findings"]["persisted"];
    assert!(
        persisted
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p[1]["primary"] == false && p[1]["id"] == "D15"),
        "{persisted}"
    );
    let md = gapscope(args("md")).expect_code(1).stdout;
    assert!(md.contains("### Regressions"), "{md}");
}

#[test]
fn a_trace_against_itself_has_no_regression() {
    let control = shared_trace("hta/trace_diff/control/control.json.gz");
    let v = gapscope([
        "diff".as_ref(),
        "--format".as_ref(),
        "json".as_ref(),
        control.as_os_str(),
        control.as_os_str(),
    ])
    .expect_code(0)
    .json();
    assert_eq!(v["regression"], false);
    assert_eq!(v["step_time"]["change"], 0.0);
    let all = &v["ops"]["all_names"];
    assert_eq!(all["added"], 0);
    assert_eq!(all["removed"], 0);
    assert_eq!(all["increased"], 0);
    assert_eq!(all["decreased"], 0);
}

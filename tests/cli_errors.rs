//! Bad input: every unreadable trace gives exit status 2 and exactly one
//! stderr line that names the file and says what to do; nothing panics.
//! A readable trace without GPU work is not an error, and neither is a cut
//! one: what was read is analysed, with one warning saying where it ends.

mod common;
use common::*;
use std::ffi::OsString;
use std::io::Write;

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(bytes).unwrap();
    e.finish().unwrap()
}

/// Runs `analyze` on `path` and checks the one-line error.
fn assert_one_line_error(path: &std::path::Path, format: &str) {
    let args: Vec<OsString> = vec!["analyze".into(), "--format".into(), format.into(), path.into()];
    let r = gapscope(&args).expect_code(2);
    let lines: Vec<&str> = r.stderr.lines().collect();
    assert_eq!(
        lines.len(),
        1,
        "{}: want one stderr line, got:\n{}",
        path.display(),
        r.stderr
    );
    let line = lines[0];
    assert!(line.starts_with("gapscope: "), "{line}");
    assert!(
        line.contains(&path.display().to_string()),
        "the line names the file: {line}"
    );
    assert!(line.contains("; "), "the line says what to do after `; `: {line}");
    assert!(!r.stderr.contains("panicked"), "{}", r.stderr);
    assert!(r.stdout.is_empty(), "no partial output: {}", r.stdout);
}

#[test]
fn unreadable_traces_exit_2_with_one_line() {
    let dir = TempDir::new("bad");
    let demo = demo_json();
    let demo_gz = gzip(&demo);
    let mut corrupt_gz = demo_gz.clone();
    let mid = corrupt_gz.len() / 2;
    corrupt_gz[mid..mid + 64].iter_mut().for_each(|b| *b ^= 0x5a);
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("empty.json", Vec::new()),
        ("not-json.json", b"this is a log file, not a trace\n".to_vec()),
        (
            "no-events.json",
            br#"{"schemaVersion": 1, "deviceProperties": []}"#.to_vec(),
        ),
        ("array.json", b"[1, 2, 3]".to_vec()),
        ("corrupt.json.gz", corrupt_gz),
        // Cut before any event: nothing to analyse.
        ("cut-header.json", demo[..200].to_vec()),
        ("cut-header.json.gz", demo_gz[..20].to_vec()),
        ("open-brace.json", b"{".to_vec()),
        ("binary.json", (0u8..=255).cycle().take(4096).collect()),
    ];
    for (name, bytes) in cases {
        let p = dir.file(name, &bytes);
        assert_one_line_error(&p, "text");
        assert_one_line_error(&p, "json");
    }
    assert_one_line_error(&dir.path().join("missing.json"), "text");
    // A directory of them: one warning per file, then the error.
    let args: Vec<OsString> = vec!["analyze".into(), dir.path().into()];
    let r = gapscope(&args).expect_code(2);
    assert!(r.stdout.is_empty(), "{}", r.stdout);
    let lines: Vec<&str> = r.stderr.lines().collect();
    assert_eq!(lines.len(), 10, "{}", r.stderr);
    assert!(
        lines[..9]
            .iter()
            .all(|l| l.starts_with("gapscope: warning: ") && l.ends_with("; left out")),
        "{}",
        r.stderr
    );
    assert_eq!(
        lines[9],
        "gapscope: none of the 9 input files could be analysed (see the warnings above)"
    );
}

/// Runs `analyze --format json` on a cut file: exit 0, one warning line that
/// names the file, the byte offset where it ends and the events read.
fn analyse_cut(path: &std::path::Path, extra: &[&str]) -> (serde_json::Value, String) {
    let mut args: Vec<OsString> = vec!["analyze".into(), "--format".into(), "json".into()];
    args.extend(extra.iter().map(OsString::from));
    args.push(path.into());
    let r = gapscope(&args).expect_code(0);
    let lines: Vec<&str> = r.stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{}", r.stderr);
    let want = format!("gapscope: warning: {}: truncated: ", path.display());
    assert!(lines[0].starts_with(&want), "{}", lines[0]);
    assert!(lines[0].contains("ends at byte offset "), "{}", lines[0]);
    assert!(lines[0].contains(" events read before the cut"), "{}", lines[0]);
    (r.json(), lines[0].to_string())
}

fn steps(j: &serde_json::Value) -> usize {
    j["steps"].as_array().map_or(0, Vec::len)
}

#[test]
fn a_cut_trace_is_analysed_as_far_as_it_goes() {
    let dir = TempDir::new("cut");
    let demo = demo_json();
    let whole = {
        let p = dir.file("whole.json", &demo);
        let args: Vec<OsString> = vec!["analyze".into(), "--format".into(), "json".into(), p.into()];
        let r = gapscope(&args).expect_code(0);
        assert!(r.stderr.is_empty(), "{}", r.stderr);
        r.json()
    };
    let mut last = (0, 0);
    for percent in [10, 30, 50, 70, 90, 99] {
        let cut = demo.len() * percent / 100;
        let p = dir.file(&format!("cut-{percent}.json"), &demo[..cut]);
        let (j, line) = analyse_cut(&p, &[]);
        assert!(line.contains(&format!("ends at byte offset {cut} ")), "{line}");
        assert_breakdown_adds_up(&j["devices"][0]["breakdown"]);
        let gpu_rows = j["diagnostics"]["rows"]["gpu"].as_u64().unwrap();
        let now = (steps(&j), gpu_rows as usize);
        assert!(
            now.0 >= last.0 && now.1 > last.1,
            "{percent}%: {now:?} after {last:?}"
        );
        last = now;
    }
    assert!(last.0 <= steps(&whole) && last.0 > 0);
    assert!(steps(&analyse_cut(&dir.file("cut-10b.json", &demo[..demo.len() / 10]), &[]).0) < steps(&whole));

    // A cut gzip stream, and a whole gzip of a cut file, read the same way.
    let gz = gzip(&demo[..demo.len() / 2]);
    let (a, line) = analyse_cut(&dir.file("half.json.gz", &gz), &[]);
    assert!(line.contains("ends at byte offset"), "{line}");
    let (b, line) = analyse_cut(&dir.file("cut.json.gz", &gzip(&demo)[..gz.len() / 2]), &[]);
    assert!(line.contains("the gzip data is cut short"), "{line}");
    assert!(steps(&a) > 0 && steps(&b) > 0);

    // Only the end of the file is lost: every event read, the warning says so.
    let tail = demo.iter().rposition(|&b| b == b']').unwrap() + 1;
    let (j, line) = analyse_cut(&dir.file("no-close.json", &demo[..tail]), &[]);
    assert!(line.contains("after the last event"), "{line}");
    assert_eq!(steps(&j), steps(&whole));
    assert_eq!(j["diagnostics"]["rows"], whole["diagnostics"]["rows"]);
}

#[test]
fn max_events_reads_the_start_only() {
    let dir = TempDir::new("max");
    let p = dir.file("demo.json", &demo_json());
    let run = |n: &str| {
        let args: Vec<OsString> = vec![
            "analyze".into(),
            "--format".into(),
            "json".into(),
            "--max-events".into(),
            n.into(),
            p.clone().into(),
        ];
        gapscope(&args)
    };
    let r = run("1000").expect_code(0);
    assert_eq!(r.stderr.lines().count(), 1, "{}", r.stderr);
    assert!(
        r.stderr
            .contains("read only the first 1000 events (--max-events)"),
        "{}",
        r.stderr
    );
    let small = r.json();
    let big = run("1000000").expect_code(0);
    assert!(big.stderr.is_empty(), "the whole trace fits: {}", big.stderr);
    let big = big.json();
    assert!(
        steps(&small) < steps(&big),
        "{} vs {}",
        steps(&small),
        steps(&big)
    );
    let rows = |j: &serde_json::Value| j["diagnostics"]["rows"]["cpu_ops"].as_u64().unwrap();
    assert!(rows(&small) < rows(&big));
    run("0").expect_code(2);
    run("x").expect_code(2);
}

/// With several inputs, one that cannot be read is left out with one
/// warning line naming it, the others are analysed (exit 0); a single bad
/// input, or only bad ones, is an error (exit 2, nothing on stdout).
#[test]
fn a_bad_trace_among_good_ones_is_left_out_with_a_warning() {
    let dir = TempDir::new("mixed");
    let good = dir.file("good.json", &demo_json());
    let bad = dir.file("bad.json", b"{");
    let args: Vec<OsString> = vec![
        "analyze".into(),
        "--format".into(),
        "json".into(),
        good.into(),
        bad.clone().into(),
    ];
    let r = gapscope(&args).expect_code(0);
    assert_eq!(r.json()["schema_version"], 1, "the good trace's analysis, alone");
    assert_eq!(r.stderr.lines().count(), 1, "{}", r.stderr);
    assert!(
        r.stderr.contains(&bad.display().to_string()) && r.stderr.contains("left out"),
        "{}",
        r.stderr
    );
    let only_bad: Vec<OsString> = vec!["analyze".into(), bad.clone().into(), bad.clone().into()];
    let r = gapscope(&only_bad).expect_code(2);
    assert!(r.stdout.is_empty(), "{}", r.stdout);
    assert!(
        r.stderr
            .lines()
            .last()
            .unwrap()
            .contains("none of the 2 input files could be analysed"),
        "{}",
        r.stderr
    );
}

const CPU_ONLY: &str = r#"{"schemaVersion": 1, "traceEvents": [
  {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 7, "tid": 7, "ts": 1000.5, "dur": 900},
  {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 7, "tid": 7, "ts": 1010.25, "dur": 500, "args": {"External id": 1}},
  {"ph": "X", "cat": "cpu_op", "name": "aten::relu", "pid": 7, "tid": 7, "ts": 1600, "dur": 100, "args": {"External id": 2}}
]}"#;

#[test]
fn cpu_only_trace_says_so_and_exits_0() {
    let dir = TempDir::new("cpu");
    let p = dir.file("cpu.json", CPU_ONLY.as_bytes());
    let args: Vec<OsString> = vec!["analyze".into(), p.clone().into()];
    let r = gapscope(&args).expect_code(0);
    let want = format!(
        "no GPU activity found in {}: was the profiler run with ProfilerActivity.CUDA?",
        p.display()
    );
    assert!(r.stdout.contains(&want), "{}", r.stdout);

    let args: Vec<OsString> = vec!["analyze".into(), "--format".into(), "json".into(), p.into()];
    let j = gapscope(&args).expect_code(0).json();
    assert_eq!(j["devices"], serde_json::json!([]));
}

#[test]
fn shared_cpu_only_rank_is_not_an_error() {
    let p = shared_trace("hta/cpu_only/rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz");
    let args: Vec<OsString> = vec!["analyze".into(), p.clone().into()];
    let r = gapscope(&args).expect_code(0);
    assert!(r.stdout.contains("no GPU activity found in"), "{}", r.stdout);
}

/// HTA's CUPTI-counter trace holds 77 range-profiler records and no GPU
/// activity: the profiler was asked for counters, not left without CUDA.
#[test]
fn counter_only_trace_says_what_it_holds_instead() {
    let p = shared_trace("hta/cupti_profiler/benchmark_result_924719_1679055439_trace.json.gz");
    let args: Vec<OsString> = vec!["analyze".into(), p.clone().into()];
    let r = gapscope(&args).expect_code(0);
    assert!(
        r.stdout.contains("no GPU activity found in")
            && r.stdout
                .contains("it holds 77 CUPTI range-profiler records instead")
            && r.stdout.contains("without `profiler_metrics`"),
        "{}",
        r.stdout
    );
    assert!(!r.stdout.contains("ProfilerActivity.CUDA"), "{}", r.stdout);
    let args: Vec<OsString> = vec![
        "analyze".into(),
        "--format".into(),
        "json".into(),
        p.clone().into(),
    ];
    let j = gapscope(&args).expect_code(0).json();
    assert_eq!(j["devices"], serde_json::json!([]));
    assert_eq!(j["diagnostics"]["counter_ranges"], 77);
    // The report says the same.
    let args: Vec<OsString> = vec![
        "report".into(),
        "--format".into(),
        "md".into(),
        "-o".into(),
        "-".into(),
        p.clone().into(),
    ];
    let r = gapscope(&args).expect_code(0);
    assert!(
        r.stdout.contains(
            "No GPU activity was found in this trace: it holds 77 CUPTI range-profiler records instead"
        ),
        "{}",
        r.stdout
    );
}

/// One counter record is said in the singular.
#[test]
fn one_counter_record_is_one_record() {
    let dir = TempDir::new("counters");
    let p = dir.file(
        "one.json",
        br#"{"traceEvents": [{"ph": "X", "cat": "cuda_profiler_range", "name": "k", "pid": 0, "tid": 0, "ts": 10, "dur": 5}]}"#,
    );
    let r = gapscope([OsString::from("analyze"), p.into()]).expect_code(0);
    assert!(
        r.stdout
            .contains("it holds 1 CUPTI range-profiler record instead"),
        "{}",
        r.stdout
    );
}

#[test]
fn skipped_events_give_one_warning_line() {
    // Two events the importer cannot use (no timestamp, negative duration)
    // beside good ones: analysis goes on, one warning names the reasons.
    let trace = r#"{"traceEvents": [
      {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 100, "dur": 10, "args": {"device": 0, "stream": 7, "correlation": 1}},
      {"ph": "X", "cat": "kernel", "name": "no_ts", "pid": 0, "tid": 7, "dur": 10, "args": {"device": 0, "stream": 7, "correlation": 2}},
      {"ph": "X", "cat": "kernel", "name": "k2", "pid": 0, "tid": 7, "ts": 200, "dur": 10, "args": {"device": 0, "stream": 7, "correlation": 3}}
    ]}"#;
    let dir = TempDir::new("skip");
    let p = dir.file("skips.json", trace.as_bytes());
    let args: Vec<OsString> = vec!["analyze".into(), p.clone().into()];
    let r = gapscope(&args).expect_code(0);
    let lines: Vec<&str> = r.stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{}", r.stderr);
    let want = format!("gapscope: warning: {}: skipped 1 event (", p.display());
    assert!(lines[0].starts_with(&want), "{}", lines[0]);

    let args: Vec<OsString> = vec!["analyze".into(), "-q".into(), p.into()];
    let r = gapscope(&args).expect_code(0);
    assert!(r.stderr.is_empty(), "-q silences warnings: {}", r.stderr);
}

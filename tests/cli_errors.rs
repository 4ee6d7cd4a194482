//! Bad input: every unreadable trace gives exit status 2 and exactly one
//! stderr line that names the file and says what to do; nothing panics.
//! A readable trace without GPU work is not an error.

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
        ("cut.json.gz", demo_gz[..demo_gz.len() / 2].to_vec()),
        ("truncated.json", demo[..demo.len() / 2].to_vec()),
        ("binary.json", (0u8..=255).cycle().take(4096).collect()),
    ];
    for (name, bytes) in cases {
        let p = dir.file(name, &bytes);
        assert_one_line_error(&p, "text");
        assert_one_line_error(&p, "json");
    }
    assert_one_line_error(&dir.path().join("missing.json"), "text");
    assert_one_line_error(dir.path(), "text"); // a directory
}

#[test]
fn a_bad_trace_among_good_ones_stops_before_output() {
    let dir = TempDir::new("mixed");
    let good = dir.file("good.json", &demo_json());
    let bad = dir.file("bad.json", b"{");
    let args: Vec<OsString> = vec!["analyze".into(), good.into(), bad.clone().into()];
    let r = gapscope(&args).expect_code(2);
    assert!(r.stdout.is_empty(), "{}", r.stdout);
    assert_eq!(r.stderr.lines().count(), 1, "{}", r.stderr);
    assert!(r.stderr.contains(&bad.display().to_string()));
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

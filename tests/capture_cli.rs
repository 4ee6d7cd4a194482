//! `.gst` captures through the real binary: `export --format gst` converts a
//! Kineto trace, and `analyze`, `export`, `report` and `diff` read the
//! capture with the same results as the original; a damaged capture is one
//! line and exit status 2.

mod common;
use common::*;
use std::path::{Path, PathBuf};

fn trace_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        let name = p.file_name().unwrap().to_string_lossy().to_string();
        if p.is_dir() {
            trace_files(&p, out);
        } else if name.ends_with(".json") || name.ends_with(".json.gz") {
            out.push(p);
        }
    }
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// `analyze --format json` of `path`, with the fields that name the file
/// and its format taken out.
fn analysis(path: &Path) -> serde_json::Value {
    let mut v = gapscope(["analyze", "--quiet", "--format", "json", s(path)])
        .expect_code(0)
        .json();
    let src = v["source"].as_object_mut().expect("a source object");
    assert!(
        src.remove("path").is_some() && src.remove("format").is_some(),
        "{v}"
    );
    v
}

#[test]
fn analyze_gives_the_same_result_for_every_shared_trace_and_its_capture() {
    let mut files = Vec::new();
    trace_files(&repo().join("../shared/traces"), &mut files);
    files.sort();
    files.push(repo().join("fixtures/demo/demo.pt.trace.json.gz"));
    assert!(files.len() >= 19, "{files:?}");
    let dir = TempDir::new("capture-analyze");
    for (i, f) in files.iter().enumerate() {
        let gst = dir.path().join(format!("{i}.gst"));
        let r = gapscope(["export", s(f), "--format", "gst", "-o", s(&gst)]).expect_code(0);
        assert!(
            r.stderr.contains("rows,") && r.stderr.contains("bytes"),
            "{}",
            r.stderr
        );
        assert!(std::fs::read(&gst).unwrap().starts_with(b"\x89GST\r\n\x1a\n"));
        let a = analysis(f);
        let b = analysis(&gst);
        assert!(a == b, "{}: the analysis of the capture differs", f.display());
        let full = gapscope(["analyze", "--format", "json", s(&gst)])
            .expect_code(0)
            .json();
        assert_eq!(full["source"]["format"], "gapscope-capture");
        assert_eq!(full["source"]["path"], s(&gst));
    }
}

#[test]
fn export_report_and_diff_read_a_capture() {
    let dir = TempDir::new("capture-subcommands");
    let json = shared_trace("hta/critical_path/alexnet/benchmark_result_2869224_1695835535_trace.json.gz");
    let gst = dir.path().join("alexnet.gst");
    gapscope(["export", s(&json), "--format", "gst", "-o", s(&gst)]).expect_code(0);

    // The Chrome timeline written from the capture is the one written from
    // the original, byte for byte.
    let (c1, c2) = (dir.path().join("a.json"), dir.path().join("b.json"));
    gapscope(["export", s(&json), "--format", "chrome", "-o", s(&c1)]).expect_code(0);
    gapscope(["export", s(&gst), "--format", "chrome", "-o", s(&c2)]).expect_code(0);
    assert!(std::fs::read(&c1).unwrap() == std::fs::read(&c2).unwrap());
    let pf = dir.path().join("a.pftrace");
    gapscope(["export", s(&gst), "-o", s(&pf)]).expect_code(0);
    assert!(std::fs::metadata(&pf).unwrap().len() > 1000);

    let html = dir.path().join("r.html");
    gapscope(["report", s(&gst), "-o", s(&html)]).expect_code(0);
    assert!(std::fs::read_to_string(&html).unwrap().contains("<html"));

    // A trace against its capture diffs as the trace against itself: no
    // regression (alexnet has several D14 findings under one operator,
    // which once paired two to one and showed as grown).
    let same = gapscope(["diff", "--format", "json", s(&json), s(&json)]);
    let with_gst = gapscope(["diff", "--format", "json", s(&json), s(&gst)]);
    assert_eq!(same.code, 0, "{}", same.stdout);
    assert_eq!(with_gst.code, 0, "{}", with_gst.stdout);
    let (mut a, mut b) = (same.json(), with_gst.json());
    assert_eq!(b["new"], s(&gst));
    a.as_object_mut().unwrap().remove("new");
    b.as_object_mut().unwrap().remove("new");
    assert!(
        a == b,
        "diff against the capture differs from diff against the trace"
    );
}

#[test]
fn a_damaged_capture_is_one_line_and_exit_status_2() {
    let dir = TempDir::new("capture-bad");
    let gst = dir.path().join("good.gst");
    let demo = repo().join("fixtures/demo/demo.pt.trace.json.gz");
    gapscope(["export", s(&demo), "--format", "gst", "-o", s(&gst)]).expect_code(0);
    let bytes = std::fs::read(&gst).unwrap();

    let cut = dir.file("bad.gst", &bytes[..bytes.len() / 2]);
    let r = gapscope(["analyze", s(&cut)]).expect_code(2);
    assert!(r.stdout.is_empty(), "{}", r.stdout);
    let lines: Vec<&str> = r.stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{}", r.stderr);
    assert!(
        lines[0].contains(&format!(
            "{}: truncated at byte {}",
            cut.display(),
            bytes.len() / 2
        )) && lines[0].contains("re-record"),
        "{}",
        lines[0]
    );

    let mut newer = bytes.clone();
    newer[8] = 9;
    let p = dir.file("newer.gst", &newer);
    let out = dir.path().join("out");
    for args in [
        vec!["analyze", s(&p)],
        vec!["report", s(&p), "-o", s(&out)],
        vec!["export", s(&p), "-o", s(&out)],
        vec!["diff", s(&p), s(&gst)],
    ] {
        let cmd = args[0];
        let r = gapscope(&args).expect_code(2);
        assert_eq!(r.stderr.lines().count(), 1, "{cmd}: {}", r.stderr);
        assert!(
            r.stderr
                .contains("capture format version 9 is newer than this gapscope reads (3); upgrade gapscope"),
            "{cmd}: {}",
            r.stderr
        );
        assert!(!out.exists(), "{cmd} wrote output from a bad capture");
    }
}

#[test]
fn export_gst_into_a_missing_folder_is_one_line_and_leaves_nothing() {
    let dir = TempDir::new("capture-export-fail");
    let demo = repo().join("fixtures/demo/demo.pt.trace.json.gz");
    let out = dir.path().join("no/such/dir/run.gst");
    let r = gapscope(["export", s(&demo), "--format", "gst", "-o", s(&out)]).expect_code(2);
    assert_eq!(r.stderr.lines().count(), 1, "{}", r.stderr);
    assert!(r.stderr.contains("run.gst"), "{}", r.stderr);
    assert!(!out.exists());
}

/// `analyze /dev/stdin` with the bytes on a pipe.
fn analyze_piped(bytes: Vec<u8>) -> serde_json::Value {
    use std::io::Write;
    use std::process::{Command, Stdio};
    let mut child = Command::new(env!("CARGO_BIN_EXE_gapscope"))
        .args(["analyze", "--quiet", "--format", "json", "/dev/stdin"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(&bytes);
    });
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let mut v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let src = v["source"].as_object_mut().unwrap();
    src.remove("path");
    src.remove("format");
    v
}

#[test]
fn a_capture_or_a_trace_on_a_pipe_is_read_whole() {
    // Telling a capture from JSON must not eat a pipe's first bytes.
    let dir = TempDir::new("capture-pipe");
    let json = repo().join("fixtures/demo/demo.pt.trace.json.gz");
    let gst = dir.path().join("demo.gst");
    gapscope(["export", s(&json), "--format", "gst", "-o", s(&gst)]).expect_code(0);
    let from_file = analysis(&json);
    assert!(analyze_piped(std::fs::read(&gst).unwrap()) == from_file);
    assert!(analyze_piped(std::fs::read(&json).unwrap()) == from_file);
}

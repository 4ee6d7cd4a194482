//! `analyze --time-window START..END`: exact numbers on a small trace, the
//! window intersected with `--steps` and `--exclude-last-step`, ops cut at
//! its edges, the same result for `.json` and `.json.gz` (the importer drops
//! rows outside the window as it reads), and bad windows as one error line.

mod common;
use common::*;
use std::ffi::OsString;
use std::io::Write;
use std::path::Path;

/// Times in µs; the trace's first event (step 1) is at 1000, its origin:
///
/// ```text
/// µs after origin  0        500       1000      1500      2000
/// steps            [step 1............)[step 2............)
/// gpu                 [k1..)     [k2.........)[k3..)      [k4)
///                     100-400    700-1200  1200-1400     1800-1900
/// window 0.5ms..1.5ms      |<------------------>|
/// ```
const TRACE: &str = r#"{"deviceProperties": [{"id": 0, "name": "GPU", "numSms": 132}], "traceEvents": [
{"ph": "X", "cat": "gpu_user_annotation", "name": "unrelated", "pid": 0, "tid": 9, "ts": 1050, "dur": 10, "args": {"device": 0}},
{"ph": "X", "cat": "kernel", "name": "k4", "pid": 0, "tid": 7, "ts": 2800, "dur": 100, "args": {"device": 0, "stream": 7, "correlation": 4}},
{"ph": "X", "cat": "kernel", "name": "k1", "pid": 0, "tid": 7, "ts": 1100, "dur": 300, "args": {"device": 0, "stream": 7, "correlation": 1}},
{"ph": "X", "cat": "kernel", "name": "k2", "pid": 0, "tid": 7, "ts": 1700, "dur": 500, "args": {"device": 0, "stream": 7, "correlation": 2}},
{"ph": "X", "cat": "kernel", "name": "k3", "pid": 0, "tid": 7, "ts": 2200, "dur": 200, "args": {"device": 0, "stream": 7, "correlation": 3}},
{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 1000, "dur": 1000},
{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#2", "pid": 1, "tid": 1, "ts": 2000, "dur": 1000},
{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 1010, "dur": 5, "args": {"correlation": 1}},
{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 1500, "dur": 5, "args": {"correlation": 2}},
{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 2100, "dur": 5, "args": {"correlation": 3}},
{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 2600, "dur": 5, "args": {"correlation": 4}}
]}"#;

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(bytes).unwrap();
    e.finish().unwrap()
}

fn analyze(path: &Path, extra: &[&str]) -> Run {
    let mut args: Vec<OsString> = vec!["analyze".into(), "--format".into(), "json".into()];
    args.extend(extra.iter().map(OsString::from));
    args.push(path.into());
    gapscope(&args)
}

/// (start, end, compute, idle) of the window, ns.
fn window(j: &serde_json::Value) -> (i64, i64, i64, i64) {
    let b = &j["devices"][0]["breakdown"];
    assert_breakdown_adds_up(b);
    (
        j["window"]["start_ns"].as_i64().unwrap(),
        j["window"]["end_ns"].as_i64().unwrap(),
        b["compute_ns"].as_i64().unwrap(),
        b["idle_ns"].as_i64().unwrap(),
    )
}

/// Per step: (number, start, end, compute, idle), ns.
fn steps(j: &serde_json::Value) -> Vec<(u64, i64, i64, i64, i64)> {
    j["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            let b = &s["devices"][0]["breakdown"];
            (
                s["step"].as_u64().unwrap(),
                s["start_ns"].as_i64().unwrap(),
                s["end_ns"].as_i64().unwrap(),
                b["compute_ns"].as_i64().unwrap(),
                b["idle_ns"].as_i64().unwrap(),
            )
        })
        .collect()
}

const US: i64 = 1_000;

#[test]
fn a_window_cuts_steps_and_kernels_at_its_edges() {
    let dir = TempDir::new("tw");
    let plain = dir.file("t.json", TRACE.as_bytes());
    let gz = dir.file("t.json.gz", &gzip(TRACE.as_bytes()));
    for p in [&plain, &gz] {
        // Whole trace, for reference: steps 0..2000 µs, 1100 µs of kernels.
        let j = analyze(p, &[]).expect_code(0).json();
        assert_eq!(window(&j), (0, 2000 * US, 1100 * US, 900 * US));

        // 0.5ms..1.5ms: step 1 cut to 500..1000, step 2 to 1000..1500; k2
        // (700..1200) and k3 (1200..1400) inside: 700 µs busy of 1000.
        let r = analyze(p, &["--time-window", "0.5ms..1.5ms"]).expect_code(0);
        assert!(r.stderr.is_empty(), "{}", r.stderr);
        let j = r.json();
        assert_eq!(window(&j), (500 * US, 1500 * US, 700 * US, 300 * US));
        assert_eq!(
            steps(&j),
            vec![
                (1, 500 * US, 1000 * US, 300 * US, 200 * US),
                (2, 1000 * US, 1500 * US, 400 * US, 100 * US),
            ]
        );
        assert_eq!(j["window"]["basis"], "steps");
        assert_eq!(j["window"]["steps_in_trace"], 2);
        assert_eq!(
            j["window"]["time_window"],
            serde_json::json!({"start_ns": 500_000, "end_ns": 1_500_000})
        );
        // k2's launch (at 500 µs) is in the window, k3's (1100) too; k1's
        // and k4's, and the kernels, are not.
        assert_eq!(j["diagnostics"]["rows_selected"]["gpu"], 2);
        assert_eq!(j["diagnostics"]["rows_selected"]["runtime"], 2);

        // Open at the start: ..0.5ms is step 1's first half, k1 whole.
        let j = analyze(p, &["--time-window", "..500us"]).expect_code(0).json();
        assert_eq!(window(&j), (0, 500 * US, 300 * US, 200 * US));
        assert_eq!(steps(&j), vec![(1, 0, 500 * US, 300 * US, 200 * US)]);

        // Open at the end: 1.3ms.. cuts k3 (1200..1400) to 100 µs, k4 whole.
        let j = analyze(p, &["--time-window", "1.3ms.."]).expect_code(0).json();
        assert_eq!(window(&j), (1300 * US, 2000 * US, 200 * US, 500 * US));
        assert_eq!(steps(&j), vec![(2, 1300 * US, 2000 * US, 200 * US, 500 * US)]);

        // With --steps 2 the window is intersected with step 2: 1000..1500.
        let j = analyze(p, &["--time-window", "0.5ms..1.5ms", "--steps", "2"])
            .expect_code(0)
            .json();
        assert_eq!(window(&j), (1000 * US, 1500 * US, 400 * US, 100 * US));
        assert_eq!(j["window"]["steps_selected"], serde_json::json!([2]));

        // --exclude-last-step keeps step 1 only: 500..1000.
        let j = analyze(p, &["--time-window", "0.5ms..1.5ms", "--exclude-last-step"])
            .expect_code(0)
            .json();
        assert_eq!(window(&j), (500 * US, 1000 * US, 300 * US, 200 * US));
    }
}

#[test]
fn a_window_that_selects_nothing_is_one_error_line() {
    let dir = TempDir::new("tw-empty");
    let p = dir.file("t.json", TRACE.as_bytes());
    let name = p.display().to_string();
    let cases: &[(&[&str], &str)] = &[
        (
            &["--time-window", "1.5ms..", "--exclude-last-step"],
            "the time window 1.5ms.. and the selected steps (1..1, from 0 ns to 1 ms) do not overlap",
        ),
        (
            &["--time-window", "..0.5ms", "--steps", "2"],
            "the time window ..0.5ms and the selected steps (2..2, from 1 ms to 2 ms) do not overlap",
        ),
        (
            &["--time-window", "..0.5ms", "--steps", "7..9"],
            "select no step, so the time window ..0.5ms has nothing to cut",
        ),
        // The trace's events run to 1900 µs after its first (k4's end).
        (
            &["--time-window", "3s..4s"],
            "the time window 3s..4s is outside the trace, whose events run from 0 ns to 2 ms after its first event",
        ),
    ];
    for (args, want) in cases {
        let r = analyze(&p, args).expect_code(2);
        let lines: Vec<&str> = r.stderr.lines().collect();
        assert_eq!(lines.len(), 1, "{args:?}: {}", r.stderr);
        assert!(
            lines[0].starts_with(&format!("gapscope: {name}: ")),
            "{}",
            lines[0]
        );
        assert!(lines[0].contains(want), "{args:?}: {}", lines[0]);
        assert!(lines[0].contains("; "), "says what to do: {}", lines[0]);
        assert!(r.stdout.is_empty(), "{}", r.stdout);
    }
}

#[test]
fn bad_window_syntax_is_one_line_and_exit_2() {
    let dir = TempDir::new("tw-syntax");
    let p = dir.file("t.json", TRACE.as_bytes());
    let cases = [
        (
            "2.5x..4s",
            "`2.5x` is not a time; write a number and a unit: ns, us, ms or s (e.g. 2.5s)",
        ),
        (
            "2.5s",
            "write it as START..END with units, e.g. 2.5s..4s (or ..4s, 2.5s..)",
        ),
        ("4s..2.5s", "the window is empty: START must be before END"),
        ("..", "give a start, an end or both, e.g. 2.5s..4s"),
        (
            "1..2",
            "`1` is not a time; write a number and a unit: ns, us, ms or s (e.g. 2.5s)",
        ),
        ("0.5ns..", "`0.5ns` is finer than 1 ns"),
    ];
    for (w, want) in cases {
        let r = analyze(&p, &["--time-window", w]).expect_code(2);
        assert_eq!(r.stderr, format!("gapscope: --time-window {w}: {want}\n"), "{w}");
        assert!(r.stdout.is_empty());
    }
    // Before any file is opened: a missing trace is not what is reported.
    let r = gapscope(["analyze", "--time-window", "x..", "missing.json"]).expect_code(2);
    assert!(
        r.stderr.starts_with("gapscope: --time-window x..: "),
        "{}",
        r.stderr
    );
}

#[test]
fn the_text_output_names_the_window() {
    let dir = TempDir::new("tw-text");
    let p = dir.file("t.json", TRACE.as_bytes());
    let r = gapscope([
        "analyze".as_ref(),
        "--time-window".as_ref(),
        "0.5ms..1.5ms".as_ref(),
        p.as_os_str(),
    ])
    .expect_code(0);
    let lines: Vec<&str> = r.stdout.lines().take(3).collect();
    assert_eq!(
        lines[1..],
        [
            "time window: 0.50 ms to 1.50 ms (from the trace's first event; ops at the edges cut)",
            "window: 2 steps #1..#2 of 2 in the trace, 1.00 ms",
        ]
    );
    let r = gapscope([
        "analyze".as_ref(),
        "--time-window".as_ref(),
        "..0.05ms".as_ref(),
        p.as_os_str(),
    ])
    .expect_code(0);
    let lines: Vec<&str> = r.stdout.lines().take(3).collect();
    assert_eq!(
        lines[1..],
        [
            "time window: the trace's start to 0.05 ms (from the trace's first event; ops at the edges cut)",
            "window: step #1 of 2 in the trace, 0.05 ms",
        ]
    );
}

#[test]
fn the_help_shows_the_option_with_an_example() {
    let r = gapscope(["analyze", "--help"]).expect_code(0);
    assert!(r.stdout.contains("--time-window <START..END>"), "{}", r.stdout);
    assert!(
        r.stdout.contains("gapscope analyze --time-window 2.5s..4s"),
        "{}",
        r.stdout
    );
}

/// The built-in demo is imported whole and cut by the analysis; the same
/// trace from a file is cut by the importer as it reads. Both give the same
/// analysis (only the row counts of the whole trace differ: the importer
/// never kept the rows outside the window).
#[test]
fn importer_drop_and_analysis_cut_agree_on_the_demo() {
    let dir = TempDir::new("tw-demo");
    let p = dir.file("demo.json", &demo_json());
    for w in ["30ms..60ms", "..41ms", "57.5ms..", "10ms..20ms"] {
        let whole = gapscope(["analyze", "--format", "json", "--demo", "--time-window", w])
            .expect_code(0)
            .json();
        let dropped = analyze(&p, &["--time-window", w]).expect_code(0).json();
        let strip = |mut j: serde_json::Value| {
            j["source"]["path"] = serde_json::Value::Null;
            j["diagnostics"]["rows"] = serde_json::Value::Null;
            j
        };
        let (whole, dropped) = (strip(whole), strip(dropped));
        assert!(whole["devices"][0]["breakdown"]["window_ns"].as_i64().unwrap() > 0);
        assert_eq!(whole, dropped, "window {w}");
    }
}

/// A gzip trace from a pipe can be read only once: a window with a start
/// (two passes) reads what the pipe gave from memory.
#[cfg(unix)]
#[test]
fn a_piped_gzip_trace_takes_a_window() {
    let dir = TempDir::new("tw-fifo");
    let fifo = dir.path().join("in.json.gz");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo runs");
    assert!(made.success());
    let writer = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::write(fifo, gzip(TRACE.as_bytes())).unwrap())
    };
    let j = analyze(&fifo, &["--time-window", "0.5ms..1.5ms"])
        .expect_code(0)
        .json();
    writer.join().unwrap();
    assert_eq!(window(&j), (500 * US, 1500 * US, 700 * US, 300 * US));
}

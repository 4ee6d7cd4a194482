//! A small hand-built Kineto trace exported to Perfetto and read back by the
//! real trace processor row by row: (track, name, ts, dur, depth), flows,
//! counters and args. It holds the cases that decode fine yet load wrong
//! when the exporter gets them wrong:
//! - two kernels on one stream that overlap without nesting (`k_a`, `k_b`):
//!   on one track the trace processor would silently nest them, so `k_b`
//!   must go to a second lane;
//! - equal timestamps: an END and a BEGIN at one time on one track
//!   (`k_a` ends as `k_zero` starts; the memcpy ends as `k_c` starts), a
//!   parent and child starting together (`ProfilerStep#1` / `aten::mm`,
//!   `aten::copy_` / `cudaMemcpyAsync`);
//! - a zero-length kernel (`k_zero`).
//!
//! Expected rows are worked out by hand from the events below (times in
//! µs in the JSON, ns in the trace processor).

mod common;
use common::*;
use serde_json::{json, Value};

const FIXTURE: &str = r#"{"schemaVersion": 1,
 "deviceProperties": [{"id": 0, "name": "Test GPU", "totalGlobalMem": 85899345920, "computeMajor": 9, "computeMinor": 0, "numSms": 132}],
 "traceEvents": [
  {"ph": "M", "name": "thread_name", "pid": 10, "tid": 11, "args": {"name": "main"}},
  {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 10, "tid": 11, "ts": 1000.000, "dur": 100.000, "args": {"External id": 1}},
  {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 10, "tid": 11, "ts": 1000.000, "dur": 40.000, "args": {"External id": 2, "Input Dims": [[4, 4], [4, 4]]}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 10, "tid": 11, "ts": 1010.000, "dur": 10.000, "args": {"correlation": 100, "External id": 2}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 10, "tid": 11, "ts": 1025.000, "dur": 10.000, "args": {"correlation": 101, "External id": 2}},
  {"ph": "X", "cat": "cpu_op", "name": "aten::copy_", "pid": 10, "tid": 11, "ts": 1040.000, "dur": 10.000, "args": {"External id": 3}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaMemcpyAsync", "pid": 10, "tid": 11, "ts": 1040.000, "dur": 5.000, "args": {"correlation": 102, "External id": 3}},
  {"ph": "X", "cat": "kernel", "name": "k_a", "pid": 0, "tid": 7, "ts": 1030.000, "dur": 20.000, "args": {"device": 0, "stream": 7, "correlation": 100, "External id": 2, "grid": [1, 2, 3], "block": [128, 1, 1]}},
  {"ph": "X", "cat": "kernel", "name": "k_b", "pid": 0, "tid": 7, "ts": 1040.000, "dur": 20.000, "args": {"device": 0, "stream": 7, "correlation": 101, "External id": 2, "grid": [4, 1, 1], "block": [64, 1, 1]}},
  {"ph": "X", "cat": "kernel", "name": "k_zero", "pid": 0, "tid": 7, "ts": 1050.000, "dur": 0.000, "args": {"device": 0, "stream": 7, "correlation": 0}},
  {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD (Pageable -> Device)", "pid": 0, "tid": 7, "ts": 1060.000, "dur": 10.000, "args": {"device": 0, "stream": 7, "correlation": 102, "External id": 3, "bytes": 4096, "memory bandwidth (GB/s)": 0.4096}},
  {"ph": "X", "cat": "kernel", "name": "k_c", "pid": 0, "tid": 7, "ts": 1070.000, "dur": 10.000, "args": {"device": 0, "stream": 7, "correlation": 0}},
  {"ph": "s", "id": 100, "pid": 10, "tid": 11, "ts": 1010.000, "cat": "ac2g", "name": "ac2g"},
  {"ph": "f", "id": 100, "pid": 0, "tid": 7, "ts": 1030.000, "cat": "ac2g", "name": "ac2g", "bp": "e"}
 ]}"#;

const MEMCPY: &str = "Memcpy HtoD (Pageable -> Device)";

/// Exports the fixture (compressed, or plain with `--no-compress`) and runs
/// `queries` on the result.
fn export_and_query_with(dir: &TempDir, plain: bool, queries: &[&str]) -> (Value, Vec<Vec<Value>>) {
    let src = dir.file("fixture.json", FIXTURE.as_bytes());
    let out = dir.path().join("fixture.pftrace");
    let stats = dir.path().join("stats.json");
    let (s, o, st) = (src.as_os_str(), out.as_os_str(), stats.as_os_str());
    let mut args: Vec<&std::ffi::OsStr> = vec![
        "export".as_ref(),
        s,
        "-q".as_ref(),
        "-o".as_ref(),
        o,
        "--stats-json".as_ref(),
        st,
    ];
    if plain {
        args.push("--no-compress".as_ref());
    }
    gapscope(args).expect_code(0);
    let wrote = serde_json::from_slice(&std::fs::read(&stats).unwrap()).unwrap();
    (wrote, perfetto_query(&out, queries))
}

fn export_and_query(dir: &TempDir, queries: &[&str]) -> (Value, Vec<Vec<Value>>) {
    export_and_query_with(dir, false, queries)
}

/// (track, name, ts, dur, depth) of every slice but the findings' (the
/// detectors' output, checked in export_findings.rs). Thread tracks have no
/// name of their own: they are named after their thread.
const ROWS: &str = "select coalesce(thread.name, track.name) as track, s.name, s.ts, s.dur, s.depth \
     from slice s join track on s.track_id = track.id \
     left join thread_track tt on tt.id = s.track_id left join thread using(utid) \
     where coalesce(track.name, '') != 'Findings' \
     order by track, s.ts, s.depth";

fn row(track: &str, name: &str, ts_us: i64, dur_us: i64, depth: i64) -> Value {
    json!({"track": track, "name": name, "ts": ts_us * 1000, "dur": dur_us * 1000, "depth": depth})
}

/// The same rows from the compressed (default) and the plain file.
#[test]
fn fixture_slices_row_by_row() {
    for plain in [false, true] {
        fixture_rows(plain);
    }
}

fn fixture_rows(plain: bool) {
    let dir = TempDir::new(&format!("export-fixture-rows-{plain}"));
    let (wrote, r) = export_and_query_with(
        &dir,
        plain,
        &[
            ROWS,
            "select count(*) as n from stats where value > 0 and severity in ('error', 'data_loss')",
            "select count(*) as n from slice s join track t on s.track_id = t.id where t.name = 'Findings'",
        ],
    );
    let want = vec![
        // Idle gaps of GPU 0 inside step #1 (1000..1100 µs); busy is
        // 1030..1080. Causes: the CPU inside aten::mm before its first
        // launch, the launch delay of k_a, and the CPU after the last op.
        row("GPU idle", "cpu_op", 1000, 10, 0),
        row("GPU idle", "launch_overhead", 1010, 20, 0),
        row("GPU idle", "framework_overhead", 1080, 20, 0),
        // Equal starts nest outer first.
        row("main", "ProfilerStep#1", 1000, 100, 0),
        row("main", "aten::mm", 1000, 40, 1),
        row("main", "cudaLaunchKernel", 1010, 10, 2),
        row("main", "cudaLaunchKernel", 1025, 10, 2),
        row("main", "aten::copy_", 1040, 10, 1),
        row("main", "cudaMemcpyAsync", 1040, 5, 2),
        // k_a ends as k_zero starts and the memcpy ends as k_c starts: all
        // siblings at depth 0, none stretched.
        row("stream 7", "k_a", 1030, 20, 0),
        row("stream 7", "k_zero", 1050, 0, 0),
        row("stream 7", MEMCPY, 1060, 10, 0),
        row("stream 7", "k_c", 1070, 10, 0),
        // k_b overlaps k_a without nesting: its own lane.
        row("stream 7 (2)", "k_b", 1040, 20, 0),
    ];
    assert_eq!(r[0], want, "plain {plain}, rows:\n{:#?}", r[0]);
    // One chunk per packet sequence: the trace's tracks, then the analysis'.
    assert_eq!(wrote["compressed_chunks"], json!(if plain { 0 } else { 2 }));
    // The exporter's own count also holds the findings' slices.
    let findings = r[2][0]["n"].as_u64().unwrap();
    assert!(findings > 0, "the fixture's idle gaps give findings");
    assert_eq!(wrote["slices"], json!(want.len() as u64 + findings));
    assert_eq!(r[1][0]["n"], json!(0), "error stats");
}

#[test]
fn fixture_flows_counters_and_args() {
    let dir = TempDir::new("export-fixture-more");
    let (wrote, r) = export_and_query(
        &dir,
        &[
            "select so.name as src, so.ts as src_ts, si.name as dst from flow f \
             join slice so on f.slice_out = so.id join slice si on f.slice_in = si.id order by so.ts",
            "select t.name, c.ts, c.value from counter c join counter_track t on c.track_id = t.id order by t.name, c.ts",
            "select s.name, a.key, a.display_value as v from slice s join args a using(arg_set_id) \
             where a.key like 'debug.%' and s.name in ('k_a', 'Memcpy HtoD (Pageable -> Device)', 'launch_overhead') \
             order by s.name, a.key",
        ],
    );
    // One flow per launch call to its GPU work; k_zero and k_c have no
    // correlation, so none.
    assert_eq!(
        r[0],
        vec![
            json!({"src": "cudaLaunchKernel", "src_ts": 1_010_000, "dst": "k_a"}),
            json!({"src": "cudaLaunchKernel", "src_ts": 1_025_000, "dst": "k_b"}),
            json!({"src": "cudaMemcpyAsync", "src_ts": 1_040_000, "dst": MEMCPY}),
        ]
    );
    assert_eq!(wrote["flows"], json!(3));
    let c = |name: &str, ts: i64, value: f64| (name.to_string(), ts, value);
    let got: Vec<(String, i64, f64)> = r[1]
        .iter()
        .map(|v| {
            (
                v["name"].as_str().unwrap().to_string(),
                v["ts"].as_i64().unwrap(),
                v["value"].as_f64().unwrap(),
            )
        })
        .collect();
    let util = "GPU 0 utilization (1 ms bins)";
    let queue = "GPU 0 launch queue";
    assert_eq!(
        got,
        vec![
            // Launched, not yet started: k_a 1010..1030, k_b 1025..1040, the
            // memcpy 1040..1060 (k_b leaves as the memcpy joins: no change).
            c(queue, 1_010_000, 1.0),
            c(queue, 1_025_000, 2.0),
            c(queue, 1_030_000, 1.0),
            c(queue, 1_060_000, 0.0),
            // Busy 1030..1080 µs = 50 µs of the 1 ms bin from 1 ms: 5%.
            c(util, 1_000_000, 5.0),
            c(util, 2_000_000, 0.0),
        ]
    );
    let a = |name: &str, key: &str, v: &str| json!({"name": name, "key": format!("debug.{key}"), "v": v});
    assert_eq!(
        r[2],
        vec![
            a(MEMCPY, "bandwidth_gbps", "0.4096"),
            a(MEMCPY, "bytes", "4096"),
            a(MEMCPY, "copy_kind", "HtoD"),
            a(MEMCPY, "correlation_id", "102"),
            a(MEMCPY, "dst_mem", "device"),
            a(MEMCPY, "external_id", "3"),
            a(MEMCPY, "op", "aten::copy_"),
            a(MEMCPY, "src_mem", "pageable"),
            a("k_a", "block", "[128, 1, 1]"),
            a("k_a", "correlation_id", "100"),
            a("k_a", "external_id", "2"),
            a("k_a", "grid", "[1, 2, 3]"),
            a("k_a", "op", "aten::mm"),
            a("k_a", "shapes", "[[4, 4], [4, 4]]"),
            a("launch_overhead", "op", "aten::mm"),
        ]
    );
}

#[test]
fn bad_input_is_one_line_and_leaves_no_output() {
    let dir = TempDir::new("export-bad");
    let bad = dir.file("bad.json", b"{\"traceEvents\": [");
    let out = dir.path().join("bad.pftrace");
    for args in [
        vec![bad.as_os_str(), "-o".as_ref(), out.as_os_str()],
        vec![
            dir.path().join("missing.json").into_os_string().leak(),
            "-o".as_ref(),
            out.as_os_str(),
        ],
    ] {
        let mut a: Vec<&std::ffi::OsStr> = vec!["export".as_ref()];
        a.extend(args);
        let r = gapscope(a).expect_code(2);
        assert_eq!(r.stderr.lines().count(), 1, "{}", r.stderr);
        assert!(r.stderr.starts_with("gapscope: "), "{}", r.stderr);
        assert!(!r.stderr.contains("panicked"), "{}", r.stderr);
        assert!(!out.exists(), "no output file on failure");
    }
    // An output folder that does not exist.
    let good = dir.file("good.json", FIXTURE.as_bytes());
    let nowhere = dir.path().join("no/such/dir/out.pftrace");
    let r = gapscope([
        "export".as_ref(),
        good.as_os_str(),
        "-o".as_ref(),
        nowhere.as_os_str(),
    ])
    .expect_code(2);
    assert_eq!(r.stderr.lines().count(), 1, "{}", r.stderr);
    assert!(r.stderr.contains("no/such/dir"), "names the path: {}", r.stderr);
}

/// A stray kernel as far off as ns go: the utilization counter (1 ms bins)
/// jumps over the idle stretch instead of walking 10^13 bins, so the export
/// ends at once and the trace processor loads what it wrote. The binary
/// runs under a deadline: before the fix it never ended.
#[test]
fn a_far_off_kernel_exports_at_once() {
    let dir = TempDir::new("export-far");
    let trace = dir.file(
        "far.json",
        br#"{"traceEvents": [
  {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1, "dur": 5, "args": {"device": 0, "stream": 7, "correlation": 1}},
  {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 9223372036854000, "dur": 1, "args": {"device": 0, "stream": 7, "correlation": 2}}
 ]}"#,
    );
    let out = dir.path().join("far.pftrace");
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_gapscope"))
        .args([
            "export".as_ref(),
            "--quiet".as_ref(),
            trace.as_os_str(),
            "-o".as_ref(),
            out.as_os_str(),
        ])
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("the gapscope binary runs");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait") {
            break s;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("export of a far-off kernel still running after 60 s");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    assert!(status.success(), "{status}");
    let rows = perfetto_query(
        &out,
        &[
            "select count(*) as n from slice",
            "select count(*) as n from counter",
        ],
    );
    assert_eq!(rows[0][0]["n"], 3, "two kernels and one idle gap");
    assert!(rows[1][0]["n"].as_i64().unwrap() >= 4, "{:?}", rows[1]);
}

//! Bad input: file-level problems are one-line errors naming the file; bad
//! events are skipped and counted; nothing panics.

use gapscope_collectors::kineto::{
    import_bytes, import_bytes_partial, import_file, ImportOptions, KinetoError, ReadLimits,
};
use gapscope_collectors::trace::TimeRange;
use std::io::Write;
use std::path::Path;

fn import(bytes: &[u8]) -> Result<gapscope_collectors::trace::Trace, KinetoError> {
    import_bytes(bytes, "t.json", &ImportOptions::default())
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(bytes).unwrap();
    e.finish().unwrap()
}

const GOOD: &str = r#"{"traceEvents": [
  {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 10.5, "dur": 5, "args": {"External id": 3}},
  {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 12, "dur": 2, "args": {"device": 0, "stream": 7, "correlation": 9}}
], "displayTimeUnit": "ms"}"#;

#[test]
fn a_good_trace_imports_from_plain_and_gzip_bytes() {
    for bytes in [GOOD.as_bytes().to_vec(), gzip(GOOD.as_bytes())] {
        let t = import(&bytes).unwrap();
        assert_eq!((t.cpu_ops.len(), t.gpu.len()), (1, 1));
        assert_eq!(t.meta.origin_ns, 10_500);
        assert_eq!(t.gpu.start[0], 1_500);
        assert_eq!(t.meta.source, "t.json");
        assert_eq!(t.diagnostics.total(), 0);
    }
}

#[test]
fn file_level_problems_are_errors_of_the_right_kind() {
    let truncated = &GOOD.as_bytes()[..150];
    type Case = (&'static str, Vec<u8>, fn(&KinetoError) -> bool);
    let cases: Vec<Case> = vec![
        ("empty", b"".to_vec(), |e| matches!(e, KinetoError::Empty { .. })),
        ("blank", b"  \n ".to_vec(), |e| {
            matches!(e, KinetoError::Empty { .. })
        }),
        ("text", b"hello".to_vec(), |e| {
            matches!(e, KinetoError::NotJson { .. })
        }),
        ("html", b"<html></html>".to_vec(), |e| {
            matches!(e, KinetoError::NotJson { .. })
        }),
        ("bad key", b"{traceEvents: []}".to_vec(), |e| {
            matches!(e, KinetoError::NotJson { .. })
        }),
        ("no events", br#"{"schemaVersion": 1}"#.to_vec(), |e| {
            matches!(e, KinetoError::NotATrace { .. })
        }),
        ("empty object", b"{}".to_vec(), |e| {
            matches!(e, KinetoError::NotATrace { .. })
        }),
        ("events not array", br#"{"traceEvents": {}}"#.to_vec(), |e| {
            matches!(e, KinetoError::NotATrace { .. })
        }),
        ("truncated", truncated.to_vec(), |e| {
            matches!(e, KinetoError::Truncated { offset: 150, .. })
        }),
        ("truncated gz payload", gzip(truncated), |e| {
            matches!(e, KinetoError::Truncated { .. })
        }),
        (
            "cut after events",
            GOOD.as_bytes()[..GOOD.len() - 25].to_vec(),
            |e| matches!(e, KinetoError::Truncated { .. }),
        ),
        ("bad gzip", vec![0x1f, 0x8b, 8, 0, 1, 2, 3, 4, 5, 6, 7, 8], |e| {
            matches!(e, KinetoError::Gzip { .. })
        }),
        ("cut gzip", gzip(GOOD.as_bytes())[..40].to_vec(), |e| {
            matches!(e, KinetoError::Gzip { .. })
        }),
        (
            "deep",
            format!(r#"{{"traceEvents": [{}"#, "[".repeat(10_000)).into_bytes(),
            |e| matches!(e, KinetoError::TooDeep { .. }),
        ),
        (
            "deep header",
            format!(r#"{{"x": {}"#, "[".repeat(10_000)).into_bytes(),
            |e| matches!(e, KinetoError::TooDeep { .. }),
        ),
        (
            "syntax",
            GOOD.replace(r#""dur": 2,"#, r#""dur": 2 "#).into_bytes(),
            |e| matches!(e, KinetoError::Syntax { event: 1, .. }),
        ),
    ];
    for (what, bytes, ok) in cases {
        let e = import(&bytes).map(|_| ()).expect_err(what);
        assert!(ok(&e), "{what}: {e:?}");
        let msg = e.to_string();
        assert!(msg.starts_with("t.json: "), "{what}: {msg}");
        assert!(!msg.contains('\n'), "{what}: {msg}");
    }
}

/// Found by the `kineto_window` fuzzer: with two `traceEvents` arrays the
/// whole import kept the second while a time window without a start had
/// dropped rows measured from the first array's first event (no rows at
/// all instead of two). Every reading, windowed or not, plain or gzip,
/// refuses the file the same way.
#[test]
fn two_event_arrays_are_refused_with_or_without_a_time_window() {
    let early = r#"{"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 1, "ts": 1000, "dur": 5}"#;
    let late = r#"{"ph": "X", "cat": "cpu_op", "name": "b", "pid": 1, "tid": 1, "ts": 90000000, "dur": 5}"#;
    let doc = format!(r#"{{"traceEvents": [{early}], "schemaVersion": 1, "traceEvents": [{late}]}}"#);
    let windows = [
        None,
        Some(TimeRange {
            start_ns: None,
            end_ns: Some(50_000_000),
        }),
        Some(TimeRange {
            start_ns: Some(0),
            end_ns: Some(50_000_000),
        }),
        Some(TimeRange {
            start_ns: Some(1_000),
            end_ns: None,
        }),
    ];
    for bytes in [doc.as_bytes().to_vec(), gzip(doc.as_bytes())] {
        for window in windows {
            let limits = ReadLimits {
                time_window: window,
                ..ReadLimits::default()
            };
            let what = format!("window {window:?}, gzip {}", bytes[0] == 0x1f);
            let e = import_bytes_partial(&bytes, "t.json", &ImportOptions::default(), &limits)
                .map(|i| i.trace.cpu_ops.len())
                .expect_err(&what);
            assert!(matches!(e, KinetoError::NotATrace { .. }), "{what}: {e:?}");
            assert!(e.to_string().contains("\"traceEvents\" twice"), "{what}: {e}");
        }
    }
    // One array stays a trace.
    let one = format!(r#"{{"traceEvents": [{early}, {late}], "schemaVersion": 1}}"#);
    assert_eq!(import(one.as_bytes()).unwrap().cpu_ops.len(), 2);
}

#[test]
fn missing_files_name_the_path() {
    let e = import_file(Path::new("/nonexistent/trace.json"), &ImportOptions::default()).unwrap_err();
    assert!(matches!(e, KinetoError::Io { .. }));
    assert!(
        e.to_string().starts_with("/nonexistent/trace.json: cannot read"),
        "{e}"
    );
}

#[test]
fn bad_events_are_skipped_and_counted_with_their_index() {
    let json = r#"{"traceEvents": [
      {"ph": "X", "cat": "cpu_op", "name": "no ts", "pid": 1, "tid": 1, "dur": 1},
      {"ph": "X", "cat": "cpu_op", "name": "neg", "pid": 1, "tid": 1, "ts": 1, "dur": -1},
      {"ph": "X", "cat": "cpu_op", "name": "bad ts", "pid": 1, "tid": 1, "ts": "soon", "dur": 1},
      {"ph": "Q", "name": "odd phase", "ts": 1},
      {"ph": "X", "cat": "cpu_op", "name": ["wrong type"], "pid": 1, "tid": 1, "ts": 1, "dur": 1},
      {"ph": "E", "pid": 1, "tid": 1, "ts": 5},
      {"ph": "B", "cat": "cpu_op", "name": "open", "pid": 1, "tid": 2, "ts": 5},
      {"ph": "B", "cat": "user_annotation", "name": "pair", "pid": 1, "tid": 1, "ts": 10},
      {"ph": "E", "pid": 1, "tid": 1, "ts": 30.25},
      {"ph": "X", "cat": "new_cat", "name": "kept", "pid": 1, "tid": 1, "ts": 1, "dur": 1},
      {"ph": "X", "cat": "cpu_op", "name": "ok", "pid": 1, "tid": 1, "ts": 1e1, "dur": 1}
    ]}"#;
    let t = import(json.as_bytes()).unwrap();
    let d = &t.diagnostics;
    for (reason, n) in [
        ("missing_timestamp", 1),
        ("negative_duration", 1),
        ("bad_timestamp", 1),
        ("unknown_phase", 1),
        ("wrong_type", 1),
        ("unmatched_end", 1),
        ("unmatched_begin", 1),
        ("unknown_category", 1),
    ] {
        assert_eq!(d.counts.get(reason), Some(&n), "{reason}: {d:?}");
    }
    assert!(
        d.examples
            .iter()
            .any(|e| e.starts_with("event #0: ") && e.contains("no ts")),
        "{d:?}"
    );
    assert!(
        d.examples
            .iter()
            .any(|e| e.starts_with("event #6: ") && e.contains("open")),
        "{d:?}"
    );
    // The B/E pair, the unknown category and "ok" are kept.
    let names: Vec<&str> = t.cpu_ops.name.iter().map(|&n| t.strings.get(n)).collect();
    assert_eq!(names.len(), 3, "{names:?}");
    let pair = names.iter().position(|&n| n == "pair").unwrap();
    assert_eq!(t.cpu_ops.end[pair] - t.cpu_ops.start[pair], 20_250);
}

#[test]
fn a_bare_event_array_is_accepted() {
    let t = import(br#"[{"ph": "i", "name": "mark", "pid": 1, "tid": 1, "ts": 3}]"#).unwrap();
    assert_eq!(t.markers.len(), 1);
}

/// Every prefix of a real trace, and a few mutations of it, import or fail
/// cleanly: never a panic.
#[test]
fn truncations_and_mutations_never_panic() {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/traces/hta/call_stack/backward_thread.json");
    let bytes = std::fs::read(path).unwrap();
    for cut in 0..bytes.len() {
        let _ = import(&bytes[..cut]);
    }
    let mut x: u32 = 12345;
    for _ in 0..3000 {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        let mut m = bytes.clone();
        let at = x as usize % m.len();
        m[at] = b"{}[]\",:0-.e \\x"[(x >> 20) as usize % 14];
        let _ = import(&m);
    }
}

//! Hostile inputs, table-driven: each file with the exit status and the
//! message `gapscope analyze` must give. Never a panic, a hang (every run has
//! a deadline) or a silent wrong number (per-event defects are warned about,
//! numbers that survive are checked against a clean run).

mod common;
use common::*;
use std::io::{Read, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// What a run must show.
#[derive(Clone, Copy, Debug)]
enum Want {
    /// Exit 2, one stderr line containing this.
    Error(&'static str),
    /// Exit 0, one warning line containing this.
    Warning(&'static str),
    /// Exit 0, nothing on stderr.
    Clean,
}

struct Out {
    code: i32,
    stdout: String,
    stderr: String,
}

/// Runs `gapscope analyze --format json FILE`, killed after `deadline`.
fn analyze(path: &Path, deadline: Duration) -> Out {
    let mut child = Command::new(env!("CARGO_BIN_EXE_gapscope"))
        .args(["analyze", "--format", "json"])
        .arg(path)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the gapscope binary runs");
    let (mut out, mut err) = (child.stdout.take().unwrap(), child.stderr.take().unwrap());
    let reader = std::thread::spawn(move || {
        let mut s = Vec::new();
        out.read_to_end(&mut s).unwrap();
        s
    });
    let err_reader = std::thread::spawn(move || {
        let mut s = Vec::new();
        err.read_to_end(&mut s).unwrap();
        s
    });
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if start.elapsed() > deadline {
            let _ = child.kill();
            panic!("{}: still running after {deadline:?} (a hang?)", path.display());
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    Out {
        code: status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&reader.join().unwrap()).into_owned(),
        stderr: String::from_utf8_lossy(&err_reader.join().unwrap()).into_owned(),
    }
}

fn check(name: &str, path: &Path, want: Want) -> Out {
    let r = analyze(path, Duration::from_secs(60));
    let ctx = format!(
        "{name}: exit {}\n--- stderr\n{}\n--- stdout (start)\n{}",
        r.code,
        r.stderr,
        r.stdout.chars().take(300).collect::<String>()
    );
    assert!(!r.stderr.contains("panicked"), "{ctx}");
    let lines: Vec<&str> = r.stderr.lines().collect();
    match want {
        Want::Error(msg) => {
            assert_eq!(r.code, 2, "{ctx}");
            assert_eq!(lines.len(), 1, "{ctx}");
            assert!(lines[0].starts_with("gapscope: "), "{ctx}");
            assert!(lines[0].contains(&path.display().to_string()), "{ctx}");
            assert!(lines[0].contains(msg), "want {msg:?}: {ctx}");
            assert!(r.stdout.is_empty(), "{ctx}");
        }
        Want::Warning(msg) => {
            assert_eq!(r.code, 0, "{ctx}");
            assert_eq!(lines.len(), 1, "{ctx}");
            assert!(lines[0].starts_with("gapscope: warning: "), "{ctx}");
            assert!(lines[0].contains(msg), "want {msg:?}: {ctx}");
            assert_numbers_sane(&r, &ctx);
        }
        Want::Clean => {
            assert_eq!(r.code, 0, "{ctx}");
            assert!(r.stderr.is_empty(), "{ctx}");
            assert_numbers_sane(&r, &ctx);
        }
    }
    r
}

/// Every device's breakdown adds up and no duration is negative.
fn assert_numbers_sane(r: &Out, ctx: &str) {
    let j: serde_json::Value = serde_json::from_str(&r.stdout).unwrap_or_else(|e| panic!("{e}: {ctx}"));
    for d in j["devices"].as_array().unwrap() {
        assert_breakdown_adds_up(&d["breakdown"]);
        for (k, v) in d["breakdown"].as_object().unwrap() {
            if let Some(n) = v.as_i64() {
                assert!(n >= 0, "{k} = {n}: {ctx}");
            }
        }
    }
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(bytes).unwrap();
    e.finish().unwrap()
}

fn kernel(name: &str, ts: &str, dur: &str, corr: &str) -> String {
    format!(
        r#"{{"ph": "X", "cat": "kernel", "name": "{name}", "pid": 0, "tid": 7, "ts": {ts}, "dur": {dur}, "args": {{"device": 0, "stream": 7, "correlation": {corr}}}}}"#
    )
}

fn launch(ts: &str, corr: &str) -> String {
    format!(
        r#"{{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": {ts}, "dur": 5, "args": {{"correlation": {corr}}}}}"#
    )
}

fn step(n: u32, ts: u32, dur: u32) -> String {
    format!(
        r#"{{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#{n}", "pid": 1, "tid": 1, "ts": {ts}, "dur": {dur}}}"#
    )
}

/// A small well-formed trace, with header keys before and after the events.
fn events_trace(events: &[String]) -> String {
    format!(
        "{{\"schemaVersion\": 1, \"deviceProperties\": [{{\"id\": 0, \"name\": \"GPU\", \"numSms\": 132}}],\n\"traceEvents\": [\n{}\n],\n\"traceName\": \"t\", \"displayTimeUnit\": \"ms\"}}",
        events.join(",\n")
    )
}

/// Two steps, each with launches and kernels.
fn good_events() -> Vec<String> {
    vec![
        step(1, 100, 400),
        launch("110", "1"),
        kernel("k1", "130", "50", "1"),
        launch("200", "2"),
        kernel("k2", "220", "60", "2"),
        step(2, 500, 400),
        launch("510", "3"),
        kernel("k3", "530", "100", "3"),
    ]
}

#[test]
fn hostile_files_give_their_message_and_status() {
    let dir = TempDir::new("hostile");
    let good = events_trace(&good_events());
    let good_gz = gzip(good.as_bytes());
    let mut bad_crc = good_gz.clone();
    let crc = bad_crc.len() - 8;
    bad_crc[crc] ^= 0xff;
    let mut bad_isize = good_gz.clone();
    let isz = bad_isize.len() - 4;
    bad_isize[isz] ^= 0xff;
    let with = |extra: &[String]| {
        let mut e = good_events();
        e.extend_from_slice(extra);
        events_trace(&e).into_bytes()
    };
    let deep = |n: usize| {
        let mut s = String::from(r#"{"traceEvents": [{"ph": "X", "args": "#);
        s.push_str(&"[".repeat(n));
        s.push_str(&"]".repeat(n));
        s.push_str("}]}");
        s.into_bytes()
    };
    let mut non_utf8 = with(&[kernel("k\u{1}", "700", "10", "9")]);
    let at = non_utf8.iter().position(|&b| b == 1).unwrap();
    non_utf8[at] = 0xff;
    let huge_name = "x".repeat(20 << 20);
    let cases: Vec<(&str, Vec<u8>, Want)> = vec![
        ("empty.json", vec![], Want::Error("the file is empty")),
        ("blank.json", b" \n\t ".to_vec(), Want::Error("the file is empty")),
        ("gz-bad-crc.json.gz", bad_crc, Want::Error("corrupt gzip data")),
        ("gz-bad-size.json.gz", bad_isize, Want::Error("corrupt gzip data")),
        (
            "gz-header-only.json.gz",
            good_gz[..10].to_vec(),
            Want::Error("corrupt gzip data"),
        ),
        (
            "gz-of-nothing.json.gz",
            gzip(b""),
            Want::Error("the file is empty"),
        ),
        ("text.json", b"hello, world".to_vec(), Want::Error("not JSON")),
        ("nul.json", vec![0; 1000], Want::Error("not JSON")),
        ("null.json", b"null".to_vec(), Want::Error("not JSON")),
        ("number.json", b"42".to_vec(), Want::Error("not JSON")),
        (
            "object.json",
            br#"{"a": 1}"#.to_vec(),
            Want::Error("JSON but not a trace"),
        ),
        (
            "empty-object.json",
            b"{}".to_vec(),
            Want::Error("JSON but not a trace"),
        ),
        (
            "events-object.json",
            br#"{"traceEvents": {}}"#.to_vec(),
            Want::Error("JSON but not a trace"),
        ),
        (
            "two-event-arrays.json",
            format!("{}, \"traceEvents\": []}}", good.trim_end().trim_end_matches('}')).into_bytes(),
            Want::Error("\"traceEvents\" twice"),
        ),
        (
            "numbers.json",
            b"[1, 2, 3]".to_vec(),
            Want::Error("JSON but not a trace"),
        ),
        (
            "trailing-garbage.json",
            format!("{good}xyz").into_bytes(),
            Want::Error("not JSON"),
        ),
        (
            "syntax.json",
            good.replacen(", \"tid\"", " \"tid\"", 3).into_bytes(),
            Want::Error("invalid JSON at byte offset"),
        ),
        (
            "bare-nan.json",
            with(&[kernel("nan", "NaN", "10", "9")]),
            Want::Error("invalid JSON at byte offset"),
        ),
        (
            "deep-100k-args.json",
            deep(100_000),
            Want::Error("nested too deep"),
        ),
        (
            "deep-100k-top.json",
            "[".repeat(100_000).into_bytes(),
            Want::Error("nested too deep"),
        ),
        (
            "deep-100k-header.json",
            [br#"{"x": "#.to_vec(), "[".repeat(100_000).into_bytes()].concat(),
            Want::Error("nested too deep"),
        ),
        (
            "empty-events.json",
            br#"{"traceEvents": []}"#.to_vec(),
            Want::Clean,
        ),
        ("clean.json", good.clone().into_bytes(), Want::Clean),
        // A window as long as ns go (one stray far-off kernel): the
        // counters' bins must not overflow.
        (
            "far-off-kernel.json",
            events_trace(&[
                kernel("k", "1", "5", "1"),
                kernel("k", "9223372036854000", "1", "2"),
            ])
            .into_bytes(),
            Want::Clean,
        ),
        ("clean.json.gz", good_gz.clone(), Want::Clean),
        (
            "bom.json",
            [b"\xef\xbb\xbf".to_vec(), good.clone().into_bytes()].concat(),
            Want::Clean,
        ),
        // Per-event defects: skipped, counted, one warning, exit 0.
        (
            "wrong-types.json",
            with(&[
                r#"{"ph": "X", "cat": "kernel", "name": 5, "ts": "x", "dur": [], "args": 3}"#.into(),
                "7".into(),
                "\"s\"".into(),
                "null".into(),
                "[]".into(),
            ]),
            Want::Warning("skipped 5 events"),
        ),
        (
            "string-nan.json",
            with(&[kernel("n", "\"NaN\"", "10", "9")]),
            Want::Warning("skipped 1 event"),
        ),
        (
            "negative-dur.json",
            with(&[kernel("n", "700", "-10", "9")]),
            Want::Warning("negative_duration: 1"),
        ),
        (
            "huge-ts.json",
            with(&[kernel("n", "1e300", "10", "9")]),
            Want::Warning("bad_timestamp: 1"),
        ),
        (
            "huge-ts-int.json",
            with(&[kernel("n", "99999999999999999999999", "10", "9")]),
            Want::Warning("bad_timestamp: 1"),
        ),
        (
            "overflow-end.json",
            with(&[kernel("n", "9000000000000000", "9000000000000000", "9")]),
            Want::Warning("skipped 1 event"),
        ),
        (
            "huge-dur.json",
            with(&[kernel("n", "700", "1e300", "9")]),
            Want::Warning("bad_duration: 1"),
        ),
        (
            "missing-ts.json",
            with(&[r#"{"ph": "X", "cat": "kernel", "name": "k", "dur": 1}"#.into()]),
            Want::Warning("missing_timestamp: 1"),
        ),
        (
            "unknown-phase.json",
            with(&[r#"{"ph": "Q", "name": "k", "ts": 1}"#.into()]),
            Want::Warning("unknown_phase: 1"),
        ),
        // Odd but valid: analysed without complaint.
        (
            "negative-ts.json",
            with(&[launch("-50", "9"), kernel("n", "-40", "10", "9")]),
            Want::Clean,
        ),
        (
            "duplicate-correlation.json",
            with(&[launch("600", "3"), kernel("dup", "640", "10", "3")]),
            Want::Warning("2 GPU rows have a correlation id that several runtime calls share"),
        ),
        (
            "kernel-without-launch.json",
            with(&[kernel("orphan", "700", "10", "99")]),
            Want::Clean,
        ),
        (
            "launch-without-kernel.json",
            with(&[launch("700", "98")]),
            Want::Clean,
        ),
        (
            "huge-name.json",
            with(&[kernel(&huge_name, "700", "10", "9")]),
            Want::Clean,
        ),
        (
            "huge-header-string.json",
            format!("{{\"x\": \"{huge_name}\", {}", &good[1..]).into_bytes(),
            Want::Clean,
        ),
        (
            "escaped-names.json",
            with(&[kernel(r#"a\"b\\c\u00e9\ud83d\ude00"#, "700", "10", "9")]),
            Want::Clean,
        ),
        ("non-utf8-name.json", non_utf8, Want::Warning("bad_string: 1")),
        (
            "control-char-name.json",
            with(&[kernel("a\tb", "700", "10", "9")]),
            Want::Warning("bad_string: 1"),
        ),
        (
            "lone-surrogate-name.json",
            with(&[kernel(r"a\ud800b", "700", "10", "9")]),
            Want::Warning("bad_string: 1"),
        ),
        (
            "bad-escape-name.json",
            with(&[kernel(r"a\qb", "700", "10", "9")]),
            Want::Warning("bad_string: 1"),
        ),
        (
            "cut-in-header.json",
            good.as_bytes()[..30].to_vec(),
            Want::Error("truncated"),
        ),
        (
            "cut-in-events.json",
            good.as_bytes()[..good.len() / 2].to_vec(),
            Want::Warning("truncated"),
        ),
    ];
    for (name, bytes, want) in cases {
        let p = dir.file(name, &bytes);
        check(name, &p, want);
    }
}

#[test]
fn defects_leave_the_clean_numbers_alone() {
    // What survives a defect is the clean trace's analysis, exactly.
    let dir = TempDir::new("hostile-same");
    let clean = check(
        "clean",
        &dir.file("clean.json", events_trace(&good_events()).as_bytes()),
        Want::Clean,
    );
    let breakdown = |o: &Out| {
        let j: serde_json::Value = serde_json::from_str(&o.stdout).unwrap();
        (j["devices"].clone(), j["steps"].clone())
    };
    let mut defective = good_events();
    defective.insert(3, r#"{"ph": "X", "cat": "kernel", "name": 5}"#.into());
    defective.insert(5, kernel("neg", "300", "-1", "2"));
    defective.push(kernel("bad", "1e300", "1", "3"));
    let d = check(
        "defects",
        &dir.file("defects.json", events_trace(&defective).as_bytes()),
        Want::Warning("skipped 3 events"),
    );
    assert_eq!(breakdown(&d), breakdown(&clean));

    // Unsorted events (reversed, shuffled) give the same analysis.
    let mut reversed = good_events();
    reversed.reverse();
    let r = check(
        "reversed",
        &dir.file("reversed.json", events_trace(&reversed).as_bytes()),
        Want::Clean,
    );
    assert_eq!(breakdown(&r), breakdown(&clean));
    let mut shuffled = good_events();
    shuffled.rotate_left(3);
    shuffled.swap(0, 4);
    let s = check(
        "shuffled",
        &dir.file("shuffled.json", events_trace(&shuffled).as_bytes()),
        Want::Clean,
    );
    assert_eq!(breakdown(&s), breakdown(&clean));
}

/// Cuts the small trace after every `}`, `]` and `,` (at top level and
/// inside events): before the first whole event it is an error, after it a
/// partial analysis whose warning gives the offset and the events read.
#[test]
fn truncated_at_every_structural_boundary() {
    let dir = TempDir::new("hostile-cut");
    let events = good_events();
    let text = events_trace(&events);
    let bytes = text.as_bytes();
    // Where each event ends in the file.
    let mut ends = Vec::new();
    let mut from = 0;
    for e in &events {
        let at = text[from..].find(e.as_str()).unwrap() + from;
        ends.push(at + e.len());
        from = at + e.len();
    }
    let events_close = text.rfind(']').unwrap() + 1;
    let mut cuts = 0;
    for (i, &b) in bytes.iter().enumerate() {
        if !matches!(b, b'}' | b']' | b',') || i + 1 == bytes.len() {
            continue;
        }
        let cut = i + 1;
        let read = ends.iter().filter(|&&e| e <= cut).count();
        let p = dir.file(&format!("cut-{cut}.json"), &bytes[..cut]);
        for (name, path) in [
            ("plain", p.clone()),
            (
                "gzip",
                dir.file(&format!("cut-{cut}.json.gz"), &gzip(&bytes[..cut])),
            ),
        ] {
            let what = format!("{name} cut at {cut} ({read} events whole)");
            if read == 0 {
                check(&what, &path, Want::Error("truncated"));
                continue;
            }
            let r = check(&what, &path, Want::Warning("truncated"));
            let line = r.stderr.lines().next().unwrap();
            assert!(
                line.contains(&format!("ends at byte offset {cut} ")),
                "{what}: {line}"
            );
            let events = if read == 1 {
                "1 event read".to_string()
            } else {
                format!("{read} events read")
            };
            assert!(line.contains(&events), "{what}: {line}");
            assert_eq!(
                line.contains("after the last event"),
                cut >= events_close,
                "{what}: {line}"
            );
        }
        cuts += 1;
    }
    assert!(cuts > 40, "{cuts} cuts");
    // And the gzip stream itself cut at every 7th byte: never a panic; a
    // cut before any whole event is an error, later ones analyse a prefix.
    let gz = gzip(bytes);
    for cut in (2..gz.len()).step_by(7) {
        let p = dir.file("gzcut.json.gz", &gz[..cut]);
        let r = analyze(&p, Duration::from_secs(30));
        assert!(matches!(r.code, 0 | 2), "gzip cut at {cut}: {}", r.stderr);
        assert_eq!(r.stderr.lines().count(), 1, "gzip cut at {cut}: {}", r.stderr);
        let want = if r.code == 0 {
            "the gzip data is cut short"
        } else {
            "corrupt gzip data"
        };
        assert!(r.stderr.contains(want), "gzip cut at {cut}: {}", r.stderr);
    }
}

/// A single-line trace of `mb` MB (one event after another, no newline).
fn single_line_trace(mb: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity((mb << 20) + 4096);
    out.extend_from_slice(b"{\"traceEvents\": [");
    let mut i: u64 = 0;
    while out.len() < mb << 20 {
        let ts = 1000 + i * 10;
        if i > 0 {
            out.push(b',');
        }
        if i % 2 == 0 {
            write!(out, "{}", launch(&ts.to_string(), &i.to_string())).unwrap();
        } else {
            write!(
                out,
                "{}",
                kernel("k", &(ts + 2).to_string(), "5", &(i - 1).to_string())
            )
            .unwrap();
        }
        i += 1;
    }
    out.extend_from_slice(b"]}");
    out
}

#[test]
fn a_single_line_trace_of_a_few_mb() {
    let dir = TempDir::new("hostile-line");
    let p = dir.file("line.json", &single_line_trace(8));
    check("8 MB on one line", &p, Want::Clean);
}

/// Runs `gapscope analyze --format json FILE` and gives its peak resident
/// memory (KiB, from `wait4`'s rusage: this child only).
#[cfg(target_os = "linux")]
#[allow(clippy::zombie_processes)] // reaped by wait4 below, for its rusage
fn analyze_peak(path: &Path, deadline: Duration) -> (Out, u64) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_gapscope"))
        .args(["analyze", "--format", "json"])
        .arg(path)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the gapscope binary runs");
    let (mut out, mut err) = (child.stdout.take().unwrap(), child.stderr.take().unwrap());
    let reader = std::thread::spawn(move || {
        let mut s = Vec::new();
        out.read_to_end(&mut s).unwrap();
        s
    });
    let err_reader = std::thread::spawn(move || {
        let mut s = Vec::new();
        err.read_to_end(&mut s).unwrap();
        s
    });
    let pid = child.id() as libc::pid_t;
    let start = Instant::now();
    let (status, rss_kib) = loop {
        let mut status = 0;
        // SAFETY: an all-zero rusage is a valid value of this plain C struct.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: `pid` is our own child, not yet reaped; both pointers are
        // to live locals.
        let r = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut usage) };
        if r == pid {
            break (status, usage.ru_maxrss as u64);
        }
        assert_eq!(r, 0, "wait4: {}", std::io::Error::last_os_error());
        if start.elapsed() > deadline {
            let _ = child.kill();
            panic!("{}: still running after {deadline:?} (a hang?)", path.display());
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let code = if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else {
        -1
    };
    let out = Out {
        code,
        stdout: String::from_utf8_lossy(&reader.join().unwrap()).into_owned(),
        stderr: String::from_utf8_lossy(&err_reader.join().unwrap()).into_owned(),
    };
    (out, rss_kib)
}

/// 1 MiB of `a`, the padding of the big lines below.
const PAD: usize = 1 << 20;

/// One line of JSON (no newline anywhere), built from pieces, written to
/// `path` as it is made: gzip members back to back when `gz` (as `cat a.gz
/// b.gz` makes; `gzip -d` and gapscope read them as one stream, and the
/// padding is compressed once and repeated, so 2 GiB of JSON is a 2 MB
/// file), else plain. Returns the JSON's length.
fn write_line(path: &Path, gz: bool, pieces: impl Iterator<Item = Piece>) -> u64 {
    let mut f = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    let pad_gz = gzip(&vec![b'a'; PAD]);
    let pad_plain = vec![b'a'; PAD];
    let mut len = 0u64;
    for piece in pieces {
        match piece {
            Piece::Text(t) => {
                len += t.len() as u64;
                f.write_all(&if gz { gzip(t.as_bytes()) } else { t.into_bytes() })
                    .unwrap();
            }
            Piece::Pad => {
                len += PAD as u64;
                f.write_all(if gz { &pad_gz } else { &pad_plain }).unwrap();
            }
        }
    }
    f.flush().unwrap();
    len
}

enum Piece {
    Text(String),
    Pad,
}

/// `n` kernels in one ProfilerStep, each launched by a runtime call and
/// carrying 1 MiB of an argument gapscope does not use: a trace of `n` MiB
/// whose rows are few. Kernel `i` runs 5 µs from 1000 + 10 i µs
/// (correlation `i + 1`: 0 means none).
fn padded_kernels(n: usize) -> impl Iterator<Item = Piece> {
    let head = format!(
        r#"{{"traceEvents": [{{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 990, "dur": {}}}"#,
        10 * n + 20
    );
    std::iter::once(Piece::Text(head))
        .chain((0..n).flat_map(|i| {
            let (ts, c) = (1000 + 10 * i, i + 1);
            let kernel = format!(
                r#", {}, {{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": {ts}, "dur": 5, "args": {{"device": 0, "stream": 7, "correlation": {c}, "note": ""#,
                launch(&(ts - 4).to_string(), &c.to_string())
            );
            [Piece::Text(kernel), Piece::Pad, Piece::Text("\"}}".into())]
        }))
        .chain(std::iter::once(Piece::Text("]}".into())))
}

/// The 2 GB single line the issue asks about: 2048 events of 1 MiB each on
/// one line, as `.json.gz` and as plain `.json`. Both stream through: peak
/// memory stays a small fraction of the line (the gzip data is inflated a
/// buffer at a time; the plain file's mapped pages are given back as the
/// parse moves on), and the analysis is exact.
#[cfg(target_os = "linux")]
#[test]
fn a_2_gb_single_line_streams_in_bounded_memory() {
    let dir = TempDir::new("hostile-2gb");
    let n = 2048;
    for name in ["line.json.gz", "line.json"] {
        let p = dir.path().join(name);
        let len = write_line(&p, name.ends_with(".gz"), padded_kernels(n));
        assert!(len > 2 << 30, "{len} bytes of JSON");
        let (r, rss_kib) = analyze_peak(&p, Duration::from_secs(300));
        assert_eq!((r.code, r.stderr.as_str()), (0, ""), "{name}");
        let j: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
        let b = &j["devices"][0]["breakdown"];
        assert_eq!(b["compute_ns"], 5_000 * n as i64, "{name}");
        assert_eq!(b["window_ns"], (10 * n as i64 + 20) * 1_000, "{name}");
        assert_eq!(j["diagnostics"]["rows"]["gpu"], n, "{name}");
        assert_eq!(j["devices"][0]["launch_stats"]["count"], n, "{name}");
        let rss_mib = rss_kib >> 10;
        eprintln!("{name}: {len} bytes of JSON on one line, peak RSS {rss_mib} MiB");
        assert!(rss_mib < 400, "{name}: peak RSS {rss_mib} MiB for a 2 GiB line");
        std::fs::remove_file(&p).unwrap();
    }
}

/// A 2 GiB line that is one event (a 2 GiB name): refused once it passes
/// the longest event the importer reads, in bounded memory.
#[cfg(target_os = "linux")]
#[test]
fn a_2_gb_single_event_is_refused_in_bounded_memory() {
    let dir = TempDir::new("hostile-2gb-event");
    let p = dir.path().join("event.json.gz");
    let head =
        r#"{"traceEvents": [{"ph": "X", "cat": "kernel", "pid": 0, "tid": 7, "ts": 1, "dur": 1, "name": ""#;
    let pieces = std::iter::once(Piece::Text(head.into()))
        .chain((0..2048).map(|_| Piece::Pad))
        .chain(std::iter::once(Piece::Text("\"}]}".into())));
    let len = write_line(&p, true, pieces);
    assert!(len > 2 << 30);
    let (r, rss_kib) = analyze_peak(&p, Duration::from_secs(300));
    let ctx = format!("exit {}, stderr {}", r.code, r.stderr);
    assert_eq!(r.code, 2, "{ctx}");
    assert_eq!(
        r.stderr,
        format!(
            "gapscope: {}: invalid JSON at byte offset 17 (in event #0): the event is over 256 MiB long, and \
             no profiler writes events that big; the file is damaged, record or copy the trace again\n",
            p.display()
        )
    );
    let rss_mib = rss_kib >> 10;
    eprintln!("a 2 GiB event: refused, peak RSS {rss_mib} MiB");
    assert!(rss_mib < 1024, "peak RSS {rss_mib} MiB");
}

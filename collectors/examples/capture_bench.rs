//! Capture size and speed against the Kineto import, for
//! docs/capture-format.md: for each trace, the Kineto import time, the
//! capture's size and write time at zlib levels 1, 6 and 9, and the time to
//! read back the capture `capture::write` makes (level 6) (medians of
//! `--runs`, default 5).
//!
//! ```text
//! cargo run --release -p gapscope-collectors --example capture_bench -- [--runs N] TRACE.json[.gz]...
//! ```

use gapscope_collectors::capture;
use gapscope_collectors::kineto::{import_file, ImportOptions};
use std::time::Instant;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Median seconds of `runs` calls of `f`, and the last result.
fn time<T>(runs: usize, mut f: impl FnMut() -> T) -> (f64, T) {
    let mut times = Vec::new();
    let mut last = None;
    for _ in 0..runs {
        let t = Instant::now();
        last = Some(f());
        times.push(t.elapsed().as_secs_f64());
    }
    (median(times), last.unwrap())
}

fn main() {
    let mut args = std::env::args().skip(1).peekable();
    let mut runs = 5;
    if args.peek().map(String::as_str) == Some("--runs") {
        args.next();
        runs = args.next().and_then(|n| n.parse().ok()).expect("--runs N");
    }
    println!("file | rows | file bytes | gst bytes L1 / L6 / L9 | import s | write L1 / L6 / L9 s | read s");
    for path in args {
        let p = std::path::Path::new(&path);
        let (import_s, trace) = time(runs, || {
            import_file(p, &ImportOptions::default()).unwrap_or_else(|e| panic!("{e}"))
        });
        let rows = trace.gpu.len() + trace.runtime.len() + trace.cpu_ops.len() + trace.markers.len();
        let mut sizes = Vec::new();
        let mut writes = Vec::new();
        let mut default = Vec::new();
        for level in [1, 6, 9] {
            let (s, bytes) = time(runs, || {
                let mut out = Vec::new();
                capture::write_level(&trace, &mut out, level).unwrap();
                out
            });
            sizes.push(bytes.len());
            writes.push(s);
            if level == capture::DEFAULT_LEVEL {
                default = bytes;
            }
        }
        let (read_s, back) = time(runs, || capture::read_bytes(&default, "bench.gst").unwrap());
        assert_eq!(back.gpu.len(), trace.gpu.len());
        let file_bytes = std::fs::metadata(p).map(|m| m.len()).unwrap_or(0);
        println!(
            "{} | {rows} | {file_bytes} | {} / {} / {} | {import_s:.4} | {:.4} / {:.4} / {:.4} | {read_s:.4}",
            p.file_name().unwrap().to_string_lossy(),
            sizes[0],
            sizes[1],
            sizes[2],
            writes[0],
            writes[1],
            writes[2],
        );
    }
}

//! Perfetto export speed on a synthetic in-memory Trace of 1M slices.
//! Ignored by default (it is a measurement, not a check); run it in release:
//!
//! ```text
//! cargo test --release -p gapscope --test export_bench -- --ignored --nocapture
//! ```
//!
//! It times the default (compressed) output and plain packets;
//! `GAPSCOPE_BENCH_LEVELS=1,4,9` adds those libdeflate levels (1-12).
//!
//! Results are written down in bench/README.md, section "Perfetto export".

// The exporter lives in the binary crate; mount its module here to call it
// on a Trace built in memory, without a file import in the measurement.
#[allow(dead_code)]
#[path = "../src/export/mod.rs"]
mod export;

use export::perfetto;
use gapscope_analyzers::Session;
use gapscope_collectors::trace::{CpuOp, CpuOpKind, GpuActivity, RuntimeCall, Trace, TraceBuilder};
use std::time::Instant;

/// `iters` training-like iterations of 10 µs on one thread and one GPU:
///
/// ```text
/// main      [ProfilerStep#k ......................]
///              [aten::mm ..........]
///                 [cudaLaunchKernel]
/// stream 7                    [gemm ....]
/// stream 8                         [relu ....]
/// ```
///
/// Five slices and one flow per iteration; idle attribution adds three
/// gaps per iteration (before the launch, the launch delay, after the
/// kernels), so 125,000 iterations make 1,000,001 slices.
fn synthetic(iters: i64) -> Trace {
    let mut b = TraceBuilder::new();
    let t = b.thread(4242, 4242);
    b.set_thread_name(t, "main");
    let names: Vec<_> = (0..16).map(|k| b.intern(&format!("ProfilerStep#{k}"))).collect();
    let (mm, launch, gemm, relu) = (
        b.intern("aten::mm"),
        b.intern("cudaLaunchKernel"),
        b.intern("gemm_kernel"),
        b.intern("relu_kernel"),
    );
    let shapes = b.intern("[[512, 512], [512, 512]]");
    b.set_origin(1_700_000_000_000_000_000);
    for k in 0..iters {
        let t0 = 1_700_000_000_000_000_000 + k * 10_000;
        let corr = k as u64 + 1;
        b.push_cpu_op(CpuOp::new(
            t,
            t0,
            t0 + 10_000,
            names[(k % 16) as usize],
            CpuOpKind::ProfilerStep,
        ));
        let mut op = CpuOp::new(t, t0 + 1_000, t0 + 6_000, mm, CpuOpKind::Operator);
        op.shapes = shapes;
        op.external_id = corr;
        b.push_cpu_op(op);
        let mut call = RuntimeCall::new(t, t0 + 2_000, t0 + 4_000, launch, corr);
        call.external_id = corr;
        b.push_runtime(call);
        let mut g = GpuActivity::kernel(0, 7, t0 + 5_000, t0 + 8_000, gemm, corr);
        g.grid = [128, 1, 1];
        g.block = [256, 1, 1];
        b.push_gpu(g);
        b.push_gpu(GpuActivity::kernel(0, 8, t0 + 6_000, t0 + 9_000, relu, 0));
    }
    b.finish()
}

#[test]
#[ignore = "benchmark: run with --release -- --ignored --nocapture"]
fn encode_one_million_slices() {
    let t0 = Instant::now();
    let trace = synthetic(125_000);
    let build = t0.elapsed();

    let t1 = Instant::now();
    let session = Session::new(&trace, &Default::default());
    let gaps: usize = session.devices().iter().map(|d| d.segments.len()).sum();
    let attribute = t1.elapsed();

    println!(
        "trace build {:.3} s, idle attribution {:.3} s ({} gaps)",
        build.as_secs_f64(),
        attribute.as_secs_f64(),
        gaps
    );
    // The default (compressed at the default level) first: that is the
    // number the goal is about. Then plain packets and other libdeflate levels,
    // for what compression costs in time and saves in size.
    let default = perfetto::Options::default();
    let mut variants = vec![
        ("default", default.clone()),
        (
            "plain",
            perfetto::Options {
                compression: None,
                ..default.clone()
            },
        ),
    ];
    let levels = std::env::var("GAPSCOPE_BENCH_LEVELS").unwrap_or_default();
    for level in levels.split(',').filter(|l| !l.is_empty()) {
        let level: u32 = level
            .trim()
            .parse()
            .expect("GAPSCOPE_BENCH_LEVELS: comma-separated libdeflate levels");
        variants.push((
            "level",
            perfetto::Options {
                compression: Some(level),
                ..default.clone()
            },
        ));
    }
    let path = std::env::temp_dir().join(format!("gapscope-bench-{}.pftrace", std::process::id()));
    let mut first = None;
    for (what, opts) in &variants {
        let (mut times, mut cpu) = (Vec::new(), Vec::new());
        let mut counts = None;
        for _ in 0..3 {
            let file = std::fs::File::create(&path).unwrap();
            let out = std::io::BufWriter::with_capacity(1 << 20, file);
            let (t2, cpu0) = (Instant::now(), thread_cpu_s());
            let c = perfetto::write(&session, Vec::new, opts, out).unwrap();
            times.push(t2.elapsed().as_secs_f64());
            cpu.push(thread_cpu_s() - cpu0);
            counts = Some(c);
        }
        let c = counts.unwrap();
        let mut sink = Vec::with_capacity(c.bytes as usize);
        let t3 = Instant::now();
        let c_mem = perfetto::write(&session, Vec::new, opts, &mut sink).unwrap();
        let in_memory = t3.elapsed().as_secs_f64();
        times.sort_by(f64::total_cmp);
        cpu.sort_by(f64::total_cmp);
        println!(
            "{what} (libdeflate level {:?}): encode to file: median {:.3} s wall, {:.3} s CPU (wall runs {:?}); \
             to memory {:.3} s; {} bytes, {} before compression, {} chunks",
            opts.compression,
            times[1],
            cpu[1],
            times,
            in_memory,
            c.bytes,
            c.packet_bytes,
            c.compressed_chunks
        );
        assert_eq!(c, c_mem);
        assert_eq!(c.bytes, sink.len() as u64);
        // 5 slices per iteration, plus the idle gaps.
        assert_eq!(c.slices, 625_000 + gaps as u64);
        assert!(c.slices >= 1_000_000, "{c:?}");
        assert_eq!(c.flows, 125_000);
        // Every variant writes the same packets.
        let first = first.get_or_insert_with(|| c.clone());
        assert_eq!((c.packets, c.packet_bytes), (first.packets, first.packet_bytes));
    }
    let _ = std::fs::remove_file(&path);
}

/// CPU time of this thread so far, s (Linux: `/proc/thread-self/schedstat`,
/// ns on CPU). The encoder is single-threaded, so on a loaded machine this
/// is close to what the wall time would be on a quiet one; NaN elsewhere.
fn thread_cpu_s() -> f64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse::<u64>().ok())
        .map_or(f64::NAN, |ns| ns as f64 / 1e9)
}

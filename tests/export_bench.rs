//! Perfetto export speed on a synthetic in-memory Trace of 1M slices.
//! Ignored by default (it is a measurement, not a check); run it in release:
//!
//! ```text
//! cargo test --release -p gapscope --test export_bench -- --ignored --nocapture
//! ```
//!
//! Results are written down in bench/README.md, section "Perfetto export".

// The exporter lives in the binary crate; mount its module here to call it
// on a Trace built in memory, without a file import in the measurement.
#[allow(dead_code)]
#[path = "../src/export/mod.rs"]
mod export;

use export::perfetto;
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
    let gaps = export::idle::idle_gaps(&trace);
    let attribute = t1.elapsed();

    let path = std::env::temp_dir().join(format!("gapscope-bench-{}.pftrace", std::process::id()));
    let mut times = Vec::new();
    let mut counts = None;
    for _ in 0..3 {
        let file = std::fs::File::create(&path).unwrap();
        let out = std::io::BufWriter::with_capacity(1 << 20, file);
        let t2 = Instant::now();
        let c = perfetto::write(&trace, &gaps, &[], &perfetto::Options::default(), out).unwrap();
        times.push(t2.elapsed().as_secs_f64());
        counts = Some(c);
    }
    let c = counts.unwrap();
    let mut sink = Vec::with_capacity(c.bytes as usize);
    let t3 = Instant::now();
    let c_mem = perfetto::write(&trace, &gaps, &[], &perfetto::Options::default(), &mut sink).unwrap();
    let in_memory = t3.elapsed().as_secs_f64();
    let _ = std::fs::remove_file(&path);
    times.sort_by(f64::total_cmp);
    println!(
        "trace build {:.3} s, idle attribution {:.3} s ({} gaps)",
        build.as_secs_f64(),
        attribute.as_secs_f64(),
        gaps.len()
    );
    println!(
        "encode to file: median {:.3} s (runs {:?}); to memory {:.3} s",
        times[1], times, in_memory
    );
    println!("{c:?}");
    assert_eq!(c, c_mem);
    // 5 slices per iteration, plus the idle gaps.
    assert_eq!(c.slices, 625_000 + gaps.len() as u64);
    assert!(c.slices >= 1_000_000, "{c:?}");
    assert_eq!(c.flows, 125_000);
}

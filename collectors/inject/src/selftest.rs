//! `GAPSCOPE_INJECT_SELFTEST=1`: the injection's process plumbing with a
//! stand-in for CUPTI, so the parts that need no GPU are tested on machines
//! without one (collectors/inject/tests, tests/record_cli.rs).
//!
//! Everything but the recording is the real code: the entry point, the
//! environment, the exit and fork handling, the capture file and what
//! `gapscope record` does with it. In place of CUPTI it
//! - runs a background thread that, like the collector's worker, keeps
//!   taking the session lock (held for 40 ms at a time), so a `fork()` very
//!   likely lands while another thread holds it: a child whose exit path
//!   took that lock would hang, which the fork test would catch;
//! - at exit, yields a tiny trace of this process: one `cudaLaunchKernel`
//!   and the kernel it launched, one pageable 4 KiB host-to-device copy and
//!   its `cudaMemcpy` (GPU rows named `gapscope_selftest_*` so they can
//!   never be mistaken for a recording), all inside one `ProfilerStep#1`
//!   from the session's start to its stop, as a training script's step: so
//!   the stand-in captures of two ranks (`RANK`) run at once form one job.

use gapscope_collectors::trace::{
    CopyKind, CpuOp, CpuOpKind, GpuActivity, GpuKind, MemKind, RuntimeCall, Trace, TraceBuilder,
};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// How long the stand-in takes to stop, as CUPTI's final flush takes time:
/// so an exit bound of 0 s (`GAPSCOPE_EXIT_TIMEOUT=0`) always runs out
/// before the capture is written, however the threads are scheduled.
const STOP_TAKES: Duration = Duration::from_millis(100);

/// The stand-in session.
pub struct Running {
    stop: Arc<AtomicBool>,
    worker: Option<JoinHandle<()>>,
    started_ns: i64,
}

/// Starts the lock-holding thread.
pub fn start() -> Running {
    let stop = Arc::new(AtomicBool::new(false));
    let s = stop.clone();
    let worker = std::thread::Builder::new()
        .name("gapscope-selftest".into())
        .spawn(move || {
            while !s.load(Ordering::SeqCst) {
                {
                    let _held = crate::STATE.lock();
                    std::thread::sleep(Duration::from_millis(40));
                }
                std::thread::sleep(Duration::from_millis(1));
            }
        })
        .ok();
    Running {
        stop,
        worker,
        started_ns: now_ns(),
    }
}

impl Running {
    /// Joins the thread and returns this process's stand-in trace.
    pub fn stop(mut self, source: String) -> Trace {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(w) = self.worker.take() {
            let _ = w.join();
        }
        std::thread::sleep(STOP_TAKES);
        let t0 = self.started_ns;
        let mut b = TraceBuilder::new();
        // SAFETY: a plain syscall with no arguments.
        let tid = unsafe { libc::syscall(libc::SYS_gettid) } as i64;
        let thread = b.thread(std::process::id() as i64, tid);
        let launch = b.intern("cudaLaunchKernel");
        let memcpy = b.intern("cudaMemcpy");
        let kernel = b.intern("gapscope_selftest_kernel");
        let copy = b.intern("gapscope_selftest_copy");
        b.push_runtime(RuntimeCall::new(thread, t0, t0 + 1_000, launch, 1));
        b.push_gpu(GpuActivity::kernel(0, 7, t0 + 2_000, t0 + 5_000, kernel, 1));
        b.push_runtime(RuntimeCall::new(thread, t0 + 5_500, t0 + 9_500, memcpy, 2));
        let mut c = GpuActivity::new(GpuKind::Memcpy, 0, 7, t0 + 6_000, t0 + 9_000, copy, 2);
        c.bytes = 4096;
        c.copy_kind = CopyKind::HtoD;
        c.src_mem = MemKind::Pageable;
        c.dst_mem = MemKind::Device;
        b.push_gpu(c);
        let step = b.intern("ProfilerStep#1");
        let end = now_ns().max(t0 + 10_000);
        b.push_cpu_op(CpuOp::new(thread, t0, end, step, CpuOpKind::ProfilerStep));
        b.meta.source = source;
        b.meta.format = "gapscope-inject self-test".into();
        b.finish()
    }
}

fn now_ns() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as i64)
        .unwrap_or(0)
}

//! `libgapscope_inject.so`: records any CUDA program through CUPTI.
//!
//! The CUDA driver loads the library named by `CUDA_INJECTION64_PATH` while
//! it runs `cuInit` and calls its `InitializeInjection`; NVTX loads the one
//! named by `NVTX_INJECTION64_PATH` on a module's first NVTX call and calls
//! its `InitializeInjectionNvtx2`. `gapscope record` points both variables
//! here (see `collectors/src/record/` and docs/cupti.md, "Recording any
//! program"). Whichever entry point runs first starts the live CUPTI
//! collector (`gapscope_collectors::cupti::live`); at exit the process writes
//! one capture file, `$GAPSCOPE_CAPTURE_DIR/gapscope-<pid>.gst`.
//!
//! The host program must never crash or hang because of us:
//! - every `extern "C"` entry point (and the exit hooks) catches panics;
//! - every failure is one line on stderr, `gapscope: pid N: ...`, also kept
//!   as `gapscope-<pid>.err` in the capture directory for `record` to
//!   report; the program then runs unprofiled;
//! - both entry points return success to their caller whatever happens
//!   (NVTX excepted: a 0 there only turns NVTX into no-ops), so CUDA and
//!   NVTX work as they would without us;
//! - memory for CUPTI's buffers is bounded by the collector's pool (32 × 8
//!   MiB); rows are kept until exit;
//! - at exit, stopping CUPTI and writing the file run on a helper thread
//!   that is given `GAPSCOPE_EXIT_TIMEOUT` seconds (default 60); past that
//!   the process exits without its capture and says so.
//!
//! Fork: a child made by `fork()` inherits our statics but none of CUPTI's
//! or our threads, and CUDA cannot be used in it. The exit path therefore
//! returns at once, before taking any lock, in any process other than the
//! one that started the collector: a `pthread_atfork` child handler sets a
//! flag, and the pid that started is compared with `getpid()` (either alone
//! would do; the flag also covers a grandchild that happens to get the
//! original pid). So a forked child never flushes the parent's buffers,
//! never writes a file, and never waits on a mutex another thread held at
//! fork time. A child that `exec`s starts afresh and records itself.

mod config;
mod libs;
mod selftest;

use config::Config;
use gapscope_collectors::capture;
use gapscope_collectors::cupti::live::{self, Collector, Options};
use gapscope_collectors::trace::Trace;
use std::ffi::{c_int, c_void};
use std::io::Write;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU8, Ordering};
use std::sync::{mpsc, Mutex, MutexGuard};
use std::time::Duration;

/// What records: CUPTI (with `cuptiGetVersion`), or the self-test stand-in
/// (see [`selftest`]).
enum Source {
    Live(Collector, u32),
    SelfTest(selftest::Running),
}

/// The running session of this process.
struct Running {
    source: Source,
    dir: PathBuf,
    exit_timeout: Duration,
}

static STATE: Mutex<Option<Running>> = Mutex::new(None);

/// Start state: [`NOT_STARTED`] → [`STARTING`] → [`STARTED`] (also when
/// starting failed: one attempt per process).
static START: AtomicU8 = AtomicU8::new(NOT_STARTED);
const NOT_STARTED: u8 = 0;
const STARTING: u8 = 1;
const STARTED: u8 = 2;
/// The thread (Linux tid) that is starting, to tell a re-entrant call (CUPTI
/// initialising CUDA from inside our start) from a concurrent one.
static STARTER: AtomicI32 = AtomicI32::new(0);
/// The process that started a session (0: none).
static OWNER: AtomicI32 = AtomicI32::new(0);
/// Set in a `fork()`ed child (pthread_atfork).
static FORKED: AtomicBool = AtomicBool::new(false);
/// The exit path ran (at exit, or from the destructor after it).
static FINISHED: AtomicBool = AtomicBool::new(false);
/// The CUDA driver called `InitializeInjection` (it does so in `cuInit`).
static CUDA_STARTED: AtomicBool = AtomicBool::new(false);

/// The CUDA driver's entry point (`CUDA_INJECTION64_PATH`). Always returns
/// 1, as NVIDIA's injection samples and Kineto do: a failure to profile must
/// not fail `cuInit`; it is reported on stderr instead.
#[no_mangle]
pub extern "C" fn InitializeInjection() -> c_int {
    CUDA_STARTED.store(true, Ordering::SeqCst);
    let _ = catch_unwind(ensure_started);
    1
}

/// NVTX v3's entry point (`NVTX_INJECTION64_PATH`): starts the collector if
/// CUDA has not yet, then lets libcupti install its NVTX handlers, as the
/// CUPTI docs prescribe for a CUPTI-based tool. 1 on success; on 0 NVTX
/// turns that library's NVTX calls into no-ops (and the program runs on).
///
/// CUPTI is made NVTX's handler only while a CUPTI session runs, and with
/// CUPTI 13 only once CUDA has started: libcupti 13.0.85 crashed (SIGSEGV
/// in `nvtxRangePushA`) when it handled NVTX in a process where CUDA had not
/// started, in our tests without a GPU; 12.9.79 did not (compare
/// NVIDIA/NVTX#125). A library whose first NVTX call comes before CUDA
/// starts therefore loses its ranges under CUPTI 13, and we say so.
///
/// # Safety
/// Called by NVTX with its export-table getter.
#[no_mangle]
pub unsafe extern "C" fn InitializeInjectionNvtx2(get_export_table: *mut c_void) -> c_int {
    nvtx_entry(true, get_export_table)
}

/// The NVTX v2 entry point, for programs built with the older NVTX headers.
///
/// # Safety
/// Called by NVTX with its export-table getter.
#[no_mangle]
pub unsafe extern "C" fn InitializeInjectionNvtx(get_export_table: *mut c_void) -> c_int {
    nvtx_entry(false, get_export_table)
}

fn nvtx_entry(v2: bool, get_export_table: *mut c_void) -> c_int {
    let p = get_export_table as usize;
    let r = catch_unwind(move || {
        // Subscribe before CUPTI becomes NVTX's handler, whichever of CUDA
        // and NVTX comes first, so the collector owns CUPTI's subscriber
        // slot.
        ensure_started();
        if !libs::nvtx_enabled() {
            return 0;
        }
        let version = match lock_state().as_ref().map(|r| &r.source) {
            Some(Source::Live(_, v)) => *v,
            // No CUPTI session, so no markers to record: leave NVTX alone.
            _ => return 0,
        };
        if version >= 130000 && !CUDA_STARTED.load(Ordering::SeqCst) {
            say(
                None,
                "NVTX ranges of a library that used NVTX before CUDA started are not recorded \
                 (CUPTI 13 can crash handling NVTX then); start CUDA before the first NVTX range \
                 to get them",
            );
            return 0;
        }
        // SAFETY: the pointer NVTX gave us, passed on unchanged.
        match unsafe { live::nvtx_initialize(v2, p as *mut c_void) } {
            Ok(()) => 1,
            Err(e) => {
                say(None, &format!("NVTX ranges will not be recorded: {e}"));
                0
            }
        }
    });
    r.unwrap_or(0)
}

/// Starts the session once per process. A re-entrant call (CUPTI
/// initialising CUDA, which calls `InitializeInjection`, from inside our own
/// start) returns at once; a concurrent one waits for the start to finish,
/// up to 10 s, so that NVTX is never handed to CUPTI before we subscribe.
fn ensure_started() {
    let me = gettid();
    match START.compare_exchange(NOT_STARTED, STARTING, Ordering::SeqCst, Ordering::SeqCst) {
        Ok(_) => {
            STARTER.store(me, Ordering::SeqCst);
            // Caught here too, so that a panic still leaves START at STARTED
            // (later callers would otherwise wait for a start that ended).
            let r = catch_unwind(start).unwrap_or_else(|_| Err("internal error while starting".into()));
            if let Err(msg) = r {
                let dir = std::env::var_os("GAPSCOPE_CAPTURE_DIR").map(PathBuf::from);
                say(dir.as_deref(), &format!("not recording: {msg}"));
            }
            START.store(STARTED, Ordering::SeqCst);
        }
        Err(STARTING) if STARTER.load(Ordering::SeqCst) != me => {
            for _ in 0..1000 {
                if START.load(Ordering::SeqCst) == STARTED {
                    break;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
        }
        Err(_) => {}
    }
}

fn start() -> Result<(), String> {
    let cfg = Config::from_env()?;
    libs::pin_self();
    let source = if cfg.selftest {
        Source::SelfTest(selftest::start())
    } else {
        if let Some(lib) = &cfg.cupti_lib {
            libs::preload(lib)?;
        }
        // Loads libcupti (as the collector will) and checks its version
        // before anything is enabled.
        let (version, _) = live::check_library().map_err(|e| e.to_string())?;
        libs::single_cupti()?;
        let collector = Collector::start(Options {
            api_calls: cfg.api_calls,
            ..Options::default()
        })
        .map_err(|e| e.to_string())?;
        Source::Live(collector, version)
    };
    *lock_state() = Some(Running {
        source,
        dir: cfg.dir,
        exit_timeout: cfg.exit_timeout,
    });
    OWNER.store(std::process::id() as i32, Ordering::SeqCst);
    // Tells `gapscope record` that this process started, so a capture that
    // never comes (the process was killed, or skipped exit handlers) is
    // reported rather than silently missing.
    let _ = std::fs::write(
        lock_dir().join(format!("gapscope-{}.started", std::process::id())),
        process_name(),
    );
    // SAFETY: registering plain C callbacks that never unwind.
    unsafe {
        libc::pthread_atfork(None, None, Some(in_forked_child));
        if libc::atexit(at_exit) != 0 {
            // The destructor below still runs the exit path.
            say(
                Some(&lock_dir()),
                "could not register an exit handler; relying on the library destructor",
            );
        }
    }
    Ok(())
}

fn lock_dir() -> PathBuf {
    lock_state().as_ref().map(|r| r.dir.clone()).unwrap_or_default()
}

fn lock_state() -> MutexGuard<'static, Option<Running>> {
    STATE.lock().unwrap_or_else(|p| p.into_inner())
}

extern "C" fn in_forked_child() {
    FORKED.store(true, Ordering::SeqCst);
}

extern "C" fn at_exit() {
    let _ = catch_unwind(finish);
}

/// Runs the exit path if `atexit` did not (it runs first when registered).
/// Never runs at `dlclose`: the library pins itself (see [`libs::pin_self`]).
extern "C" fn at_fini() {
    let _ = catch_unwind(finish);
}

#[used]
#[link_section = ".fini_array"]
static FINI: extern "C" fn() = at_fini;

/// Stops the session and writes this process's capture, once, and only in
/// the process that started it (see the module docs on fork).
fn finish() {
    if FORKED.load(Ordering::SeqCst) {
        return;
    }
    let owner = OWNER.load(Ordering::SeqCst);
    if owner == 0 || owner != std::process::id() as i32 {
        return;
    }
    if FINISHED.swap(true, Ordering::SeqCst) {
        return;
    }
    let Some(running) = lock_state().take() else {
        return;
    };
    let dir = running.dir.clone();
    let timeout = running.exit_timeout;
    let (tx, rx) = mpsc::channel();
    let spawned = std::thread::Builder::new()
        .name("gapscope-exit".into())
        .spawn(move || {
            let r = catch_unwind(AssertUnwindSafe(|| stop_and_write(running)))
                .unwrap_or_else(|_| Err("internal error while writing the capture".into()));
            let _ = tx.send(r);
        });
    if let Err(e) = spawned {
        say(
            Some(&dir),
            &format!("capture not written: cannot start a thread at exit ({e})"),
        );
        return;
    }
    match rx.recv_timeout(timeout) {
        Ok(Ok(_)) => {}
        Ok(Err(msg)) => say(Some(&dir), &format!("capture not written: {msg}")),
        Err(mpsc::RecvTimeoutError::Timeout) => say(
            Some(&dir),
            &format!(
                "capture not written: stopping CUPTI and writing took longer than {} s at exit, so the \
                 program exits without it (raise GAPSCOPE_EXIT_TIMEOUT to wait longer)",
                timeout.as_secs()
            ),
        ),
        Err(mpsc::RecvTimeoutError::Disconnected) => {
            say(Some(&dir), "capture not written: the exit thread stopped early")
        }
    }
}

fn stop_and_write(running: Running) -> Result<PathBuf, String> {
    let mut trace = match running.source {
        Source::Live(c, _) => {
            let cap = c.stop().map_err(|e| format!("stopping CUPTI failed: {e}"))?;
            let mut b = cap.builder;
            b.meta.source = process_name();
            b.meta.format = format!("cupti-live (CUPTI API {})", cap.api_version);
            b.finish()
        }
        Source::SelfTest(s) => s.stop(process_name()),
    };
    let (rank, world_size) = job_place();
    trace.meta.rank = rank;
    trace.meta.world_size = world_size;
    write_capture(&trace, &running.dir)
}

/// This process's rank and the job's size, as torchrun (and most
/// launchers) put them in every worker's environment: `RANK` and
/// `WORLD_SIZE`. Read at exit, so a program that sets them itself once it
/// knows its rank is placed too. A value that is not a whole number >= 0 is
/// ignored.
fn job_place() -> (Option<i64>, Option<i64>) {
    let read = |name: &str| {
        std::env::var(name)
            .ok()
            .and_then(|v| v.trim().parse::<i64>().ok())
            .filter(|&n| n >= 0)
    };
    (read("RANK"), read("WORLD_SIZE"))
}

/// Writes `gapscope-<pid>.gst` (another name if a process with the same pid
/// already wrote one in this directory). `capture::write_file` writes
/// through a `.tmp` file renamed at the end, so `record` never reads half a
/// capture.
fn write_capture(trace: &Trace, dir: &Path) -> Result<PathBuf, String> {
    let pid = std::process::id();
    let mut path = dir.join(format!("gapscope-{pid}.gst"));
    let mut n = 1;
    while path.exists() {
        n += 1;
        path = dir.join(format!("gapscope-{pid}-{n}.gst"));
    }
    capture::write_file(trace, &path).map_err(|e| e.to_string())?;
    Ok(path)
}

/// `pid N: <command line>`, as the capture's source.
fn process_name() -> String {
    let cmd = std::fs::read("/proc/self/cmdline")
        .map(|b| {
            b.split(|&c| c == 0)
                .filter(|a| !a.is_empty())
                .map(|a| String::from_utf8_lossy(a).into_owned())
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_default();
    let cmd: String = cmd.chars().take(200).collect();
    format!("pid {}: {cmd}", std::process::id())
}

/// One line on stderr, `gapscope: pid N: <msg>`, also written to
/// `<dir>/gapscope-<pid>.err` (appended) for `gapscope record` to report.
fn say(dir: Option<&Path>, msg: &str) {
    let line = format!("gapscope: pid {}: {}", std::process::id(), msg.replace('\n', " "));
    let _ = writeln!(std::io::stderr().lock(), "{line}");
    if let Some(dir) = dir.filter(|d| !d.as_os_str().is_empty()) {
        let path = dir.join(format!("gapscope-{}.err", std::process::id()));
        if let Ok(mut f) = std::fs::OpenOptions::new().create(true).append(true).open(path) {
            let _ = writeln!(f, "{line}");
        }
    }
}

fn gettid() -> i32 {
    // SAFETY: a plain syscall with no arguments.
    unsafe { libc::syscall(libc::SYS_gettid) as i32 }
}

//! The operator observer: every aten op, autograd node, TorchScript function
//! and user range libtorch runs while a [`Recording`] is live, from a global
//! RecordFunction callback in C++ (csrc/observer.cpp), with its name, start
//! and end (CLOCK_MONOTONIC ns), logical and OS thread, sequence number
//! (which pairs a forward op with its backward node), input shapes and
//! nesting. [`to_trace`] turns them into our [`Trace`].
//!
//! Zero cost when off: the callback exists only between
//! [`Recording::start`] and [`Recording::stop`].

use crate::trace::{CpuOp, CpuOpKind, Trace, TraceBuilder};
use std::ffi::{c_char, CStr, CString};
use std::sync::atomic::{AtomicBool, Ordering};

#[repr(C)]
struct RawEvent {
    name: *const c_char,
    shapes: *const c_char,
    start_ns: i64,
    end_ns: i64,
    seq: i64,
    thread: u64,
    fwd_thread: u64,
    os_tid: i64,
    parent: i64,
    depth: i32,
    scope: u8,
}

extern "C" {
    fn gs_observer_start(record_shapes: i32) -> i32;
    fn gs_observer_stop() -> i64;
    fn gs_observer_get(i: i64, out: *mut RawEvent) -> i32;
    fn gs_observer_now_ns() -> i64;
    fn gs_nvtx_start(record_shapes: i32) -> i32;
    fn gs_nvtx_stop() -> i32;
    fn gs_nvtx_range(name: *const c_char) -> i32;
    fn gs_last_error() -> *const c_char;
}

/// The shim's reason for its last failure on this thread.
fn last_error() -> String {
    // SAFETY: a NUL-terminated thread-local std::string owned by the shim.
    unsafe { CStr::from_ptr(gs_last_error()) }
        .to_string_lossy()
        .into_owned()
}

/// NVTX ranges around every operator on the thread that started them (and
/// the backward nodes autograd runs for it), named as PyTorch's
/// `emit_nvtx()` names them, for a run under `gapscope record` or another
/// CUDA profiler: libtorch's NVTX profiler state, on while this lives.
/// Needs libtorch_cuda loaded (`--device cuda`).
pub struct NvtxRanges {
    _private: (),
}

impl NvtxRanges {
    /// Turns the ranges on for the calling thread.
    pub fn start() -> Result<NvtxRanges, String> {
        // SAFETY: the shim catches every C++ exception.
        match unsafe { gs_nvtx_start(0) } {
            0 => Ok(NvtxRanges { _private: () }),
            _ => Err(format!("libtorch could not emit NVTX ranges: {}", last_error())),
        }
    }

    /// Pushes a range of the caller's own (`ProfilerStep#N`) on this thread.
    pub fn push(&self, name: &str) -> Result<(), String> {
        let name = CString::new(name).map_err(|_| "an NVTX range name holds a NUL byte".to_string())?;
        // SAFETY: a valid C string; the shim catches C++ exceptions.
        match unsafe { gs_nvtx_range(name.as_ptr()) } {
            0 => Ok(()),
            _ => Err(format!("NVTX range push failed: {}", last_error())),
        }
    }

    /// Pops the range `push` pushed last on this thread.
    pub fn pop(&self) -> Result<(), String> {
        // SAFETY: as in `push`.
        match unsafe { gs_nvtx_range(std::ptr::null()) } {
            0 => Ok(()),
            _ => Err(format!("NVTX range pop failed: {}", last_error())),
        }
    }
}

impl Drop for NvtxRanges {
    fn drop(&mut self) {
        // SAFETY: the state `start` turned on; the shim catches exceptions.
        unsafe { gs_nvtx_stop() };
    }
}

/// RecordFunction's scope of an event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    /// An aten op or autograd function called directly.
    Function,
    /// An autograd node run by the backward engine.
    Backward,
    /// A TorchScript function or method.
    TorchScript,
    /// A user range (`record_function`).
    User,
    /// Any other scope (libtorch's number).
    Other(u8),
}

impl Scope {
    fn from_raw(s: u8) -> Self {
        match s {
            0 => Self::Function,
            1 => Self::Backward,
            2 => Self::TorchScript,
            7 => Self::User,
            n => Self::Other(n),
        }
    }
}

/// One recorded operator.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OpEvent {
    /// `aten::conv2d`, `ConvolutionBackward0`, `forward`, ...
    pub name: String,
    /// Input shapes as Kineto's `Input Dims` JSON (`[[8, 3, 64, 64], []]`);
    /// empty when shapes were not recorded.
    pub shapes: String,
    /// Start, CLOCK_MONOTONIC ns.
    pub start_ns: i64,
    /// End, CLOCK_MONOTONIC ns (`start_ns` if the op never ended).
    pub end_ns: i64,
    /// Autograd sequence number; -1 when none.
    pub seq: i64,
    /// libtorch's logical thread id.
    pub thread: u64,
    /// For a backward node, the logical thread of its forward op.
    pub fwd_thread: u64,
    /// The OS thread id (gettid).
    pub os_tid: i64,
    /// The enclosing event on the same thread (index into the list).
    pub parent: Option<usize>,
    /// How many events enclose this one on its thread.
    pub depth: u32,
    /// RecordFunction scope.
    pub scope: Scope,
}

static LIVE: AtomicBool = AtomicBool::new(false);

/// CLOCK_MONOTONIC now, ns: the clock events are stamped with.
pub fn now_ns() -> i64 {
    // SAFETY: a plain clock read.
    unsafe { gs_observer_now_ns() }
}

/// A live recording. One at a time per process.
pub struct Recording {
    _private: (),
}

impl Recording {
    /// Starts recording every op on every thread; `record_shapes` also
    /// records input shapes (costs a little per op).
    pub fn start(record_shapes: bool) -> Result<Recording, String> {
        if LIVE.swap(true, Ordering::SeqCst) {
            return Err("an operator recording is already running".to_string());
        }
        // SAFETY: the shim catches every C++ exception.
        if unsafe { gs_observer_start(i32::from(record_shapes)) } != 0 {
            LIVE.store(false, Ordering::SeqCst);
            return Err("libtorch refused the RecordFunction callback".to_string());
        }
        Ok(Recording { _private: () })
    }

    /// Stops recording and returns the events, grouped by thread, each
    /// thread's in start order.
    pub fn stop(self) -> Vec<OpEvent> {
        // SAFETY: stop and get only read the shim's buffers; `self` proves
        // a recording was started and no other is running.
        let n = unsafe { gs_observer_stop() };
        let mut out = Vec::with_capacity(n as usize);
        for i in 0..n {
            let mut raw = RawEvent {
                name: std::ptr::null(),
                shapes: std::ptr::null(),
                start_ns: 0,
                end_ns: 0,
                seq: -1,
                thread: 0,
                fwd_thread: 0,
                os_tid: 0,
                parent: -1,
                depth: 0,
                scope: 0,
            };
            // SAFETY: i < n; the strings live until the next start.
            if unsafe { gs_observer_get(i, &mut raw) } != 0 {
                continue;
            }
            let text = |p: *const c_char| {
                if p.is_null() {
                    String::new()
                } else {
                    // SAFETY: NUL-terminated std::string data owned by the shim.
                    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
                }
            };
            out.push(OpEvent {
                name: text(raw.name),
                shapes: text(raw.shapes),
                start_ns: raw.start_ns,
                end_ns: raw.end_ns.max(raw.start_ns),
                seq: raw.seq,
                thread: raw.thread,
                fwd_thread: raw.fwd_thread,
                os_tid: raw.os_tid,
                parent: usize::try_from(raw.parent).ok(),
                depth: raw.depth.max(0) as u32,
                scope: Scope::from_raw(raw.scope),
            });
        }
        LIVE.store(false, Ordering::SeqCst);
        std::mem::forget(self);
        out
    }
}

impl Drop for Recording {
    fn drop(&mut self) {
        // A recording dropped without `stop` (a panic) still ends.
        // SAFETY: as in `stop`.
        unsafe { gs_observer_stop() };
        LIVE.store(false, Ordering::SeqCst);
    }
}

/// A range the runner adds around the ops (one per iteration), in the
/// observer's clock.
#[derive(Clone, Debug)]
pub struct Step {
    /// `ProfilerStep#N` is how PyTorch's profiler names step N.
    pub number: u64,
    /// Start, CLOCK_MONOTONIC ns.
    pub start_ns: i64,
    /// End, CLOCK_MONOTONIC ns.
    pub end_ns: i64,
}

/// Builds a [`Trace`] of CPU ops: one thread per OS thread of this process,
/// `ProfilerStep#N` ranges for `steps`, times moved from CLOCK_MONOTONIC to
/// the Unix epoch (as Kineto's are). `source` names the capture.
pub fn to_trace(events: &[OpEvent], steps: &[Step], source: &str) -> Trace {
    let mut b = TraceBuilder::new();
    b.meta.source = source.to_string();
    b.meta.format = "gapscope-capture".to_string();
    let epoch = epoch_offset_ns();
    let pid = i64::from(std::process::id());
    let main_tid = events.iter().find(|e| e.depth == 0).map_or(pid, |e| e.os_tid);
    for s in steps {
        let t = b.thread(pid, main_tid);
        let name = b.intern(&format!("ProfilerStep#{}", s.number));
        b.push_cpu_op(CpuOp::new(
            t,
            s.start_ns + epoch,
            s.end_ns + epoch,
            name,
            CpuOpKind::ProfilerStep,
        ));
    }
    for e in events {
        let t = b.thread(pid, e.os_tid);
        let name = b.intern(&e.name);
        let kind = match e.scope {
            Scope::User => CpuOpKind::UserAnnotation,
            _ => CpuOpKind::Operator,
        };
        let mut op = CpuOp::new(t, e.start_ns + epoch, e.end_ns + epoch, name, kind);
        op.sequence = e.seq;
        if !e.shapes.is_empty() {
            op.shapes = b.intern(&e.shapes);
        }
        b.push_cpu_op(op);
    }
    b.finish()
}

/// Unix-epoch ns minus CLOCK_MONOTONIC ns, now.
fn epoch_offset_ns() -> i64 {
    let mono = now_ns();
    let wall = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i64);
    wall - mono
}

//! The live, in-process CUPTI collector (cargo feature `cupti`).
//!
//! ```text
//! CUPTI's threads                      our worker thread
//! ───────────────                      ─────────────────
//! buffer_requested → pool (8 MiB,      pop a completed buffer
//!                    bounded)          walk it with cuptiActivityGetNextRecord
//! buffer_completed → queue only        decode (crate::cupti::decode), free
//!                                      overhead data, return buffer to pool,
//!                                      add cuptiActivityGetNumDroppedRecords
//!                                      flush_all(0) every `flush_every`
//! ```
//!
//! Order at start: the library is looked for first (cudarc panics on a
//! missing libcupti, so it is never touched before that), the version picks
//! the record layouts (unsupported versions are refused before anything is
//! enabled), thread ids are set to Linux tids, the buffer callbacks are
//! registered, the subscriber slot is taken (a profiler already holding it is
//! reported as [`LiveError::InUse`]), then the kinds are enabled. `stop`
//! forces a flush, disables the kinds, drains the queue and returns the rows.
//!
//! No panic crosses into C: both callbacks catch unwinds and do nothing but
//! move pointers. Every entry point here also catches panics from cudarc.

mod ffi;

use crate::cupti::decode::{DecodeStats, Decoder, Layouts, UnsupportedVersion};
use crate::trace::TraceBuilder;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

pub use ffi::{cupti_api_version, library_candidates};

/// Why the collector could not start or stop cleanly.
#[derive(Debug, thiserror::Error)]
pub enum LiveError {
    /// No libcupti could be loaded by any of the names cudarc tries.
    #[error(
        "CUPTI library not found (tried {tried}); put the directory holding libcupti.so.13 \
         (e.g. site-packages/nvidia/cu13/lib, or /usr/local/cuda/extras/CUPTI/lib64) on LD_LIBRARY_PATH"
    )]
    LibraryNotFound {
        /// The names tried, comma-separated.
        tried: String,
    },
    /// The loaded libcupti is a release whose records we do not read.
    #[error(transparent)]
    Version(#[from] UnsupportedVersion),
    /// Another profiler (Nsight Systems, Nsight Compute, torch.profiler /
    /// Kineto, a sanitizer) already holds CUPTI.
    #[error(
        "CUPTI is already in use by another profiler (Nsight Systems, Nsight Compute, \
         torch.profiler or a CUDA sanitizer); only one can trace a process at a time"
    )]
    InUse,
    /// A collector is already running in this process.
    #[error("a gapscope CUPTI collector is already running in this process")]
    AlreadyRunning,
    /// The loaded libcupti lacks a function we need.
    #[error("the loaded libcupti has no {0}; use libcupti 12.9 or 13.0")]
    MissingSymbol(&'static str),
    /// A CUPTI call failed.
    #[error("{call} failed: CUPTI error {code} ({message})")]
    Cupti {
        /// The function.
        call: &'static str,
        /// Its `CUptiResult`.
        code: u32,
        /// CUPTI's text for it.
        message: String,
    },
    /// cudarc or the decoder panicked; caught, tracing stopped.
    #[error("internal error in the CUPTI collector: {0}")]
    Panicked(String),
}

/// What to collect and how.
#[derive(Clone, Debug)]
pub struct Options {
    /// Size of each activity buffer (CUPTI suggests 1–10 MB).
    pub buffer_bytes: usize,
    /// At most this many buffers exist at once; past that CUPTI's request is
    /// refused and it counts the records it drops.
    pub max_buffers: usize,
    /// How often the worker asks CUPTI for completed buffers.
    pub flush_every: Duration,
    /// Also trace runtime and driver API calls (needed to link GPU work to
    /// the CPU; the costliest kinds).
    pub api_calls: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            buffer_bytes: 8 << 20,
            max_buffers: 32,
            flush_every: Duration::from_millis(500),
            api_calls: true,
        }
    }
}

/// What a stopped collector hands back.
pub struct Capture {
    /// The rows, in absolute CUPTI ns (CLOCK_REALTIME); `finish` into a trace.
    pub builder: TraceBuilder,
    /// Counts, including records CUPTI dropped.
    pub stats: DecodeStats,
    /// `cuptiGetVersion` of the library that recorded.
    pub api_version: u32,
}

static RUNNING: AtomicBool = AtomicBool::new(false);

/// A running collector. Drop stops it too, discarding the rows.
pub struct Collector {
    inner: Option<ffi::Session>,
}

impl Collector {
    /// Starts tracing this process.
    pub fn start(opts: Options) -> Result<Collector, LiveError> {
        if RUNNING.swap(true, Ordering::SeqCst) {
            return Err(LiveError::AlreadyRunning);
        }
        let r = catch(|| ffi::Session::start(&opts));
        match r {
            Ok(s) => Ok(Collector { inner: Some(s) }),
            Err(e) => {
                RUNNING.store(false, Ordering::SeqCst);
                Err(e)
            }
        }
    }

    /// Stops tracing, forces the last buffers out, and returns what was
    /// recorded.
    pub fn stop(mut self) -> Result<Capture, LiveError> {
        let s = self.inner.take().expect("a collector is stopped once");
        let r = catch(move || s.stop());
        RUNNING.store(false, Ordering::SeqCst);
        r
    }
}

impl Drop for Collector {
    fn drop(&mut self) {
        if let Some(s) = self.inner.take() {
            let _ = catch(move || s.stop());
            RUNNING.store(false, Ordering::SeqCst);
        }
    }
}

/// The layouts for the libcupti this process would load, without starting
/// anything: the check `gapscope record` can run before launching a program.
pub fn check_library() -> Result<(u32, Layouts), LiveError> {
    catch(|| {
        let v = ffi::cupti_api_version()?;
        Ok((v, Layouts::for_api_version(v)?))
    })
}

/// Connects NVTX to CUPTI: the body of an NVTX injection library's
/// `InitializeInjectionNvtx2` (`v2`) or `InitializeInjectionNvtx`, as the
/// CUPTI docs prescribe for a CUPTI-based tool ("NVTX", Usage guide). Loads
/// libcupti the same way [`Collector::start`] does, so both use one copy.
/// MARKER records only arrive while a collector runs.
///
/// # Safety
/// `get_export_table` must be the pointer NVTX passed to that entry point.
pub unsafe fn nvtx_initialize(v2: bool, get_export_table: *mut std::ffi::c_void) -> Result<(), LiveError> {
    let p = get_export_table as usize;
    // SAFETY: forwarded from the caller.
    catch(move || unsafe { ffi::nvtx_initialize(v2, p as *mut std::ffi::c_void) })
}

fn catch<T>(f: impl FnOnce() -> Result<T, LiveError>) -> Result<T, LiveError> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(p) => Err(LiveError::Panicked(
            p.downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| p.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "panic".into()),
        )),
    }
}

pub(crate) fn new_decoder(layouts: Layouts) -> Decoder<ffi::LiveResolver> {
    Decoder::new(layouts, ffi::LiveResolver)
}

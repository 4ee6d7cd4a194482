//! Every call into libcupti, through cudarc's `cupti::sys` bindings.
//!
//! Enums are only ever *passed* to CUPTI (built from named variants), never
//! read from CUPTI's memory; records are read by the byte-offset decoder.

use super::{new_decoder, Capture, LiveError, Options};
use crate::cupti::decode::{decode_record, kind, Decoder, Layouts, Record, Resolver};
use crate::trace::ApiKind;
use cudarc::cupti::sys;
use std::collections::VecDeque;
use std::ffi::{c_char, c_void, CStr};
use std::sync::{Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::Instant;

const CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED: u32 = 39;
const FLUSH_FORCED: u32 = 1;

extern "C" {
    fn free(p: *mut c_void);
}

/// The library names cudarc tries, in order.
pub fn library_candidates() -> Vec<String> {
    cudarc::get_lib_name_candidates("cupti")
}

/// Makes sure some libcupti loads before cudarc is asked for it (cudarc
/// panics otherwise). The probe's handle is kept, so cudarc's own load finds
/// the same library and nothing is ever unloaded.
fn ensure_library() -> Result<(), LiveError> {
    static FOUND: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    let found = *FOUND.get_or_init(|| {
        for name in library_candidates() {
            // SAFETY: loading libcupti runs its initialisers only.
            if let Ok(lib) = unsafe { libloading::Library::new(&name) } {
                std::mem::forget(lib);
                return true;
            }
        }
        false
    });
    if found {
        Ok(())
    } else {
        Err(LiveError::LibraryNotFound {
            tried: library_candidates().join(", "),
        })
    }
}

fn check(call: &'static str, r: sys::CUptiResult) -> Result<(), LiveError> {
    let code = r as u32;
    if code == 0 {
        return Ok(());
    }
    if code == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED {
        return Err(LiveError::InUse);
    }
    let mut s: *const c_char = std::ptr::null();
    // SAFETY: CUPTI writes a pointer to a static string.
    let mut message = match unsafe { sys::cuptiGetResultString(r, &mut s) } as u32 {
        0 if !s.is_null() => unsafe { CStr::from_ptr(s) }.to_string_lossy().into_owned(),
        _ => "no description".into(),
    };
    // UNKNOWN and NOT_INITIALIZED are what CUPTI says with no usable driver.
    if code == 999 || code == 15 {
        message.push_str("; is a CUDA driver (libcuda.so.1, 580 or newer for CUDA 13) and a GPU present?");
    }
    Err(LiveError::Cupti { call, code, message })
}

/// `cuptiGetVersion` of the libcupti this process loads.
pub fn cupti_api_version() -> Result<u32, LiveError> {
    ensure_library()?;
    let mut v = 0u32;
    // SAFETY: writes one u32.
    check("cuptiGetVersion", unsafe { sys::cuptiGetVersion(&mut v) })?;
    Ok(v)
}

/// Hands NVTX's export-table getter to libcupti, which then installs its
/// own handlers so that NVTX ranges become MARKER records. `v2` picks
/// `cuptiNvtxInitialize2` (NVTX v3's `InitializeInjectionNvtx2`) over
/// `cuptiNvtxInitialize`. libcupti exports both but no header declares them,
/// and cudarc binds neither, so they are looked up by name.
///
/// # Safety
/// `get_export_table` must be the pointer NVTX passed to the injection entry
/// point.
pub unsafe fn nvtx_initialize(v2: bool, get_export_table: *mut c_void) -> Result<(), LiveError> {
    ensure_library()?;
    let name: &'static str = if v2 {
        "cuptiNvtxInitialize2"
    } else {
        "cuptiNvtxInitialize"
    };
    type Init = unsafe extern "C" fn(*mut c_void) -> u32;
    // SAFETY: the library is loaded (ensure_library); the symbol has this C
    // signature (CUPTI Usage, "NVTX"). Its result is read as a plain u32, so
    // no enum is built from CUPTI's value.
    let init = unsafe { sys::culib().get::<Init>(format!("{name}\0").as_bytes()) }
        .map_err(|_| LiveError::MissingSymbol(name))?;
    // SAFETY: see above.
    match unsafe { init(get_export_table) } {
        0 => Ok(()),
        code => Err(LiveError::Cupti {
            call: name,
            code,
            message: "NVTX ranges will not be recorded".into(),
        }),
    }
}

/// Reads CUPTI's strings and callback names.
#[derive(Default)]
pub struct LiveResolver;

impl Resolver for LiveResolver {
    fn string(&mut self, addr: u64) -> Option<String> {
        if addr == 0 {
            return None;
        }
        // SAFETY: kernel, marker and domain names in records point at
        // NUL-terminated strings CUPTI keeps for the session.
        Some(
            unsafe { CStr::from_ptr(addr as usize as *const c_char) }
                .to_string_lossy()
                .into_owned(),
        )
    }

    fn api_name(&mut self, api: ApiKind, cbid: u32) -> Option<String> {
        let domain = match api {
            ApiKind::Driver => sys::CUpti_CallbackDomain::CUPTI_CB_DOMAIN_DRIVER_API,
            ApiKind::Runtime => sys::CUpti_CallbackDomain::CUPTI_CB_DOMAIN_RUNTIME_API,
        };
        let mut s: *const c_char = std::ptr::null();
        // SAFETY: CUPTI writes a pointer to a static string.
        let r = unsafe { sys::cuptiGetCallbackName(domain, cbid, &mut s) };
        (r as u32 == 0 && !s.is_null()).then(|| unsafe { CStr::from_ptr(s) }.to_string_lossy().into_owned())
    }
}

/// A buffer CUPTI handed back: (start, size, valid bytes).
struct Done(*mut u8, usize, usize);
// SAFETY: ownership of the buffer moves with the value.
unsafe impl Send for Done {}

struct Shared {
    queue: VecDeque<Done>,
    /// Buffers that exist (in CUPTI's hands or queued).
    outstanding: usize,
    free: Vec<usize>,
    buffer_bytes: usize,
    max_buffers: usize,
    stopping: bool,
    /// Buffers refused because the pool was full.
    refused: u64,
}

static SHARED: Mutex<Option<Shared>> = Mutex::new(None);
static WAKE: Condvar = Condvar::new();

fn layout(bytes: usize) -> std::alloc::Layout {
    std::alloc::Layout::from_size_align(bytes, 8).expect("buffer size fits a layout")
}

unsafe extern "C" fn buffer_requested(buffer: *mut *mut u8, size: *mut usize, max_records: *mut usize) {
    let _ = std::panic::catch_unwind(|| {
        let mut out: (*mut u8, usize) = (std::ptr::null_mut(), 0);
        if let Ok(mut g) = SHARED.lock() {
            if let Some(s) = g.as_mut() {
                if let Some(p) = s.free.pop() {
                    out = (p as *mut u8, s.buffer_bytes);
                } else if s.outstanding < s.max_buffers {
                    // SAFETY: non-zero size.
                    let p = unsafe { std::alloc::alloc(layout(s.buffer_bytes)) };
                    if !p.is_null() {
                        s.outstanding += 1;
                        out = (p, s.buffer_bytes);
                    }
                } else {
                    s.refused += 1;
                }
            }
        }
        // SAFETY: CUPTI passes valid out-pointers.
        unsafe {
            *buffer = out.0;
            *size = out.1;
            *max_records = 0;
        }
    });
}

unsafe extern "C" fn buffer_completed(
    _ctx: cudarc::driver::sys::CUcontext,
    _stream: u32,
    buffer: *mut u8,
    size: usize,
    valid: usize,
) {
    let _ = std::panic::catch_unwind(|| {
        if buffer.is_null() {
            return;
        }
        if let Ok(mut g) = SHARED.lock() {
            if let Some(s) = g.as_mut() {
                s.queue.push_back(Done(buffer, size, valid));
                WAKE.notify_one();
            }
        }
    });
}

/// A subscriber callback that is never enabled for any domain: subscribing
/// only claims CUPTI's single subscriber slot. Declared with a plain `u32`
/// domain so that no enum is built from CUPTI's value.
unsafe extern "C" fn no_callback(_user: *mut c_void, _domain: u32, _cbid: u32, _data: *const c_void) {}

fn kinds(api_calls: bool) -> Vec<sys::CUpti_ActivityKind> {
    use sys::CUpti_ActivityKind::*;
    let mut k = vec![
        CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
        CUPTI_ACTIVITY_KIND_MEMCPY,
        CUPTI_ACTIVITY_KIND_MEMCPY2,
        CUPTI_ACTIVITY_KIND_MEMSET,
        CUPTI_ACTIVITY_KIND_SYNCHRONIZATION,
        CUPTI_ACTIVITY_KIND_MARKER,
        CUPTI_ACTIVITY_KIND_OVERHEAD,
    ];
    if api_calls {
        k.extend([
            CUPTI_ACTIVITY_KIND_RUNTIME,
            CUPTI_ACTIVITY_KIND_DRIVER,
            CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION,
        ]);
    }
    k
}

pub(super) struct Session {
    subscriber: sys::CUpti_SubscriberHandle,
    enabled: Vec<sys::CUpti_ActivityKind>,
    worker: Option<JoinHandle<Decoder<LiveResolver>>>,
    api_version: u32,
}

// SAFETY: the subscriber handle is an opaque token CUPTI accepts from any thread.
unsafe impl Send for Session {}

impl Session {
    pub(super) fn start(opts: &Options) -> Result<Session, LiveError> {
        let api_version = cupti_api_version()?;
        let layouts = Layouts::for_api_version(api_version)?;
        *SHARED
            .lock()
            .map_err(|_| LiveError::Panicked("poisoned".into()))? = Some(Shared {
            queue: VecDeque::new(),
            outstanding: 0,
            free: Vec::new(),
            buffer_bytes: opts.buffer_bytes.max(64 << 10),
            max_buffers: opts.max_buffers.max(2),
            stopping: false,
            refused: 0,
        });
        let mut subscriber: sys::CUpti_SubscriberHandle = std::ptr::null_mut();
        // SAFETY: the callback has CUPTI's C signature (with the domain as a
        // u32 of the same size as the enum).
        let cb: sys::CUpti_CallbackFunc = unsafe {
            std::mem::transmute::<
                Option<unsafe extern "C" fn(*mut c_void, u32, u32, *const c_void)>,
                sys::CUpti_CallbackFunc,
            >(Some(no_callback))
        };
        let r = (|| {
            // SAFETY: plain CUPTI calls with valid arguments.
            unsafe {
                check(
                    "cuptiSubscribe",
                    sys::cuptiSubscribe(&mut subscriber, cb, std::ptr::null_mut()),
                )?;
                check(
                    "cuptiSetThreadIdType",
                    sys::cuptiSetThreadIdType(
                        sys::CUpti_ActivityThreadIdType::CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM,
                    ),
                )?;
                check(
                    "cuptiActivityRegisterCallbacks",
                    sys::cuptiActivityRegisterCallbacks(Some(buffer_requested), Some(buffer_completed)),
                )?;
            }
            Ok(())
        })();
        let mut session = Session {
            subscriber,
            enabled: Vec::new(),
            worker: None,
            api_version,
        };
        if let Err(e) = r {
            session.teardown(true);
            return Err(e);
        }
        for k in kinds(opts.api_calls) {
            // SAFETY: a named variant of the enum.
            if let Err(e) = check("cuptiActivityEnable", unsafe { sys::cuptiActivityEnable(k) }) {
                session.teardown(true);
                return Err(e);
            }
            session.enabled.push(k);
        }
        let every = opts.flush_every;
        session.worker = Some(
            std::thread::Builder::new()
                .name("gapscope-cupti".into())
                .spawn(move || worker(new_decoder(layouts), every))
                .map_err(|e| LiveError::Panicked(format!("cannot start the worker thread: {e}")))?,
        );
        Ok(session)
    }

    pub(super) fn stop(mut self) -> Result<Capture, LiveError> {
        // SAFETY: plain CUPTI call; CUPTI calls buffer_completed for every
        // buffer it holds before returning.
        let flushed = check("cuptiActivityFlushAll", unsafe {
            sys::cuptiActivityFlushAll(FLUSH_FORCED)
        });
        let worker = self.worker.take();
        self.teardown(false);
        let decoder = match worker.map(|w| w.join()) {
            Some(Ok(d)) => d,
            Some(Err(_)) => return Err(LiveError::Panicked("the decoding worker panicked".into())),
            None => return Err(LiveError::Panicked("no worker".into())),
        };
        flushed?;
        let (builder, stats) = decoder.finish();
        Ok(Capture {
            builder,
            stats,
            api_version: self.api_version,
        })
    }

    /// Disables what was enabled, releases the subscriber slot and tells the
    /// worker to finish once the queue is empty.
    fn teardown(&mut self, free_buffers: bool) {
        for k in self.enabled.drain(..) {
            // SAFETY: plain CUPTI call.
            let _ = unsafe { sys::cuptiActivityDisable(k) };
        }
        if !self.subscriber.is_null() {
            // SAFETY: the handle cuptiSubscribe gave us.
            let _ = unsafe { sys::cuptiUnsubscribe(self.subscriber) };
            self.subscriber = std::ptr::null_mut();
        }
        if let Ok(mut g) = SHARED.lock() {
            if let Some(s) = g.as_mut() {
                s.stopping = true;
            }
            WAKE.notify_all();
        }
        if free_buffers {
            free_pool();
        }
    }
}

/// Frees the pool once nothing uses it (the worker has exited).
fn free_pool() {
    if let Ok(mut g) = SHARED.lock() {
        if let Some(s) = g.take() {
            for p in s.free {
                // SAFETY: allocated by buffer_requested with this layout.
                unsafe { std::alloc::dealloc(p as *mut u8, layout(s.buffer_bytes)) };
            }
            for Done(p, _, _) in s.queue {
                unsafe { std::alloc::dealloc(p, layout(s.buffer_bytes)) };
            }
        }
    }
}

fn worker(mut decoder: Decoder<LiveResolver>, every: std::time::Duration) -> Decoder<LiveResolver> {
    let mut last_flush = Instant::now();
    loop {
        let (next, stopping) = {
            let Ok(mut g) = SHARED.lock() else { break };
            if g.as_ref().is_some_and(|s| s.queue.is_empty() && !s.stopping) {
                g = match WAKE.wait_timeout(g, every) {
                    Ok((g, _)) => g,
                    Err(_) => break,
                };
            }
            match g.as_mut() {
                Some(s) => (s.queue.pop_front(), s.stopping),
                None => break,
            }
        };
        match next {
            Some(Done(p, size, valid)) => {
                decode_buffer(&mut decoder, p, valid.min(size));
                let mut dropped = 0usize;
                // SAFETY: plain CUPTI call (outside our lock: CUPTI may hold
                // its own while calling buffer_requested).
                if unsafe { sys::cuptiActivityGetNumDroppedRecords(std::ptr::null_mut(), 0, &mut dropped) }
                    as u32
                    == 0
                {
                    decoder.add_dropped(dropped as u64);
                }
                if let Ok(mut g) = SHARED.lock() {
                    if let Some(s) = g.as_mut() {
                        s.free.push(p as usize);
                    }
                }
            }
            None if stopping => break,
            None => {}
        }
        if !stopping && last_flush.elapsed() >= every {
            // SAFETY: plain CUPTI call; completed buffers come back through
            // buffer_completed on this thread, which only queues them.
            let _ = unsafe { sys::cuptiActivityFlushAll(0) };
            last_flush = Instant::now();
        }
    }
    let refused = SHARED
        .lock()
        .ok()
        .and_then(|g| g.as_ref().map(|s| s.refused))
        .unwrap_or(0);
    if refused > 0 {
        decoder.note_refused_buffers(refused);
    }
    free_pool();
    decoder
}

/// Walks one completed buffer with CUPTI's own iterator and decodes each
/// record; frees the overhead data CUPTI attached to its records.
fn decode_buffer(decoder: &mut Decoder<LiveResolver>, base: *mut u8, valid: usize) {
    if valid == 0 {
        return;
    }
    // SAFETY: CUPTI filled `valid` bytes of this buffer, which we own again.
    let bytes = unsafe { std::slice::from_raw_parts(base, valid) };
    let mut starts = Vec::new();
    let mut rec: *mut sys::CUpti_Activity = std::ptr::null_mut();
    // SAFETY: CUPTI reads the buffer and writes `rec`.
    while unsafe { sys::cuptiActivityGetNextRecord(base, valid, &mut rec) } as u32 == 0 {
        let off = rec as usize - base as usize;
        if off >= valid || starts.last().is_some_and(|&l| off <= l) {
            break;
        }
        starts.push(off);
    }
    for (i, &off) in starts.iter().enumerate() {
        let end = starts.get(i + 1).copied().unwrap_or(valid);
        let r = &bytes[off..end];
        if r.get(0..4) == Some(&kind::OVERHEAD.to_le_bytes()) {
            if let Ok(Record::Overhead(o)) = decode_record(r, &decoder_layouts(decoder)) {
                if o.overhead_data != 0 {
                    // SAFETY: CUPTI documents that the client frees it.
                    unsafe { free(o.overhead_data as usize as *mut c_void) };
                }
            }
        }
        decoder.decode_one(r);
    }
}

fn decoder_layouts(d: &Decoder<LiveResolver>) -> Layouts {
    *d.layouts()
}

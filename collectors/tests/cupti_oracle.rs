//! The decoder against the real libcupti: NVIDIA's own record iterator
//! (`cuptiActivityGetNextRecord`) walks the byte-exact test buffers and must
//! agree with ours record for record, for CUPTI 12.9 and 13.0. libcupti loads
//! and iterates without a GPU or driver.
//!
//! The libraries come from the `nvidia-cuda-cupti==13.0.85` and
//! `nvidia-cuda-cupti-cu12==12.9.79` wheels, never from the repository:
//! `.ci/run` downloads them and sets `GAPSCOPE_CUPTI_LIBS` (paths separated by
//! `:`). Under `CI=true` a missing or unloadable library fails the test.
//! Elsewhere the default cache `$HOME/.cache/gapscope-cupti/lib` (which
//! `.ci/run` fills) is used; with neither, the tests say so on stderr and do
//! nothing.

mod cupti_support;

use cupti_support::*;
use gapscope_collectors::cupti::decode::api::normalize_callback_name;
use gapscope_collectors::cupti::decode::{kind, Decoder, Layouts, RecordIter, WalkError};
use libloading::Library;
use std::ffi::{c_char, CStr};
use std::path::PathBuf;

const CUPTI_SUCCESS: u32 = 0;
const CUPTI_ERROR_MAX_LIMIT_REACHED: u32 = 12;
const CUPTI_ERROR_INVALID_KIND: u32 = 21;
const DOMAIN_DRIVER_API: u32 = 1;
const DOMAIN_RUNTIME_API: u32 = 2;

type GetVersion = unsafe extern "C" fn(*mut u32) -> u32;
type GetNextRecord = unsafe extern "C" fn(*mut u8, usize, *mut *mut u8) -> u32;
type GetCallbackName = unsafe extern "C" fn(u32, u32, *mut *const c_char) -> u32;

struct Cupti {
    path: PathBuf,
    lib: Library,
    version: u32,
}

impl Cupti {
    fn load(path: PathBuf) -> Cupti {
        // SAFETY: loading libcupti runs only its static initialisers, which
        // need no GPU (the point of this test).
        let lib =
            unsafe { Library::new(&path) }.unwrap_or_else(|e| panic!("cannot load {}: {e}", path.display()));
        let mut version = 0;
        // SAFETY: the symbol has this C signature in every CUPTI release.
        let rc = unsafe {
            let f = lib.get::<GetVersion>(b"cuptiGetVersion\0").unwrap();
            f(&mut version)
        };
        assert_eq!(rc, CUPTI_SUCCESS, "cuptiGetVersion of {}", path.display());
        Cupti { path, lib, version }
    }

    fn layouts(&self) -> Layouts {
        Layouts::for_api_version(self.version).unwrap_or_else(|e| panic!("{}: {e}", self.path.display()))
    }

    fn ver(&self) -> Ver {
        match self.version {
            28 => V12,
            130001 => V13,
            v => panic!("{}: unexpected CUPTI API version {v}", self.path.display()),
        }
    }

    /// Walks `bytes` with CUPTI's iterator: the offsets of the records it
    /// returns, and the status it stopped with.
    fn walk(&self, bytes: &[u8]) -> (Vec<usize>, u32) {
        let mut store = vec![0u64; bytes.len().div_ceil(8).max(1)];
        // SAFETY: `store` has at least `bytes.len()` bytes.
        let base = store.as_mut_ptr() as *mut u8;
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), base, bytes.len()) };
        // SAFETY: C signature of cuptiActivityGetNextRecord.
        let next = unsafe {
            self.lib
                .get::<GetNextRecord>(b"cuptiActivityGetNextRecord\0")
                .unwrap()
        };
        let mut rec: *mut u8 = std::ptr::null_mut();
        let mut offsets = Vec::new();
        loop {
            // SAFETY: CUPTI reads only the first `bytes.len()` bytes of the
            // aligned buffer and writes `rec`.
            let rc = unsafe { next(base, bytes.len(), &mut rec) };
            if rc != CUPTI_SUCCESS {
                return (offsets, rc);
            }
            let off = rec as usize - base as usize;
            assert!(off < bytes.len(), "CUPTI returned a record outside the buffer");
            offsets.push(off);
            assert!(
                offsets.len() <= bytes.len() / 8 + 1,
                "CUPTI iterator does not advance"
            );
        }
    }

    fn callback_name(&self, domain: u32, cbid: u32) -> String {
        // SAFETY: C signature of cuptiGetCallbackName; the name is a static
        // string owned by CUPTI.
        unsafe {
            let f = self
                .lib
                .get::<GetCallbackName>(b"cuptiGetCallbackName\0")
                .unwrap();
            let mut name: *const c_char = std::ptr::null();
            let rc = f(domain, cbid, &mut name);
            assert_eq!(rc, CUPTI_SUCCESS, "cuptiGetCallbackName({domain}, {cbid})");
            CStr::from_ptr(name).to_string_lossy().into_owned()
        }
    }
}

/// The libraries to test, loaded once per process and never unloaded
/// (unloading libcupti is not something it supports).
fn libraries() -> Option<&'static [Cupti]> {
    static LIBS: std::sync::OnceLock<Option<Vec<Cupti>>> = std::sync::OnceLock::new();
    LIBS.get_or_init(load_libraries).as_deref()
}

fn load_libraries() -> Option<Vec<Cupti>> {
    let ci = std::env::var("CI").is_ok_and(|v| v == "true");
    let paths: Vec<PathBuf> = match std::env::var("GAPSCOPE_CUPTI_LIBS") {
        Ok(v) if !v.is_empty() => v.split(':').map(PathBuf::from).collect(),
        _ => {
            assert!(
                !ci,
                "CI=true but GAPSCOPE_CUPTI_LIBS is not set: .ci/run must download the libcupti wheels"
            );
            let dir = std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/gapscope-cupti/lib"));
            let found: Vec<PathBuf> = dir
                .iter()
                .flat_map(|d| [d.join("libcupti.so.13"), d.join("libcupti.so.12")])
                .filter(|p| p.exists())
                .collect();
            // Never skipped: a decoder not checked against the real library
            // is exactly what this test exists to catch.
            assert!(
                !found.is_empty(),
                "no libcupti: run .ci/run once (it fills ~/.cache/gapscope-cupti/lib from the \
                 nvidia-cuda-cupti wheels) or set GAPSCOPE_CUPTI_LIBS"
            );
            found
        }
    };
    for p in &paths {
        assert!(
            p.exists(),
            "GAPSCOPE_CUPTI_LIBS names {}, which does not exist",
            p.display()
        );
    }
    let libs: Vec<Cupti> = paths.into_iter().map(Cupti::load).collect();
    let mut versions: Vec<u32> = libs.iter().map(|l| l.version).collect();
    versions.sort_unstable();
    assert_eq!(
        versions,
        vec![28, 130001],
        "both CUPTI 12.9 and 13.0 must be checked"
    );
    Some(libs)
}

#[test]
fn cupti_walks_our_buffers_record_for_record() {
    let Some(libs) = libraries() else { return };
    for lib in libs {
        let v = lib.ver();
        let layouts = lib.layouts();
        let (buf, names) = sample(v);
        let (theirs, rc) = lib.walk(&buf.bytes);
        assert_eq!(rc, CUPTI_ERROR_MAX_LIMIT_REACHED, "{}", lib.path.display());
        let ours: Vec<usize> = RecordIter::new(&buf.bytes, &layouts)
            .map(|r| r.unwrap().0)
            .collect();
        assert_eq!(theirs, ours, "{}", lib.path.display());
        assert_eq!(ours, buf.offsets);

        // Decoding the records CUPTI delimits gives the same trace as
        // walking the buffer ourselves.
        let mut by_cupti = Decoder::new(layouts, names.clone());
        for (i, &off) in theirs.iter().enumerate() {
            let end = theirs.get(i + 1).copied().unwrap_or(buf.bytes.len());
            by_cupti.decode_one(&buf.bytes[off..end]);
        }
        let mut by_us = Decoder::new(layouts, names.clone());
        by_us.decode_buffer(&buf.bytes);
        let (a, sa) = by_cupti.finish();
        let (b, sb) = by_us.finish();
        assert_eq!(sa, sb);
        let (a, b) = (a.finish(), b.finish());
        assert_eq!(a.gpu.len(), 9);
        assert_eq!(format!("{:?}", a.gpu), format!("{:?}", b.gpu));
        assert_eq!(format!("{:?}", a.runtime), format!("{:?}", b.runtime));
    }
}

#[test]
fn cupti_record_sizes_equal_our_size_table() {
    let Some(libs) = libraries() else { return };
    for lib in libs {
        let layouts = lib.layouts();
        let known = [
            kind::MEMCPY,
            kind::MEMSET,
            kind::KERNEL,
            kind::DRIVER,
            kind::RUNTIME,
            kind::CONTEXT,
            kind::CONCURRENT_KERNEL,
            kind::NAME,
            kind::MARKER,
            kind::MARKER_DATA,
            kind::OVERHEAD,
            kind::MEMCPY2,
            kind::CUDA_EVENT,
            kind::STREAM,
            kind::SYNCHRONIZATION,
            kind::EXTERNAL_CORRELATION,
            kind::INTERNAL_LAUNCH_API,
            kind::GRAPH_TRACE,
        ];
        for k in known {
            // Kind k first, then an EXTERNAL_CORRELATION kind at every 8-byte
            // slot: CUPTI's second record starts exactly where k ends.
            let mut bytes = vec![0u8; 512];
            for slot in (8..512).step_by(8) {
                bytes[slot..slot + 4].copy_from_slice(&kind::EXTERNAL_CORRELATION.to_le_bytes());
            }
            bytes[0..4].copy_from_slice(&k.to_le_bytes());
            let (offsets, _) = lib.walk(&bytes);
            assert!(offsets.len() >= 2, "{}: kind {k} not walked", lib.path.display());
            assert_eq!(
                Some(offsets[1]),
                layouts.record_size(k),
                "{}: kind {k}",
                lib.path.display()
            );
            let ours: Vec<usize> = RecordIter::new(&bytes, &layouts)
                .take(2)
                .map(|r| r.unwrap().0)
                .collect();
            assert_eq!(ours, offsets[..2]);
        }
        // Kinds neither knows: CUPTI says INVALID_KIND, we stop the walk.
        for k in [0u32, 9999] {
            let mut bytes = vec![0u8; 64];
            bytes[0..4].copy_from_slice(&k.to_le_bytes());
            let (offsets, rc) = lib.walk(&bytes);
            assert_eq!((offsets.len(), rc), (0, CUPTI_ERROR_INVALID_KIND), "kind {k}");
            assert_eq!(
                RecordIter::new(&bytes, &layouts).next(),
                Some(Err(WalkError::UnknownKind { offset: 0, kind: k }))
            );
        }
    }
}

#[test]
fn cupti_and_we_agree_on_cut_off_buffers() {
    let Some(libs) = libraries() else { return };
    for lib in libs {
        let layouts = lib.layouts();
        let (buf, _) = sample(lib.ver());
        for cut in (0..=buf.bytes.len()).step_by(8) {
            let bytes = &buf.bytes[..cut];
            let (theirs, _) = lib.walk(bytes);
            let ours: Vec<usize> = RecordIter::new(bytes, &layouts)
                .filter_map(|r| r.ok())
                .map(|r| r.0)
                .collect();
            assert_eq!(theirs, ours, "{}: valid size {cut}", lib.path.display());
        }
    }
}

#[test]
fn cupti_callback_names_normalise_to_the_function_names() {
    let Some(libs) = libraries() else { return };
    for lib in libs {
        for (domain, cbid, want) in [
            (DOMAIN_RUNTIME_API, 211, "cudaLaunchKernel"),
            (DOMAIN_RUNTIME_API, 41, "cudaMemcpyAsync"),
            (DOMAIN_RUNTIME_API, 51, "cudaMemsetAsync"),
            (DOMAIN_RUNTIME_API, 131, "cudaStreamSynchronize"),
            (DOMAIN_RUNTIME_API, 165, "cudaDeviceSynchronize"),
            (DOMAIN_DRIVER_API, 307, "cuLaunchKernel"),
            (DOMAIN_DRIVER_API, 514, "cuGraphLaunch"),
            (DOMAIN_DRIVER_API, 277, "cuMemcpyHtoDAsync"),
        ] {
            let raw = lib.callback_name(domain, cbid);
            assert_eq!(
                normalize_callback_name(&raw),
                want,
                "{}: {raw}",
                lib.path.display()
            );
        }
        if lib.version >= 130000 {
            let raw = lib.callback_name(DOMAIN_RUNTIME_API, 505);
            assert_eq!(normalize_callback_name(&raw), "__cudaLaunchKernel", "{raw}");
        }
    }
}

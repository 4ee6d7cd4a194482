//! The live collector without a GPU (feature `cupti`): a missing libcupti and
//! a libcupti with no driver are clear errors, never a panic. Each case runs
//! in a child process, because the library cudarc loads is process-wide.
//! The libraries come from `GAPSCOPE_CUPTI_LIBS` (set by .ci/run) or the
//! cache it fills, as in cupti_oracle.

#![cfg(feature = "cupti")]

use gapscope_collectors::cupti::decode::{CUPTI_12_9, CUPTI_13_0};
use gapscope_collectors::cupti::live::{check_library, Collector, LiveError, Options};
use std::path::PathBuf;
use std::process::Command;

/// Runs test `name` again in a child with `LD_LIBRARY_PATH=dir` and
/// `GAPSCOPE_LIVE_CHILD=1`; returns its stdout.
fn child(name: &str, dir: &str) -> String {
    let out = Command::new(std::env::current_exe().unwrap())
        .args([name, "--exact", "--nocapture", "--test-threads=1"])
        .env("GAPSCOPE_LIVE_CHILD", "1")
        .env("LD_LIBRARY_PATH", dir)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "child {name} failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

fn in_child() -> bool {
    std::env::var_os("GAPSCOPE_LIVE_CHILD").is_some()
}

fn library(major: &str) -> Option<PathBuf> {
    let ci = std::env::var("CI").is_ok_and(|v| v == "true");
    let from_env = std::env::var("GAPSCOPE_CUPTI_LIBS").ok().and_then(|v| {
        v.split(':').map(PathBuf::from).find(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().ends_with(major))
        })
    });
    let p = from_env.or_else(|| {
        std::env::var_os("HOME").map(|h| {
            PathBuf::from(h)
                .join(".cache/gapscope-cupti/lib")
                .join(format!("libcupti.so.{major}"))
        })
    });
    match p.filter(|p| p.exists()) {
        Some(p) => Some(p),
        None => {
            assert!(
                !ci,
                "CI=true but no libcupti.so.{major}: .ci/run must download it"
            );
            eprintln!("cupti_live NOT RUN: no libcupti.so.{major} (see cupti_oracle)");
            None
        }
    }
}

/// A directory holding only `libcupti.so.<major>` (a link to `lib`).
fn lonely_dir(lib: &PathBuf, major: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("gapscope-cupti-live-{}-{major}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    std::os::unix::fs::symlink(lib, d.join(format!("libcupti.so.{major}"))).unwrap();
    d
}

#[test]
fn missing_library_is_a_clear_error() {
    if in_child() {
        match Collector::start(Options::default()) {
            Err(LiveError::LibraryNotFound { tried }) => println!("NOT FOUND: {tried}"),
            Err(e) => println!("OTHER ERROR: {e}"),
            Ok(_) => println!("STARTED"),
        }
        match check_library() {
            Err(e) => println!("CHECK: {e}"),
            Ok((v, _)) => println!("CHECK OK {v}"),
        }
        return;
    }
    // Some machines have a system libcupti (a CUDA toolkit in the ld cache):
    // the test means something only where none is installed.
    let system = Command::new("sh")
        .args(["-c", "ldconfig -p 2>/dev/null | grep -q libcupti"])
        .status()
        .is_ok_and(|s| s.success());
    let out = child("missing_library_is_a_clear_error", "/nonexistent");
    if system {
        assert!(!out.contains("panicked"), "{out}");
        return;
    }
    assert!(out.contains("NOT FOUND: libcupti.so,"), "{out}");
    assert!(out.contains("CHECK: CUPTI library not found"), "{out}");
    assert!(out.contains("LD_LIBRARY_PATH"), "{out}");
}

#[test]
fn libcupti_without_a_driver_is_a_clear_error() {
    if in_child() {
        match check_library() {
            Ok((v, l)) => println!("VERSION {v} {:?}", l.family),
            Err(e) => println!("CHECK ERROR {e}"),
        }
        match Collector::start(Options::default()) {
            Err(e) => println!("START ERROR {e}"),
            Ok(c) => match c.stop() {
                Ok(cap) => println!("STOPPED {} rows", cap.builder.row_count()),
                Err(e) => println!("STOP ERROR {e}"),
            },
        }
        // A second start after a failed one fails the same way, not with
        // "already running".
        match Collector::start(Options::default()) {
            Err(LiveError::AlreadyRunning) => println!("STUCK"),
            _ => println!("SECOND OK"),
        }
        return;
    }
    for (major, layouts) in [("13", CUPTI_13_0), ("12", CUPTI_12_9)] {
        let Some(lib) = library(major) else { continue };
        let dir = lonely_dir(&lib, major);
        let out = child(
            "libcupti_without_a_driver_is_a_clear_error",
            dir.to_str().unwrap(),
        );
        let want = if major == "13" { 130001 } else { 28 };
        assert!(
            out.contains(&format!("VERSION {want} {:?}", layouts.family)),
            "{out}"
        );
        // No driver: CUPTI refuses to subscribe or enable, and says so.
        assert!(
            out.contains("START ERROR cupti") || out.contains("START ERROR CUPTI"),
            "{out}"
        );
        assert!(out.contains("SECOND OK"), "{out}");
        assert!(!out.contains("panicked"), "{out}");
        let _ = std::fs::remove_dir_all(dir);
    }
}

/// On a GPU only (`--ignored`): drives the CUDA driver directly (no toolkit,
/// no Python) under the collector and checks what comes back. Needs
/// libcuda.so.1 and a libcupti 13.0 on LD_LIBRARY_PATH.
#[test]
#[ignore = "needs a GPU"]
fn gpu_smoke() {
    use gapscope_collectors::trace::{CopyKind, GpuKind, MemKind};
    use std::ffi::{c_char, c_int, c_uint, c_void};
    type F0 = unsafe extern "C" fn(c_uint) -> c_int;
    // SAFETY: the driver API's C signatures, called in the documented order.
    unsafe {
        let cuda = libloading::Library::new("libcuda.so.1").expect("libcuda.so.1");
        macro_rules! sym {
            ($name:literal, $t:ty) => {
                *cuda
                    .get::<$t>(concat!($name, "\0").as_bytes())
                    .expect($name)
            };
        }
        let collector = Collector::start(Options::default()).expect("collector starts");
        let cu_init: F0 = sym!("cuInit", F0);
        assert_eq!(cu_init(0), 0, "cuInit");
        let dev_get: unsafe extern "C" fn(*mut c_int, c_int) -> c_int = sym!("cuDeviceGet", _);
        let ctx_retain: unsafe extern "C" fn(*mut *mut c_void, c_int) -> c_int =
            sym!("cuDevicePrimaryCtxRetain", _);
        let ctx_set: unsafe extern "C" fn(*mut c_void) -> c_int = sym!("cuCtxSetCurrent", _);
        let mem_alloc: unsafe extern "C" fn(*mut u64, usize) -> c_int = sym!("cuMemAlloc_v2", _);
        let host_alloc: unsafe extern "C" fn(*mut *mut c_void, usize) -> c_int = sym!("cuMemAllocHost_v2", _);
        let htod: unsafe extern "C" fn(u64, *const c_void, usize) -> c_int = sym!("cuMemcpyHtoD_v2", _);
        let htod_async: unsafe extern "C" fn(u64, *const c_void, usize, *mut c_void) -> c_int =
            sym!("cuMemcpyHtoDAsync_v2", _);
        let memset: unsafe extern "C" fn(u64, u8, usize) -> c_int = sym!("cuMemsetD8_v2", _);
        let load: unsafe extern "C" fn(*mut *mut c_void, *const c_void) -> c_int =
            sym!("cuModuleLoadData", _);
        let get_fn: unsafe extern "C" fn(*mut *mut c_void, *mut c_void, *const c_char) -> c_int =
            sym!("cuModuleGetFunction", _);
        #[allow(clippy::type_complexity)]
        let launch: unsafe extern "C" fn(
            *mut c_void,
            c_uint,
            c_uint,
            c_uint,
            c_uint,
            c_uint,
            c_uint,
            c_uint,
            *mut c_void,
            *mut *mut c_void,
            *mut *mut c_void,
        ) -> c_int = sym!("cuLaunchKernel", _);
        let sync: unsafe extern "C" fn() -> c_int = sym!("cuCtxSynchronize", _);

        let (mut dev, mut ctx) = (0, std::ptr::null_mut());
        assert_eq!(dev_get(&mut dev, 0), 0);
        assert_eq!(ctx_retain(&mut ctx, dev), 0);
        assert_eq!(ctx_set(ctx), 0);
        const N: usize = 8 << 20;
        let mut d = 0u64;
        assert_eq!(mem_alloc(&mut d, N), 0);
        let pageable = vec![1u8; N];
        let mut pinned = std::ptr::null_mut();
        assert_eq!(host_alloc(&mut pinned, N), 0);
        let ptx = b".version 7.0\n.target sm_50\n.address_size 64\n.visible .entry noop()\n{\n ret;\n}\n\0";
        let (mut module, mut func) = (std::ptr::null_mut(), std::ptr::null_mut());
        assert_eq!(load(&mut module, ptx.as_ptr() as *const c_void), 0, "PTX loads");
        assert_eq!(get_fn(&mut func, module, c"noop".as_ptr()), 0);
        for _ in 0..3 {
            assert_eq!(htod(d, pageable.as_ptr() as *const c_void, N), 0);
            assert_eq!(htod_async(d, pinned, N, std::ptr::null_mut()), 0);
            assert_eq!(memset(d, 0, N), 0);
            for _ in 0..100 {
                let r = launch(
                    func,
                    1,
                    1,
                    1,
                    32,
                    1,
                    1,
                    0,
                    std::ptr::null_mut(),
                    std::ptr::null_mut(),
                    std::ptr::null_mut(),
                );
                assert_eq!(r, 0);
            }
            assert_eq!(sync(), 0);
        }
        let cap = collector.stop().expect("collector stops");
        println!("CUPTI API version {}", cap.api_version);
        println!("stats: {:?}", cap.stats);
        let t = cap.builder.finish();
        let count = |f: &dyn Fn(usize) -> bool| (0..t.gpu.len()).filter(|&i| f(i)).count();
        let kernels = count(&|i| t.gpu.kind[i] == GpuKind::Kernel);
        let pageable_copies =
            count(&|i| t.gpu.copy_kind[i] == CopyKind::HtoD && t.gpu.src_mem[i] == MemKind::Pageable);
        let pinned_copies =
            count(&|i| t.gpu.copy_kind[i] == CopyKind::HtoD && t.gpu.src_mem[i] == MemKind::Pinned);
        let memsets = count(&|i| t.gpu.kind[i] == GpuKind::Memset);
        let syncs = count(&|i| t.gpu.kind[i] == GpuKind::Sync);
        let unlinked = count(&|i| t.gpu.is_busy(i) && t.links.gpu_launch[i].is_none());
        println!(
            "kernels {kernels} pageable HtoD {pageable_copies} pinned HtoD {pinned_copies} memsets {memsets} syncs {syncs} unlinked {unlinked} runtime/driver calls {}",
            t.runtime.len()
        );
        let bytes_ok = (0..t.gpu.len())
            .filter(|&i| t.gpu.kind[i] == GpuKind::Memcpy)
            .all(|i| t.gpu.bytes[i] == N as u64);
        let me = std::process::id() as i64;
        let tids_ok = (0..t.runtime.len()).all(|i| t.threads.pid[t.runtime.thread[i].0 as usize] == me);
        let names_ok = (0..t.gpu.len())
            .filter(|&i| t.gpu.kind[i] == GpuKind::Kernel)
            .all(|i| t.strings.get(t.gpu.name[i]) == "noop");
        println!("copy bytes ok {bytes_ok}, pids ok {tids_ok}, kernel names ok {names_ok}");
        assert_eq!(kernels, 300);
        assert_eq!(pageable_copies, 3);
        assert_eq!(pinned_copies, 3);
        assert_eq!(memsets, 3);
        assert!(syncs >= 3, "context syncs recorded");
        assert_eq!(unlinked, 0, "every GPU record links to its driver call");
        assert!(bytes_ok && tids_ok && names_ok);
        assert_eq!(cap.stats.dropped_by_cupti, 0);
        assert_eq!(cap.stats.zero_timestamp + cap.stats.end_before_start, 0);
    }
}

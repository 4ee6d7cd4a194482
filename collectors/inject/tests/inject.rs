//! The injection library on a machine without a GPU: its exports, and what
//! a program that loads it (`host.c`, a stand-in for the CUDA driver that
//! dlopens `CUDA_INJECTION64_PATH` and calls `InitializeInjection`) sees
//! when recording cannot start, when it forks, and when NVTX comes first.
//! Every case runs in a child process, never in the test process.
//!
//! The real libcupti (12.9.79 and 13.0.85) and NVTX's
//! `libnvtx3interop.so.1` come from the PyPI wheels `.ci/run` downloads
//! into `~/.cache/gapscope-cupti/lib` (override with `GAPSCOPE_CUPTI_CACHE`,
//! or name the libcupti files in `GAPSCOPE_CUPTI_LIBS`); under `CI=true` a
//! missing one fails the test. The library under test is
//! `libgapscope_inject.so` from this build (`cargo build -p
//! gapscope-inject`).

use gapscope_collectors::capture;
use gapscope_collectors::trace::GpuKind;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

fn ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true")
}

/// The cdylib cargo built for this test run: next to this test binary in
/// `target/<profile>/deps` (cargo copies it up to `target/<profile>` only
/// when the package itself is built, so that copy may be stale).
fn inject_lib() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let deps = exe.parent().unwrap();
    let p = deps.join("libgapscope_inject.so");
    assert!(
        p.is_file(),
        "{} is missing: run `cargo build -p gapscope-inject`",
        p.display()
    );
    p
}

/// `host.c`, compiled once per test run with the system C compiler.
fn host() -> &'static Path {
    static HOST: OnceLock<PathBuf> = OnceLock::new();
    HOST.get_or_init(|| {
        let dir = scratch("host");
        let out = dir.join("host");
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/host.c");
        let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
        let st = Command::new(&cc)
            .args(["-O1", "-Wall", "-o"])
            .arg(&out)
            .arg(&src)
            .arg("-ldl")
            .status()
            .unwrap_or_else(|e| panic!("cannot run the C compiler `{cc}`: {e}"));
        assert!(st.success(), "{cc} failed on {}", src.display());
        out
    })
}

/// A fresh directory for one case.
fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("gapscope-inject-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn cache_dir() -> PathBuf {
    match std::env::var_os("GAPSCOPE_CUPTI_CACHE") {
        Some(d) => PathBuf::from(d).join("lib"),
        None => PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join(".cache/gapscope-cupti/lib"),
    }
}

/// `libcupti.so.<major>` from the wheels, or `None` (outside CI) with a note.
fn cupti(major: &str) -> Option<PathBuf> {
    let from_env = std::env::var("GAPSCOPE_CUPTI_LIBS").ok().and_then(|v| {
        v.split(':').map(PathBuf::from).find(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().ends_with(&format!(".so.{major}")))
        })
    });
    let p = from_env.unwrap_or_else(|| cache_dir().join(format!("libcupti.so.{major}")));
    if p.is_file() {
        return Some(p);
    }
    assert!(
        !ci(),
        "CI=true but no libcupti.so.{major}: .ci/run must download it"
    );
    eprintln!(
        "inject NOT RUN with libcupti.so.{major}: none in {} (see .ci/run)",
        p.display()
    );
    None
}

fn nvtx_lib() -> Option<PathBuf> {
    let p = cache_dir().join("libnvtx3interop.so.1");
    if p.is_file() {
        return Some(p);
    }
    assert!(
        !ci(),
        "CI=true but no {}: .ci/run must download the nvidia-nvtx wheel",
        p.display()
    );
    eprintln!("inject NVTX cases NOT RUN: no {}", p.display());
    None
}

/// A machine with a CUDA driver records for real; the no-driver
/// expectations do not hold there.
fn has_driver() -> bool {
    // SAFETY: only probes whether the library loads.
    unsafe { libloading::Library::new("libcuda.so.1") }.is_ok()
}

/// Runs `host ARGS` with only the variables given (plus PATH), in a process
/// group of its own, and kills the whole group after 60 s: a hang (of the
/// host or of a child it forked) is a failure, not a stuck test. Output goes
/// through files, so a hung child holding them cannot block the test.
fn run_host(args: &[&str], env: &[(&str, &Path)]) -> Output {
    use std::os::unix::process::CommandExt;
    static RUN: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = RUN.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    let io = scratch(&format!("io{n}"));
    let (out_path, err_path) = (io.join("stdout"), io.join("stderr"));
    let mut cmd = Command::new(host());
    cmd.process_group(0)
        .args(args)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("CUDA_INJECTION64_PATH", inject_lib())
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out_path).unwrap())
        .stderr(std::fs::File::create(&err_path).unwrap());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().unwrap();
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if start.elapsed() > Duration::from_secs(60) {
            let _ = Command::new("kill")
                .args(["-KILL", "--", &format!("-{}", child.id())])
                .status();
            let _ = child.wait();
            panic!(
                "host {args:?} hung (killed after 60 s)\nstdout:\n{}\nstderr:\n{}",
                std::fs::read_to_string(&out_path).unwrap_or_default(),
                std::fs::read_to_string(&err_path).unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let out = Output {
        status,
        stdout: std::fs::read(&out_path).unwrap_or_default(),
        stderr: std::fs::read(&err_path).unwrap_or_default(),
    };
    let _ = std::fs::remove_dir_all(io);
    out
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The `gapscope:` lines of a stderr.
fn our_lines(stderr: &[u8]) -> Vec<String> {
    text(stderr)
        .lines()
        .filter(|l| l.starts_with("gapscope:"))
        .map(str::to_string)
        .collect()
}

/// The file names in `dir`, sorted.
fn files(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .map(|r| {
            r.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// The pid `host` printed first (`host PID: ...`).
fn host_pid(stdout: &[u8]) -> u32 {
    let t = text(stdout);
    t.lines()
        .find_map(|l| l.strip_prefix("host ")?.split(':').next()?.parse().ok())
        .unwrap_or_else(|| panic!("no pid in {t}"))
}

#[test]
fn exports_the_entry_points_the_driver_and_nvtx_look_up() {
    // SAFETY: loading runs no code of ours (no constructors); the symbols
    // are only looked up, never called, in this process.
    let lib = unsafe { libloading::Library::new(inject_lib()) }.expect("the cdylib loads");
    for name in [
        "InitializeInjection",
        "InitializeInjectionNvtx2",
        "InitializeInjectionNvtx",
    ] {
        // SAFETY: a lookup only.
        let sym = unsafe { lib.get::<unsafe extern "C" fn()>(name.as_bytes()) };
        assert!(sym.is_ok(), "{name} is not exported");
    }
}

#[test]
fn libcupti_without_a_driver_is_one_line_and_the_programs_own_exit() {
    for major in ["13", "12"] {
        let Some(lib) = cupti(major) else { continue };
        let dir = scratch(&format!("nodriver{major}"));
        let out = run_host(
            &["7"],
            &[("GAPSCOPE_CUPTI_LIBS", &lib), ("GAPSCOPE_CAPTURE_DIR", &dir)],
        );
        let pid = host_pid(&out.stdout);
        assert_eq!(out.status.code(), Some(7), "{}", text(&out.stderr));
        assert!(text(&out.stdout).contains("InitializeInjection returned 1"));
        let lines = our_lines(&out.stderr);
        if has_driver() {
            assert!(lines.is_empty(), "{lines:?}");
            assert_eq!(
                files(&dir),
                vec![format!("gapscope-{pid}.gst"), format!("gapscope-{pid}.started")]
            );
            continue;
        }
        assert_eq!(lines.len(), 1, "{lines:?}");
        let l = &lines[0];
        assert!(
            l.starts_with(&format!(
                "gapscope: pid {pid}: not recording: cuptiSubscribe failed"
            )),
            "{l}"
        );
        assert!(l.contains("is a CUDA driver"), "{l}");
        // The same line is kept for `gapscope record`; no capture.
        assert_eq!(files(&dir), vec![format!("gapscope-{pid}.err")]);
        let kept = std::fs::read_to_string(dir.join(format!("gapscope-{pid}.err"))).unwrap();
        assert_eq!(kept.trim_end(), l);
    }
}

#[test]
fn a_missing_libcupti_is_one_line() {
    let dir = scratch("missing");
    let missing = Path::new("/nonexistent/libcupti.so.13");
    let out = run_host(
        &["7"],
        &[("GAPSCOPE_CUPTI_LIBS", missing), ("GAPSCOPE_CAPTURE_DIR", &dir)],
    );
    assert_eq!(out.status.code(), Some(7));
    let lines = our_lines(&out.stderr);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(
        lines[0].contains(
            "not recording: GAPSCOPE_CUPTI_LIBS names /nonexistent/libcupti.so.13, which cannot be loaded"
        ),
        "{}",
        lines[0]
    );
    assert!(lines[0].contains("No such file or directory"), "{}", lines[0]);

    // No libcupti anywhere on the path: the collector's own message.
    let system = Command::new("sh")
        .args(["-c", "ldconfig -p 2>/dev/null | grep -q libcupti"])
        .status()
        .is_ok_and(|s| s.success());
    if !system {
        let out = run_host(
            &["7"],
            &[
                ("GAPSCOPE_CAPTURE_DIR", &dir),
                ("LD_LIBRARY_PATH", Path::new("/nonexistent")),
            ],
        );
        assert_eq!(out.status.code(), Some(7));
        let lines = our_lines(&out.stderr);
        assert_eq!(lines.len(), 1, "{lines:?}");
        assert!(
            lines[0].contains("not recording: CUPTI library not found (tried libcupti.so,"),
            "{}",
            lines[0]
        );
    }

    // Several libraries named, or no capture directory: refused the same way.
    let c = Path::new("/a/libcupti.so.13:/b/libcupti.so.12");
    let out = run_host(
        &["7"],
        &[("GAPSCOPE_CUPTI_LIBS", c), ("GAPSCOPE_CAPTURE_DIR", &dir)],
    );
    assert_eq!(out.status.code(), Some(7));
    let lines = our_lines(&out.stderr);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(
        lines[0].contains("GAPSCOPE_CUPTI_LIBS names 2 libraries"),
        "{}",
        lines[0]
    );
    let out = run_host(&["7"], &[("GAPSCOPE_CUPTI_LIBS", missing)]);
    assert_eq!(out.status.code(), Some(7));
    let lines = our_lines(&out.stderr);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(
        lines[0].contains("not recording: GAPSCOPE_CAPTURE_DIR is not set"),
        "{}",
        lines[0]
    );
}

/// Two different libcupti files in one process (an unversioned
/// `libcupti.so` of another install first on LD_LIBRARY_PATH): refused
/// before subscribing. A link to the same file (what `gapscope record`
/// puts there) is one library.
#[test]
fn two_libcupti_copies_are_refused() {
    let Some(lib) = cupti("13") else { return };
    let dir = scratch("twocopies");
    let (a, b) = (dir.join("a"), dir.join("b"));
    std::fs::create_dir_all(&a).unwrap();
    std::fs::create_dir_all(&b).unwrap();
    std::fs::copy(&lib, a.join("libcupti.so.13")).unwrap();
    std::fs::copy(&lib, b.join("libcupti.so")).unwrap();
    let caps = dir.join("captures");
    let env = [
        ("GAPSCOPE_CUPTI_LIBS", a.join("libcupti.so.13")),
        ("GAPSCOPE_CAPTURE_DIR", caps.clone()),
        ("LD_LIBRARY_PATH", b.clone()),
    ];
    let env: Vec<(&str, &Path)> = env.iter().map(|(k, v)| (*k, v.as_path())).collect();
    let out = run_host(&["7"], &env);
    assert_eq!(out.status.code(), Some(7));
    let lines = our_lines(&out.stderr);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(
        lines[0].contains("not recording: 2 different libcupti files are loaded"),
        "{}",
        lines[0]
    );
    assert!(
        lines[0].contains(&b.join("libcupti.so").display().to_string()),
        "{}",
        lines[0]
    );

    std::fs::remove_file(b.join("libcupti.so")).unwrap();
    std::os::unix::fs::symlink(a.join("libcupti.so.13"), b.join("libcupti.so")).unwrap();
    let out = run_host(&["7"], &env);
    assert_eq!(out.status.code(), Some(7));
    let lines = our_lines(&out.stderr);
    assert!(
        lines.iter().all(|l| !l.contains("different libcupti")),
        "{lines:?}"
    );
    let _ = std::fs::remove_dir_all(dir);
}

/// The exit path in a forked child: the child (which `exit()`s, so exit
/// handlers run in it) must neither write a capture nor hang on the lock a
/// thread of the parent held at fork time; the parent writes exactly one.
/// Self-test mode stands in for CUPTI (its thread takes the session lock
/// 40 ms at a time, so the fork very likely lands while it is held).
#[test]
fn a_forked_child_neither_flushes_nor_hangs() {
    for round in 0..5 {
        let dir = scratch(&format!("fork{round}"));
        let out = run_host(
            &["7", "fork"],
            &[
                ("GAPSCOPE_INJECT_SELFTEST", Path::new("1")),
                ("GAPSCOPE_CAPTURE_DIR", &dir),
            ],
        );
        let stdout = text(&out.stdout);
        assert_eq!(out.status.code(), Some(7), "{stdout}{}", text(&out.stderr));
        assert!(
            stdout.contains("exited 8"),
            "the child exits normally with its own code: {stdout}"
        );
        assert!(our_lines(&out.stderr).is_empty(), "{}", text(&out.stderr));
        let pid = host_pid(&out.stdout);
        assert_eq!(
            files(&dir),
            vec![format!("gapscope-{pid}.gst"), format!("gapscope-{pid}.started")]
        );
        let path = dir.join(format!("gapscope-{pid}.gst"));
        let t = capture::read_file(&path).unwrap();
        assert_eq!(t.gpu.kind.iter().filter(|&&k| k == GpuKind::Kernel).count(), 1);
        assert_eq!(t.threads.pid, vec![pid as i64]);
        let info = capture::info(&std::fs::read(&path).unwrap(), "capture").unwrap();
        assert!(
            info.recorded_from.starts_with(&format!("pid {pid}: ")),
            "{}",
            info.recorded_from
        );
        assert!(
            info.recorded_from.contains("host 7 fork"),
            "{}",
            info.recorded_from
        );
    }
    // With the real library and no driver, forking is as harmless.
    if let Some(lib) = cupti("13") {
        let dir = scratch("forklive");
        let out = run_host(
            &["7", "fork"],
            &[("GAPSCOPE_CUPTI_LIBS", &lib), ("GAPSCOPE_CAPTURE_DIR", &dir)],
        );
        assert_eq!(out.status.code(), Some(7), "{}", text(&out.stderr));
        assert!(text(&out.stdout).contains("exited 8"));
        assert!(our_lines(&out.stderr).len() <= 1, "{}", text(&out.stderr));
    }
}

/// A process that `exec`s another program: both record, one file each.
#[test]
fn an_exec_is_a_new_process_with_its_own_capture() {
    let dir = scratch("spawn");
    let out = run_host(
        &["0", "spawn"],
        &[
            ("GAPSCOPE_INJECT_SELFTEST", Path::new("1")),
            ("GAPSCOPE_CAPTURE_DIR", &dir),
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let gst: Vec<String> = files(&dir).into_iter().filter(|f| f.ends_with(".gst")).collect();
    assert_eq!(gst.len(), 2, "{gst:?}");
}

/// Stopping and writing at exit is bounded: past GAPSCOPE_EXIT_TIMEOUT the
/// program exits anyway, with its own code, and says so.
#[test]
fn the_exit_path_gives_up_after_its_timeout() {
    let dir = scratch("timeout");
    let out = run_host(
        &["7"],
        &[
            ("GAPSCOPE_INJECT_SELFTEST", Path::new("1")),
            ("GAPSCOPE_CAPTURE_DIR", &dir),
            ("GAPSCOPE_EXIT_TIMEOUT", Path::new("0")),
        ],
    );
    assert_eq!(out.status.code(), Some(7));
    let lines = our_lines(&out.stderr);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(
        lines[0].contains("capture not written: stopping CUPTI and writing took longer than 0 s"),
        "{}",
        lines[0]
    );
}

/// NVTX's own loader (libnvtx3interop from the nvidia-nvtx wheel) finds
/// `InitializeInjectionNvtx2` through NVTX_INJECTION64_PATH. When NVTX comes
/// before CUDA, that entry point starts the session (self-test: a capture
/// although InitializeInjection is never called); with the real libcupti
/// and no driver, ranges are pushed and popped and nothing crashes.
#[test]
fn nvtx_finds_the_entry_point_and_never_crashes_the_program() {
    let Some(nvtx) = nvtx_lib() else { return };
    let lib = inject_lib();
    let dir = scratch("nvtxonly");
    let out = run_host(
        &["5", "nvtx-only"],
        &[
            ("GAPSCOPE_INJECT_SELFTEST", Path::new("1")),
            ("GAPSCOPE_CAPTURE_DIR", &dir),
            ("NVTX_INJECTION64_PATH", &lib),
            ("NVTX_LIB", &nvtx),
        ],
    );
    assert_eq!(out.status.code(), Some(5), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("pushed and popped 3 NVTX ranges"));
    assert!(!text(&out.stdout).contains("InitializeInjection returned"));
    let pid = host_pid(&out.stdout);
    assert_eq!(
        files(&dir),
        vec![format!("gapscope-{pid}.gst"), format!("gapscope-{pid}.started")]
    );

    for major in ["13", "12"] {
        let Some(cupti) = cupti(major) else { continue };
        for mode in ["nvtx", "nvtx-only"] {
            let dir = scratch(&format!("nvtx{major}{mode}"));
            let out = run_host(
                &["5", mode],
                &[
                    ("GAPSCOPE_CUPTI_LIBS", &cupti),
                    ("GAPSCOPE_CAPTURE_DIR", &dir),
                    ("NVTX_INJECTION64_PATH", &lib),
                    ("NVTX_LIB", &nvtx),
                ],
            );
            assert_eq!(
                out.status.code(),
                Some(5),
                "{major} {mode}: {}",
                text(&out.stderr)
            );
            assert!(text(&out.stdout).contains("pushed and popped 3 NVTX ranges"));
            if !has_driver() {
                let lines = our_lines(&out.stderr);
                assert_eq!(lines.len(), 1, "{major} {mode}: {lines:?}");
                assert!(lines[0].contains("cuptiSubscribe failed"), "{}", lines[0]);
            }
        }
    }
}

//! `gapscope record` on a machine without a GPU: exit statuses, messages,
//! library choice and signals with ordinary commands, and the whole path
//! (environment, injection, one capture per process, merge, `analyze`)
//! with `collectors/inject/tests/host.c` standing in for a CUDA program and
//! the injection library in self-test mode (`GAPSCOPE_INJECT_SELFTEST=1`:
//! the real library with a stand-in for CUPTI, see
//! collectors/inject/src/selftest.rs).
//!
//! Cases that do not load the injection library point
//! `GAPSCOPE_INJECT_LIB` and `GAPSCOPE_CUPTI_LIBS` at placeholder files:
//! `record` only checks that they exist, and the commands never start CUDA.
//! The end-to-end cases need `libgapscope_inject.so` next to the gapscope
//! binary (`cargo build -p gapscope-inject`, which `cargo test --workspace`
//! and .ci/run do); under `CI=true` its absence fails them.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

fn gapscope() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_gapscope"));
    c.stdin(Stdio::null())
        .env_remove("GAPSCOPE_CUPTI_LIBS")
        .env_remove("GAPSCOPE_INJECT_LIB")
        .env_remove("GAPSCOPE_INJECT_SELFTEST")
        .env_remove("CUDA_INJECTION64_PATH")
        .env_remove("NVTX_INJECTION64_PATH");
    c
}

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("gapscope-record-cli-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Placeholder library files: enough for `record`'s checks.
fn placeholders() -> &'static (PathBuf, PathBuf) {
    static P: OnceLock<(PathBuf, PathBuf)> = OnceLock::new();
    P.get_or_init(|| {
        let d = scratch("placeholders");
        let (inject, cupti) = (d.join("libgapscope_inject.so"), d.join("libcupti.so.13"));
        std::fs::write(&inject, b"").unwrap();
        std::fs::write(&cupti, b"").unwrap();
        (inject, cupti)
    })
}

/// `gapscope record ARGS` with placeholder libraries, in `dir`.
fn record(dir: &Path, args: &[&str]) -> Output {
    let (inject, cupti) = placeholders();
    gapscope()
        .current_dir(dir)
        .arg("record")
        .args(args)
        .env("GAPSCOPE_INJECT_LIB", inject)
        .env("GAPSCOPE_CUPTI_LIBS", cupti)
        .output()
        .unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn the_programs_exit_status_is_records() {
    let d = scratch("exit3");
    let out = record(&d, &["--", "sh", "-c", "echo out; echo err >&2; exit 3"]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    // The program's own output passes through untouched.
    assert_eq!(text(&out.stdout), "out\n");
    assert!(err.contains("\nerr\n"), "{err}");
    assert!(
        err.contains("gapscope: recording `sh -c 'echo out; echo err >&2; exit 3'` with libcupti"),
        "{err}"
    );
    assert!(err.contains("(from GAPSCOPE_CUPTI_LIBS)"), "{err}");
    // It failed, so its status wins over "nothing recorded"; the line is there.
    assert!(err.contains("gapscope: nothing was recorded: `sh -c"), "{err}");
    assert!(!d.join("run.gst").exists());
}

#[test]
fn nothing_recorded_is_exit_4_with_one_line() {
    let d = scratch("true");
    let out = record(&d, &["--", "true"]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{err}");
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 2, "{err}");
    assert_eq!(
        lines[1],
        "gapscope: nothing was recorded: `true` never started CUDA (no process called cuInit), so there was no \
         GPU work to capture"
    );
}

#[test]
fn a_missing_command_is_127_and_a_bad_one_126() {
    let d = scratch("missing");
    let out = record(&d, &["--", "gapscope-no-such-command", "x"]);
    assert_eq!(out.status.code(), Some(127));
    assert!(
        text(&out.stderr).contains("gapscope: cannot run `gapscope-no-such-command`: command not found"),
        "{}",
        text(&out.stderr)
    );
    let script = d.join("not-executable");
    std::fs::write(&script, "#!/bin/sh\n").unwrap();
    let out = record(&d, &["--", script.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(126), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("Permission denied"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn the_command_goes_after_a_double_dash() {
    let d = scratch("usage");
    for args in [&["true"][..], &[][..], &["-o", "x.gst"][..]] {
        let out = record(&d, args);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.starts_with("error: "), "{args:?}: {err}");
        assert!(err.contains("Usage: gapscope record"), "{args:?}: {err}");
    }
}

#[test]
fn exactly_one_libcupti_or_a_clear_refusal() {
    let d = scratch("libs");
    let (inject, cupti) = placeholders();
    let two = format!("{}:{}", cupti.display(), d.join("libcupti.so.12").display());
    std::fs::write(d.join("libcupti.so.12"), b"").unwrap();
    let run = |libs: &str| {
        gapscope()
            .current_dir(&d)
            .args(["record", "--", "true"])
            .env("GAPSCOPE_INJECT_LIB", inject)
            .env("GAPSCOPE_CUPTI_LIBS", libs)
            .output()
            .unwrap()
    };
    let out = run(&two);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(
        err.starts_with("gapscope: GAPSCOPE_CUPTI_LIBS names 2 libraries ("),
        "{err}"
    );
    assert!(err.contains("a recording uses exactly one libcupti"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");

    let out = run("/nonexistent/libcupti.so.13");
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr)
            .contains("GAPSCOPE_CUPTI_LIBS names /nonexistent/libcupti.so.13, which does not exist"),
        "{}",
        text(&out.stderr)
    );

    // Two different libcupti files in one CUDA toolkit: refused too.
    let toolkit = d.join("cuda");
    let lib64 = toolkit.join("extras/CUPTI/lib64");
    std::fs::create_dir_all(&lib64).unwrap();
    std::fs::write(lib64.join("libcupti.so.13"), b"a").unwrap();
    std::fs::write(lib64.join("libcupti.so.12"), b"b").unwrap();
    let out = gapscope()
        .current_dir(&d)
        .args(["record", "--", "true"])
        .env("GAPSCOPE_INJECT_LIB", inject)
        .env("CUDA_HOME", &toolkit)
        // No PyTorch to find first.
        .env("PATH", d.join("nothing-here"))
        .output()
        .unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("holds 2 different libcupti files"), "{err}");
    // One: used, and said where it came from.
    std::fs::remove_file(lib64.join("libcupti.so.12")).unwrap();
    let out = gapscope()
        .current_dir(&d)
        .args(["record", "--", "/bin/true"])
        .env("GAPSCOPE_INJECT_LIB", inject)
        .env("CUDA_HOME", &toolkit)
        .env("PATH", d.join("nothing-here"))
        .output()
        .unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{err}");
    assert!(
        err.contains(&format!(
            "with libcupti {} (from the CUDA toolkit in {})",
            lib64.join("libcupti.so.13").display(),
            toolkit.display()
        )),
        "{err}"
    );
}

#[test]
fn a_missing_injection_library_is_a_clear_error() {
    let d = scratch("noinject");
    let out = gapscope()
        .current_dir(&d)
        .args(["record", "--", "true"])
        .env("GAPSCOPE_INJECT_LIB", "/nonexistent/libgapscope_inject.so")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        text(&out.stderr),
        "gapscope: GAPSCOPE_INJECT_LIB names /nonexistent/libgapscope_inject.so, which does not exist\n"
    );
}

#[test]
fn inherited_injection_variables_are_replaced_and_said() {
    let d = scratch("replace");
    let (inject, cupti) = placeholders();
    let out = gapscope()
        .current_dir(&d)
        .args([
            "record",
            "--",
            "sh",
            "-c",
            "echo $CUDA_INJECTION64_PATH; echo $NVTX_INJECTION64_PATH",
        ])
        .env("GAPSCOPE_INJECT_LIB", inject)
        .env("GAPSCOPE_CUPTI_LIBS", cupti)
        .env("NVTX_INJECTION64_PATH", "/opt/cuda/libcupti.so")
        .output()
        .unwrap();
    let err = text(&out.stderr);
    assert!(
        err.contains("gapscope: replacing NVTX_INJECTION64_PATH=/opt/cuda/libcupti.so for the recording"),
        "{err}"
    );
    let shown = format!("{}\n", inject.display());
    assert_eq!(text(&out.stdout), format!("{shown}{shown}"));

    let out = gapscope()
        .current_dir(&d)
        .args([
            "record",
            "--no-nvtx",
            "--",
            "sh",
            "-c",
            "echo \"[$NVTX_INJECTION64_PATH]\"",
        ])
        .env("GAPSCOPE_INJECT_LIB", inject)
        .env("GAPSCOPE_CUPTI_LIBS", cupti)
        .env("NVTX_INJECTION64_PATH", "/opt/cuda/libcupti.so")
        .output()
        .unwrap();
    assert_eq!(text(&out.stdout), "[]\n");
    assert!(text(&out.stderr).contains("removing NVTX_INJECTION64_PATH=/opt/cuda/libcupti.so"));
}

/// A signal sent to gapscope alone reaches the program (whose status,
/// 128 + 15, becomes record's); gapscope itself stays to finish.
#[test]
fn a_signal_to_gapscope_reaches_the_program() {
    let d = scratch("signal");
    let start = Instant::now();
    let out = record(&d, &["--", "sh", "-c", "kill -TERM $PPID; exec sleep 30"]);
    assert!(
        start.elapsed() < Duration::from_secs(20),
        "the program was not stopped"
    );
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(143), "{err}");
    assert!(
        err.contains("gapscope: nothing was recorded"),
        "gapscope carried on: {err}"
    );
}

fn inject_lib() -> Option<PathBuf> {
    let p = Path::new(env!("CARGO_BIN_EXE_gapscope")).with_file_name("libgapscope_inject.so");
    if p.is_file() {
        return Some(p);
    }
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "CI=true but {} is missing: .ci/run must `cargo build -p gapscope-inject`",
        p.display()
    );
    eprintln!(
        "record_cli end-to-end NOT RUN: no {} (cargo build -p gapscope-inject)",
        p.display()
    );
    None
}

/// The stand-in CUDA program, compiled once.
fn host() -> &'static Path {
    static HOST: OnceLock<PathBuf> = OnceLock::new();
    HOST.get_or_init(|| {
        let out = scratch("host").join("host");
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("collectors/inject/tests/host.c");
        let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
        let st = Command::new(&cc)
            .args(["-O1", "-o"])
            .arg(&out)
            .arg(&src)
            .arg("-ldl")
            .status();
        assert!(st.is_ok_and(|s| s.success()), "{cc} failed on {}", src.display());
        out
    })
}

/// The whole path without a GPU: `record` sets the environment, each of two
/// processes (one `exec`s the other) runs the injection and writes its
/// capture at exit, `record` merges them into the `-o` file and says what is
/// in it, and `gapscope analyze` reads that file.
#[test]
fn two_processes_recorded_merged_and_analysed() {
    let Some(lib) = inject_lib() else { return };
    let d = scratch("e2e");
    let tmp = d.join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let (_, cupti) = placeholders();
    let out = gapscope()
        .current_dir(&d)
        .args(["record", "-o", "two.gst", "--"])
        .arg(host())
        .args(["0", "spawn"])
        .env("TMPDIR", &tmp)
        .env("GAPSCOPE_CUPTI_LIBS", cupti)
        .env("GAPSCOPE_INJECT_SELFTEST", "1")
        .output()
        .unwrap();
    let stdout = text(&out.stdout);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stdout}{err}");
    assert_eq!(
        stdout.matches("InitializeInjection returned 1").count(),
        2,
        "{stdout}"
    );
    let summary = err.lines().last().unwrap();
    assert!(
        summary.starts_with("gapscope: recorded 2 processes (pids "),
        "{err}"
    );
    assert!(
        summary.contains(
            "2 kernels, 2 copies (2 host-to-device, 2 of them from pageable memory; 0 device-to-host), 0 memsets, 0 \
             syncs, 4 runtime/driver calls, 0 NVTX ranges; CUPTI dropped 0 records. Wrote two.gst ("
        ),
        "{summary}"
    );
    assert_eq!(err.lines().count(), 2, "{err}");
    let analyzed = gapscope()
        .current_dir(&d)
        .args(["analyze", "--format", "json", "two.gst"])
        .output()
        .unwrap();
    assert!(analyzed.status.success(), "{}", text(&analyzed.stderr));
    let v: serde_json::Value = serde_json::from_slice(&analyzed.stdout).unwrap();
    assert_eq!(v["diagnostics"]["rows"]["gpu"], 4, "{v}");
    assert_eq!(v["diagnostics"]["rows"]["runtime"], 4, "{v}");
    assert_eq!(v["diagnostics"]["gpu_rows_without_launch"], 0, "{v}");
    // The working directory (links, per-process captures) is gone.
    assert_eq!(std::fs::read_dir(&tmp).unwrap().count(), 0, "left in TMPDIR");

    // A program that fails after recording: its status, and the capture.
    let out = gapscope()
        .current_dir(&d)
        .args(["record", "--"])
        .arg(host())
        .arg("9")
        .env("GAPSCOPE_CUPTI_LIBS", cupti)
        .env("GAPSCOPE_INJECT_SELFTEST", "1")
        .env("GAPSCOPE_INJECT_LIB", &lib)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(9), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("gapscope: recorded 1 process (pid "),
        "{}",
        text(&out.stderr)
    );
    assert!(d.join("run.gst").is_file());
}

/// `--per-process`: two processes that know their rank (RANK in their
/// environment at exit; the parent sets its own after its injection
/// started) become `rank-0.gst` and `rank-1.gst` in the `-o` directory,
/// each placed in the job by its capture's rank and world size, and
/// `gapscope analyze DIR/` reads them as one job of two ranks. Without
/// ranks the files are named by pid. A file as `-o` is refused before the
/// program runs.
#[test]
fn per_process_keeps_each_rank_and_analyze_reads_them_as_one_job() {
    let Some(_) = inject_lib() else { return };
    let d = scratch("per-process");
    let (_, cupti) = placeholders();
    let run = |args: &[&str], mode: &str| {
        gapscope()
            .current_dir(&d)
            .arg("record")
            .args(args)
            .arg("--")
            .arg(host())
            .args(["0", mode])
            .env("GAPSCOPE_CUPTI_LIBS", cupti)
            .env("GAPSCOPE_INJECT_SELFTEST", "1")
            .env_remove("RANK")
            .env_remove("WORLD_SIZE")
            .output()
            .unwrap()
    };
    let out = run(&["--per-process", "-o", "job"], "ranks");
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let summary = err.lines().last().unwrap();
    assert!(
        summary.starts_with("gapscope: recorded 2 processes (pids "),
        "{err}"
    );
    assert!(
        summary.ends_with("Wrote 2 captures into job (rank-0.gst, rank-1.gst); next: gapscope analyze job"),
        "{summary}"
    );
    let mut files: Vec<String> = std::fs::read_dir(d.join("job"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    files.sort();
    assert_eq!(files, ["rank-0.gst", "rank-1.gst"]);
    for r in 0..2 {
        let info = gapscope()
            .current_dir(&d)
            .args(["analyze", "--format", "json", &format!("job/rank-{r}.gst")])
            .output()
            .unwrap();
        let v: serde_json::Value = serde_json::from_slice(&info.stdout).unwrap();
        assert_eq!(v["source"]["rank"], r, "{v}");
        assert_eq!(v["source"]["world_size"], 2, "{v}");
    }
    let job = gapscope()
        .current_dir(&d)
        .args(["analyze", "--format", "json", "job"])
        .output()
        .unwrap();
    assert!(job.status.success(), "{}", text(&job.stderr));
    let v: serde_json::Value = serde_json::from_slice(&job.stdout).unwrap();
    assert_eq!(v["kind"], "job", "{v}");
    let ranks: Vec<i64> = v["ranks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["rank"].as_i64().unwrap())
        .collect();
    assert_eq!(ranks, [0, 1], "{v}");

    // Without RANK: named by pid.
    let out = run(&["--per-process", "-o", "pids"], "spawn");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let names: Vec<String> = std::fs::read_dir(d.join("pids"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names.len(), 2);
    assert!(
        names.iter().all(|n| n.starts_with("pid-") && n.ends_with(".gst")),
        "{names:?}"
    );

    // A file as the directory: refused before the program runs.
    std::fs::write(d.join("afile"), b"x").unwrap();
    let out = run(&["--per-process", "-o", "afile"], "ranks");
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("afile: not a directory; --per-process writes one capture per process"),
        "{err}"
    );
    assert!(
        !text(&out.stdout).contains("InitializeInjection"),
        "the program did not run"
    );
    // A directory that cannot be made (under a file): also before it runs.
    let out = run(&["--per-process", "-o", "afile/job"], "ranks");
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("afile/job: cannot create the directory for the captures"),
        "{err}"
    );
    assert!(
        !text(&out.stdout).contains("InitializeInjection"),
        "the program did not run"
    );
    let _ = std::fs::remove_dir_all(&d);
}

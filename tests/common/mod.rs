//! Helpers shared by the end-to-end tests: run the real `gapscope` binary,
//! make scratch files, find the shared traces.

#![allow(dead_code)] // each test file uses its own subset

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The result of one run of the binary.
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    /// Panics with both streams shown unless the exit status is `code`.
    pub fn expect_code(self, code: i32) -> Self {
        assert_eq!(
            self.code, code,
            "exit status {} (wanted {code})\n--- stdout\n{}\n--- stderr\n{}",
            self.code, self.stdout, self.stderr
        );
        self
    }

    /// stdout parsed as JSON.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("stdout is not JSON ({e}):\n{}", self.stdout))
    }
}

/// Runs `gapscope ARGS...` and waits for it.
pub fn gapscope<I, S>(args: I) -> Run
where
    I: IntoIterator<Item = S>,
    S: AsRef<std::ffi::OsStr>,
{
    let out: Output = Command::new(env!("CARGO_BIN_EXE_gapscope"))
        .args(args)
        .output()
        .expect("the gapscope binary runs");
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// A fresh scratch directory for one test, removed when dropped.
pub struct TempDir(PathBuf);

impl TempDir {
    pub fn new(name: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("gapscope-test-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("create scratch dir");
        TempDir(dir)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }

    /// Writes `bytes` to `name` inside the directory and returns its path.
    pub fn file(&self, name: &str, bytes: &[u8]) -> PathBuf {
        let p = self.0.join(name);
        std::fs::write(&p, bytes).expect("write scratch file");
        p
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The repository root.
pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A file under `../shared/traces` (real traces recorded by others; CI has
/// `../shared` beside the checkout).
pub fn shared_trace(rel: &str) -> PathBuf {
    let p = repo().join("../shared/traces").join(rel);
    assert!(
        p.exists(),
        "{} is missing: these tests need ../shared beside the checkout (see ../shared/README.md)",
        p.display()
    );
    p
}

/// The demo trace's JSON, decompressed.
pub fn demo_json() -> Vec<u8> {
    use std::io::Read;
    let gz = std::fs::read(repo().join("fixtures/demo/demo.pt.trace.json.gz")).expect("demo trace");
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(&gz[..])
        .read_to_end(&mut out)
        .expect("demo trace inflates");
    out
}

/// Checks the breakdown invariant of one device object: every ns of the
/// window is in exactly one class.
pub fn assert_breakdown_adds_up(b: &serde_json::Value) {
    let n = |k: &str| {
        b[k].as_i64()
            .unwrap_or_else(|| panic!("breakdown.{k} missing in {b}"))
    };
    let sum = n("compute_ns") + n("communication_ns") + n("memcpy_ns") + n("memset_ns") + n("idle_ns");
    assert_eq!(sum, n("window_ns"), "classes do not add up to the window: {b}");
    let k = &b["memcpy_by_kind_ns"];
    let by_kind: i64 = ["htod", "dtoh", "dtod", "other"]
        .iter()
        .map(|f| k[f].as_i64().unwrap())
        .sum();
    assert_eq!(by_kind, n("memcpy_ns"), "memcpy by kind does not add up: {b}");
}

/// Loads `trace` (Perfetto protobuf or Chrome JSON) into the real Perfetto
/// trace processor (`../shared/tools/perfetto-check`, which installs it on
/// first use) and runs `queries` in one load. Returns each query's rows.
/// Panics on a load failure or any SQL error: a test that needs the trace
/// processor must not pass without it.
pub fn perfetto_query(trace: &Path, queries: &[&str]) -> Vec<Vec<serde_json::Value>> {
    let script = repo().join("../shared/tools/perfetto-check/query.sh");
    assert!(
        script.exists(),
        "{} is missing: these tests need ../shared beside the checkout",
        script.display()
    );
    let out = Command::new("bash")
        .arg(&script)
        .arg(trace)
        .args(queries)
        .output()
        .expect("bash runs the trace processor script");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "trace processor failed on {} ({}):\n--- stdout\n{stdout}\n--- stderr\n{stderr}",
        trace.display(),
        out.status
    );
    let mut lines = stdout.lines().filter(|l| l.starts_with('{'));
    let load: serde_json::Value =
        serde_json::from_str(lines.next().expect("a load line")).expect("load line is JSON");
    assert!(load["bytes"].as_u64().is_some(), "no load line: {stdout}");
    let rows: Vec<Vec<serde_json::Value>> = lines
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).expect("query line is JSON");
            assert!(v.get("error").is_none(), "SQL error: {v}");
            v["rows"].as_array().expect("rows").clone()
        })
        .collect();
    assert_eq!(rows.len(), queries.len(), "one result per query: {stdout}");
    rows
}

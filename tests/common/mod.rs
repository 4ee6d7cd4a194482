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

/// One complete (`ph: X`) Kineto event on `(pid, tid)` over `ts`..`ts+dur`
/// µs, with `args` the inside of its args object: for tests that write a
/// small trace by hand.
pub fn x_event(cat: &str, name: &str, (pid, tid): (u32, u32), ts: u64, dur: u64, args: &str) -> String {
    format!(
        r#"{{"ph": "X", "cat": "{cat}", "name": "{name}", "pid": {pid}, "tid": {tid}, "ts": {ts}, "dur": {dur}, "args": {{{args}}}}}"#
    )
}

/// A Kineto trace file's text holding `events`.
pub fn kineto_json(events: &[String]) -> String {
    format!(r#"{{"traceEvents": [{}]}}"#, events.join(",\n"))
}

/// A synthetic Kineto trace of one process driving `gpus` GPUs for `steps`
/// ProfilerSteps: per step a DataLoader wait, then per GPU a copy, a
/// Tensor Core GEMM, an elementwise kernel and an NCCL all-reduce, and a
/// device synchronize at the end. For tests of scale (many GPUs, many
/// steps); integer µs timestamps.
pub fn synthetic_trace(gpus: u32, steps: u32) -> String {
    struct Gen {
        events: Vec<String>,
        corr: u64,
        ext: u64,
        now: u64,
        gpu_free: Vec<u64>,
    }
    impl Gen {
        /// A complete event on `(pid, tid)` over `(ts, dur)` µs.
        fn x(&mut self, cat: &str, name: &str, (pid, tid): (u32, u32), (ts, dur): (u64, u64), args: String) {
            self.events.push(format!(
                r#"{{"ph": "X", "cat": "{cat}", "name": "{name}", "pid": {pid}, "tid": {tid}, "ts": {ts}, "dur": {dur}, "args": {{{args}}}}}"#
            ));
        }
        /// An operator on the CPU that launches one GPU row on `device`.
        fn launch(&mut self, op: &str, cat: &str, kernel: &str, device: u32, gpu_dur: u64) {
            self.ext += 1;
            self.corr += 1;
            let (ext, corr, start) = (self.ext, self.corr, self.now);
            let api = if cat == "kernel" {
                "cudaLaunchKernel"
            } else {
                "cudaMemcpyAsync"
            };
            self.x(
                "cuda_runtime",
                api,
                (1, 1),
                (start + 10, 8),
                format!(r#""correlation": {corr}, "External id": {ext}"#),
            );
            let d = device as usize;
            let gpu_start = self.gpu_free[d].max(start + 20);
            self.gpu_free[d] = gpu_start + gpu_dur;
            self.x(
                cat,
                kernel,
                (device, 7),
                (gpu_start, gpu_dur),
                format!(r#""device": {device}, "stream": 7, "correlation": {corr}, "External id": {ext}"#),
            );
            self.x(
                "cpu_op",
                op,
                (1, 1),
                (start, 30),
                format!(r#""External id": {ext}"#),
            );
            self.now = start + 40;
        }
    }
    let mut g = Gen {
        events: Vec::new(),
        corr: 0,
        ext: 0,
        now: 1_000,
        gpu_free: vec![0; gpus as usize],
    };
    for s in 0..steps {
        let step_start = g.now;
        let wait = 300 + u64::from(s % 7) * 50;
        g.x(
            "user_annotation",
            "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__",
            (1, 1),
            (g.now + 5, wait),
            String::new(),
        );
        g.now += wait + 10;
        for d in 0..gpus {
            g.launch(
                "aten::copy_",
                "gpu_memcpy",
                "Memcpy HtoD (Pageable -> Device)",
                d,
                40,
            );
            g.launch(
                "aten::mm",
                "kernel",
                "ampere_fp16_s16816gemm_fp16_128x128_ldg8_f2f_tn",
                d,
                400 + u64::from(d) * 10,
            );
            g.launch(
                "aten::add_",
                "kernel",
                "void at::native::vectorized_elementwise_kernel<4, at::native::AddFunctor<float>>(int)",
                d,
                60,
            );
            g.launch(
                "nccl:all_reduce",
                "kernel",
                "ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)",
                d,
                120,
            );
        }
        let done = g.gpu_free.iter().copied().max().unwrap_or(g.now).max(g.now);
        g.corr += 1;
        let corr = g.corr;
        g.x(
            "cuda_runtime",
            "cudaDeviceSynchronize",
            (1, 1),
            (g.now, done - g.now + 5),
            format!(r#""correlation": {corr}"#),
        );
        g.now = done + 20;
        let name = format!("ProfilerStep#{s}");
        g.x(
            "user_annotation",
            &name,
            (1, 1),
            (step_start, g.now - step_start),
            String::new(),
        );
        g.now += 5;
    }
    let devices: Vec<String> = (0..gpus)
        .map(|d| format!(r#"{{"id": {d}, "name": "NVIDIA A100-SXM4-80GB", "totalGlobalMem": 85899345920, "computeMajor": 8, "computeMinor": 0, "numSms": 108}}"#))
        .collect();
    format!(
        "{{\"schemaVersion\": 1, \"deviceProperties\": [{}], \"traceEvents\": [\n{}\n]}}\n",
        devices.join(", "),
        g.events.join(",\n")
    )
}

/// Runs fixtures/job/plant.py on DLRM's rank 0 into `out` (a job of
/// copies with clock offsets and planted late ranks; see the script) and
/// returns its truth.json.
pub fn plant_job(out: &Path, args: &[&str]) -> serde_json::Value {
    let base = shared_trace("param/dlrm_8rank/worker0_step_12.1694128201545.pt.trace.json.gz");
    let status = std::process::Command::new("python3")
        .arg(repo().join("fixtures/job/plant.py"))
        .arg(base)
        .arg(out)
        .args(args)
        .status()
        .expect("python3 runs (.ci/run needs python3)");
    assert!(status.success(), "plant.py {args:?} failed");
    let truth = std::fs::read_to_string(out.join("truth.json")).expect("truth.json");
    std::fs::remove_file(out.join("truth.json")).expect("truth.json removed");
    serde_json::from_str(&truth).expect("truth.json is JSON")
}

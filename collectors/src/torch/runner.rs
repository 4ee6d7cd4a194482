//! Runs a model TorchBench's way: build it with random inputs on the
//! device, run `warmup` untimed iterations, then time `iters` iterations
//! (each synchronised with the device), and report each iteration's wall
//! time, throughput and peak memory as a [`BenchRecord`]: one line of
//! docs/bench-results.md's `gapscope-bench/1` format.

use super::models::{self, ModelConfig, ModelInfo, Workload};
use super::observer::{self, NvtxRanges, OpEvent, Recording, Step};
use super::Precision;
pub use crate::bench_record::BenchRecord;
use crate::bench_record::ConfigValue;
use crate::trace::Ns;
use std::collections::BTreeMap;
use std::panic::{self, AssertUnwindSafe};
use std::path::PathBuf;
use std::time::Instant;
use tch::Device;

/// Train or eval.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// zero_grad, forward, loss, backward, optimizer step.
    Train,
    /// Forward with no autograd.
    Eval,
}

impl Mode {
    /// The name in results.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Train => "train",
            Mode::Eval => "eval",
        }
    }
}

/// What to run.
#[derive(Clone, Debug)]
pub enum Source {
    /// A built-in model.
    Builtin(&'static ModelInfo),
    /// A TorchScript file and its input shape.
    TorchScript {
        /// The `.pt` file.
        path: PathBuf,
        /// The input's shape, batch first (the batch size replaces it when
        /// given).
        shape: Vec<i64>,
    },
}

impl Source {
    /// The model name in results: the built-in name, or
    /// `torchscript:<file name>`.
    pub fn name(&self) -> String {
        match self {
            Source::Builtin(m) => m.name.to_string(),
            Source::TorchScript { path, .. } => format!(
                "torchscript:{}",
                path.file_name().map_or_else(
                    || path.display().to_string(),
                    |n| n.to_string_lossy().into_owned()
                )
            ),
        }
    }
}

/// One run's settings.
#[derive(Clone, Debug)]
pub struct RunConfig {
    /// Train or eval.
    pub mode: Mode,
    /// CPU or `Cuda(i)`.
    pub device: Device,
    /// Batch size; `None`: the model's default (the shape's first
    /// dimension for TorchScript).
    pub batch_size: Option<i64>,
    /// Numeric precision.
    pub precision: Precision,
    /// Timed iterations (at least 1).
    pub iters: usize,
    /// Untimed iterations first.
    pub warmup: usize,
    /// Tiny model sizes (tests).
    pub small: bool,
    /// Record every operator during the timed iterations.
    pub profile: bool,
    /// NVTX ranges during the timed iterations: one per operator (as
    /// `emit_nvtx()`) and `ProfilerStep#N` around each iteration, for a run
    /// under `gapscope record`. Needs CUDA.
    pub nvtx: bool,
}

/// A run's result: the record, and the operators when profiled.
pub struct RunOutput {
    /// The bench-results line.
    pub record: BenchRecord,
    /// Recorded operators (empty unless profiled).
    pub ops: Vec<OpEvent>,
    /// The timed iterations, as `ProfilerStep#N` ranges.
    pub steps: Vec<Step>,
}

/// libtorch's version, as the pip wheel reports it (`2.11.0`).
pub fn torch_version() -> String {
    // tch pins the version it was generated for.
    "2.11.0".to_string()
}

fn config_map(cfg: &RunConfig, batch_size: i64) -> BTreeMap<String, ConfigValue> {
    let mut m = BTreeMap::new();
    m.insert("mode".into(), ConfigValue::Text(cfg.mode.name().to_string()));
    m.insert("device".into(), ConfigValue::Text(device_name(cfg.device)));
    m.insert("batch_size".into(), ConfigValue::Int(batch_size));
    m.insert(
        "precision".into(),
        ConfigValue::Text(cfg.precision.name().to_string()),
    );
    if cfg.small {
        m.insert("small".into(), ConfigValue::Flag(true));
    }
    m
}

/// `cpu` or `cuda` (`cuda:N` past the first GPU).
pub fn device_name(d: Device) -> String {
    match d {
        Device::Cuda(0) => "cuda".into(),
        Device::Cuda(i) => format!("cuda:{i}"),
        _ => "cpu".into(),
    }
}

/// The text of a caught panic: tch panics with libtorch's message. Only
/// its first line (libtorch appends a C++ backtrace).
fn panic_text(p: &(dyn std::any::Any + Send)) -> String {
    let s = p
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_else(|| "the model panicked".into());
    let first = s.lines().find(|l| !l.trim().is_empty()).unwrap_or("").trim();
    let first = first.strip_prefix("Torch(\"").unwrap_or(first);
    let mut out: String = first.chars().take(300).collect();
    if out.is_empty() {
        out = "the model failed".into();
    }
    out
}

/// Peak RSS (VmHWM) of this process, bytes.
fn peak_rss() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// Resets VmHWM to the current RSS (Linux: `5` into clear_refs), so each
/// model's peak is its own.
fn reset_peak_rss() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

fn sync(device: Device) {
    if let Device::Cuda(i) = device {
        tch::Cuda::synchronize(i as i64);
    }
}

fn median(sorted: &[Ns]) -> Ns {
    let n = sorted.len();
    if n % 2 == 1 {
        sorted[n / 2]
    } else {
        (sorted[n / 2 - 1] + sorted[n / 2]) / 2
    }
}

/// Builds the workload for `source`.
fn build(source: &Source, cfg: &RunConfig, batch_size: i64) -> Result<Box<dyn Workload>, String> {
    let mc = ModelConfig {
        device: cfg.device,
        batch_size,
        precision: cfg.precision,
        small: cfg.small,
    };
    match source {
        Source::Builtin(m) => Ok(m.build(&mc)),
        Source::TorchScript { path, shape } => {
            let mut shape = shape.clone();
            if let Some(first) = shape.first_mut() {
                *first = batch_size;
            }
            models::TorchScript::load(path, &shape, &mc, cfg.mode == Mode::Train)
                .map(|m| Box::new(m) as Box<dyn Workload>)
                .map_err(|e| {
                    let e = e.to_string();
                    format!(
                        "{}: {}",
                        path.display(),
                        e.lines().next().unwrap_or("cannot load").trim()
                    )
                })
        }
    }
}

/// The batch size a run uses.
pub fn batch_size_of(source: &Source, cfg: &RunConfig) -> i64 {
    cfg.batch_size.unwrap_or(match source {
        Source::Builtin(m) if cfg.small => m.default_batch_size.min(4),
        Source::Builtin(m) => m.default_batch_size,
        Source::TorchScript { shape, .. } => shape.first().copied().unwrap_or(1),
    })
}

/// Runs one model in one configuration. Failures (a libtorch error, out of
/// memory) become a record with `status: error`.
pub fn run(source: &Source, cfg: &RunConfig) -> RunOutput {
    let bs = batch_size_of(source, cfg);
    let mut record = BenchRecord {
        torch_version: torch_version(),
        ..BenchRecord::new(source.name(), config_map(cfg, bs))
    };
    let cuda_index = match cfg.device {
        Device::Cuda(i) => Some(i),
        _ => None,
    };
    super::set_allow_tf32(cfg.precision == Precision::Tf32);
    reset_peak_rss();
    if let Some(i) = cuda_index {
        // As TorchBench between models: the previous run's cached blocks
        // (all of them, after an out-of-memory run) go back first.
        super::release_cuda_cache();
        super::reset_cuda_peak(i);
    }
    let mut ops = Vec::new();
    let mut steps = Vec::new();
    let result = panic::catch_unwind(AssertUnwindSafe(|| -> Result<(Vec<Ns>, Option<f64>), String> {
        tch::manual_seed(0);
        let mut w = build(source, cfg, bs)?;
        let step = |w: &mut Box<dyn Workload>| match cfg.mode {
            Mode::Train => w.train_step(),
            Mode::Eval => w.eval_step(),
        };
        for _ in 0..cfg.warmup {
            let _ = step(&mut w);
            sync(cfg.device);
        }
        let recording = if cfg.profile {
            Some(Recording::start(true)?)
        } else {
            None
        };
        let nvtx = if cfg.nvtx {
            Some(NvtxRanges::start()?)
        } else {
            None
        };
        let mut times = Vec::with_capacity(cfg.iters);
        let mut last = None;
        for i in 0..cfg.iters.max(1) {
            if let Some(n) = &nvtx {
                n.push(&format!("ProfilerStep#{i}"))?;
            }
            let s0 = observer::now_ns();
            let t0 = Instant::now();
            let out = step(&mut w);
            sync(cfg.device);
            times.push(t0.elapsed().as_nanos().max(1) as Ns);
            if let Some(n) = &nvtx {
                n.pop()?;
            }
            steps.push(Step {
                number: i as u64,
                start_ns: s0,
                end_ns: observer::now_ns(),
            });
            last = Some(out);
        }
        drop(nvtx);
        if let Some(r) = recording {
            ops = r.stop();
        }
        let loss = match (cfg.mode, last) {
            (Mode::Train, Some(l)) => f64::try_from(l.to_kind(tch::Kind::Float)).ok(),
            _ => None,
        };
        Ok((times, loss))
    }));
    match result {
        Ok(Ok((times, loss))) => {
            let mut sorted = times.clone();
            sorted.sort_unstable();
            let med = median(&sorted);
            record.min_ns = sorted.first().copied();
            record.max_ns = sorted.last().copied();
            record.median_ns = Some(med);
            record.throughput_per_s = Some(bs as f64 * 1e9 / med as f64);
            record.times_ns = times;
            record.final_loss = loss.filter(|l| l.is_finite());
        }
        Ok(Err(e)) => fail(&mut record, e),
        Err(p) => fail(&mut record, panic_text(p.as_ref())),
    }
    record.peak_cpu_memory_bytes = peak_rss();
    if let Some(i) = cuda_index {
        record.peak_gpu_memory_bytes = super::cuda_peak_allocated(i);
    }
    RunOutput { record, ops, steps }
}

fn fail(record: &mut BenchRecord, why: String) {
    record.status = "error".to_string();
    record.error = Some(why.replace(['\n', '\r'], " "));
}

/// Whether a failed record ran out of memory.
pub fn is_oom(record: &BenchRecord) -> bool {
    record.error.as_deref().is_some_and(|e| {
        let e = e.to_ascii_lowercase();
        e.contains("out of memory") || e.contains("failed to allocate") || e.contains("can't allocate")
    })
}

/// When [`sweep`] stops doubling.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SweepUntil {
    /// TorchBench's rule: a failed run (out of memory) or less than 1%
    /// more throughput than the best so far.
    NoGain,
    /// Only a failed run: finds the largest batch that fits, whatever the
    /// throughput does.
    Failure,
}

/// TorchBench's batch-size sweep: double the batch size from the starting
/// one until `until` says stop, or `max_batch` is passed. Returns every
/// run, the failing or no-gain one included.
pub fn sweep(source: &Source, cfg: &RunConfig, max_batch: i64, until: SweepUntil) -> Vec<RunOutput> {
    let mut out = Vec::new();
    let mut bs = batch_size_of(source, cfg);
    let mut best = 0.0f64;
    loop {
        let c = RunConfig {
            batch_size: Some(bs),
            ..cfg.clone()
        };
        let r = run(source, &c);
        let tput = r.record.throughput_per_s;
        let no_gain = until == SweepUntil::NoGain && tput.is_none_or(|t| t < best * 1.01);
        let done = r.record.status != "ok" || no_gain || bs * 2 > max_batch;
        best = best.max(tput.unwrap_or(0.0));
        out.push(r);
        if done {
            return out;
        }
        bs *= 2;
    }
}

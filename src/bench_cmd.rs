//! `gapscope bench MODEL|all`: run built-in models (or a TorchScript file)
//! TorchBench's way through libtorch and write one JSON line per model and
//! configuration (docs/bench-results.md), which `gapscope diff` compares.
//! `--profile` also records every aten operator and writes a gapscope
//! capture (`.gst`) or a Kineto-style Chrome trace that `analyze`, `report`
//! and `export` read.
//!
//! The runner needs libtorch, so it exists only in builds with the `torch`
//! feature; other builds say how to get one.

use anyhow::Result;
use clap::{Args, ValueEnum};
use std::path::PathBuf;

/// Examples shown by `gapscope bench --help`.
pub const EXAMPLES: &str = "\
EXAMPLES:
    Time ResNet-50 training on the GPU, 10 iterations after 3 warm-up ones:
        gapscope bench resnet50 --device cuda -o main.jsonl

    Every built-in model, eval, bfloat16, then compare with an earlier run:
        gapscope bench all --mode eval --precision bf16 -o new.jsonl
        gapscope diff main.jsonl new.jsonl

    Record every aten operator of the timed iterations, then analyse them:
        gapscope bench resnet18 --profile run.json && gapscope analyze run.json

    A model traced in Python (torch.jit.trace(...).save('model.pt')):
        gapscope bench --torchscript model.pt --input-shape 8,3,224,224

    What is built in:
        gapscope bench --list

BUILD:
    Needs libtorch (PyTorch 2.11.0's pip wheel): cargo build --release
    --features torch, with LIBTORCH=<site-packages>/torch and that torch/lib
    on LD_LIBRARY_PATH when running (docs/torch.md).

EXIT STATUS:
    0 every run ok, 1 a model failed (its line says why), 2 an error (unknown
    model, bad flag, no libtorch or GPU).";

/// `gapscope bench`.
#[derive(Debug, Args)]
// Without libtorch only the parser uses these.
#[cfg_attr(not(feature = "torch"), allow(dead_code))]
pub struct BenchArgs {
    /// A built-in model (see --list), or `all`.
    #[arg(value_name = "MODEL", required_unless_present_any = ["list", "torchscript"])]
    pub model: Option<String>,

    /// Run this TorchScript file instead of a built-in model.
    #[arg(long, value_name = "FILE", conflicts_with = "model")]
    pub torchscript: Option<PathBuf>,

    /// The TorchScript model's input shape, batch first (`8,3,224,224`).
    #[arg(long, value_name = "DIMS", value_parser = parse_shape, requires = "torchscript")]
    pub input_shape: Option<Shape>,

    /// Train (zero_grad, forward, loss, backward, optimizer step) or eval
    /// (forward, no autograd).
    #[arg(long, value_enum, default_value_t = ModeArg::Train)]
    pub mode: ModeArg,

    /// Where to run.
    #[arg(long, value_enum, default_value_t = DeviceArg::Cpu)]
    pub device: DeviceArg,

    /// Batch size (default: the model's own).
    #[arg(long = "bs", value_name = "N", value_parser = clap::value_parser!(i64).range(1..))]
    pub batch_size: Option<i64>,

    /// Numeric precision. tf32 allows TF32 matmuls and convolutions on
    /// CUDA; fp16/bf16 convert weights and inputs; amp is autocast on CUDA.
    #[arg(long, value_enum, default_value_t = PrecisionArg::Fp32)]
    pub precision: PrecisionArg,

    /// Timed iterations.
    #[arg(long, value_name = "N", default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..))]
    pub iters: u32,

    /// Untimed iterations before timing.
    #[arg(long, value_name = "N", default_value_t = 3)]
    pub warmup: u32,

    /// Double the batch size until out of memory or no throughput gain
    /// (TorchBench's rule, meant for eval); one line per batch size.
    #[arg(long)]
    pub bs_sweep: bool,

    /// Record every operator of the timed iterations into this file (one
    /// model only): a gapscope capture when it ends in `.gst`, else a
    /// Kineto-style Chrome trace.
    #[arg(long, value_name = "FILE")]
    pub profile: Option<PathBuf>,

    /// Write results here (JSON lines) instead of stdout.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,

    /// Tiny model sizes (small images, few layers): for tests on a CPU.
    #[arg(long)]
    pub small: bool,

    /// List the built-in models and exit.
    #[arg(long)]
    pub list: bool,

    /// No per-model summary on stderr.
    #[arg(short, long)]
    pub quiet: bool,
}

/// `--mode`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ModeArg {
    /// Training steps.
    Train,
    /// Inference.
    Eval,
}

/// `--device`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum DeviceArg {
    /// The CPU.
    Cpu,
    /// The first CUDA GPU.
    Cuda,
}

/// `--precision`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum PrecisionArg {
    /// float32.
    Fp32,
    /// float32 with TF32 math on CUDA.
    Tf32,
    /// float16.
    Fp16,
    /// bfloat16.
    Bf16,
    /// Automatic mixed precision (CUDA autocast).
    Amp,
}

/// A tensor shape from `--input-shape` (a newtype: clap would take a `Vec`
/// for a repeated flag).
#[derive(Clone, Debug)]
#[cfg_attr(not(feature = "torch"), allow(dead_code))]
pub struct Shape(pub Vec<i64>);

fn parse_shape(s: &str) -> Result<Shape, String> {
    let dims: Result<Vec<i64>, _> = s.split([',', 'x']).map(|d| d.trim().parse::<i64>()).collect();
    match dims {
        Ok(d) if !d.is_empty() && d.iter().all(|&x| x > 0) => Ok(Shape(d)),
        _ => Err(format!(
            "`{s}` is not a shape; write positive sizes separated by commas, e.g. 8,3,224,224"
        )),
    }
}

/// Runs `gapscope bench`. Returns the exit status: 0, or 1 when a model
/// failed; errors (exit 2) come back as `Err`.
#[cfg(not(feature = "torch"))]
pub fn run(_args: &BenchArgs) -> Result<u8> {
    anyhow::bail!(
        "this gapscope was built without the model runner; rebuild with `cargo build --release --features torch` \
         (needs libtorch from PyTorch 2.11.0's pip wheel: docs/torch.md)"
    )
}

#[cfg(feature = "torch")]
pub use with_torch::run;

#[cfg(feature = "torch")]
mod with_torch {
    use super::*;
    use anyhow::{bail, Context};
    use gapscope_collectors::torch::models::{self, MODELS};
    use gapscope_collectors::torch::observer;
    use gapscope_collectors::torch::runner::{self, Mode, RunConfig, RunOutput, Source};
    use gapscope_collectors::torch::{self as gt, tch, Precision};
    use std::fs::File;
    use std::io::{self, BufWriter, Write};

    /// Largest batch size `--bs-sweep` tries.
    const MAX_SWEEP_BATCH: i64 = 1 << 16;

    /// Runs `gapscope bench`. Returns the exit status: 0, or 1 when a model
    /// failed; errors (exit 2) come back as `Err`.
    pub fn run(args: &BenchArgs) -> Result<u8> {
        if args.list {
            let mut out = io::stdout().lock();
            for m in MODELS {
                writeln!(out, "{:<16} bs {:<5} {}", m.name, m.default_batch_size, m.about)?;
            }
            return Ok(0);
        }
        let sources = sources(args)?;
        if args.profile.is_some() && (sources.len() != 1 || args.bs_sweep) {
            bail!("--profile records one run: name one model and leave out --bs-sweep");
        }
        let device = match args.device {
            DeviceArg::Cpu => tch::Device::Cpu,
            DeviceArg::Cuda => {
                gt::load_cuda().map_err(|e| anyhow::anyhow!("--device cuda: {e}"))?;
                tch::Device::Cuda(0)
            }
        };
        let precision = match args.precision {
            PrecisionArg::Fp32 => Precision::Fp32,
            PrecisionArg::Tf32 => Precision::Tf32,
            PrecisionArg::Fp16 => Precision::Fp16,
            PrecisionArg::Bf16 => Precision::Bf16,
            PrecisionArg::Amp => Precision::Amp,
        };
        let cfg = RunConfig {
            mode: match args.mode {
                ModeArg::Train => Mode::Train,
                ModeArg::Eval => Mode::Eval,
            },
            device,
            batch_size: args.batch_size,
            precision,
            iters: args.iters as usize,
            warmup: args.warmup as usize,
            small: args.small,
            profile: args.profile.is_some(),
        };
        let mut out: Box<dyn Write> = match &args.output {
            Some(p) => Box::new(BufWriter::new(
                File::create(p).with_context(|| format!("{}: cannot create", p.display()))?,
            )),
            None => Box::new(BufWriter::new(io::stdout().lock())),
        };
        // tch reports libtorch errors by panicking; the runner catches them
        // and writes them into the record, so the default hook's message
        // would only repeat it.
        let hook = std::panic::take_hook();
        std::panic::set_hook(Box::new(|_| {}));
        let mut failed = false;
        for source in &sources {
            let runs = if args.bs_sweep {
                runner::sweep(source, &cfg, MAX_SWEEP_BATCH)
            } else {
                vec![runner::run(source, &cfg)]
            };
            for r in runs {
                failed |= r.record.status != "ok";
                serde_json::to_writer(&mut out, &r.record)?;
                out.write_all(b"\n")?;
                out.flush()?;
                if !args.quiet {
                    summary(&r);
                }
                if let Some(path) = &args.profile {
                    write_profile(path, &r)?;
                }
            }
        }
        std::panic::set_hook(hook);
        Ok(u8::from(failed))
    }

    fn sources(args: &BenchArgs) -> Result<Vec<Source>> {
        if let Some(path) = &args.torchscript {
            let Some(Shape(shape)) = args.input_shape.clone() else {
                bail!("--torchscript needs --input-shape (the input's sizes, batch first, e.g. 8,3,224,224)");
            };
            if !path.is_file() {
                bail!("{}: no such TorchScript file", path.display());
            }
            return Ok(vec![Source::TorchScript {
                path: path.clone(),
                shape,
            }]);
        }
        let name = args.model.as_deref().unwrap_or_default();
        if name == "all" {
            return Ok(MODELS.iter().map(Source::Builtin).collect());
        }
        match models::find(name) {
            Some(m) => Ok(vec![Source::Builtin(m)]),
            None => {
                let known: Vec<&str> = MODELS.iter().map(|m| m.name).collect();
                bail!(
                    "unknown model `{name}`; built in: {}, or all (or --torchscript FILE)",
                    known.join(", ")
                )
            }
        }
    }

    fn summary(r: &RunOutput) {
        let rec = &r.record;
        let key: Vec<String> = rec
            .config
            .iter()
            .map(|(k, v)| format!("{k}={}", v.to_string().trim_matches('"')))
            .collect();
        let line = match (rec.status, rec.median_ns) {
            ("ok", Some(med)) => format!(
                "{} {}: median {:.2} ms (min {:.2}, max {:.2}), {:.1} samples/s, peak RSS {} MiB{}",
                rec.model,
                key.join(" "),
                med as f64 / 1e6,
                rec.min_ns.unwrap_or(0) as f64 / 1e6,
                rec.max_ns.unwrap_or(0) as f64 / 1e6,
                rec.throughput_per_s.unwrap_or(0.0),
                rec.peak_cpu_memory_bytes.unwrap_or(0) >> 20,
                rec.peak_gpu_memory_bytes
                    .map_or(String::new(), |b| format!(", peak GPU {} MiB", b >> 20)),
            ),
            _ => format!(
                "{} {}: error: {}",
                rec.model,
                key.join(" "),
                rec.error.as_deref().unwrap_or("failed")
            ),
        };
        let _ = writeln!(io::stderr().lock(), "{line}");
    }

    /// Writes the recorded operators as a gapscope capture when the path
    /// ends in `.gst`, else as Kineto-compatible Chrome JSON (our exporter's
    /// format, which our importer reads back).
    fn write_profile(path: &std::path::Path, r: &RunOutput) -> Result<()> {
        if r.record.status != "ok" {
            bail!("{}: not written, the run failed", path.display());
        }
        let trace = observer::to_trace(&r.ops, &r.steps, &path.display().to_string());
        if path
            .extension()
            .is_some_and(|e| e == gapscope_collectors::capture::EXTENSION)
        {
            return gapscope_collectors::capture::write_file(&trace, path)
                .map_err(|e| anyhow::anyhow!("{e}"));
        }
        let f = File::create(path).with_context(|| format!("{}: cannot create", path.display()))?;
        let mut w = BufWriter::new(f);
        crate::export::chrome::write(&trace, &mut w)
            .with_context(|| format!("{}: cannot write", path.display()))?;
        w.flush()
            .with_context(|| format!("{}: cannot write", path.display()))?;
        Ok(())
    }
}

//! `gapscope bench MODEL|all`: run built-in models (or a TorchScript file)
//! TorchBench's way through libtorch and write one JSON line per model and
//! configuration (docs/bench-results.md), which `gapscope diff` compares.
//! `--profile` also records every aten operator and writes a gapscope
//! capture (`.gst`) or a Kineto-style Chrome trace that `analyze`, `report`
//! and `export` read.
//!
//! The runner needs libtorch, so it exists only in builds with the `torch`
//! feature; other builds say how to get one.

use super::Exit;
use crate::cli::bench::BenchArgs;
use anyhow::Result;

/// Runs `gapscope bench`. Returns the exit status: 0, or 1 when a model
/// failed; errors (exit 2) come back as `Err`.
#[cfg(not(feature = "torch"))]
pub fn run(_args: &BenchArgs) -> Result<Exit> {
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
    use crate::cli::bench::{DeviceArg, ModeArg, PrecisionArg, Shape};
    use anyhow::{bail, Context};
    use gapscope_analyzers::format::ms;
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
    pub fn run(args: &BenchArgs) -> Result<Exit> {
        if args.list {
            let mut out = io::stdout().lock();
            for m in MODELS {
                writeln!(out, "{:<16} bs {:<5} {}", m.name, m.default_batch_size, m.about)?;
            }
            return Ok(Exit::OK);
        }
        let sources = sources(args)?;
        if args.profile.is_some() && (sources.len() != 1 || args.bs_sweep) {
            bail!("--profile records one run: name one model and leave out --bs-sweep");
        }
        if args.nvtx && matches!(args.device, DeviceArg::Cpu) {
            bail!("--nvtx needs --device cuda: the NVTX ranges go through libtorch's CUDA library");
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
            nvtx: args.nvtx,
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
                let until = if args.until_oom {
                    runner::SweepUntil::Failure
                } else {
                    runner::SweepUntil::NoGain
                };
                runner::sweep(source, &cfg, MAX_SWEEP_BATCH, until)
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
        Ok(Exit(u8::from(failed)))
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
        let key: Vec<String> = rec.config.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let line = match (rec.status.as_str(), rec.median_ns) {
            ("ok", Some(med)) => format!(
                "{} {}: median {} ms (min {}, max {}), {:.1} samples/s, peak RSS {} MiB{}",
                rec.model,
                key.join(" "),
                ms(med),
                ms(rec.min_ns.unwrap_or(0)),
                ms(rec.max_ns.unwrap_or(0)),
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

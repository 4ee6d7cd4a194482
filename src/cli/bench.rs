//! `gapscope bench`: its flags.

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

    /// With --bs-sweep: keep doubling until a run fails (out of memory),
    /// whatever the throughput does, to find the largest batch that fits.
    #[arg(long, requires = "bs_sweep")]
    pub until_oom: bool,

    /// Record every operator of the timed iterations into this file (one
    /// model only): a gapscope capture when it ends in `.gst`, else a
    /// Kineto-style Chrome trace.
    #[arg(long, value_name = "FILE")]
    pub profile: Option<PathBuf>,

    /// NVTX ranges in the timed iterations: one per operator (as PyTorch's
    /// emit_nvtx()) and `ProfilerStep#N` around each iteration, so that
    /// `gapscope record -- gapscope bench ... --nvtx` names the kernels'
    /// operators and analyses the timed steps alone. Needs --device cuda.
    #[arg(long)]
    pub nvtx: bool,

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

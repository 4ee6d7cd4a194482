//! `gapscope record`: its flags.

use clap::Args;
use std::ffi::OsString;
use std::path::PathBuf;

/// Examples shown by `gapscope record --help`.
pub const EXAMPLES: &str = "\
EXAMPLES:
    Record a training script, then see why the GPU sat idle:
        gapscope record -- python train.py --epochs 1
        gapscope analyze run.gst

    Operator names from PyTorch's NVTX ranges (wrap the steps in
    torch.autograd.profiler.emit_nvtx()), into a file of your choice:
        gapscope record -o resnet.gst -- python train.py --nvtx

    Every rank of a torchrun job, one capture per process, merged:
        gapscope record -o ddp.gst -- torchrun --nproc-per-node 8 train.py

    The same job kept as its ranks (rank-0.gst ... from each process's
    RANK), for the whole-job analysis of which rank held the others back:
        gapscope record --per-process -o job/ -- torchrun --nproc-per-node 8 train.py
        gapscope analyze job/

ENVIRONMENT:
    GAPSCOPE_CUPTI_LIBS   the libcupti to use (one path)
    GAPSCOPE_INJECT_LIB   the injection library (default: next to gapscope)
    GAPSCOPE_EXIT_TIMEOUT seconds a process may spend writing its capture at
                          exit (default 60)

EXIT STATUS:
    The program's own status (128+N when signal N ended it), also when
    nothing was recorded because it failed. 2 when gapscope could not set
    up or write the recording, 4 when the program succeeded but no process
    recorded anything (it never started CUDA, or recording could not start:
    the lines above say why), 126 when the command cannot be run, 127 when
    it is not found.";

/// `gapscope record`.
#[derive(Debug, Args)]
pub struct RecordArgs {
    /// Where to write the merged capture (default run.gst); with
    /// --per-process, the directory for the captures (default run/).
    #[arg(short, long, value_name = "PATH")]
    pub output: Option<PathBuf>,

    /// One capture per process instead of one merged: `rank-<R>.gst` when
    /// the process's environment held RANK at exit (torchrun sets it; a
    /// program may set it itself), else `pid-<P>.gst`, in the -o directory
    /// (created if missing). `gapscope analyze DIR/` then analyses the
    /// ranks as one job.
    #[arg(long)]
    pub per_process: bool,

    /// Do not record NVTX ranges (NVTX_INJECTION64_PATH is then removed
    /// from the program's environment, so no other NVTX tool takes CUPTI).
    #[arg(long)]
    pub no_nvtx: bool,

    /// Record GPU work and synchronisations only, no runtime or driver API
    /// calls: less overhead, but kernels are then not linked to the calls
    /// that launched them.
    #[arg(long)]
    pub no_api_calls: bool,

    /// The program to record and its arguments, after `--`.
    #[arg(last = true, required = true, value_name = "CMD")]
    pub command: Vec<OsString>,
}

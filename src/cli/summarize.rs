//! `gapscope summarize`: its flags.

use super::WindowArgs;
use clap::Args;
use std::path::PathBuf;

/// Examples shown by `gapscope summarize --help`.
pub const EXAMPLES: &str = "\
EXAMPLES:
    One rank's summary (a task of a distributed job analysis):
        gapscope summarize rank17.pt.trace.json.gz -o summaries/

    Every rank of a directory, then the job analysis from the summaries:
        gapscope summarize ./log/ -o summaries/
        gapscope analyze summaries/

EXIT STATUS:
    0 written (inputs that could not be read are named in warnings),
    2 nothing could be summarised, or DIR cannot be written.";

/// `gapscope summarize`.
#[derive(Debug, Args)]
pub struct SummarizeArgs {
    /// Kineto traces (`.json`, `.json.gz`), gapscope captures (`.gst`), or
    /// directories of them.
    #[arg(value_name = "TRACE", required = true)]
    pub traces: Vec<PathBuf>,

    /// The summary directory (created if missing): one subdirectory per
    /// table, one file per rank in each.
    #[arg(short, long, value_name = "DIR")]
    pub output: PathBuf,

    #[command(flatten)]
    pub window: WindowArgs,

    /// Traces summarised at once (default: one per CPU core).
    #[arg(
        short = 'j',
        long,
        value_name = "N",
        default_value_t = 0,
        hide_default_value = true
    )]
    pub jobs: usize,

    /// No warnings or summary line on stderr (errors are still printed).
    #[arg(short, long)]
    pub quiet: bool,
}

//! `gapscope summarize TRACE... -o DIR`: the per-rank step of a job's
//! analysis, on its own. Each trace becomes its rank's summary (docs/job.md,
//! "The per-rank summary"), written as Parquet tables into DIR, so that
//! thousands of ranks can be summarised as tasks of a distributed engine
//! and reduced by `gapscope analyze DIR` (docs/distributed.md).

use crate::cli::WindowArgs;
use anyhow::Result;
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

/// Runs `gapscope summarize`.
pub fn run(args: &SummarizeArgs) -> Result<()> {
    write(args)
}

#[cfg(not(feature = "parquet"))]
fn write(_: &SummarizeArgs) -> Result<()> {
    anyhow::bail!(
        "summarize writes Parquet: this gapscope was built without the `parquet` feature; rebuild with \
         `cargo install --path . --features parquet` (docs/parquet.md)"
    )
}

#[cfg(feature = "parquet")]
fn write(args: &SummarizeArgs) -> Result<()> {
    use crate::export::{parquet, summaries};
    use crate::inputs::{self, LoadOptions};
    use anyhow::{bail, Context};
    use gapscope_analyzers::analysis::AnalyzeOptions;
    use gapscope_analyzers::window::WindowOptions;
    use gapscope_collectors::kineto::ImportOptions;
    use std::io::Write;
    let dir = &args.output;
    if dir.exists() && !dir.is_dir() {
        bail!(
            "{}: not a directory; summarize writes its tables into a directory",
            dir.display()
        );
    }
    std::fs::create_dir_all(dir)
        .with_context(|| format!("{}: cannot create the output directory", dir.display()))?;
    let opts = LoadOptions {
        analyze: AnalyzeOptions {
            window: WindowOptions {
                steps: args.window.steps,
                exclude_last_step: args.window.exclude_last_step,
            },
            ..AnalyzeOptions::default()
        },
        import: ImportOptions { progress: false },
        limits: Default::default(),
        time_text: None,
        quiet: args.quiet,
        jobs: args.jobs,
        with_analysis: false,
    };
    let files = inputs::expand(&args.traces, args.quiet)?;
    if files.is_empty() {
        bail!("no traces to summarise; give Kineto traces (.json, .json.gz) or gapscope captures (.gst), or directories of them");
    }
    let single = files.len() == 1;
    let mut written = 0usize;
    let mut calls = 0usize;
    for r in inputs::load_each(&files, &opts) {
        let item = match r {
            Ok(item) => item,
            // One input: its error is the run's, as for `analyze`.
            Err(e) if single => return Err(e),
            Err(e) => {
                if !args.quiet {
                    inputs::warn(&format!("{e:#}; left out").replace('\n', " "));
                }
                continue;
            }
        };
        summaries::write(&item.summary, dir, &parquet::Options::default())
            .with_context(|| format!("{}: cannot write the summary of {}", dir.display(), item.name))?;
        written += 1;
        calls += item.summary.collectives.len();
    }
    if written == 0 {
        bail!(
            "none of the {} input files could be summarised (see the warnings above)",
            files.len()
        );
    }
    if !args.quiet {
        let _ = writeln!(
            std::io::stderr().lock(),
            "gapscope: wrote {}: {written} rank summar{}, {calls} collectives",
            dir.display(),
            if written == 1 { "y" } else { "ies" }
        );
    }
    Ok(())
}

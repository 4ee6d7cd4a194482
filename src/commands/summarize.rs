//! `gapscope summarize TRACE... -o DIR`: the per-rank step of a job's
//! analysis, on its own. Each trace becomes its rank's summary (docs/job.md,
//! "The per-rank summary"), written as Parquet tables into DIR, so that
//! thousands of ranks can be summarised as tasks of a distributed engine
//! and reduced by `gapscope analyze DIR` (docs/distributed.md).

use super::Exit;
use crate::cli::summarize::SummarizeArgs;
use anyhow::Result;

/// Runs `gapscope summarize`.
pub fn run(args: &SummarizeArgs) -> Result<Exit> {
    write(args)?;
    Ok(Exit::OK)
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
    use crate::inputs::batch::{self, LoadOptions};
    use anyhow::{bail, Context};
    use gapscope_analyzers::analysis::AnalyzeOptions;
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
    let analyze = AnalyzeOptions {
        window: args.window.options(),
        ..AnalyzeOptions::default()
    };
    let opts = LoadOptions {
        jobs: args.jobs,
        ..LoadOptions::for_job(analyze, args.quiet, false)
    };
    let files = batch::expand(&args.traces, args.quiet)?;
    if files.is_empty() {
        bail!("no traces to summarise; give Kineto traces (.json, .json.gz) or gapscope captures (.gst), or directories of them");
    }
    let single = files.len() == 1;
    let mut written = 0usize;
    let mut calls = 0usize;
    for r in batch::load_each(&files, &opts) {
        let item = match r {
            Ok(item) => item,
            // One input: its error is the run's, as for `analyze`.
            Err(e) if single => return Err(e),
            Err(e) => {
                if !args.quiet {
                    crate::inputs::warn(&format!("{e:#}; left out").replace('\n', " "));
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

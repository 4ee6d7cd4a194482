//! `gapscope report`: reads one trace (or one job's traces), analyses it
//! once and writes the page the report views build ([`crate::report`]).

use super::Exit;
use crate::cli::report::{ReportArgs, ReportFormat};
use crate::inputs::batch::{self, LoadOptions};
use crate::inputs::{self, DEMO_NAME};
use crate::report::{job, render, view};
use anyhow::{bail, Context, Result};
use gapscope_analyzers::analysis::AnalyzeOptions;
use gapscope_analyzers::Session;
use gapscope_collectors::kineto::ImportOptions;
use std::io::{self, IsTerminal, Write};
use std::path::Path;

/// Runs `gapscope report`.
pub fn run(args: &ReportArgs) -> Result<Exit> {
    let import = ImportOptions {
        progress: !args.quiet && io::stderr().is_terminal(),
    };
    if !args.demo && batch::is_batch(&args.traces) {
        return run_job(args);
    }
    let (name, trace) = match args.traces.first() {
        Some(path) if !args.demo => {
            let trace = inputs::load(path, &import)?;
            inputs::after_import();
            (path.display().to_string(), trace)
        }
        _ => (DEMO_NAME.to_string(), inputs::load_demo(&import)?),
    };
    if !args.quiet {
        inputs::warn_skipped(&name, &trace);
    }
    let options = AnalyzeOptions {
        window: args.window.options(),
        ..AnalyzeOptions::default()
    };
    let session = Session::new(&trace, &options);
    let view = view::build(&name, &session);
    let page = if args.debug_context {
        serde_json::to_string_pretty(&view)? + "\n"
    } else {
        match args.format() {
            ReportFormat::Html => render::html(&view)?,
            ReportFormat::Md => render::markdown(&view)?,
        }
    };
    write_page(args, &page)?;
    Ok(Exit::OK)
}

/// `report` of several traces: they must make one job.
fn run_job(args: &ReportArgs) -> Result<Exit> {
    let analyze = AnalyzeOptions {
        window: args.window.options(),
        ..AnalyzeOptions::default()
    };
    let outs = batch::analyse(&args.traces, &LoadOptions::for_job(analyze, args.quiet, true))?;
    let job = batch::one_job(&outs, &args.traces, "report covers one job")?;
    if !args.quiet {
        for w in &job.analysis.warnings {
            inputs::warn(w);
        }
    }
    let view = job::build(&job.analysis);
    let page = if args.debug_context {
        serde_json::to_string_pretty(&view)? + "\n"
    } else {
        match args.format() {
            ReportFormat::Html => render::job_html(&view)?,
            ReportFormat::Md => render::job_markdown(&view)?,
        }
    };
    write_page(args, &page)?;
    Ok(Exit::OK)
}

/// Writes the page to `args.output` and, unless quiet, says so on stderr.
fn write_page(args: &ReportArgs, page: &str) -> Result<()> {
    write_output(&args.output, page.as_bytes())?;
    if !args.quiet && args.output.as_os_str() != "-" {
        let _ = writeln!(
            io::stderr().lock(),
            "gapscope: wrote {} ({} bytes)",
            args.output.display(),
            page.len()
        );
    }
    Ok(())
}

/// Writes a new or regular file beside the target and renames it, so a
/// failed run never leaves a half-written page under the real name.
fn write_output(path: &Path, bytes: &[u8]) -> Result<()> {
    if path.as_os_str() == "-" {
        let mut out = io::stdout().lock();
        out.write_all(bytes)?;
        return Ok(out.flush()?);
    }
    if path.is_dir() {
        bail!(
            "{}: is a directory; give a file name, e.g. -o report.html",
            path.display()
        );
    }
    // A device or pipe (`-o /dev/null`, a FIFO) is written in place: renaming
    // a file over it would replace it.
    if path.exists() && !path.is_file() {
        return std::fs::write(path, bytes).with_context(|| format!("{}: cannot write", path.display()));
    }
    let mut tmp = path.file_name().unwrap_or_default().to_os_string();
    tmp.push(".partial");
    let tmp = path.with_file_name(tmp);
    std::fs::write(&tmp, bytes).with_context(|| format!("{}: cannot write", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("{}: cannot write", path.display()))
}

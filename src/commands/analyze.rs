//! `gapscope analyze`: import each trace, analyse it, print the result.
//!
//! All traces are imported and analysed before anything is printed, so an
//! unreadable file stops the run with one error line and no partial output
//! (a JSON consumer never sees half an array). Several traces, or a
//! directory, go to [`batch`]: the ranks of a job are analysed together.

use super::Exit;
use crate::analysed::{Analysed, Output};
use crate::cli::{AnalyzeArgs, Format};
use crate::inputs::batch::{self, LoadOptions};
use crate::inputs::{self, check_window, load_demo, load_partial, warn_incomplete, warn_skipped, DEMO_NAME};
use crate::render;
use anyhow::Result;
use gapscope_analyzers::analysis::AnalyzeOptions;
use gapscope_analyzers::analyze;
use gapscope_analyzers::window;
use gapscope_collectors::capture;
use gapscope_collectors::kineto::{ImportOptions, ReadLimits};
use gapscope_collectors::open::ReadOptions;
use gapscope_collectors::trace::Trace;
use std::io::{self, IsTerminal, Write};

/// Runs `gapscope analyze`.
pub fn run(args: &AnalyzeArgs) -> Result<Exit> {
    let import = ImportOptions {
        progress: !args.quiet && io::stderr().is_terminal(),
    };
    // A bad window is reported before any trace is read.
    let time = inputs::time_window(args.time_window.as_deref())?;
    let options = AnalyzeOptions {
        window: args.window.options(),
        time_window: time.map(|(_, t)| t),
        ..AnalyzeOptions::default()
    };
    if !args.demo && batch::is_batch(&args.traces) {
        return run_batch(args, options, time.map(|(text, _)| text));
    }
    let mut results = Vec::new();
    if args.demo || args.traces.is_empty() {
        let trace = load_demo(&import)?;
        if let Some((text, t)) = time {
            check_window(
                DEMO_NAME,
                &trace,
                &options.window,
                text,
                t,
                window::event_extent(&trace),
            )?;
        }
        results.push(analyse(DEMO_NAME, &trace, &options, args.quiet));
    }
    let limits = ReadLimits {
        max_events: args.max_events.map(|n| usize::try_from(n).unwrap_or(usize::MAX)),
        time_window: time.map(|(_, t)| t),
    };
    let read = ReadOptions { import, limits };
    for path in &args.traces {
        let imported = load_partial(path, &read)?;
        inputs::after_import();
        let name = path.display().to_string();
        if let Some((text, t)) = time {
            // The importer's extent covers the rows it left out too.
            let extent = imported.extent.unwrap_or((0, 0));
            check_window(&name, &imported.trace, &options.window, text, t, extent)?;
        }
        if !args.quiet {
            warn_incomplete(&name, &imported);
            if read.limits.max_events.is_some() && imported.trace.meta.format == capture::FORMAT_NAME {
                inputs::warn(&format!(
                    "{name}: --max-events applies to Kineto traces; a capture is read whole"
                ));
            }
        }
        results.push(analyse(&name, &imported.trace, &options, args.quiet));
    }
    // Buffered: stdout alone is line-buffered, and pretty JSON is one
    // write(2) per line (870k of them for a 14 MB analysis).
    let mut out = io::BufWriter::with_capacity(1 << 16, io::stdout().lock());
    match args.format {
        Format::Text => render::text::write(&mut out, &results)?,
        Format::Json => render::json::write(&mut out, &results)?,
    }
    out.flush()?;
    Ok(Exit::OK)
}

fn analyse(name: &str, trace: &Trace, options: &AnalyzeOptions, quiet: bool) -> Analysed {
    if !quiet {
        warn_skipped(name, trace);
    }
    Analysed {
        name: name.to_string(),
        analysis: analyze(trace, options),
    }
}

/// `gapscope analyze` of several traces or a directory: the ranks of each
/// job are analysed together, other traces alone. One result is printed as
/// it would be alone (a job's JSON is one object with `"kind": "job"`);
/// several give one text section each, or a JSON array in input order.
fn run_batch(args: &AnalyzeArgs, options: AnalyzeOptions, time_text: Option<&str>) -> Result<Exit> {
    let opts = LoadOptions {
        limits: ReadLimits {
            max_events: args.max_events.map(|n| usize::try_from(n).unwrap_or(usize::MAX)),
            time_window: options.time_window,
        },
        analyze: options,
        // Several traces at once: one progress bar each would garble the
        // terminal.
        import: ImportOptions { progress: false },
        time_text,
        quiet: args.quiet,
        jobs: args.jobs,
        with_analysis: true,
    };
    let outs = batch::analyse(&args.traces, &opts)?;
    if !args.quiet {
        for o in &outs {
            if let Output::Job(j) = o {
                for w in &j.analysis.warnings {
                    inputs::warn(w);
                }
            }
        }
    }
    // Buffered: stdout alone is line-buffered, and pretty JSON is one
    // write(2) per line (870k of them for a 14 MB analysis).
    let mut out = io::BufWriter::with_capacity(1 << 16, io::stdout().lock());
    match args.format {
        Format::Text => {
            for (i, o) in outs.iter().enumerate() {
                if i > 0 {
                    writeln!(out)?;
                }
                match o {
                    Output::Single(a) => render::text::write(&mut out, std::slice::from_ref(&**a))?,
                    Output::Job(j) => render::job::write(&mut out, &j.analysis, args.per_rank)?,
                }
            }
        }
        Format::Json => render::json::write_outputs(&mut out, &outs)?,
    }
    out.flush()?;
    Ok(Exit::OK)
}

//! `gapscope analyze`: import each trace, analyse it, print the result.
//!
//! All traces are imported and analysed before anything is printed, so an
//! unreadable file stops the run with one error line and no partial output
//! (a JSON consumer never sees half an array). Several traces, or a
//! directory, go to [`batch`]: the ranks of a job are analysed together.

use crate::cli::{AnalyzeArgs, Format};
use crate::render;
use crate::{batch, inputs};
use anyhow::{Context, Result};
use gapscope_analyzers::analysis::{analyze, Analysis, AnalyzeOptions};
use gapscope_analyzers::window::{self, parse_time_window, TimeRange, WindowOptions};
use gapscope_collectors::capture;
use gapscope_collectors::kineto::{self, ImportOptions, Imported, ReadLimits, TimeWindow};
use gapscope_collectors::trace::{Ns, Trace};
use std::io::{self, IsTerminal, Write};
use std::path::Path;

/// The demo trace, made by `fixtures/demo/generate.py` (see its README).
pub const DEMO_TRACE: &[u8] = include_bytes!("../fixtures/demo/demo.pt.trace.json.gz");

/// How the demo trace is named in output and messages.
pub const DEMO_NAME: &str = "demo.pt.trace.json.gz (built-in demo)";

/// One analysed trace, with the name the user knows it by.
pub struct Analysed {
    /// The path as given, or [`DEMO_NAME`].
    pub name: String,
    /// The result.
    pub analysis: Analysis,
}

/// Runs `gapscope analyze`.
pub fn run(args: &AnalyzeArgs) -> Result<()> {
    let import = ImportOptions {
        progress: !args.quiet && io::stderr().is_terminal(),
    };
    // A bad window is reported before any trace is read.
    let time = match &args.time_window {
        Some(text) => Some((
            text.as_str(),
            parse_time_window(text).map_err(|e| anyhow::anyhow!("--time-window {text}: {e}"))?,
        )),
        None => None,
    };
    let options = AnalyzeOptions {
        window: args.window_options(),
        time_window: time.map(|(_, t)| t),
        ..AnalyzeOptions::default()
    };
    if !args.demo && inputs::is_batch(&args.traces) {
        return batch::run(args, options, time.map(|(text, _)| text));
    }
    let mut results = Vec::new();
    if args.demo || args.traces.is_empty() {
        let trace = kineto::import_bytes(DEMO_TRACE, DEMO_NAME, &import)
            .context("the built-in demo trace did not import; this is a gapscope bug, please report it")?;
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
        time_window: time.map(|(_, t)| TimeWindow {
            start: t.start_ns,
            end: t.end_ns,
        }),
    };
    for path in &args.traces {
        let imported = load_partial(path, &import, &limits)?;
        let name = path.display().to_string();
        if let Some((text, t)) = time {
            // The importer's extent covers the rows it left out too.
            let extent = imported.extent.unwrap_or((0, 0));
            check_window(&name, &imported.trace, &options.window, text, t, extent)?;
        }
        if !args.quiet {
            warn_incomplete(&name, &imported);
            if limits.max_events.is_some() && imported.trace.meta.format == capture::FORMAT_NAME {
                let _ = writeln!(
                    io::stderr().lock(),
                    "gapscope: warning: {name}: --max-events applies to Kineto traces; a capture is read whole"
                );
            }
        }
        results.push(analyse(&name, &imported.trace, &options, args.quiet));
    }
    let mut out = io::stdout().lock();
    match args.format {
        Format::Text => render::text::write(&mut out, &results)?,
        Format::Json => render::json::write(&mut out, &results)?,
    }
    out.flush()?;
    Ok(())
}

/// Imports one trace file: a gapscope capture (`.gst`, told by its first
/// bytes, whatever its name) or a Kineto trace. The readers' messages
/// already read `<file>: <problem>; <what to do>`, so they are passed on as
/// they are, on one line.
pub fn load(path: &Path, import: &ImportOptions) -> Result<Trace> {
    let name = path.display().to_string();
    match sniff(path)? {
        Input::Capture => capture::read_file(path).map_err(line),
        Input::Kineto => kineto::import_file(path, import).map_err(line),
        Input::Piped(b) if capture::is_capture(&b) => capture::read_bytes(&b, &name).map_err(line),
        Input::Piped(b) => kineto::import_bytes(&b, &name, import).map_err(line),
    }
}

/// Imports one trace file as far as it can be read: a cut Kineto file gives
/// the events before the cut (see [`warn_incomplete`]), `limits` a slice. A
/// capture is written whole (through a renamed temporary file), so it is
/// read whole or not at all, and `limits` do not apply to it.
pub fn load_partial(path: &Path, import: &ImportOptions, limits: &ReadLimits) -> Result<Imported> {
    let name = path.display().to_string();
    let trace = match sniff(path)? {
        Input::Capture => capture::read_file(path).map_err(line)?,
        Input::Piped(b) if capture::is_capture(&b) => capture::read_bytes(&b, &name).map_err(line)?,
        Input::Kineto => return kineto::import_file_partial(path, import, limits).map_err(line),
        Input::Piped(b) => return kineto::import_bytes_partial(&b, &name, import, limits).map_err(line),
    };
    let events = trace.gpu.len() + trace.runtime.len() + trace.cpu_ops.len() + trace.markers.len();
    // A time window is cut by the analysis: the extent is the whole trace's.
    let extent = (events > 0).then(|| window::event_extent(&trace));
    Ok(Imported {
        trace,
        events,
        truncated: None,
        limited: false,
        extent,
        dropped: 0,
    })
}

/// What a path holds.
enum Input {
    /// A regular file that starts like a capture.
    Capture,
    /// Anything else the Kineto importer opens itself (and names in its
    /// errors when it cannot).
    Kineto,
    /// A pipe or device (`<(zcat run.json.gz)`): read once, here, since
    /// sniffing its first bytes would consume them.
    Piped(Vec<u8>),
}

fn sniff(path: &Path) -> Result<Input> {
    match std::fs::metadata(path) {
        Ok(m) if !m.is_file() && !m.is_dir() => std::fs::read(path).map(Input::Piped).map_err(|e| {
            anyhow::anyhow!(
                "{}: cannot read the file ({e}); check the path and its permissions",
                path.display()
            )
        }),
        _ if capture::is_capture_file(path) => Ok(Input::Capture),
        _ => Ok(Input::Kineto),
    }
}

fn line(e: impl std::fmt::Display) -> anyhow::Error {
    anyhow::anyhow!(one_line(&e.to_string()))
}

/// One warning line per reason a trace was read only in part (cut short,
/// or `--max-events`), saying where it ends and how many events were read.
pub fn warn_incomplete(name: &str, imported: &Imported) {
    for w in imported.warnings(name) {
        let _ = writeln!(io::stderr().lock(), "gapscope: warning: {}", one_line(&w));
    }
}

/// Imports the built-in demo trace.
pub fn load_demo(import: &ImportOptions) -> Result<Trace> {
    kineto::import_bytes(DEMO_TRACE, DEMO_NAME, import)
        .context("the built-in demo trace did not import; this is a gapscope bug, please report it")
}

/// One error line when the time window `text` selects nothing of a trace
/// whose events run over `extent` (ns since its first event).
pub fn check_window(
    name: &str,
    trace: &Trace,
    steps: &WindowOptions,
    text: &str,
    t: TimeRange,
    extent: (Ns, Ns),
) -> Result<()> {
    window::check_time_window(trace, steps, t, extent).map_err(|e| anyhow::anyhow!(e.message(name, text)))
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
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

/// One line for everything the importer skipped, so a damaged trace is
/// noticed without drowning the output.
pub fn warn_skipped(name: &str, trace: &Trace) {
    let skipped: Vec<(&str, u64)> = trace.diagnostics.skipped().collect();
    let n: u64 = skipped.iter().map(|(_, v)| v).sum();
    if n == 0 {
        return;
    }
    let reasons: Vec<String> = skipped.iter().map(|(k, v)| format!("{k}: {v}")).collect();
    let events = if n == 1 { "event" } else { "events" };
    let _ = writeln!(
        io::stderr().lock(),
        "gapscope: warning: {name}: skipped {n} {events} ({})",
        reasons.join(", ")
    );
}

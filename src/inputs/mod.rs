//! What the subcommands read, and the warnings reading gives. Every trace
//! file goes through the collectors' one loader
//! ([`gapscope_collectors::open`]: Kineto JSON, gzip, captures, pipes);
//! this module adds the built-in demo trace, the checks of a time window
//! against what was read, and the `gapscope: warning:` lines. [`batch`]
//! reads several traces or a directory and groups them into jobs.
//!
//! Views never read files: the commands read through here and hand the
//! views a trace, a `Session` or a job.

pub mod batch;
#[cfg(feature = "parquet")]
pub mod summaries;

use anyhow::{Context, Result};
use gapscope_analyzers::window::{self, TimeRange, WindowOptions};
use gapscope_collectors::kineto::{self, ImportOptions, Imported};
use gapscope_collectors::open::{open, open_whole, ReadOptions};
use gapscope_collectors::trace::{Diagnostics, Ns, Trace};
use std::io::{self, Write};
use std::path::Path;

/// The demo trace, made by `fixtures/demo/generate.py` (see its README).
pub const DEMO_TRACE: &[u8] = include_bytes!("../../fixtures/demo/demo.pt.trace.json.gz");

/// How the demo trace is named in output and messages.
pub const DEMO_NAME: &str = "demo.pt.trace.json.gz (built-in demo)";

/// Reads the whole trace at `path` (a file cut short is an error). The
/// loader's messages already read `<file>: <problem>; <what to do>`, so
/// they are passed on as they are, on one line.
pub fn load(path: &Path, import: &ImportOptions) -> Result<Trace> {
    open_whole(path, import).map_err(line)
}

/// Reads the trace at `path` as far as it can be read: a cut Kineto file
/// gives the events before the cut (see [`warn_incomplete`]), `opts.limits`
/// a slice.
pub fn load_partial(path: &Path, opts: &ReadOptions) -> Result<Imported> {
    open(path, opts).map_err(line)
}

/// Fixes the allocator's mmap threshold at [`ANALYSIS_MMAP_THRESHOLD`] once
/// a command's one trace is read, so that what the analysis frees above it
/// goes back to the kernel.
///
/// glibc raises its threshold each time a mapped block is freed, up to
/// 32 MiB. The import frees its read windows, chunk rows and gzip blocks,
/// so the analysis' vectors of a few MiB then come from the heaps, and once
/// freed they stay resident until the process ends. Fixed at 4 MiB after
/// the import, peak RSS fell 17-30 MiB (5-9%) on the benchmark's DDP
/// traces, plain and `.json.gz` (bench/README.md, "The allocator after the
/// import").
///
/// Not for batches, whose imports run beside each other: there every 4 MiB
/// gzip block and 32 MiB read window would be mapped afresh. Not in the
/// library either: the Python API's host process keeps its allocator as it
/// is.
pub fn after_import() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt changes a malloc tunable; no allocation is touched.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, ANALYSIS_MMAP_THRESHOLD);
    }
}

/// The mmap threshold during the analysis (see [`after_import`]): the
/// per-device columns of a big trace (segments, pieces, the replay graph)
/// are above it, the many small vectors below.
const ANALYSIS_MMAP_THRESHOLD: i32 = 4 << 20;

/// Imports the built-in demo trace.
pub fn load_demo(import: &ImportOptions) -> Result<Trace> {
    kineto::import_bytes(DEMO_TRACE, DEMO_NAME, import)
        .context("the built-in demo trace did not import; this is a gapscope bug, please report it")
}

fn line(e: impl std::fmt::Display) -> anyhow::Error {
    anyhow::anyhow!(one_line(&e.to_string()))
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
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

/// `--time-window TEXT` parsed, with its text kept for messages; `None`
/// without the flag. A bad window is one line, before any trace is read.
pub fn time_window(text: Option<&str>) -> Result<Option<(&str, TimeRange)>> {
    text.map(|t| {
        window::parse_time_window(t)
            .map(|w| (t, w))
            .map_err(|e| anyhow::anyhow!("--time-window {t}: {e}"))
    })
    .transpose()
}

/// One warning line on stderr.
pub fn warn(msg: &str) {
    let _ = writeln!(io::stderr().lock(), "gapscope: warning: {msg}");
}

/// One warning line per reason a trace was read only in part (cut short,
/// or `--max-events`), saying where it ends and how many events were read.
pub fn warn_incomplete(name: &str, imported: &Imported) {
    for w in imported.warnings(name) {
        warn(&one_line(&w));
    }
}

/// One line for everything the importer skipped, so a damaged trace is
/// noticed without drowning the output; and one when GPU rows were linked
/// to their launch by time because several calls share their correlation
/// id (files joined, ids reused), since a link then rests on the clocks.
pub fn warn_skipped(name: &str, trace: &Trace) {
    if let Some(line) = trace.diagnostics.skipped_line(name) {
        warn(&line);
    }
    if let Some(n) = trace.diagnostics.counts.get(Diagnostics::CORRELATION_REUSED) {
        warn(&format!(
            "{name}: {n} GPU rows have a correlation id that several runtime calls share; \
             each is linked to the latest of them that started at or before it"
        ));
    }
}

//! `gapscope export`: write a trace as a timeline to open in
//! ui.perfetto.dev (native Perfetto protobuf) or in any Chrome-trace viewer
//! (Kineto-compatible JSON).

use crate::export::{chrome, idle, perfetto};
use anyhow::{Context, Result};
use clap::{Args, ValueEnum};
use gapscope_collectors::kineto::{self, ImportOptions};
use std::fs::File;
use std::io::{self, BufWriter, IsTerminal, Write};
use std::path::{Path, PathBuf};

/// Examples shown by `gapscope export --help`.
pub const EXAMPLES: &str = "\
EXAMPLES:
    A Perfetto timeline with GPU idle gaps named by cause, launch-to-kernel
    flows, GPU utilization and launch queue counters:
        gapscope export run.pt.trace.json.gz -o run.pftrace
    then open run.pftrace in https://ui.perfetto.dev

    Kineto-compatible Chrome JSON (re-imports into gapscope, HTA, TensorBoard):
        gapscope export run.pt.trace.json.gz --format chrome -o run.json";

/// `gapscope export`.
#[derive(Debug, Args)]
pub struct ExportArgs {
    /// Kineto trace (`.json` or `.json.gz`).
    #[arg(value_name = "TRACE")]
    pub trace: PathBuf,

    /// Where to write the timeline.
    #[arg(short, long, value_name = "FILE")]
    pub output: PathBuf,

    /// Timeline format.
    #[arg(long, value_enum, default_value_t = ExportFormat::Perfetto)]
    pub format: ExportFormat,

    /// Also write what the exporter emitted (packets, tracks, slices, flows,
    /// counter samples, bytes) as JSON to FILE: the numbers a trace
    /// processor must report back when it loads the timeline.
    #[arg(long, value_name = "FILE")]
    pub stats_json: Option<PathBuf>,

    /// No summary or progress on stderr (errors are still printed).
    #[arg(short, long)]
    pub quiet: bool,
}

/// What `export` writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ExportFormat {
    /// Native Perfetto protobuf (`.pftrace`).
    Perfetto,
    /// Kineto-compatible Chrome trace JSON.
    Chrome,
}

/// Runs `gapscope export`.
pub fn run(args: &ExportArgs) -> Result<()> {
    let import = ImportOptions {
        progress: !args.quiet && io::stderr().is_terminal(),
    };
    let trace = kineto::import_file(&args.trace, &import).map_err(|e| anyhow::anyhow!("{e}"))?;
    // Write beside the target and rename at the end: a truncated trace
    // loads its prefix without any error (perfetto.md pitfall 15), so a
    // failed export must not leave one behind under the real name.
    let tmp = tmp_path(&args.output);
    let file = File::create(&tmp).with_context(|| format!("{}: cannot create", tmp.display()))?;
    let out = BufWriter::with_capacity(1 << 20, file);
    let (summary, stats) = match args.format {
        ExportFormat::Perfetto => {
            let gaps = idle::idle_gaps(&trace);
            // Findings do not exist yet; when the detectors land, their
            // spans go here and get a "Findings" track under each GPU.
            let findings: &[perfetto::FindingSpan] = &[];
            let c = perfetto::write(&trace, &gaps, findings, &perfetto::Options::default(), out);
            let c = c.with_context(|| format!("{}: write failed", tmp.display()));
            let c = c.inspect_err(|_| {
                let _ = std::fs::remove_file(&tmp);
            })?;
            // Slice and counter tracks counted apart, and the total with the
            // process, thread-group and GPU-group tracks that hold them.
            let summary = format!(
                "{} slices on {} slice tracks, {} counter samples on {} counter tracks \
                 ({} tracks in all), {} flows, {} bytes",
                c.slices, c.slice_tracks, c.counter_samples, c.counter_tracks, c.tracks, c.flows, c.bytes
            );
            (summary, serde_json::to_string_pretty(&c)?)
        }
        ExportFormat::Chrome => {
            let c = chrome::write(&trace, out).with_context(|| format!("{}: write failed", tmp.display()));
            let c = c.inspect_err(|_| {
                let _ = std::fs::remove_file(&tmp);
            })?;
            let summary = format!("{} events, {} flows", c.events, c.flows);
            (summary, serde_json::to_string_pretty(&c)?)
        }
    };
    std::fs::rename(&tmp, &args.output)
        .with_context(|| format!("{}: cannot write", args.output.display()))?;
    if let Some(p) = &args.stats_json {
        std::fs::write(p, stats + "\n").with_context(|| format!("{}: cannot write", p.display()))?;
    }
    if !args.quiet {
        let _ = writeln!(
            io::stderr().lock(),
            "gapscope: wrote {}: {summary}",
            args.output.display()
        );
    }
    Ok(())
}

fn tmp_path(out: &Path) -> PathBuf {
    let mut name = out.file_name().unwrap_or_default().to_os_string();
    name.push(".partial");
    out.with_file_name(name)
}

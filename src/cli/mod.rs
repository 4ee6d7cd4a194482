//! The command line, as clap sees it: every subcommand's flags, examples
//! and value types, one file each. Nothing here runs anything (the
//! subcommands are in [`crate::commands`]); turning flags into library
//! options happens at the edge ([`WindowArgs::options`]), so the library
//! crates never see clap.

pub mod bench;
pub mod diff;
pub mod export;
pub mod record;
pub mod report;
pub mod summarize;

use clap::{Args, Parser, Subcommand, ValueEnum};
use gapscope_analyzers::window::{parse_steps, WindowOptions};
use std::path::PathBuf;

const EXAMPLES: &str = "\
EXAMPLES:
    Why was the GPU idle in this trace?
        gapscope analyze run.pt.trace.json.gz

    See a result right away, on the small trace built into gapscope:
        gapscope analyze --demo

    Machine-readable output (schema: docs/json-schema.md):
        gapscope analyze --format json run.pt.trace.json.gz > analysis.json

    Only steps 5 to 9, or every step but the last (as HTA does):
        gapscope analyze --steps 5..9 run.pt.trace.json.gz
        gapscope analyze --exclude-last-step run.pt.trace.json.gz

    A whole job: every rank's trace (a tensorboard_trace_handler directory,
    or the files): clock alignment, late ranks and what they were doing:
        gapscope analyze ./log/
        gapscope analyze rank0.json.gz rank1.json.gz rank2.json.gz rank3.json.gz

    Only 2.5 s to 4 s after the trace's first event (a slice of a trace too
    big to read whole: events outside it are dropped as they are read):
        gapscope analyze --time-window 2.5s..4s big.pt.trace.json.gz
        gapscope analyze --time-window ..500ms big.pt.trace.json.gz

EXIT STATUS:
    0 analysed, 2 an error (unreadable trace, bad flag). With several traces,
    one that cannot be read is left out with a warning; 2 when none could be.";

/// Why your GPU sits idle: reads PyTorch profiler (Kineto) traces and splits
/// each GPU's time into compute, communication, data movement and idle.
#[derive(Debug, Parser)]
#[command(name = "gapscope", version, about, after_help = EXAMPLES)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Break down where each GPU's time went, per device and per step.
    #[command(after_help = EXAMPLES)]
    Analyze(AnalyzeArgs),

    /// Write the trace as a timeline: Perfetto protobuf (ui.perfetto.dev) or
    /// Kineto-compatible Chrome JSON.
    #[command(after_help = export::EXAMPLES)]
    Export(export::ExportArgs),

    /// Write one self-contained HTML page (or Markdown) explaining why the
    /// GPUs sat idle: breakdowns, causes, timeline, operators, kernels.
    #[command(after_help = report::EXAMPLES)]
    Report(report::ReportArgs),

    /// Compare two traces or two bench-result files: what changed, and
    /// whether NEW regressed (exit status 1).
    #[command(after_help = diff::EXAMPLES)]
    Diff(diff::DiffArgs),

    /// Run built-in models (or a TorchScript file) through libtorch, time
    /// them and write JSON lines that `diff` compares (needs the `torch`
    /// build feature).
    #[command(after_help = bench::EXAMPLES)]
    Bench(bench::BenchArgs),

    /// The per-rank step of a job's analysis: write each trace's rank
    /// summary as Parquet, for a distributed reduce (`gapscope analyze DIR`
    /// reads them; needs the `parquet` build feature).
    #[command(after_help = summarize::EXAMPLES)]
    Summarize(summarize::SummarizeArgs),

    /// Run any CUDA program (after `--`) and record every one of its
    /// processes through CUPTI: kernels, copies, syncs, API calls and NVTX
    /// ranges, merged into one capture that the other subcommands read.
    #[command(after_help = record::EXAMPLES)]
    Record(record::RecordArgs),
}

/// `gapscope analyze`.
#[derive(Debug, Args)]
pub struct AnalyzeArgs {
    /// Kineto traces (`.json` or `.json.gz`), gapscope captures (`.gst`),
    /// or directories of them (a `tensorboard_trace_handler` log dir). The
    /// ranks of one job (by `distributedInfo`, else `rank`/`worker` in the
    /// file name) are analysed together. None: the built-in demo trace.
    #[arg(value_name = "TRACE")]
    pub traces: Vec<PathBuf>,

    /// Analyse the small demo trace built into gapscope (no GPU or files
    /// needed).
    #[arg(long, conflicts_with = "traces")]
    pub demo: bool,

    /// Output format. JSON is one object per trace, an array of them when
    /// more than one trace is given.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,

    #[command(flatten)]
    pub window: WindowArgs,

    /// Read only the first N events of each trace (in file order), to
    /// analyse the start of a trace too big to read whole.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub max_events: Option<u64>,

    /// Analyse only this slice of time, measured from the trace's first
    /// event: START..END with units ns, us, ms or s (`2.5s..4s`,
    /// `1500ms..2s`); either end may be left open (`..4s`, `2.5s..`).
    /// Events outside it are dropped while the trace is read, so a trace
    /// too big to read whole can be analysed a slice at a time (a window
    /// with a start reads the file twice: first to find its first event).
    /// Ops that straddle an edge are cut at it. With --steps or
    /// --exclude-last-step the window is intersected with the selected
    /// steps' span; an empty intersection is an error.
    #[arg(long, value_name = "START..END")]
    pub time_window: Option<String>,

    /// Traces analysed at once when several are given (default: one per
    /// CPU core). Each holds one trace in memory.
    #[arg(
        short = 'j',
        long,
        value_name = "N",
        default_value_t = 0,
        hide_default_value = true
    )]
    pub jobs: usize,

    /// For a job of several ranks: also print each rank's own analysis.
    #[arg(long)]
    pub per_rank: bool,

    /// No progress or warnings on stderr (errors are still printed).
    #[arg(short, long)]
    pub quiet: bool,
}

/// Which part of the trace is analysed.
#[derive(Debug, Args)]
pub struct WindowArgs {
    /// Only steps A to B (both included), by the N of `ProfilerStep#N`.
    #[arg(long, value_name = "A..B", value_parser = parse_steps)]
    pub steps: Option<(u64, u64)>,

    /// Leave out the last profiled step (HTA's default), often cut short by
    /// the profiler stopping.
    #[arg(long)]
    pub exclude_last_step: bool,
}

/// How results are printed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// Tables for people.
    Text,
    /// The documented JSON schema (docs/json-schema.md).
    Json,
}

impl WindowArgs {
    /// The analyzers' window selection.
    pub fn options(&self) -> WindowOptions {
        WindowOptions {
            steps: self.steps,
            exclude_last_step: self.exclude_last_step,
        }
    }
}

/// Whether `e` is a usage error (not `--help` or `--version`) of `gapscope
/// bench`, which reports them in one line. Which subcommand was being
/// parsed is asked of clap itself, parsing again with errors ignored.
pub fn is_bench_usage_error(e: &clap::Error) -> bool {
    use clap::error::ErrorKind;
    use clap::CommandFactory;
    e.use_stderr()
        && !matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion)
        && Cli::command()
            .ignore_errors(true)
            .try_get_matches()
            .is_ok_and(|m| m.subcommand_name() == Some("bench"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_definition_is_valid() {
        Cli::command().debug_assert();
    }

    #[test]
    fn demo_and_traces_conflict() {
        let r = Cli::try_parse_from(["gapscope", "analyze", "--demo", "x.json"]);
        assert!(r.is_err());
    }
}

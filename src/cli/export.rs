//! `gapscope export`: its flags.

use super::WindowArgs;
use clap::{Args, ValueEnum};
use std::path::PathBuf;

/// Examples shown by `gapscope export --help`.
pub const EXAMPLES: &str = "\
EXAMPLES:
    A Perfetto timeline with GPU idle gaps named by cause, launch-to-kernel
    flows, GPU utilization and launch queue counters:
        gapscope export run.pt.trace.json.gz -o run.pftrace
    then open run.pftrace in https://ui.perfetto.dev

    Kineto-compatible Chrome JSON (re-imports into gapscope, HTA, TensorBoard):
        gapscope export run.pt.trace.json.gz --format chrome -o run.json

    The trace's tables as Parquet files in a directory, for pandas, polars
    or duckdb (feature `parquet`; columns in docs/parquet.md):
        gapscope export run.pt.trace.json.gz --format parquet -o run_tables/

    A gapscope capture (several times smaller than the .json.gz, read faster):
        gapscope export run.pt.trace.json.gz --format gst -o run.gst

    Only steps 10 to 12 of a long recording, as a capture to share (what
    `gapscope analyze --steps 10..12` reads of the whole one):
        gapscope export big.gst --steps 10..12 --format gst -o steps10-12.gst";

/// `gapscope export`.
#[derive(Debug, Args)]
pub struct ExportArgs {
    /// Kineto trace (`.json` or `.json.gz`) or gapscope capture (`.gst`);
    /// or the ranks of one job: several traces, or a directory of them
    /// (Perfetto: one process group per rank on the job's aligned clock).
    #[arg(value_name = "TRACE", required = true)]
    pub traces: Vec<PathBuf>,

    /// Where to write the timeline (for `--format parquet`, a directory:
    /// created if missing, one `<table>.parquet` per table).
    #[arg(short, long, value_name = "FILE")]
    pub output: PathBuf,

    /// Timeline format.
    #[arg(long, value_enum, default_value_t = ExportFormat::Perfetto)]
    pub format: ExportFormat,

    /// Export only what `gapscope analyze` would read with the same
    /// --steps / --exclude-last-step (one trace, not a job): the rows that
    /// start inside the selected steps' CPU range, and the GPU work their
    /// calls launched.
    #[command(flatten)]
    pub window: WindowArgs,

    /// Export only this slice of time, as `gapscope analyze --time-window`
    /// reads it (one trace, not a job): START..END from the trace's first
    /// event, units ns, us, ms or s; rows that straddle an edge are cut at
    /// it.
    #[arg(long, value_name = "START..END")]
    pub time_window: Option<String>,

    /// Also write what the exporter emitted (packets, tracks, slices, flows,
    /// counter samples, bytes) as JSON to FILE: the numbers a trace
    /// processor must report back when it loads the timeline.
    #[arg(long, value_name = "FILE")]
    pub stats_json: Option<PathBuf>,

    /// Write plain Perfetto packets instead of zlib-compressed chunks of
    /// them (3-6x larger; for tools that cannot inflate
    /// `compressed_packets`); Parquet column chunks uncompressed instead of
    /// Snappy. Chrome JSON is never compressed.
    #[arg(long)]
    pub no_compress: bool,

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
    /// The Trace tables, one Parquet file each, into the `-o` directory
    /// (docs/parquet.md; needs the `parquet` feature).
    Parquet,
    /// gapscope capture (`.gst`, docs/capture-format.md).
    Gst,
}

//! The command line, as clap sees it. Only flags live here; turning them into
//! library options happens at the edge ([`AnalyzeArgs::window_options`]), so
//! the library crates never see clap.

use clap::{Args, Parser, Subcommand, ValueEnum};
use gapscope_analyzers::window::{TimeRange, WindowOptions};
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

    Only 2.5 s to 4 s after the trace's first event (a slice of a trace too
    big to read whole: events outside it are dropped as they are read):
        gapscope analyze --time-window 2.5s..4s big.pt.trace.json.gz
        gapscope analyze --time-window ..500ms big.pt.trace.json.gz

EXIT STATUS:
    0 analysed, 2 an error (unreadable trace, bad flag).";

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
    #[command(after_help = crate::export_cmd::EXAMPLES)]
    Export(crate::export_cmd::ExportArgs),

    /// Write one self-contained HTML page (or Markdown) explaining why the
    /// GPUs sat idle: breakdowns, causes, timeline, operators, kernels.
    #[command(after_help = crate::report::EXAMPLES)]
    Report(crate::report::ReportArgs),

    /// Compare two traces or two bench-result files: what changed, and
    /// whether NEW regressed (exit status 1).
    #[command(after_help = crate::diff_cmd::EXAMPLES)]
    Diff(crate::diff_cmd::DiffArgs),

    /// Run built-in models (or a TorchScript file) through libtorch, time
    /// them and write JSON lines that `diff` compares (needs the `torch`
    /// build feature).
    #[command(after_help = crate::bench_cmd::EXAMPLES)]
    Bench(crate::bench_cmd::BenchArgs),

    /// Run any CUDA program (after `--`) and record every one of its
    /// processes through CUPTI: kernels, copies, syncs, API calls and NVTX
    /// ranges, merged into one capture that the other subcommands read.
    #[command(after_help = crate::record_cmd::EXAMPLES)]
    Record(crate::record_cmd::RecordArgs),
}

/// `gapscope analyze`.
#[derive(Debug, Args)]
pub struct AnalyzeArgs {
    /// Kineto traces (`.json` or `.json.gz`) or gapscope captures (`.gst`).
    /// None: the built-in demo trace.
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

impl AnalyzeArgs {
    /// The analyzers' window selection.
    pub fn window_options(&self) -> WindowOptions {
        WindowOptions {
            steps: self.window.steps,
            exclude_last_step: self.window.exclude_last_step,
        }
    }
}

/// Parses `START..END` (`2.5s..4s`, `..4s`, `2.5s..`) into ns after the
/// trace's first event. Every bound needs a unit (ns, us, ms, s) and a whole
/// number of ns; the window must not be empty.
pub fn parse_time_window(s: &str) -> Result<TimeRange, String> {
    let Some((a, b)) = s.split_once("..") else {
        return Err("write it as START..END with units, e.g. 2.5s..4s (or ..4s, 2.5s..)".into());
    };
    let bound = |t: &str| -> Result<Option<i64>, String> {
        let t = t.trim();
        if t.is_empty() {
            return Ok(None);
        }
        duration_ns(t).map(Some)
    };
    let (start, end) = (bound(a)?, bound(b)?);
    match (start, end) {
        (None, None) => Err("give a start, an end or both, e.g. 2.5s..4s".into()),
        (Some(a), Some(b)) if a >= b => Err("the window is empty: START must be before END".into()),
        (_, Some(0)) => Err("the window is empty: END must be after the trace's start".into()),
        _ => Ok(TimeRange {
            start_ns: start,
            end_ns: end,
        }),
    }
}

/// `2.5s`, `1500ms`, `40us`, `7ns` in ns, exactly.
fn duration_ns(t: &str) -> Result<i64, String> {
    let bad = || format!("`{t}` is not a time; write a number and a unit: ns, us, ms or s (e.g. 2.5s)");
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .ok_or_else(bad)?;
    let (num, unit) = t.split_at(split);
    let scale: u64 = match unit.trim() {
        "ns" => 1,
        "us" | "µs" => 1_000,
        "ms" => 1_000_000,
        "s" => 1_000_000_000,
        _ => return Err(bad()),
    };
    let (whole, frac) = num.split_once('.').unwrap_or((num, ""));
    if (whole.is_empty() && frac.is_empty()) || frac.contains('.') || frac.len() > 9 {
        return Err(bad());
    }
    let too_big = || format!("`{t}` is too large a time");
    let whole: u64 = if whole.is_empty() {
        0
    } else {
        whole.parse().map_err(|_| too_big())?
    };
    let frac_scaled = if frac.is_empty() {
        0
    } else {
        let digits: u64 = frac.parse().map_err(|_| bad())?;
        let den = 10u64.pow(frac.len() as u32);
        let ns = u128::from(digits) * u128::from(scale);
        if ns % u128::from(den) != 0 {
            return Err(format!("`{t}` is finer than 1 ns"));
        }
        (ns / u128::from(den)) as u64
    };
    whole
        .checked_mul(scale)
        .and_then(|w| w.checked_add(frac_scaled))
        .and_then(|n| i64::try_from(n).ok())
        .ok_or_else(too_big)
}

/// Parses `A..B` (also `A..=B` and a single `A`) into an inclusive range.
fn parse_steps(s: &str) -> Result<(u64, u64), String> {
    let num = |t: &str| {
        t.trim()
            .parse::<u64>()
            .map_err(|_| format!("`{t}` is not a step number; write the range as A..B, e.g. 5..9"))
    };
    let (a, b) = match s.split_once("..") {
        Some((a, b)) => (num(a)?, num(b.strip_prefix('=').unwrap_or(b))?),
        None => {
            let a = num(s)?;
            (a, a)
        }
    };
    if a > b {
        return Err(format!(
            "the range {s} is empty; the first step must not be after the last"
        ));
    }
    Ok((a, b))
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
    fn steps_ranges() {
        assert_eq!(parse_steps("5..9"), Ok((5, 9)));
        assert_eq!(parse_steps("5..=9"), Ok((5, 9)));
        assert_eq!(parse_steps("7"), Ok((7, 7)));
        assert!(parse_steps("9..5").is_err());
        assert!(parse_steps("a..5").is_err());
        assert!(parse_steps("..5").is_err());
    }

    #[test]
    fn time_windows() {
        let w = |a, b| {
            Ok(TimeRange {
                start_ns: a,
                end_ns: b,
            })
        };
        assert_eq!(
            parse_time_window("2.5s..4s"),
            w(Some(2_500_000_000), Some(4_000_000_000))
        );
        assert_eq!(parse_time_window("..4s"), w(None, Some(4_000_000_000)));
        assert_eq!(parse_time_window("2.5s.."), w(Some(2_500_000_000), None));
        assert_eq!(
            parse_time_window("1500ms..2s"),
            w(Some(1_500_000_000), Some(2_000_000_000))
        );
        assert_eq!(parse_time_window("40us..0.05ms"), w(Some(40_000), Some(50_000)));
        assert_eq!(parse_time_window("0ns..7ns"), w(Some(0), Some(7)));
        assert_eq!(
            parse_time_window(" 1 s .. 2 s "),
            w(Some(1_000_000_000), Some(2_000_000_000))
        );
        assert_eq!(parse_time_window(".5s.."), w(Some(500_000_000), None));
        for bad in [
            "",
            "..",
            "4s",
            "2.5..4s",
            "2.5x..4s",
            "-1s..2s",
            "4s..2s",
            "2s..2s",
            "..0s",
            "1.5ns..2ns",
            "1..2",
            "s..2s",
            "1.2.3s..4s",
            "99999999999s..",
            "1e3s..",
        ] {
            assert!(parse_time_window(bad).is_err(), "{bad:?} was accepted");
        }
    }

    #[test]
    fn demo_and_traces_conflict() {
        let r = Cli::try_parse_from(["gapscope", "analyze", "--demo", "x.json"]);
        assert!(r.is_err());
    }
}

//! `gapscope diff`: its flags.

use super::WindowArgs;
use clap::{Args, ValueEnum};
use gapscope_analyzers::diff::Thresholds;
use std::path::PathBuf;

/// Examples shown by `gapscope diff --help`.
pub const EXAMPLES: &str = "\
EXAMPLES:
    Did last night's build slow any model down or bloat its memory?
        gapscope diff main.jsonl nightly.jsonl

    Where did the time go between two profiles of one model, step 5 of each?
        gapscope diff --steps 5 before.pt.trace.json.gz after.pt.trace.json.gz

    A pull-request comment, stricter on time than on memory:
        gapscope diff --format md --time-threshold 3% --memory-threshold 10% a.jsonl b.jsonl

INPUTS:
    Each of BASE and NEW is a trace (Kineto .json or .json.gz) or a bench
    results file (JSON lines from `gapscope bench`, docs/bench-results.md),
    told apart by content; both must be of the same kind.

EXIT STATUS:
    0 no regression, 1 at least one regression, 2 an error (unreadable
    input, inputs of different kinds, bad flag).";

/// `gapscope diff`.
#[derive(Debug, Args)]
pub struct DiffArgs {
    /// The reference: a trace or a bench-results file.
    #[arg(value_name = "BASE")]
    pub base: PathBuf,

    /// The run to judge, of the same kind as BASE.
    #[arg(value_name = "NEW")]
    pub new: PathBuf,

    /// Output format: text, json, or md (Markdown for a pull-request
    /// comment).
    #[arg(long, value_enum, default_value_t = DiffFormat::Text)]
    pub format: DiffFormat,

    /// How much worse time or memory may get before it is a regression, in
    /// percent (`7%` or `7`).
    #[arg(long, value_name = "PCT", default_value = "7%", value_parser = parse_pct)]
    pub threshold: f64,

    /// Threshold for times only (overrides --threshold).
    #[arg(long, value_name = "PCT", value_parser = parse_pct)]
    pub time_threshold: Option<f64>,

    /// Threshold for peak memory only (overrides --threshold).
    #[arg(long, value_name = "PCT", value_parser = parse_pct)]
    pub memory_threshold: Option<f64>,

    /// Rows per operator and kernel table in text and Markdown.
    #[arg(long, value_name = "N", default_value_t = 15)]
    pub top: usize,

    #[command(flatten)]
    pub window: WindowArgs,

    /// No warnings on stderr (errors are still printed).
    #[arg(short, long)]
    pub quiet: bool,
}

/// How `diff` prints.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum DiffFormat {
    /// Tables for people.
    Text,
    /// One JSON object (docs/bench-results.md describes it).
    Json,
    /// GitHub-flavoured Markdown.
    Md,
}

impl DiffArgs {
    /// The regression thresholds the flags set.
    pub fn thresholds(&self) -> Thresholds {
        Thresholds {
            time: self.time_threshold.unwrap_or(self.threshold),
            memory: self.memory_threshold.unwrap_or(self.threshold),
        }
    }
}

/// `7%`, `7` or `0.5%` → 0.07, 0.07, 0.005.
fn parse_pct(s: &str) -> Result<f64, String> {
    let v: f64 = s
        .trim()
        .trim_end_matches('%')
        .trim()
        .parse()
        .map_err(|_| format!("`{s}` is not a percentage; write e.g. 7%"))?;
    if !(v.is_finite() && v >= 0.0) {
        return Err(format!("`{s}`: a threshold must be 0% or more"));
    }
    Ok(v / 100.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentages() {
        assert_eq!(parse_pct("7%"), Ok(0.07));
        assert_eq!(parse_pct("7"), Ok(0.07));
        assert_eq!(parse_pct(" 12.5 % "), Ok(0.125));
        assert!(parse_pct("seven").is_err());
        assert!(parse_pct("-3%").is_err());
    }
}

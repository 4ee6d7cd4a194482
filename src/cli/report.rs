//! `gapscope report`: its flags.

use super::WindowArgs;
use clap::{Args, ValueEnum};
use std::path::PathBuf;

/// Examples shown by `gapscope report --help`.
pub const EXAMPLES: &str = "\
EXAMPLES:
    One HTML page to open in any browser (works offline, nothing to install):
        gapscope report run.pt.trace.json.gz -o report.html

    The same content as Markdown, e.g. for a CI comment or an issue:
        gapscope report run.pt.trace.json.gz -o report.md
        gapscope report run.pt.trace.json.gz --format md -o -

    A whole job (every rank's trace, or their directory): who held it
    back, and a rank x step heat map of the time ranks waited for others:
        gapscope report ./log/ -o job.html

    Try it on the small trace built into gapscope:
        gapscope report --demo -o demo.html

EXIT STATUS:
    0 written, 2 an error (unreadable trace, bad flag, unwritable output).";

/// `gapscope report`.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// Kineto trace (`.json` or `.json.gz`) or gapscope capture (`.gst`);
    /// or the ranks of one job: several traces, or a directory of them.
    #[arg(value_name = "TRACE", required_unless_present = "demo")]
    pub traces: Vec<PathBuf>,

    /// Report on the small demo trace built into gapscope.
    #[arg(long, conflicts_with = "traces")]
    pub demo: bool,

    /// Where to write the report (`-` for standard output).
    #[arg(short, long, value_name = "FILE")]
    pub output: PathBuf,

    /// Page format; by default `md` when FILE ends in `.md`, else `html`.
    #[arg(long, value_enum)]
    pub format: Option<ReportFormat>,

    #[command(flatten)]
    pub window: WindowArgs,

    /// Write the report's view model as JSON instead of the page (what the
    /// templates are filled from; for template authors and tests).
    #[arg(long, hide = true)]
    pub debug_context: bool,

    /// No progress or summary on stderr (errors are still printed).
    #[arg(short, long)]
    pub quiet: bool,
}

/// What `report` writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ReportFormat {
    /// One self-contained HTML page: inline CSS and SVG, no scripts, no
    /// network.
    Html,
    /// GitHub-flavoured Markdown tables.
    Md,
}

impl ReportArgs {
    /// The format: `--format`, else told by the output's extension.
    pub fn format(&self) -> ReportFormat {
        self.format.unwrap_or_else(|| {
            let md = self
                .output
                .extension()
                .is_some_and(|e| e.eq_ignore_ascii_case("md") || e.eq_ignore_ascii_case("markdown"));
            if md {
                ReportFormat::Md
            } else {
                ReportFormat::Html
            }
        })
    }
}

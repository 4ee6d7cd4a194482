//! `gapscope report`: one self-contained HTML page (or the same content as
//! Markdown) that explains why the GPUs of one trace sat idle.
//!
//! The flow is one-way: the trace is imported and analysed once, as a
//! [`Session`], as for `gapscope analyze`; [`view::build`] turns the
//! session (its analysis, the devices' timeline strips and the kernel
//! table) into a serializable [`view::ReportView`] with every number
//! already formatted, and [`render`] fills the templates of
//! `report-templates/` from it. The view model is what the tests snapshot
//! (`--debug-context` writes it).
//!
//! [`Session`]: gapscope_analyzers::Session

pub mod charts;
pub mod findings;
pub mod job;
pub mod palette;
pub mod render;
pub mod tables;
pub mod view;

use crate::analyze::{self, DEMO_NAME};
use crate::cli::WindowArgs;
use anyhow::{bail, Context, Result};
use clap::{Args, ValueEnum};
use gapscope_analyzers::analysis::AnalyzeOptions;
use gapscope_analyzers::window::WindowOptions;
use gapscope_analyzers::Session;
use gapscope_collectors::kineto::ImportOptions;
use std::io::{self, IsTerminal, Write};
use std::path::{Path, PathBuf};

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
    fn format(&self) -> ReportFormat {
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

    fn window_options(&self) -> WindowOptions {
        WindowOptions {
            steps: self.window.steps,
            exclude_last_step: self.window.exclude_last_step,
        }
    }
}

/// Runs `gapscope report`.
pub fn run(args: &ReportArgs) -> Result<()> {
    let import = ImportOptions {
        progress: !args.quiet && io::stderr().is_terminal(),
    };
    if !args.demo && crate::inputs::is_batch(&args.traces) {
        return run_job(args);
    }
    let (name, trace) = match args.traces.first() {
        Some(path) if !args.demo => (path.display().to_string(), analyze::load(path, &import)?),
        _ => (DEMO_NAME.to_string(), analyze::load_demo(&import)?),
    };
    if !args.quiet {
        analyze::warn_skipped(&name, &trace);
    }
    let options = AnalyzeOptions {
        window: args.window_options(),
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

/// `report` of several traces: they must make one job.
fn run_job(args: &ReportArgs) -> Result<()> {
    use crate::batch::{self, Output};
    use crate::inputs::LoadOptions;
    let opts = LoadOptions {
        analyze: AnalyzeOptions {
            window: args.window_options(),
            ..AnalyzeOptions::default()
        },
        import: ImportOptions { progress: false },
        limits: Default::default(),
        time_text: None,
        quiet: args.quiet,
        jobs: 0,
        with_analysis: true,
    };
    let outs = batch::analyse(&args.traces, &opts)?;
    let singles = outs.iter().filter(|o| matches!(o, Output::Single(_))).count();
    let jobs: Vec<_> = outs
        .iter()
        .filter_map(|o| match o {
            Output::Job(j) => Some(j),
            Output::Single(_) => None,
        })
        .collect();
    let job = match jobs.as_slice() {
        [one] if singles == 0 => *one,
        _ => bail!(
            "{}: these inputs hold {} jobs and {} traces apart; report covers one job: give it one job's traces",
            args.traces.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", "),
            jobs.len(),
            singles
        ),
    };
    if !args.quiet {
        for w in &job.analysis.warnings {
            crate::inputs::warn(w);
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

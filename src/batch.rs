//! `gapscope analyze` of several traces or a directory: the ranks of each
//! job are analysed together ([`JobAnalysis`]), other traces alone.
//!
//! Output: one result is printed as it would be alone (a job's JSON is one
//! object with `"kind": "job"`); several give one text section each, or a
//! JSON array in input order.

use crate::analyze::Analysed;
use crate::cli::{AnalyzeArgs, Format};
use crate::inputs::{self, Batch, Item, LoadOptions, Unit};
use crate::render;
use anyhow::Result;
use gapscope_analyzers::analysis::AnalyzeOptions;
use gapscope_analyzers::job::{analyze_job_timeline, JobAnalysis, JobOptions, JobTimeline, RankSummary};
use gapscope_collectors::kineto::{ImportOptions, ReadLimits, TimeWindow};
use std::io::{self, Write};

/// A job, analysed.
pub struct AnalysedJob {
    /// Its ranks' summaries, by rank.
    pub ranks: Vec<RankSummary>,
    /// The job analysis.
    pub analysis: JobAnalysis,
    /// What timeline views need besides.
    pub timeline: JobTimeline,
}

/// One thing to print.
pub enum Output {
    /// A trace on its own.
    Single(Box<Analysed>),
    /// A job.
    Job(Box<AnalysedJob>),
}

/// Reads `args.traces` as a batch and analyses it.
pub fn analyse(args_traces: &[std::path::PathBuf], opts: &LoadOptions) -> Result<Vec<Output>> {
    let batch = inputs::load_batch(args_traces, opts)?;
    Ok(outputs(batch, &JobOptions::default()))
}

/// Turns grouped items into outputs: each job's summaries go to the job
/// analysis, each lone trace keeps its own analysis.
pub fn outputs(batch: Batch, job_opts: &JobOptions) -> Vec<Output> {
    let mut items: Vec<Option<Item>> = batch.items.into_iter().map(Some).collect();
    batch
        .units
        .into_iter()
        .map(|u| match u {
            Unit::Single(i) => {
                let item = items[i].take().expect("each item is in one unit");
                match item.summary.analysis {
                    Some(a) => Output::Single(Box::new(Analysed {
                        name: item.name,
                        analysis: *a,
                    })),
                    // A summary read back from Parquet has no analysis of its
                    // own: a job of one rank still gives its table.
                    None => {
                        let ranks = vec![item.summary];
                        let (analysis, timeline) = analyze_job_timeline(&ranks, job_opts);
                        Output::Job(Box::new(AnalysedJob {
                            ranks,
                            analysis,
                            timeline,
                        }))
                    }
                }
            }
            Unit::Job(members) => {
                let ranks: Vec<RankSummary> = members
                    .iter()
                    .map(|&i| items[i].take().expect("each item is in one unit").summary)
                    .collect();
                let (analysis, timeline) = analyze_job_timeline(&ranks, job_opts);
                Output::Job(Box::new(AnalysedJob {
                    ranks,
                    analysis,
                    timeline,
                }))
            }
        })
        .collect()
}

/// Runs `gapscope analyze` on a batch.
pub fn run(args: &AnalyzeArgs, options: AnalyzeOptions, time_text: Option<&str>) -> Result<()> {
    let opts = LoadOptions {
        limits: ReadLimits {
            max_events: args.max_events.map(|n| usize::try_from(n).unwrap_or(usize::MAX)),
            time_window: options.time_window.map(|t| TimeWindow {
                start: t.start_ns,
                end: t.end_ns,
            }),
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
    let outs = analyse(&args.traces, &opts)?;
    if !args.quiet {
        for o in &outs {
            if let Output::Job(j) = o {
                for w in &j.analysis.warnings {
                    inputs::warn(w);
                }
            }
        }
    }
    let mut out = io::stdout().lock();
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
    Ok(())
}

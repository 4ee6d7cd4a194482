//! What `analyze`, `report`, `export` and `diff` read when given several
//! traces or a directory: the files, each analysed on its own into a
//! compact per-rank summary (in parallel, one trace in memory per worker),
//! then grouped into jobs (analyzers' `job::group`) and traces analysed
//! apart.
//!
//! A single trace file keeps the plain single-trace path and its errors
//! (exit status 2 when it cannot be read). With several inputs, a file that
//! cannot be read, or that is not a trace, is left out with one warning
//! line; only when nothing is left is it an error.

use super::{check_window, load_partial, warn, warn_incomplete, warn_skipped};
use crate::analysed::{Analysed, AnalysedJob, Output};
use anyhow::{bail, Result};
use gapscope_analyzers::analysis::AnalyzeOptions;
use gapscope_analyzers::job::group::{group, rank_from_name, InputMeta};
use gapscope_analyzers::job::{
    analyze_job_timeline, summarize_rank, summarize_selected, JobOptions, RankSummary,
};
use gapscope_collectors::capture;
use gapscope_collectors::kineto::{ImportOptions, ReadLimits};
use gapscope_collectors::open::ReadOptions;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// How to read and analyse each input.
pub struct LoadOptions<'a> {
    /// The single-trace analysis options (steps, time window).
    pub analyze: AnalyzeOptions,
    /// Progress and the like.
    pub import: ImportOptions,
    /// `--max-events`, `--time-window` while reading.
    pub limits: ReadLimits,
    /// The `--time-window` text, for messages.
    pub time_text: Option<&'a str>,
    /// No warnings.
    pub quiet: bool,
    /// Traces analysed at once (0: one per core).
    pub jobs: usize,
    /// Keep each rank's own analysis in its summary (what `analyze` prints
    /// per rank); `summarize` leaves it out.
    pub with_analysis: bool,
}

impl LoadOptions<'_> {
    /// How `report`, `export`, `summarize` and `diff` read a job: with
    /// `analyze`'s options, no progress line, no read limits, one trace per
    /// core.
    pub fn for_job(analyze: AnalyzeOptions, quiet: bool, with_analysis: bool) -> Self {
        LoadOptions {
            analyze,
            import: ImportOptions { progress: false },
            limits: ReadLimits::default(),
            time_text: None,
            quiet,
            jobs: 0,
            with_analysis,
        }
    }
}

/// The one job `outs` hold, or an error naming the `inputs` that says
/// what they hold instead; `what` is what the command does with one job
/// (`report covers one job`).
pub fn one_job<'a>(outs: &'a [Output], inputs: &[PathBuf], what: &str) -> Result<&'a AnalysedJob> {
    let singles = outs.iter().filter(|o| matches!(o, Output::Single(_))).count();
    let jobs: Vec<&AnalysedJob> = outs
        .iter()
        .filter_map(|o| match o {
            Output::Job(j) => Some(&**j),
            Output::Single(_) => None,
        })
        .collect();
    match jobs.as_slice() {
        [one] if singles == 0 => Ok(one),
        _ => bail!(
            "{}: these inputs hold {} jobs and {} traces apart; {what}: give it one job's traces",
            inputs
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", "),
            jobs.len(),
            singles
        ),
    }
}

/// One input, analysed.
pub struct Item {
    /// The path as the user gave it (or as listed from a directory).
    pub name: String,
    /// Its summary, with its own analysis.
    pub summary: RankSummary,
}

/// How the items are reported.
pub enum Unit {
    /// A trace on its own (index into the items).
    Single(usize),
    /// The ranks of one job (indices, by rank).
    Job(Vec<usize>),
}

/// Everything read, grouped.
pub struct Batch {
    /// The inputs that could be read, in input order.
    pub items: Vec<Item>,
    /// What to report, in input order of each unit's first item.
    pub units: Vec<Unit>,
}

/// Whether `paths` asks for more than the plain single-trace path: several
/// inputs, or a directory.
pub fn is_batch(paths: &[PathBuf]) -> bool {
    paths.len() > 1 || paths.iter().any(|p| p.is_dir())
}

/// Files a directory holds that look like traces: `.json`, `.json.gz`,
/// `.gst`, or a capture by its first bytes. Others are named in one
/// warning each.
fn list_dir(dir: &Path, quiet: bool) -> Result<Vec<PathBuf>> {
    let entries = std::fs::read_dir(dir).map_err(|e| {
        anyhow::anyhow!(
            "{}: cannot read the directory ({e}); check the path and its permissions",
            dir.display()
        )
    })?;
    let mut files: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
    files.sort();
    let mut out = Vec::new();
    for f in files {
        let name = f
            .file_name()
            .map(|n| n.to_string_lossy().to_string())
            .unwrap_or_default();
        if name.starts_with('.') || f.is_dir() {
            continue;
        }
        let lower = name.to_ascii_lowercase();
        if lower.ends_with(".json")
            || lower.ends_with(".json.gz")
            || lower.ends_with(".gst")
            || capture::is_capture_file(&f)
        {
            out.push(f);
        } else if !quiet {
            warn(&format!(
                "{}: skipped: not a trace (gapscope reads .json, .json.gz and .gst files)",
                f.display()
            ));
        }
    }
    Ok(out)
}

/// The files `paths` name: files as they are, directories by their traces.
pub fn expand(paths: &[PathBuf], quiet: bool) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for p in paths {
        if p.is_dir() {
            let before = out.len();
            out.extend(list_dir(p, quiet)?);
            if out.len() == before && !quiet {
                warn(&format!("{}: no trace files in this directory", p.display()));
            }
        } else {
            out.push(p.clone());
        }
    }
    Ok(out)
}

/// Reads and analyses every file of `paths` (in parallel), then groups
/// them into jobs. A directory of per-rank summaries (`gapscope
/// summarize`) gives its summaries. A file that cannot be read is left out
/// with a warning; nothing read at all is an error.
pub fn load_batch(paths: &[PathBuf], opts: &LoadOptions) -> Result<Batch> {
    let (summary_dirs, paths): (Vec<PathBuf>, Vec<PathBuf>) = paths
        .iter()
        .cloned()
        .partition(|p| p.is_dir() && is_summary_dir(p));
    let mut from_summaries = Vec::new();
    for d in &summary_dirs {
        from_summaries.extend(read_summaries(d)?.into_iter().map(|summary| Item {
            name: summary.source.clone(),
            summary,
        }));
    }
    let files = if paths.is_empty() {
        Vec::new()
    } else {
        expand(&paths, opts.quiet)?
    };
    if files.is_empty() && from_summaries.is_empty() {
        bail!(
            "{}: no traces to analyse; give Kineto traces (.json, .json.gz) or gapscope captures (.gst), or \
             directories of them",
            paths
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    let results = load_parallel(&files, opts);
    let mut items = from_summaries;
    let mut failed = Vec::new();
    for (f, r) in files.iter().zip(results) {
        match r {
            Ok(item) => items.push(item),
            Err(e) => {
                if !opts.quiet {
                    warn(&format!("{e:#}; left out").replace('\n', " "));
                }
                failed.push(f.display().to_string());
            }
        }
    }
    if items.is_empty() {
        bail!(
            "none of the {} input file{} could be analysed (see the warnings above)",
            files.len(),
            if files.len() == 1 { "" } else { "s" }
        );
    }
    let metas: Vec<InputMeta> = items.iter().map(meta).collect();
    let g = group(&metas);
    if !opts.quiet {
        for (i, why) in &g.apart {
            if !why.is_empty() {
                warn(&format!("{}: analysed apart from the job: {why}", items[*i].name));
            }
        }
    }
    let mut units: Vec<(usize, Unit)> = g.jobs.into_iter().map(|j| (j[0], Unit::Job(j))).collect();
    units.extend(g.apart.into_iter().map(|(i, _)| (i, Unit::Single(i))));
    units.sort_by_key(|u| u.0);
    Ok(Batch {
        items,
        units: units.into_iter().map(|u| u.1).collect(),
    })
}

/// Reads `paths` as a batch and analyses it: each job's ranks together,
/// other traces alone.
pub fn analyse(paths: &[PathBuf], opts: &LoadOptions) -> Result<Vec<Output>> {
    let batch = load_batch(paths, opts)?;
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

#[cfg(feature = "parquet")]
fn is_summary_dir(dir: &Path) -> bool {
    super::summaries::is_summary_dir(dir)
}

#[cfg(not(feature = "parquet"))]
fn is_summary_dir(dir: &Path) -> bool {
    dir.join("ranks").is_dir() && dir.join("collectives").is_dir()
}

#[cfg(feature = "parquet")]
fn read_summaries(dir: &Path) -> Result<Vec<RankSummary>> {
    super::summaries::read_dir(dir)
}

#[cfg(not(feature = "parquet"))]
fn read_summaries(dir: &Path) -> Result<Vec<RankSummary>> {
    bail!(
        "{}: holds per-rank summaries (Parquet), but this gapscope was built without the `parquet` feature; \
         rebuild with `cargo install --path . --features parquet`",
        dir.display()
    )
}

/// Loads `files` (no grouping), for `summarize`: each result in input
/// order.
#[cfg(feature = "parquet")]
pub fn load_each(files: &[PathBuf], opts: &LoadOptions) -> Vec<Result<Item>> {
    load_parallel(files, opts)
}

fn meta(item: &Item) -> InputMeta {
    let s = &item.summary;
    InputMeta {
        name: item.name.clone(),
        rank: (s.rank >= 0).then_some(s.rank),
        world_size: s.world_size,
        steps: s.steps.iter().map(|x| x.number).collect(),
        span: (s.window.1 > s.window.0).then(|| (s.origin_ns + s.window.0, s.origin_ns + s.window.1)),
    }
}

/// Loads and summarises `files` on `opts.jobs` threads, results in input
/// order. Each worker holds one trace at a time; only summaries stay.
fn load_parallel(files: &[PathBuf], opts: &LoadOptions) -> Vec<Result<Item>> {
    let workers = match opts.jobs {
        0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
        n => n,
    }
    .min(files.len())
    .max(1);
    let next = AtomicUsize::new(0);
    let slots: Mutex<Vec<Option<Result<Item>>>> = Mutex::new((0..files.len()).map(|_| None).collect());
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= files.len() {
                    break;
                }
                let r = load_one(&files[i], opts);
                slots.lock().expect("no worker panics holding it")[i] = Some(r);
            });
        }
    });
    slots
        .into_inner()
        .expect("workers are done")
        .into_iter()
        .map(|r| r.expect("every file was loaded"))
        .collect()
}

fn load_one(path: &Path, opts: &LoadOptions) -> Result<Item> {
    let imported = load_partial(
        path,
        &ReadOptions {
            import: opts.import.clone(),
            limits: opts.limits.clone(),
        },
    )?;
    let name = path.display().to_string();
    if let (Some(text), Some(t)) = (opts.time_text, opts.analyze.time_window) {
        let extent = imported.extent.unwrap_or((0, 0));
        check_window(&name, &imported.trace, &opts.analyze.window, text, t, extent)?;
    }
    if !opts.quiet {
        warn_incomplete(&name, &imported);
        warn_skipped(&name, &imported.trace);
    }
    let rank = rank_from_name(&name);
    let summary = if opts.with_analysis {
        summarize_rank(&imported.trace, &opts.analyze, rank)
    } else {
        summarize_selected(&imported.trace, &opts.analyze, rank)
    };
    Ok(Item { name, summary })
}

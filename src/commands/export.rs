//! `gapscope export`: write a trace as a timeline to open in
//! ui.perfetto.dev (native Perfetto protobuf) or in any Chrome-trace viewer
//! (Kineto-compatible JSON), its tables as Parquet files (feature
//! `parquet`), or a gapscope capture (`.gst`).

use super::Exit;
use crate::analysed::AnalysedJob;
use crate::cli::export::{ExportArgs, ExportFormat};
use crate::export::{chrome, perfetto};
use crate::inputs::batch::{self, LoadOptions};
use crate::inputs::{self, load};
use anyhow::{Context, Result};
use gapscope_analyzers::analysis::AnalyzeOptions;
use gapscope_analyzers::window::{self, TimeRange, WindowOptions};
use gapscope_analyzers::Session;
use gapscope_collectors::capture;
use gapscope_collectors::kineto::{ImportOptions, ReadLimits};
use gapscope_collectors::open::ReadOptions;
use gapscope_collectors::trace::Trace;
use std::fs::File;
use std::io::{self, BufWriter, IsTerminal, Write};
use std::path::{Path, PathBuf};

/// Runs `gapscope export`.
pub fn run(args: &ExportArgs) -> Result<Exit> {
    let import = ImportOptions {
        progress: !args.quiet && io::stderr().is_terminal(),
    };
    // A bad window is reported before any trace is read.
    let time = inputs::time_window(args.time_window.as_deref())?;
    if batch::is_batch(&args.traces) {
        if time.is_some() || args.window.steps.is_some() || args.window.exclude_last_step {
            anyhow::bail!(
                "--steps, --exclude-last-step and --time-window export a part of one trace; give one trace, not the ranks of a job"
            );
        }
        run_job(args)?;
        return Ok(Exit::OK);
    }
    if args.format == ExportFormat::Parquet {
        run_parquet(args, &import, time)?;
        return Ok(Exit::OK);
    }
    let trace = load_selected(args, &import, time)?;
    inputs::after_import();
    // The whole trace, analysed once: the timeline draws its idle segments,
    // counters and findings.
    let session = Session::new(&trace, &AnalyzeOptions::default());
    // Write beside the target and rename at the end: a truncated trace
    // loads its prefix without any error, so a
    // failed export must not leave one behind under the real name. A device
    // or pipe (`-o /dev/null`) is written in place: renaming a file over it
    // would replace it.
    let in_place = args.output.exists() && !args.output.is_file();
    let tmp = if in_place {
        args.output.clone()
    } else {
        tmp_path(&args.output)
    };
    let file = create(&tmp, &args.output)?;
    let out = BufWriter::with_capacity(1 << 20, file);
    let (summary, stats) = match args.format {
        ExportFormat::Perfetto => {
            let opts = perfetto::Options {
                compression: (!args.no_compress).then_some(perfetto::DEFAULT_COMPRESSION),
                ..Default::default()
            };
            let c = perfetto::write(
                &session,
                || perfetto::finding_spans(session.findings()),
                &opts,
                out,
            );
            let c = c.with_context(|| format!("{}: write failed", tmp.display()));
            let c = c.inspect_err(|_| {
                if !in_place {
                    let _ = std::fs::remove_file(&tmp);
                }
            })?;
            // Slice and counter tracks counted apart, and the total with the
            // process, thread-group and GPU-group tracks that hold them.
            let mut summary = format!(
                "{} slices on {} slice tracks, {} counter samples on {} counter tracks \
                 ({} tracks in all), {} flows, {} bytes",
                c.slices, c.slice_tracks, c.counter_samples, c.counter_tracks, c.tracks, c.flows, c.bytes
            );
            if c.compressed_chunks > 0 {
                summary += &format!(" ({} before compression)", c.packet_bytes);
            }
            (summary, serde_json::to_string_pretty(&c)?)
        }
        ExportFormat::Chrome => {
            let c = chrome::write(session.whole_trace(), out)
                .with_context(|| format!("{}: write failed", tmp.display()));
            let c = c.inspect_err(|_| {
                if !in_place {
                    let _ = std::fs::remove_file(&tmp);
                }
            })?;
            let summary = format!("{} events, {} flows", c.events, c.flows);
            (summary, serde_json::to_string_pretty(&c)?)
        }
        ExportFormat::Parquet => unreachable!("written by run_parquet"),
        ExportFormat::Gst => {
            let mut out = out;
            let bytes = capture::write_counted(session.whole_trace(), &mut out)
                .and_then(|n| {
                    out.into_inner().map_err(|e| capture::CaptureError::Write {
                        file: String::new(),
                        source: e.into_error(),
                    })?;
                    Ok(n)
                })
                .map_err(|e| anyhow::anyhow!("{}", e.named(&args.output.display().to_string())))
                .inspect_err(|_| {
                    if !in_place {
                        let _ = std::fs::remove_file(&tmp);
                    }
                })?;
            let c = GstStats {
                rows: trace.gpu.len() + trace.runtime.len() + trace.cpu_ops.len() + trace.markers.len(),
                strings: trace.strings.len(),
                bytes,
            };
            let summary = format!("{} rows, {} strings, {} bytes", c.rows, c.strings, c.bytes);
            (summary, serde_json::to_string_pretty(&c)?)
        }
    };
    if !in_place {
        std::fs::rename(&tmp, &args.output)
            .with_context(|| format!("{}: cannot write", args.output.display()))?;
    }
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
    Ok(Exit::OK)
}

/// Reads the one trace and keeps what --steps, --exclude-last-step and
/// --time-window select ([`selected`]). With a time window it is read as
/// `gapscope analyze --time-window` reads it: the rows outside the window
/// are dropped while the file is read (a slice of a trace too big to read
/// whole), and a file cut short gives the rows before the cut, with a
/// warning.
fn load_selected(
    args: &ExportArgs,
    import: &ImportOptions,
    time: Option<(&str, TimeRange)>,
) -> Result<Trace> {
    let path = &args.traces[0];
    let Some((text, t)) = time else {
        return selected(args, load(path, import)?, None, None);
    };
    let read = ReadOptions {
        import: import.clone(),
        limits: ReadLimits {
            max_events: None,
            time_window: Some(t),
        },
    };
    let imported = inputs::load_partial(path, &read)?;
    let name = path.display().to_string();
    if !args.quiet {
        inputs::warn_incomplete(&name, &imported);
    }
    // The importer's extent covers the rows it left out too.
    let extent = imported.extent.unwrap_or((0, 0));
    selected(args, imported.trace, Some((text, t)), Some(extent))
}

/// The part of `trace` that --steps, --exclude-last-step and --time-window
/// select, as `gapscope analyze` reads it (`window::select_in`); the whole
/// trace without them. A selection with nothing in it is an error, not an
/// empty file.
fn selected(
    args: &ExportArgs,
    trace: Trace,
    time: Option<(&str, TimeRange)>,
    extent: Option<(i64, i64)>,
) -> Result<Trace> {
    let opts = args.window.options();
    if time.is_none() && opts.steps.is_none() && !opts.exclude_last_step {
        return Ok(trace);
    }
    let name = args.traces[0].display().to_string();
    if let Some((text, t)) = time {
        let extent = extent.unwrap_or_else(|| window::event_extent(&trace));
        inputs::check_window(&name, &trace, &opts, text, t, extent)?;
    }
    if let Some((a, b)) = opts.steps {
        let all = window::steps(&trace);
        if window::selected_steps(&all, &opts).is_empty() {
            let candidates = window::selected_steps(&all, &WindowOptions { steps: None, ..opts });
            let have = match (candidates.first(), candidates.last()) {
                (Some(f), Some(l)) => format!("its steps are ProfilerStep#{} to #{}", f.number, l.number),
                _ => "it has no ProfilerStep#N range".to_string(),
            };
            anyhow::bail!("{name}: --steps {a}..{b} selects no step ({have}); choose steps it has");
        }
    }
    Ok(window::select_in(&trace, &opts, time.map(|(_, t)| t)))
}

/// `--format parquet`: the output is a directory, checked (and created when
/// missing) before the trace is read, so a bad `-o` fails fast.
#[cfg(feature = "parquet")]
fn run_parquet(args: &ExportArgs, import: &ImportOptions, time: Option<(&str, TimeRange)>) -> Result<()> {
    use crate::export::parquet;
    let dir = &args.output;
    parquet_dir(dir)?;
    let trace = load_selected(args, import, time)?;
    let opts = parquet::Options {
        compress: !args.no_compress,
        ..Default::default()
    };
    let s = parquet::write_dir(&trace, dir, &opts).with_context(|| {
        format!(
            "{}: cannot write the Parquet tables (-o must name a writable directory)",
            dir.display()
        )
    })?;
    parquet_done(args, dir, &s)
}

/// The `-o` directory of `--format parquet`: checked, and created when
/// missing (its parent must exist), before any trace is read.
#[cfg(feature = "parquet")]
fn parquet_dir(dir: &Path) -> Result<()> {
    if dir.exists() && !dir.is_dir() {
        anyhow::bail!(
            "{}: not a directory; --format parquet writes one file per table into a directory",
            dir.display()
        );
    }
    if !dir.exists() {
        std::fs::create_dir(dir).with_context(|| {
            format!(
                "{}: cannot create the output directory (its parent must exist)",
                dir.display()
            )
        })?;
    }
    Ok(())
}

/// `--stats-json` and the summary line of a Parquet export.
#[cfg(feature = "parquet")]
fn parquet_done(args: &ExportArgs, dir: &Path, s: &crate::export::parquet::Summary) -> Result<()> {
    if let Some(p) = &args.stats_json {
        let tables: serde_json::Map<String, serde_json::Value> =
            s.tables.iter().map(|(f, n)| (f.clone(), (*n).into())).collect();
        let stats = serde_json::json!({ "tables": tables, "bytes": s.bytes });
        std::fs::write(p, serde_json::to_string_pretty(&stats)? + "\n")
            .with_context(|| format!("{}: cannot write", p.display()))?;
    }
    if !args.quiet {
        let rows: Vec<String> = s.tables.iter().map(|(f, n)| format!("{f} {n} rows")).collect();
        let _ = writeln!(
            io::stderr().lock(),
            "gapscope: wrote {}: {}, {} bytes",
            dir.display(),
            rows.join(", "),
            s.bytes
        );
    }
    Ok(())
}

/// `export` of several traces: they must make one job.
fn run_job(args: &ExportArgs) -> Result<()> {
    if matches!(args.format, ExportFormat::Chrome | ExportFormat::Gst) {
        anyhow::bail!(
            "--format {}: exports one trace; for the ranks of a job use --format perfetto (one timeline) or              --format parquet (tables with a rank column)",
            if args.format == ExportFormat::Chrome { "chrome" } else { "gst" }
        );
    }
    let opts = LoadOptions::for_job(Default::default(), args.quiet, true);
    let outs = batch::analyse(&args.traces, &opts)?;
    let job = batch::one_job(&outs, &args.traces, "export writes one job")?;
    if !args.quiet {
        for w in &job.analysis.warnings {
            inputs::warn(w);
        }
    }
    if args.format == ExportFormat::Parquet {
        return run_job_parquet(args, job);
    }
    let tmp = tmp_path(&args.output);
    let file = create(&tmp, &args.output)?;
    let mut out = BufWriter::with_capacity(1 << 20, file);
    let opts = perfetto::Options {
        compression: (!args.no_compress).then_some(perfetto::DEFAULT_COMPRESSION),
        ..Default::default()
    };
    let import = ImportOptions { progress: false };
    let load = |source: &str| load(Path::new(source), &import);
    let parts = crate::export::job::Job {
        ranks: &job.ranks,
        analysis: &job.analysis,
        timeline: &job.timeline,
    };
    let written = crate::export::job::write(&parts, &opts, &load, &mut out)
        .and_then(|c| out.flush().map(|()| c).map_err(anyhow::Error::from));
    let (c, between) = match written {
        Ok(c) => c,
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            return Err(e.context(format!("{}: write failed", tmp.display())));
        }
    };
    std::fs::rename(&tmp, &args.output)
        .with_context(|| format!("{}: cannot write", args.output.display()))?;
    if let Some(p) = &args.stats_json {
        std::fs::write(p, serde_json::to_string_pretty(&c)? + "\n")
            .with_context(|| format!("{}: cannot write", p.display()))?;
    }
    if !args.quiet {
        let _ = writeln!(
            io::stderr().lock(),
            "gapscope: wrote {}: {} ranks, {} slices on {} slice tracks, {} flows ({} between ranks), {} bytes",
            args.output.display(),
            job.ranks.len(),
            c.slices,
            c.slice_tracks,
            c.flows,
            between,
            c.bytes
        );
    }
    Ok(())
}

#[cfg(not(feature = "parquet"))]
fn run_job_parquet(_: &ExportArgs, _: &AnalysedJob) -> Result<()> {
    run_parquet_missing()
}

/// A job's tables: every rank's rows with a `rank` column, one rank read
/// at a time, and `ranks.parquet` with each rank's clock offset.
#[cfg(feature = "parquet")]
fn run_job_parquet(args: &ExportArgs, job: &AnalysedJob) -> Result<()> {
    use crate::export::parquet;
    let dir = &args.output;
    parquet_dir(dir)?;
    let opts = parquet::Options {
        compress: !args.no_compress,
        ..Default::default()
    };
    let import = ImportOptions { progress: false };
    let mut tables = parquet::JobTables::new(dir, &opts);
    for s in &job.ranks {
        let trace = load(Path::new(&s.source), &import)?;
        let offset = job
            .analysis
            .alignment
            .ranks
            .iter()
            .find(|a| a.rank == s.rank)
            .and_then(|a| a.offset_ns);
        let row = parquet::RankRow {
            rank: s.rank,
            source: s.source.clone(),
            origin_ns: s.origin_ns,
            clock_offset_ns: offset,
            world_size: s.world_size,
        };
        tables
            .add(row, &trace)
            .with_context(|| format!("{}: cannot write the Parquet tables", dir.display()))?;
    }
    let s = tables
        .finish()
        .with_context(|| format!("{}: cannot write the Parquet tables", dir.display()))?;
    parquet_done(args, dir, &s)
}

/// Without the `parquet` feature: one clear line, before any work.
#[cfg(not(feature = "parquet"))]
fn run_parquet(_: &ExportArgs, _: &ImportOptions, _: Option<(&str, TimeRange)>) -> Result<()> {
    run_parquet_missing()
}

#[cfg(not(feature = "parquet"))]
fn run_parquet_missing() -> Result<()> {
    anyhow::bail!(
        "--format parquet: this gapscope was built without the `parquet` feature; \
         rebuild with `cargo install --path . --features parquet` (see docs/parquet.md)"
    )
}

/// What `--format gst` wrote, for `--stats-json`.
#[derive(serde::Serialize)]
struct GstStats {
    /// GPU activities, runtime calls, CPU ops and markers.
    rows: usize,
    /// Distinct strings, the empty one included.
    strings: usize,
    /// Size of the capture.
    bytes: u64,
}

/// Creates `tmp`, the file `out` is written through; an error names `out`,
/// the file the user asked for.
fn create(tmp: &Path, out: &Path) -> Result<File> {
    File::create(tmp).with_context(|| format!("{}: cannot create", out.display()))
}

fn tmp_path(out: &Path) -> PathBuf {
    let mut name = out.file_name().unwrap_or_default().to_os_string();
    name.push(".partial");
    out.with_file_name(name)
}

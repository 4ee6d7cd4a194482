//! `gapscope diff BASE NEW`: compare two traces or two bench-result files
//! and say whether NEW regressed. Reading, detecting the kind of each input
//! and rendering live here; the comparison itself is
//! [`gapscope_analyzers::diff`].
//!
//! Exit status: 0 no regression, 1 a regression, 2 bad input (one line
//! naming the file). A closed stdout is not an error.

use super::Exit;
use crate::analysed::Output as Analysed;
use crate::cli::diff::{DiffArgs, DiffFormat};
use crate::inputs::batch::{self, LoadOptions};
use crate::inputs::{self, load};
use crate::render::table::Table;
use anyhow::{anyhow, bail, Result};
use gapscope_analyzers::analysis::AnalyzeOptions;
use gapscope_analyzers::causes::Cause;
use gapscope_analyzers::diff::bench::{self, BenchDiff, BenchRecord, MetricChange, Verdict};
use gapscope_analyzers::diff::ops::{Change, ChangeCounts, OpCategory, OpChange, OpsDiff};
use gapscope_analyzers::diff::trace::{self, DeviceSide, FindingSummary, TraceDiff};
use gapscope_analyzers::diff::{Regression, Thresholds};
use gapscope_analyzers::format::{bytes, duration, duration_signed, percent, short_kernel_name};
use gapscope_analyzers::Session;
use gapscope_collectors::kineto::ImportOptions;
use serde::Serialize;
use std::io::{self, BufRead, BufReader, IsTerminal, Read, Write};
use std::path::Path;

/// Runs `gapscope diff`: 1 when NEW regressed.
pub fn run(args: &DiffArgs) -> Result<Exit> {
    Ok(if compare(args)? { Exit::NEGATIVE } else { Exit::OK })
}

/// What an input file holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Trace,
    Bench,
}

impl Kind {
    fn describe(self) -> &'static str {
        match self {
            Kind::Trace => "a trace",
            Kind::Bench => "bench results",
        }
    }
}

/// Tells a trace from bench results by content: gzip is a trace; a first
/// line that is a whole JSON object with a `gapscope-bench/...` schema or a
/// `model` is bench results; anything else goes to the trace importer,
/// whose errors say what is wrong with it as a trace.
fn detect(path: &Path) -> Result<Kind> {
    let file = std::fs::File::open(path).map_err(|e| anyhow!("{}: cannot open ({e})", path.display()))?;
    let mut reader = BufReader::new(file);
    let head = reader
        .fill_buf()
        .map_err(|e| anyhow!("{}: cannot read ({e})", path.display()))?;
    if head.starts_with(&[0x1f, 0x8b]) {
        return Ok(Kind::Trace);
    }
    // A bench line is short; a minified trace may be one huge line, so
    // only its first 1 MiB is looked at (it will not parse: a trace).
    let mut first = Vec::new();
    reader
        .take(1 << 20)
        .read_until(b'\n', &mut first)
        .map_err(|e| anyhow!("{}: cannot read ({e})", path.display()))?;
    let first = String::from_utf8_lossy(&first);
    if first.trim().is_empty() {
        bail!(
            "{}: empty first line; expected a trace or bench results (docs/bench-results.md)",
            path.display()
        );
    }
    let probe: Option<serde_json::Map<String, serde_json::Value>> = serde_json::from_str(first.trim()).ok();
    let is_bench = probe.is_some_and(|o| {
        o.get("schema")
            .and_then(|s| s.as_str())
            .is_some_and(|s| s.starts_with("gapscope-bench/"))
            || (o.contains_key("model") && !o.contains_key("traceEvents"))
    });
    Ok(if is_bench { Kind::Bench } else { Kind::Trace })
}

/// Reads and checks a bench-results file; errors name the file and line.
fn read_bench(path: &Path) -> Result<Vec<BenchRecord>> {
    let name = path.display();
    let text = std::fs::read_to_string(path).map_err(|e| anyhow!("{name}: cannot read ({e})"))?;
    let mut records = Vec::new();
    let mut lines = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let rec: BenchRecord = serde_json::from_str(line).map_err(|e| {
            anyhow!(
                "{name}: line {}: not a bench record ({e}); see docs/bench-results.md",
                i + 1
            )
        })?;
        records.push(rec);
        lines.push(i + 1);
    }
    bench::validate(&records).map_err(|(i, msg)| match lines.get(i) {
        Some(line) => anyhow!("{name}: line {line}: {msg}"),
        None => anyhow!("{name}: {msg}"),
    })?;
    Ok(records)
}

/// The whole comparison, as printed in JSON.
#[derive(Serialize)]
struct Output<'a, T: Serialize> {
    schema_version: u32,
    kind: &'static str,
    base: String,
    new: String,
    thresholds: Thresholds,
    regression: bool,
    regressions: &'a [Regression],
    #[serde(flatten)]
    result: &'a T,
}

/// Version of the `diff` JSON output.
const SCHEMA_VERSION: u32 = 1;

/// Returns whether a regression was found.
fn compare(args: &DiffArgs) -> Result<bool> {
    if args.base.is_dir() || args.new.is_dir() {
        return job_diff(args);
    }
    let (kb, kn) = (detect(&args.base)?, detect(&args.new)?);
    if kb != kn {
        bail!(
            "{}: is {} but {} is {}; diff compares two traces or two bench results",
            args.new.display(),
            kn.describe(),
            args.base.display(),
            kb.describe()
        );
    }
    let th = args.thresholds();
    let names = (args.base.display().to_string(), args.new.display().to_string());
    // Buffered: stdout alone is line-buffered, and pretty JSON is one
    // write(2) per line (870k of them for a 14 MB analysis).
    let mut out = io::BufWriter::with_capacity(1 << 16, io::stdout().lock());
    let regressed = match kb {
        Kind::Bench => {
            let d = bench::diff(&read_bench(&args.base)?, &read_bench(&args.new)?, &th);
            let o = Output {
                schema_version: SCHEMA_VERSION,
                kind: "bench",
                base: names.0.clone(),
                new: names.1.clone(),
                thresholds: th,
                regression: !d.regressions.is_empty(),
                regressions: &d.regressions,
                result: &BenchResult { changes: &d.changes },
            };
            match args.format {
                DiffFormat::Json => json(&mut out, &o)?,
                f => bench_doc(&names, &d, &th).write(&mut out, f == DiffFormat::Md)?,
            }
            !d.regressions.is_empty()
        }
        Kind::Trace => {
            let d = trace_diff(args, &th)?;
            let o = Output {
                schema_version: SCHEMA_VERSION,
                kind: "trace",
                base: names.0.clone(),
                new: names.1.clone(),
                thresholds: th,
                regression: !d.regressions.is_empty(),
                regressions: &d.regressions,
                result: &d,
            };
            match args.format {
                DiffFormat::Json => json(&mut out, &o)?,
                f => trace_doc(&names, &d, &th, args.top).write(&mut out, f == DiffFormat::Md)?,
            }
            !d.regressions.is_empty()
        }
    };
    out.flush()?;
    Ok(regressed)
}

/// The job analysis of one side of a job diff: its inputs must make one job.
fn one_job(path: &Path, args: &DiffArgs) -> Result<gapscope_analyzers::job::JobAnalysis> {
    let analyze = AnalyzeOptions {
        window: args.window.options(),
        ..Default::default()
    };
    let opts = LoadOptions::for_job(analyze, args.quiet, false);
    let mut outs = batch::analyse(&[path.to_path_buf()], &opts)?;
    match (outs.len(), outs.pop()) {
        (1, Some(Analysed::Job(j))) => Ok(j.analysis),
        (n, _) => bail!(
            "{}: holds {n} jobs or traces apart, not one job; diff compares two jobs (directories of one job's \
             traces) or two traces",
            path.display()
        ),
    }
}

/// `diff BASE_DIR NEW_DIR`: two jobs.
fn job_diff(args: &DiffArgs) -> Result<bool> {
    if !(args.base.is_dir() && args.new.is_dir()) {
        bail!(
            "{} is a directory (a job) but {} is not; diff compares two jobs or two traces",
            if args.base.is_dir() {
                args.base.display()
            } else {
                args.new.display()
            },
            if args.base.is_dir() {
                args.new.display()
            } else {
                args.base.display()
            }
        );
    }
    let th = args.thresholds();
    let (b, n) = (one_job(&args.base, args)?, one_job(&args.new, args)?);
    let d = gapscope_analyzers::diff::job::diff_jobs(&b, &n, &th);
    let names = (args.base.display().to_string(), args.new.display().to_string());
    // Buffered: stdout alone is line-buffered, and pretty JSON is one
    // write(2) per line (870k of them for a 14 MB analysis).
    let mut out = io::BufWriter::with_capacity(1 << 16, io::stdout().lock());
    if args.format == DiffFormat::Json {
        let o = Output {
            schema_version: SCHEMA_VERSION,
            kind: "job",
            base: names.0,
            new: names.1,
            thresholds: th,
            regression: !d.regressions.is_empty(),
            regressions: &d.regressions,
            result: &d,
        };
        json(&mut out, &o)?;
    } else {
        let step = |v: Option<i64>| v.map_or("-".to_string(), duration);
        writeln!(
            out,
            "gapscope diff: {} → {} (jobs of {} and {} ranks)",
            names.0, names.1, d.ranks.0, d.ranks.1
        )?;
        writeln!(
            out,
            "job step (median)     {} → {}",
            step(d.step_time_ns.0),
            step(d.step_time_ns.1)
        )?;
        writeln!(
            out,
            "waiting for peers     {:.1}% → {:.1}% of the ranks' step time",
            d.wait_share.0 * 100.0,
            d.wait_share.1 * 100.0
        )?;
        for t in &d.findings_added {
            writeln!(out, "new late rank:        {t}")?;
        }
        for t in &d.findings_removed {
            writeln!(out, "gone late rank:       {t}")?;
        }
        if d.regressions.is_empty() {
            writeln!(out, "no regression ({})", thresholds_line(&th))?;
        } else {
            for r in &d.regressions {
                writeln!(out, "REGRESSION {}: {}", r.metric, r.detail)?;
            }
        }
    }
    out.flush()?;
    Ok(!d.regressions.is_empty())
}

#[derive(Serialize)]
struct BenchResult<'a> {
    changes: &'a [bench::BenchChange],
}

fn json<T: Serialize>(out: &mut dyn Write, o: &Output<T>) -> Result<()> {
    serde_json::to_writer_pretty(&mut *out, o)?;
    writeln!(out)?;
    Ok(())
}

fn trace_diff(args: &DiffArgs, th: &Thresholds) -> Result<TraceDiff> {
    let import = ImportOptions {
        progress: !args.quiet && io::stderr().is_terminal(),
    };
    let options = AnalyzeOptions {
        window: args.window.options(),
        ..AnalyzeOptions::default()
    };
    let load = |path: &Path| -> Result<_> {
        let t = load(path, &import)?;
        if !args.quiet {
            inputs::warn_skipped(&path.display().to_string(), &t);
        }
        Ok(t)
    };
    let (base, new) = (load(&args.base)?, load(&args.new)?);
    let (bs, ns) = (Session::new(&base, &options), Session::new(&new, &options));
    for (path, s) in [(&args.base, &bs), (&args.new, &ns)] {
        let w = &s.analysis().window;
        if w.basis == "empty" {
            bail!(
                "{}: the selection keeps nothing (steps in the trace: {}); choose other --steps",
                path.display(),
                w.steps_in_trace
            );
        }
    }
    Ok(trace::diff_sessions(&bs, &ns, th))
}

// ---------------------------------------------------------------- rendering

/// A document of sections, printed as plain text or Markdown.
struct Doc {
    title: String,
    sections: Vec<Section>,
}

#[derive(Default)]
struct Section {
    heading: String,
    paragraphs: Vec<String>,
    header: Vec<String>,
    rows: Vec<Vec<String>>,
    /// Columns after the first that hold text (left-aligned).
    left: Vec<usize>,
    /// Markdown: fold the table under a `<details>` summary.
    fold: bool,
}

impl Section {
    fn new(heading: impl Into<String>) -> Self {
        Section {
            heading: heading.into(),
            ..Default::default()
        }
    }
}

impl Doc {
    fn write(&self, out: &mut dyn Write, md: bool) -> io::Result<()> {
        if md {
            writeln!(out, "## {}", self.title)?;
        } else {
            writeln!(out, "{}", self.title)?;
        }
        for s in &self.sections {
            writeln!(out)?;
            if md {
                writeln!(out, "### {}", s.heading)?;
                writeln!(out)?;
                for p in &s.paragraphs {
                    writeln!(out, "{p}\n")?;
                }
                if !s.rows.is_empty() {
                    if s.fold {
                        writeln!(out, "<details><summary>{} rows</summary>\n", s.rows.len())?;
                    }
                    md_table(out, &s.header, &s.rows, &s.left)?;
                    if s.fold {
                        writeln!(out, "\n</details>")?;
                    }
                }
            } else {
                writeln!(out, "{}", s.heading)?;
                for p in &s.paragraphs {
                    writeln!(out, "  {p}")?;
                }
                if !s.rows.is_empty() {
                    let mut t = Table::new(s.header.clone()).left(&s.left);
                    for r in &s.rows {
                        t.row(r.clone());
                    }
                    t.write(out, "  ")?;
                }
            }
        }
        Ok(())
    }
}

fn md_table(out: &mut dyn Write, header: &[String], rows: &[Vec<String>], left: &[usize]) -> io::Result<()> {
    let cell = |s: &str| s.replace('|', "\\|");
    writeln!(
        out,
        "| {} |",
        header.iter().map(|h| cell(h)).collect::<Vec<_>>().join(" | ")
    )?;
    let align: Vec<&str> = (0..header.len())
        .map(|c| if c == 0 || left.contains(&c) { ":--" } else { "--:" })
        .collect();
    writeln!(out, "| {} |", align.join(" | "))?;
    for r in rows {
        writeln!(
            out,
            "| {} |",
            r.iter().map(|c| cell(c)).collect::<Vec<_>>().join(" | ")
        )?;
    }
    Ok(())
}

fn strings<const N: usize>(cells: [&str; N]) -> Vec<String> {
    cells.iter().map(|s| s.to_string()).collect()
}

/// `+12.3%`, or `-` without a base.
fn change_pct(change: f64) -> String {
    if change.is_finite() {
        format!("{:+.1}%", change * 100.0)
    } else {
        "-".to_string()
    }
}

fn verdict(v: Verdict) -> &'static str {
    match v {
        Verdict::Regression => "REGRESSION",
        Verdict::Noisy => "within noise",
        Verdict::Improvement => "improved",
        Verdict::Same => "same",
    }
}

fn regressions_section(regs: &[Regression]) -> Section {
    let mut s = Section::new("Regressions");
    if regs.is_empty() {
        s.paragraphs
            .push("None: nothing got worse beyond its threshold.".to_string());
    }
    for r in regs {
        s.paragraphs
            .push(format!("- {} ({}): {}", r.subject, r.metric, r.detail));
    }
    s
}

fn thresholds_line(th: &Thresholds) -> String {
    format!(
        "Thresholds: time {:.1}%, memory {:.1}%.",
        th.time * 100.0,
        th.memory * 100.0
    )
}

fn bench_doc(names: &(String, String), d: &BenchDiff, th: &Thresholds) -> Doc {
    let mut table = Section::new("Per model and config");
    table.paragraphs.push(thresholds_line(th));
    table.paragraphs.push(
        "Time is the median of the measured iterations; a change counts only beyond the threshold and \
         beyond the runs' noise (half the wider (max - min) / median)."
            .to_string(),
    );
    table.header = strings([
        "model / config",
        "time base",
        "time new",
        "change",
        "noise",
        "time",
        "CPU mem",
        "GPU mem",
    ]);
    table.left = vec![5];
    let mem = |m: &Option<MetricChange>| {
        m.as_ref().map_or("-".to_string(), |m| {
            format!(
                "{} → {} ({}){}",
                bytes(m.base.max(0.0).round() as u64),
                bytes(m.new.max(0.0).round() as u64),
                change_pct(m.change),
                if m.verdict == Verdict::Regression {
                    " REGRESSION"
                } else {
                    ""
                }
            )
        })
    };
    for c in &d.changes {
        let row = match &c.time {
            Some(t) => vec![
                c.key.clone(),
                duration(t.base.round() as i64),
                duration(t.new.round() as i64),
                change_pct(t.change),
                t.noise.map_or("-".to_string(), |n| format!("±{:.1}%", n * 100.0)),
                verdict(t.verdict).to_string(),
                mem(&c.cpu_memory),
                mem(&c.gpu_memory),
            ],
            None => vec![
                c.key.clone(),
                c.status.0.clone(),
                c.status.1.clone(),
                "-".into(),
                "-".into(),
                "not compared".into(),
                "-".into(),
                "-".into(),
            ],
        };
        table.rows.push(row);
    }
    Doc {
        title: format!("gapscope diff: {} → {} (bench results)", names.0, names.1),
        sections: vec![
            table,
            regressions_section(&d.regressions),
            verdict_section(&d.regressions),
        ],
    }
}

fn verdict_section(regs: &[Regression]) -> Section {
    let mut s = Section::new("Result");
    s.paragraphs.push(match regs.len() {
        0 => "No regression (exit status 0).".to_string(),
        1 => "1 regression (exit status 1).".to_string(),
        n => format!("{n} regressions (exit status 1)."),
    });
    s
}

fn trace_doc(names: &(String, String), d: &TraceDiff, th: &Thresholds, top: usize) -> Doc {
    let mut sections = Vec::new();
    let mut steps = Section::new("Steps");
    let st = |s: &trace::StepTimes| {
        if s.steps == 0 {
            format!("no steps, window {}", duration(s.window_ns))
        } else {
            let steps = if s.steps == 1 { "step" } else { "steps" };
            format!(
                "{} {steps}, median {}",
                s.steps,
                duration(s.spread.median_ns.round() as i64)
            )
        }
    };
    steps.paragraphs.push(format!(
        "base {}; new {}: {} ({})",
        st(&d.base_steps),
        st(&d.new_steps),
        change_pct(d.step_time.change),
        verdict(d.step_time.verdict)
    ));
    steps.paragraphs.push(thresholds_line(th));
    steps
        .paragraphs
        .extend(d.notes.iter().map(|n| format!("Note: {n}")));
    sections.push(steps);

    for dev in &d.devices {
        sections.push(device_section(dev.base.as_ref(), dev.new.as_ref()));
    }
    sections.push(ops_section(
        "Operators",
        &d.ops,
        |c| c == OpCategory::Operator,
        top,
    ));
    sections.push(ops_section(
        "Kernels, copies and memsets",
        &d.ops,
        |c| matches!(c, OpCategory::Kernel | OpCategory::Memcpy | OpCategory::Memset),
        top,
    ));
    let mut all = Section::new("All named events (HTA TraceDiff's ops_diff)");
    all.paragraphs.push(classes_line(&d.ops.all_names));
    sections.push(all);

    let mut findings = Section::new("Findings");
    let f = &d.findings;
    if f.appeared.is_empty() && f.disappeared.is_empty() && f.persisted.is_empty() {
        findings.paragraphs.push("None in either trace.".to_string());
    }
    for x in &f.appeared {
        findings
            .paragraphs
            .push(format!("- appeared: {} ({})", label(x), saving(x)));
    }
    for x in &f.disappeared {
        findings
            .paragraphs
            .push(format!("- disappeared: {} ({})", label(x), saving(x)));
    }
    for (b, n) in &f.persisted {
        let savings = if estimated(b) && estimated(n) && b.savings_ns > 0 && n.savings_ns > 0 {
            format!(
                "could save {} → {}",
                duration(b.savings_ns),
                duration(n.savings_ns)
            )
        } else if saving(b) == saving(n) {
            saving(n)
        } else {
            format!("{} → {}", saving(b), saving(n))
        };
        findings
            .paragraphs
            .push(format!("- still there: {} ({savings})", label(n)));
    }
    sections.push(findings);
    sections.push(regressions_section(&d.regressions));
    sections.push(verdict_section(&d.regressions));
    Doc {
        title: format!("gapscope diff: {} → {} (traces)", names.0, names.1),
        sections,
    }
}

fn device_section(b: Option<&DeviceSide>, n: Option<&DeviceSide>) -> Section {
    let label = |s: Option<&DeviceSide>| s.map_or("-".to_string(), |s| s.name.clone());
    let mut sec = Section::new(match (b, n) {
        (Some(b), Some(n)) if b.name == n.name => format!("{} (GPU {} → GPU {})", b.name, b.device, n.device),
        _ => format!("{} → {}", label(b), label(n)),
    });
    sec.header = strings(["", "base", "share", "new", "share", "change"]);
    let row = |what: &str, f: &dyn Fn(&DeviceSide) -> i64| -> Vec<String> {
        let side = |s: Option<&DeviceSide>| {
            s.map_or(("-".to_string(), "-".to_string()), |s| {
                (duration(f(s)), percent(f(s), s.breakdown.window_ns))
            })
        };
        let (bv, bp) = side(b);
        let (nv, np) = side(n);
        let change = match (b, n) {
            (Some(b), Some(n)) => duration_signed(f(n) - f(b)),
            _ => "-".to_string(),
        };
        vec![what.to_string(), bv, bp, nv, np, change]
    };
    sec.rows.push(row("window", &|s| s.breakdown.window_ns));
    sec.rows.push(row("compute", &|s| s.breakdown.compute_ns));
    sec.rows
        .push(row("communication", &|s| s.breakdown.communication_ns));
    sec.rows.push(row("memcpy", &|s| s.breakdown.memcpy_ns));
    sec.rows.push(row("memset", &|s| s.breakdown.memset_ns));
    sec.rows.push(row("idle", &|s| s.breakdown.idle_ns));
    for cause in Cause::ALL {
        let name = format!("  idle: {}", cause.label());
        if [b, n]
            .iter()
            .flatten()
            .any(|s| s.idle_by_cause_ns.get(cause) != 0)
        {
            sec.rows.push(row(&name, &move |s| s.idle_by_cause_ns.get(cause)));
        }
    }
    let mut per_step = row("idle per step (median)", &|s| s.idle_per_step_ns);
    per_step[2] = String::new();
    per_step[4] = String::new();
    sec.rows.push(per_step);
    sec
}

fn classes_line(c: &ChangeCounts) -> String {
    Change::ALL
        .iter()
        .map(|&k| format!("{} {}", c.get(k), k.name()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Whether a finding's saving is an estimate.
/// "D2 cpu_bound_operator aten::mm": detector, finding id and subject; a
/// finding about the device as a whole (its subject is its id) says its id
/// once.
fn label(f: &FindingSummary) -> String {
    if f.subject == f.kind {
        format!("{} {}", f.id, f.kind)
    } else {
        format!("{} {} {}", f.id, f.kind, f.subject)
    }
}

fn estimated(f: &FindingSummary) -> bool {
    f.primary && f.estimable
}

/// What a finding could save, as far as its trace tells: "could save
/// 1.20 ms", "saves nothing on its own" (replayed, the step is no
/// shorter), "saving not estimable (at most 3.00 ms)", or "context, not
/// idle time" (a context finding saves nothing of its own; "could save
/// 0 ns" would say the opposite of what it means).
fn saving(f: &FindingSummary) -> String {
    if !f.primary {
        "context, not idle time".to_string()
    } else if !f.estimable {
        match f.savings_bound_ns {
            Some(b) => format!("saving not estimable, at most {}", duration(b)),
            None => "saving not estimable".to_string(),
        }
    } else if f.savings_ns == 0 {
        "saves nothing on its own".to_string()
    } else {
        format!("could save {}", duration(f.savings_ns))
    }
}

fn ops_section(title: &str, d: &OpsDiff, keep: impl Fn(OpCategory) -> bool, top: usize) -> Section {
    let mut counts = ChangeCounts::default();
    for (_, c) in d.by_category.iter().filter(|(c, _)| keep(**c)) {
        for k in Change::ALL {
            for _ in 0..c.get(k) {
                counts.add(k);
            }
        }
    }
    let rows: Vec<&OpChange> = d.changes.iter().filter(|c| keep(c.category)).collect();
    let mut s = Section::new(title);
    s.paragraphs.push(format!("Names: {}.", classes_line(&counts)));
    if rows.len() > top {
        s.paragraphs.push(format!(
            "The {top} largest time changes of {} (all in --format json):",
            rows.len()
        ));
    }
    // Classified by count, as HTA's `ops_diff` does: an operator called as
    // often takes "unchanged" whatever its time did.
    s.header = strings(["name", "by count", "count", "total time", "Δ time"]);
    s.left = vec![1];
    s.fold = true;
    for c in rows.into_iter().take(top) {
        s.rows.push(vec![
            short_kernel_name(&c.name),
            c.change.name().to_string(),
            format!("{} → {}", c.base.count, c.new.count),
            format!("{} → {}", duration(c.base.total_ns), duration(c.new.total_ns)),
            duration_signed(c.delta_ns()),
        ]);
    }
    s
}

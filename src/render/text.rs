//! Text output: per trace, the window, then per device where the time went,
//! the HTA-compatible temporal block, a per-step table and launch
//! statistics, why the GPU was idle, and what to fix (the detectors'
//! findings with their hints and savings, and the bounds). Sections are
//! small functions.

use super::table::Table;
use crate::analysed::Analysed;
use gapscope_analyzers::analysis::{Analysis, DeviceReport};
use gapscope_analyzers::breakdown::Breakdown;
use gapscope_analyzers::causes::Cause;
use gapscope_analyzers::detectors::Finding;
use gapscope_analyzers::format::{count, duration, ms, percent};
use gapscope_analyzers::idle::{TopGap, TopIdleOperator};
use std::io::{self, Write};

/// Steps shown per device before the table is cut short.
const MAX_STEP_ROWS: usize = 20;
/// Longest gaps listed per device.
const MAX_GAP_ROWS: usize = 5;
/// Culprits listed per device.
const MAX_CULPRIT_ROWS: usize = 8;
/// Findings listed per device (all of them: `--format json`).
const MAX_FINDINGS: usize = 8;
/// Column at which hints wrap.
const HINT_WIDTH: usize = 96;

/// Writes every analysed trace, one section each.
pub fn write(out: &mut dyn Write, results: &[Analysed]) -> io::Result<()> {
    for (i, r) in results.iter().enumerate() {
        if i > 0 {
            writeln!(out)?;
        }
        trace_section(out, r)?;
    }
    Ok(())
}

fn trace_section(out: &mut dyn Write, r: &Analysed) -> io::Result<()> {
    let a = &r.analysis;
    writeln!(out, "{}", r.name)?;
    window_line(out, a)?;
    if a.devices.is_empty() {
        writeln!(out)?;
        // An empty selection says nothing of how the trace was recorded.
        if a.window.basis == "empty" {
            return writeln!(
                out,
                "nothing to analyse in {}: --steps selected no step; choose the N of ProfilerStep#N ranges it has",
                r.name
            );
        }
        return writeln!(
            out,
            "no GPU activity found in {}: {}",
            r.name,
            a.why_no_gpu_activity()
        );
    }
    for d in &a.devices {
        writeln!(out)?;
        device_section(out, a, d)?;
    }
    Ok(())
}

fn window_line(out: &mut dyn Write, a: &Analysis) -> io::Result<()> {
    let w = &a.window;
    let dur = ms(w.duration_ns);
    if let Some(t) = &w.time_window {
        let at = |v: Option<i64>, open: &str| v.map_or(open.to_string(), |n| format!("{} ms", ms(n)));
        writeln!(
            out,
            "time window: {} to {} (from the trace's first event; ops at the edges cut)",
            at(t.start_ns, "the trace's start"),
            at(t.end_ns, "the trace's end")
        )?;
    }
    match w.basis.as_str() {
        "steps" => {
            let sel = &w.steps_selected;
            let (first, last) = (
                sel.first().copied().unwrap_or(0),
                sel.last().copied().unwrap_or(0),
            );
            let which = match (sel.len(), w.steps_in_trace) {
                // "step #3 of 1" reads as a contradiction.
                (1, 1) => format!("step #{first}, the trace's only step"),
                (1, n) => format!("step #{first} of {n} in the trace"),
                (k, n) => format!("{k} steps #{first}..#{last} of {n} in the trace"),
            };
            writeln!(out, "window: {which}, {dur} ms")
        }
        "empty" => writeln!(
            out,
            "window: empty: the step selection matched no step in the trace"
        ),
        _ if w.time_window.is_some() => writeln!(
            out,
            "window: first to last event in the time window, {dur} ms (no ProfilerStep range in it)"
        ),
        _ => writeln!(
            out,
            "window: first to last event, {dur} ms (no ProfilerStep ranges in the trace)"
        ),
    }
}

fn device_section(out: &mut dyn Write, a: &Analysis, d: &DeviceReport) -> io::Result<()> {
    // The analysis names a device the trace does not name `GPU N`
    // (ROCm traces often leave it empty): "GPU 2: GPU 2" says nothing.
    if d.name == format!("GPU {}", d.device) {
        writeln!(out, "GPU {} (the trace does not name it)", d.device)?;
    } else {
        writeln!(out, "GPU {}: {}", d.device, d.name)?;
    }
    breakdown_table(out, &d.breakdown)?;
    writeln!(out)?;
    why_idle(out, d)?;
    findings_section(out, a, d)?;
    temporal_line(out, d)?;
    writeln!(out)?;
    steps_table(out, a, d.device)?;
    launch_line(out, d)
}

fn breakdown_table(out: &mut dyn Write, b: &Breakdown) -> io::Result<()> {
    let w = b.window_ns;
    let mut t = Table::new(["where the time went", "ms", "%"]);
    let mut row = |name: &str, ns| t.row([name.to_string(), ms(ns), percent(ns, w)]);
    row("compute", b.compute_ns);
    row("communication", b.communication_ns);
    row("memcpy", b.memcpy_ns);
    let k = &b.memcpy_by_kind_ns;
    row("  HtoD", k.htod);
    row("  DtoH", k.dtoh);
    row("  DtoD", k.dtod);
    if k.other != 0 {
        row("  other", k.other);
    }
    row("memset", b.memset_ns);
    row("idle", b.idle_ns);
    row("window", w);
    t.write(out, "  ")
}

/// What the CPU side was doing while the GPU sat idle: a line per cause
/// with its main culprit, largest first, then the culprits and the longest
/// gaps.
fn why_idle(out: &mut dyn Write, d: &DeviceReport) -> io::Result<()> {
    let idle = d.breakdown.idle_ns;
    if idle == 0 {
        return writeln!(out, "  The GPU was never idle in the window.\n");
    }
    let mut causes: Vec<(Cause, i64)> = d.idle_by_cause_ns.iter().filter(|&(_, ns)| ns > 0).collect();
    causes.sort_by_key(|&(c, ns)| (std::cmp::Reverse(ns), c));
    writeln!(out, "  Why the GPU was idle ({} ms)", ms(idle))?;
    let mut t = Table::new(["cause", "ms", "% idle", "% window", "mostly in"]).left(&[4]);
    for (cause, ns) in causes {
        let culprit = d
            .top_idle_operators
            .iter()
            .find(|o| o.cause == cause)
            .map_or_else(String::new, culprit);
        t.row([
            cause.label().to_string(),
            ms(ns),
            percent(ns, idle),
            percent(ns, d.breakdown.window_ns),
            culprit,
        ]);
    }
    t.write(out, "  ")?;
    writeln!(out)?;
    culprits_table(out, &d.top_idle_operators)?;
    gaps_table(out, &d.top_gaps)
}

/// The idle-causing operators, largest first.
fn culprits_table(out: &mut dyn Write, ops: &[TopIdleOperator]) -> io::Result<()> {
    let blamed: Vec<&TopIdleOperator> = ops
        .iter()
        .filter(|o| o.operator.is_some() || o.annotation.is_some() || o.source.is_some())
        .take(MAX_CULPRIT_ROWS)
        .collect();
    if blamed.is_empty() {
        return Ok(());
    }
    writeln!(out, "  Top idle-causing operators")?;
    let mut t = Table::new(["ms", "gaps", "cause", "where"]).left(&[2, 3]);
    for o in blamed {
        t.row([
            ms(o.idle_ns),
            o.gaps.to_string(),
            o.cause.label().to_string(),
            culprit(o),
        ]);
    }
    t.write(out, "  ")?;
    writeln!(out)
}

fn gaps_table(out: &mut dyn Write, gaps: &[TopGap]) -> io::Result<()> {
    if gaps.is_empty() {
        return Ok(());
    }
    writeln!(out, "  Longest gaps")?;
    let mut t = Table::new(["at ms", "length", "cause", "where"]).left(&[2, 3]);
    for g in gaps.iter().take(MAX_GAP_ROWS) {
        let place = place(
            g.operator.as_deref(),
            g.annotation.as_deref(),
            g.source.as_deref(),
        );
        t.row([
            ms(g.start_ns),
            duration(g.dur_ns),
            g.cause.label().to_string(),
            place,
        ]);
    }
    t.write(out, "  ")?;
    writeln!(out)
}

fn culprit(o: &TopIdleOperator) -> String {
    let at = place(
        o.operator.as_deref(),
        o.annotation.as_deref(),
        o.source.as_deref(),
    );
    if o.first_call {
        format!("{at} (first calls: warm-up)")
    } else {
        at
    }
}

/// `aten::item in Optimizer.step#SGD.step at train.py(42): step`, with
/// whatever parts are known.
fn place(op: Option<&str>, annotation: Option<&str>, source: Option<&str>) -> String {
    let mut s = op.unwrap_or("").to_string();
    if let Some(a) = annotation.filter(|&a| Some(a) != op) {
        if !s.is_empty() {
            s.push_str(" in ");
        }
        s.push_str(a);
    }
    if let Some(src) = source {
        if !s.is_empty() {
            s.push_str(" at ");
        }
        s.push_str(src);
    }
    if s.is_empty() {
        s.push('-');
    }
    s
}

/// The detectors' findings for this device, ranked by estimated savings,
/// each with its hint; then the bounds.
fn findings_section(out: &mut dyn Write, a: &Analysis, d: &DeviceReport) -> io::Result<()> {
    let mine: Vec<&Finding> = a.findings.iter().filter(|f| f.device == d.device).collect();
    if mine.is_empty() && d.breakdown.idle_ns > 0 {
        // Said, so that no section reads as a detector that did not run.
        writeln!(
            out,
            "  What to fix: no findings (no detector's pattern holds enough of this idle time to report; docs/detectors.md gives each one's floor)"
        )?;
        writeln!(out)?;
    }
    if !mine.is_empty() {
        writeln!(
            out,
            "  What to fix (ranked by estimated savings, else by the most a fix could save)"
        )?;
        for (i, f) in mine.iter().take(MAX_FINDINGS).enumerate() {
            writeln!(out, "  {:>2}. [{}] {}", i + 1, f.detector, f.title)?;
            // A primary finding's 0 can be a replay result (another wait
            // follows, so this fix alone moves nothing); context findings
            // are not idle time at all.
            let bound = f
                .savings_bound_ns
                .map(|b| format!(" (at most {})", duration(b)))
                .unwrap_or_default();
            // Durations in the unit that shows them: a 4 µs saving is
            // not "0.00 ms".
            let explained = duration(f.explained_ns);
            let saves = match (f.primary, f.estimable) {
                (true, true) if f.est_savings_ns == 0 => format!(
                    "saves nothing on its own (replayed without it, the step is no shorter); {explained} explained"
                ),
                (true, true) => format!("saves ~{} of {explained} explained", duration(f.est_savings_ns)),
                (true, false) => format!("saving not estimable from the trace{bound}; {explained} explained"),
                (false, _) if f.explained_ns == 0 => format!("context, not idle time{bound}"),
                (false, _) => format!("context, not idle time{bound}: {explained} explained"),
            };
            let at = place(
                f.operator.as_deref(),
                f.annotation.as_deref(),
                f.source.as_deref(),
            );
            let times = count(f.occurrences, "occurrence", "occurrences");
            writeln!(out, "      {saves}; {times}; where: {at}")?;
            for line in wrap(&f.hint, HINT_WIDTH) {
                writeln!(out, "      {line}")?;
            }
        }
        if mine.len() > MAX_FINDINGS {
            let rest = mine.len() - MAX_FINDINGS;
            let noun = if rest == 1 { "finding" } else { "findings" };
            writeln!(out, "  ... and {rest} more {noun} (all of them: --format json)")?;
        }
        writeln!(out)?;
    }
    let b = &d.bounds;
    if b.busy_ns > 0 {
        if b.excluded_idle_ns > 0 {
            writeln!(
                out,
                "  Bounds: busy {} ms of the {} ms window (kernels alone {} ms); {} ms of idle the trace cannot explain or that is setup stay: removing the rest makes it at most {:.2}x faster",
                ms(b.busy_ns),
                ms(b.window_ns),
                ms(b.kernel_sum_ns),
                ms(b.excluded_idle_ns),
                b.max_speedup
            )?;
        } else {
            writeln!(
                out,
                "  Bounds: busy {} ms of the {} ms window (kernels alone {} ms): removing all idle time makes it at most {:.2}x faster",
                ms(b.busy_ns),
                ms(b.window_ns),
                ms(b.kernel_sum_ns),
                b.max_speedup
            )?;
        }
    }
    Ok(())
}

/// Greedy word wrap at `width` columns.
pub fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines = Vec::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        if !line.is_empty() && line.chars().count() + 1 + word.chars().count() > width {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    if !line.is_empty() {
        lines.push(line);
    }
    lines
}

fn temporal_line(out: &mut dyn Write, d: &DeviceReport) -> io::Result<()> {
    let t = &d.temporal;
    let part = |ns| format!("{} ms ({})", ms(ns), percent(ns, t.span_ns));
    writeln!(
        out,
        "  HTA temporal breakdown over {} ms: idle {}, compute {}, non-compute {}",
        ms(t.span_ns),
        part(t.idle_ns),
        part(t.compute_ns),
        part(t.non_compute_ns)
    )
}

fn steps_table(out: &mut dyn Write, a: &Analysis, device: u32) -> io::Result<()> {
    if a.steps.is_empty() {
        return Ok(());
    }
    let mut t = Table::new(["step", "ms", "compute", "comm", "memcpy", "memset", "idle"]);
    for s in a.steps.iter().take(MAX_STEP_ROWS) {
        let Some(sd) = s.devices.iter().find(|sd| sd.device == device) else {
            continue;
        };
        let b = &sd.breakdown;
        let w = b.window_ns;
        t.row([
            format!("#{}", s.step),
            ms(w),
            percent(b.compute_ns, w),
            percent(b.communication_ns, w),
            percent(b.memcpy_ns, w),
            percent(b.memset_ns, w),
            percent(b.idle_ns, w),
        ]);
    }
    t.write(out, "  ")?;
    if a.steps.len() > MAX_STEP_ROWS {
        writeln!(
            out,
            "  ... and {} more steps (all of them: --format json)",
            a.steps.len() - MAX_STEP_ROWS
        )?;
    }
    writeln!(out)
}

fn launch_line(out: &mut dyn Write, d: &DeviceReport) -> io::Result<()> {
    let l = &d.launch_stats;
    if l.count == 0 {
        return writeln!(out, "  kernel launches: none linked to a runtime call");
    }
    writeln!(
        out,
        "  kernel launches: {}; launch delay p50 {}, p90 {}, max {}; launch call p50 {}, p90 {}",
        l.count,
        duration(l.launch_delay_ns.p50),
        duration(l.launch_delay_ns.p90),
        duration(l.launch_delay_ns.max),
        duration(l.cpu_duration_ns.p50),
        duration(l.cpu_duration_ns.p90),
    )?;
    writeln!(
        out,
        "    {} (GPU time shorter than their launch call), {}, {}",
        count(l.short_kernels, "short kernel", "short kernels"),
        count(l.runtime_outliers, "slow launch call", "slow launch calls"),
        count(l.launch_delay_outliers, "long launch delay", "long launch delays")
    )
}

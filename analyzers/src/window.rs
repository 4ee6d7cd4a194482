//! Which part of a trace is analysed: the profiled steps, the selection
//! options `--steps A..B` and `--exclude-last-step`, and the time window
//! `--time-window START..END`.
//!
//! ```text
//! cpu   [step 1.......][step 2.......]   [step 3.......]
//! gpu      [k c=1]  [k c=2]       [k c=3]    [k c=4]
//!
//! window (all steps):      step 1 start .. step 3 end
//! exclude_last_step:       cpu rows starting before step 3 (and the GPU rows
//!                          they launched: c=1..3, even if c=3 runs into
//!                          step 3's time); window step 1 start .. step 2 end
//! ```
//!
//! A time window selects by time alone ([`select_in`]): the steps options
//! narrow it to their steps' span (first selected step's start to the last
//! one's end; the two are intersected), and every row, CPU or GPU, that
//! overlaps the result is kept with its times cut at the edges:
//!
//! ```text
//! time window            |<------------------------>|
//! cpu   [step 1.......][step 2.......]   [step 3.......]
//! gpu      [k c=1]  [k c=2]       [k c=3]    [k c=4]
//! kept            [1...][step 2.......]   [step|
//!                   [k]  [k c=2]       [k c=3]  [k|
//! ```
//!
//! Rows are judged by their own times, not by their launch, so the result is
//! the same when the importer has already left out the rows outside the
//! window (`kineto::ReadLimits::time_window`).

use crate::format::duration_exact;
use crate::intervals::Span;
use gapscope_collectors::trace::{CpuOpKind, MarkerKind, Ns, OpRow, Trace};
use serde::{Deserialize, Serialize};
use std::borrow::Cow;

/// The time window type (`--time-window START..END`), one definition for
/// the reader and the analysis.
pub use gapscope_collectors::trace::TimeRange;

/// Why a time window selects nothing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TimeWindowError {
    /// The window and the trace's events do not meet.
    OutsideTrace {
        /// The trace's first start and last end, ns since the origin.
        extent: Span,
    },
    /// The steps options select no step.
    NoSteps,
    /// The window and the selected steps' span do not meet.
    OutsideSteps {
        /// First and last selected step numbers.
        steps: (u64, u64),
        /// Their span, ns since the origin.
        span: Span,
    },
}

impl TimeWindowError {
    /// The error as one line for the user: `name` is the trace as the user
    /// named it, `text` the window as they wrote it.
    pub fn message(&self, name: &str, text: &str) -> String {
        match self {
            TimeWindowError::OutsideTrace { extent } => format!(
                "{name}: the time window {text} is outside the trace, whose events run from {} to {} after its \
                 first event; choose a window within that range",
                duration_exact(extent.0),
                duration_exact(extent.1)
            ),
            TimeWindowError::NoSteps => format!(
                "{name}: --steps/--exclude-last-step select no step, so the time window {text} has nothing to \
                 cut; check the step numbers against the trace's ProfilerStep#N"
            ),
            TimeWindowError::OutsideSteps { steps, span } => format!(
                "{name}: the time window {text} and the selected steps ({}..{}, from {} to {}) do not overlap; \
                 widen the window or choose other steps",
                steps.0,
                steps.1,
                duration_exact(span.0),
                duration_exact(span.1)
            ),
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
pub fn parse_steps(s: &str) -> Result<(u64, u64), String> {
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

/// How to choose the analysed part of a trace.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WindowOptions {
    /// Only steps `A..=B`, by the `N` of `ProfilerStep#N`.
    pub steps: Option<(u64, u64)>,
    /// Drop the last step the way HTA does by default (its
    /// `include_last_profiler_step=False`); only when there are 2 or more.
    pub exclude_last_step: bool,
}

/// One profiled step: a `ProfilerStep#N` range on the CPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Step {
    /// `N` of `ProfilerStep#N` (its position when the name has no number).
    pub number: u64,
    /// Start, ns since the trace origin.
    pub start: Ns,
    /// End, ns since the trace origin.
    pub end: Ns,
}

/// The steps of `trace`, sorted by start. A step recorded on several threads
/// (same `N`) becomes one step covering all its ranges.
pub fn steps(trace: &Trace) -> Vec<Step> {
    let ops = &trace.cpu_ops;
    let mut out: Vec<Step> = (0..ops.len())
        .filter(|&i| ops.kind[i] == CpuOpKind::ProfilerStep)
        .map(|i| Step {
            number: step_number(trace.strings.get(ops.name[i])).unwrap_or(u64::MAX),
            start: ops.start[i],
            end: ops.end[i],
        })
        .collect();
    out.sort_unstable_by_key(|s| (s.start, s.end));
    merge_same_number(&mut out);
    for (pos, s) in out.iter_mut().enumerate() {
        if s.number == u64::MAX {
            s.number = pos as u64;
        }
    }
    out
}

/// `N` of `ProfilerStep#N`.
pub fn step_number(name: &str) -> Option<u64> {
    name.rsplit_once('#')?.1.trim().parse().ok()
}

fn merge_same_number(steps: &mut Vec<Step>) {
    let mut merged: Vec<Step> = Vec::with_capacity(steps.len());
    for s in steps.drain(..) {
        match merged
            .iter_mut()
            .find(|m| m.number == s.number && s.number != u64::MAX)
        {
            Some(m) => {
                m.start = m.start.min(s.start);
                m.end = m.end.max(s.end);
            }
            None => merged.push(s),
        }
    }
    merged.sort_unstable_by_key(|s| (s.start, s.end));
    *steps = merged;
}

/// The analysed time range of a (selected) trace and its steps.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Window {
    /// `[start, end)` in ns since the trace origin.
    pub span: Span,
    /// The steps inside it (empty when the trace has none).
    pub steps: Vec<Step>,
}

/// The window of an already [`select`]ed trace: first step start to last
/// step end when it has steps, else its first to last event (all tables,
/// the profiler's bookkeeping instants left out: [`workload_extent`]).
pub fn window(selected: &Trace) -> Window {
    let steps = steps(selected);
    let span = match (steps.first(), steps.last()) {
        (Some(f), Some(l)) => (f.start, steps.iter().map(|s| s.end).max().unwrap_or(l.end)),
        _ => workload_extent(selected),
    };
    Window { span, steps }
}

/// First start to last end over every row of every table; `(0, 0)` when empty.
pub fn event_extent(trace: &Trace) -> Span {
    trace.event_extent()
}

/// [`event_extent`] without the profiler's own bookkeeping instants, which
/// are not events of the workload: Kineto writes `Iteration Start: PyTorch
/// Profiler` when it starts and `Record Window End` when it stops, up to a
/// minute after the last recorded event (on the shared traces: 0.1 ms to
/// 59.7 ms after it). The window of a trace without steps.
pub fn workload_extent(trace: &Trace) -> Span {
    let columns = [
        (&trace.gpu.start, &trace.gpu.end),
        (&trace.runtime.start, &trace.runtime.end),
        (&trace.cpu_ops.start, &trace.cpu_ops.end),
    ];
    let mut start = columns.iter().filter_map(|(s, _)| s.iter().min().copied()).min();
    let mut end = columns.iter().filter_map(|(_, e)| e.iter().max().copied()).max();
    let m = &trace.markers;
    let mut bookkeeping: Vec<Option<bool>> = vec![None; trace.strings.len()];
    for i in 0..m.len() {
        let id = m.name[i].0 as usize;
        let skip = *bookkeeping[id].get_or_insert_with(|| {
            m.kind[i] == MarkerKind::Instant && is_profiler_bookkeeping(trace.strings.get(m.name[i]))
        });
        if !skip {
            start = Some(start.map_or(m.start[i], |s| s.min(m.start[i])));
            end = Some(end.map_or(m.end[i], |e| e.max(m.end[i])));
        }
    }
    match (start, end) {
        (Some(s), Some(e)) => (s, e),
        _ => (0, 0),
    }
}

/// The instants Kineto writes about the profiler itself.
fn is_profiler_bookkeeping(name: &str) -> bool {
    name == "Record Window End" || name.starts_with("Iteration Start: ")
}

/// The steps `--exclude-last-step` leaves (all of them without it, or with
/// fewer than two steps), among which `--steps` chooses.
fn candidates<'s>(all: &'s [Step], opts: &WindowOptions) -> &'s [Step] {
    if opts.exclude_last_step && all.len() >= 2 {
        &all[..all.len() - 1]
    } else {
        all
    }
}

/// The steps of `all` (from [`steps`]) that `opts` selects, in time order;
/// empty when `--steps` names none of the trace's.
pub fn selected_steps<'s>(all: &'s [Step], opts: &WindowOptions) -> Vec<&'s Step> {
    candidates(all, opts)
        .iter()
        .filter(|s| opts.steps.is_none_or(|(a, b)| s.number >= a && s.number <= b))
        .collect()
}

/// The CPU-time range `[lo, hi)` whose rows a selection keeps, or `None`
/// when the options keep everything.
///
/// HTA assigns a CPU row to the step holding its start, and everything
/// before the first step to no step but keeps it; we do the same: rows
/// before the first selected step are kept when that step is the trace's
/// first, and the selection ends where the step after the last selected one
/// begins (so CPU work between two steps stays with the earlier step).
fn cpu_range(all: &[Step], opts: &WindowOptions) -> Option<Span> {
    let kept = candidates(all, opts);
    if let Some((a, b)) = opts.steps {
        let first = kept.iter().position(|s| s.number >= a && s.number <= b);
        let last = kept.iter().rposition(|s| s.number >= a && s.number <= b);
        return Some(match (first, last) {
            (Some(f), Some(l)) => (
                if f == 0 { Ns::MIN } else { kept[f].start },
                all.get(l + 1).map_or(Ns::MAX, |s| s.start),
            ),
            _ => (0, 0), // no such step: select nothing
        });
    }
    (kept.len() < all.len()).then(|| (Ns::MIN, all[kept.len()].start))
}

/// The span a time window selects with the steps options: their
/// intersection; `None` when empty.
fn time_selection(all: &[Step], opts: &WindowOptions, time: TimeRange) -> Result<Span, TimeWindowError> {
    let (mut lo, mut hi) = time.span();
    if opts.steps.is_some() || (opts.exclude_last_step && all.len() >= 2) {
        let chosen = selected_steps(all, opts);
        let (Some(first), Some(last)) = (chosen.first(), chosen.last()) else {
            return Err(TimeWindowError::NoSteps);
        };
        let span = (
            first.start,
            chosen.iter().map(|s| s.end).max().unwrap_or(last.end),
        );
        if span.0 >= hi || span.1 <= lo {
            return Err(TimeWindowError::OutsideSteps {
                steps: (first.number, last.number),
                span,
            });
        }
        (lo, hi) = (lo.max(span.0), hi.min(span.1));
    }
    Ok((lo, hi))
}

/// Checks that a time window selects something from a trace whose events
/// run over `extent` (ns since the origin: pass the extent of the whole
/// trace when the importer left rows out), with the steps options.
pub fn check_time_window(
    trace: &Trace,
    opts: &WindowOptions,
    time: TimeRange,
    extent: Span,
) -> Result<(), TimeWindowError> {
    let (lo, hi) = time.span();
    // An empty trace (extent 0..0) is not the window's fault.
    if extent.1 > extent.0 && (lo >= extent.1 || hi <= extent.0) {
        return Err(TimeWindowError::OutsideTrace { extent });
    }
    time_selection(&steps(trace), opts, time).map(|_| ())
}

/// The part of `trace` that `opts` and the time window select. Without a
/// time window this is [`select`]. With one, the selection is by time (see
/// the module's docs); a window that selects nothing gives an empty trace
/// ([`check_time_window`] says why).
pub fn select_in(trace: &Trace, opts: &WindowOptions, time: Option<TimeRange>) -> Trace {
    let Some(time) = time else {
        return select(trace, opts);
    };
    match time_selection(&steps(trace), opts, time) {
        Ok(span) => clip(trace, span),
        Err(_) => clip(trace, (0, 0)),
    }
}

/// True when the options keep every row of `trace` (no time window, and
/// the steps options keep all steps): the analysis can read the trace
/// itself instead of a copy.
pub fn selects_all(trace: &Trace, opts: &WindowOptions, time: Option<TimeRange>) -> bool {
    time.is_none() && cpu_range(&steps(trace), opts).is_none()
}

/// What an analysis reads: `trace` itself when the options select all of it
/// (no copy: the tables of a multi-GB trace are hundreds of MB), else
/// [`select_in`]'s new trace.
pub fn selection<'t>(trace: &'t Trace, opts: &WindowOptions, time: Option<TimeRange>) -> Cow<'t, Trace> {
    if selects_all(trace, opts, time) {
        Cow::Borrowed(trace)
    } else {
        Cow::Owned(select_in(trace, opts, time))
    }
}

/// Whether the row `[start, end)` overlaps `span`; an instant (zero
/// length) when `span.0 <= start < span.1`. The importer's window uses the
/// same rule (`kineto::overlaps`).
fn overlaps(start: Ns, end: Ns, span: Span) -> bool {
    start < span.1 && (end > span.0 || (start == end && start >= span.0))
}

/// The rows that overlap `span`, their times cut to it.
fn clip(trace: &Trace, span: Span) -> Trace {
    let keep = |start: &[Ns], end: &[Ns]| -> Vec<bool> {
        start
            .iter()
            .zip(end)
            .map(|(&s, &e)| overlaps(s, e, span))
            .collect()
    };
    let keep_gpu = keep(&trace.gpu.start, &trace.gpu.end);
    let keep_rt = keep(&trace.runtime.start, &trace.runtime.end);
    let keep_op = keep(&trace.cpu_ops.start, &trace.cpu_ops.end);
    let keep_mk = keep(&trace.markers.start, &trace.markers.end);
    let mut out = retain(trace, &keep_gpu, &keep_rt, &keep_op, &keep_mk);
    let cut = |start: &mut [Ns], end: &mut [Ns]| {
        for (s, e) in start.iter_mut().zip(end.iter_mut()) {
            *s = (*s).max(span.0);
            *e = (*e).min(span.1);
        }
    };
    cut(&mut out.gpu.start, &mut out.gpu.end);
    cut(&mut out.runtime.start, &mut out.runtime.end);
    cut(&mut out.cpu_ops.start, &mut out.cpu_ops.end);
    cut(&mut out.markers.start, &mut out.markers.end);
    out
}

/// The part of `trace` that `opts` selects, as a new trace with consistent
/// links.
///
/// Without options (or with `exclude_last_step` on a trace with fewer than 2
/// steps) this is a copy. Otherwise, as HTA does: CPU-side rows (operators,
/// runtime calls, markers) are kept when they start inside the selected
/// steps' CPU range, and GPU rows when the runtime call that launched them
/// (same correlation) is kept, so orphans without a launch go. Unlike HTA,
/// GPU rows launched before that range are kept too where they run inside
/// the selected steps (without their launch): on a GPU that runs behind
/// the host, an earlier step's work fills a later step's time, and leaving
/// it out made a busy step look idle, its own kernels "queued" behind
/// nothing.
pub fn select(trace: &Trace, opts: &WindowOptions) -> Trace {
    let all = steps(trace);
    match cpu_range(&all, opts) {
        None => trace.clone(),
        Some(range) => {
            let chosen = selected_steps(&all, opts);
            let span = match (chosen.first(), chosen.last()) {
                (Some(first), Some(_)) => (
                    first.start,
                    chosen.iter().map(|s| s.end).max().unwrap_or(first.end),
                ),
                _ => (0, 0),
            };
            filter(trace, range, span)
        }
    }
}

fn in_range(range: Span) -> impl Fn(&Ns) -> bool {
    move |&t| t >= range.0 && t < range.1
}

/// The rows whose CPU side starts in `range`, with the GPU rows they
/// launched, and the GPU rows launched before `range` that run in `span`
/// (the selected steps).
fn filter(trace: &Trace, range: Span, span: Span) -> Trace {
    let keep_rt: Vec<bool> = trace.runtime.start.iter().map(in_range(range)).collect();
    let keep_op: Vec<bool> = trace.cpu_ops.start.iter().map(in_range(range)).collect();
    let keep_mk: Vec<bool> = trace.markers.start.iter().map(in_range(range)).collect();
    let gpu = &trace.gpu;
    let keep_gpu: Vec<bool> = trace
        .links
        .gpu_launch
        .iter()
        .enumerate()
        .map(|(i, &r)| {
            r.is_some_and(|r| {
                keep_rt[r.index()]
                    || (trace.runtime.start[r.index()] < range.0 && overlaps(gpu.start[i], gpu.end[i], span))
            })
        })
        .collect();
    retain(trace, &keep_gpu, &keep_rt, &keep_op, &keep_mk)
}

/// The rows of `trace` marked `keep_*`, with CPU ranges nested again and
/// linked again.
fn retain(trace: &Trace, keep_gpu: &[bool], keep_rt: &[bool], keep_op: &[bool], keep_mk: &[bool]) -> Trace {
    let op_map: Vec<Option<OpRow>> = new_index(keep_op, OpRow::new);

    let mut out = trace.clone_meta();
    out.gpu = trace.gpu.clone();
    out.gpu.retain_rows(keep_gpu);
    out.runtime = trace.runtime.clone();
    out.runtime.retain_rows(keep_rt);
    out.cpu_ops = trace.cpu_ops.clone();
    out.cpu_ops.retain_rows(keep_op);
    out.markers = trace.markers.clone();
    out.markers.retain_rows(keep_mk);

    renest(&mut out, &op_map, &trace.cpu_ops.parent, keep_op);
    // Linked again on the rows kept rather than remapped: where a link's
    // row went, the kept rows may hold another answer (a call whose
    // innermost operator ended before the window holds its start inside
    // an enclosing one; a reused correlation id's other call), and the
    // selection must be linked as an import of only these rows would be.
    // Before `clip` cuts the times, so links read the recorded times.
    out.relink();
    out
}

/// Old row → new row after keeping `keep` (`None` if dropped).
fn new_index<R>(keep: &[bool], row: impl Fn(usize) -> R) -> Vec<Option<R>> {
    let mut next = 0;
    keep.iter()
        .map(|&k| {
            k.then(|| {
                next += 1;
                row(next - 1)
            })
        })
        .collect()
}

/// The kept entries of a link column, pointing at new rows.
fn retained<R: Copy, I: Copy>(
    links: &[Option<I>],
    keep: &[bool],
    map: &[Option<R>],
    index: impl Fn(I) -> usize,
) -> Vec<Option<R>> {
    links
        .iter()
        .zip(keep)
        .filter(|(_, &k)| k)
        .map(|(&l, _)| l.and_then(|l| map[index(l)]))
        .collect()
}

/// Remaps parents, recomputes depths (a parent that was dropped makes its
/// child top level) and the per-thread row offsets.
fn renest(out: &mut Trace, op_map: &[Option<OpRow>], old_parent: &[Option<OpRow>], keep: &[bool]) {
    let parents = retained(old_parent, keep, op_map, OpRow::index);
    let ops = &mut out.cpu_ops;
    for (i, &p) in parents.iter().enumerate() {
        ops.parent[i] = p;
        // Parents precede children, so the parent's depth is already final.
        ops.depth[i] = p.map_or(0, |p| ops.depth[p.index()].saturating_add(1));
    }
    let mut start = vec![0u32; out.threads.len() + 1];
    for t in &ops.thread {
        start[t.0 as usize + 1] += 1;
    }
    for i in 1..start.len() {
        start[i] += start[i - 1];
    }
    out.cpu_op_thread_start = start;
}

/// The trace's tables that a selection does not filter.
trait CloneMeta {
    fn clone_meta(&self) -> Trace;
}

impl CloneMeta for Trace {
    fn clone_meta(&self) -> Trace {
        Trace {
            meta: self.meta.clone(),
            strings: self.strings.clone(),
            threads: self.threads.clone(),
            devices: self.devices.clone(),
            collectives: self.collectives.clone(),
            diagnostics: self.diagnostics.clone(),
            ..Trace::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn step_numbers_parse() {
        assert_eq!(step_number("ProfilerStep#12"), Some(12));
        assert_eq!(step_number("ProfilerStep"), None);
    }

    #[test]
    fn cpu_range_rules() {
        let s = |n, a, b| Step {
            number: n,
            start: a,
            end: b,
        };
        let all = [s(1, 0, 10), s(2, 10, 20), s(3, 25, 30)];
        let o = |steps, ex| WindowOptions {
            steps,
            exclude_last_step: ex,
        };
        assert_eq!(cpu_range(&all, &o(None, false)), None);
        assert_eq!(cpu_range(&all, &o(None, true)), Some((Ns::MIN, 25)));
        assert_eq!(cpu_range(&all[..1], &o(None, true)), None);
        assert_eq!(cpu_range(&all, &o(Some((2, 3)), false)), Some((10, Ns::MAX)));
        assert_eq!(cpu_range(&all, &o(Some((2, 3)), true)), Some((10, 25)));
        assert_eq!(cpu_range(&all, &o(Some((1, 1)), false)), Some((Ns::MIN, 10)));
        assert_eq!(cpu_range(&all, &o(Some((7, 9)), false)), Some((0, 0)));
    }

    /// ```text
    /// µs        0    10   20   30   40   50   60        window: 25..
    /// thread 1  [outer..........................]
    ///                [inner]
    ///                  [call c1.......]
    ///             [call c2 (A)........]
    ///                [c2 B]
    /// gpu                                [k1] [k2]
    /// ```
    /// A time window's selection is linked on the rows it keeps, as an
    /// import of only those rows would be: `inner` and `B` end before the
    /// window, so c1 holds its start in `outer` and k2's launch is `A`, the
    /// latest call with its id left (a remap of the whole trace's links
    /// would leave both unlinked).
    #[test]
    fn a_time_window_links_the_rows_it_keeps_again() {
        use gapscope_collectors::trace::{CallRow, Sketch};
        let t = Sketch::in_units(1_000)
            .op(0, 65, "outer")
            .op(10, 20, "inner")
            .call(5, 40, "cudaLaunchKernel", 2)
            .call(10, 12, "cudaLaunchKernel", 2)
            .call(15, 40, "cudaLaunchKernel", 1)
            .kernel(7, 50, 55, 1)
            .kernel(7, 58, 62, 2)
            .finish();
        assert_eq!(t.links.gpu_launch[1], Some(CallRow::new(1)), "the whole trace: B");
        assert_eq!(t.op_name(t.links.runtime_op[2]), Some("inner"));
        let window = TimeRange {
            start_ns: Some(25_000),
            end_ns: None,
        };
        let s = select_in(&t, &WindowOptions::default(), Some(window));
        assert_eq!(s.runtime.len(), 2);
        assert_eq!(
            s.links.gpu_launch,
            vec![Some(CallRow::new(1)), Some(CallRow::new(0))]
        );
        assert_eq!(s.links.runtime_gpu_count, vec![1, 1]);
        assert_eq!(s.op_name(s.links.runtime_op[1]), Some("outer"));
        // Times are cut to the window after linking.
        assert_eq!(s.runtime.start, vec![25_000, 25_000]);
    }
}

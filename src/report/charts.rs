//! Chart layouts for the view model: rectangles in each chart's own units,
//! drawn as inline SVG by the templates (hand-written SVG, no plotting
//! library: the charts are stacked rectangles, and the page stays small).
//!
//! ```text
//! class bar   [compute.......][comm][data][idle........]      0..100
//! cause bar   [dataloader.........][sync.....][launch]         0..100 of idle
//! strip       one column per 1/500 of the window, stacked bottom-up:
//!             busy, then idle by cause; equal neighbours merge into one run
//! steps       one column per step, height ∝ step length, stacked bottom-up:
//!             compute, communication, data movement, idle by cause
//! ```

use super::palette::{cause_color, causes_desc, class_ns, Class, BUSY};
use gapscope_analyzers::analysis::Analysis;
use gapscope_analyzers::breakdown::Breakdown;
use gapscope_analyzers::causes::{Cause, CauseTotals};
use gapscope_analyzers::detectors::Finding;
use gapscope_analyzers::format::{ms, percent};
use gapscope_analyzers::strip::{Column, Culprit, Strip as StripData};
use gapscope_collectors::trace::Ns;
use serde::Serialize;

/// Height of a timeline strip, in its units (one unit ≈ one pixel).
pub const STRIP_HEIGHT: u32 = 24;
/// Steps drawn in a step chart; more get "and N more".
pub const MAX_STEP_COLUMNS: usize = 200;
/// Width of a step chart, in its units.
pub const STEP_WIDTH: f64 = 1000.0;
/// Height of a step chart, in its units.
pub const STEP_HEIGHT: f64 = 100.0;

/// A horizontal stacked bar over `0..100`.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Bar {
    /// Segments, left to right; zero-width ones left out.
    pub segments: Vec<BarSegment>,
}

/// One segment of a [`Bar`].
#[derive(Clone, Debug, Serialize)]
pub struct BarSegment {
    /// Left edge, 0..100.
    pub x: f64,
    /// Width, 0..100.
    pub w: f64,
    /// Fill.
    pub color: String,
    /// Hover text.
    pub title: String,
}

/// A filled rectangle in a column, `y` from the top.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Fill {
    /// Top edge.
    pub y: f64,
    /// Height.
    pub h: f64,
    /// Fill.
    pub color: String,
}

/// A device's timeline strip.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Strip {
    /// Width in columns (the SVG's viewBox width).
    pub width: usize,
    /// Height (the SVG's viewBox height).
    pub height: u32,
    /// Runs of equal neighbouring columns, left to right.
    pub runs: Vec<Run>,
    /// Step boundaries, in columns (drawn as thin lines).
    pub step_lines: Vec<f64>,
    /// Where the top findings on this device point (their idle evidence).
    pub marks: Vec<Mark>,
    /// Length of the window, `123.45 ms`.
    pub end_label: String,
}

/// Neighbouring columns that look alike, with one hover text.
#[derive(Clone, Debug, Serialize)]
pub struct Run {
    /// First column.
    pub x: usize,
    /// Number of columns.
    pub w: usize,
    /// Stacked fills, bottom-up.
    pub fills: Vec<Fill>,
    /// Hover text: time range, busy share, main idle cause, operator, source.
    pub title: String,
}

/// A finding's piece of evidence on the strip.
#[derive(Clone, Debug, Serialize)]
pub struct Mark {
    /// Left edge, in columns.
    pub x: f64,
    /// Width, in columns (at least half a column, so it shows).
    pub w: f64,
    /// The finding's rank and title.
    pub title: String,
}

/// Findings marked per strip.
pub const MAX_MARKED_FINDINGS: usize = 5;

/// One stacked column per step.
#[derive(Clone, Debug, Default, Serialize)]
pub struct StepChart {
    /// Columns, in step order.
    pub columns: Vec<StepColumn>,
    /// `and N more steps` (empty when all are drawn).
    pub more_text: String,
    /// Length of the longest drawn step (the chart's full height).
    pub max_label: String,
}

/// One step's column.
#[derive(Clone, Debug, Serialize)]
pub struct StepColumn {
    /// Left edge, in 0..[`STEP_WIDTH`].
    pub x: f64,
    /// Width.
    pub w: f64,
    /// Stacked fills, bottom-up.
    pub fills: Vec<Fill>,
    /// Hover text.
    pub title: String,
}

fn round2(v: f64) -> f64 {
    (v * 100.0).round() / 100.0
}

/// Cuts `0..total` of a length-`size` axis into pieces of `values`, so the
/// rounded pieces add up to the rounded whole.
fn stack(values: &[Ns], total: Ns, size: f64) -> Vec<(f64, f64)> {
    let mut cum: Ns = 0;
    values
        .iter()
        .map(|&v| {
            let a = round2(cum as f64 * size / total as f64);
            cum += v;
            let b = round2(cum as f64 * size / total as f64);
            (a, round2(b - a))
        })
        .collect()
}

/// The class bar of a breakdown.
pub fn class_bar(b: &Breakdown) -> Bar {
    let parts = class_ns(b);
    bar(
        b.window_ns,
        parts
            .iter()
            .map(|&(c, ns)| {
                (
                    ns,
                    c.color(),
                    format!("{}: {} ms ({})", c.label(), ms(ns), percent(ns, b.window_ns)),
                )
            })
            .collect(),
    )
}

/// The idle-by-cause bar; its whole is the idle time.
pub fn cause_bar(t: &CauseTotals) -> Bar {
    let total = t.total();
    bar(
        total,
        causes_desc(t)
            .into_iter()
            .map(|(c, ns)| {
                let title = format!("{}: {} ms ({} of idle)", c.label(), ms(ns), percent(ns, total));
                (ns, cause_color(c), title)
            })
            .collect(),
    )
}

fn bar(total: Ns, parts: Vec<(Ns, &str, String)>) -> Bar {
    if total <= 0 {
        return Bar::default();
    }
    let ns: Vec<Ns> = parts.iter().map(|p| p.0).collect();
    let segments = stack(&ns, total, 100.0)
        .into_iter()
        .zip(parts)
        .filter(|((_, w), _)| *w > 0.0)
        .map(|((x, w), (_, color, title))| BarSegment {
            x,
            w,
            color: color.to_string(),
            title,
        })
        .collect();
    Bar { segments }
}

/// Bottom-up fills of one column of height `height`: busy, then idle by
/// cause in precedence order. Quantised to whole units so that neighbours
/// that look alike compare equal.
fn column_fills(c: &Column, height: u32) -> Vec<Fill> {
    let len = c.end - c.start;
    let mut parts: Vec<(Ns, &str)> = vec![(c.busy_ns, BUSY)];
    parts.extend(Cause::ALL.iter().map(|&k| (c.idle.get(k), cause_color(k))));
    let h = f64::from(height);
    let mut cum: Ns = 0;
    let mut fills = Vec::new();
    for (ns, color) in parts {
        let bottom = (cum as f64 * h / len as f64).round();
        cum += ns;
        let top = (cum as f64 * h / len as f64).round();
        if top > bottom {
            fills.push(Fill {
                y: h - top,
                h: top - bottom,
                color: color.to_string(),
            });
        }
    }
    fills
}

/// What a column's hover names: the culprit's cause, operator and source.
fn blame_key(c: &Column) -> Option<(Cause, Option<&str>, Option<&str>)> {
    c.culprit
        .as_ref()
        .map(|k| (k.cause, k.operator.as_deref(), k.source.as_deref()))
}

/// The strip of one device, with the idle evidence of its top-ranked
/// findings marked.
pub fn strip(s: &StripData, a: &Analysis, ranked: &[Finding]) -> Strip {
    let n = s.columns.len();
    let mut runs: Vec<Run> = Vec::new();
    let mut i = 0;
    while i < n {
        let fills = column_fills(&s.columns[i], STRIP_HEIGHT);
        let key = blame_key(&s.columns[i]);
        let mut j = i + 1;
        while j < n && blame_key(&s.columns[j]) == key && column_fills(&s.columns[j], STRIP_HEIGHT) == fills {
            j += 1;
        }
        runs.push(Run {
            x: i,
            w: j - i,
            fills,
            title: run_title(&s.columns[i..j], s.window.0),
        });
        i = j;
    }
    let (w0, w1) = s.window;
    let len = (w1 - w0).max(1) as f64;
    // Step boundaries only while steps are at least 10 columns wide; past
    // that they would hide the strip.
    let step_lines = if a.steps.len() * 10 > n {
        Vec::new()
    } else {
        a.steps
            .iter()
            .skip(1)
            .map(|st| round2((st.start_ns - w0) as f64 * n as f64 / len))
            .collect()
    };
    let scale = |t: Ns| (t - w0) as f64 * n as f64 / len;
    let marks = ranked
        .iter()
        .enumerate()
        .filter(|(_, f)| f.device == s.device)
        .take(MAX_MARKED_FINDINGS)
        .flat_map(|(rank, f)| {
            f.evidence
                .iter()
                .filter(|e| e.kind == "idle" && e.end_ns > w0 && e.start_ns < w1)
                .map(move |e| {
                    let x = scale(e.start_ns.max(w0));
                    Mark {
                        x: round2(x),
                        w: round2((scale(e.end_ns.min(w1)) - x).max(0.5)),
                        title: format!("#{} {}", rank + 1, f.title),
                    }
                })
        })
        .collect();
    Strip {
        width: n,
        height: STRIP_HEIGHT,
        runs,
        step_lines,
        marks,
        end_label: format!("{} ms", ms(w1 - w0)),
    }
}

fn run_title(cols: &[Column], origin: Ns) -> String {
    let (start, end) = (cols[0].start, cols[cols.len() - 1].end);
    let busy: Ns = cols.iter().map(|c| c.busy_ns).sum();
    let mut idle = CauseTotals::default();
    for c in cols {
        for (k, ns) in c.idle.iter() {
            idle.add(k, ns);
        }
    }
    let mut t = format!(
        "{} to {} ms: busy {}",
        ms(start - origin),
        ms(end - origin),
        percent(busy, end - start)
    );
    if idle.total() > 0 {
        let causes: Vec<String> = causes_desc(&idle)
            .iter()
            .map(|&(c, ns)| format!("{} {}", c.label(), percent(ns, end - start)))
            .collect();
        t += &format!("; idle: {}", causes.join(", "));
    }
    if let Some(c) = cols
        .iter()
        .filter_map(|c| c.culprit.as_ref())
        .max_by_key(|c| c.ns)
    {
        t += &culprit_text(c);
    }
    t
}

fn culprit_text(c: &Culprit) -> String {
    let mut t = String::new();
    if let Some(op) = &c.operator {
        t += &format!("\nidle blamed on: {op}");
    }
    if let Some(a) = &c.annotation {
        t += &format!("\nin: {a}");
    }
    if let Some(s) = &c.source {
        t += &format!("\nsource: {s}");
    }
    t
}

/// The per-step chart of `device`.
pub fn step_chart(a: &Analysis, device: u32) -> StepChart {
    let steps: Vec<_> = a
        .steps
        .iter()
        .filter_map(|s| s.devices.iter().find(|d| d.device == device).map(|d| (s.step, d)))
        .collect();
    let more = steps.len().saturating_sub(MAX_STEP_COLUMNS);
    let shown = &steps[..steps.len() - more];
    let max = shown
        .iter()
        .map(|(_, d)| d.breakdown.window_ns)
        .max()
        .unwrap_or(0);
    if max <= 0 {
        return StepChart::default();
    }
    let slot = STEP_WIDTH / shown.len() as f64;
    let columns = shown
        .iter()
        .enumerate()
        .map(|(i, (n, d))| {
            let b = &d.breakdown;
            let mut parts: Vec<(Ns, &str)> =
                class_ns(b)[..3].iter().map(|&(c, ns)| (ns, c.color())).collect();
            parts.extend(
                Cause::ALL
                    .iter()
                    .map(|&k| (d.idle_by_cause_ns.get(k), cause_color(k))),
            );
            // Idle the causes do not cover (none expected) stays plain idle.
            parts.push((
                (b.idle_ns - d.idle_by_cause_ns.total()).max(0),
                Class::Idle.color(),
            ));
            let ns: Vec<Ns> = parts.iter().map(|p| p.0).collect();
            let height = STEP_HEIGHT * b.window_ns as f64 / max as f64;
            let fills = stack(&ns, b.window_ns.max(1), height)
                .into_iter()
                .zip(&parts)
                .filter(|((_, h), _)| *h > 0.0)
                .map(|((y, h), (_, color))| Fill {
                    y: round2(STEP_HEIGHT - y - h),
                    h,
                    color: color.to_string(),
                })
                .collect();
            StepColumn {
                x: round2(i as f64 * slot + slot * 0.1),
                w: round2(slot * 0.8),
                fills,
                title: step_title(*n, b, &d.idle_by_cause_ns),
            }
        })
        .collect();
    StepChart {
        columns,
        more_text: if more == 0 {
            String::new()
        } else {
            format!("and {more} more steps not drawn")
        },
        max_label: format!("{} ms", ms(max)),
    }
}

fn step_title(n: u64, b: &Breakdown, idle: &CauseTotals) -> String {
    let classes: Vec<String> = class_ns(b)
        .iter()
        .filter(|&&(_, ns)| ns > 0)
        .map(|&(c, ns)| format!("{} {}", c.label(), percent(ns, b.window_ns)))
        .collect();
    let mut t = format!("step #{n}: {} ms\n{}", ms(b.window_ns), classes.join(", "));
    let causes: Vec<String> = causes_desc(idle)
        .iter()
        .map(|&(c, ns)| format!("{} {}", c.label(), percent(ns, b.window_ns)))
        .collect();
    if !causes.is_empty() {
        t += &format!("\nidle by cause: {}", causes.join(", "));
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stacked_pieces_add_up() {
        let s = stack(&[1, 1, 1], 3, 100.0);
        assert_eq!(s.len(), 3);
        let total: f64 = s.iter().map(|p| p.1).sum();
        assert!((total - 100.0).abs() < 1e-9, "{s:?}");
        assert_eq!(s[1].0, s[0].0 + s[0].1);
    }

    #[test]
    fn column_fills_cover_the_height() {
        let mut idle = CauseTotals::default();
        idle.add(Cause::Sync, 30);
        idle.add(Cause::Dataloader, 20);
        let c = Column {
            start: 0,
            end: 100,
            busy_ns: 50,
            idle,
            culprit: None,
        };
        let f = column_fills(&c, 24);
        assert_eq!(f.iter().map(|f| f.h).sum::<f64>(), 24.0);
        assert_eq!(f[0].color, BUSY);
        assert_eq!(f[0].y, 12.0);
    }
}

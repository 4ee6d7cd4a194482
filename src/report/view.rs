//! The report's view model: everything the templates show, as plain
//! serializable data with every number already formatted and every chart
//! already laid out (rectangles in the chart's own units). Templates only
//! loop and print; tests snapshot this (criterion's `Context` pattern).
//!
//! Lists that grow with the trace are [`Capped`]: at most a fixed number of
//! rows plus "and N more", so 8 GPUs and 100 steps still read on one page.

use super::findings::{BoundRow, FindingRow};
use super::palette::{cause_color, Class};
use super::palette::{causes_desc, class_ns};
use super::tables::{Capped, MAX_DEVICES};
use super::{charts, findings, tables};
use gapscope_analyzers::analysis::{Analysis, DeviceReport};
use gapscope_analyzers::bounds::Bounds;
use gapscope_analyzers::breakdown::Breakdown;
use gapscope_analyzers::causes::{Cause, CauseTotals};
use gapscope_analyzers::detectors::Finding;
use gapscope_analyzers::format::{ms, percent};
use gapscope_analyzers::kernels::KernelTable;
use gapscope_analyzers::strip::{Strip, STRIP_COLUMNS};
use gapscope_analyzers::Session;
use gapscope_collectors::trace::Ns;
use serde::Serialize;

/// Above this many devices the breakdown is drawn one line per device.
pub const COMPACT_ABOVE: usize = 2;
/// Step rows listed per device.
pub const MAX_STEP_ROWS: usize = 20;

/// The whole page.
#[derive(Clone, Debug, Serialize)]
pub struct ReportView {
    /// Page title.
    pub title: String,
    /// The trace as the user named it.
    pub trace: String,
    /// `gapscope <version>`.
    pub generator: String,
    /// The analysed window, in words.
    pub window: WindowView,
    /// The first thing a reader sees.
    pub headline: Headline,
    /// Colour keys of the charts.
    pub legend: Legend,
    /// One section per device.
    pub devices: Capped<DeviceView>,
    /// More than [`COMPACT_ABOVE`] devices: one line per device, numbers in
    /// a table instead of under each bar.
    pub compact: bool,
    /// Detector findings, ranked by estimated savings.
    pub findings: Findings,
    /// Operators behind the most idle time, over all devices.
    pub idle_operators: tables::SourcedTable<tables::IdleOperatorRow>,
    /// The longest idle gaps, over all devices.
    pub gaps: tables::SourcedTable<tables::GapRow>,
    /// Top kernels by time.
    pub kernels: tables::KernelsView,
    /// Kernel launch statistics, per device.
    pub launches: Vec<tables::LaunchRow>,
    /// Lower bounds on the window's length.
    pub bounds: Vec<BoundRow>,
    /// How to look at the same trace in Perfetto.
    pub perfetto: PerfettoView,
    /// What the importer and analysis counted, to judge the result by.
    pub diagnostics: Vec<String>,
}

/// The analysed window.
#[derive(Clone, Debug, Serialize)]
pub struct WindowView {
    /// `5 steps (#10 to #14)`, `whole trace`.
    pub what: String,
    /// Its length, `123.45 ms`.
    pub duration: String,
}

/// The headline.
#[derive(Clone, Debug, Serialize)]
pub struct Headline {
    /// Idle share of all devices' time, `43.2%` (`-` without GPU work).
    pub idle_pct: String,
    /// `52.31 ms of 121.00 ms GPU time (1 GPU)`.
    pub idle_of: String,
    /// The cause with the most idle time over all devices.
    pub top_cause: Option<TopCause>,
    /// The finding with the largest estimated savings.
    pub top_finding: Option<FindingRow>,
    /// One or two sentences that say it all.
    pub summary: String,
}

/// The leading idle cause.
#[derive(Clone, Debug, Serialize)]
pub struct TopCause {
    /// Stable name (`dataloader`).
    pub key: String,
    /// What a reader sees.
    pub label: String,
    /// Its colour.
    pub color: String,
    /// Its idle time.
    pub time: String,
    /// Share of all idle time, `62.0%`.
    pub share_of_idle: String,
    /// What it means.
    pub meaning: String,
}

/// Colour keys.
#[derive(Clone, Debug, Serialize)]
pub struct Legend {
    /// The breakdown classes.
    pub classes: Vec<Swatch>,
    /// The idle causes, with what each means.
    pub causes: Vec<Swatch>,
}

/// One colour key.
#[derive(Clone, Debug, Serialize)]
pub struct Swatch {
    /// Stable name.
    pub key: String,
    /// What a reader sees.
    pub label: String,
    /// Fill colour.
    pub color: String,
    /// One sentence (causes only).
    pub meaning: String,
}

/// A part of a whole: a class or a cause of one device or step.
#[derive(Clone, Debug, Serialize)]
pub struct Part {
    /// Stable name.
    pub key: String,
    /// What a reader sees.
    pub label: String,
    /// Fill colour.
    pub color: String,
    /// Milliseconds, two decimals (`12.35`).
    pub ms: String,
    /// Share of the whole, `45.6%`.
    pub pct: String,
}

/// One device.
#[derive(Clone, Debug, Serialize)]
pub struct DeviceView {
    /// GPU index.
    pub device: u32,
    /// `GPU 0 (NVIDIA H100 80GB HBM3)`.
    pub label: String,
    /// The window's length on it, ms.
    pub window_ms: String,
    /// Compute, communication, data movement, idle (all four, zeros too).
    pub classes: Vec<Part>,
    /// Idle by cause, most first, zero causes left out; shares of idle.
    pub causes: Vec<Part>,
    /// The largest cause and its share of idle, `DataLoader 85.9%`.
    pub top_cause: String,
    /// Copy directions inside data movement, `HtoD 1.20 ms, DtoH 0.30 ms`.
    pub data_movement_detail: String,
    /// The class bar.
    pub class_bar: charts::Bar,
    /// The idle-by-cause bar (its whole is the idle time).
    pub cause_bar: charts::Bar,
    /// The timeline strip.
    pub timeline: charts::Strip,
    /// One stacked column per step.
    pub steps: charts::StepChart,
    /// The same steps as table rows.
    pub step_rows: Capped<StepRow>,
}

/// One step of one device, as a table row.
#[derive(Clone, Debug, Serialize)]
pub struct StepRow {
    /// `N` of `ProfilerStep#N`.
    pub step: u64,
    /// Its length, ms.
    pub ms: String,
    /// Compute, communication, data movement, idle: shares of the step.
    pub classes: Vec<Part>,
    /// The step's largest idle cause and its share of the step.
    pub top_cause: String,
}

/// Findings and whether the analysis has them at all.
#[derive(Clone, Debug, Serialize)]
pub struct Findings {
    /// False when the analysis carries no detector results.
    pub available: bool,
    /// Ranked by estimated savings.
    pub rows: Capped<FindingRow>,
}

/// How to open the trace in Perfetto.
#[derive(Clone, Debug, Serialize)]
pub struct PerfettoView {
    /// The export command for this trace.
    pub command: String,
    /// The file it writes.
    pub file: String,
}

/// Builds the page of the session of the trace named `name`.
pub fn build(name: &str, session: &Session) -> ReportView {
    let strips: Vec<Strip> = session
        .devices()
        .iter()
        .filter_map(|d| session.strip(d.device, STRIP_COLUMNS))
        .collect();
    build_from(name, session.analysis(), &strips, session.kernels())
}

/// [`build`] from the session's parts: its analysis, the devices' timeline
/// strips and the kernel table.
fn build_from(name: &str, analysis: &Analysis, strips: &[Strip], kernels: &KernelTable) -> ReportView {
    let ranked = &analysis.findings;
    let devices: Vec<DeviceView> = analysis
        .devices
        .iter()
        .map(|d| device_view(analysis, d, strips, ranked))
        .collect();
    let findings = Findings {
        available: true,
        rows: Capped::of(
            findings::finding_rows(analysis, ranked),
            tables::MAX_FINDINGS,
            "findings",
        ),
    };
    let device_bounds: Vec<Bounds> = analysis
        .devices
        .iter()
        .map(|d| Bounds {
            device: d.device,
            ..d.bounds
        })
        .collect();
    let bounds = findings::bound_rows(&device_bounds);
    ReportView {
        title: format!("gapscope report: {}", file_name(name)),
        trace: name.to_string(),
        generator: format!("gapscope {}", env!("CARGO_PKG_VERSION")),
        window: window_view(analysis),
        headline: headline(analysis, findings.rows.items.first().cloned()),
        legend: legend(),
        compact: devices.len() > COMPACT_ABOVE,
        devices: Capped::of(devices, MAX_DEVICES, "devices (see the Markdown or JSON output)"),
        findings,
        idle_operators: tables::idle_operators(analysis),
        gaps: tables::gaps(analysis),
        kernels: tables::kernels(kernels, &analysis.devices),
        launches: tables::launches(analysis),
        bounds,
        perfetto: perfetto(name),
        diagnostics: tables::diagnostics(analysis),
    }
}

fn file_name(name: &str) -> &str {
    name.rsplit(['/', '\\']).next().unwrap_or(name)
}

/// `GPU 0 (NVIDIA H100 80GB HBM3)`, or `GPU 0` when unnamed.
pub fn device_label(d: &DeviceReport) -> String {
    let plain = format!("GPU {}", d.device);
    if d.name == plain {
        plain
    } else {
        format!("{plain} ({})", d.name)
    }
}

fn window_view(a: &Analysis) -> WindowView {
    let w = &a.window;
    let what = match (
        w.basis.as_str(),
        w.steps_selected.first(),
        w.steps_selected.last(),
    ) {
        ("steps", Some(f), Some(l)) if f == l => format!("1 step (#{f})"),
        ("steps", Some(f), Some(l)) => format!("{} steps (#{f} to #{l})", w.steps_selected.len()),
        ("empty", ..) => "nothing (the step selection kept no events)".to_string(),
        _ => "the whole trace (no ProfilerStep ranges)".to_string(),
    };
    WindowView {
        what,
        duration: format!("{} ms", ms(w.duration_ns)),
    }
}

fn class_parts(b: &Breakdown) -> Vec<Part> {
    class_ns(b)
        .into_iter()
        .map(|(c, ns)| Part {
            key: c.key().to_string(),
            label: c.label().to_string(),
            color: c.color().to_string(),
            ms: ms(ns),
            pct: percent(ns, b.window_ns),
        })
        .collect()
}

fn cause_parts(t: &CauseTotals) -> Vec<Part> {
    let total = t.total();
    causes_desc(t)
        .into_iter()
        .map(|(c, ns)| Part {
            key: c.name().to_string(),
            label: c.label().to_string(),
            color: cause_color(c).to_string(),
            ms: ms(ns),
            pct: percent(ns, total),
        })
        .collect()
}

fn device_view(a: &Analysis, d: &DeviceReport, strips: &[Strip], ranked: &[Finding]) -> DeviceView {
    let b = &d.breakdown;
    let k = &b.memcpy_by_kind_ns;
    let detail: Vec<String> = [
        ("HtoD", k.htod),
        ("DtoH", k.dtoh),
        ("DtoD", k.dtod),
        ("other copies", k.other),
        ("memset", b.memset_ns),
    ]
    .iter()
    .filter(|(_, ns)| *ns > 0)
    .map(|(n, ns)| format!("{n} {} ms", ms(*ns)))
    .collect();
    let strip = strips.iter().find(|s| s.device == d.device);
    DeviceView {
        device: d.device,
        label: device_label(d),
        window_ms: ms(b.window_ns),
        classes: class_parts(b),
        causes: cause_parts(&d.idle_by_cause_ns),
        top_cause: d.idle_by_cause_ns.top().map_or_else(String::new, |c| {
            format!(
                "{} {}",
                c.label(),
                percent(d.idle_by_cause_ns.get(c), d.idle_by_cause_ns.total())
            )
        }),
        data_movement_detail: detail.join(", "),
        class_bar: charts::class_bar(b),
        cause_bar: charts::cause_bar(&d.idle_by_cause_ns),
        timeline: strip.map(|s| charts::strip(s, a, ranked)).unwrap_or_default(),
        steps: charts::step_chart(a, d.device),
        step_rows: step_rows(a, d.device),
    }
}

fn step_rows(a: &Analysis, device: u32) -> Capped<StepRow> {
    let rows = a
        .steps
        .iter()
        .filter_map(|s| s.devices.iter().find(|d| d.device == device).map(|d| (s.step, d)))
        .map(|(step, d)| {
            let b = &d.breakdown;
            let top_cause = d.idle_by_cause_ns.top().map_or_else(String::new, |c| {
                format!(
                    "{} {}",
                    c.label(),
                    percent(d.idle_by_cause_ns.get(c), b.window_ns)
                )
            });
            StepRow {
                step,
                ms: ms(b.window_ns),
                classes: class_parts(b),
                top_cause,
            }
        })
        .collect();
    Capped::of(rows, MAX_STEP_ROWS, "steps")
}

fn totals(a: &Analysis) -> (Ns, Ns, CauseTotals) {
    let mut idle_by_cause = CauseTotals::default();
    for d in &a.devices {
        for (c, ns) in d.idle_by_cause_ns.iter() {
            idle_by_cause.add(c, ns);
        }
    }
    let window: Ns = a.devices.iter().map(|d| d.breakdown.window_ns).sum();
    let idle: Ns = a.devices.iter().map(|d| d.breakdown.idle_ns).sum();
    (window, idle, idle_by_cause)
}

fn headline(a: &Analysis, top_finding: Option<FindingRow>) -> Headline {
    let (window, idle, by_cause) = totals(a);
    let n = a.devices.len();
    let gpus = if n == 1 {
        "1 GPU".to_string()
    } else {
        format!("{n} GPUs")
    };
    let top_cause = by_cause.top().map(|c| TopCause {
        key: c.name().to_string(),
        label: c.label().to_string(),
        color: cause_color(c).to_string(),
        time: format!("{} ms", ms(by_cause.get(c))),
        share_of_idle: percent(by_cause.get(c), idle),
        meaning: c.meaning().to_string(),
    });
    let summary = if n == 0 && a.window.basis == "empty" {
        "Nothing to analyse: the step selection kept no step of this trace.".to_string()
    } else if n == 0 {
        format!(
            "No GPU activity was found in this trace: {}",
            a.why_no_gpu_activity()
        )
    } else {
        let mut s = if n == 1 {
            format!(
                "Over {}, the GPU was idle {} of the time ({} ms of {} ms).",
                window_view(a).what,
                percent(idle, window),
                ms(idle),
                ms(window)
            )
        } else {
            format!(
                "Over {}, the GPUs were idle {} of the time ({} ms of {} ms summed over {gpus}).",
                window_view(a).what,
                percent(idle, window),
                ms(idle),
                ms(window)
            )
        };
        if let Some(t) = &top_cause {
            s += &format!(
                " The largest cause is {} ({} of the idle time): {}.",
                t.label, t.share_of_idle, t.meaning
            );
        }
        if let Some(f) = top_finding.as_ref().filter(|f| !f.savings_pct.is_empty()) {
            s += &format!(
                " Top finding: {}; fixing it should save about {} ({} of the window).",
                f.title, f.savings, f.savings_pct
            );
        }
        s
    };
    Headline {
        idle_pct: percent(idle, window),
        idle_of: format!("{} ms of {} ms GPU time, {gpus}", ms(idle), ms(window)),
        top_cause,
        top_finding,
        summary,
    }
}

fn legend() -> Legend {
    Legend {
        classes: Class::ALL
            .iter()
            .map(|c| Swatch {
                key: c.key().to_string(),
                label: c.label().to_string(),
                color: c.color().to_string(),
                meaning: String::new(),
            })
            .collect(),
        causes: Cause::ALL
            .iter()
            .map(|&c| Swatch {
                key: c.name().to_string(),
                label: c.label().to_string(),
                color: cause_color(c).to_string(),
                meaning: c.meaning().to_string(),
            })
            .collect(),
    }
}

fn perfetto(name: &str) -> PerfettoView {
    let demo = name == crate::inputs::DEMO_NAME;
    let mut stem = if demo { "demo" } else { file_name(name) };
    for suffix in [".gz", ".json", ".pt.trace"] {
        stem = stem.strip_suffix(suffix).unwrap_or(stem);
    }
    let file = format!("{stem}.pftrace");
    // The demo trace is built into the binary; export needs a file.
    let input = if demo {
        "TRACE".to_string()
    } else {
        shell_quote(name)
    };
    PerfettoView {
        command: format!("gapscope export {input} -o {}", shell_quote(&file)),
        file,
    }
}

fn shell_quote(s: &str) -> String {
    if s.chars()
        .all(|c| c.is_ascii_alphanumeric() || "._-/+=:,@".contains(c))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gapscope_analyzers::detectors::Evidence;

    #[test]
    fn capped_says_how_many_more() {
        let c = Capped::of((0..12).collect(), 10, "kernels");
        assert_eq!(c.items.len(), 10);
        assert_eq!(c.more_text, "and 2 more kernels");
        assert_eq!(Capped::of(vec![1], 10, "x").more_text, "");
    }

    /// The analysis's findings reach the headline, the findings table,
    /// the timeline marks and both pages.
    #[test]
    fn findings_slot_in() {
        let trace = crate::inputs::load_demo(&Default::default()).unwrap();
        let session = Session::new(&trace, &Default::default());
        // The analysis's own findings: the demo's planted DataLoader stall
        // ranks first.
        let plain = build("demo", &session);
        assert!(plain.findings.available);
        let own = plain.headline.top_finding.as_ref().expect("a top finding");
        assert_eq!(own.rank, 1);
        assert!(
            plain.headline.summary.contains("DataLoader"),
            "{}",
            plain.headline.summary
        );

        // Whatever the findings say is what the page says.
        let mut a = session.analysis().clone();
        let w0 = a.window.start_ns;
        a.findings = vec![Finding {
            id: "dataloader_stall".into(),
            detector: "D11".into(),
            title: "GPU waits for the DataLoader".into(),
            device: 0,
            occurrences: 5,
            idle_ns: 38_000_000,
            explained_ns: 38_000_000,
            est_savings_ns: 30_000_000,
            estimable: true,
            savings_bound_ns: None,
            primary: true,
            operator: None,
            annotation: Some("enumerate(DataLoader)".into()),
            source: Some("data.py(28): decode_sample".into()),
            evidence: vec![Evidence {
                kind: "idle".into(),
                row: None,
                start_ns: w0,
                end_ns: w0 + 5_000_000,
            }],
            hint: "set num_workers > 0 on the DataLoader".into(),
        }];
        let strips: Vec<Strip> = session.strip(0, STRIP_COLUMNS).into_iter().collect();
        let v = build_from("demo", &a, &strips, session.kernels());
        assert!(v.findings.available);
        let top = v.headline.top_finding.as_ref().unwrap();
        assert_eq!((top.rank, top.savings.as_str()), (1, "30.00 ms"));
        assert!(v
            .headline
            .summary
            .contains("Top finding: GPU waits for the DataLoader"));
        let marks = &v.devices.items[0].timeline.marks;
        assert_eq!(marks.len(), 1);
        assert_eq!(marks[0].x, 0.0);
        assert!(marks[0].w > 20.0, "{marks:?}");
        let html = super::super::render::html(&v).unwrap();
        assert!(html.contains("set num_workers &gt; 0 on the DataLoader"));
        assert!(html.contains("<svg class=\"marks\""));
        let md = super::super::render::markdown(&v).unwrap();
        assert!(
            md.contains("**Top finding: GPU waits for the DataLoader**, saves about 30.00 ms"),
            "{md}"
        );
    }

    #[test]
    fn perfetto_command_names_the_file() {
        let p = perfetto("runs/a b.pt.trace.json.gz");
        assert_eq!(
            p.command,
            "gapscope export 'runs/a b.pt.trace.json.gz' -o 'a b.pftrace'"
        );
        assert_eq!(perfetto("x.json").file, "x.pftrace");
    }
}

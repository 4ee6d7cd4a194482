//! Two analysed traces compared: step time, per device the breakdown and
//! idle by cause before/after, operators and kernels ([`super::ops`]), and
//! findings that appeared or disappeared.
//!
//! Regressions of a trace pair (each against the time threshold):
//!
//! - `step_time`: the median step duration grew beyond the threshold and
//!   beyond the steps' own noise (the same guard as bench times, with the
//!   steps as samples; the window is the one sample when there are none);
//! - `idle`: a device's median idle per step grew by more than the
//!   threshold *of the base step time* (so a 2 µs gap doubling in a 100 ms
//!   step is no regression, while 10 ms of new idle is, even if compute
//!   shrank to hide it in the step time);
//! - `finding`: a finding that is new, or whose estimated saving grew, by
//!   more than the threshold of the base step time.
//!
//! Devices are paired by index, except that two single-device traces are
//! paired whatever their index (rank 3 on GPU 3 against rank 1 on GPU 1).

use super::bench::{time_change, MetricChange, Spread};
use super::ops::{self, OpsDiff};
use super::{Regression, Thresholds};
use crate::analysis::Analysis;
use crate::breakdown::Breakdown;
use crate::causes::CauseTotals;
use crate::detectors::Finding;
use crate::session::Session;
use gapscope_collectors::trace::Ns;
use serde::{Deserialize, Serialize};

/// A finding reduced to what a comparison needs. Two findings are the same
/// when `id` and `subject` are.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FindingSummary {
    /// Detector id (`D3`, ...).
    pub id: String,
    /// The finding's own id (`slow_runtime_calls`, ...): one detector
    /// reports several kinds of finding.
    #[serde(default)]
    pub kind: String,
    /// What it is about: the operator or annotation it names.
    pub subject: String,
    /// Its estimated saving, ns.
    pub savings_ns: Ns,
    /// False for a context finding (no idle time of its own): its saving
    /// is no estimate.
    #[serde(default = "yes")]
    pub primary: bool,
    /// False when the trace cannot estimate its saving.
    #[serde(default = "yes")]
    pub estimable: bool,
    /// When not estimable: the most a fix could save, if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub savings_bound_ns: Option<Ns>,
}

fn yes() -> bool {
    true
}

impl FindingSummary {
    /// A finding as the comparison sees it: its detector and finding id,
    /// and what it names (the first of source, operator, annotation:
    /// traces of the same program name the same lines), with its saving.
    pub fn of(f: &Finding) -> FindingSummary {
        FindingSummary {
            id: f.detector.clone(),
            kind: f.id.clone(),
            subject: [&f.source, &f.operator, &f.annotation]
                .into_iter()
                .flatten()
                .next()
                .cloned()
                .unwrap_or_else(|| f.id.clone()),
            savings_ns: f.est_savings_ns,
            primary: f.primary,
            estimable: f.estimable,
            savings_bound_ns: f.savings_bound_ns,
        }
    }
}

/// Two sessions compared: their analyses, their findings, and the
/// operators and kernels of each whole trace inside its window.
pub fn diff_sessions(base: &Session, new: &Session, th: &Thresholds) -> TraceDiff {
    let totals = |s: &Session| ops::collect(s.whole_trace(), s.window().span);
    let ops = ops::diff(&totals(base), &totals(new));
    let summaries = |s: &Session| s.findings().iter().map(FindingSummary::of).collect::<Vec<_>>();
    let (bf, nf) = (summaries(base), summaries(new));
    diff(
        Side {
            analysis: base.analysis(),
            findings: &bf,
        },
        Side {
            analysis: new.analysis(),
            findings: &nf,
        },
        ops,
        th,
    )
}

/// Findings compared.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FindingsDiff {
    /// In new only.
    pub appeared: Vec<FindingSummary>,
    /// In base only.
    pub disappeared: Vec<FindingSummary>,
    /// In both: (base, new).
    pub persisted: Vec<(FindingSummary, FindingSummary)>,
}

/// One side of a trace comparison.
#[derive(Clone, Copy, Debug)]
pub struct Side<'a> {
    /// The trace's analysis.
    pub analysis: &'a Analysis,
    /// Its findings (empty when the analysis has none).
    pub findings: &'a [FindingSummary],
}

/// Step count and step time of one side.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct StepTimes {
    /// Selected steps (0: the window is the trace).
    pub steps: usize,
    /// The analysed window, ns.
    pub window_ns: Ns,
    /// Step durations (the window when there are no steps).
    pub spread: Spread,
}

/// One device's numbers on one side.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DeviceSide {
    /// GPU index.
    pub device: u32,
    /// Its name.
    pub name: String,
    /// Where the window's time went.
    pub breakdown: Breakdown,
    /// The window's idle by cause.
    pub idle_by_cause_ns: CauseTotals,
    /// Median idle per step (the window's idle when there are no steps).
    pub idle_per_step_ns: Ns,
}

/// One device before and after (a side is `None` when only the other
/// trace has the device).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DeviceDiff {
    /// In base.
    pub base: Option<DeviceSide>,
    /// In new.
    pub new: Option<DeviceSide>,
}

/// Two traces compared.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TraceDiff {
    /// Base steps.
    pub base_steps: StepTimes,
    /// New steps.
    pub new_steps: StepTimes,
    /// The median step time, base against new.
    pub step_time: MetricChange,
    /// Per device.
    pub devices: Vec<DeviceDiff>,
    /// Operators, kernels and every other named event.
    pub ops: OpsDiff,
    /// Findings.
    pub findings: FindingsDiff,
    /// Things a reader should know to trust the comparison.
    pub notes: Vec<String>,
    /// What got worse beyond the thresholds.
    pub regressions: Vec<Regression>,
}

/// Compares two analysed traces; `ops` is the diff of their
/// [`OpTotals`](super::ops::OpTotals).
pub fn diff(base: Side, new: Side, ops: OpsDiff, th: &Thresholds) -> TraceDiff {
    let base_steps = step_times(base.analysis);
    let new_steps = step_times(new.analysis);
    let step_time = time_change(&base_steps.spread, &new_steps.spread, th.time);
    let mut notes = Vec::new();
    if base_steps.steps != new_steps.steps {
        notes.push(format!(
            "base has {} steps and new {}: operator counts cover the whole windows; \
             select the same number with --steps to compare like with like",
            base_steps.steps, new_steps.steps
        ));
    }
    let devices = pair_devices(base.analysis, new.analysis, &mut notes);
    let findings = findings_diff(base.findings, new.findings);
    let mut regressions = Vec::new();
    if step_time.verdict == super::bench::Verdict::Regression {
        regressions.push(Regression {
            subject: "trace".to_string(),
            metric: "step_time".to_string(),
            base: step_time.base,
            new: step_time.new,
            change: step_time.change,
            threshold: th.time,
            detail: format!(
                "median step time {:+.1}% (threshold {:.1}%)",
                step_time.change * 100.0,
                th.time * 100.0
            ),
        });
    }
    let reference = base_steps.spread.median_ns;
    for d in &devices {
        let (Some(b), Some(n)) = (&d.base, &d.new) else {
            continue;
        };
        let grew = (n.idle_per_step_ns - b.idle_per_step_ns) as f64;
        if reference > 0.0 && grew / reference > th.time {
            regressions.push(Regression {
                subject: n.name.clone(),
                metric: "idle".to_string(),
                base: b.idle_per_step_ns as f64,
                new: n.idle_per_step_ns as f64,
                change: grew / reference,
                threshold: th.time,
                detail: format!(
                    "idle per step grew by {:.1}% of the base step time (threshold {:.1}%)",
                    grew / reference * 100.0,
                    th.time * 100.0
                ),
            });
        }
    }
    let worse = findings
        .appeared
        .iter()
        .map(|f| (f, 0))
        .chain(findings.persisted.iter().map(|(b, n)| (n, b.savings_ns)));
    for (f, before) in worse {
        let grew = (f.savings_ns - before) as f64;
        if reference > 0.0 && grew / reference > th.time {
            regressions.push(Regression {
                subject: format!("{} {}", f.id, f.subject),
                metric: "finding".to_string(),
                base: before as f64,
                new: f.savings_ns as f64,
                change: grew / reference,
                threshold: th.time,
                detail: format!(
                    "finding {} on {} could save {:.1}% of the base step time{}",
                    f.id,
                    f.subject,
                    f.savings_ns as f64 / reference * 100.0,
                    if before == 0 { " (new)" } else { " (grew)" }
                ),
            });
        }
    }
    TraceDiff {
        base_steps,
        new_steps,
        step_time,
        devices,
        ops,
        findings,
        notes,
        regressions,
    }
}

fn step_times(a: &Analysis) -> StepTimes {
    let durations: Vec<Ns> = if a.steps.is_empty() {
        vec![a.window.duration_ns.max(1)]
    } else {
        a.steps.iter().map(|s| (s.end_ns - s.start_ns).max(1)).collect()
    };
    StepTimes {
        steps: a.steps.len(),
        window_ns: a.window.duration_ns,
        spread: Spread::of(&durations).unwrap_or_default(),
    }
}

fn device_side(a: &Analysis, i: usize) -> DeviceSide {
    let d = &a.devices[i];
    let idle: Vec<Ns> = a
        .steps
        .iter()
        .filter_map(|s| s.devices.iter().find(|sd| sd.device == d.device))
        .map(|sd| sd.breakdown.idle_ns)
        .collect();
    let idle_per_step_ns = Spread::of(&idle).map_or(d.breakdown.idle_ns, |s| s.median_ns.round() as Ns);
    DeviceSide {
        device: d.device,
        name: d.name.clone(),
        breakdown: d.breakdown,
        idle_by_cause_ns: d.idle_by_cause_ns,
        idle_per_step_ns,
    }
}

fn pair_devices(base: &Analysis, new: &Analysis, notes: &mut Vec<String>) -> Vec<DeviceDiff> {
    if base.devices.len() == 1 && new.devices.len() == 1 {
        let (b, n) = (device_side(base, 0), device_side(new, 0));
        if b.device != n.device {
            notes.push(format!(
                "each trace has one GPU: GPU {} of base is compared with GPU {} of new",
                b.device, n.device
            ));
        }
        return vec![DeviceDiff {
            base: Some(b),
            new: Some(n),
        }];
    }
    let mut ids: Vec<u32> = base
        .devices
        .iter()
        .chain(&new.devices)
        .map(|d| d.device)
        .collect();
    ids.sort_unstable();
    ids.dedup();
    ids.into_iter()
        .map(|id| {
            let side = |a: &Analysis| {
                a.devices
                    .iter()
                    .position(|d| d.device == id)
                    .map(|i| device_side(a, i))
            };
            DeviceDiff {
                base: side(base),
                new: side(new),
            }
        })
        .collect()
}

/// Pairs findings by `(id, subject)`.
pub fn findings_diff(base: &[FindingSummary], new: &[FindingSummary]) -> FindingsDiff {
    // One to one, in rank order: a detector can report several findings
    // on one subject (D14: one per runtime API under the same operator),
    // and pairing each base finding with the first match alone paired two
    // of them with one new finding, so a trace diffed against itself
    // showed "grown" findings.
    let same =
        |a: &FindingSummary, b: &FindingSummary| a.id == b.id && a.kind == b.kind && a.subject == b.subject;
    let mut used = vec![false; new.len()];
    let mut out = FindingsDiff::default();
    for b in base {
        match (0..new.len()).find(|&i| !used[i] && same(b, &new[i])) {
            Some(i) => {
                used[i] = true;
                out.persisted.push((b.clone(), new[i].clone()));
            }
            None => out.disappeared.push(b.clone()),
        }
    }
    out.appeared = new
        .iter()
        .zip(&used)
        .filter(|(_, &u)| !u)
        .map(|(n, _)| n.clone())
        .collect();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(id: &str, subject: &str, savings_ns: Ns) -> FindingSummary {
        FindingSummary {
            id: id.to_string(),
            kind: String::new(),
            subject: subject.to_string(),
            savings_ns,
            primary: true,
            estimable: true,
            savings_bound_ns: None,
        }
    }

    #[test]
    fn findings_pair_by_id_and_subject() {
        let base = [f("D1", "aten::item", 10), f("D3", "loss", 5)];
        let new = [f("D1", "aten::item", 30), f("D7", "optimizer", 8)];
        let d = findings_diff(&base, &new);
        assert_eq!(d.appeared, vec![f("D7", "optimizer", 8)]);
        assert_eq!(d.disappeared, vec![f("D3", "loss", 5)]);
        assert_eq!(d.persisted.len(), 1);
        assert_eq!(d.persisted[0].1.savings_ns, 30);
    }

    #[test]
    fn findings_on_one_subject_pair_one_to_one() {
        // Two D14 findings under one operator (two APIs), and a third only
        // in the new trace: each base finding takes its own partner.
        let base = [f("D14", "aten::conv2d", 30), f("D14", "aten::conv2d", 7)];
        let new = [
            f("D14", "aten::conv2d", 30),
            f("D14", "aten::conv2d", 7),
            f("D14", "aten::conv2d", 1),
        ];
        let d = findings_diff(&base, &new);
        let pairs: Vec<_> = d
            .persisted
            .iter()
            .map(|(b, n)| (b.savings_ns, n.savings_ns))
            .collect();
        assert_eq!(pairs, vec![(30, 30), (7, 7)]);
        assert_eq!(d.appeared, vec![f("D14", "aten::conv2d", 1)]);
        assert!(d.disappeared.is_empty());
    }
}

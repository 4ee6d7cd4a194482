//! Findings and lower bounds for the page: the analysis's own findings and
//! each device's bounds, as table rows.

use gapscope_analyzers::analysis::Analysis;
use gapscope_analyzers::bounds::Bounds;
use gapscope_analyzers::detectors::Finding;
use gapscope_analyzers::format::{duration, ms, percent};
use gapscope_collectors::trace::Ns;
use serde::Serialize;

fn window_of(a: &Analysis, device: u32) -> Ns {
    a.devices
        .iter()
        .find(|d| d.device == device)
        .map_or(a.window.duration_ns, |d| d.breakdown.window_ns)
}

/// Table rows for findings, rank 1 first.
pub fn finding_rows(a: &Analysis, findings: &[Finding]) -> Vec<FindingRow> {
    findings
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let window = window_of(a, f.device);
            // A replay's 0 is an estimate (the step is no shorter without
            // the finding's time), not a missing one.
            let (savings, savings_pct) = if !f.primary {
                ("context".to_string(), String::new())
            } else if f.estimable {
                (duration(f.est_savings_ns), percent(f.est_savings_ns, window))
            } else {
                ("not estimated".to_string(), String::new())
            };
            let savings_bound = f
                .savings_bound_ns
                .filter(|_| !f.estimable)
                .map(|b| format!("at most {}", duration(b)))
                .unwrap_or_default();
            let times = if f.occurrences == 1 { "time" } else { "times" };
            let mut evidence = format!(
                "GPU {}: {} {times}, idle {}, explains {}",
                f.device,
                f.occurrences,
                duration(f.idle_ns),
                duration(f.explained_ns)
            );
            if let Some(a) = &f.annotation {
                evidence += &format!("; inside {a}");
            }
            FindingRow {
                rank: i + 1,
                id: if f.detector.is_empty() {
                    f.id.clone()
                } else {
                    format!("{} {}", f.detector, f.id)
                },
                title: f.title.clone(),
                savings,
                savings_pct,
                savings_bound,
                operator: f.operator.clone().unwrap_or_default(),
                source: f.source.clone().unwrap_or_default(),
                evidence,
                hint: f.hint.clone(),
            }
        })
        .collect()
}

/// Table rows for bounds.
pub fn bound_rows(bounds: &[Bounds]) -> Vec<BoundRow> {
    let mut out = Vec::new();
    for b in bounds {
        let device = format!("GPU {}", b.device);
        out.push(BoundRow {
            device: device.clone(),
            name: "GPU busy time".to_string(),
            ms: ms(b.busy_ns),
            pct_of_window: percent(b.busy_ns, b.window_ns),
            meaning: if b.max_speedup > 0.0 && b.excluded_idle_ns > 0 {
                format!(
                    "with every idle gap the trace explains removed, the window still takes this plus {} ms of idle the trace cannot explain or that is setup: at most {:.2}x faster without faster kernels",
                    ms(b.excluded_idle_ns),
                    b.max_speedup
                )
            } else if b.max_speedup > 0.0 {
                format!(
                    "with every idle gap removed the window still takes this: at most {:.2}x faster without faster kernels",
                    b.max_speedup
                )
            } else {
                "nothing ran".to_string()
            },
        });
        out.push(BoundRow {
            device,
            name: "kernel time, summed".to_string(),
            ms: ms(b.kernel_sum_ns),
            pct_of_window: percent(b.kernel_sum_ns, b.window_ns),
            meaning:
                "every kernel one after another (overlaps counted twice): the bound with no stream overlap"
                    .to_string(),
        });
    }
    out
}

/// One finding.
#[derive(Clone, Debug, Serialize)]
pub struct FindingRow {
    /// Rank, 1 first.
    pub rank: usize,
    /// Detector id.
    pub id: String,
    /// What was found.
    pub title: String,
    /// Estimated savings, `12.3 ms`.
    pub savings: String,
    /// As a share of the window, `10.2%`.
    pub savings_pct: String,
    /// When the saving is not estimated: the most a fix could save, `at
    /// most 110.0 µs`; else empty.
    pub savings_bound: String,
    /// The operator responsible.
    pub operator: String,
    /// Its source line.
    pub source: String,
    /// What in the trace shows it.
    pub evidence: String,
    /// What to change.
    pub hint: String,
}

/// A lower bound on the window's length.
#[derive(Clone, Debug, Serialize)]
pub struct BoundRow {
    /// `GPU n`.
    pub device: String,
    /// What is bounded.
    pub name: String,
    /// The bound, ms.
    pub ms: String,
    /// Share of the window, `58.0%`.
    pub pct_of_window: String,
    /// What it means.
    pub meaning: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_read_as_shares_of_the_window() {
        let b = Bounds {
            device: 0,
            window_ns: 100,
            busy_ns: 60,
            kernel_sum_ns: 70,
            excluded_idle_ns: 0,
            max_speedup: 1.6667,
        };
        let rows = bound_rows(&[b]);
        assert_eq!(rows[0].pct_of_window, "60.0%");
        assert!(rows[0].meaning.contains("1.67x"));
        assert_eq!(rows[1].pct_of_window, "70.0%");
    }
}

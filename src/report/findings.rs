//! Findings and lower bounds for the page, read from the analysis's JSON
//! form by their documented field names (`findings[]` with `id`, `title`,
//! `device`, `est_savings_ns`, `operator`, `source`, `evidence`, `hint`...;
//! `bounds[]` per device, at the top level or inside each device).
//!
//! Reading the serialized form rather than Rust fields keeps the report
//! working on analyses with and without detector results: when the
//! analysis carries none, the page says so instead of claiming "no
//! problems found".

use super::view::{BoundRow, FindingRow};
use gapscope_analyzers::analysis::Analysis;
use gapscope_analyzers::format::{duration, ms, percent};
use gapscope_collectors::trace::Ns;
use serde::Deserialize;
use serde_json::Value;

/// One finding as the analysis JSON writes it (the fields the page uses).
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub struct FindingIn {
    /// Stable slug.
    pub id: String,
    /// Catalog number (`D11`).
    pub detector: String,
    /// One line.
    pub title: String,
    /// GPU index.
    pub device: u32,
    /// How many times the pattern occurred.
    pub occurrences: u64,
    /// Idle time explained.
    pub idle_ns: Ns,
    /// Idle plus removable busy time.
    pub explained_ns: Ns,
    /// Estimated savings (0: not estimable).
    pub est_savings_ns: Ns,
    /// Operator.
    pub operator: Option<String>,
    /// Annotation.
    pub annotation: Option<String>,
    /// Source line.
    pub source: Option<String>,
    /// Places in the trace.
    pub evidence: Vec<EvidenceIn>,
    /// What to change.
    pub hint: String,
}

/// A place in the trace a finding points at.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub struct EvidenceIn {
    /// `idle`, `gpu`, `runtime` or `cpu_op`.
    pub kind: String,
    /// Start, ns since the trace origin.
    pub start_ns: Ns,
    /// End, ns.
    pub end_ns: Ns,
}

/// Lower bounds of one device.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub struct BoundsIn {
    /// GPU index.
    pub device: u32,
    /// Window length.
    pub window_ns: Ns,
    /// Union of busy rows: the time left with no idle at all.
    pub busy_ns: Ns,
    /// Sum of kernel durations.
    pub kernel_sum_ns: Ns,
    /// `window_ns / busy_ns`.
    pub max_speedup: f64,
}

/// The findings of `a`, ranked as the analysis ranks them; `None` when the
/// analysis carries no detector results at all.
pub fn findings_of(json: &Value) -> Option<Vec<FindingIn>> {
    let list = json.get("findings")?.as_array()?;
    Some(
        list.iter()
            .filter_map(|f| serde_json::from_value(f.clone()).ok())
            .collect(),
    )
}

/// The bounds of `a`, from a top-level `bounds` list or each device's
/// `bounds` object; `None` when the analysis has none.
pub fn bounds_of(json: &Value) -> Option<Vec<BoundsIn>> {
    if let Some(list) = json.get("bounds").and_then(Value::as_array) {
        return Some(
            list.iter()
                .filter_map(|b| serde_json::from_value(b.clone()).ok())
                .collect(),
        );
    }
    let per_device: Vec<BoundsIn> = json
        .get("devices")?
        .as_array()?
        .iter()
        .filter_map(|d| {
            let mut b: BoundsIn = serde_json::from_value(d.get("bounds")?.clone()).ok()?;
            b.device = d.get("device")?.as_u64()? as u32;
            Some(b)
        })
        .collect();
    (!per_device.is_empty()).then_some(per_device)
}

fn window_of(a: &Analysis, device: u32) -> Ns {
    a.devices
        .iter()
        .find(|d| d.device == device)
        .map_or(a.window.duration_ns, |d| d.breakdown.window_ns)
}

/// Table rows for findings, rank 1 first.
pub fn finding_rows(a: &Analysis, findings: &[FindingIn]) -> Vec<FindingRow> {
    findings
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let window = window_of(a, f.device);
            let (savings, savings_pct) = if f.est_savings_ns > 0 {
                (duration(f.est_savings_ns), percent(f.est_savings_ns, window))
            } else {
                ("not estimated".to_string(), String::new())
            };
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
                operator: f.operator.clone().unwrap_or_default(),
                source: f.source.clone().unwrap_or_default(),
                evidence,
                hint: f.hint.clone(),
            }
        })
        .collect()
}

/// Table rows for bounds.
pub fn bound_rows(bounds: &[BoundsIn]) -> Vec<BoundRow> {
    let mut out = Vec::new();
    for b in bounds {
        let device = format!("GPU {}", b.device);
        out.push(BoundRow {
            device: device.clone(),
            name: "GPU busy time".to_string(),
            ms: ms(b.busy_ns),
            pct_of_window: percent(b.busy_ns, b.window_ns),
            meaning: if b.max_speedup > 0.0 {
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn findings_absent_is_not_zero_findings() {
        assert!(findings_of(&json!({"devices": []})).is_none());
        assert_eq!(findings_of(&json!({"findings": []})).unwrap().len(), 0);
    }

    #[test]
    fn findings_and_bounds_are_read_by_name() {
        let j = json!({
            "findings": [{
                "id": "dataloader_stall", "detector": "D11", "title": "GPU waits for the DataLoader",
                "device": 0, "occurrences": 5, "idle_ns": 38_000_000, "explained_ns": 38_000_000,
                "est_savings_ns": 30_000_000, "primary": true, "operator": null,
                "annotation": "enumerate(DataLoader)", "source": "data.py(28): decode",
                "evidence": [{"kind": "idle", "row": null, "start_ns": 10, "end_ns": 20}],
                "hint": "use num_workers > 0"
            }],
            "devices": [{"device": 0, "bounds": {"window_ns": 100, "busy_ns": 60, "kernel_sum_ns": 70, "max_speedup": 1.6667}}]
        });
        let f = findings_of(&j).unwrap();
        assert_eq!(f[0].est_savings_ns, 30_000_000);
        assert_eq!(f[0].evidence[0].end_ns, 20);
        let b = bounds_of(&j).unwrap();
        assert_eq!((b[0].device, b[0].busy_ns), (0, 60));
        let rows = bound_rows(&b);
        assert_eq!(rows[0].pct_of_window, "60.0%");
        assert!(rows[0].meaning.contains("1.67x"));
    }
}

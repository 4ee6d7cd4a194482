//! The report's tables: idle-causing operators, longest gaps, kernels,
//! launch statistics and diagnostics, each capped so a trace of 8 GPUs and
//! 100 steps still fits on a page.

use super::palette::cause_color;
use gapscope_analyzers::analysis::{Analysis, AnalysisDiagnostics, DeviceReport};
use gapscope_analyzers::causes::Cause;
use gapscope_analyzers::format::{duration, ms, percent, short_kernel_name};
use gapscope_analyzers::kernels::KernelTable;
use gapscope_collectors::trace::{Diagnostics, Ns};
use serde::Serialize;
use std::collections::BTreeMap;

/// Findings listed.
pub const MAX_FINDINGS: usize = 10;
/// Idle-causing operators listed.
pub const MAX_OPERATORS: usize = 12;
/// Longest gaps listed.
pub const MAX_GAPS: usize = 10;
/// Kernels listed.
pub const MAX_KERNELS: usize = 15;

/// Operators (with annotation and source) behind idle time, over all
/// devices.
#[derive(Clone, Debug, Serialize)]
pub struct IdleOperatorRow {
    /// Operator, or `(none)` between operators.
    pub operator: String,
    /// Nearest annotation / module / DataLoader range.
    pub annotation: String,
    /// Source frame.
    pub source: String,
    /// Cause label.
    pub cause: String,
    /// Cause colour.
    pub color: String,
    /// Idle time, ms.
    pub idle_ms: String,
    /// Share of all devices' idle time.
    pub share_of_idle: String,
    /// Number of gaps it idled in, summed over devices.
    pub count: u64,
    /// Devices it occurred on, `0, 1`.
    pub devices: String,
}

/// One of the longest idle gaps.
#[derive(Clone, Debug, Serialize)]
pub struct GapRow {
    /// `GPU n`.
    pub device: String,
    /// Start, ms after the window start.
    pub at_ms: String,
    /// Length.
    pub duration: String,
    /// Cause label (of the gap's largest segment).
    pub cause: String,
    /// Cause colour.
    pub color: String,
    /// Operator.
    pub operator: String,
    /// Annotation.
    pub annotation: String,
    /// Source.
    pub source: String,
}

/// A table whose source column may be empty throughout.
#[derive(Clone, Debug, Serialize)]
pub struct SourcedTable<T> {
    /// The rows.
    pub rows: Capped<T>,
    /// Some row names a source line (else the column is left out).
    pub has_source: bool,
}

/// Top kernels by time.
#[derive(Clone, Debug, Serialize)]
pub struct KernelsView {
    /// The rows.
    pub rows: Capped<KernelView>,
    /// Total kernel time, ms.
    pub total_ms: String,
    /// Kernel time left out of the table, ms (`0.00` when none).
    pub more_ms: String,
    /// Share of kernel time in Tensor Core kernels (by name).
    pub tensor_core_share: String,
    /// Number of distinct kernel names.
    pub distinct: usize,
    /// TensorBoard's GPU metrics, one line per device.
    pub gpu_metrics: Vec<String>,
}

/// Kernels of one name.
#[derive(Clone, Debug, Serialize)]
pub struct KernelView {
    /// Shortened name.
    pub name: String,
    /// Full name.
    pub full_name: String,
    /// Launches.
    pub count: u64,
    /// Total time, ms.
    pub total_ms: String,
    /// Mean time per launch.
    pub mean: String,
    /// Share of all kernel time.
    pub share: String,
    /// Uses Tensor Cores, judged by its name.
    pub tensor_core: bool,
    /// An NCCL/RCCL collective.
    pub communication: bool,
    /// TensorBoard's mean blocks per SM (`-` when unknown).
    pub blocks_per_sm: String,
    /// TensorBoard's mean estimated achieved occupancy (`-` when unknown).
    pub occupancy: String,
}

/// Launch statistics of one device.
#[derive(Clone, Debug, Serialize)]
pub struct LaunchRow {
    /// `GPU n`.
    pub device: String,
    /// Launches.
    pub count: u64,
    /// Of which graph launches.
    pub graph_launches: u64,
    /// GPU work shorter than its launch call.
    pub short_kernels: u64,
    /// Launch calls over the runtime cutoff.
    pub slow_calls: u64,
    /// Launch delays over the delay cutoff.
    pub long_delays: u64,
    /// Launch delay p50 / p90 / max.
    pub delay: String,
    /// Launch call duration p50 / max.
    pub call: String,
}

/// Operators behind idle time, merged over devices, most first.
pub fn idle_operators(a: &Analysis) -> SourcedTable<IdleOperatorRow> {
    type Key = (Cause, Option<String>, Option<String>, Option<String>);
    let mut groups: BTreeMap<Key, (Ns, u64, Vec<u32>)> = BTreeMap::new();
    for d in &a.devices {
        for o in &d.top_idle_operators {
            let g = groups
                .entry((
                    o.cause,
                    o.operator.clone().map(|n| {
                        if o.first_call {
                            format!("{n} (first calls: warm-up)")
                        } else {
                            n
                        }
                    }),
                    o.annotation.clone(),
                    o.source.clone(),
                ))
                .or_default();
            g.0 += o.idle_ns;
            g.1 += o.gaps;
            g.2.push(d.device);
        }
    }
    let idle: Ns = a.devices.iter().map(|d| d.breakdown.idle_ns).sum();
    let mut rows: Vec<_> = groups.into_iter().collect();
    rows.sort_by_key(|(k, (ns, ..))| (std::cmp::Reverse(*ns), k.clone()));
    let rows = rows
        .into_iter()
        .map(|((cause, op, ann, src), (ns, count, devices))| IdleOperatorRow {
            operator: op.unwrap_or_else(|| match cause {
                Cause::Queued => "(nothing in the trace held it)".to_string(),
                _ => "(between operators)".to_string(),
            }),
            annotation: ann.unwrap_or_default(),
            source: src.unwrap_or_default(),
            cause: cause.label().to_string(),
            color: cause_color(cause).to_string(),
            idle_ms: ms(ns),
            share_of_idle: percent(ns, idle),
            count,
            devices: devices.iter().map(u32::to_string).collect::<Vec<_>>().join(", "),
        })
        .collect();
    let rows = Capped::of(rows, MAX_OPERATORS, "operators");
    let has_source = rows.items.iter().any(|r: &IdleOperatorRow| !r.source.is_empty());
    SourcedTable { rows, has_source }
}

/// The longest gaps over all devices, longest first.
pub fn gaps(a: &Analysis) -> SourcedTable<GapRow> {
    let mut all: Vec<_> = a
        .devices
        .iter()
        .flat_map(|d| d.top_gaps.iter().map(move |g| (d, g)))
        .collect();
    all.sort_by_key(|(d, g)| (std::cmp::Reverse(g.dur_ns), g.start_ns, d.device));
    let rows = all
        .into_iter()
        .map(|(d, g)| GapRow {
            device: format!("GPU {}", d.device),
            at_ms: ms(g.start_ns - a.window.start_ns),
            duration: duration(g.dur_ns),
            cause: g.cause.label().to_string(),
            color: cause_color(g.cause).to_string(),
            operator: g.operator.clone().unwrap_or_default(),
            annotation: g.annotation.clone().unwrap_or_default(),
            source: g.source.clone().unwrap_or_default(),
        })
        .collect();
    let rows = Capped::of(rows, MAX_GAPS, "gaps");
    let has_source = rows.items.iter().any(|r: &GapRow| !r.source.is_empty());
    SourcedTable { rows, has_source }
}

/// The kernel table, and TensorBoard's GPU metrics of `devices`.
pub fn kernels(table: &KernelTable, devices: &[DeviceReport]) -> KernelsView {
    let rows = &table.rows;
    let total: Ns = table.total_ns;
    let shown: Ns = rows.iter().take(MAX_KERNELS).map(|r| r.total_ns).sum();
    let views = rows
        .iter()
        .map(|r| KernelView {
            name: short_kernel_name(&r.name),
            full_name: r.name.clone(),
            count: r.count,
            total_ms: ms(r.total_ns),
            mean: duration(r.total_ns / r.count.max(1) as Ns),
            share: percent(r.total_ns, total),
            tensor_core: r.tensor_core,
            communication: r.communication,
            blocks_per_sm: r.mean_blocks_per_sm.map_or("-".into(), |b| format!("{b:.2}")),
            occupancy: r.mean_occupancy_pct.map_or("-".into(), |p| format!("{p:.1}%")),
        })
        .collect();
    KernelsView {
        rows: Capped::of(views, MAX_KERNELS, "kernels"),
        total_ms: ms(total),
        more_ms: ms(total - shown),
        tensor_core_share: share(table.tensor_core_share, total),
        distinct: rows.len(),
        gpu_metrics: devices.iter().take(MAX_DEVICES).map(gpu_metrics_line).collect(),
    }
}

/// `GPU 0: utilization 78.1%, est. SM efficiency 64.0%, est. achieved
/// occupancy 31.2%`, each part left out when unknown.
fn gpu_metrics_line(d: &DeviceReport) -> String {
    let m = &d.gpu_metrics;
    let mut parts = vec![format!("utilization {:.1}%", m.gpu_utilization * 100.0)];
    if let Some(e) = m.est_sm_efficiency {
        parts.push(format!("est. SM efficiency {:.1}%", e * 100.0));
    }
    if let Some(o) = m.est_achieved_occupancy_pct {
        parts.push(format!("est. achieved occupancy {o:.1}%"));
    }
    format!("GPU {}: {}", d.device, parts.join(", "))
}

/// A share 0 to 1 as the page writes percentages, `45.6%` (`-` of no
/// kernel time at all).
fn share(fraction: f64, whole: Ns) -> String {
    if whole <= 0 {
        return "-".to_string();
    }
    format!("{:.1}%", fraction * 100.0)
}

/// Launch statistics, one row per device.
pub fn launches(a: &Analysis) -> Vec<LaunchRow> {
    a.devices
        .iter()
        .take(MAX_DEVICES)
        .map(|d| {
            let l = &d.launch_stats;
            let (dl, c) = (&l.launch_delay_ns, &l.cpu_duration_ns);
            LaunchRow {
                device: format!("GPU {}", d.device),
                count: l.count,
                graph_launches: l.graph_launches,
                short_kernels: l.short_kernels,
                slow_calls: l.runtime_outliers,
                long_delays: l.launch_delay_outliers,
                delay: format!(
                    "{} / {} / {}",
                    duration(dl.p50),
                    duration(dl.p90),
                    duration(dl.max)
                ),
                call: format!("{} / {}", duration(c.p50), duration(c.max)),
            }
        })
        .collect()
}

/// Lines on what was read and what was skipped.
pub fn diagnostics(a: &Analysis) -> Vec<String> {
    diagnostic_lines(&a.diagnostics)
}

fn diagnostic_lines(d: &AnalysisDiagnostics) -> Vec<String> {
    let r = &d.rows_selected;
    let mut out = vec![format!(
        "{} GPU rows, {} runtime calls, {} CPU ranges in the window ({} sync records, never counted as busy).",
        r.gpu, r.runtime, r.cpu_ops, d.sync_records
    )];
    if d.gpu_rows_without_launch > 0 {
        out.push(format!(
            "{} GPU rows have no launching runtime call in the trace.",
            d.gpu_rows_without_launch
        ));
    }
    // Rows kept as they are, said as what they are; only the rest were
    // skipped.
    let kept = |reason: &str| d.importer.get(reason).copied().filter(|&n| n > 0);
    if let Some(n) = kept(Diagnostics::PARTIAL_OVERLAP) {
        out.push(format!(
            "{n} CPU ranges overlap another without nesting in it; they are kept as they are, unnested \
             ({}).",
            Diagnostics::PARTIAL_OVERLAP
        ));
    }
    if let Some(n) = kept(Diagnostics::CORRELATION_REUSED) {
        out.push(format!(
            "{n} GPU rows have a correlation id that several runtime calls share; each is linked to \
             the latest of them that started at or before it ({}).",
            Diagnostics::CORRELATION_REUSED
        ));
    }
    if let Some(n) = kept(Diagnostics::COPY_DIRECTION_FROM_CALL) {
        let (copies, record) = if n == 1 {
            ("copy", "record names")
        } else {
            ("copies", "records name")
        };
        out.push(format!(
            "{n} {copies} counted in the direction their launching call asked for, where their GPU \
             {record} another (ROCm's tracer records host copies as `Memcpy DtoD`) ({}).",
            Diagnostics::COPY_DIRECTION_FROM_CALL
        ));
    }
    let skipped: Vec<(&String, &u64)> = d
        .importer
        .iter()
        .filter(|(k, &v)| v > 0 && !Diagnostics::KEPT.contains(&k.as_str()))
        .collect();
    if !skipped.is_empty() {
        let n: u64 = skipped.iter().map(|(_, &v)| v).sum();
        let reasons: Vec<String> = skipped.iter().map(|(k, v)| format!("{k}: {v}")).collect();
        let events = if n == 1 { "event" } else { "events" };
        out.push(format!(
            "The importer skipped {n} {events} ({}).",
            reasons.join(", ")
        ));
    }
    out
}

/// Devices drawn and listed in full; more get "and N more".
pub const MAX_DEVICES: usize = 8;

/// At most a fixed number of items, and how many were left out.
#[derive(Clone, Debug, Serialize)]
pub struct Capped<T> {
    /// The items shown.
    pub items: Vec<T>,
    /// How many were left out.
    pub more: usize,
    /// `and N more` (empty when none were left out).
    pub more_text: String,
}

impl<T> Capped<T> {
    /// The first `cap` of `all`.
    pub fn of(mut all: Vec<T>, cap: usize, noun: &str) -> Self {
        let more = all.len().saturating_sub(cap);
        all.truncate(cap);
        let more_text = if more == 0 {
            String::new()
        } else {
            format!("and {more} more {noun}")
        };
        Capped {
            items: all,
            more,
            more_text,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Rows the importer kept unnested or linked by time are said as what
    /// they are, never as skipped; skipped events are counted apart.
    #[test]
    fn kept_rows_are_not_called_skipped() {
        let mut d = AnalysisDiagnostics::default();
        d.importer.insert(Diagnostics::PARTIAL_OVERLAP.into(), 13);
        let lines = diagnostic_lines(&d);
        assert_eq!(lines.len(), 2, "{lines:?}");
        assert!(
            lines[1].starts_with("13 CPU ranges overlap another without nesting"),
            "{lines:?}"
        );
        assert!(!lines.iter().any(|l| l.contains("skipped")), "{lines:?}");

        d.importer.insert(Diagnostics::CORRELATION_REUSED.into(), 4);
        d.importer.insert("event_missing_ts".into(), 2);
        d.importer.insert("unknown_phase".into(), 1);
        let lines = diagnostic_lines(&d);
        assert_eq!(lines.len(), 4, "{lines:?}");
        assert!(lines[2].starts_with("4 GPU rows have a correlation id that several runtime calls share"));
        assert_eq!(
            lines[3],
            "The importer skipped 3 events (event_missing_ts: 2, unknown_phase: 1)."
        );

        d.importer
            .insert(Diagnostics::COPY_DIRECTION_FROM_CALL.into(), 12);
        let lines = diagnostic_lines(&d);
        assert_eq!(lines.len(), 5, "{lines:?}");
        assert!(
            lines[3].starts_with("12 copies counted in the direction their launching call asked for"),
            "{lines:?}"
        );
        assert!(lines[4].starts_with("The importer skipped 3 events"), "{lines:?}");
    }
}

//! D3, many small serial kernels: a long run of short kernels with short
//! gaps between them, where the GPU finishes each kernel faster than the
//! CPU launches the next (docs/detectors.md, D3; HTA's kernel-wait and
//! short-kernel rules, TraceLens's `launch_overhead`).
//!
//! ```text
//! stream 7   [k][k] [k]  [k][k] [k]  [k] ... (≥ 32 kernels, each < 10 µs,
//! gaps          ^  ^   ^^   ^  ^   ^^        gaps < 30 µs, busy < 50 % of span)
//! thread 1   [L][L][L][L][L][L][L][L] ...
//! ```
//!
//! Thresholds: a kernel is short under [`SHORT_KERNEL_NS`] (HTA's and
//! TraceLens's 10 µs scale); consecutive kernels belong to one run when the
//! device gap between them is under [`MAX_GAP_NS`] (HTA's
//! `consecutive_kernel_delay`, 30 µs); a run counts from [`MIN_RUN`]
//! kernels (ours: at 5–20 µs per launch, HTA's measured range, 32 launches
//! reach the millisecond scale) with busy under [`MAX_BUSY_SHARE`] of its
//! span (ours, mirroring the 50 % utilization thresholds of nsys and the
//! TensorBoard plugin). Kernels replayed from one `cudaGraphLaunch` are one
//! launch and never part of a run. Claims: idle pieces inside the runs
//! (causes cpu_op, framework_overhead, launch_overhead). Attribution: the
//! annotation (or operator) that launched the run. Savings: replay without
//! that CPU and launch time (what fusion or CUDA graphs remove).

use super::{Cx, Draft};
use crate::causes::Cause;
use crate::format::{duration, percent_whole};
use gapscope_collectors::trace::{GpuKind, GpuRow, Ns};
use std::collections::HashMap;

/// A kernel shorter than this is "small" (HTA/TraceLens: 10 µs).
pub const SHORT_KERNEL_NS: Ns = 10_000;
/// Largest device gap inside a run (HTA: 30 µs).
pub const MAX_GAP_NS: Ns = 30_000;
/// Fewest kernels in a run (ours).
pub const MIN_RUN: usize = 32;
/// A run is launch-bound when busy is below this share of its span (ours).
pub const MAX_BUSY_SHARE: f64 = 0.5;

struct Run {
    rows: Vec<GpuRow>,
    busy: Ns,
    span: (Ns, Ns),
}

pub(super) fn detect(cx: &Cx, claims: &mut [bool]) -> Vec<Draft> {
    let runs = runs(cx);
    // Group runs by what launched them.
    let mut by: HashMap<String, Vec<&Run>> = HashMap::new();
    for r in &runs {
        let (op, ann, _) = cx.launch_blame(r.rows[0]);
        by.entry(ann.or(op).unwrap_or_default()).or_default().push(r);
    }
    let mut groups: Vec<(String, Vec<&Run>)> = by.into_iter().collect();
    groups.sort_by_key(|(k, rs)| {
        (
            std::cmp::Reverse(rs.iter().map(|r| r.span.1 - r.span.0).sum::<Ns>()),
            k.clone(),
        )
    });
    let mut out = Vec::new();
    for (key, rs) in groups.into_iter().take(super::MAX_GROUPS) {
        let mut pieces = Vec::new();
        for r in &rs {
            pieces.extend(cx.take_in(claims, r.span, |p| {
                matches!(
                    p.cause,
                    Cause::CpuOp | Cause::FrameworkOverhead | Cause::LaunchOverhead
                )
            }));
        }
        if pieces.is_empty() {
            continue;
        }
        let idle = cx.total(&pieces);
        let kernels: usize = rs.iter().map(|r| r.rows.len()).sum();
        let busy: Ns = rs.iter().map(|r| r.busy).sum();
        let span: Ns = rs.iter().map(|r| r.span.1 - r.span.0).sum();
        let who = if key.is_empty() {
            "This code".to_string()
        } else {
            format!("`{key}`")
        };
        let title = format!(
            "{who} launches {kernels} small kernels back to back; the GPU is idle {} of that time",
            percent_whole(span - busy, span)
        );
        let per = cx.per_step();
        let hint = format!(
            "{who} launches {kernels} kernels averaging {} each, and the GPU waits for the CPU \
             between them ({} idle {per}). Fuse them with `torch.compile(model)`, use the \
             multi-tensor (`foreach=True`) or `fused=True` variants where they exist, or capture \
             the region with {} graphs (`torch.compile(mode=\"reduce-overhead\")` or \
             `torch.cuda.graph`) so it is launched once.",
            duration(busy / kernels.max(1) as Ns),
            duration(idle / cx.n_steps()),
            cx.platform.name()
        );
        let mut d = Draft::new("D3", "small_kernel_launches", title, hint);
        d.occurrences = kernels as u64;
        for r in rs.iter().take(super::MAX_EVIDENCE / 2) {
            d.evidence.push(super::Evidence {
                kind: "gpu_run".into(),
                row: Some(r.rows[0].get()),
                start_ns: r.span.0,
                end_ns: r.span.1,
            });
        }
        d.pieces = pieces;
        out.push(d);
    }
    out
}

fn runs(cx: &Cx) -> Vec<Run> {
    let t = cx.trace;
    let g = &t.gpu;
    let (ws, we) = cx.window;
    let mut out = Vec::new();
    let mut cur: Vec<GpuRow> = Vec::new();
    let mut busy_until = Ns::MIN;
    let close = |cur: &mut Vec<GpuRow>, out: &mut Vec<Run>| {
        if cur.len() >= MIN_RUN {
            let span = (
                g.start[cur[0].index()],
                cur.iter().map(|&r| g.end[r.index()]).max().unwrap(),
            );
            let busy = crate::intervals::total(&crate::intervals::union(
                cur.iter()
                    .map(|&r| (g.start[r.index()], g.end[r.index()]))
                    .collect(),
            ));
            if (busy as f64) < MAX_BUSY_SHARE * (span.1 - span.0) as f64 {
                out.push(Run {
                    rows: std::mem::take(cur),
                    busy,
                    span,
                });
            }
        }
        cur.clear();
    };
    let first = g.start.partition_point(|&s| s < ws);
    for i in first..g.len() {
        if g.start[i] >= we {
            break;
        }
        if g.device[i] != cx.device || !g.is_busy(i) {
            continue;
        }
        let graph = t.links.gpu_launch[i].is_some_and(|c| t.links.runtime_gpu_count[c.index()] > 1);
        let small = g.kind[i] == GpuKind::Kernel && g.dur(i) < SHORT_KERNEL_NS && !graph;
        let near = busy_until == Ns::MIN || g.start[i] - busy_until < MAX_GAP_NS;
        if !small || !near {
            close(&mut cur, &mut out);
        }
        if small {
            cur.push(GpuRow::new(i));
        }
        busy_until = busy_until.max(g.end[i]);
    }
    close(&mut cur, &mut out);
    out
}

//! D10, offload ping-pong: the same large buffers travel host→device and
//! device→host several times within a step (weights or activations
//! offloaded around module forwards), with the GPU waiting for them
//! (docs/detectors.md, D10; TorchBench's pig2 case).
//!
//! ```text
//! step        [ProfilerStep#3...............................................]
//! stream 7    [HtoD 8 MB][fwd k][DtoH 8 MB]   [HtoD 8 MB][fwd k][DtoH 8 MB]
//! sizes       8 MB: 2 HtoD + 2 DtoH in one step = 2 round trips
//! ```
//!
//! Evidence: per step, copies of at least [`LARGE_COPY_BYTES`] grouped by
//! size; a size with at least [`MIN_ROUND_TRIPS`] host→device *and* as many
//! device→host copies is a ping-pong. Threshold: those copies take at least
//! [`MIN_STEP_SHARE`] of the step (ours; 10 % mirrors the TensorBoard
//! plugin's communication threshold). Claims: idle pieces where the host
//! waits on, or is inside the call of, one of those copies. Explained: that
//! idle time plus the copies' busy time (keeping the buffers resident
//! removes both). Savings: replay without the copies, their waits and the
//! host time of their copy calls.

use super::{Cx, Draft};
use crate::causes::Cause;
use crate::format::duration;
use gapscope_collectors::trace::{CopyKind, GpuKind, GpuRow, Ns};
use std::collections::{BTreeMap, HashSet};

/// "Large": far above scalars and metadata, the size of a weight or
/// activation block (ours).
pub const LARGE_COPY_BYTES: u64 = 1 << 20;
/// Round trips of one size per step to call it a ping-pong (catalog: ≥ 2).
pub const MIN_ROUND_TRIPS: usize = 2;
/// Share of the step the ping-pong copies must take (catalog: ≥ 10 %).
pub const MIN_STEP_SHARE: f64 = 0.10;

pub(super) fn detect(cx: &Cx, claims: &mut [bool]) -> Vec<Draft> {
    let g = &cx.trace.gpu;
    let spans: Vec<(Ns, Ns)> = if cx.steps.is_empty() {
        vec![cx.window]
    } else {
        cx.steps.iter().map(|s| (s.start, s.end)).collect()
    };
    let mut rows: Vec<GpuRow> = Vec::new();
    let mut round_trips = 0usize;
    let mut sizes: Vec<u64> = Vec::new();
    for &(s, e) in &spans {
        // size -> (HtoD rows, DtoH rows)
        let mut by: BTreeMap<u64, (Vec<GpuRow>, Vec<GpuRow>)> = BTreeMap::new();
        let first = g.start.partition_point(|&t| t < s);
        for i in first..g.len() {
            if g.start[i] >= e {
                break;
            }
            if g.device[i] != cx.device || g.kind[i] != GpuKind::Memcpy || g.bytes[i] < LARGE_COPY_BYTES {
                continue;
            }
            let slot = by.entry(g.bytes[i]).or_default();
            match g.copy_kind[i] {
                CopyKind::HtoD => slot.0.push(GpuRow::new(i)),
                CopyKind::DtoH => slot.1.push(GpuRow::new(i)),
                _ => {}
            }
        }
        let mut step_rows = Vec::new();
        let mut step_trips = 0;
        for (bytes, (h, d)) in by {
            let trips = h.len().min(d.len());
            if trips >= MIN_ROUND_TRIPS {
                step_rows.extend(h.iter().chain(d.iter()).copied());
                step_trips += trips;
                sizes.push(bytes);
            }
        }
        let busy: Ns = step_rows.iter().map(|&r| g.dur(r.index())).sum();
        if step_trips > 0 && busy as f64 >= MIN_STEP_SHARE * (e - s) as f64 {
            rows.extend(step_rows);
            round_trips += step_trips;
        }
    }
    if rows.is_empty() {
        return Vec::new();
    }
    rows.sort_unstable();
    let set: HashSet<GpuRow> = rows.iter().copied().collect();
    let in_set = |row: Option<GpuRow>| row.is_some_and(|r| set.contains(&r));
    let pieces = cx.take_kept(claims, |p| {
        let waits = p.cause == Cause::Sync && p.blocking.is_some_and(|b| in_set(cx.paired_copy(b)));
        let inside = p.call.is_some_and(|c| in_set(cx.call_gpu[c.index()]));
        waits || inside
    });
    let busy: Ns = rows.iter().map(|&r| g.dur(r.index())).sum();
    let bytes: u64 = rows.iter().map(|&r| g.bytes[r.index()]).sum();
    sizes.sort_unstable();
    sizes.dedup();
    // The range the copies were launched in (an offload hook, a module).
    let blame = cx.launch_blame(rows[0]);
    let n = cx.n_steps();
    let title = format!(
        "{} round trips per step copy the same {} buffers host↔device ({} of copies)",
        round_trips as i64 / n,
        sizes
            .iter()
            .map(|&b| format!("{:.1} MB", b as f64 / 1e6))
            .collect::<Vec<_>>()
            .join(", "),
        duration(busy)
    );
    let place = blame
        .1
        .as_ref()
        .map_or_else(|| "the offloaded module".to_string(), |a| format!("`{a}`"));
    let hint = format!(
        "Buffers of {place} ({:.1} MB per step) go to the CPU and come back every step, \
         {} of copies per step that the GPU waits for. Keep them on the GPU if memory \
         allows; otherwise prefetch the next block on a side stream \
         (`with torch.cuda.stream(copy_stream)`) from pinned buffers with \
         `non_blocking=True`, so the copies overlap compute.",
        bytes as f64 / 1e6 / n as f64,
        duration(busy / n)
    );
    let mut d = Draft::new("D10", "offload_ping_pong", title, hint);
    d.occurrences = round_trips as u64;
    d.removed_busy_ns = busy;
    d.edit.remove_gpu = rows.clone();
    for &i in &pieces {
        let p = &cx.piece(i);
        if let Some(b) = p.blocking {
            d.edit.no_wait.push(b);
        }
    }
    // The host time of the copy calls goes too: a pageable copy keeps its
    // call busy for as long as the copy runs.
    let rt = &cx.trace.runtime;
    for &r in &rows {
        if let Some(c) = cx.trace.links.gpu_launch[r.index()] {
            let c = c.index();
            d.edit.remove_cpu.push((rt.thread[c], (rt.start[c], rt.end[c])));
        }
    }
    d.pieces = pieces;
    d.blame = Some(blame);
    for &r in rows.iter().take(super::MAX_EVIDENCE / 2) {
        d.evidence.push(cx.gpu_evidence(r));
    }
    vec![d]
}

//! D8, pageable-memory copies: a copy from or to pageable host memory is
//! staged by the driver and blocks the host, so `non_blocking=True` does
//! not overlap it with anything (docs/detectors.md, D8; nsys
//! `cuda_memcpy_async`, "use PINNED memory").
//!
//! ```text
//! stream 7    [k1...]                         [HtoD Pageable 4 MB][k2...]
//! thread 1    [aten::to..................................]
//!               [cudaMemcpyAsync (staging)...............]
//! piece              [........................]                     D8
//! ```
//!
//! Evidence: every copy with a `Pageable` side counts as an occurrence
//! (nsys flags each); the idle pieces inside their copy calls are claimed.
//! Copies of at most 16 bytes are D7's. Threshold: the pageable copies'
//! busy and idle time together at least [`NOISE_NS`](super::NOISE_NS).
//! Attribution: the call that launched the longest pageable copy.
//! Explained: the idle pieces plus the copy time pinning saves. Savings:
//! replay with each copy call as short as the device's median launch call
//! (pinned memory, no staging) and each copy as long as a pinned copy of
//! its size takes: at the best bandwidth of the trace's pinned copies of
//! the same direction (64 KB or more), else at the GPU's PCIe generation's
//! bandwidth at 85 % (measured: 64 MiB pageable copies at 9.7 GB/s against
//! pinned ones at 55.3 GB/s on an H100). A pinned copy still moves its
//! bytes: it is shortened, never removed.
//! Advice depends on where the copies are: a copy moves the DataLoader's
//! batch when its operator runs inside a DataLoader `__next__` range or
//! after one with only other copies (`aten::to`, `aten::_to_copy`,
//! `aten::copy_`) between ([`moves_a_batch`]); those get DataLoader advice
//! (`pin_memory=True`), the others, e.g. TorchRec's copies under
//! `KJTAllToAllTensorsAwaitable wait()`, advice to keep their own host
//! tensor pinned or the data on the device, naming the operator and range
//! that issued them.

use super::shared::blame::Blame;
use super::{CallClass, Cx, Draft, NOISE_NS, TINY_COPY_BYTES};
use crate::format::duration;
use gapscope_collectors::trace::{CopyKind, GpuKind, GpuRow, MemKind, Ns, OpRow};
use std::collections::HashMap;

pub(super) fn detect(cx: &Cx, claims: &mut [bool]) -> Vec<Draft> {
    let g = &cx.trace.gpu;
    let (ws, we) = cx.window;
    let mut copies: Vec<GpuRow> = Vec::new();
    let mut busy: Ns = 0;
    let mut bytes: u64 = 0;
    for i in 0..g.len() {
        if g.device[i] == cx.device
            && g.kind[i] == GpuKind::Memcpy
            && (g.src_mem[i] == MemKind::Pageable || g.dst_mem[i] == MemKind::Pageable)
            && g.bytes[i] > TINY_COPY_BYTES
            && g.start[i] < we
            && g.end[i] > ws
        {
            copies.push(GpuRow::new(i));
            busy += g.dur(i);
            bytes += g.bytes[i];
        }
    }
    let pieces = cx.take_kept(claims, |p| p.class == Some(CallClass::Pageable));
    let idle = cx.total(&pieces);
    if copies.is_empty() || busy + idle < NOISE_NS {
        for &i in &pieces {
            claims[i as usize] = false;
        }
        return Vec::new();
    }
    let n = cx.n_steps();
    // Blame the call that launched the largest copy: the idle pieces
    // inside the copy calls are few when the GPU is busy copying.
    let largest = |rows: &[GpuRow]| {
        rows.iter()
            .copied()
            .max_by_key(|&c| (g.dur(c.index()), std::cmp::Reverse(c)))
    };
    let blame = cx.launch_blame(largest(&copies).expect("copies"));
    let title = format!(
        "{} copies use pageable host memory ({:.1} MB, {} of copies, {} idle)",
        copies.len(),
        bytes as f64 / 1e6,
        duration(busy),
        duration(idle)
    );
    let per = cx.per_step();
    let mut hint = format!(
        "{} copies {:.1} MB {per} from or to pageable host memory; such copies are staged by \
         the driver and block the host, so they cannot overlap compute.",
        issued_by(cx, &blame),
        bytes as f64 / 1e6 / n as f64
    );
    let (batch, other): (Vec<GpuRow>, Vec<GpuRow>) = copies.iter().partition(|&&c| moves_a_batch(cx, c));
    if other.is_empty() {
        hint.push_str(&format!(" {BATCH_ADVICE}"));
    } else if batch.is_empty() {
        hint.push_str(&format!(" {}", own_buffer_advice("They")));
    } else {
        let other_blame = cx.launch_blame(largest(&other).expect("other copies"));
        hint.push_str(&format!(
            " {} of the {} copies move the batch the DataLoader returned: {BATCH_ADVICE} The \
             other {} (the largest from {}): {}",
            batch.len(),
            copies.len(),
            other.len(),
            issued_by(cx, &other_blame),
            own_buffer_advice("they")
        ));
    }
    let mut d = Draft::new("D8", "pageable_copies", title, hint);
    d.occurrences = copies.len() as u64;
    for &c in copies.iter().take(super::MAX_EVIDENCE / 2) {
        d.evidence.push(cx.gpu_evidence(c));
    }
    // The fix (pinned host buffers, `non_blocking=True`) ends the host's
    // staging: the call returns as fast as other launches. The copy itself
    // still moves its bytes, at the bandwidth a pinned copy reaches.
    let bw = pinned_bandwidth(cx);
    let async_call = typical_launch_ns(cx);
    let rt = &cx.trace.runtime;
    let mut saved_busy: Ns = 0;
    for &r in &copies {
        let i = r.index();
        let recorded = g.dur(i);
        if let Some(&b) = bw.get(&g.copy_kind[i]).filter(|&&b| b > 0.0) {
            let pinned = ((g.bytes[i] as f64 / b).ceil() as Ns).min(recorded);
            if pinned < recorded {
                d.edit.shorten_gpu.push((r, pinned));
                saved_busy += recorded - pinned;
            }
        }
        if let Some(c) = cx.trace.links.gpu_launch[i] {
            let c = c.index();
            if rt.end[c] - rt.start[c] > async_call {
                d.edit
                    .remove_cpu
                    .push((rt.thread[c], (rt.start[c] + async_call, rt.end[c])));
            }
        }
    }
    d.removed_busy_ns = saved_busy;
    if saved_busy > 0 {
        d.hint.push_str(&format!(
            " Pinned, these copies would take about {} instead of {} on the GPU (at the \
             bandwidth pinned copies reach on it), and the host would not wait for them.",
            duration(busy - saved_busy),
            duration(busy)
        ));
    }
    d.pieces = pieces;
    d.blame = Some(blame);
    vec![d]
}

/// Advice for copies of the DataLoader's batch.
const BATCH_ADVICE: &str = "Use `DataLoader(pin_memory=True)` and `.to(device, \
     non_blocking=True)`, or allocate the host buffer pinned once (`torch.empty(..., \
     pin_memory=True)`); calling `.pin_memory()` right before each copy is slower, not faster. \
     Issue the next batch's copy on a side stream while this one computes so the copy overlaps \
     compute.";

/// Advice for copies that are not the DataLoader's batch: its
/// `pin_memory=True` would not reach them. `subject` starts the sentence.
fn own_buffer_advice(subject: &str) -> String {
    format!(
        "{subject} are not the DataLoader's batch (no DataLoader range leads to them), so \
         `DataLoader(pin_memory=True)` would not change them. Keep the host tensor pinned for \
         its lifetime (pin it once with `tensor.pin_memory()`, or allocate it with \
         `torch.empty(..., pin_memory=True)`, and reuse it) and copy with `non_blocking=True`; \
         calling `.pin_memory()` right before each copy is slower, not faster. Or keep the data \
         on the device so that no host copy is needed."
    )
}

/// "`op` (in `range`) at `file.py(N): fn`": the operator, annotation and
/// source that issued a copy.
fn issued_by(cx: &Cx, (op, annotation, source): &Blame) -> String {
    let place = cx.where_(op, &None);
    let place = match annotation {
        Some(a) => format!("{place} (in `{a}`)"),
        None => place,
    };
    match source {
        Some(s) => format!("{place} at {s}"),
        None => place,
    }
}

/// Whether pageable copy `copy` moves the DataLoader's batch: its operator
/// runs inside a DataLoader `__next__` range, or after one on the same
/// thread with nothing but other copies between (`for x, y in loader:
/// x.to(dev); y.to(dev)`; on the ResNet-50 trace the 19 MB input copy
/// starts 0.1 ms after `__next__` returns, the labels' after it).
fn moves_a_batch(cx: &Cx, copy: GpuRow) -> bool {
    let t = cx.trace;
    let Some(op) = t.links.gpu_launch[copy.index()].and_then(|c| t.links.runtime_op[c.index()]) else {
        return false;
    };
    if cx.ops.dataloader[op.index()].is_some() {
        return true;
    }
    let outer = cx.outer_operator(Some(op)).unwrap_or(op);
    let ops = &t.cpu_ops;
    let start = ops.start[outer.index()];
    let rows = t.cpu_ops_of(ops.thread[outer.index()]);
    let before = rows.start + ops.start[rows.clone()].partition_point(|&s| s < start);
    for i in (rows.start..before).rev() {
        if ops.end[i] > start {
            // A range around the copy (the step, an annotation).
            continue;
        }
        if cx.ops.dataloader[i].is_some() {
            return true;
        }
        let row = Some(OpRow::new(i));
        let top_operator = cx.ops.operator[i] == row && cx.outer_operator(row) == row;
        if top_operator && !is_copy_name(t.strings.get(ops.name[i])) {
            return false;
        }
    }
    false
}

/// The operators of a `.to(device)` copy.
fn is_copy_name(name: &str) -> bool {
    matches!(name, "aten::to" | "aten::_to_copy" | "aten::copy_")
}

/// Copies smaller than this say little about bandwidth (their time is
/// mostly fixed cost).
const BANDWIDTH_MIN_BYTES: u64 = 64 * 1024;

/// PCIe x16 bandwidth by generation, GB/s (bytes per ns): 3.0, 4.0, 5.0.
const PCIE_X16: [(u32, f64); 3] = [(3, 15.75), (4, 31.5), (5, 63.0)];
/// The share of the link a pinned host-to-device copy reaches: measured
/// 55.3 GB/s for 64 MiB pinned copies on an H100 (PCIe 5.0, 63 GB/s),
/// 88 %; taken as 85 %.
const PCIE_EFFICIENCY: f64 = 0.85;

/// The bandwidth (bytes per ns) a pinned copy of the device can expect, per
/// direction: the best the trace's own pinned copies of 64 KB or more
/// reach; for a direction without one, the device's PCIe generation at
/// [`PCIE_EFFICIENCY`] ([`pcie_generation`]).
fn pinned_bandwidth(cx: &Cx) -> HashMap<CopyKind, f64> {
    let g = &cx.trace.gpu;
    let mut out: HashMap<CopyKind, f64> = HashMap::new();
    for i in 0..g.len() {
        let pinned = g.src_mem[i] == MemKind::Pinned || g.dst_mem[i] == MemKind::Pinned;
        if g.device[i] != cx.device || g.kind[i] != GpuKind::Memcpy || !pinned {
            continue;
        }
        if g.bytes[i] < BANDWIDTH_MIN_BYTES || g.dur(i) <= 0 {
            continue;
        }
        let bw = g.bytes[i] as f64 / g.dur(i) as f64;
        let e = out.entry(g.copy_kind[i]).or_insert(0.0);
        *e = e.max(bw);
    }
    let link = PCIE_X16
        .iter()
        .find(|(gen, _)| *gen == pcie_generation(cx))
        .map_or(PCIE_X16[0].1, |&(_, bw)| bw)
        * PCIE_EFFICIENCY;
    for k in [CopyKind::HtoD, CopyKind::DtoH] {
        out.entry(k).or_insert(link);
    }
    out
}

/// The host link's PCIe generation, from the device: NVIDIA compute
/// capability 9 and later (Hopper, Blackwell) and AMD MI300-class GPUs
/// 5.0; capability 8 (Ampere, Ada) and MI200-class 4.0; anything else or
/// unknown 3.0, the slowest, so the saving is not overstated.
fn pcie_generation(cx: &Cx) -> u32 {
    let t = cx.trace;
    let Some(i) = (0..t.devices.len()).find(|&i| t.devices.id[i] == cx.device) else {
        return 3;
    };
    let name = t.strings.get(t.devices.name[i]);
    if name.contains("MI3") {
        return 5;
    }
    if name.contains("MI2") {
        return 4;
    }
    if cx.platform == crate::platform::Platform::Rocm {
        return 3;
    }
    match t.devices.compute_capability[i].0 {
        9.. => 5,
        8 => 4,
        _ => 3,
    }
}

/// The median length of the calls that launched the device's work: what an
/// asynchronous copy call costs the host.
fn typical_launch_ns(cx: &Cx) -> Ns {
    let rt = &cx.trace.runtime;
    let mut d: Vec<Ns> = (0..rt.len())
        .filter(|&c| cx.call_gpu[c].is_some())
        .map(|c| rt.end[c] - rt.start[c])
        .collect();
    if d.is_empty() {
        return 0;
    }
    let k = d.len() / 2;
    *d.select_nth_unstable(k).1
}

//! D8, pageable-memory copies: a copy from or to pageable host memory is
//! staged by the driver and blocks the host, so `non_blocking=True` does
//! not overlap it with anything (notes/detectors.md D8; nsys
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
//! Explained: the idle pieces plus the copies' busy time. Savings: replay
//! without the copies and the host time spent in their calls (pinned
//! source, copy queued asynchronously on a side stream and prefetched, so
//! it overlaps compute).

use super::{CallClass, Cx, Draft, NOISE_NS, TINY_COPY_BYTES};
use crate::format::duration;
use gapscope_collectors::trace::{GpuKind, GpuRow, MemKind, Ns};

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
    let pieces = cx.take(claims, |p| p.class == Some(CallClass::Pageable));
    let idle = cx.total(&pieces);
    if copies.is_empty() || busy + idle < NOISE_NS {
        for &i in &pieces {
            claims[i] = false;
        }
        return Vec::new();
    }
    let n = cx.n_steps();
    // Blame the call that launched the largest copy: the idle pieces
    // inside the copy calls are few when the GPU is busy copying.
    let largest = *copies
        .iter()
        .max_by_key(|&&c| (g.dur(c.index()), std::cmp::Reverse(c)))
        .expect("copies");
    let blame = cx.launch_blame(largest);
    let place = cx.where_(&blame.0, &blame.2);
    let title = format!(
        "{} copies use pageable host memory ({:.1} MB, {} of copies, {} idle)",
        copies.len(),
        bytes as f64 / 1e6,
        duration(busy),
        duration(idle)
    );
    let hint = format!(
        "{place} copies {:.1} MB per step from or to pageable host memory; such copies are \
         staged by the driver and block the host, so they cannot overlap compute. Use \
         `DataLoader(pin_memory=True)` and `.to(device, non_blocking=True)`, or allocate the host \
         buffer pinned once (`torch.empty(..., pin_memory=True)`); calling `.pin_memory()` \
         right before each copy is slower, not faster. Issue the next batch's copy on a side \
         stream while this one computes so the copy overlaps compute.",
        bytes as f64 / 1e6 / n as f64
    );
    let mut d = Draft::new("D8", "pageable_copies", title, hint);
    d.occurrences = copies.len() as u64;
    for &c in copies.iter().take(super::MAX_EVIDENCE / 2) {
        d.evidence.push(cx.gpu_evidence(c));
    }
    // The fix (pinned buffers, copies on a side stream, the next batch
    // prefetched) takes the copies off the compute stream and the host.
    d.removed_busy_ns = busy;
    d.edit.remove_gpu = copies.clone();
    let rt = &cx.trace.runtime;
    for &r in &copies {
        if let Some(c) = cx.trace.links.gpu_launch[r.index()] {
            let c = c.index();
            d.edit.remove_cpu.push((rt.thread[c], (rt.start[c], rt.end[c])));
        }
    }
    d.pieces = pieces;
    d.blame = Some(blame);
    vec![d]
}

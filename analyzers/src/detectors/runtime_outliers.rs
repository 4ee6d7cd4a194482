//! D14, runtime-call outliers: the GPU idles while the launching thread is
//! inside an allocator call (`cudaMalloc`, `cudaFree`, `cudaHostAlloc`: the
//! caching allocator growing, or pinned buffers made per copy) or inside
//! any runtime call longer than 50 µs (notes/detectors.md D14: HTA's
//! `runtime_cutoff`, TraceLens's `RUNTIME_DOMINATED`).
//!
//! ```text
//! stream 7    [k1.....]                       [k2....]
//! thread 1    [aten::empty..........................]
//!               [cudaMalloc 2 MB.............][L2]
//! piece                 [....................]        D14
//! ```
//!
//! Evidence: pieces inside such calls (pieces are cut at the calls'
//! edges). Threshold: [`NOISE_NS`](super::NOISE_NS) of idle per finding.
//! Savings: replay with that call time removed.

use super::{fmt_ns, CallClass, Cx, Draft, NOISE_NS};

pub(super) fn detect(cx: &Cx, claims: &mut [bool]) -> Vec<Draft> {
    let mut out = Vec::new();
    for (class, id) in [
        (CallClass::Alloc, "allocator_calls_in_step"),
        (CallClass::Slow, "slow_runtime_calls"),
    ] {
        let pieces = cx.take(claims, |p| p.class == Some(class));
        let idle = cx.total(&pieces);
        if idle < NOISE_NS {
            for &i in &pieces {
                claims[i] = false;
            }
            continue;
        }
        let calls: Vec<u32> = {
            let mut c: Vec<u32> = pieces.iter().map(|&i| cx.pieces[i].call).collect();
            c.sort_unstable();
            c.dedup();
            c
        };
        let api = cx
            .trace
            .strings
            .get(cx.trace.runtime.name[calls[0] as usize])
            .to_string();
        let blame = cx.blame(&pieces);
        let place = cx.where_(&blame.0, &blame.2);
        let per_step = fmt_ns(idle / cx.n_steps());
        let (title, hint) = match class {
            CallClass::Alloc => (
                format!(
                    "{} allocator calls ({api}, ...) inside the steps leave the GPU idle {}",
                    calls.len(),
                    fmt_ns(idle)
                ),
                format!(
                    "{place} calls the CUDA allocator ({api}) inside the step, {per_step} idle per \
                     step: the caching allocator is still growing or releasing memory. Run one \
                     warm-up step with the largest input shape before profiling, avoid \
                     `torch.cuda.empty_cache()` in the loop, keep input shapes stable (pad \
                     variable lengths to a few buckets), and allocate pinned buffers once."
                ),
            ),
            _ => (
                format!(
                    "{} runtime calls over 50 µs ({api}, ...) leave the GPU idle {}",
                    calls.len(),
                    fmt_ns(idle)
                ),
                format!(
                    "{place} spends {per_step} per step inside slow CUDA runtime calls ({api}) \
                     while the GPU waits. Look for module loading, stream or event creation, or \
                     `cudaGetDeviceProperties`-style queries in the loop and hoist them out of \
                     the step."
                ),
            ),
        };
        let mut d = Draft::new("D14", id, title, hint);
        d.occurrences = calls.len() as u64;
        for &c in calls.iter().take(super::MAX_EVIDENCE / 2) {
            d.evidence.push(cx.runtime_evidence(c));
        }
        d.pieces = pieces;
        d.blame = Some(blame);
        out.push(d);
    }
    out
}

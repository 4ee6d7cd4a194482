//! `exposed_communication` for a job: collective transfers that no compute
//! kernel hides, on the median rank.
//!
//! Only the transfer counts (a collective's time after its last member
//! arrived): the wait before it belongs to the late rank and is reported
//! as `straggler_wait`. The finding is made when the median rank's exposed
//! transfer is at least 100 µs and 5 % of the job's median step. Overlap
//! can only hide a transfer behind compute that exists, so the saving is
//! bounded per step by the smaller of the median rank's exposed transfer
//! and its compute time: an upper bound, not a promise.
//!
//! The single-rank view has its own exposed-communication rule; this one
//! reads the transfers that the cross-rank split isolates.

use super::align::median;
use super::finding::JobFinding;
use super::JobStep;
use crate::format::duration_coarse;
use crate::workload::Workload;
use gapscope_collectors::trace::Ns;
use std::collections::BTreeMap;

/// Smallest exposed transfer per step on the median rank, ns.
const MIN_EXPOSED_NS: Ns = 100_000;
/// Smallest exposed transfer as a share of the median step.
const MIN_SHARE: f64 = 0.05;

/// How to hide the transfers: gradient overlap only where a rank's trace
/// may show training (a backward pass or an optimizer step).
fn overlap_advice(workload: Workload) -> String {
    const ASYNC: &str = "issue all-to-alls with `async_op=True`, waiting only where the result is used.";
    match workload {
        Workload::NoBackwardOrOptimizer => format!(
            "No rank's trace has a backward pass or an optimizer step, so there is no gradient \
             communication to overlap with backward: in a tensor-parallel forward pass each \
             layer's collective is on the critical path, and fewer, larger collectives (fused \
             all-reduce kernels, a smaller tensor-parallel degree) shorten it; {ASYNC}"
        ),
        Workload::Training | Workload::Unknown => format!(
            "Overlap communication with compute: let DDP overlap gradient all-reduce with \
             backward (tune `bucket_cap_mb`, avoid `find_unused_parameters=True`), use FSDP's \
             `backward_prefetch` and `forward_prefetch`, and {ASYNC}"
        ),
    }
}

/// The finding, when the job's steps show one.
pub fn finding(steps: &[JobStep], workload: Workload) -> Option<JobFinding> {
    let with_ranks: Vec<&JobStep> = steps.iter().filter(|s| s.ranks.len() >= 2).collect();
    if with_ranks.is_empty() {
        return None;
    }
    let per_step: Vec<(Ns, Ns, Ns)> = with_ranks
        .iter()
        .map(|s| {
            let exposed = median(s.ranks.iter().map(|r| r.exposed_transfer_ns).collect());
            let compute = median(s.ranks.iter().map(|r| r.breakdown.compute_ns).collect());
            (exposed, compute, s.span_ns)
        })
        .collect();
    let exposed = median(per_step.iter().map(|p| p.0).collect());
    let step = median(per_step.iter().map(|p| p.2).collect());
    if exposed < MIN_EXPOSED_NS || (exposed as f64) < MIN_SHARE * step as f64 {
        return None;
    }
    let saving: Ns = per_step.iter().map(|&(e, c, _)| e.min(c)).sum();
    Some(JobFinding {
        id: "exposed_communication".into(),
        title: format!(
            "collective transfers that no compute hides take {} per step on the median rank ({:.0}% of the job's step)",
            duration_coarse(exposed),
            exposed as f64 * 100.0 / step.max(1) as f64
        ),
        hint: overlap_advice(workload),
        culprit_rank: None,
        step: None,
        steps: with_ranks.iter().map(|s| s.step).collect(),
        collective: None,
        collective_ordinal: None,
        collectives: 0,
        cause: Some("communication".into()),
        operator: None,
        cause_ns: per_step.iter().map(|p| p.0).sum(),
        lateness_ns: 0,
        wait_ns: BTreeMap::new(),
        total_wait_ns: 0,
        est_savings_ns: saving,
        untraced_ranks: 0,
        savings_bound_ns: None,
    })
}

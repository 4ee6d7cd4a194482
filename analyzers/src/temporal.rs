//! HTA's temporal breakdown (`get_temporal_breakdown`; docs/analysis.md,
//! "HTA-compatible temporal breakdown"),
//! without its bugs, so HTA users can check gapscope against numbers they
//! know.
//!
//! ```text
//! gpu        [gemm....]   [Memcpy..]      [gemm..]
//! span       |<------------------------------------>|  first busy start .. last busy end
//! idle                 ---          ------             span − |union of busy|
//! compute    ==========                   ========     |union of HTA COMPUTATION|
//! non-comp.                 =========                  span − compute − idle
//! ```
//!
//! Differences from HTA, all on purpose: sync records and CPU ops that carry
//! a stream are not GPU work; timestamps are exact ns (no rounding); and the
//! block is per device, where HTA pools every device of a file (the same on
//! single-device traces). Like HTA, the span is the GPU's own first-to-last
//! activity, not the analysis window.

use crate::intervals::{self, Span};
use crate::kinds::ClassTable;
use gapscope_collectors::trace::{Ns, Trace};
use serde::{Deserialize, Serialize};

/// HTA-compatible temporal breakdown of one device.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Temporal {
    /// Earliest busy start to latest busy end (HTA's `kernel_time`).
    pub span_ns: Ns,
    /// Time in the span where nothing runs.
    pub idle_ns: Ns,
    /// Union of HTA COMPUTATION kernels (not collectives, copies, memsets).
    pub compute_ns: Ns,
    /// `span − compute − idle`: only collectives, copies or memsets run.
    pub non_compute_ns: Ns,
}

/// The temporal block of every device with busy activity, sorted by id.
pub fn temporal(trace: &Trace) -> Vec<(u32, Temporal)> {
    let classes = ClassTable::new(trace);
    let devices = trace.active_devices();
    let mut busy: Vec<Vec<Span>> = vec![Vec::new(); devices.len()];
    let mut compute: Vec<Vec<Span>> = vec![Vec::new(); devices.len()];
    for i in 0..trace.gpu.len() {
        if !trace.gpu.is_busy(i) {
            continue;
        }
        let d = devices
            .binary_search(&trace.gpu.device[i])
            .expect("active device");
        let span = (trace.gpu.start[i], trace.gpu.end[i]);
        busy[d].push(span);
        if classes.is_hta_compute(trace, i) {
            compute[d].push(span);
        }
    }
    devices
        .into_iter()
        .zip(busy.into_iter().zip(compute))
        .map(|(d, (b, c))| (d, of_spans(b, c)))
        .collect()
}

/// The block from raw busy and compute spans (compute ⊆ busy).
fn of_spans(busy: Vec<Span>, compute: Vec<Span>) -> Temporal {
    let start = busy.iter().map(|s| s.0).min().unwrap_or(0);
    let end = busy.iter().map(|s| s.1).max().unwrap_or(0);
    let span_ns = end - start;
    let idle_ns = span_ns - intervals::total(&intervals::union(busy));
    let compute_ns = intervals::total(&intervals::union(compute));
    Temporal {
        span_ns,
        idle_ns,
        compute_ns,
        non_compute_ns: span_ns - compute_ns - idle_ns,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adds_up() {
        let t = of_spans(vec![(10, 20), (15, 30), (40, 50)], vec![(10, 20)]);
        assert_eq!(
            t,
            Temporal {
                span_ns: 40,
                idle_ns: 10,
                compute_ns: 10,
                non_compute_ns: 20
            }
        );
    }
}

//! The GPU metrics of TensorBoard's PyTorch profiler plugin, per device, so
//! its users find the numbers they relied on: GPU utilization, estimated SM
//! efficiency, estimated achieved occupancy, and the utilization timeline it
//! drew.
//!
//! Definitions (the plugin's `gpu_metrics_parser.py`, reproduced; its own
//! test input and expected output are checked in
//! `analyzers/tests/gpu_metrics_tb_plugin.rs`):
//!
//! - **GPU utilization**: the union of the device's kernels inside the
//!   window, over the window. Kernels only: copies and memsets do not count
//!   (the breakdown's busy time does count them).
//! - **Estimated SM efficiency**: each kernel's blocks per SM (its grid's
//!   blocks over the device's SM count); where kernels overlap their values
//!   add; each stretch counts `min(sum, 1)`; the sum of value × duration
//!   inside the window, over the window. It says how many SMs had work, not
//!   how busy each was.
//! - **Estimated achieved occupancy**: the kernels' own estimated achieved
//!   occupancy (percent, as the trace gives it per kernel), averaged over
//!   the parts of the kernels inside the window, weighted by those parts'
//!   durations (overlapping kernels each count). It says how full the SMs
//!   that had work were.
//! - **Utilization timeline**: the trace's extent (first start to last end
//!   of its complete events) cut into buckets of a power of ten µs, the
//!   smallest that makes at most 100 of them (the last one runs to the
//!   end); each bucket's kernel union over its length; a closing 0 sample.
//!
//! ```text
//! extent     |<------------------------------------------------->|
//! kernels       [k1]  [k2....]          [k3]
//! buckets    |  b0   |  b1    |  b2    |  b3    |  b4 (to the end)  |
//! samples    (b0 start, busy/len) ... (extent end, 0)
//! ```

use crate::intervals::{self, Span};
use crate::kernels::{blocks_per_sm, sm_counts};
use gapscope_collectors::trace::{GpuKind, Ns, Trace};
use serde::{Deserialize, Serialize};

/// TensorBoard's GPU metrics of one device.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct GpuMetrics {
    /// Kernel time (union) inside the window over the window, 0 to 1.
    pub gpu_utilization: f64,
    /// Estimated SM efficiency over the window, 0 to 1; `None` when no
    /// kernel in the window has a grid and a known SM count.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub est_sm_efficiency: Option<f64>,
    /// Estimated achieved occupancy over the window, percent (0 to 100);
    /// `None` when no kernel in the window carries one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub est_achieved_occupancy_pct: Option<f64>,
    /// The utilization timeline over the trace's extent.
    pub utilization_timeline: UtilizationTimeline,
}

/// Kernel utilization in buckets over the trace's extent.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct UtilizationTimeline {
    /// Bucket length, ns (a power of ten µs; the last bucket is longer).
    pub bucket_ns: Ns,
    /// `(bucket start, utilization 0 to 1)`, then `(extent end, 0)`; empty
    /// when the device ran no kernel.
    pub samples: Vec<(Ns, f64)>,
}

/// A stretch of time and its estimated SM efficiency (0 to 1).
pub type SmEfficiencySpan = (Ns, Ns, f64);

/// The extent TensorBoard draws its timeline over: first start to last end
/// of the complete events (GPU rows, runtime calls, CPU ranges, and range
/// markers; instants and counter samples left out).
pub fn timeline_extent(trace: &Trace) -> Option<Span> {
    use gapscope_collectors::trace::MarkerKind;
    let m = &trace.markers;
    let ranges = (0..m.len())
        .filter(|&i| !matches!(m.kind[i], MarkerKind::Instant | MarkerKind::Counter))
        .map(|i| (m.start[i], m.end[i]));
    let tables = [
        (&trace.gpu.start, &trace.gpu.end),
        (&trace.runtime.start, &trace.runtime.end),
        (&trace.cpu_ops.start, &trace.cpu_ops.end),
    ];
    let rows = tables
        .iter()
        .flat_map(|(s, e)| s.iter().copied().zip(e.iter().copied()))
        .chain(ranges);
    rows.fold(None, |acc: Option<Span>, (s, e)| {
        Some(acc.map_or((s, e), |(a, b)| (a.min(s), b.max(e))))
    })
}

/// The union of `device`'s kernels, sorted and disjoint.
pub fn kernel_spans(trace: &Trace, device: u32) -> Vec<Span> {
    let g = &trace.gpu;
    let spans = (0..g.len())
        .filter(|&i| g.device[i] == device && g.kind[i] == GpuKind::Kernel)
        .map(|i| (g.start[i], g.end[i]))
        .collect();
    intervals::union(spans)
}

/// The estimated SM efficiency of `device` as stretches: the kernels'
/// blocks per SM added where they overlap, each stretch capped at 1.
pub fn sm_efficiency_spans(trace: &Trace, device: u32) -> Vec<SmEfficiencySpan> {
    let mut out = Vec::new();
    each_sm_efficiency_span(trace, device, |s, e, v| out.push((s, e, v)));
    out
}

/// [`sm_efficiency_spans`] handed to `f` one by one, in time order, without
/// a list of them.
///
/// The kernels' starts and ends are walked as two sorted lists of kernel
/// numbers (a start before an end at one instant, and among equal times in
/// row order), 24 bytes a kernel instead of two 24-byte points: a big
/// trace has millions of kernels, and this runs beside the detectors.
fn each_sm_efficiency_span(trace: &Trace, device: u32, mut f: impl FnMut(Ns, Ns, f64)) {
    let sms = sm_counts(trace);
    let g = &trace.gpu;
    // (row, blocks per SM) of the device's kernels with a known grid.
    let kernels: Vec<(u32, f64)> = (0..g.len())
        .filter(|&i| g.device[i] == device && g.kind[i] == GpuKind::Kernel)
        .filter_map(|i| blocks_per_sm(trace, &sms, i).map(|b| (i as u32, b)))
        .collect();
    let at = |k: u32, ends: bool| {
        let row = kernels[k as usize].0 as usize;
        if ends {
            g.end[row]
        } else {
            g.start[row]
        }
    };
    let mut starts: Vec<u32> = (0..kernels.len() as u32).collect();
    let mut ends = starts.clone();
    // Stable: equal times stay in row order.
    starts.sort_by_key(|&k| at(k, false));
    ends.sort_by_key(|&k| at(k, true));
    let (mut s, mut e) = (0, 0);
    // The earlier of the next start and the next end; a start first at
    // one instant.
    let mut next = || -> Option<(Ns, bool, f64)> {
        let start = starts.get(s).map(|&k| (at(k, false), k));
        let end = ends.get(e).map(|&k| (at(k, true), k));
        let (t, k, is_end) = match (start, end) {
            (Some((ts, k)), Some((te, _))) if ts <= te => (ts, k, false),
            (Some((ts, k)), None) => (ts, k, false),
            (_, Some((te, k))) => (te, k, true),
            (None, None) => return None,
        };
        if is_end {
            e += 1;
        } else {
            s += 1;
        }
        Some((t, is_end, kernels[k as usize].1))
    };
    let Some((mut last_t, _, mut value)) = next() else {
        return;
    };
    while let Some((t, is_end, v)) = next() {
        if t > last_t && value > 0.0 {
            f(last_t, t, value.min(1.0));
        }
        last_t = t;
        if is_end {
            value -= v;
        } else {
            value += v;
        }
    }
}

/// The estimated achieved occupancy of `device` over `window`, percent:
/// each kernel's value weighted by its duration inside the window.
pub fn achieved_occupancy(trace: &Trace, device: u32, window: Span) -> Option<f64> {
    let (ws, we) = window;
    let g = &trace.gpu;
    let (mut weighted, mut total) = (0.0, 0);
    for i in 0..g.len() {
        if g.device[i] != device || g.kind[i] != GpuKind::Kernel {
            continue;
        }
        let Some(pct) = g.occupancy_pct[i] else { continue };
        let d = g.end[i].min(we) - g.start[i].max(ws);
        if d > 0 {
            weighted += f64::from(pct) * d as f64;
            total += d;
        }
    }
    (total > 0).then(|| weighted / total as f64)
}

/// TensorBoard's bucket length for an extent of `range_ns`: the smallest
/// power of ten µs that cuts it into at most 100 buckets.
pub fn bucket_ns(range_ns: Ns) -> Ns {
    let mut bucket = 1_000;
    while range_ns as f64 / bucket as f64 > 100.0 {
        bucket *= 10;
    }
    bucket
}

/// The utilization timeline of kernel union `kernels` over `extent`.
pub fn utilization_timeline(kernels: &[Span], extent: Span) -> UtilizationTimeline {
    let (start, end) = extent;
    let bucket = bucket_ns(end - start);
    let n = ((end - start) / bucket) as usize;
    if kernels.is_empty() || n == 0 {
        return UtilizationTimeline {
            bucket_ns: bucket,
            samples: Vec::new(),
        };
    }
    let bounds = |i: usize| {
        let s = start + i as Ns * bucket;
        (s, if i + 1 < n { s + bucket } else { end })
    };
    let mut samples = Vec::with_capacity(n + 1);
    let mut k = 0;
    for i in 0..n {
        let (s, e) = bounds(i);
        while k < kernels.len() && kernels[k].1 <= s {
            k += 1;
        }
        let busy: Ns = kernels[k..]
            .iter()
            .take_while(|r| r.0 < e)
            .map(|r| r.1.min(e) - r.0.max(s))
            .sum();
        samples.push((s, busy as f64 / (e - s) as f64));
    }
    samples.push((end, 0.0));
    UtilizationTimeline {
        bucket_ns: bucket,
        samples,
    }
}

/// The GPU metrics of `device` over `window`, its kernel union being
/// `kernels`.
pub fn gpu_metrics(trace: &Trace, device: u32, window: Span, kernels: &[Span]) -> GpuMetrics {
    let (ws, we) = window;
    let len = (we - ws) as f64;
    let inside: Ns = kernels.iter().map(|&(s, e)| (e.min(we) - s.max(ws)).max(0)).sum();
    let mut weighted: Option<f64> = None;
    each_sm_efficiency_span(trace, device, |s, e, v| {
        let d = e.min(we) - s.max(ws);
        if d > 0 {
            weighted = Some(weighted.unwrap_or(0.0) + v * d as f64);
        }
    });
    GpuMetrics {
        gpu_utilization: if len > 0.0 { inside as f64 / len } else { 0.0 },
        est_sm_efficiency: weighted.filter(|_| len > 0.0).map(|w| w / len),
        est_achieved_occupancy_pct: achieved_occupancy(trace, device, window),
        utilization_timeline: timeline_extent(trace)
            .map(|x| utilization_timeline(kernels, x))
            .unwrap_or_default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gapscope_collectors::trace::Sketch;

    #[test]
    fn buckets_are_powers_of_ten_us_at_most_100() {
        assert_eq!(bucket_ns(13_896_000), 1_000_000);
        assert_eq!(bucket_ns(100_000), 1_000);
        assert_eq!(bucket_ns(100_001), 10_000);
    }

    /// ```text
    /// µs        0    1    2    3    4    5
    /// stream 7  [k a 0.5..]           [k c 2.0]
    /// stream 9       [k b 0.75.]
    /// sum       .5   1.25 .75  0      1 (capped)
    /// ```
    #[test]
    fn sm_efficiency_adds_overlaps_and_caps_at_one() {
        let t = Sketch::in_units(1_000)
            .device("GPU", 4)
            .kernel(7, 0, 2, 1)
            .grid([2, 1, 1])
            .kernel(9, 1, 3, 2)
            .grid([3, 1, 1])
            .kernel(7, 4, 5, 3)
            .grid([8, 1, 1])
            .finish();
        assert_eq!(
            sm_efficiency_spans(&t, 0),
            vec![
                (0, 1_000, 0.5),
                (1_000, 2_000, 1.0),
                (2_000, 3_000, 0.75),
                (4_000, 5_000, 1.0)
            ]
        );
        let m = gpu_metrics(&t, 0, (0, 5_000), &kernel_spans(&t, 0));
        assert_eq!(m.gpu_utilization, 4.0 / 5.0);
        assert_eq!(m.est_sm_efficiency, Some(3.25 / 5.0));
        // 5 µs extent: 1 µs buckets, then the closing 0.
        let u = &m.utilization_timeline;
        assert_eq!(u.bucket_ns, 1_000);
        assert_eq!(
            u.samples,
            vec![
                (0, 1.0),
                (1_000, 1.0),
                (2_000, 1.0),
                (3_000, 0.0),
                (4_000, 1.0),
                (5_000, 0.0)
            ]
        );
    }
}

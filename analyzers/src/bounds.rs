//! Lower bounds on a device's time (Benanza-style, notes/detectors.md §4):
//! however much idle time a fix removes, the device still has to do its
//! busy work.
//!
//! ```text
//! window      |<------------------------- window_ns ------------------------->|
//! stream 7    |   [k1......]        [k3...]                                    |
//! stream 9    |        [k2.......]            [m1]                             |
//! busy_ns     |   [..............]  [.....]   [..]      union of busy rows     |
//! kernel_sum  k1 + k2 + k3 (kernels only, overlap counted twice)
//! max_speedup window_ns / busy_ns: the step time if every idle ns went away
//! ```
//!
//! `busy_ns` is the parallel bound (work keeps its overlap); `kernel_sum_ns`
//! is the sequential one for kernels alone (Benanza's sequential mode,
//! with the recorded kernel times standing in for its best library times).

use crate::intervals::{total, union, Span};
use gapscope_collectors::trace::{GpuKind, Ns, Trace};
use serde::{Deserialize, Serialize};

/// Bounds of one device over one window.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Bounds {
    /// GPU index.
    pub device: u32,
    /// The window's length, ns.
    pub window_ns: Ns,
    /// Union of the device's kernels, copies and memsets inside the window:
    /// the time left if all idle time were removed.
    pub busy_ns: Ns,
    /// Sum of kernel durations inside the window (overlaps counted twice).
    pub kernel_sum_ns: Ns,
    /// `window_ns / busy_ns`: the largest speedup removing idle time can
    /// give (1 when there is no idle time; 0 when nothing ran).
    pub max_speedup: f64,
}

/// The bounds of `device` over `window`.
pub fn bounds(trace: &Trace, device: u32, window: Span) -> Bounds {
    let g = &trace.gpu;
    let (ws, we) = window;
    let mut spans = Vec::new();
    let mut kernel_sum_ns = 0;
    for i in 0..g.len() {
        if g.device[i] != device || !g.is_busy(i) {
            continue;
        }
        let (s, e) = (g.start[i].max(ws), g.end[i].min(we));
        if e <= s {
            continue;
        }
        spans.push((s, e));
        if g.kind[i] == GpuKind::Kernel {
            kernel_sum_ns += e - s;
        }
    }
    let busy_ns = total(&union(spans));
    let window_ns = we - ws;
    Bounds {
        device,
        window_ns,
        busy_ns,
        kernel_sum_ns,
        max_speedup: if busy_ns > 0 {
            // Three decimals are all a report shows; rounding keeps JSON
            // stable across platforms.
            (window_ns as f64 / busy_ns as f64 * 1000.0).round() / 1000.0
        } else {
            0.0
        },
    }
}

/// Bounds of every active device of `trace` over `window`, by device.
pub fn all_bounds(trace: &Trace, window: Span) -> Vec<Bounds> {
    trace
        .active_devices()
        .into_iter()
        .map(|d| bounds(trace, d, window))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use gapscope_collectors::trace::*;

    /// ```text
    /// ns        0    10   20   30   40   50   60   70   80   90   100
    /// window    |<---------------------------------------------->|
    /// stream 7       [k1......]          [m1]
    /// stream 9            [k2......]
    /// busy           [..............]    [..]          = 30 + 5
    /// kernels        k1 15 + k2 15 = 30
    /// ```
    #[test]
    fn busy_is_the_union_and_kernel_sum_counts_kernels() {
        let t = Sketch::new()
            .named_kernel("k1", 7, 10, 25, 1)
            .named_kernel("k2", 9, 20, 35, 2)
            .gpu(GpuKind::Memcpy, 7, 50, 55, "Memcpy HtoD (Pinned -> Device)", 3)
            .sync_record("Stream Sync", 7, 60, 90, 4)
            .finish();
        let got = bounds(&t, 0, (0, 100));
        assert_eq!((got.window_ns, got.busy_ns, got.kernel_sum_ns), (100, 30, 30));
        assert_eq!(got.max_speedup, 3.333);
        assert_eq!(bounds(&t, 1, (0, 100)).max_speedup, 0.0);
    }
}

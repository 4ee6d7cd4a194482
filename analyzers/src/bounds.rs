//! Lower bounds on a device's time (Benanza-style, docs/analysis.md, "Bounds"):
//! however much idle time a fix removes, the device still has to do its
//! busy work.
//!
//! ```text
//! window      |<------------------------- window_ns ------------------------->|
//! stream 7    |   [k1......]        [k3...]                                    |
//! stream 9    |        [k2.......]            [m1]                             |
//! busy_ns     |   [..............]  [.....]   [..]      union of busy rows     |
//! kernel_sum  k1 + k2 + k3 (kernels only, overlap counted twice)
//! max_speedup window_ns / (busy_ns + excluded_idle_ns): the step time if every idle ns the trace explains went away
//! ```
//!
//! `busy_ns` is the parallel bound (work keeps its overlap); `kernel_sum_ns`
//! is the sequential one for kernels alone (Benanza's sequential mode,
//! with the recorded kernel times standing in for its best library times).
//!
//! Idle time the trace does not show a fix for stays in the bound
//! ([`Bounds::with_idle`]): work that sat queued for a reason outside the
//! trace (cause `queued`), one-off graph capture (`graph_capture`), and
//! gaps nothing in the trace explains (`untraced`: no CPU activity was
//! recorded then, as at a capture's edges). Counting those as removable
//! promised HTA's triton example a 7,577,452× speedup from 13.3 s of a
//! capture with no CPU activity.

use crate::causes::{Cause, CauseTotals};
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
    /// Idle time the bound does not count as removable: work queued for a
    /// reason outside the trace (cause `queued`), one-off CUDA/HIP graph
    /// capture (cause `graph_capture`) and idle time nothing in the trace
    /// explains (cause `untraced`).
    #[serde(default)]
    pub excluded_idle_ns: Ns,
    /// `window_ns / (busy_ns + excluded_idle_ns)`: the largest speedup
    /// removing the idle time the trace explains can give (1 when there is
    /// none; 0 when nothing ran).
    pub max_speedup: f64,
}

impl Bounds {
    /// The bounds with the idle time that stays (`queued`,
    /// `graph_capture` and `untraced` in `idle`) out of what removing idle
    /// time can gain.
    pub fn with_idle(mut self, idle: &CauseTotals) -> Bounds {
        self.excluded_idle_ns =
            idle.get(Cause::Queued) + idle.get(Cause::GraphCapture) + idle.get(Cause::Untraced);
        self.max_speedup = speedup(self.window_ns, self.busy_ns + self.excluded_idle_ns);
        self
    }
}

/// `window / floor` to three decimals (rounding keeps JSON stable across
/// platforms); 0 when `floor` is 0.
fn speedup(window: Ns, floor: Ns) -> f64 {
    if floor > 0 && window > 0 {
        (window as f64 / floor as f64 * 1000.0).round() / 1000.0
    } else {
        0.0
    }
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
        excluded_idle_ns: 0,
        max_speedup: if busy_ns > 0 {
            speedup(window_ns, busy_ns)
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
        // 20 ns of the 70 idle were queued for a reason outside the trace.
        let mut idle = CauseTotals::default();
        idle.add(Cause::Queued, 20);
        idle.add(Cause::Sync, 50);
        let kept = got.with_idle(&idle);
        assert_eq!(kept.excluded_idle_ns, 20);
        assert_eq!(kept.max_speedup, 2.0);
        // 15 of the sync's 50 had no CPU activity to explain them: they
        // stay too.
        let mut idle = CauseTotals::default();
        idle.add(Cause::Queued, 20);
        idle.add(Cause::Sync, 35);
        idle.add(Cause::Untraced, 15);
        let kept = got.with_idle(&idle);
        assert_eq!(kept.excluded_idle_ns, 35);
        assert_eq!(kept.max_speedup, 1.538);
    }
}

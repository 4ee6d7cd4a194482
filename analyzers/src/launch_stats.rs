//! Kernel launch statistics (HTA's `get_cuda_kernel_launch_stats`,
//! docs/analysis.md, "Launch statistics"), fixed: every launch path counts, and a graph launch is
//! one launch.
//!
//! ```text
//! cpu   [cudaLaunchKernel c=5]
//!       |<-- cpu_duration -->|<- launch_delay ->|
//! gpu                                           [kernel c=5]
//!                                               |gpu_duration|
//! ```
//!
//! A launch is any runtime or driver call with at least one busy GPU row of
//! the same correlation id: `cudaLaunchKernel`, `cuLaunchKernel` (Triton),
//! `hipLaunchKernel`, `cudaMemcpyAsync`, `cudaGraphLaunch`... No name list, so
//! new launch APIs cannot be missed. HTA instead pairs a fixed list of five
//! names with each GPU row, so it misses `cuLaunchKernel`, every `hip*` call
//! and graph launches.
//!
//! A `cudaGraphLaunch` replays many kernels under one correlation id. It is
//! one launch here: its GPU time is from the first of its GPU rows' starts to
//! the last of their ends (what the one call made the GPU do), and its
//! launch delay is measured to the first of them.

use gapscope_collectors::trace::{CallRow, Ns, Trace};
use serde::{Deserialize, Serialize};

/// Thresholds of the three HTA "findings", HTA's defaults.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LaunchOptions {
    /// A call longer than this is a runtime outlier (HTA: 50 µs).
    pub runtime_cutoff_ns: Ns,
    /// A delay longer than this is a launch-delay outlier (HTA: 100 µs).
    pub launch_delay_cutoff_ns: Ns,
}

impl Default for LaunchOptions {
    fn default() -> Self {
        LaunchOptions {
            runtime_cutoff_ns: 50_000,
            launch_delay_cutoff_ns: 100_000,
        }
    }
}

/// One launch: a runtime call and the GPU work it caused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Launch {
    /// The call's row in `trace.runtime`.
    pub runtime_row: CallRow,
    /// Device of its (first) GPU row.
    pub device: u32,
    /// How many busy GPU rows it caused (more than 1 for graph launches).
    pub gpu_rows: u32,
    /// Duration of the call on the CPU.
    pub cpu_duration: Ns,
    /// First GPU start to last GPU end of its rows.
    pub gpu_duration: Ns,
    /// First GPU start minus the end of the call, 0 if the GPU started first.
    pub launch_delay: Ns,
}

/// Every launch of `trace`, in order of the call's start.
pub fn launches(trace: &Trace) -> Vec<Launch> {
    let n = trace.runtime.len();
    // Per runtime row: (first gpu start, last gpu end, rows, device).
    let mut agg: Vec<(Ns, Ns, u32, u32)> = vec![(Ns::MAX, Ns::MIN, 0, 0); n];
    for i in 0..trace.gpu.len() {
        let Some(r) = trace.links.gpu_launch[i].filter(|_| trace.gpu.is_busy(i)) else {
            continue;
        };
        let a = &mut agg[r.index()];
        if a.2 == 0 {
            a.3 = trace.gpu.device[i];
        }
        a.0 = a.0.min(trace.gpu.start[i]);
        a.1 = a.1.max(trace.gpu.end[i]);
        a.2 += 1;
    }
    agg.iter()
        .enumerate()
        .filter(|(_, a)| a.2 > 0)
        .map(|(r, &(gs, ge, rows, device))| {
            let (cs, ce) = (trace.runtime.start[r], trace.runtime.end[r]);
            Launch {
                runtime_row: CallRow::new(r),
                device,
                gpu_rows: rows,
                cpu_duration: ce - cs,
                gpu_duration: ge - gs,
                launch_delay: (gs - ce).max(0),
            }
        })
        .collect()
}

/// Percentiles of a distribution, in ns (nearest rank; 0 when empty).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Percentiles {
    /// Median.
    pub p50: Ns,
    /// 90th percentile.
    pub p90: Ns,
    /// 99th percentile.
    pub p99: Ns,
    /// Maximum.
    pub max: Ns,
}

impl Percentiles {
    /// Percentiles of `values` (sorted here).
    pub fn of(mut values: Vec<Ns>) -> Self {
        values.sort_unstable();
        let at = |p: usize| -> Ns {
            if values.is_empty() {
                return 0;
            }
            // Nearest rank: the smallest value with at least p% at or below it.
            let rank = (p * values.len()).div_ceil(100).max(1);
            values[rank - 1]
        };
        Percentiles {
            p50: at(50),
            p90: at(90),
            p99: at(99),
            max: values.last().copied().unwrap_or(0),
        }
    }
}

/// Summary of the launches of one device.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LaunchStats {
    /// Number of launches.
    pub count: u64,
    /// Of which graph launches (more than one GPU row).
    pub graph_launches: u64,
    /// Launches whose call took at most the runtime cutoff and whose GPU
    /// work took less than the call (HTA's "short kernels").
    pub short_kernels: u64,
    /// Calls longer than the runtime cutoff.
    pub runtime_outliers: u64,
    /// Launch delays longer than the delay cutoff.
    pub launch_delay_outliers: u64,
    /// Distribution of launch delays.
    pub launch_delay_ns: Percentiles,
    /// Distribution of call durations.
    pub cpu_duration_ns: Percentiles,
}

impl LaunchStats {
    /// Summarises `launches` (already restricted to one device).
    pub fn of<'a>(launches: impl IntoIterator<Item = &'a Launch>, opts: &LaunchOptions) -> Self {
        let mut s = LaunchStats::default();
        let (mut delays, mut cpu) = (Vec::new(), Vec::new());
        for l in launches {
            s.count += 1;
            s.graph_launches += u64::from(l.gpu_rows > 1);
            let quick_call = l.cpu_duration <= opts.runtime_cutoff_ns;
            s.short_kernels += u64::from(quick_call && l.gpu_duration < l.cpu_duration);
            s.runtime_outliers += u64::from(!quick_call);
            s.launch_delay_outliers += u64::from(l.launch_delay > opts.launch_delay_cutoff_ns);
            delays.push(l.launch_delay);
            cpu.push(l.cpu_duration);
        }
        s.launch_delay_ns = Percentiles::of(delays);
        s.cpu_duration_ns = Percentiles::of(cpu);
        s
    }
}

/// Launch statistics per device with launches, sorted by device.
pub fn launch_stats(trace: &Trace, opts: &LaunchOptions) -> Vec<(u32, LaunchStats)> {
    stats_by_device(&launches(trace), opts)
}

/// Launch statistics of `all` per device, sorted by device.
pub fn stats_by_device(all: &[Launch], opts: &LaunchOptions) -> Vec<(u32, LaunchStats)> {
    let mut devices: Vec<u32> = all.iter().map(|l| l.device).collect();
    devices.sort_unstable();
    devices.dedup();
    devices
        .into_iter()
        .map(|d| (d, LaunchStats::of(all.iter().filter(|l| l.device == d), opts)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let p = Percentiles::of((1..=100).rev().collect());
        assert_eq!((p.p50, p.p90, p.p99, p.max), (50, 90, 99, 100));
        assert_eq!(Percentiles::of(vec![]), Percentiles::default());
        assert_eq!(Percentiles::of(vec![7]).p50, 7);
    }
}

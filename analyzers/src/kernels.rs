//! The kernel table: kernel rows grouped by name, with how many ran, how
//! long, on which devices, whether they are collectives or run on Tensor
//! Cores, and TensorBoard's mean blocks per SM and mean estimated achieved
//! occupancy; and each device's share of
//! kernel time in Tensor Core kernels.
//!
//! ```text
//! stream 7   [gemm s16816 .......][relu..][gemm s16816 ......]
//! stream 9              [nccl all_reduce .........]
//!
//! kernels    gemm s16816   2 launches, tensor cores
//!            nccl ...      1, communication
//!            relu          1
//! tensor_core_share = gemm time / (gemm + relu + nccl time)
//! ```
//!
//! Times are each row's own duration (rows of one device running at once
//! each count), over every kernel row of the analysed selection, like
//! TensorBoard's kernel view; sync records, copies and memsets are not
//! kernels.

use crate::names::{is_communication_name, is_tensor_core_name};
use gapscope_collectors::trace::{FxHashMap, GpuKind, Ns, StrId, Trace};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// Every kernel name of the selection, most time first.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct KernelTable {
    /// Sum of all kernel durations, ns.
    pub total_ns: Ns,
    /// Share of `total_ns` spent in kernels whose name says Tensor Cores
    /// ([`crate::names::is_tensor_core_name`]), 0 to 1.
    pub tensor_core_share: f64,
    /// One row per kernel name, most total time first (name breaks ties).
    pub rows: Vec<KernelGroup>,
}

/// The kernels of one name.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct KernelGroup {
    /// Full kernel name.
    pub name: String,
    /// Number of launches (rows).
    pub count: u64,
    /// Sum of their durations, ns.
    pub total_ns: Ns,
    /// The GPUs it ran on, sorted.
    pub devices: Vec<u32>,
    /// An NCCL/RCCL collective.
    pub communication: bool,
    /// Its name says it runs on Tensor Cores.
    pub tensor_core: bool,
    /// TensorBoard's "Mean Blocks Per SM": the rows' blocks (grid size)
    /// divided by their device's SM count, averaged weighted by duration;
    /// `None` when no row has both a grid and a known SM count.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mean_blocks_per_sm: Option<f64>,
    /// TensorBoard's "Mean Est. Achieved Occupancy": the rows' estimated
    /// achieved occupancy (percent, as the trace gives it), averaged
    /// weighted by duration; `None` when no row with a duration has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mean_occupancy_pct: Option<f64>,
}

/// Blocks per SM of GPU row `i`: its grid's block count over its device's
/// SM count, as Kineto computes its `blocks per SM` argument; `None` when
/// either is unknown.
pub fn blocks_per_sm(trace: &Trace, sm_counts: &HashMap<u32, u32>, i: usize) -> Option<f64> {
    let blocks: u64 = trace.gpu.grid[i].iter().map(|&x| u64::from(x)).product();
    let sms = *sm_counts.get(&trace.gpu.device[i])?;
    (blocks > 0 && sms > 0).then(|| blocks as f64 / f64::from(sms))
}

/// SM count per device id, from the trace's device table (devices with an
/// unknown count left out).
pub fn sm_counts(trace: &Trace) -> HashMap<u32, u32> {
    let d = &trace.devices;
    (0..d.len())
        .filter(|&i| d.sm_count[i] > 0)
        .map(|i| (d.id[i], d.sm_count[i]))
        .collect()
}

/// The kernel table of `trace`.
pub fn kernel_table(trace: &Trace) -> KernelTable {
    #[derive(Default)]
    struct Acc {
        count: u64,
        total_ns: Ns,
        devices: Vec<u32>,
        bps_weighted: f64,
        bps_ns: Ns,
        occ_weighted: f64,
        occ_ns: Ns,
    }
    let gpu = &trace.gpu;
    let sms = sm_counts(trace);
    let mut by_name: FxHashMap<StrId, Acc> = FxHashMap::default();
    for i in 0..gpu.len() {
        if gpu.kind[i] != GpuKind::Kernel {
            continue;
        }
        let a = by_name.entry(gpu.name[i]).or_default();
        a.count += 1;
        a.total_ns += gpu.dur(i);
        if !a.devices.contains(&gpu.device[i]) {
            a.devices.push(gpu.device[i]);
        }
        if let Some(b) = blocks_per_sm(trace, &sms, i) {
            a.bps_weighted += b * gpu.dur(i) as f64;
            a.bps_ns += gpu.dur(i);
        }
        if let Some(pct) = gpu.occupancy_pct[i] {
            a.occ_weighted += f64::from(pct) * gpu.dur(i) as f64;
            a.occ_ns += gpu.dur(i);
        }
    }
    let mut rows: Vec<KernelGroup> = by_name
        .into_iter()
        .map(|(id, mut a)| {
            let name = trace.strings.get(id).to_string();
            a.devices.sort_unstable();
            KernelGroup {
                communication: is_communication_name(&name),
                tensor_core: is_tensor_core_name(&name),
                name,
                count: a.count,
                total_ns: a.total_ns,
                devices: a.devices,
                mean_blocks_per_sm: (a.bps_ns > 0).then(|| a.bps_weighted / a.bps_ns as f64),
                mean_occupancy_pct: (a.occ_ns > 0).then(|| a.occ_weighted / a.occ_ns as f64),
            }
        })
        .collect();
    rows.sort_by(|a, b| b.total_ns.cmp(&a.total_ns).then_with(|| a.name.cmp(&b.name)));
    let total_ns = rows.iter().map(|r| r.total_ns).sum();
    let tc: Ns = rows.iter().filter(|r| r.tensor_core).map(|r| r.total_ns).sum();
    KernelTable {
        total_ns,
        tensor_core_share: share(tc, total_ns),
        rows,
    }
}

/// Share of `device`'s kernel time in Tensor Core kernels, 0 to 1 (0 when
/// it ran no kernel).
pub fn tensor_core_share(trace: &Trace, device: u32) -> f64 {
    let gpu = &trace.gpu;
    let mut tc_name: FxHashMap<StrId, bool> = FxHashMap::default();
    let (mut all, mut tc) = (0, 0);
    for i in 0..gpu.len() {
        if gpu.kind[i] != GpuKind::Kernel || gpu.device[i] != device {
            continue;
        }
        all += gpu.dur(i);
        let is_tc = *tc_name
            .entry(gpu.name[i])
            .or_insert_with(|| is_tensor_core_name(trace.strings.get(gpu.name[i])));
        if is_tc {
            tc += gpu.dur(i);
        }
    }
    share(tc, all)
}

fn share(part: Ns, whole: Ns) -> f64 {
    if whole > 0 {
        part as f64 / whole as f64
    } else {
        0.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gapscope_collectors::trace::Sketch;

    /// ```text
    /// ns         0    10   20   30   40
    /// stream 7   [h884gemm][relu][h884gemm...]     device 0, 80 SMs
    /// stream 9        [ncclKernel_AllReduce]
    /// ```
    #[test]
    fn groups_by_name_with_tensor_core_share_and_blocks_per_sm() {
        let t = Sketch::new()
            .device("V100", 80)
            .named_kernel("volta_h884gemm_64x64_nn", 7, 0, 10, 1)
            .grid([40, 1, 1])
            .named_kernel("relu", 7, 10, 15, 2)
            .named_kernel("volta_h884gemm_64x64_nn", 7, 15, 45, 3)
            .grid([160, 1, 1])
            .named_kernel("ncclKernel_AllReduce_RING_LL_Sum_float", 9, 5, 25, 0)
            .sync_record("Stream Sync", 7, 45, 50, 0)
            .finish();
        let k = kernel_table(&t);
        assert_eq!(k.total_ns, 10 + 5 + 30 + 20);
        let names: Vec<(&str, u64, Ns)> = k
            .rows
            .iter()
            .map(|r| (r.name.as_str(), r.count, r.total_ns))
            .collect();
        assert_eq!(
            names,
            [
                ("volta_h884gemm_64x64_nn", 2, 40),
                ("ncclKernel_AllReduce_RING_LL_Sum_float", 1, 20),
                ("relu", 1, 5)
            ]
        );
        assert!(k.rows[0].tensor_core && !k.rows[0].communication);
        assert!(k.rows[1].communication && !k.rows[1].tensor_core);
        // (0.5 × 10 + 2 × 30) / 40: blocks / 80 SMs, weighted by duration.
        assert_eq!(k.rows[0].mean_blocks_per_sm, Some(65.0 / 40.0));
        assert_eq!(k.rows[2].mean_blocks_per_sm, None);
        assert_eq!(k.tensor_core_share, 40.0 / 65.0);
        assert_eq!(tensor_core_share(&t, 0), 40.0 / 65.0);
        assert_eq!(tensor_core_share(&t, 1), 0.0);
    }
}

//! D12, active-but-underfilled GPU (context): kernels whose grid has fewer
//! blocks than the GPU has SMs leave most of the GPU unused while it counts
//! as busy (notes/detectors.md D12; the TensorBoard plugin's "blocks per SM
//! < 1" tooltip).
//!
//! ```text
//! H100, 132 SMs     kernel grid (8, 1, 1) = 8 blocks: 8 / 132 SMs busy
//! ```
//!
//! Evidence: kernels with a known grid and fewer blocks than the device's
//! SM count (the trace must give both). Threshold: they take at least
//! [`MIN_SHARE`] of the device's kernel time (ours: below that they do not
//! change the picture). Not idle time and not estimable from a timeline:
//! `idle_ns`, `explained_ns` and `est_savings_ns` are 0.

use super::{Cx, Draft};
use crate::format::{duration, percent_whole};
use gapscope_collectors::trace::{GpuKind, GpuRow, Ns};
use std::collections::HashMap;

/// Share of kernel time in underfilled kernels to report them (ours).
pub const MIN_SHARE: f64 = 0.10;

pub(super) fn detect(cx: &Cx) -> Option<Draft> {
    let t = cx.trace;
    let sms = (0..t.devices.len())
        .find(|&i| t.devices.id[i] == cx.device)
        .map(|i| t.devices.sm_count[i])
        .filter(|&n| n > 0)?;
    let g = &t.gpu;
    let (ws, we) = cx.window;
    let (mut kernel_ns, mut small_ns, mut count) = (0 as Ns, 0 as Ns, 0u64);
    let mut by_name: HashMap<u32, (Ns, GpuRow)> = HashMap::new();
    for i in 0..g.len() {
        if g.device[i] != cx.device || g.kind[i] != GpuKind::Kernel || g.start[i] >= we || g.end[i] <= ws {
            continue;
        }
        kernel_ns += g.dur(i);
        let blocks = g.grid[i].iter().map(|&x| u64::from(x)).product::<u64>();
        if blocks > 0 && blocks < u64::from(sms) {
            small_ns += g.dur(i);
            count += 1;
            let e = by_name.entry(g.name[i].0).or_insert((0, GpuRow::new(i)));
            e.0 += g.dur(i);
        }
    }
    if count == 0 || (small_ns as f64) < MIN_SHARE * kernel_ns as f64 {
        return None;
    }
    let (_, &(ns, row)) = by_name
        .iter()
        .max_by_key(|(k, v)| (v.0, std::cmp::Reverse(**k)))?;
    let r = row.index();
    let kname = t.strings.get(g.name[r]);
    let short: String = kname.chars().take(80).collect();
    let blocks: u64 = g.grid[r].iter().map(|&x| u64::from(x)).product();
    let mut d = Draft::new(
        "D12",
        "underfilled_kernels",
        format!(
            "{count} kernels launch fewer blocks than the {sms} SMs ({} of kernel time)",
            percent_whole(small_ns, kernel_ns)
        ),
        format!(
            "`{short}` runs {blocks} blocks on a GPU with {sms} SMs ({} in total), so most SMs \
             sit unused while the GPU counts as busy. Give each kernel more parallel work: a \
             larger batch, fusing small operators (`torch.compile`), or batching independent \
             small ops together; check the kernel with Nsight Compute.",
            duration(ns)
        ),
    );
    d.occurrences = count;
    d.primary = false;
    d.estimable = false;
    d.blame = Some(cx.launch_blame(row));
    d.evidence.push(cx.gpu_evidence(row));
    Some(d)
}

//! D12, active-but-underfilled GPU (context): kernels whose grid has fewer
//! blocks than the GPU has SMs leave SMs unused while the GPU counts as
//! busy (docs/detectors.md, D12; the TensorBoard plugin's "blocks per SM
//! < 1" tooltip).
//!
//! ```text
//! H100, 132 SMs     kernel grid (8, 1, 1)   = 8 blocks:   124 of 132 SMs idle
//!                   kernel grid (120, 1, 1) = 120 blocks:  12 of 132 SMs idle
//! ```
//!
//! Evidence: compute kernels with a known grid and fewer blocks than the
//! device's SM count (the trace must give both). Collective kernels are
//! left out: they use few blocks by design, the interconnect being their
//! limit. Each kernel leaves `1 − blocks / SMs` of the GPU unused for its
//! duration; the finding is reported when that unused SM time is at least
//! [`MIN_SHARE`] of the device's kernel time (ours: below it the picture
//! does not change) and at least [`MIN_WINDOW_SHARE`] of the window. A 120-block kernel on 132 SMs uses 91 % of them and
//! weighs a tenth of an 8-block one. Not idle time and not estimable from a
//! timeline: `idle_ns`, `explained_ns` and `est_savings_ns` are 0.

use super::{Cx, Draft};
use crate::format::{self, duration, percent_whole};
use gapscope_collectors::trace::{GpuKind, GpuRow, Ns};
use std::collections::HashMap;

/// Share of kernel time left unused by underfilled kernels (their
/// duration times the share of SMs they leave idle) to report them (ours).
pub const MIN_SHARE: f64 = 0.10;

/// ...and share of the window that unused SM time must reach too (ours, as
/// D2's floor: below 1 % filling the SMs cannot move the step time
/// measurably). A GPU idle nearly all the window makes every kernel's
/// shape moot: TraceLens' vLLM graph-capture trace runs 19.6 µs of kernels
/// in 59 ms, HTA's triton example one 1.8 µs kernel in 13.3 s.
pub const MIN_WINDOW_SHARE: f64 = 0.01;

pub(super) fn detect(cx: &Cx) -> Option<Draft> {
    let t = cx.trace;
    let sms = (0..t.devices.len())
        .find(|&i| t.devices.id[i] == cx.device)
        .map(|i| t.devices.sm_count[i])
        .filter(|&n| n > 0)?;
    let g = &t.gpu;
    let (ws, we) = cx.window;
    let (mut kernel_ns, mut small_ns, mut unused_ns, mut count) = (0 as Ns, 0 as Ns, 0f64, 0u64);
    let mut by_name: HashMap<u32, (f64, GpuRow)> = HashMap::new();
    for i in 0..g.len() {
        if g.device[i] != cx.device || g.kind[i] != GpuKind::Kernel || g.start[i] >= we || g.end[i] <= ws {
            continue;
        }
        kernel_ns += g.dur(i);
        let blocks = g.grid[i].iter().map(|&x| u64::from(x)).product::<u64>();
        if cx.comm[i] || blocks == 0 || blocks >= u64::from(sms) {
            continue;
        }
        let idle_share = 1.0 - blocks as f64 / f64::from(sms);
        small_ns += g.dur(i);
        unused_ns += g.dur(i) as f64 * idle_share;
        count += 1;
        let e = by_name.entry(g.name[i].0).or_insert((0.0, GpuRow::new(i)));
        e.0 += g.dur(i) as f64 * idle_share;
    }
    if count == 0
        || unused_ns < MIN_SHARE * kernel_ns as f64
        || unused_ns < MIN_WINDOW_SHARE * (we - ws) as f64
    {
        return None;
    }
    let (_, &(_, row)) = by_name
        .iter()
        .max_by(|a, b| a.1 .0.total_cmp(&b.1 .0).then_with(|| b.0.cmp(a.0)))?;
    let r = row.index();
    let kname = t.strings.get(g.name[r]);
    let short: String = kname.chars().take(80).collect();
    let blocks: u64 = g.grid[r].iter().map(|&x| u64::from(x)).product();
    let ns: Ns = (0..g.len())
        .filter(|&i| g.device[i] == cx.device && g.name[i] == g.name[r] && g.start[i] < we && g.end[i] > ws)
        .map(|i| g.dur(i))
        .sum();
    let idle_sms = u64::from(sms) - blocks;
    let sm = cx.platform.sm();
    let how_many = if 2 * blocks < u64::from(sms) {
        format!("most {sm} sit unused")
    } else {
        format!("some {sm} sit unused")
    };
    let mut d = Draft::new(
        "D12",
        "underfilled_kernels",
        format!(
            "{} fewer blocks than the {sms} {sm} ({} of kernel time; {} of {sm} time unused)",
            format::count(count, "kernel launches", "kernels launch"),
            percent_whole(small_ns, kernel_ns),
            percent_whole(unused_ns as Ns, kernel_ns)
        ),
        format!(
            "`{short}` runs {} on a GPU with {sms} {sm} ({} in total), so {} ({}) {} no block: \
             {how_many} while the GPU counts as busy. Give each kernel \
             more parallel work: a larger batch, fusing small operators (`torch.compile`), or \
             batching independent small ops together; check the kernel's occupancy with {}.",
            format::count(blocks, "block", "blocks"),
            duration(ns),
            // "SMs" / "CUs" without the plural's s.
            format::count(idle_sms, sm.trim_end_matches('s'), sm),
            percent_whole(idle_sms as Ns, Ns::from(sms)),
            if idle_sms == 1 { "gets" } else { "get" },
            cx.platform.kernel_profiler()
        ),
    );
    d.occurrences = count;
    d.primary = false;
    d.estimable = false;
    d.blame = Some(cx.launch_blame(row));
    d.evidence.push(cx.gpu_evidence(row));
    Some(d)
}

//! Collective communication: which GPU rows are collectives, and how much
//! of their time no compute hides (exposed communication).
//!
//! A kernel is a collective when its name says so
//! ([`is_communication_name`]) or when the operator that launched it is a
//! collective operator ([`is_collective_op_name`]):
//!
//! - names: NCCL/RCCL/MSCCL kernels (`ncclKernel_*`, `ncclDevKernel_*`,
//!   `rcclGenericKernel`, `mscclKernel_*`), and the collectives frameworks
//!   implement themselves: PyTorch's symmetric-memory
//!   `multimem_all_reduce_kernel` / `one_shot_all_reduce` /
//!   `two_shot_all_reduce`, vLLM's custom all-reduce
//!   `cross_device_reduce_1stage` / `_2stage`, and any kernel named for a
//!   collective (`all_reduce`, `all_gather`, `reduce_scatter`,
//!   `all_to_all`, with or without the underscore);
//! - launching operators: `record_param_comms` (what c10d records around
//!   every collective, with its `Collective name` arg), `c10d::*` and
//!   `c10d_functional::*` ops, Kineto's `nccl:*` ranges, and operators
//!   named for a collective (`vllm::all_reduce`, `_C_custom_ar::all_reduce`).
//!   Every kernel launched inside one is part of that collective.
//!
//! ```text
//! thread 1    [vllm::all_reduce.................]
//!               [cudaLaunchKernel]
//! stream 7                        [multimem_all_reduce_kernel]   communication
//! stream 7    [gemm....]                                         compute
//! ```
//!
//! Exposed communication is collective time with no compute kernel running
//! on the device ([`exposed`]): what the breakdown counts as
//! `communication_ns`, since compute owns the time where the two overlap.

use crate::intervals::{subtract, total, union, Span};
use crate::names::{is_collective_op_name, is_communication_name};
use gapscope_collectors::trace::{GpuKind, Ns, Trace};

/// For every GPU row of `trace`: whether it is a collective (a kernel whose
/// name is a collective's, or launched inside a collective operator).
/// Copies and memsets are never collectives here: the breakdown counts
/// them as data movement.
pub fn communication_rows(trace: &Trace) -> Vec<bool> {
    let ops = &trace.cpu_ops;
    let mut name_is: Vec<Option<bool>> = vec![None; trace.strings.len()];
    // Parents precede children: a row is inside a collective when it or
    // an ancestor is one.
    let mut inside = vec![false; ops.len()];
    for i in 0..ops.len() {
        let id = ops.name[i].0 as usize;
        let own = *name_is[id].get_or_insert_with(|| is_collective_op_name(trace.strings.get(ops.name[i])));
        inside[i] = own || ops.parent[i].is_some_and(|p| inside[p.index()]);
    }
    let mut kernel_is: Vec<Option<bool>> = vec![None; trace.strings.len()];
    let g = &trace.gpu;
    (0..g.len())
        .map(|i| {
            if g.kind[i] != GpuKind::Kernel {
                return false;
            }
            let id = g.name[i].0 as usize;
            if *kernel_is[id].get_or_insert_with(|| is_communication_name(trace.strings.get(g.name[i]))) {
                return true;
            }
            trace.links.gpu_launch[i]
                .and_then(|c| trace.links.runtime_op[c.index()])
                .is_some_and(|op| inside[op.index()])
        })
        .collect()
}

/// Collective time of one device over a window, and how much of it compute
/// hides.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Exposure {
    /// Union of the device's collective kernels inside the window, ns.
    pub communication_ns: Ns,
    /// The part with no compute kernel running on the device, ns.
    pub exposed_ns: Ns,
    /// Collective kernels inside the window.
    pub kernels: u64,
}

/// The collective time of `device` inside `window` and its exposed part,
/// with `comm` from [`communication_rows`].
pub fn exposed(trace: &Trace, comm: &[bool], device: u32, (ws, we): Span) -> Exposure {
    let g = &trace.gpu;
    let (mut c, mut k) = (Vec::new(), Vec::new());
    let mut kernels = 0;
    for (i, &is_comm) in comm.iter().enumerate().take(g.len()) {
        if g.device[i] != device || g.kind[i] != GpuKind::Kernel {
            continue;
        }
        let (s, e) = (g.start[i].max(ws), g.end[i].min(we));
        if e <= s {
            continue;
        }
        if is_comm {
            c.push((s, e));
            kernels += 1;
        } else {
            k.push((s, e));
        }
    }
    let c = union(c);
    let k = union(k);
    Exposure {
        communication_ns: total(&c),
        exposed_ns: total(&subtract(&c, &k)),
        kernels,
    }
}

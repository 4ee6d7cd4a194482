//! What a GPU row counts as: gapscope's own classes (for the breakdown) and
//! HTA's kernel types (for the HTA-compatible temporal block).
//!
//! Both are decided once per distinct name ([`ClassTable`]) because a trace
//! has millions of rows but only thousands of names.

use crate::names::is_communication_name;
use gapscope_collectors::trace::{CopyKind, GpuKind, StrId, Trace};

/// gapscope's class of a busy GPU row, in breakdown priority order: where
/// classes overlap in time, the earlier one owns the nanosecond.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum WorkClass {
    /// A kernel that is not a collective.
    Compute,
    /// An NCCL/RCCL collective kernel.
    Communication,
    /// A memory copy.
    Memcpy,
    /// A memory set.
    Memset,
}

/// gapscope's class of GPU row `i`; `None` for sync records, which mark a
/// wait and are never busy.
pub fn classify(trace: &Trace, i: usize) -> Option<WorkClass> {
    class_of(trace.gpu.kind[i], trace.strings.get(trace.gpu.name[i]))
}

fn class_of(kind: GpuKind, name: &str) -> Option<WorkClass> {
    match kind {
        GpuKind::Sync => None,
        GpuKind::Memcpy => Some(WorkClass::Memcpy),
        GpuKind::Memset => Some(WorkClass::Memset),
        GpuKind::Kernel if is_communication_name(name) => Some(WorkClass::Communication),
        GpuKind::Kernel => Some(WorkClass::Compute),
    }
}

/// The four memcpy directions the breakdown reports, in priority order
/// (where copies of two directions overlap, the earlier one owns the time).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum CopyClass {
    /// Host to device.
    HtoD,
    /// Device to host.
    DtoH,
    /// Device to device.
    DtoD,
    /// Anything else: peer to peer, host to host, unknown.
    Other,
}

impl CopyClass {
    /// The report class of a row's copy kind.
    pub fn of(kind: CopyKind) -> CopyClass {
        match kind {
            CopyKind::HtoD => CopyClass::HtoD,
            CopyKind::DtoH => CopyClass::DtoH,
            CopyKind::DtoD => CopyClass::DtoD,
            CopyKind::HtoH | CopyKind::PtoP | CopyKind::None => CopyClass::Other,
        }
    }
}

/// HTA's kernel type (`get_kernel_type`, HTA 0.5.0).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum HtaKernelType {
    /// `COMPUTATION`.
    Computation,
    /// `COMMUNICATION`.
    Communication,
    /// `MEMORY`.
    Memory,
    /// `OTHER`.
    Other,
}

/// HTA 0.5.0's name-based kernel type, reproduced exactly. HTA applies its
/// patterns with Python `re.match`, anchored at the start:
///
/// - COMMUNICATION: `^nccl.*Kernel`
/// - MEMORY: `^Memcpy|^Memset|^dma`
/// - COMPUTATION: not `(^nccl.*Kernel)|(.*(Memcpy)|(Memset))|(.*Sync)`, i.e.
///   not a collective, no "Memcpy" anywhere, not starting with "Memset",
///   no "Sync" anywhere
/// - OTHER: the rest (e.g. a kernel whose name contains "Sync").
///
/// This is only the name rule. HTA's bugs (sync records and CPU ops with a
/// stream counted as GPU work) are not reproduced here but by the caller
/// never passing such rows: see [`hta_type`].
pub fn hta_kernel_type(name: &str) -> HtaKernelType {
    let collective = name.starts_with("nccl") && name[4..].contains("Kernel");
    if collective {
        HtaKernelType::Communication
    } else if name.starts_with("Memcpy") || name.starts_with("Memset") || name.starts_with("dma") {
        HtaKernelType::Memory
    } else if name.contains("Memcpy") || name.contains("Sync") {
        HtaKernelType::Other
    } else {
        HtaKernelType::Computation
    }
}

/// HTA's type of busy GPU row `i`, `None` for sync records. Copies and
/// memsets are MEMORY whatever their name (an importer may name them
/// differently from Kineto's `Memcpy HtoD (...)`).
pub fn hta_type(trace: &Trace, i: usize) -> Option<HtaKernelType> {
    hta_type_of(trace.gpu.kind[i], trace.strings.get(trace.gpu.name[i]))
}

fn hta_type_of(kind: GpuKind, name: &str) -> Option<HtaKernelType> {
    match kind {
        GpuKind::Sync => None,
        GpuKind::Memcpy | GpuKind::Memset => Some(HtaKernelType::Memory),
        GpuKind::Kernel => Some(hta_kernel_type(name)),
    }
}

/// Per-name caches of [`classify`] and [`hta_type`], so a pass over millions
/// of rows looks names up in a `Vec` instead of matching strings.
pub struct ClassTable {
    /// Communication flag per string id (only meaningful for kernel names).
    comm: Vec<bool>,
    /// HTA computation flag per string id (only meaningful for kernel names).
    hta_compute: Vec<bool>,
}

impl ClassTable {
    /// Classifies every distinct name of `trace` once.
    pub fn new(trace: &Trace) -> Self {
        let mut comm = vec![false; trace.strings.len()];
        let mut hta_compute = vec![false; trace.strings.len()];
        for (id, s) in trace.strings.iter() {
            comm[id.0 as usize] = is_communication_name(s);
            hta_compute[id.0 as usize] = hta_kernel_type(s) == HtaKernelType::Computation;
        }
        ClassTable { comm, hta_compute }
    }

    /// [`classify`] of GPU row `i`, from the cache.
    pub fn class(&self, trace: &Trace, i: usize) -> Option<WorkClass> {
        match trace.gpu.kind[i] {
            GpuKind::Sync => None,
            GpuKind::Memcpy => Some(WorkClass::Memcpy),
            GpuKind::Memset => Some(WorkClass::Memset),
            GpuKind::Kernel if self.is_comm(trace.gpu.name[i]) => Some(WorkClass::Communication),
            GpuKind::Kernel => Some(WorkClass::Compute),
        }
    }

    /// True when GPU row `i` is HTA COMPUTATION (a busy kernel whose name is
    /// not a collective, copy, memset or sync).
    pub fn is_hta_compute(&self, trace: &Trace, i: usize) -> bool {
        trace.gpu.kind[i] == GpuKind::Kernel && self.hta_compute[trace.gpu.name[i].0 as usize]
    }

    fn is_comm(&self, name: StrId) -> bool {
        self.comm[name.0 as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hta_types_follow_the_050_regexes() {
        use HtaKernelType::*;
        let cases = [
            ("ncclKernel_AllReduce_RING_LL_Sum_float", Communication),
            ("ncclDevKernel_Broadcast", Communication),
            // `^nccl.*Kernel` needs "Kernel" after the prefix.
            ("ncclSomething", Computation),
            ("Memcpy HtoD (Pageable -> Device)", Memory),
            ("Memset (Device)", Memory),
            ("dma_copy", Memory),
            ("void at::native::copy_Memcpy_like", Other),
            ("Stream Sync", Other),
            ("Stream Wait Event", Computation),
            ("void at::native::vectorized_elementwise_kernel<4>", Computation),
        ];
        for (name, want) in cases {
            assert_eq!(hta_kernel_type(name), want, "{name}");
        }
    }

    #[test]
    fn kinds_decide_before_names() {
        assert_eq!(class_of(GpuKind::Sync, "gemm"), None);
        assert_eq!(class_of(GpuKind::Memcpy, "x"), Some(WorkClass::Memcpy));
        assert_eq!(
            class_of(GpuKind::Kernel, "ncclKernel_x"),
            Some(WorkClass::Communication)
        );
        assert_eq!(hta_type_of(GpuKind::Memset, "fill"), Some(HtaKernelType::Memory));
        assert_eq!(hta_type_of(GpuKind::Sync, "Stream Wait Event"), None);
    }
}

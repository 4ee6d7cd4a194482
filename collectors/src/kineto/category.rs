//! What a Kineto category means for gapscope: which table a complete event
//! goes to, and what a copy's name says about its direction and memory.
//!
//! Category names are Kineto's `ActivityType` names (`libkineto/src/
//! ActivityType.cpp`) plus the capitalised ones of 2021-era traces
//! (`Operator`, `Runtime`, `Kernel`, `Memcpy`, `Memset`).

use crate::trace::{ApiKind, CopyKind, CpuOpKind, GpuKind, MarkerKind, MemKind};

/// Where a complete (`X` or `B`/`E`) event goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Class {
    /// A CPU range in `cpu_ops`.
    Cpu(CpuOpKind),
    /// A runtime/driver API call.
    Runtime(ApiKind),
    /// GPU work (or a sync record) in `gpu`.
    Gpu(GpuKind),
    /// A GPU-side marker that is not work.
    GpuMarker(MarkerKind),
    /// A category we do not know: kept as a CPU range of kind `Other`.
    Unknown,
}

/// Classifies a complete event by category and name.
pub fn classify(cat: &str, name: &str) -> Class {
    let class = match cat {
        "cpu_op" | "Operator" | "operator" => Class::Cpu(CpuOpKind::Operator),
        "user_annotation" | "User annotation" => Class::Cpu(CpuOpKind::UserAnnotation),
        "python_function" | "Python" | "python" => Class::Cpu(CpuOpKind::PythonFunction),
        // The profiler's own span around the whole recording, on pid "Spans":
        // a CPU range, never GPU work.
        "Trace" => Class::Cpu(CpuOpKind::Other),
        // ROCm traces keep the `cuda_runtime` category for hip* calls.
        "cuda_runtime"
        | "Runtime"
        | "hip_runtime"
        | "xpu_runtime"
        | "mtia_runtime"
        | "privateuse1_runtime" => Class::Runtime(ApiKind::Runtime),
        "cuda_driver" | "Driver" | "privateuse1_driver" => Class::Runtime(ApiKind::Driver),
        "kernel" | "Kernel" => Class::Gpu(GpuKind::Kernel),
        "gpu_memcpy" | "Memcpy" => Class::Gpu(GpuKind::Memcpy),
        "gpu_memset" | "Memset" => Class::Gpu(GpuKind::Memset),
        "cuda_sync" => Class::Gpu(GpuKind::Sync),
        "gpu_user_annotation" => Class::GpuMarker(MarkerKind::GpuAnnotation),
        // CUPTI range-profiler replays: a kernel measured in isolation with
        // counters, whose duration is the replay's, not the run's.
        "cuda_profiler_range" => Class::GpuMarker(MarkerKind::CounterRange),
        "overhead" | "Overhead" => Class::GpuMarker(MarkerKind::ProfilerOverhead),
        _ if name == "CUPTI Overhead" => Class::GpuMarker(MarkerKind::ProfilerOverhead),
        _ => Class::Unknown,
    };
    match class {
        Class::Cpu(CpuOpKind::Operator | CpuOpKind::UserAnnotation) if name.starts_with("ProfilerStep#") => {
            Class::Cpu(CpuOpKind::ProfilerStep)
        }
        c => c,
    }
}

/// A copy's direction and memory kinds, read from its name
/// (`Memcpy HtoD (Pageable -> Device)`, ROCm's `Memcpy HtoD (Host -> Device)`
/// or `CopyHostToDevice`), else from ROCm's `kind` arg (`HtoD`).
pub fn copy_info(name: &str, kind_arg: Option<&str>) -> (CopyKind, MemKind, MemKind) {
    let kind = copy_kind(name)
        .or_else(|| kind_arg.and_then(copy_kind))
        .unwrap_or(CopyKind::None);
    let (src, dst) = match paren_pair(name) {
        Some((s, d)) => (mem_kind(s), mem_kind(d)),
        None => (MemKind::Unknown, MemKind::Unknown),
    };
    (kind, src, dst)
}

/// The memory a memset writes (`Memset (Device)`).
pub fn memset_mem(name: &str) -> MemKind {
    name.split_once('(')
        .and_then(|(_, rest)| rest.split_once(')'))
        .map_or(MemKind::Unknown, |(m, _)| mem_kind(m))
}

fn copy_kind(text: &str) -> Option<CopyKind> {
    const KINDS: [(&str, &str, CopyKind); 5] = [
        ("HtoD", "HostToDevice", CopyKind::HtoD),
        ("DtoH", "DeviceToHost", CopyKind::DtoH),
        ("DtoD", "DeviceToDevice", CopyKind::DtoD),
        ("HtoH", "HostToHost", CopyKind::HtoH),
        ("PtoP", "PeerToPeer", CopyKind::PtoP),
    ];
    KINDS
        .iter()
        .find(|(short, long, _)| text.contains(short) || text.contains(long))
        .map(|&(_, _, k)| k)
}

/// `"... (A -> B)"` → `("A", "B")`.
fn paren_pair(name: &str) -> Option<(&str, &str)> {
    let (_, rest) = name.split_once('(')?;
    let (inner, _) = rest.split_once(')')?;
    let (a, b) = inner.split_once("->")?;
    Some((a.trim(), b.trim()))
}

fn mem_kind(s: &str) -> MemKind {
    match s.trim() {
        "Pageable" => MemKind::Pageable,
        "Pinned" => MemKind::Pinned,
        "Device" => MemKind::Device,
        "Managed" => MemKind::Managed,
        "Array" => MemKind::Array,
        // ROCm writes "Host" without saying whether it is pinned.
        _ => MemKind::Unknown,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_current_and_2021_categories() {
        assert_eq!(classify("cpu_op", "aten::mm"), Class::Cpu(CpuOpKind::Operator));
        assert_eq!(classify("Operator", "aten::mm"), Class::Cpu(CpuOpKind::Operator));
        assert_eq!(
            classify("user_annotation", "ProfilerStep#3"),
            Class::Cpu(CpuOpKind::ProfilerStep)
        );
        assert_eq!(
            classify("cpu_op", "ProfilerStep#3"),
            Class::Cpu(CpuOpKind::ProfilerStep)
        );
        assert_eq!(
            classify("python_function", "a.py(1): f"),
            Class::Cpu(CpuOpKind::PythonFunction)
        );
        assert_eq!(
            classify("Runtime", "cudaLaunchKernel"),
            Class::Runtime(ApiKind::Runtime)
        );
        assert_eq!(
            classify("cuda_runtime", "hipLaunchKernel"),
            Class::Runtime(ApiKind::Runtime)
        );
        assert_eq!(
            classify("cuda_driver", "cuLaunchKernel"),
            Class::Runtime(ApiKind::Driver)
        );
        assert_eq!(classify("Kernel", "k"), Class::Gpu(GpuKind::Kernel));
        assert_eq!(classify("cuda_sync", "Stream Sync"), Class::Gpu(GpuKind::Sync));
        assert_eq!(
            classify("gpu_user_annotation", "ProfilerStep#1"),
            Class::GpuMarker(MarkerKind::GpuAnnotation)
        );
        assert_eq!(
            classify("cuda_profiler_range", "ampere_sgemm_32x32_sliced1x4_tn"),
            Class::GpuMarker(MarkerKind::CounterRange)
        );
        assert_eq!(
            classify("Trace", "PyTorch Profiler (0)"),
            Class::Cpu(CpuOpKind::Other)
        );
        assert_eq!(
            classify("", "CUPTI Overhead"),
            Class::GpuMarker(MarkerKind::ProfilerOverhead)
        );
        assert_eq!(classify("something_new", "x"), Class::Unknown);
    }

    #[test]
    fn reads_copy_direction_and_memory_from_names() {
        use CopyKind::{DtoD, DtoH, HtoD, PtoP};
        use MemKind::*;
        assert_eq!(
            copy_info("Memcpy HtoD (Pageable -> Device)", None),
            (HtoD, Pageable, Device)
        );
        assert_eq!(
            copy_info("Memcpy DtoH (Device -> Pinned)", None),
            (DtoH, Device, Pinned)
        );
        assert_eq!(
            copy_info("Memcpy DtoD (Device -> Device)", None),
            (DtoD, Device, Device)
        );
        assert_eq!(
            copy_info("Memcpy PtoP (Device -> Device)", None),
            (PtoP, Device, Device)
        );
        assert_eq!(
            copy_info("Memcpy HtoD (Host -> Device)", Some("HtoD")),
            (HtoD, Unknown, Device)
        );
        assert_eq!(copy_info("CopyDeviceToHost", None), (DtoH, Unknown, Unknown));
        assert_eq!(copy_info("copy", Some("DtoH")), (DtoH, Unknown, Unknown));
        assert_eq!(copy_info("copy", None), (CopyKind::None, Unknown, Unknown));
        assert_eq!(memset_mem("Memset (Device)"), Device);
        assert_eq!(memset_mem("Memset"), Unknown);
    }
}

//! The GPU software stack a trace was recorded on, so that hints name the
//! tools, APIs and settings of that stack: a ROCm trace gets `hip*` calls,
//! `rocm-smi` and ROCm's environment variables, never CUDA-only advice.
//!
//! PyTorch's own API is the same on both (`torch.cuda.*`, `device="cuda"`,
//! `torch.cuda.graph` run HIP graphs on ROCm), so hints keep it as is.

use gapscope_collectors::trace::Trace;

/// CUDA (NVIDIA) or ROCm (AMD).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Platform {
    /// NVIDIA GPUs through the CUDA runtime and driver.
    #[default]
    Cuda,
    /// AMD GPUs through HIP.
    Rocm,
}

impl Platform {
    /// ROCm when the trace's runtime calls are HIP's (`hipLaunchKernel`,
    /// `hipMemcpyWithStream`, ...) or a device is an AMD one; CUDA
    /// otherwise.
    pub fn of(trace: &Trace) -> Platform {
        let hip_call = trace
            .runtime
            .name
            .iter()
            .take(10_000)
            .any(|&n| trace.strings.get(n).trim_start_matches('_').starts_with("hip"));
        let amd_device = trace.devices.name.iter().any(|&n| {
            let s = trace.strings.get(n);
            s.contains("AMD") || s.contains("Instinct") || s.contains("Radeon")
        });
        if hip_call || amd_device {
            Platform::Rocm
        } else {
            Platform::Cuda
        }
    }

    /// `CUDA` or `HIP`, for "a CUDA graph" / "a HIP graph".
    pub fn name(self) -> &'static str {
        match self {
            Platform::Cuda => "CUDA",
            Platform::Rocm => "HIP",
        }
    }

    /// A runtime API in this platform's spelling: `cudaMemcpyAsync` becomes
    /// `hipMemcpyAsync` on ROCm.
    pub fn api(self, cuda: &str) -> String {
        match self {
            Platform::Cuda => cuda.to_string(),
            Platform::Rocm => match cuda.strip_prefix("cuda") {
                Some(rest) => format!("hip{rest}"),
                None => cuda.to_string(),
            },
        }
    }

    /// How to see which processes use the GPU.
    pub fn process_list(self) -> &'static str {
        match self {
            Platform::Cuda => "`nvidia-smi`, and whether MPS or time-slicing shares the GPU",
            Platform::Rocm => "`rocm-smi --showpids` or `amd-smi process`",
        }
    }

    /// The setting that loads every kernel at startup instead of on its
    /// first launch.
    pub fn eager_loading(self) -> &'static str {
        match self {
            Platform::Cuda => "`CUDA_MODULE_LOADING=EAGER`",
            Platform::Rocm => "`HIP_ENABLE_DEFERRED_LOADING=0`",
        }
    }

    /// What the GPU's multiprocessors are called: `SMs` (CUDA) or `CUs`
    /// (ROCm's compute units).
    pub fn sm(self) -> &'static str {
        match self {
            Platform::Cuda => "SMs",
            Platform::Rocm => "CUs",
        }
    }

    /// The environment variable that configures PyTorch's caching
    /// allocator on this platform.
    pub fn alloc_conf(self) -> &'static str {
        match self {
            Platform::Cuda => "PYTORCH_CUDA_ALLOC_CONF",
            Platform::Rocm => "PYTORCH_HIP_ALLOC_CONF",
        }
    }

    /// The per-kernel profiler.
    pub fn kernel_profiler(self) -> &'static str {
        match self {
            Platform::Cuda => "Nsight Compute (`ncu`)",
            Platform::Rocm => "`rocprof-compute`",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gapscope_collectors::trace::*;

    #[test]
    fn hip_calls_make_a_rocm_trace() {
        let mut b = TraceBuilder::new();
        let t = b.thread(1, 1);
        let n = b.intern("hipLaunchKernel");
        b.push_runtime(RuntimeCall::new(t, 0, 1, n, 1));
        let p = Platform::of(&b.finish());
        assert_eq!(p, Platform::Rocm);
        assert_eq!(p.api("cudaMemcpyAsync"), "hipMemcpyAsync");
        assert_eq!(p.api("torch.cuda.synchronize"), "torch.cuda.synchronize");
        let mut b = TraceBuilder::new();
        let t = b.thread(1, 1);
        let n = b.intern("cudaLaunchKernel");
        b.push_runtime(RuntimeCall::new(t, 0, 1, n, 1));
        assert_eq!(Platform::of(&b.finish()), Platform::Cuda);
    }
}

//! The one vocabulary of names: what a runtime API name, a kernel name or a
//! CPU range name says about the row that carries it. Every analysis and
//! view asks here, so a name means the same thing everywhere.
//!
//! API predicates take the name as the trace writes it; leading underscores
//! that some tracers add (`__cudaLaunchKernel`) are ignored. CUDA runtime
//! (`cuda*`), driver (`cu*`) and HIP (`hip*`) spellings are all recognised.

// Shared with the importer, which gives a copy its call's size.
pub use gapscope_collectors::trace::api::{api_name, is_memcpy_api};

/// The calls that block the host until device work has finished: stream,
/// device, context and event synchronize (CUDA's "API synchronization
/// behavior"; `cudaThreadSynchronize` and `hipCtxSynchronize` are the
/// deprecated spellings of device synchronize).
const SYNC_APIS: [&str; 11] = [
    "cudaStreamSynchronize",
    "cudaDeviceSynchronize",
    "cudaEventSynchronize",
    "cudaThreadSynchronize",
    "cuStreamSynchronize",
    "cuCtxSynchronize",
    "cuEventSynchronize",
    "hipStreamSynchronize",
    "hipDeviceSynchronize",
    "hipEventSynchronize",
    "hipCtxSynchronize",
];

/// Sync: a synchronize call (stream, device, context or event) that blocks
/// the calling thread until the work it waits for is done.
pub fn is_sync_api(name: &str) -> bool {
    let api = api_name(name);
    SYNC_APIS.iter().any(|s| api.starts_with(s))
}

/// What a synchronize call waits for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SyncScope {
    /// Every stream of the device (`cudaDeviceSynchronize`, the context and
    /// thread forms).
    Device,
    /// One stream (`cudaStreamSynchronize`).
    Stream,
    /// The work queued before one recorded event, on the event's stream
    /// (`cudaEventSynchronize`).
    Event,
}

/// The scope of synchronize call `name`; `None` when it is not one
/// ([`is_sync_api`]).
pub fn sync_scope(name: &str) -> Option<SyncScope> {
    if !is_sync_api(name) {
        None
    } else if is_stream_sync_api(name) {
        Some(SyncScope::Stream)
    } else if api_name(name).contains("EventSynchronize") {
        Some(SyncScope::Event)
    } else {
        Some(SyncScope::Device)
    }
}

/// Event elapsed time: reading the time between two recorded events
/// (`cudaEventElapsedTime`, `cuEventElapsedTime`, `hipEventElapsedTime`),
/// which timing code does after waiting for the later one.
pub fn is_event_elapsed_api(name: &str) -> bool {
    name.contains("EventElapsedTime")
}

/// Stream sync: a synchronize that waits for one stream only
/// (`cudaStreamSynchronize`); device and context synchronize wait for the
/// whole device, event synchronize for the work before one event
/// ([`sync_scope`]).
pub fn is_stream_sync_api(name: &str) -> bool {
    let api = api_name(name);
    [
        "cudaStreamSynchronize",
        "cuStreamSynchronize",
        "hipStreamSynchronize",
    ]
    .iter()
    .any(|s| api.starts_with(s))
}

/// Memset: a memory set call (`cudaMemsetAsync`, `cuMemsetD32`, ...).
pub fn is_memset_api(name: &str) -> bool {
    let api = api_name(name);
    ["cudaMemset", "cuMemset", "hipMemset"]
        .iter()
        .any(|p| api.starts_with(p))
}

/// Async: the stream-ordered variant of a copy or memset
/// (`cudaMemcpyAsync`), which returns before the work is done unless
/// pageable memory forces it to wait.
pub fn is_async_api(name: &str) -> bool {
    name.contains("Async")
}

/// Alloc: device and pinned-host allocator calls (`cudaMalloc`,
/// `cudaFree`, `cudaHostAlloc`, ...). Inside a training step they mean the
/// caching allocator is growing, or pinned buffers are made per copy.
pub fn is_alloc_api(name: &str) -> bool {
    const ALLOC: [&str; 12] = [
        "cudaMalloc",
        "cudaFree",
        "cudaHostAlloc",
        "cudaMallocHost",
        "cudaFreeHost",
        "cudaHostRegister",
        "cuMemAlloc",
        "cuMemFree",
        "cuMemHostAlloc",
        "hipMalloc",
        "hipFree",
        "hipHostMalloc",
    ];
    let api = api_name(name);
    ALLOC.iter().any(|p| api.starts_with(p))
}

/// Launch: a call that queues kernels (`cudaLaunchKernel`,
/// `cuLaunchKernel`, `cudaLaunchCooperativeKernel`, `cudaGraphLaunch`).
pub fn is_launch_api(name: &str) -> bool {
    name.contains("LaunchKernel")
        || name.contains("LaunchCooperativeKernel")
        || name.contains("GraphLaunch")
        || name.starts_with("cuLaunch")
}

/// Graph launch: a call that replays a captured CUDA/HIP graph, many
/// kernels under one correlation id.
pub fn is_graph_launch_api(name: &str) -> bool {
    name.contains("GraphLaunch")
}

/// Wait: a call that makes a stream wait for an event recorded on another
/// (`cudaStreamWaitEvent`). The wait happens on the GPU; the host does not
/// block.
pub fn is_wait_api(name: &str) -> bool {
    name.contains("StreamWaitEvent")
}

/// Capture begin: a stream starts capturing a CUDA/HIP graph
/// (`cudaStreamBeginCapture`, `cudaStreamBeginCaptureToGraph`,
/// `cuStreamBeginCapture_v2`, `hipStreamBeginCapture`): launches on it are
/// recorded into the graph from then on, not run.
pub fn is_capture_begin_api(name: &str) -> bool {
    name.contains("StreamBeginCapture")
}

/// Capture end: a stream stops capturing (`cudaStreamEndCapture`).
pub fn is_capture_end_api(name: &str) -> bool {
    name.contains("StreamEndCapture")
}

/// Graph setup: instantiating, uploading or destroying a CUDA/HIP graph
/// (`cudaGraphInstantiateWithFlags`, `cuGraphUpload`, `hipGraphDestroy`,
/// `cudaGraphExecDestroy`): done once per graph, not per replay.
pub fn is_graph_setup_api(name: &str) -> bool {
    name.contains("GraphInstantiate")
        || name.contains("GraphUpload")
        || name.contains("GraphDestroy")
        || name.contains("GraphExecDestroy")
}

/// Lazy loading: CUPTI's `Lazy Function Loading` record, which Kineto
/// files among its `overhead` records: the driver loading a kernel's
/// module on its first launch, a cost the program pays without a profiler.
pub fn is_lazy_loading_name(name: &str) -> bool {
    name == "Lazy Function Loading"
}

/// Wait record: Kineto's `cuda_sync` record of a stream wait
/// (`Stream Wait Event`), drawn on the waiting stream.
pub fn is_wait_record_name(name: &str) -> bool {
    name.contains("Wait Event")
}

/// Communication kernel: a collective's kernel. NCCL, RCCL and MSCCL
/// kernels (`ncclKernel_AllReduce_RING_LL_Sum_float(...)`,
/// `ncclDevKernel_AllGather_RING_LL(...)`, `void ncclKernel<...>`,
/// `rcclGenericKernel`, `mscclKernel_*`), and the collectives frameworks
/// write themselves: PyTorch's symmetric-memory
/// `multimem_all_reduce_kernel` and `one_shot_all_reduce_kernel`, vLLM's
/// custom all-reduce `cross_device_reduce_1stage`, any kernel named for a
/// collective ([`names_a_collective`]). A kernel launched inside a
/// collective operator ([`is_collective_op_name`]) is one too; that takes
/// the trace's links (`collectives::communication_rows`).
pub fn is_communication_name(name: &str) -> bool {
    let n = name.trim_start_matches("void ");
    n.starts_with("nccl")
        || n.starts_with("rccl")
        || n.starts_with("msccl")
        || name.contains("ncclKernel")
        || name.contains("ncclDevKernel")
        || name.contains("rcclKernel")
        || name.contains("rcclGenericKernel")
        || name.contains("mscclKernel")
        || names_a_collective(name)
}

/// Collective operator: a CPU range that issues a collective:
/// `record_param_comms` (what c10d records around every collective, with
/// its `Collective name` arg), `c10d::*` and `c10d_functional::*` ops,
/// Kineto's `nccl:*` / `rccl:*` ranges, and operators named for a
/// collective (`vllm::all_reduce`, `_C_custom_ar::all_reduce`: a
/// registered `namespace::op` whose op part names one). A user range that
/// merely mentions one is not: TorchRec's `## KJTAllToAllTensorsAwaitable
/// wait() ##` runs the permute kernels that follow an all-to-all, not the
/// all-to-all.
pub fn is_collective_op_name(name: &str) -> bool {
    name == "record_param_comms"
        || name.starts_with("c10d::")
        || name.starts_with("c10d_functional::")
        || name.starts_with("_c10d_functional::")
        || name.starts_with("nccl:")
        || name.starts_with("rccl:")
        || name
            .rsplit_once("::")
            .is_some_and(|(ns, op)| is_identifier(ns) && is_identifier(op) && names_a_collective(op))
}

/// A C++/Python identifier: letters, digits and underscores, not empty.
fn is_identifier(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// The name holds a collective's name: `all_reduce`, `allreduce`,
/// `all_gather`, `reduce_scatter`, `all_to_all`, `alltoall`, vLLM's
/// `cross_device_reduce`, or a `multimem_` collective (any case).
/// `broadcast` alone is not enough (`aten::broadcast_tensors`).
pub fn names_a_collective(name: &str) -> bool {
    const WORDS: [&str; 10] = [
        "all_reduce",
        "allreduce",
        "all_gather",
        "allgather",
        "reduce_scatter",
        "reducescatter",
        "all_to_all",
        "alltoall",
        "cross_device_reduce",
        "multimem_",
    ];
    let lower = name.to_ascii_lowercase();
    WORDS.iter().any(|w| lower.contains(w))
}

/// Tensor-core kernel: its name says it runs on Tensor Cores. cuBLAS and
/// cuDNN names carry the MMA shape after a precision letter (`s16816gemm`,
/// `h884`, `i8816`), CUTLASS kernels say `tensorop`, Hopper ones
/// `gmma`/`wgmma`, and NVIDIA's `xmma`/`hmma`/`wmma` kernels name the
/// instruction. cuBLAS's Hopper and Blackwell GEMMs are `nvjet_*`
/// (warpgroup MMA). On AMD, Tensile/hipBLASLt GEMMs (`Cijk_...`) name their
/// matrix-core (MFMA) instruction as `MI16x16x1`, and Composable Kernel's
/// as `xdl`. 8- and 4-bit floats (`E4m3`, `E5m2`, `E2m1`) exist only on
/// Tensor/matrix cores, so a GEMM or attention kernel in those types uses
/// them (TensorRT-LLM's `bmm_MxE4m3_...`, `fmhaSm100aKernel_QkvE4m3...`).
/// A name is all a trace has: a kernel whose name says none of this may
/// still use Tensor Cores (Triton kernels, for one).
pub fn is_tensor_core_name(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    const WORDS: [&str; 9] = [
        "tensorop", "xmma", "hmma", "wmma", "gmma", "imma", "mma_", "_mma", "nvjet_",
    ];
    const SHAPES: [&str; 9] = [
        "884", "1688", "16816", "8816", "16832", "1684", "16x8x16", "16x8x8", "64x8x16",
    ];
    WORDS.iter().any(|w| n.contains(w))
        || names_mfma_instruction(&n)
        || (n.contains("xdl") && (n.contains("gemm") || n.contains("conv")))
        || (["e4m3", "e5m2", "e2m1"].iter().any(|t| n.contains(t))
            && ["gemm", "bmm", "fmha", "attention"].iter().any(|k| n.contains(k)))
        || SHAPES.iter().any(|s| {
            n.match_indices(s).any(|(i, _)| {
                // A shape follows a precision letter (h884, s1688, i8816).
                let before = n[..i].chars().next_back();
                before.is_some_and(|c| matches!(c, 'h' | 's' | 'i' | 'f' | 'x' | 'd' | 'b' | 'c' | '_'))
            })
        })
}

/// Tensile's matrix-instruction token in a lowercased name: `_mi` then
/// three numbers joined by `x` (`_mi16x16x1_`, `_mi32x32x8_`).
fn names_mfma_instruction(lower: &str) -> bool {
    lower.match_indices("_mi").any(|(i, _)| {
        let dims = lower[i + 3..].split(|c: char| !c.is_ascii_alphanumeric()).next();
        dims.is_some_and(|d| {
            let parts: Vec<&str> = d.split('x').collect();
            parts.len() == 3
                && parts
                    .iter()
                    .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
        })
    })
}

/// Step: a `ProfilerStep#N` range, one training step.
pub fn is_step_name(name: &str) -> bool {
    name.starts_with("ProfilerStep#")
}

/// Annotation: a user range that older traces store as an operator:
/// `record_function`'s `Owner#method` (`Optimizer.step#SGD.step`,
/// `enumerate(DataLoader)#...__next__`) and `nn.Module: Linear_0`.
pub fn is_annotation_name(name: &str) -> bool {
    (name.contains('#') && !is_step_name(name)) || name.starts_with("nn.Module:")
}

/// Allocation-only operator: creates a tensor without computing anything
/// (`aten::empty`, `aten::empty_strided`, `aten::empty_like`,
/// `aten::new_empty`, `aten::resize_`). Its host time is the allocator's.
pub fn is_allocation_op(name: &str) -> bool {
    let base = name.split('.').next().unwrap_or(name);
    matches!(
        base,
        "aten::empty"
            | "aten::empty_strided"
            | "aten::empty_like"
            | "aten::new_empty"
            | "aten::new_empty_strided"
            | "aten::resize_"
    )
}

/// Data-dependent size: an operator whose result's size depends on the
/// values of its input (`aten::nonzero`, `aten::masked_select`, the
/// `aten::unique` family, `aten::repeat_interleave` without `output_size`),
/// so on a GPU it must copy that size to the host, waiting for the GPU,
/// before it can allocate the result. Boolean-mask indexing calls
/// `aten::nonzero`.
pub fn is_data_dependent_size_op(name: &str) -> bool {
    let base = name.split('.').next().unwrap_or(name);
    matches!(
        base,
        "aten::nonzero"
            | "aten::nonzero_numpy"
            | "aten::argwhere"
            | "aten::masked_select"
            | "aten::unique"
            | "aten::_unique"
            | "aten::_unique2"
            | "aten::unique_dim"
            | "aten::unique_consecutive"
            | "aten::unique_dim_consecutive"
            | "aten::repeat_interleave"
    )
}

/// Warm-up range: a range the program itself names warm-up
/// (`[param|model|warmup|forward]`, `warmup`, `warm_up_iters`, `Warm-up`):
/// benchmark harnesses run such iterations before measuring, so what is
/// inside them is not the steady state.
pub fn is_warmup_name(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    ["warmup", "warm_up", "warm-up", "warm up"]
        .iter()
        .any(|w| lower.contains(w))
}

/// DataLoader: an input-pipeline range, a DataLoader (or DataPipe)
/// `__next__`, e.g.
/// `enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__`.
pub fn is_dataloader_name(name: &str) -> bool {
    (name.contains("DataLoader") || name.contains("DataPipe")) && name.contains("__next__")
}

/// Backward: an autograd node, which only runs in a backward pass: the
/// engine's `autograd::engine::evaluate_function: AddmmBackward0` wrapper,
/// or the node itself (`AddmmBackward0`; PyTorch 1.8 wrote `AddmmBackward`;
/// a custom `torch.autograd.Function` gives `All2All_Pooled_WaitBackward`).
pub fn is_backward_name(name: &str) -> bool {
    if name.starts_with("autograd::engine::evaluate_function:") {
        return true;
    }
    let stem = name.trim_end_matches(|c: char| c.is_ascii_digit());
    stem.ends_with("Backward") && !name.contains([' ', ':', '.', '/'])
}

/// Optimizer: the ranges `torch.optim` records around a step and around
/// zeroing gradients (`Optimizer.step#SGD.step`,
/// `Optimizer.zero_grad#SGD.zero_grad`).
pub fn is_optimizer_name(name: &str) -> bool {
    name.starts_with("Optimizer.step#") || name.starts_with("Optimizer.zero_grad#")
}

/// Profiler: the profiler's own work: CUPTI buffer handling, profiler
/// overhead, and Python frames of `torch/profiler/`.
pub fn is_profiler_name(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    lower.contains("cupti")
        || lower.contains("buffer flush")
        || lower.contains("profiler overhead")
        || (is_frame(name) && name.contains("torch/profiler/"))
}

/// Frame: one Python frame, `path.py(NN): fn`.
pub fn is_frame(s: &str) -> bool {
    let Some(open) = s.find(".py(") else {
        return false;
    };
    let rest = &s[open + 4..];
    rest.find("):")
        .is_some_and(|close| close > 0 && rest[..close].bytes().all(|b| b.is_ascii_digit()))
}

/// User frame: the innermost user-code frame of a frame or of a
/// `;`-separated stack (innermost first, Kineto's `Call stack`): a
/// `path.py(NN): fn` whose path is outside installed libraries
/// (`site-packages`, `dist-packages`, `torch/`, the Python standard
/// library).
pub fn user_frame(s: &str) -> Option<&str> {
    s.split(';')
        .map(str::trim)
        .find(|f| is_frame(f) && !is_library_path(f))
}

fn is_library_path(frame: &str) -> bool {
    let path = &frame[..frame.find(".py(").unwrap_or(frame.len())];
    path.contains("site-packages")
        || path.contains("dist-packages")
        || path.starts_with("torch/")
        || path.contains("/torch/")
        || path.contains("/lib/python")
        || path.starts_with('<')
}

/// A display form of a `source` string: the user frame of a stack when
/// there is one, else its first frame, else the string itself.
pub fn display_source(s: &str) -> &str {
    user_frame(s)
        .or_else(|| s.split(';').map(str::trim).find(|f| is_frame(f)))
        .unwrap_or(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backward_and_optimizer_names() {
        for n in [
            "autograd::engine::evaluate_function: AddmmBackward0",
            "AddmmBackward0",
            "ClampBackward1",
            "TBackward",
            "All2All_Pooled_WaitBackward",
        ] {
            assert!(is_backward_name(n), "{n}");
        }
        for n in [
            "aten::addmm",
            "## backward ##",
            "torch/autograd/__init__.py(199): backward",
            "nn.Module: MyBackward",
        ] {
            assert!(!is_backward_name(n), "{n}");
        }
        assert!(is_optimizer_name("Optimizer.step#SGD.step"));
        assert!(is_optimizer_name("Optimizer.zero_grad#SGD.zero_grad"));
        assert!(!is_optimizer_name("optimizer"));
        assert!(!is_optimizer_name("Optimizer.__init__"));
    }

    #[test]
    fn warmup_and_allocation_names() {
        for n in [
            "[param|m|0|0|0|warmup|forward]",
            "warm_up_iters",
            "Warm-up",
            "## warm up ##",
        ] {
            assert!(is_warmup_name(n), "{n}");
        }
        for n in ["[param|m|0|0|0|measure|forward]", "ProfilerStep#3", "warm"] {
            assert!(!is_warmup_name(n), "{n}");
        }
        for n in [
            "aten::empty",
            "aten::empty.memory_format",
            "aten::empty_strided",
            "aten::resize_",
        ] {
            assert!(is_allocation_op(n), "{n}");
        }
        for n in ["aten::zeros", "aten::empty_cache", "aten::ones", "aten::copy_"] {
            assert!(!is_allocation_op(n), "{n}");
        }
        for n in [
            "aten::nonzero",
            "aten::masked_select",
            "aten::_unique2",
            "aten::repeat_interleave.Tensor",
        ] {
            assert!(is_data_dependent_size_op(n), "{n}");
        }
        for n in [
            "aten::is_nonzero",
            "aten::index",
            "aten::item",
            "aten::count_nonzero",
        ] {
            assert!(!is_data_dependent_size_op(n), "{n}");
        }
    }

    #[test]
    fn api_families() {
        for n in [
            "cudaStreamSynchronize",
            "__cudaDeviceSynchronize",
            "cuCtxSynchronize",
            "hipEventSynchronize",
            "cudaStreamSynchronize_ptsz",
        ] {
            assert!(is_sync_api(n), "{n}");
        }
        for n in [
            "cudaStreamWaitEvent",
            "cudaLaunchKernel",
            "cudaMemcpyAsync",
            "cudaEventRecord",
        ] {
            assert!(!is_sync_api(n), "{n}");
        }
        assert!(is_stream_sync_api("cuStreamSynchronize"));
        assert_eq!(sync_scope("cudaEventSynchronize"), Some(SyncScope::Event));
        assert_eq!(sync_scope("hipEventSynchronize"), Some(SyncScope::Event));
        assert_eq!(sync_scope("cuStreamSynchronize"), Some(SyncScope::Stream));
        assert_eq!(sync_scope("cuCtxSynchronize"), Some(SyncScope::Device));
        assert_eq!(sync_scope("__cudaDeviceSynchronize"), Some(SyncScope::Device));
        assert_eq!(sync_scope("cudaEventQuery"), None);
        assert!(is_event_elapsed_api("cudaEventElapsedTime") && !is_event_elapsed_api("cudaEventRecord"));
        assert!(!is_stream_sync_api("cudaDeviceSynchronize"));
        assert!(is_memcpy_api("cudaMemcpyAsync") && is_memcpy_api("hipMemcpyWithStream"));
        assert!(!is_memcpy_api("cudaMemsetAsync") && is_memset_api("cudaMemsetAsync"));
        assert!(is_async_api("cudaMemcpyAsync") && !is_async_api("cudaMemcpy"));
        assert!(
            is_alloc_api("cudaMallocHost") && is_alloc_api("_hipFree") && !is_alloc_api("cudaMemGetInfo")
        );
        assert!(is_launch_api("cudaLaunchKernel") && is_launch_api("cuLaunchKernelEx"));
        assert!(is_launch_api("cudaGraphLaunch") && is_graph_launch_api("hipGraphLaunch"));
        assert!(!is_launch_api("cudaMemcpyAsync"));
        assert!(is_wait_api("cudaStreamWaitEvent") && !is_wait_api("cudaEventSynchronize"));
        assert!(is_wait_record_name("Stream Wait Event") && !is_wait_record_name("Event Sync"));
        assert!(
            is_capture_begin_api("cudaStreamBeginCapture_v2")
                && is_capture_begin_api("hipStreamBeginCapture")
        );
        assert!(is_capture_end_api("cuStreamEndCapture") && !is_capture_end_api("cudaStreamBeginCapture"));
        assert!(
            is_graph_setup_api("hipGraphInstantiateWithFlags") && is_graph_setup_api("cudaGraphExecDestroy")
        );
        assert!(!is_graph_setup_api("cudaGraphLaunch"));
        assert!(
            is_lazy_loading_name("Lazy Function Loading") && !is_lazy_loading_name("Activity Buffer Request")
        );
    }

    #[test]
    fn kernel_names() {
        for n in [
            "ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)",
            "ncclDevKernel_AllGather_RING_LL(ncclDevComm*, unsigned long, ncclWork*)",
            "void ncclKernel<...>",
            "rcclGenericKernel<1>",
            "void (anonymous namespace)::multimem_all_reduce_kernel<c10::BFloat16, 16>(c10::B",
            "void vllm::cross_device_reduce_1stage<__nv_bfloat16, 8>(...)",
            "void c10d::symmetric_memory::one_shot_all_reduce_kernel<float, 16>",
        ] {
            assert!(is_communication_name(n), "{n}");
        }
        for n in [
            "volta_sgemm_128x64_nn",
            "Memcpy HtoD (Pageable -> Device)",
            "my_nccl_free_kernel",
            "void at::native::reduce_kernel<512, 1>",
            "triton_red_fused_mean_0",
        ] {
            assert!(!is_communication_name(n), "{n}");
        }
        for n in [
            "record_param_comms",
            "c10d::allreduce_",
            "nccl:all_to_all",
            "vllm::all_reduce",
            "_C_custom_ar::all_reduce",
        ] {
            assert!(is_collective_op_name(n), "{n}");
        }
        for n in [
            "aten::broadcast_tensors",
            "aten::mm",
            "aten::sum",
            "## KJTAllToAllTensorsAwaitable wait() ##",
            "## all2all_data:recat_values ##",
            "## alltoall_fwd_single ##",
        ] {
            assert!(!is_collective_op_name(n), "{n}");
        }
        for n in [
            "volta_h884gemm_64x64_ldg8_nn",
            "turing_fp16_s1688gemm_fp16_128x128_ldg8_f2f_tn",
            "ampere_fp16_s16816gemm_fp16_256x128_ldg8_f2f_stages_32x3_nn",
            "sm80_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize128x128x32",
            "void cutlass::Kernel<cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_32x6_tn_align8>(Params)",
            "sm90_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64_warpgroupsize2x1x1_execute_segment_k_off_kernel__5x_cublas_gmma",
            "volta_fp16_s884cudnn_fp16_256x128_ldg8_relu_f2f_exp_small_nhwc2nchw_tn_v1",
            "nvjet_tst_64x64_64x16_2x1_2cta_v_bz_bias_TNT",
            "Cijk_Alik_Bljk_B_BS_BH_Bias_HA_S_SAV_UserArgs_MT256x128x64_MI16x16x1_SN_LDSB1_AFC1",
            "bmm_MxE4m3_MxE2m1MxE4m3_Fp32_t128x16x256u2_s3_et128x16_m128x16x32_cga1x1x1_16dp256b_rM_TN",
            "fmhaSm100aKernel_QkvE4m3OBfloat16H64PagedKvCausalP16VarSeqQ128Kv128PersistentContext",
            "void ck::kernel_gemm_xdl_cshuffle_v3<ck::GridwiseGemm_xdl_cshuffle_v3<ck::half_t>>()",
        ] {
            assert!(is_tensor_core_name(n), "{n}");
        }
        for n in [
            "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>(int)",
            "volta_sgemm_128x64_nn",
            "ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)",
            "Memcpy HtoD (Pageable -> Device)",
            "implicit_convolve_sgemm",
            // Tensile without a matrix instruction, a token that only looks
            // like one, and an 8-bit-float kernel that multiplies nothing.
            "Cijk_Ailk_Bljk_SB_MT64x64x8_SE_K1",
            "Cijk_Ailk_Bljk_SB_MT64x64x8_MIN_x_K1",
            "void tensorrt_llm::kernels::quantize_with_block_size<__nv_fp8_e4m3>(int)",
        ] {
            assert!(!is_tensor_core_name(n), "{n}");
        }
    }

    #[test]
    fn range_names() {
        assert!(is_dataloader_name(
            "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"
        ));
        assert!(is_annotation_name("Optimizer.zero_grad#SGD.zero_grad"));
        assert!(!is_annotation_name("ProfilerStep#3"));
        assert!(is_step_name("ProfilerStep#3"));
        assert!(is_frame("train.py(42): step"));
        assert!(!is_frame("aten::mm"));
        let stack = "/x/site-packages/torch/autograd/profiler.py(614): __enter__;\
                     /x/site-packages/torch/utils/data/dataloader.py(518): __next__;\
                     resnet50_profiler_api.py(42): <module>";
        assert_eq!(user_frame(stack), Some("resnet50_profiler_api.py(42): <module>"));
        assert_eq!(display_source(stack), "resnet50_profiler_api.py(42): <module>");
        assert_eq!(user_frame("torch/nn/modules/module.py(1501): _call_impl"), None);
        assert!(is_profiler_name(
            "/x/site-packages/torch/profiler/profiler.py(313): step"
        ));
        assert!(is_profiler_name("CUPTI buffer flush"));
    }
}

//! Imports every real trace under `../shared/traces` and checks the tables
//! against counts computed independently with Python's `json` module
//! (the script is in the comment of [`EXPECTED`]).

use gapscope_collectors::kineto::{import_file, ImportOptions};
use gapscope_collectors::trace::{CpuOpKind, GpuKind, MarkerKind, Trace};
use std::path::{Path, PathBuf};

fn traces() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/traces")
}

fn import(rel: &str) -> Trace {
    let path = traces().join(rel);
    import_file(&path, &ImportOptions::default()).unwrap_or_else(|e| panic!("{e}"))
}

/// Per file: kernels, memcpys, memsets, cuda_sync records, runtime+driver
/// calls, CPU ranges (cpu_op, user_annotation, python_function, Operator,
/// Trace), ProfilerSteps, deviceProperties entries, devices with GPU work.
///
/// Computed with:
/// ```text
/// X = [e for e in d["traceEvents"] if e.get("ph") == "X"]; c = Counter(e.get("cat") for e in X)
/// kernels = c["kernel"] + c["Kernel"]; memcpy = c["gpu_memcpy"] + c["Memcpy"]; ...
/// steps = #X with cat in (cpu_op, user_annotation, Operator) and name.startswith("ProfilerStep#")
/// gpu devices = sorted({e["args"].get("device", e["pid"]) for GPU work})
/// ```
#[rustfmt::skip]
const EXPECTED: &[Expected] = &[
    ("hta/amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz", 14, 2, 0, 0, 21, 74, 2, 4, &[2]),
    ("hta/call_stack/backward_thread.json", 1, 0, 0, 0, 1, 5, 1, 0, &[0]),
    ("hta/cpu_only/rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz", 0, 0, 0, 0, 0, 16, 1, 0, &[]),
    ("hta/critical_path/alexnet/benchmark_result_2869224_1695835535_trace.json.gz", 79, 16, 3, 41, 361, 368, 0, 8, &[0]),
    ("hta/critical_path/cuda_event_sync/event_sync_trace.json.gz", 4, 1, 0, 4, 12, 12, 1, 8, &[0]),
    ("hta/critical_path/cuda_event_sync_multi_stream/event_sync_trace.json.gz", 3, 0, 3, 5, 39, 7, 0, 8, &[0]),
    ("hta/critical_path/simple_add/benchmark_result_493459_1694039959_trace.json.gz", 79, 16, 3, 41, 331, 368, 0, 8, &[0]),
    ("hta/cupti_profiler/benchmark_result_924719_1679055439_trace.json.gz", 0, 0, 0, 0, 1862, 385, 0, 8, &[]),
    ("hta/nccl_parser_config/nccl_data.json.gz", 2700, 960, 114, 0, 8740, 14389, 3, 8, &[0]),
    ("hta/ns_resolution_trace/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz", 4350, 1600, 145, 0, 15329, 23981, 5, 8, &[0]),
    ("hta/trace_diff/control/control.json.gz", 8568, 228, 654, 0, 24692, 40795, 6, 8, &[3]),
    ("hta/trace_diff/test/test.json.gz", 9876, 4856, 900, 0, 21167, 31525, 6, 2, &[1]),
    ("hta/trace_filter/sampled_rank-0.json.gz", 1154, 40, 10, 0, 1204, 2403, 2, 0, &[0]),
    ("hta/trace_filter/sampled_rank-1.json.gz", 1104, 40, 10, 0, 1154, 2368, 2, 0, &[1]),
    ("hta/triton_example/triton_example.json.gz", 1, 0, 0, 0, 2, 5, 1, 8, &[0]),
    ("kineto-tb-plugin/gpu_metrics_expected.json", 30, 2, 0, 0, 42, 180, 1, 4, &[0]),
    ("kineto-tb-plugin/gpu_metrics_input.json", 30, 2, 0, 0, 42, 180, 1, 4, &[0]),
    ("kineto-tb-plugin/resnet50_num_workers_0.worker0.1623143089861.pt.trace.json.gz", 8772, 12, 312, 0, 11923, 23647, 6, 4, &[0]),
    ("param/dlrm_8rank/worker0_step_12.1694128201545.pt.trace.json.gz", 245, 16, 0, 0, 525, 1674, 1, 8, &[0]),
    ("param/dlrm_8rank/worker1_step_12.1694128201556.pt.trace.json.gz", 310, 16, 0, 0, 527, 1674, 1, 8, &[1]),
    ("param/dlrm_8rank/worker2_step_12.1694128201554.pt.trace.json.gz", 246, 16, 0, 0, 513, 1674, 1, 8, &[2]),
    ("param/dlrm_8rank/worker3_step_12.1694128201557.pt.trace.json.gz", 315, 16, 6, 0, 541, 1674, 1, 8, &[3]),
    ("param/dlrm_8rank/worker4_step_12.1694128201547.pt.trace.json.gz", 251, 16, 6, 0, 523, 1674, 1, 8, &[4]),
    ("param/dlrm_8rank/worker5_step_12.1694128201549.pt.trace.json.gz", 245, 16, 0, 0, 505, 1674, 1, 8, &[5]),
    ("param/dlrm_8rank/worker6_step_12.1694128201553.pt.trace.json.gz", 246, 16, 0, 0, 515, 1674, 1, 8, &[6]),
    ("param/dlrm_8rank/worker7_step_12.1694128201553.pt.trace.json.gz", 246, 16, 0, 0, 504, 1674, 1, 8, &[7]),
    ("tracelens/b200/eager_trace.json.gz", 768, 161, 0, 0, 1372, 20042, 0, 8, &[0]),
    ("tracelens/h100/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz", 1465, 1, 241, 0, 1922, 8450, 1, 1, &[0]),
    ("tracelens/inference/sglang_decode/sglang_Qwen3-8B_decode.json.gz", 555, 3, 0, 0, 29, 884, 0, 1, &[9]),
    ("tracelens/inference/vllm_decode_full/capture_traces/graph_capture_rank_0.1773709742341309550.pt.trace.json.gz", 7, 3, 0, 0, 3128, 123722, 0, 8, &[2]),
    ("tracelens/inference/vllm_decode_full/graph_execution.json.gz", 425, 9, 0, 0, 20, 1085, 0, 8, &[2]),
    ("tracelens/inference/xdit_sd_3.5/profile_trace_rank_0.json.gz", 8042, 23, 1, 0, 30453, 161990, 1, 1, &[2]),
    ("tracelens/mi300/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz", 1516, 1, 0, 0, 1707, 8887, 1, 1, &[2]),
];

/// (file, kernels, memcpy, memset, sync, runtime, cpu ranges, steps, devices, active devices)
type Expected = (
    &'static str,
    usize,
    usize,
    usize,
    usize,
    usize,
    usize,
    usize,
    usize,
    &'static [u32],
);

fn gpu_count(t: &Trace, kind: GpuKind) -> usize {
    t.gpu.kind.iter().filter(|&&k| k == kind).count()
}

#[test]
fn every_shared_trace_imports_with_the_expected_rows() {
    for &(rel, kernels, memcpy, memset, sync, runtime, cpu, steps, devices, active) in EXPECTED {
        let t = import(rel);
        let got = (
            gpu_count(&t, GpuKind::Kernel),
            gpu_count(&t, GpuKind::Memcpy),
            gpu_count(&t, GpuKind::Memset),
            gpu_count(&t, GpuKind::Sync),
            t.runtime.len(),
            t.cpu_ops.len(),
            t.cpu_ops
                .kind
                .iter()
                .filter(|&&k| k == CpuOpKind::ProfilerStep)
                .count(),
            t.devices.len(),
        );
        assert_eq!(
            got,
            (kernels, memcpy, memset, sync, runtime, cpu, steps, devices),
            "{rel}"
        );
        assert_eq!(t.active_devices(), active, "{rel}");
        assert_eq!(t.meta.format, "kineto-json");
        // Nothing in these real traces is malformed: only informational counts.
        let odd: Vec<_> = t
            .diagnostics
            .counts
            .keys()
            .filter(|k| !matches!(k.as_str(), "cpu_op_partial_overlap" | "copy_direction_from_call"))
            .collect();
        assert!(odd.is_empty(), "{rel}: {odd:?} {:?}", t.diagnostics.examples);
    }
}

#[test]
fn every_file_under_shared_traces_is_covered() {
    fn walk(dir: &Path, out: &mut Vec<String>, root: &Path) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(&p, out, root);
            } else if p.to_string_lossy().contains(".json") {
                out.push(p.strip_prefix(root).unwrap().to_string_lossy().replace('\\', "/"));
            }
        }
    }
    let mut found = Vec::new();
    walk(&traces(), &mut found, &traces());
    found.sort();
    let listed: Vec<_> = EXPECTED.iter().map(|e| e.0.to_string()).collect();
    assert_eq!(found, listed);
}

#[test]
fn nanosecond_digits_survive_exactly() {
    let t = import("hta/ns_resolution_trace/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz");
    // {"cat": "cpu_op", "name": "autograd::engine::evaluate_function: DivBackward1",
    //  "ts": 1712195495519689.047, "dur": 63.813}
    let name = t
        .strings
        .lookup("autograd::engine::evaluate_function: DivBackward1")
        .unwrap();
    let abs = |i: usize| {
        (
            t.cpu_ops.start[i] + t.meta.origin_ns,
            t.cpu_ops.end[i] + t.meta.origin_ns,
        )
    };
    let rows: Vec<_> = (0..t.cpu_ops.len())
        .filter(|&i| t.cpu_ops.name[i] == name)
        .map(abs)
        .collect();
    assert!(
        rows.contains(&(1712195495519689047, 1712195495519689047 + 63813)),
        "{rows:?}"
    );
    // {"cat": "cpu_op", "name": "DivBackward1", "ts": 1712195495519695.812, "dur": 53.090}
    let name = t.strings.lookup("DivBackward1").unwrap();
    let rows: Vec<_> = (0..t.cpu_ops.len())
        .filter(|&i| t.cpu_ops.name[i] == name)
        .map(abs)
        .collect();
    assert!(
        rows.contains(&(1712195495519695812, 1712195495519695812 + 53090)),
        "{rows:?}"
    );
}

#[test]
fn the_2021_trace_maps_string_tids_and_capitalised_categories() {
    let t = import("kineto-tb-plugin/resnet50_num_workers_0.worker0.1623143089861.pt.trace.json.gz");
    // tid "25738" (string) on ops and 25738 (int) on flows are one thread.
    let main = t.threads.find(25738, 25738).expect("main thread");
    assert!(!t.cpu_ops_of(main).is_empty());
    // GPU rows take device and stream from args, not from `"tid": "stream 7"`.
    assert!(t.gpu.stream.iter().all(|&s| s == 7), "{:?}", &t.gpu.stream[..5]);
    let copy = (0..t.gpu.len())
        .find(|&i| t.gpu.kind[i] == GpuKind::Memcpy)
        .unwrap();
    assert_eq!(
        t.strings.get(t.gpu.name[copy]),
        "Memcpy HtoD (Pageable -> Device)"
    );
    assert_eq!(t.gpu.bytes[copy], 19267584);
    assert_eq!(t.gpu.external_id[copy], 537);
    // "Input Dims" become the shapes text.
    let op = (0..t.cpu_ops.len())
        .find(|&i| t.strings.get(t.cpu_ops.name[i]) == "aten::empty")
        .unwrap();
    assert_eq!(t.strings.get(t.cpu_ops.shapes[op]), "[[], [], [], [], [], []]");
    // Kernels link to their cudaLaunchKernel by correlation id.
    let linked = (0..t.gpu.len())
        .filter(|&i| t.links.gpu_launch[i].is_some())
        .count();
    assert_eq!(linked, t.gpu.len());
    assert_eq!(t.strings.get(t.devices.name[0]), "Tesla V100-DGXS-32GB");
}

#[test]
fn the_amd_trace_reads_hip_calls_and_devices() {
    let t = import("hta/amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz");
    let names: Vec<&str> = t.runtime.name.iter().map(|&n| t.strings.get(n)).collect();
    assert!(names.contains(&"hipLaunchKernel"), "{names:?}");
    assert!(names.contains(&"hipMemcpyWithStream"), "{names:?}");
    let copy = (0..t.gpu.len())
        .find(|&i| t.gpu.kind[i] == GpuKind::Memcpy)
        .unwrap();
    assert_eq!(t.gpu.device[copy], 2);
    assert_eq!(t.gpu.copy_kind[copy], gapscope_collectors::trace::CopyKind::HtoD);
    assert_eq!(t.gpu.correlation[copy], 117);
    // The record has no bytes; its call's `size` arg says 2560.
    assert_eq!(t.gpu.bytes[copy], 2560);
    assert!(t.links.gpu_launch[copy].is_some());
    let dev = (0..t.devices.len()).find(|&i| t.devices.id[i] == 0).unwrap();
    assert_eq!(t.strings.get(t.devices.name[dev]), "AMD Radeon Graphics");
    assert_eq!(t.devices.sm_count[dev], 104);
    assert_eq!(t.devices.memory_bytes[dev], 68702699520);
    assert_eq!(t.devices.compute_capability[dev], (9, 0));
    // gpu_user_annotation spans are markers on the GPU, never GPU work.
    let ann = t
        .markers
        .kind
        .iter()
        .filter(|&&k| k == MarkerKind::GpuAnnotation)
        .count();
    assert_eq!(ann, 2);
}

#[test]
fn kernel_launch_details_and_distributed_info_are_read() {
    let t = import("hta/triton_example/triton_example.json.gz");
    let k = (0..t.gpu.len())
        .find(|&i| t.gpu.kind[i] == GpuKind::Kernel)
        .unwrap();
    assert_eq!(t.strings.get(t.gpu.name[k]), "triton_poi_fused_add_cos_sin_0");
    assert_eq!((t.gpu.grid[k], t.gpu.block[k]), ([1, 1, 1], [128, 1, 1]));
    assert_eq!(
        (t.gpu.registers[k], t.gpu.shared_mem[k], t.gpu.stream[k]),
        (16, 0, 7)
    );
    let call = t.links.gpu_launch[k].expect("linked").index();
    assert_eq!(t.strings.get(t.runtime.name[call]), "cuLaunchKernel");
    assert_eq!(t.runtime.api[call], gapscope_collectors::trace::ApiKind::Driver);

    let t = import("hta/nccl_parser_config/nccl_data.json.gz");
    assert_eq!((t.meta.rank, t.meta.world_size), (Some(0), Some(2)));
    let t = import("hta/cpu_only/rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz");
    assert_eq!((t.meta.rank, t.meta.world_size), (Some(34), Some(300)));
    assert!(t.gpu.is_empty());
}

#[test]
fn sync_records_are_never_busy() {
    let t = import("hta/critical_path/alexnet/benchmark_result_2869224_1695835535_trace.json.gz");
    let syncs: Vec<usize> = (0..t.gpu.len())
        .filter(|&i| t.gpu.kind[i] == GpuKind::Sync)
        .collect();
    assert_eq!(syncs.len(), 41);
    assert!(syncs.iter().all(|&i| !t.gpu.is_busy(i)));
}

#[test]
fn thread_names_come_from_metadata_and_labels() {
    let t = import("hta/cupti_profiler/benchmark_result_924719_1679055439_trace.json.gz");
    let main = t.threads.find(924719, 924719).unwrap();
    assert_eq!(
        t.strings.get(t.threads.name[main.0 as usize]),
        "thread 924719 (python3.8)"
    );
    // The profiler's own span sits on label ids ("Spans", "PyTorch Profiler").
    let span = (0..t.threads.len())
        .find(|&i| t.strings.get(t.threads.name[i]) == "PyTorch Profiler")
        .unwrap();
    assert!(t.threads.pid[span] < 0 && t.threads.tid[span] < 0);
}

/// `(kernels named for NCCL, of them with a collective, with a group, with
/// a seq, record_param_comms ops with a collective)` of one trace.
fn collective_counts(t: &Trace) -> (usize, usize, usize, usize, usize) {
    let nccl: Vec<usize> = (0..t.gpu.len())
        .filter(|&i| t.gpu.kind[i] == GpuKind::Kernel && t.strings.get(t.gpu.name[i]).starts_with("nccl"))
        .collect();
    let with = |f: &dyn Fn(usize) -> bool| {
        nccl.iter()
            .filter(|&&i| t.gpu.collective[i].is_some_and(|c| f(c.index())))
            .count()
    };
    let ops = (0..t.cpu_ops.len())
        .filter(|&i| {
            t.strings.get(t.cpu_ops.name[i]) == "record_param_comms" && t.cpu_ops.collective[i].is_some()
        })
        .count();
    (
        nccl.len(),
        with(&|_| true),
        with(&|c| t.collectives.group[c] != gapscope_collectors::trace::Strings::EMPTY),
        with(&|c| t.collectives.seq[c].is_some()),
        ops,
    )
}

/// What PyTorch writes of a collective's identity, on the shared traces:
/// nccl_data's kernels carry their own `Process Group Name`/`Ranks` (and
/// its `record_param_comms` ops too), B200's all-gather likewise, DLRM's
/// ranks (an older PyTorch) name no group, and no trace has a `Seq`.
#[test]
fn collective_identity_is_read_from_kernels_and_their_operators() {
    let t = import("hta/nccl_parser_config/nccl_data.json.gz");
    // 21 NCCL kernels, each with its own args, and 27 `record_param_comms`.
    assert_eq!(collective_counts(&t), (21, 21, 21, 0, 27));
    let k = (0..t.gpu.len())
        .find(|&i| t.strings.get(t.gpu.name[i]).starts_with("ncclKernel_AllReduce"))
        .unwrap();
    let c = t.gpu.collective[k].expect("the kernel's args").index();
    let s = |id| t.strings.get(id);
    assert_eq!(
        (
            s(t.collectives.name[c]),
            s(t.collectives.group[c]),
            s(t.collectives.group_desc[c]),
            s(t.collectives.group_ranks[c]),
            t.collectives.group_size[c],
            t.collectives.seq[c]
        ),
        ("allreduce", "0", "default_pg", "[0, 1]", 2, None)
    );
    let t = import("tracelens/b200/eager_trace.json.gz");
    assert_eq!(collective_counts(&t), (1, 1, 1, 0, 1));
    let k = (0..t.gpu.len())
        .find(|&i| {
            t.strings
                .get(t.gpu.name[i])
                .starts_with("ncclDevKernel_AllGather")
        })
        .unwrap();
    let c = t.gpu.collective[k].unwrap().index();
    assert_eq!(t.strings.get(t.collectives.group[c]), "3");
    assert_eq!(t.strings.get(t.collectives.name[c]), "_allgather_base");
    assert_eq!(t.collectives.group_size[c], 8);
    let dlrm = std::fs::read_dir(traces().join("param/dlrm_8rank")).unwrap();
    let mut n = 0;
    for f in dlrm {
        let f = f.unwrap().file_name().to_string_lossy().to_string();
        let t = import(&format!("param/dlrm_8rank/{f}"));
        assert_eq!(collective_counts(&t), (8, 0, 0, 0, 0), "{f}");
        assert!(t.collectives.is_empty());
        n += 1;
    }
    assert_eq!(n, 8);
    for r in 0..2 {
        let t = import(&format!("hta/trace_filter/sampled_rank-{r}.json.gz"));
        assert_eq!(collective_counts(&t).1, 0);
    }
}

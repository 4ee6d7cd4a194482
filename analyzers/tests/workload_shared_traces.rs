//! Causes, attributions, hints and savings on the inference, CUDA/HIP
//! graph, ROCm, collective and compiled-code traces in
//! `../shared/traces/tracelens`: each test reads one trace as its author
//! would and checks the diagnosis against what the trace shows (the
//! timings quoted in each test were read from the trace's JSON).
//!
//! The analysis is read through its JSON form, the stable interface users
//! and other tools read.

mod shared_traces;
use gapscope_analyzers::analysis::AnalyzeOptions;
use gapscope_analyzers::analyze;
use gapscope_collectors::kineto::{import_file, ImportOptions};
use serde_json::Value;
use shared_traces::{shared, trace_files};

/// The analysis of one shared trace as JSON. These tests need that trace:
/// a missing one fails them rather than letting them pass unseen.
fn analysis(rel: &str) -> Value {
    let path = shared().join(rel);
    let t = import_file(&path, &ImportOptions::default()).unwrap_or_else(|e| {
        panic!(
            "{}: {e} (these tests read the shared traces beside the checkout)",
            path.display()
        )
    });
    let a = serde_json::to_value(analyze(&t, &AnalyzeOptions::default())).unwrap();
    for f in a["findings"].as_array().unwrap() {
        eprintln!(
            "{} {} idle {} explained {} saves {} op {} ann {}: {}",
            f["detector"],
            f["id"],
            f["idle_ns"],
            f["explained_ns"],
            f["est_savings_ns"],
            f["operator"],
            f["annotation"],
            f["title"]
        );
    }
    a
}

fn findings<'a>(a: &'a Value, id: &str) -> Vec<&'a Value> {
    a["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["id"] == id)
        .collect()
}

fn ns(v: &Value) -> i64 {
    v.as_i64().unwrap_or_else(|| panic!("not a number: {v}"))
}

fn hints(a: &Value) -> Vec<String> {
    a["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["hint"].as_str().unwrap().to_string())
        .collect()
}

const GRAPH_EXECUTION: &str = "tracelens/inference/vllm_decode_full/graph_execution.json.gz";
const GRAPH_CAPTURE: &str = "tracelens/inference/vllm_decode_full/capture_traces/\
                             graph_capture_rank_0.1773709742341309550.pt.trace.json.gz";
const SGLANG: &str = "tracelens/inference/sglang_decode/sglang_Qwen3-8B_decode.json.gz";
const XDIT: &str = "tracelens/inference/xdit_sd_3.5/profile_trace_rank_0.json.gz";
const B200: &str = "tracelens/b200/eager_trace.json.gz";
const H100_QWEN: &str = "tracelens/h100/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz";
const MI300_QWEN: &str = "tracelens/mi300/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz";
/// Every TraceLens trace these tests read.
const TRACELENS: [&str; 7] = [
    GRAPH_EXECUTION,
    GRAPH_CAPTURE,
    SGLANG,
    XDIT,
    B200,
    H100_QWEN,
    MI300_QWEN,
];

/// Item 1. All work is issued by 2.41 ms; the first GPU row (a
/// host-to-device `hipMemcpyAsync` returned at 0.54 ms) starts at 8.37 ms
/// and nothing on the CPU explains the wait. That is work queued but not
/// started, for a reason outside the trace: no operator is blamed and the
/// speedup bound does not count it as removable.
#[test]
fn vllm_graph_execution_queued_work_is_its_own_cause() {
    let a = analysis(GRAPH_EXECUTION);
    let d = &a["devices"][0];
    let by = &d["idle_by_cause_ns"];
    assert!(ns(&by["queued"]) > 7_700_000, "{by}");
    assert!(ns(&by["launch_overhead"]) < 100_000, "{by}");
    for o in d["top_idle_operators"].as_array().unwrap() {
        if o["cause"] == "queued" {
            assert!(o["operator"].is_null(), "queued time blamed on an operator: {o}");
        }
    }
    let g = &d["top_gaps"][0];
    assert_eq!(g["cause"], "queued", "{g}");
    assert!(g["operator"].is_null(), "{g}");
    let b = &d["bounds"];
    assert!(ns(&b["excluded_idle_ns"]) >= ns(&by["queued"]), "{b}");
    // 19.11 ms window, 10.72 ms busy, 7.8 ms queued: at most ~1.06x.
    assert!(b["max_speedup"].as_f64().unwrap() < 1.1, "{b}");
    let delay = findings(&a, "launch_delay_outliers");
    assert_eq!(delay.len(), 1);
    assert!(delay[0]["operator"].is_null(), "{}", delay[0]);
    assert!(ns(&delay[0]["idle_ns"]) > 7_700_000, "{}", delay[0]);
    // The held copy is the first GPU work the trace records: the previous
    // step's graph, launched before the capture, is the likeliest hold.
    let hint = delay[0]["hint"].as_str().unwrap();
    assert!(hint.contains("first work the trace records"), "{hint}");
}

/// Item 2. Stream 3 is told to wait on an event (`hipStreamWaitEvent` at
/// 0.10 ms) whose producer is not in the trace; the kernel launched at
/// 0.12 ms starts at 463.38 ms. The DtoH copy behind it blocks the host
/// meanwhile, but the host is not what the GPU waits for: after the copy
/// returns the GPU idles only 0.15 ms.
#[test]
fn sglang_wait_on_an_untraced_event_is_found() {
    let a = analysis(SGLANG);
    let w = findings(&a, "untraced_event_wait");
    assert_eq!(w.len(), 1, "{:?}", a["findings"]);
    let w = w[0];
    assert_eq!(w["detector"], "D13");
    assert_eq!(w["primary"], true);
    assert!(ns(&w["idle_ns"]) > 463_000_000, "{w}");
    assert!(w["hint"].as_str().unwrap().contains("hipStreamWaitEvent"), "{w}");
    let by = &a["devices"][0]["idle_by_cause_ns"];
    assert!(ns(&by["sync"]) < 1_000_000, "{by}");
    for f in findings(&a, "blocking_device_to_host_read") {
        assert!(ns(&f["idle_ns"]) < 1_000_000, "{f}");
    }
}

/// The one `hipGraphLaunch` runs 1.57 ms and its 544 kernels start while
/// it still submits them: 74 start before it returns, and a 274 µs gap
/// between two of them lies inside the call. That gap is the call's (ROCm
/// enqueues a graph's nodes from the host), not work queued and held by
/// something outside the trace.
#[test]
fn sglang_gap_inside_the_graph_launch_is_the_calls() {
    let a = analysis(SGLANG);
    assert!(
        findings(&a, "launch_delay_outliers").is_empty(),
        "{:?}",
        a["findings"]
    );
    let slow = findings(&a, "slow_runtime_calls");
    assert_eq!(slow.len(), 1, "{:?}", a["findings"]);
    assert!(ns(&slow[0]["idle_ns"]) > 280_000, "{}", slow[0]);
    assert!(
        slow[0]["hint"].as_str().unwrap().contains("launched 544 kernels"),
        "{}",
        slow[0]
    );
}

/// Item 3. The capture trace records `hipStreamBeginCapture` ..
/// `hipStreamEndCapture` (2.78–57.76 ms) and the graph's instantiation: a
/// one-off setup, not a loop to speed up.
#[test]
fn vllm_graph_capture_is_setup() {
    let a = analysis(GRAPH_CAPTURE);
    let by = &a["devices"][0]["idle_by_cause_ns"];
    assert!(ns(&by["graph_capture"]) > 55_000_000, "{by}");
    let c = findings(&a, "cuda_graph_capture");
    assert_eq!(c.len(), 1);
    assert_eq!(ns(&c[0]["est_savings_ns"]), 0);
    assert!(ns(&c[0]["idle_ns"]) > 55_000_000, "{}", c[0]);
    for f in a["findings"].as_array().unwrap() {
        assert!(
            ns(&f["est_savings_ns"]) < 1_000_000,
            "savings claimed in setup: {f}"
        );
        assert!(!f["hint"].as_str().unwrap().contains("outside the loop"), "{f}");
    }
}

/// Item 4. `Torch-Compiled Region: 0/0` is already compiled: its host
/// time is Inductor's wrapper code (`assert_size_stride`, Triton
/// launchers), which CUDA graphs, the C++ wrapper or a warm-up remove.
#[test]
fn xdit_compiled_region_gets_compiled_code_advice() {
    let a = analysis(XDIT);
    let compiled: Vec<&Value> = a["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| {
            f["operator"]
                .as_str()
                .is_some_and(|o| o.starts_with("Torch-Compiled Region"))
        })
        .collect();
    assert!(!compiled.is_empty());
    for f in compiled {
        let h = f["hint"].as_str().unwrap();
        assert!(!h.contains("compile the region with `torch.compile`"), "{h}");
        assert!(h.contains("reduce-overhead") && h.contains("cpp_wrapper"), "{h}");
    }
    let region = findings(&a, "cpu_bound_operator")
        .into_iter()
        .find(|f| f["operator"] == "Torch-Compiled Region: 0/0")
        .unwrap_or_else(|| panic!("{:?}", a["findings"]));
    assert!(
        region["hint"].as_str().unwrap().contains("assert_size_stride"),
        "{region}"
    );
}

/// Each of the 4 region calls runs the generated `call` (247 ms) with
/// 4679 traced calls made directly from it (`_reinterpret_tensor`,
/// `assert_size_stride`, launchers; 1.3 µs median; `assert_size_stride`
/// itself 0.39 µs median over its 5080 calls) and about 201 ms of its own
/// between them, 43 µs per call made, where the other Python frames of
/// the trace are 0.12 µs apart between traced calls. The profiler may be
/// much of that: the hint says so and how to check, the saving stays.
#[test]
fn xdit_tiny_traced_calls_in_compiled_code_may_be_profiler_time() {
    let a = analysis(XDIT);
    let region = findings(&a, "cpu_bound_operator")
        .into_iter()
        .find(|f| f["operator"] == "Torch-Compiled Region: 0/0")
        .unwrap_or_else(|| panic!("{:?}", a["findings"]));
    let h = region["hint"].as_str().unwrap();
    assert!(
        h.contains("Per call its generated code makes 4679 traced calls (1.3 µs each, median)"),
        "{h}"
    );
    assert!(h.contains("(43.1 µs per call made)"), "{h}");
    assert!(h.contains("without `with_stack` and `record_shapes`"), "{h}");
    assert_eq!(ns(&region["est_savings_ns"]), ns(&region["idle_ns"]), "{region}");
}

/// The `execute_diffusion_1_256x256` range's heaviest operator is the
/// compiled region, but only 19.84 ms of its 105.48 ms idle is in compiled
/// code; the rest is the eager part before the first region (the text
/// encoders' `aten::to`, `aten::copy_`, `aten::linear`: 88.5 ms of device
/// idle lies between the range's start and the first region's). The
/// advice is the eager operators', with the compiled part's own and its
/// share.
#[test]
fn xdit_range_mostly_outside_compiled_code_gets_both_advices() {
    let a = analysis(XDIT);
    let r = findings(&a, "cpu_bound_range");
    let r = r
        .iter()
        .find(|f| f["annotation"] == "execute_diffusion_1_256x256")
        .unwrap_or_else(|| panic!("{:?}", a["findings"]));
    assert_eq!(r["operator"], "Torch-Compiled Region: 0/0", "{r}");
    let h = r["hint"].as_str().unwrap();
    assert!(
        !h.contains("This is code `torch.compile` already generated"),
        "{h}"
    );
    assert!(h.contains("These operators launch GPU work"), "{h}");
    assert!(
        h.contains(
            "19 % of this time (19.84 ms) is inside code `torch.compile` generated \
             (`Torch-Compiled Region: 0/0`)"
        ),
        "{h}"
    );
}

/// `aten::mm` inside the compiled graph is an operator Inductor's wrapper
/// calls (its 2183 calls take 27.9 µs on the host, median; the one
/// looked at launched its kernel 20.8 µs in), not the wrapper's own
/// code: its advice says so instead of blaming the wrapper.
#[test]
fn xdit_operator_called_by_compiled_code_is_not_the_wrapper() {
    let a = analysis(XDIT);
    let mm = a["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == "cpu_bound_operator" && f["operator"] == "aten::mm")
        .unwrap_or_else(|| panic!("{:?}", a["findings"]));
    let h = mm["hint"].as_str().unwrap();
    assert!(
        h.contains("`aten::mm` is called by code `torch.compile` generated"),
        "{h}"
    );
    assert!(!h.contains("Inductor's Python wrapper"), "{h}");
    assert!(h.contains("HIP graphs"), "{h}");
}

/// The b200 forward's range finding names `vllm::moe_forward`, the
/// operator with the most idle time summed over its 36 layers, not the
/// single call site that holds the most (`aten::mm` in the logits).
#[test]
fn b200_range_names_the_heaviest_operator() {
    let a = analysis(B200);
    let r = findings(&a, "cpu_bound_range");
    assert_eq!(r.len(), 1, "{:?}", a["findings"]);
    assert_eq!(r[0]["operator"], "vllm::moe_forward", "{}", r[0]);
    let h = r[0]["hint"].as_str().unwrap();
    assert!(h.contains("the most time in `vllm::moe_forward` at "), "{h}");
}

/// SGLang's first `aten::copy_` (a device-to-host read) takes 463 ms, all
/// but microseconds of it blocked behind the queued wait on an untraced
/// event: that is the GPU's time, not a first call's warm-up.
#[test]
fn sglang_first_copy_blocked_on_the_gpu_is_no_warm_up() {
    let a = analysis(SGLANG);
    for f in findings(&a, "first_call_warmup") {
        assert!(!f["hint"].as_str().unwrap().contains("463"), "{f}");
    }
}

/// Item 4. The b200 trace is a whole vLLM forward in eager mode: its
/// operators launch GPU work, they do not compute on CPU tensors.
#[test]
fn b200_eager_forward_gets_no_cpu_tensor_advice() {
    let a = analysis(B200);
    for h in hints(&a) {
        assert!(!h.contains("CPU tensors"), "{h}");
        assert!(!h.contains("move its inputs to the GPU"), "{h}");
    }
}

/// Item 5. `vllm::moe_forward` runs in 36 `FusedMoE` layers; the three
/// first `aten::addmm` calls take 1.5–2.5 ms against 42–80 µs afterwards.
#[test]
fn b200_groups_by_module_class_and_sets_first_calls_apart() {
    let a = analysis(B200);
    let ops = a["devices"][0]["top_idle_operators"].as_array().unwrap();
    let moe = ops
        .iter()
        .find(|o| o["operator"] == "vllm::moe_forward" && o["annotation"] == "nn.Module: FusedMoE")
        .unwrap_or_else(|| panic!("{ops:?}"));
    assert!(ns(&moe["idle_ns"]) > 5_000_000, "{moe}");
    let steady: Vec<&Value> = ops
        .iter()
        .filter(|o| o["cause"] == "cpu_op" && o["first_call"] != true)
        .collect();
    assert_eq!(steady[0]["operator"], "vllm::moe_forward", "{steady:?}");
    let warm = findings(&a, "first_call_warmup");
    assert_eq!(warm.len(), 1);
    let h = warm[0]["hint"].as_str().unwrap();
    assert!(h.contains("aten::addmm"), "{h}");
    assert!(h.contains("CUDA_MODULE_LOADING"), "{h}");
}

/// Item 6. `multimem_all_reduce_kernel` (73 kernels, 2.12 ms) is a
/// collective launched by `vllm::all_reduce`.
#[test]
fn b200_multimem_all_reduce_is_communication() {
    let a = analysis(B200);
    let b = &a["devices"][0]["breakdown"];
    assert!(ns(&b["communication_ns"]) > 2_000_000, "{b}");
    let e = findings(&a, "exposed_communication");
    assert_eq!(e.len(), 1, "{:?}", a["findings"]);
    assert_eq!(e[0]["detector"], "D15");
    for f in findings(&a, "underfilled_kernels") {
        assert!(!f["hint"].as_str().unwrap().contains("multimem"), "{f}");
    }
}

/// Item 6. 120 blocks on 132 SMs use 91 % of them.
#[test]
fn h100_underfilled_claims_match_the_blocks() {
    let a = analysis(H100_QWEN);
    for f in findings(&a, "underfilled_kernels") {
        let h = f["hint"].as_str().unwrap();
        assert!(
            !h.contains("120 blocks on a GPU with 132 SMs") || !h.contains("most SMs"),
            "{h}"
        );
    }
}

/// Item 7. The host waits in one `cudaDeviceSynchronize` while the GPU
/// runs 500 queued kernels back to back (about 1 µs apart): those gaps
/// are launch latency of queued work, not the drain of a sync.
#[test]
fn h100_gaps_between_queued_kernels_are_not_sync() {
    let a = analysis(H100_QWEN);
    let by = &a["devices"][0]["idle_by_cause_ns"];
    assert!(ns(&by["sync"]) < 100_000, "{by}");
}

/// The step keeps the H100 91 % busy, and two thirds of its 3.88 ms of idle
/// time is the GPU starting its next kernel: 1,620 gaps, nearly all
/// between kernels already queued (their launch calls had returned long
/// before: the launch delay's median is 1.2 ms), about 1.5 µs each. That
/// is the largest thing to look at, and no single operator causes it.
/// The MI300X's run of the same model pays less per gap.
#[test]
fn qwen_gaps_between_queued_kernels_are_kernel_launch_gaps() {
    let h = analysis(H100_QWEN);
    let top = &h["findings"][0];
    assert_eq!(
        (top["detector"].as_str(), top["id"].as_str()),
        (Some("D17"), Some("kernel_launch_gaps")),
        "{top}"
    );
    assert_eq!(
        ns(&top["idle_ns"]),
        ns(&h["devices"][0]["idle_by_cause_ns"]["launch_overhead"])
    );
    assert_eq!(ns(&top["occurrences"]), 1620);
    assert_eq!(top["estimable"], false);
    assert_eq!(top["operator"], Value::Null);
    let hint = top["hint"].as_str().unwrap();
    assert!(
        hint.contains("93 % of it is between kernels already queued on the GPU (1619 gaps, 1.5 µs each"),
        "{hint}"
    );
    let m = analysis(MI300_QWEN);
    let gaps = findings(&m, "kernel_launch_gaps");
    assert_eq!(gaps.len(), 1);
    let hint = gaps[0]["hint"].as_str().unwrap();
    assert!(
        hint.contains("81 % of it is between kernels already queued on the GPU (1367 gaps, 848 ns each"),
        "{hint}"
    );
    assert!(hint.contains("HIP graphs"), "{hint}");
}

/// Item 7. `pt_to_numpy` reads the image at the end: no GPU work follows,
/// so removing the wait cannot save more than its own 19 µs of idle.
#[test]
fn xdit_read_with_nothing_after_saves_at_most_its_idle() {
    let a = analysis(XDIT);
    for f in findings(&a, "blocking_device_to_host_read") {
        if f["source"].as_str().is_some_and(|s| s.contains("pt_to_numpy")) {
            assert!(ns(&f["est_savings_ns"]) <= ns(&f["idle_ns"]), "{f}");
        }
    }
}

/// Item 8. The same line, `_ignore_causal_mask_sdpa`'s `is_nonzero`, reads
/// a scalar on both GPUs; ROCm's `hipMemcpyWithStream` (kind 2, device to
/// host) is recorded as a DtoD copy. Hints speak HIP on a ROCm trace.
#[test]
fn mi300_gets_the_h100_diagnosis_in_rocm_terms() {
    let h = analysis(H100_QWEN);
    let m = analysis(MI300_QWEN);
    let read = |a: &Value| {
        a["findings"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["operator"] == "aten::is_nonzero")
            .map(|f| f["detector"].as_str().unwrap().to_string())
    };
    assert_eq!(read(&h).as_deref(), Some("D5"));
    assert_eq!(read(&m).as_deref(), Some("D5"));
    for a in [&m, &analysis(SGLANG), &analysis(GRAPH_EXECUTION), &analysis(XDIT)] {
        for hint in hints(a) {
            for cuda in [
                "nvidia-smi",
                "MPS",
                "CUDA_MODULE_LOADING",
                "Nsight",
                "cudaLaunchHostFunc",
                "cudaMemcpyAsync",
            ] {
                assert!(!hint.contains(cuda), "{cuda} in a ROCm hint: {hint}");
            }
        }
    }
}

/// Item 9. Of the b200 trace's `overhead` records, 8 are CUPTI's "Lazy
/// Function Loading" (the driver loading kernels on their first launch, a
/// cost without the profiler too); only the 1.53 ms "Activity Buffer
/// Request" is the profiler's.
#[test]
fn b200_lazy_function_loading_is_not_profiler_overhead() {
    let a = analysis(B200);
    let by = &a["devices"][0]["idle_by_cause_ns"];
    assert!(ns(&by["profiler"]) <= 1_530_000, "{by}");
    let lazy = a["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["hint"].as_str().unwrap().contains("Lazy Function Loading"))
        .expect("a finding about lazy loading");
    assert!(
        lazy["hint"]
            .as_str()
            .unwrap()
            .contains("CUDA_MODULE_LOADING=EAGER"),
        "{lazy}"
    );
    assert_ne!(lazy["id"], "profiler_overhead");
}

/// Item 10. The capture trace's last real event ends at 59.2 ms; the
/// profiler's `Record Window End` marker comes 59.7 ms later.
#[test]
fn window_ends_at_the_last_real_event() {
    let a = analysis(GRAPH_CAPTURE);
    let w = &a["window"];
    assert!(ns(&w["duration_ns"]) < 60_000_000, "{w}");
}

/// The traces these tests read are all there: a missing one would fail
/// its test, and a renamed folder should fail here first, loudly.
#[test]
fn the_tracelens_traces_are_present() {
    let mut files = Vec::new();
    trace_files(&shared().join("tracelens"), &mut files);
    for rel in TRACELENS {
        assert!(
            files
                .iter()
                .any(|f| f.ends_with(rel.trim_start_matches("tracelens/"))),
            "{rel}"
        );
    }
}

/// The GEMMs of B200 (cuBLAS `nvjet_*`, TensorRT-LLM's fp4/fp8 `bmm_Mx…`,
/// `fmhaSm100aKernel_QkvE4m3…`) and of MI300X (Tensile's `Cijk_…_MI16x16x1_…`)
/// name their Tensor/matrix-core instructions; a share of 0 on either said
/// the opposite of what the kernel names show.
#[test]
fn b200_and_mi300x_gemms_count_as_tensor_core_kernels() {
    for (rel, top_gemm) in [
        (
            "tracelens/b200/eager_trace.json.gz",
            "bmm_MxE4m3_MxE2m1MxE4m3_Fp32",
        ),
        (
            "tracelens/mi300/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz",
            "Cijk_Alik_Bljk_B_BS_BH_Bias_HA_S_SAV_UserArgs_MT256x128x64_MI16x16x1",
        ),
    ] {
        let a = analysis(rel);
        let share = a["devices"][0]["tensor_core_share"].as_f64().unwrap();
        assert!(share > 0.35, "{rel}: tensor_core_share {share}");
        let rows = a["kernels"]["rows"].as_array().unwrap();
        let gemm = rows
            .iter()
            .find(|r| r["name"].as_str().unwrap().starts_with(top_gemm))
            .unwrap_or_else(|| panic!("{rel}: no {top_gemm} row"));
        assert_eq!(gemm["tensor_core"], true, "{rel}: {top_gemm}");
        // Elementwise kernels stay off the list.
        assert!(rows
            .iter()
            .filter(|r| r["name"].as_str().unwrap().contains("elementwise_kernel"))
            .all(|r| r["tensor_core"] == false));
    }
}

/// A hint is prose: a string literal continued without its `\` kept the
/// next line's indentation inside SGLang's `hipGraphLaunch` advice ("inside
/// the call:                  the longest call").
#[test]
fn titles_and_hints_hold_no_runs_of_spaces() {
    for rel in TRACELENS {
        let a = analysis(rel);
        for f in a["findings"].as_array().unwrap() {
            for key in ["title", "hint"] {
                let s = f[key].as_str().unwrap();
                assert!(!s.contains("  "), "{rel} {} {key}: {s}", f["id"]);
            }
        }
    }
}

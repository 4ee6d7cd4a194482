//! `gapscope analyze` on the demo trace and on a real shared trace.

mod common;
use common::*;
use std::ffi::OsString;

#[test]
fn demo_text_shows_breakdown_steps_and_launches() {
    let r = gapscope(["analyze", "--demo"]).expect_code(0);
    let out = &r.stdout;
    for needle in [
        "demo.pt.trace.json.gz (built-in demo)",
        "window: 5 steps #10..#14",
        "GPU 0: NVIDIA H100 80GB HBM3",
        "compute",
        "HtoD",
        "idle",
        "HTA temporal breakdown",
        "#12",
        "kernel launches:",
        "Why the GPU was idle",
        "Top idle-causing operators",
        "Longest gaps",
    ] {
        assert!(out.contains(needle), "`{needle}` not in:\n{out}");
    }
    assert!(r.stderr.is_empty(), "unexpected stderr: {}", r.stderr);
}

#[test]
fn no_trace_means_the_demo() {
    let plain = gapscope(["analyze", "--format", "json"]).expect_code(0).json();
    let demo = gapscope(["analyze", "--demo", "--format", "json"])
        .expect_code(0)
        .json();
    assert_eq!(plain, demo);
}

#[test]
fn demo_json_is_one_object_whose_numbers_add_up() {
    let j = gapscope(["analyze", "--demo", "--format", "json"])
        .expect_code(0)
        .json();
    assert_eq!(j["schema_version"], 1);
    let devices = j["devices"].as_array().expect("devices array");
    assert_eq!(devices.len(), 1);
    let d = &devices[0];
    assert_eq!(d["device"], 0);
    assert_breakdown_adds_up(&d["breakdown"]);
    let b = &d["breakdown"];
    assert_eq!(b["window_ns"], j["window"]["duration_ns"]);
    // The demo plants a slow DataLoader, syncs and a launch-bound loop: the
    // GPU must be idle for a real share of the window, and busy for another.
    let share = |k: &str| b[k].as_f64().unwrap() / b["window_ns"].as_f64().unwrap();
    assert!(
        (0.2..0.8).contains(&share("idle_ns")),
        "idle share {}",
        share("idle_ns")
    );
    assert!(share("compute_ns") > 0.2, "compute share {}", share("compute_ns"));
    assert!(b["memcpy_by_kind_ns"]["htod"].as_i64().unwrap() > 0);
    assert!(b["memcpy_by_kind_ns"]["dtoh"].as_i64().unwrap() > 0);
    let steps = j["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 5);
    for s in steps {
        assert_breakdown_adds_up(&s["devices"][0]["breakdown"]);
    }
    assert!(d["launch_stats"]["count"].as_u64().unwrap() > 500);
}

/// Idle by cause adds up to idle, per device and per step, and the demo's
/// planted DataLoader stall is its top cause, named with its source line.
#[test]
fn demo_json_attributes_idle_time() {
    let j = gapscope(["analyze", "--format", "json"]).expect_code(0).json();
    let d = &j["devices"][0];
    let sum = |causes: &serde_json::Value| -> i64 {
        causes
            .as_object()
            .unwrap()
            .values()
            .map(|v| v.as_i64().unwrap())
            .sum()
    };
    assert_eq!(
        sum(&d["idle_by_cause_ns"]),
        d["breakdown"]["idle_ns"].as_i64().unwrap()
    );
    for s in j["steps"].as_array().unwrap() {
        let sd = &s["devices"][0];
        assert_eq!(
            sum(&sd["idle_by_cause_ns"]),
            sd["breakdown"]["idle_ns"].as_i64().unwrap()
        );
    }
    let causes = d["idle_by_cause_ns"].as_object().unwrap();
    let top = causes.iter().max_by_key(|(_, v)| v.as_i64().unwrap()).unwrap().0;
    assert_eq!(top, "dataloader");
    let gap = &d["top_gaps"][0];
    assert_eq!(gap["cause"], "dataloader");
    assert!(
        gap["annotation"].as_str().unwrap().contains("DataLoader"),
        "{gap}"
    );
    assert!(gap["source"].as_str().unwrap().contains("data.py"), "{gap}");
    let ops = d["top_idle_operators"].as_array().unwrap();
    assert!(!ops.is_empty());
    assert!(ops
        .windows(2)
        .all(|w| w[0]["idle_ns"].as_i64() >= w[1]["idle_ns"].as_i64()));
}

/// The shared ResNet-50 trace recorded with a 0-worker DataLoader: the
/// text names the DataLoader as the top cause and the range to look at.
#[test]
fn resnet50_without_workers_names_its_dataloader() {
    let dir = repo().join("../shared/traces/kineto-tb-plugin");
    let path = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .flatten()
        .map(|e| e.path())
        .find(|p| p.to_string_lossy().contains("resnet50_num_workers_0"))
        .expect("the resnet50_num_workers_0 trace");
    let r = gapscope([std::ffi::OsString::from("analyze"), path.into()]).expect_code(0);
    let why = r
        .stdout
        .split("Why the GPU was idle")
        .nth(1)
        .expect("a why-idle section");
    let first_cause = why.lines().nth(2).unwrap_or("");
    assert!(first_cause.trim_start().starts_with("DataLoader"), "{why}");
    // ... and its "mostly in" column names the DataLoader range.
    assert!(first_cause.contains("enumerate(DataLoader)"), "{first_cause}");
}

#[test]
fn steps_select_the_window() {
    let all = gapscope(["analyze", "--format", "json"]).expect_code(0).json();
    let some = gapscope(["analyze", "--format", "json", "--steps", "11..12"])
        .expect_code(0)
        .json();
    assert_eq!(some["window"]["steps_selected"], serde_json::json!([11, 12]));
    assert_eq!(some["steps"].as_array().unwrap().len(), 2);
    let step = |j: &serde_json::Value, n: u64| {
        j["steps"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["step"] == n)
            .cloned()
            .unwrap()
    };
    // The window runs from step 11's start to step 12's end.
    assert_eq!(some["window"]["start_ns"], step(&all, 11)["start_ns"]);
    assert_eq!(some["window"]["end_ns"], step(&all, 12)["end_ns"]);
    assert_breakdown_adds_up(&some["devices"][0]["breakdown"]);
}

#[test]
fn exclude_last_step_drops_step_14() {
    let all = gapscope(["analyze", "--format", "json"]).expect_code(0).json();
    let j = gapscope(["analyze", "--format", "json", "--exclude-last-step"])
        .expect_code(0)
        .json();
    assert_eq!(j["window"]["steps_selected"], serde_json::json!([10, 11, 12, 13]));
    let last = all["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["step"] == 13)
        .unwrap();
    assert_eq!(j["window"]["end_ns"], last["end_ns"]);
    assert!(j["window"]["duration_ns"].as_i64() < all["window"]["duration_ns"].as_i64());
}

#[test]
fn bad_steps_flag_is_a_usage_error() {
    let r = gapscope(["analyze", "--steps", "9..5"]).expect_code(2);
    assert!(r.stderr.contains("--steps"), "{}", r.stderr);
    assert!(!r.stderr.contains("panicked"));
}

#[test]
fn help_lists_examples() {
    for args in [vec!["--help"], vec!["analyze", "--help"]] {
        let r = gapscope(&args).expect_code(0);
        assert!(r.stdout.contains("EXAMPLES:"), "{args:?}:\n{}", r.stdout);
        assert!(r.stdout.contains("gapscope analyze --demo"), "{}", r.stdout);
    }
}

#[test]
fn several_traces_give_a_json_array_and_one_text_section_each() {
    let dir = TempDir::new("several");
    let a = dir.file("a.json", &demo_json());
    let b = dir.file("b.json", &demo_json());
    let args: Vec<OsString> = vec![
        "analyze".into(),
        a.clone().into(),
        b.clone().into(),
        "--format".into(),
        "json".into(),
    ];
    let j = gapscope(&args).expect_code(0).json();
    let arr = j.as_array().expect("an array for two traces");
    assert_eq!(arr.len(), 2);
    assert_eq!(arr[0]["devices"], arr[1]["devices"]);
    let t = gapscope(&args[..3]).expect_code(0);
    assert!(t.stdout.contains(&a.display().to_string()) && t.stdout.contains(&b.display().to_string()));
}

/// One of a thing is said in the singular: TraceLens' vLLM graph decode
/// has one slow launch call beside 14 long launch delays.
#[test]
fn launch_counts_take_the_singular_for_one() {
    let p = shared_trace("tracelens/inference/vllm_decode_full/graph_execution.json.gz");
    let r = gapscope([OsString::from("analyze"), p.into()]).expect_code(0);
    assert!(
        r.stdout.contains(
            "8 short kernels (GPU time shorter than their launch call), 1 slow launch call, 14 long launch delays"
        ),
        "{}",
        r.stdout
    );
}

/// TraceLens' vLLM graph decode on ROCm: 8 `hipMemcpyAsync` calls ask for
/// host-to-device copies (`kind` 1) whose GPU records say `Memcpy DtoD`;
/// the breakdown follows the calls, and the diagnostics say so.
#[test]
fn copies_counted_in_their_calls_direction_are_counted_as_such() {
    let p = shared_trace("tracelens/inference/vllm_decode_full/graph_execution.json.gz");
    let args = [
        OsString::from("analyze"),
        "--format".into(),
        "json".into(),
        p.into(),
    ];
    let j = gapscope(args).expect_code(0).json();
    assert_eq!(j["diagnostics"]["importer"]["copy_direction_from_call"], 8);
    let by_kind = &j["devices"][0]["breakdown"]["memcpy_by_kind_ns"];
    assert!(by_kind["htod"].as_i64().unwrap() > 0, "{by_kind}");
}

/// HTA's triton example: one 1.8 µs kernel in a 13.3 s capture with no
/// CPU activity around it. Nothing in the trace explains that idle time,
/// so the bound does not promise to remove it (7,577,452× before).
#[test]
fn untraced_idle_stays_in_the_bound() {
    let p = shared_trace("hta/triton_example/triton_example.json.gz");
    let args = [
        OsString::from("analyze"),
        "--format".into(),
        "json".into(),
        p.clone().into(),
    ];
    let j = gapscope(args).expect_code(0).json();
    let d = &j["devices"][0];
    let untraced = d["idle_by_cause_ns"]["untraced"].as_i64().unwrap();
    assert!(untraced > 13_000_000_000, "{d}");
    let b = &d["bounds"];
    assert!(b["excluded_idle_ns"].as_i64().unwrap() >= untraced, "{b}");
    assert!(b["max_speedup"].as_f64().unwrap() < 1.01, "{b}");
    let r = gapscope([OsString::from("analyze"), p.into()]).expect_code(0);
    assert!(
        r.stdout
            .contains("removing the rest makes it at most 1.00x faster"),
        "{}",
        r.stdout
    );
}

#[test]
fn shared_resnet50_trace_json_adds_up() {
    let p = shared_trace("kineto-tb-plugin/resnet50_num_workers_0.worker0.1623143089861.pt.trace.json.gz");
    let args: Vec<OsString> = vec!["analyze".into(), "--format".into(), "json".into(), p.into()];
    let r = gapscope(&args).expect_code(0);
    let j = r.json();
    let devices = j["devices"].as_array().unwrap();
    assert!(!devices.is_empty(), "a V100 trace with kernels has a device");
    for d in devices {
        assert_breakdown_adds_up(&d["breakdown"]);
        assert!(d["breakdown"]["compute_ns"].as_i64().unwrap() > 0);
    }
}

#[test]
fn closed_stdout_exits_quietly() {
    use std::io::Read;
    use std::process::{Command, Stdio};
    // Enough traces that the JSON outgrows the pipe buffer (64 KiB), so the
    // binary really writes into a closed pipe.
    let dir = TempDir::new("pipe");
    let demo = dir.file("demo.json", &demo_json());
    let mut child = Command::new(env!("CARGO_BIN_EXE_gapscope"))
        .args(["analyze", "--format", "json"])
        .args(std::iter::repeat_n(&demo, 40))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Read a few bytes, then close the pipe, as `| head -c 10` would.
    let mut first = [0u8; 10];
    child.stdout.take().unwrap().read_exact(&mut first).unwrap();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.is_empty(), "{stderr}");
    assert_eq!(out.status.code(), Some(0), "stderr: {stderr}");
}

/// The detectors' findings: ranked by estimated savings, each with the
/// fields the JSON schema promises, savings within what it explains; the
/// demo's planted DataLoader stall comes first with a hint naming
/// `num_workers`; bounds per device.
#[test]
fn demo_json_ranks_findings_and_gives_bounds() {
    let j = gapscope(["analyze", "--demo", "--format", "json"])
        .expect_code(0)
        .json();
    let findings = j["findings"].as_array().expect("findings array");
    assert!(!findings.is_empty());
    let mut last = i64::MAX;
    for f in findings {
        for k in [
            "id",
            "detector",
            "title",
            "device",
            "occurrences",
            "idle_ns",
            "explained_ns",
            "est_savings_ns",
            "operator",
            "annotation",
            "source",
            "evidence",
            "hint",
        ] {
            assert!(f.get(k).is_some(), "finding without `{k}`: {f}");
        }
        let saves = f["est_savings_ns"].as_i64().expect("integer savings");
        assert!(saves >= 0 && saves <= f["explained_ns"].as_i64().unwrap(), "{f}");
        assert!(saves <= last, "findings not ranked");
        last = saves;
    }
    assert_eq!(findings[0]["id"], "dataloader_stall");
    assert_eq!(findings[0]["detector"], "D11");
    assert!(findings[0]["hint"].as_str().unwrap().contains("num_workers"));
    let idle = j["devices"][0]["breakdown"]["idle_ns"].as_i64().unwrap();
    let claimed: i64 = findings
        .iter()
        .filter(|f| f["primary"] == true)
        .map(|f| f["idle_ns"].as_i64().unwrap())
        .sum();
    assert!(claimed <= idle, "findings claim {claimed} ns of {idle} ns idle");
    let b = &j["devices"][0]["bounds"];
    assert_eq!(b["window_ns"], j["window"]["duration_ns"]);
    let busy = b["busy_ns"].as_i64().unwrap();
    assert_eq!(busy + idle, b["window_ns"].as_i64().unwrap());
    assert!(b["kernel_sum_ns"].as_i64().unwrap() > 0);
    assert!(b["max_speedup"].as_f64().unwrap() > 1.0);
}

#[test]
fn demo_text_lists_findings_with_hints() {
    let out = gapscope(["analyze", "--demo"]).expect_code(0).stdout;
    for needle in ["What to fix", "[D11]", "num_workers", "saves ~", "Bounds: busy"] {
        assert!(out.contains(needle), "`{needle}` not in:\n{out}");
    }
}

/// A step selection that keeps nothing says so; it does not blame the way
/// the trace was recorded (it has GPU activity, just not in that window).
#[test]
fn an_empty_step_selection_is_not_called_a_trace_without_gpu_activity() {
    let demo = repo().join("fixtures/demo/demo.pt.trace.json.gz");
    let r = gapscope(["analyze", "--steps", "40..41", demo.to_str().unwrap()]).expect_code(0);
    assert!(r.stdout.contains("window: empty"), "{}", r.stdout);
    assert!(r.stdout.contains("--steps selected no step"), "{}", r.stdout);
    assert!(!r.stdout.contains("ProfilerActivity.CUDA"), "{}", r.stdout);
}

/// Two calls share correlation id 7 (as in two files joined): the kernel
/// is linked to the later call that started before it, the JSON counts the
/// reused id among the importer's diagnostics, and one warning says so.
#[test]
fn a_reused_correlation_id_is_linked_by_time_and_said() {
    let dir = TempDir::new("reused_corr");
    let call = |ts: u64, dur: u64| {
        format!(
            r#"{{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":{ts},"dur":{dur},"args":{{"correlation":7}}}}"#
        )
    };
    let json = format!(
        r#"{{"traceEvents":[{},{},{{"ph":"X","cat":"kernel","name":"gemm","pid":0,"tid":7,"ts":150,"dur":20,"args":{{"device":0,"stream":7,"correlation":7}}}}]}}"#,
        call(100, 5),
        call(140, 3)
    );
    let file = dir.file("reused.json", json.as_bytes());
    let r = gapscope([
        OsString::from("analyze"),
        "--format".into(),
        "json".into(),
        file.into(),
    ])
    .expect_code(0);
    let a = r.json();
    assert_eq!(a["diagnostics"]["importer"]["correlation_id_reused"], 1);
    assert_eq!(a["diagnostics"]["gpu_rows_without_launch"], 0);
    // The launch is the call at 140 µs: 3 µs on the CPU, 7 µs to the kernel.
    let launches = &a["devices"][0]["launch_stats"];
    assert_eq!(launches["count"], 1);
    assert_eq!(launches["cpu_duration_ns"]["max"], 3_000);
    assert_eq!(launches["launch_delay_ns"]["max"], 7_000);
    assert!(
        r.stderr
            .contains("1 GPU rows have a correlation id that several runtime calls share"),
        "{}",
        r.stderr
    );
    assert_eq!(r.stderr.lines().count(), 1, "{}", r.stderr);
}

/// A finding seen once says "1 occurrence" (TraceLens' SGLang decode
/// trace: a single stream wait and a single late graph launch) and its
/// title speaks of one (one graph launch replays its kernels); several
/// say "occurrences".
#[test]
fn findings_count_occurrences_in_the_singular_and_plural() {
    let path = shared_trace("tracelens/inference/sglang_decode/sglang_Qwen3-8B_decode.json.gz");
    let r = gapscope([OsString::from("analyze"), path.into()]).expect_code(0);
    assert!(r.stdout.contains("; 1 occurrence; where:"), "{}", r.stdout);
    assert!(!r.stdout.contains(" 1 occurrences"), "{}", r.stdout);
    assert!(
        r.stdout.contains("1 HIP graph launch replays 544 kernels"),
        "{}",
        r.stdout
    );
    let demo = gapscope(["analyze", "--demo"]).expect_code(0);
    assert!(demo.stdout.contains("; 5 occurrences; where:"), "{}", demo.stdout);
}

/// A finding's savings and explained time are shown in the unit that
/// shows them: SGLang's blocking read saves 150.7 µs, not "~0.15 ms", its
/// graph launch 287.8 µs, not "~0.29 ms"; a context finding that
/// explains no idle time says nothing of it.
#[test]
fn finding_times_are_shown_in_their_own_unit() {
    let path = shared_trace("tracelens/inference/sglang_decode/sglang_Qwen3-8B_decode.json.gz");
    let r = gapscope([OsString::from("analyze"), path.into()]).expect_code(0);
    assert!(
        r.stdout
            .contains("saves ~150.7 µs of 150.7 µs explained; 1 occurrence"),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout.contains("saves ~287.8 µs of 287.8 µs explained"),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout.contains("context, not idle time; 1 occurrence"),
        "{}",
        r.stdout
    );
    assert!(!r.stdout.contains("0.00 ms explained"), "{}", r.stdout);
    assert!(!r.stdout.contains("~0.0"), "{}", r.stdout);
    // A replay that finds the step no shorter is said as such (HTA's
    // NCCL trace: D6's event syncs), not "saves ~0 ns".
    let nccl = shared_trace("hta/nccl_parser_config/nccl_data.json.gz");
    let r = gapscope([OsString::from("analyze"), nccl.into()]).expect_code(0);
    assert!(
        r.stdout.contains(
            "saves nothing on its own (replayed without it, the step is no shorter); 78.7 µs explained"
        ),
        "{}",
        r.stdout
    );
    assert!(!r.stdout.contains("saves ~0 ns"), "{}", r.stdout);
}

/// A device with idle time and no finding says so (one step of 1 ms whose
/// gaps, 5 µs while its kernels are launched, are under every detector's
/// floor), so that a missing section does not read as detectors that did
/// not run; a device with findings does not say it.
#[test]
fn a_device_without_findings_says_so() {
    let dir = TempDir::new("no-findings");
    // The host on pid 1, the GPU's stream 7 on pid 0.
    let x = x_event;
    let (host, gpu) = ((1, 1), (0, 7));
    let events = [
        x("user_annotation", "ProfilerStep#1", host, 1009, 1000, ""),
        x(
            "cuda_runtime",
            "cudaLaunchKernel",
            host,
            1001,
            5,
            r#""correlation": 1"#,
        ),
        x(
            "kernel",
            "k1",
            gpu,
            1010,
            500,
            r#""device": 0, "stream": 7, "correlation": 1"#,
        ),
        x(
            "cuda_runtime",
            "cudaLaunchKernel",
            host,
            1508,
            4,
            r#""correlation": 2"#,
        ),
        x(
            "kernel",
            "k2",
            gpu,
            1514,
            486,
            r#""device": 0, "stream": 7, "correlation": 2"#,
        ),
    ];
    let json = kineto_json(&events);
    let path = dir.file("quiet.json", json.as_bytes());
    let r = gapscope([OsString::from("analyze"), path.into()]).expect_code(0);
    assert!(r.stdout.contains("idle "), "{}", r.stdout);
    assert!(r.stdout.contains("  What to fix: no findings ("), "{}", r.stdout);
    let demo = gapscope(["analyze", "--demo"]).expect_code(0);
    assert!(!demo.stdout.contains("no findings"), "{}", demo.stdout);
    assert!(demo.stdout.contains("  What to fix (ranked"), "{}", demo.stdout);
}

/// A GPU the trace does not name (vLLM's HIP-graph trace on ROCm leaves
/// the device name empty) is not called "GPU 2: GPU 2".
#[test]
fn an_unnamed_gpu_is_said_to_be_unnamed() {
    let path = shared_trace("tracelens/inference/vllm_decode_full/graph_execution.json.gz");
    let r = gapscope([OsString::from("analyze"), path.into()]).expect_code(0);
    assert!(
        r.stdout.contains("\nGPU 2 (the trace does not name it)\n"),
        "{}",
        r.stdout
    );
    assert!(!r.stdout.contains("GPU 2: GPU 2"), "{}", r.stdout);
    let demo = gapscope(["analyze", "--demo"]).expect_code(0);
    assert!(!demo.stdout.contains("does not name it"), "{}", demo.stdout);
}

/// A trace of one step says so ("step #100, the trace's only step", not
/// "step #100 of 1"); one step of several keeps its count.
#[test]
fn the_window_line_names_an_only_step_as_such() {
    let path = shared_trace("hta/critical_path/cuda_event_sync/event_sync_trace.json.gz");
    let r = gapscope([OsString::from("analyze"), path.into()]).expect_code(0);
    assert!(
        r.stdout
            .contains("window: step #100, the trace's only step, 3.15 ms"),
        "{}",
        r.stdout
    );
    let demo = gapscope(["analyze", "--demo", "--steps", "12"]).expect_code(0);
    assert!(
        demo.stdout.contains("window: step #12 of 5 in the trace"),
        "{}",
        demo.stdout
    );
}

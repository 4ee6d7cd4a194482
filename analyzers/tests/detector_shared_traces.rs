//! Detectors on the real traces in `../shared/traces`: on every device of
//! every trace, no finding saves more than it explains, no finding explains
//! more idle time than the device had, and the primary findings together
//! claim at most the device's idle time; the ResNet-50 trace with a
//! 0-worker DataLoader ranks the DataLoader stall first; syncs behind long
//! copy calls are D5/D9, not D6; and D13, D14 and D16 on the traces that
//! hold their patterns.

mod shared_traces;
use gapscope_analyzers::analysis::AnalyzeOptions;
use gapscope_analyzers::analyze;
use gapscope_analyzers::detectors::{detect, Finding};
use gapscope_analyzers::intervals::{complement, total, union, Span};
use gapscope_analyzers::window::window;
use gapscope_collectors::kineto::{import_file, ImportOptions};
use gapscope_collectors::trace::Trace;
use shared_traces::{shared, trace_files};
use std::collections::BTreeMap;
use std::path::Path;

/// Device idle time computed here from interval unions, independently of
/// the segments the detectors start from.
fn idle_of(t: &Trace, device: u32, span: Span) -> i64 {
    let g = &t.gpu;
    let busy = (0..g.len())
        .filter(|&i| g.device[i] == device && g.is_busy(i))
        .map(|i| (g.start[i], g.end[i]))
        .collect();
    total(&complement(&union(busy), span))
}

fn check(path: &Path, t: &Trace, findings: &[Finding], span: Span) {
    let mut primary: BTreeMap<u32, i64> = BTreeMap::new();
    for f in findings {
        let idle = idle_of(t, f.device, span);
        let what = format!("{} {} {}", path.display(), f.detector, f.id);
        assert!(f.est_savings_ns >= 0, "{what}: negative savings");
        assert!(
            f.est_savings_ns <= f.explained_ns,
            "{what}: saves {} > explains {}",
            f.est_savings_ns,
            f.explained_ns
        );
        assert!(
            f.idle_ns >= 0 && f.idle_ns <= idle,
            "{what}: idle {} > device idle {idle}",
            f.idle_ns
        );
        assert!(f.explained_ns >= f.idle_ns, "{what}");
        assert!(!f.hint.is_empty() && !f.title.is_empty(), "{what}");
        assert!(
            f.id.chars().all(|c| c.is_ascii_lowercase() || c == '_'),
            "{what}: id"
        );
        if f.primary {
            *primary.entry(f.device).or_default() += f.idle_ns;
        }
    }
    for (d, claimed) in primary {
        let idle = idle_of(t, d, span);
        assert!(
            claimed <= idle,
            "{} device {d}: primary findings claim {claimed} > idle {idle}",
            path.display()
        );
    }
    for w in findings.windows(2) {
        assert!(w[0].weight() >= w[1].weight(), "not ranked");
    }
    for f in findings {
        assert!(f.estimable || f.est_savings_ns == 0, "{f:?}");
    }
}

#[test]
fn findings_stay_within_idle_time_on_every_shared_trace() {
    let mut files = Vec::new();
    trace_files(&shared(), &mut files);
    files.sort();
    if files.is_empty() {
        eprintln!("no shared traces at {}: skipped", shared().display());
        return;
    }
    let mut checked = 0;
    for path in &files {
        let Ok(t) = import_file(path, &ImportOptions::default()) else {
            eprintln!("{}: not a trace, skipped", path.display());
            continue;
        };
        let win = window(&t);
        let started = std::time::Instant::now();
        let findings = detect(&t, &win);
        let took = started.elapsed();
        check(path, &t, &findings, win.span);
        eprintln!("{} ({} findings, {took:?}):", path.display(), findings.len());
        for f in findings.iter().take(4) {
            eprintln!(
                "  {} {} dev {} idle {} explained {} saves {} x{} | {}",
                f.detector,
                f.id,
                f.device,
                f.idle_ns,
                f.explained_ns,
                f.est_savings_ns,
                f.occurrences,
                f.title
            );
        }
        checked += 1;
    }
    assert!(checked >= 10, "only {checked} traces checked");
}

#[test]
fn resnet50_without_workers_ranks_the_dataloader_first() {
    let dir = shared().join("kineto-tb-plugin");
    let Some(path) = std::fs::read_dir(&dir).ok().and_then(|d| {
        d.flatten()
            .map(|e| e.path())
            .find(|p| p.to_string_lossy().contains("resnet50_num_workers_0"))
    }) else {
        eprintln!("no resnet50 trace in {}: skipped", dir.display());
        return;
    };
    let t = import_file(&path, &ImportOptions::default()).unwrap();
    let win = window(&t);
    let findings = detect(&t, &win);
    for f in &findings {
        eprintln!(
            "{} {} saves {} of {}: {}",
            f.detector, f.id, f.est_savings_ns, f.explained_ns, f.title
        );
    }
    let top = &findings[0];
    assert_eq!(
        (top.detector.as_str(), top.id.as_str()),
        ("D11", "dataloader_stall")
    );
    assert!(top.hint.contains("num_workers"), "{}", top.hint);
    assert!(top.est_savings_ns > 0);
    assert_eq!(
        top.annotation.as_deref(),
        Some("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__")
    );
}

/// The findings of one shared trace (by path under `../shared/traces`),
/// with the options given. These tests need that trace: a missing one
/// fails them rather than letting them pass without looking.
fn shared_findings(rel: &str, opts: &AnalyzeOptions) -> Vec<Finding> {
    let path = shared().join(rel);
    let t = import_file(&path, &ImportOptions::default()).unwrap_or_else(|e| {
        panic!(
            "{}: {e} (these tests read the shared traces beside the checkout)",
            path.display()
        )
    });
    let findings = analyze(&t, opts).findings;
    for f in &findings {
        eprintln!(
            "{} {} idle {} explained {} saves {} x{}: {}",
            f.detector, f.id, f.idle_ns, f.explained_ns, f.est_savings_ns, f.occurrences, f.title
        );
    }
    findings
}

fn of<'a>(f: &'a [Finding], id: &str) -> Vec<&'a Finding> {
    f.iter().filter(|x| x.id == id).collect()
}

const ALEXNET: &str = "hta/critical_path/alexnet/benchmark_result_2869224_1695835535_trace.json.gz";

/// cuDNN's FFT convolution runs on side streams 20–27; stream 7 records
/// one `Stream Wait Event` per side stream, and its next kernel starts 1 µs
/// after the last FFT kernel ends: one real wait of 432 µs (the other
/// wait records precede work that was ready anyway, or repeat the same
/// consumer).
#[test]
fn alexnet_waits_once_on_the_fft_side_streams() {
    let f = shared_findings(ALEXNET, &AnalyzeOptions::default());
    let w = of(&f, "cross_stream_wait");
    assert_eq!(w.len(), 1, "{w:?}");
    let w = w[0];
    assert_eq!((w.occurrences, w.explained_ns, w.primary), (1, 432_000, false));
    assert!(
        w.title.starts_with("Stream 7 waits once on work of stream 20"),
        "{}",
        w.title
    );
    assert!(w.hint.contains("fft2d_c2r_32x32"), "{}", w.hint);
    assert_eq!(w.operator.as_deref(), Some("aten::conv2d"));
    assert!(of(&f, "communication_wait").is_empty());
}

/// The trace is a benchmark's warm-up (its ranges say `warmup`): the first
/// `aten::empty_strided` creates the context (a 29.9 s
/// `cudaDeviceGetStreamPriorityRange`) and the first convolutions
/// initialize cuDNN; each takes far longer than its later calls. That is
/// first-call warm-up, ranked first, not slow API calls to remove. So is
/// everything inside the range the benchmark names warm-up; the allocator
/// calls of its measured forward remain D14's.
#[test]
fn alexnet_first_calls_are_warmup() {
    let f = shared_findings(ALEXNET, &AnalyzeOptions::default());
    let w = &f[0];
    assert_eq!(
        (w.detector.as_str(), w.id.as_str()),
        ("D16", "first_call_warmup"),
        "{w:?}"
    );
    assert!(w.idle_ns > 30_000_000_000, "{w:?}");
    assert!(w.hint.contains("CUDA_MODULE_LOADING"), "{}", w.hint);
    assert!(w.title.contains("aten::empty_strided"), "{}", w.title);
    // The benchmark names its first forward `...|warmup|forward`: what it
    // pays there (cuDNN's 277 ms and 764 ms workspace mallocs, a 53 µs
    // launch) is warm-up, not the measured forward's cost.
    assert!(
        w.hint.contains(
            "`[param|pytorch.model.alex_net|0|0|0|warmup|forward]`, which the program itself names warm-up"
        ),
        "{}",
        w.hint
    );
    assert!(of(&f, "slow_runtime_calls").is_empty(), "{f:?}");
    // What is left to D14 is the measured forward's allocations, after the
    // harness's `clear_cache` emptied the allocator: tens of ms, not 1.12 s.
    let alloc = of(&f, "allocator_calls_in_step");
    assert_eq!(alloc.len(), 1);
    assert!(alloc[0].idle_ns < 100_000_000, "{:?}", alloc[0]);
    assert_eq!(
        alloc[0].annotation.as_deref(),
        Some("[param|pytorch.model.alex_net|0|0|0|measure|forward]")
    );
    assert!(alloc[0].hint.contains("empty_cache()"), "{}", alloc[0].hint);
    // No profiled steps: no "per step" figures.
    assert!(f.iter().all(|x| !x.hint.contains("per step")), "{f:?}");
}

/// The one `Stream Wait Event` here (stream 24 on stream 20) comes 19 ms
/// after stream 20's last kernel, and stream 24's next work is launched
/// 350 µs later: nothing waited.
#[test]
fn a_wait_on_finished_work_is_no_finding() {
    let f = shared_findings(
        "hta/critical_path/cuda_event_sync_multi_stream/event_sync_trace.json.gz",
        &AnalyzeOptions::default(),
    );
    assert!(f.iter().all(|x| x.detector != "D13"), "{f:?}");
}

/// A blocking copy's sync starts 1 µs after its copy call returns, but
/// the call itself can last milliseconds: ResNet-50's 19 MB pageable
/// input batch (`cudaMemcpyAsync` 2.02 ms, then `cudaStreamSynchronize`
/// in the same `aten::copy_`), trace_diff's `.item()` read behind a
/// 4.7 ms `cudaMemcpyAsync`. Those syncs wait for their copy (D9, D5),
/// they are not explicit synchronizations (D6).
#[test]
fn syncs_after_long_copy_calls_are_not_explicit_syncs() {
    let f = shared_findings(
        "kineto-tb-plugin/resnet50_num_workers_0.worker0.1623143089861.pt.trace.json.gz",
        &AnalyzeOptions::default(),
    );
    assert!(of(&f, "explicit_sync").is_empty(), "{f:?}");
    let copy = of(&f, "synchronous_copy");
    assert_eq!(copy.len(), 1, "{f:?}");
    assert_eq!(copy[0].operator.as_deref(), Some("aten::to"));
    assert!(copy[0].occurrences >= 12, "{:?}", copy[0]);

    let f = shared_findings(
        "hta/trace_diff/control/control.json.gz",
        &AnalyzeOptions::default(),
    );
    let blamed = |x: &&Finding| matches!(x.operator.as_deref(), Some("aten::item" | "aten::to"));
    assert!(!of(&f, "explicit_sync").iter().any(blamed), "{f:?}");
    let reads = of(&f, "blocking_device_to_host_read");
    assert!(
        reads.iter().any(|x| x.operator.as_deref() == Some("aten::item")),
        "{f:?}"
    );
}

/// A trace without `cuda_sync` records: the waits are found from the
/// `cudaStreamWaitEvent` calls. Compute streams wait for the all-to-all
/// on NCCL stream 21 (communication exposed), and the NCCL stream waits
/// for its inputs on stream 7.
#[test]
fn trace_diff_compute_waits_for_all_to_all() {
    let f = shared_findings(
        "hta/trace_diff/control/control.json.gz",
        &AnalyzeOptions::default(),
    );
    let c = of(&f, "communication_wait");
    assert_eq!(c.len(), 1, "{f:?}");
    let c = c[0];
    assert!(
        c.title.starts_with("Stream 7 waits") && c.title.contains("on stream 21"),
        "{}",
        c.title
    );
    assert!(c.hint.contains("ncclKernel_SendRecv"), "{}", c.hint);
    assert_eq!(c.annotation.as_deref(), Some("nccl:all_to_all"));
    // At least one wait per profiled step (6), hidden behind the running
    // collective: the device is almost never idle meanwhile.
    assert!(c.occurrences >= 6, "{c:?}");
    assert!(c.idle_ns * 100 < c.explained_ns, "{c:?}");
    let x = of(&f, "cross_stream_wait");
    let x = x
        .iter()
        .find(|x| x.title.starts_with("Stream 21 waits"))
        .unwrap_or_else(|| panic!("{x:?}"));
    // The NCCL stream waits for stream 7's `recat_copy_async_kernel`s,
    // launched by All2All_Pooled_WaitBackward before each wait. A memset
    // launched 0.5 ms after the wait (under `aten::linear`), ending just
    // before the consumer started, is not a producer, nor is `aten::mul`,
    // which launched another wait's producer.
    assert!(!x.hint.contains("Memset"), "{}", x.hint);
    // The title's numbers are the named pair's (it said "11 times ...
    // 20.38 ms", every pair's sum); the rest is said apart.
    assert_eq!(
        x.title,
        "Stream 21 waits 7 times on work of stream 7 (10.89 ms in total; 4 more waits between \
         other streams, 9.49 ms)"
    );
    assert_eq!(x.occurrences, 11);
    assert!(x.hint.contains("recat_copy_async_kernel"), "{}", x.hint);
    assert_eq!(
        x.operator.as_deref(),
        Some("autograd::engine::evaluate_function: All2All_Pooled_WaitBackward")
    );
}

/// Every `cudaGraphLaunch` of this trace takes 1.1–1.6 ms: the graphs'
/// launch cost, not an outlier (HTA's fixed 50 µs cutoff flags all 12).
#[test]
fn graph_launches_that_are_always_slow_are_no_outliers() {
    let f = shared_findings("hta/trace_diff/test/test.json.gz", &AnalyzeOptions::default());
    assert!(
        of(&f, "slow_runtime_calls")
            .iter()
            .all(|x| !x.title.contains("GraphLaunch")),
        "{f:?}"
    );
    let replays = of(&f, "cuda_graph_replays");
    assert_eq!(replays.len(), 1);
    // The API that captures one: `torch.cuda.graph` (`torch.cuda.graphs`
    // is the module).
    assert!(
        replays[0].hint.contains("(`torch.cuda.graph` or"),
        "{}",
        replays[0].hint
    );
}

const AMD: &str = "hta/amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz";

/// The ROCm trace's ProfilerStep#2 lasts 49 µs and launches nothing (16
/// rows in step 1): the step the last `prof.step()` opened, cut by the
/// profiler's stop. Its idle time is D16's; without it
/// (`--exclude-last-step`) there is nothing to report.
#[test]
fn amd_trace_last_step_is_cut_short() {
    let f = shared_findings(AMD, &AnalyzeOptions::default());
    let p = of(&f, "partial_last_step");
    assert_eq!(p.len(), 1, "{f:?}");
    let p = p[0];
    assert!(
        p.title.contains("ProfilerStep#2") && p.title.contains("0 GPU rows against 16"),
        "{}",
        p.title
    );
    assert!(p.idle_ns > 40_000 && p.idle_ns <= 49_100, "{p:?}");
    assert_eq!(p.est_savings_ns, 0);

    let mut opts = AnalyzeOptions::default();
    opts.window.exclude_last_step = true;
    let f = shared_findings(AMD, &opts);
    assert!(of(&f, "partial_last_step").is_empty(), "{f:?}");
}

/// A finding whose saving the trace cannot estimate ranks by the most its
/// fix could save: here 73.3 ms of communication nothing hides (D15) and
/// 19.8 ms of device idle during cross-stream waits (D13) rank above 18
/// pageable copies that save 0.04 ms.
#[test]
fn unestimable_findings_rank_by_what_they_could_save() {
    let f = shared_findings("hta/trace_diff/test/test.json.gz", &AnalyzeOptions::default());
    assert_eq!(f[0].id, "exposed_communication", "{f:?}");
    assert!(!f[0].estimable);
    assert_eq!(f[0].savings_bound_ns, Some(f[0].explained_ns));
    let cross = of(&f, "cross_stream_wait");
    assert_eq!(cross[0].savings_bound_ns, Some(cross[0].idle_ns));
    let pos = |id: &str| f.iter().position(|x| x.id == id).unwrap();
    assert!(pos("cross_stream_wait") < pos("pageable_copies"), "{f:?}");
    for w in f.windows(2) {
        assert!(w[0].weight() >= w[1].weight(), "{f:?}");
    }
    // Estimable findings carry no bound.
    assert!(f
        .iter()
        .filter(|x| x.estimable)
        .all(|x| x.savings_bound_ns.is_none()));
}

/// `aten::empty` (inside `aten::ones`) holds the CPU 2.19 ms with nothing
/// queued: an allocation, so the advice is the allocator's, not "compute
/// on the GPU" or "views and reshapes".
#[test]
fn a_slow_allocation_gets_allocator_advice() {
    let f = shared_findings(
        "hta/critical_path/cuda_event_sync/event_sync_trace.json.gz",
        &AnalyzeOptions::default(),
    );
    let d2 = of(&f, "cpu_bound_operator");
    let empty = d2
        .iter()
        .find(|x| x.operator.as_deref() == Some("aten::empty"))
        .expect("aten::empty");
    assert!(empty.hint.contains("only allocate"), "{}", empty.hint);
    assert!(!empty.hint.contains("compute on the CPU"), "{}", empty.hint);
}

const B200: &str = "tracelens/b200/eager_trace.json.gz";

/// The b200 trace's runtime calls that hold a `Lazy Function Loading`
/// record, found here from the raw rows: the record (filed under pid -1,
/// no thread) lies inside the call's span.
fn calls_holding_lazy_loading(t: &Trace) -> Vec<usize> {
    let m = &t.markers;
    let lazy: Vec<(i64, i64)> = (0..m.len())
        .filter(|&i| t.strings.get(m.name[i]) == "Lazy Function Loading")
        .map(|i| (m.start[i], m.end[i]))
        .collect();
    let rt = &t.runtime;
    (0..rt.len())
        .filter(|&c| lazy.iter().any(|&(s, e)| rt.start[c] <= s && e <= rt.end[c]))
        .collect()
}

/// Three `cudaLaunchKernel` calls (141.5 µs, 82.2 µs, 55.3 µs against a
/// usual 6.6 µs) each hold a `Lazy Function Loading` record: they are
/// first launches loading their kernel's module, D16's warm-up, and D14
/// no longer calls them slow or descheduled.
#[test]
fn b200_launches_that_load_their_module_are_warm_up() {
    let path = shared().join(B200);
    let t = import_file(&path, &ImportOptions::default()).expect("the b200 trace");
    let loading = calls_holding_lazy_loading(&t);
    assert!(!loading.is_empty());
    assert!(loading
        .iter()
        .all(|&c| t.strings.get(t.runtime.name[c]) == "cudaLaunchKernel"));
    let f = analyze(&t, &AnalyzeOptions::default()).findings;
    for x in f.iter().filter(|x| x.detector == "D14") {
        let rows: Vec<u32> = x
            .evidence
            .iter()
            .filter(|e| e.kind == "runtime")
            .filter_map(|e| e.row)
            .collect();
        assert!(loading.iter().all(|&c| !rows.contains(&(c as u32))), "{x:?}");
    }
    assert!(of(&f, "slow_runtime_calls").is_empty(), "{f:?}");
    let warm = of(&f, "first_call_warmup");
    assert_eq!(warm.len(), 1);
    let said = format!("{} calls to `cudaLaunchKernel`", loading.len());
    assert!(warm[0].hint.contains(&said), "{}", warm[0].hint);
    assert!(
        warm[0].hint.contains("not a slow or descheduled call"),
        "{}",
        warm[0].hint
    );
}

/// TraceLens' inference traces hold no backward node and no optimizer
/// range (checked in the raw events): their hints give no training advice.
#[test]
fn hints_on_traces_without_backward_give_no_training_advice() {
    let f = shared_findings(B200, &AnalyzeOptions::default());
    let comm = of(&f, "exposed_communication");
    assert_eq!(comm.len(), 1);
    let h = &comm[0].hint;
    assert!(!h.contains("bucket_cap_mb") && !h.contains("In training"), "{h}");
    assert!(h.contains("no backward pass or optimizer step"), "{h}");
    assert!(h.contains("tensor-parallel forward pass"), "{h}");
    let prof = of(&f, "profiler_overhead");
    assert!(!prof[0].hint.contains("training"), "{}", prof[0].hint);
    let dispatch = f
        .iter()
        .find(|x| x.hint.contains("These operators launch GPU work"))
        .unwrap_or_else(|| panic!("{f:?}"));
    assert!(
        dispatch
            .hint
            .contains("in vLLM or SGLang, keep graphs on rather than running eager"),
        "{}",
        dispatch.hint
    );
    for rel in [
        "tracelens/h100/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz",
        "tracelens/inference/xdit_sd_3.5/profile_trace_rank_0.json.gz",
    ] {
        let f = shared_findings(rel, &AnalyzeOptions::default());
        let reads = of(&f, "blocking_device_to_host_read");
        assert!(!reads.is_empty(), "{rel}");
        for x in reads {
            assert!(!x.hint.contains("losses"), "{rel}: {}", x.hint);
        }
        for x in &f {
            assert!(!x.hint.contains("training"), "{rel}: {}", x.hint);
        }
    }
}

/// The DLRM ranks train (autograd nodes, `Optimizer.step#`): D15 advises
/// overlapping with backward and says nothing of tensor-parallel
/// inference.
#[test]
fn hints_on_training_traces_keep_training_advice() {
    let f = shared_findings(
        "param/dlrm_8rank/worker0_step_12.1694128201545.pt.trace.json.gz",
        &AnalyzeOptions::default(),
    );
    let comm = of(&f, "exposed_communication");
    assert_eq!(comm.len(), 1);
    let h = &comm[0].hint;
    assert!(
        h.contains("In training, let communication overlap backward"),
        "{h}"
    );
    assert!(!h.contains("tensor-parallel"), "{h}");
    let reads = shared_findings(
        "hta/trace_diff/control/control.json.gz",
        &AnalyzeOptions::default(),
    );
    let reads = of(&reads, "blocking_device_to_host_read");
    assert!(
        reads.iter().any(|x| x.hint.contains("accumulate losses")),
        "{reads:?}"
    );
    // Graphs are advice for training too; the serving engines' switch is
    // not.
    let dispatch: Vec<_> = f
        .iter()
        .filter(|x| x.hint.contains("These operators launch GPU work"))
        .collect();
    assert!(!dispatch.is_empty(), "{f:?}");
    for x in dispatch {
        assert!(x.hint.contains("Replay the step as CUDA graphs"), "{}", x.hint);
        assert!(!x.hint.contains("vLLM"), "{}", x.hint);
    }
}

/// The DLRM ranks load with `_SingleProcessDataLoaderIter`, whose
/// `__next__` pins the batch itself (five `aten::pin_memory` and five
/// `aten::_pin_memory` inside it on every rank): D11 must not advise
/// `pin_memory=True`. Their pageable copies are TorchRec's (under
/// `KJTAllToAllTensorsAwaitable wait()`, `sparse_data_dist`,
/// `aten::index` in the forward and backward), launched long after
/// `__next__` returned with other operators between: not the batch, so no
/// DataLoader advice for them either.
#[test]
fn dlrm_loader_pins_and_its_pageable_copies_are_not_the_batch() {
    let mut stalls = 0;
    for rank in 0..8 {
        let dir = shared().join("param/dlrm_8rank");
        let name = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .find(|n| n.starts_with(&format!("worker{rank}_")))
            .unwrap_or_else(|| panic!("no rank {rank} in {}", dir.display()));
        let f = shared_findings(&format!("param/dlrm_8rank/{name}"), &AnalyzeOptions::default());
        for x in of(&f, "dataloader_stall") {
            stalls += 1;
            assert!(!x.hint.contains("`pin_memory=True` and"), "{name}: {}", x.hint);
            assert!(
                x.hint.contains("the loader already pins its batches"),
                "{name}: {}",
                x.hint
            );
        }
        let copies = of(&f, "pageable_copies");
        assert_eq!(copies.len(), 1, "{name}: {f:?}");
        let hint = &copies[0].hint;
        assert!(
            !hint.contains("Use `DataLoader(pin_memory=True)`"),
            "{name}: {hint}"
        );
        assert!(
            hint.contains("They are not the DataLoader's batch"),
            "{name}: {hint}"
        );
    }
    // D11 reports on 7 of the 8 ranks (rank 1's loading stays under 5 %).
    assert_eq!(stalls, 7);
}

/// ResNet-50's input batch (19 MB) and labels are copied from pageable
/// memory right after `__next__` returns, the labels' copy after the
/// inputs' with nothing else between: the DataLoader's batch, which gets
/// DataLoader advice; its loader does not pin, so D11 advises it.
#[test]
fn resnet50_batch_copies_get_dataloader_advice() {
    let f = shared_findings(
        "kineto-tb-plugin/resnet50_num_workers_0.worker0.1623143089861.pt.trace.json.gz",
        &AnalyzeOptions::default(),
    );
    let copies = of(&f, "pageable_copies");
    assert_eq!(copies.len(), 1, "{f:?}");
    assert!(
        copies[0].hint.contains("Use `DataLoader(pin_memory=True)`"),
        "{}",
        copies[0].hint
    );
    assert!(
        !copies[0].hint.contains("not the DataLoader's batch"),
        "{}",
        copies[0].hint
    );
    let stall = of(&f, "dataloader_stall");
    assert!(
        stall[0]
            .hint
            .contains("`pin_memory=True` and `persistent_workers=True`"),
        "{}",
        stall[0].hint
    );
}

/// ResNet-50's other operators: `aten::empty` and `aten::resize_` lead the
/// list, and they allocate for the convolutions and batch norms that
/// launch the kernels, which the hint says rather than leaving them to read
/// as host-only operators.
#[test]
fn resnet50_allocations_run_inside_the_launching_operators() {
    let f = shared_findings(
        "kineto-tb-plugin/resnet50_num_workers_0.worker0.1623143089861.pt.trace.json.gz",
        &AnalyzeOptions::default(),
    );
    let other = of(&f, "cpu_bound_other_operators");
    assert_eq!(other.len(), 1, "{f:?}");
    let h = &other[0].hint;
    assert!(
        h.contains("(the most: `aten::empty`, 26 %; `aten::resize_`, 14 %; `aten::_convolution`, 6 %)"),
        "{h}"
    );
    assert!(
        h.contains(
            "`aten::empty` and `aten::resize_` run mostly inside operators that launch GPU work \
             (`aten::cudnn_convolution`, `aten::cudnn_batch_norm` and 6 more)"
        ),
        "{h}"
    );
}

/// TraceLens' B200 eager vLLM trace: the step's range names
/// `vllm::moe_forward`, a custom operator, as its heaviest operator with
/// 24 % of the time; the rest is eager dispatch, and the advice is for that.
#[test]
fn b200_step_range_with_a_custom_minority_gets_dispatch_advice() {
    let f = shared_findings(B200, &AnalyzeOptions::default());
    let range = of(&f, "cpu_bound_range");
    let step = range
        .iter()
        .find(|x| x.operator.as_deref() == Some("vllm::moe_forward"))
        .unwrap_or_else(|| panic!("{f:?}"));
    assert!(step.hint.contains("`vllm::moe_forward` at "), "{}", step.hint);
    assert!(step.hint.contains(", 24 % of it)"), "{}", step.hint);
    assert!(!step.hint.contains("is a custom operator"), "{}", step.hint);
    assert!(
        step.hint.contains("These operators launch GPU work"),
        "{}",
        step.hint
    );
}

/// TraceLens' vLLM graph decode: 421 of its 425 kernels replay from one
/// `hipGraphLaunch`, and the step's range before it is the engine's Python
/// (96 %): the advice is to overlap it with the replays, not to capture
/// graphs.
#[test]
fn vllm_host_time_around_its_graph_gets_overlap_advice() {
    let f = shared_findings(
        "tracelens/inference/vllm_decode_full/graph_execution.json.gz",
        &AnalyzeOptions::default(),
    );
    let range = of(&f, "cpu_bound_range");
    assert_eq!(range.len(), 1, "{f:?}");
    let h = &range[0].hint;
    assert!(
        h.contains("Most of this device's kernels (99 %) already run from HIP graph replays, so this time"),
        "{h}"
    );
    assert!(!h.contains("capture the step with"), "{h}");
}

/// Kernels a sliver of the window (vLLM's graph capture: 19.6 µs of kernels
/// in 59 ms; HTA's triton example: one 1.8 µs kernel in 13.3 s; the
/// TensorBoard plugin's GPU-metrics input: 48 µs in 13.4 ms): however few
/// blocks they launch, filling the SMs cannot move the step, so no D12.
#[test]
fn kernels_a_sliver_of_the_window_are_not_called_underfilled() {
    for rel in [
        "tracelens/inference/vllm_decode_full/capture_traces/graph_capture_rank_0.1773709742341309550.pt.trace.json.gz",
        "hta/triton_example/triton_example.json.gz",
        "kineto-tb-plugin/gpu_metrics_input.json",
    ] {
        let f = shared_findings(rel, &AnalyzeOptions::default());
        assert!(of(&f, "underfilled_kernels").is_empty(), "{rel}: {f:?}");
    }
}

/// HTA's nccl_data rank: each `DistributedDataParallel.forward` starts by
/// flattening its buffers, broadcasting them (`c10d::broadcast_`, Float and
/// Long) and unflattening them (`aten::unflatten_dense_tensors`, 15.25 and
/// 7.34 ms in the first forward): DDP's `broadcast_buffers=True`. The D2
/// finding on the range names that share and the switch; no finding
/// elsewhere does.
#[test]
fn nccl_data_ddp_forward_names_its_buffer_broadcast() {
    let f = shared_findings(
        "hta/nccl_parser_config/nccl_data.json.gz",
        &AnalyzeOptions::default(),
    );
    let ddp: Vec<&Finding> = f
        .iter()
        .filter(|x| x.annotation.as_deref() == Some("DistributedDataParallel.forward"))
        .filter(|x| x.id == "cpu_bound_range")
        .collect();
    assert_eq!(ddp.len(), 1, "{f:?}");
    let h = &ddp[0].hint;
    assert!(h.contains("broadcast_buffers=False"), "{h}");
    // About a third of the range's idle time (84 ms of 239 ms by an
    // independent sum over the flatten / broadcast / unflatten rows).
    let share: u32 = h
        .split(" % of this time")
        .next()
        .and_then(|s| s.rsplit(' ').next())
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("no share in: {h}"));
    assert!((30..=45).contains(&share), "{share} %: {h}");
    let others = f.iter().filter(|x| x.hint.contains("broadcast_buffers")).count();
    assert_eq!(others, 1, "only the DDP forward's finding names it");
}

/// The ROCm trace's 6.54 ms `hipLaunchKernel` (inside `AccumulateGrad`) is
/// the first launch of its add kernel; the second takes 4.7 µs. The trace
/// records no code loading (ROCm's never do), so the hint names the first
/// launch before descheduling.
#[test]
fn amd_slow_launch_is_its_kernels_first() {
    let f = shared_findings(AMD, &AnalyzeOptions::default());
    let x = of(&f, "slow_runtime_calls");
    assert_eq!(x.len(), 1, "{f:?}");
    assert!(
        x[0].hint.contains("The longest call is the first launch of `at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>")
            && x[0].hint.contains("(its one later launch takes 4.7 µs)")
            && x[0].hint.contains("HIP_ENABLE_DEFERRED_LOADING=0"),
        "{}",
        x[0].hint
    );
}

/// DDP times its first iterations with CUDA events: on nccl_data, 24
/// `cudaEventSynchronize` calls inside `DistributedDataParallel.forward`,
/// each followed by `cudaEventElapsedTime`. HTA's event-sync trace waits
/// on an event it then reads, and synchronizes the device once at the end.
#[test]
fn event_waits_read_as_timers_get_timer_advice() {
    let f = shared_findings(
        "hta/nccl_parser_config/nccl_data.json.gz",
        &AnalyzeOptions::default(),
    );
    let x = of(&f, "explicit_sync");
    assert_eq!(x.len(), 1, "{f:?}");
    assert!(
        x[0].title.contains("calls cudaEventSynchronize 24 times"),
        "{}",
        x[0].title
    );
    assert!(
        x[0].hint
            .contains("the work queued before a recorded event (cudaEventSynchronize)")
            && x[0].hint.contains("DDP's own runtime statistics"),
        "{}",
        x[0].hint
    );
    assert!(!x[0].hint.contains("all queued GPU work"), "{}", x[0].hint);

    let f = shared_findings(
        "hta/critical_path/cuda_event_sync/event_sync_trace.json.gz",
        &AnalyzeOptions::default(),
    );
    let x = of(&f, "explicit_sync");
    assert_eq!(x.len(), 1, "{f:?}");
    assert!(
        x[0].title
            .contains("synchronizes 2 times (cudaDeviceSynchronize once, cudaEventSynchronize once)"),
        "{}",
        x[0].title
    );
    assert!(
        x[0].hint.contains("timing code that reads its events every step")
            && x[0]
                .hint
                .contains("The other synchronization (cudaDeviceSynchronize)"),
        "{}",
        x[0].hint
    );
}

/// xDiT's SD3.5 scheduler finds its timestep with
/// `(schedule_timesteps == timestep).nonzero()`: the read is the size of
/// `nonzero`'s result, which deferring `.item()` would not remove.
#[test]
fn xdit_nonzero_reads_a_data_dependent_size() {
    let f = shared_findings(
        "tracelens/inference/xdit_sd_3.5/profile_trace_rank_0.json.gz",
        &AnalyzeOptions::default(),
    );
    let x: Vec<_> = of(&f, "blocking_device_to_host_read")
        .into_iter()
        .filter(|x| x.operator.as_deref() == Some("aten::nonzero"))
        .collect();
    assert_eq!(x.len(), 1, "{f:?}");
    assert!(
        x[0].title.starts_with("`aten::nonzero` at diffusers/schedulers/scheduling_flow_match_euler_discrete.py(386): index_for_timestep reads the size of a data-dependent result"),
        "{}",
        x[0].title
    );
    assert!(x[0].hint.contains("torch.nonzero_static"), "{}", x[0].hint);
    assert!(!x[0].hint.contains(".item()"), "{}", x[0].hint);
}

/// HTA's sampled ranks keep only the runtime calls that launched GPU work
/// (1,204 and 1,154 calls: launches, copies, memsets; no synchronize,
/// event or stream-wait call, though NCCL runs on a stream of its own):
/// the queued work's hint says the trace was filtered.
#[test]
fn sampled_ranks_are_filtered_traces() {
    for (rank, calls) in [(0, 1204), (1, 1154)] {
        let f = shared_findings(
            &format!("hta/trace_filter/sampled_rank-{rank}.json.gz"),
            &AnalyzeOptions::default(),
        );
        let x = of(&f, "launch_delay_outliers");
        assert!(!x.is_empty(), "{f:?}");
        for x in x {
            assert!(
                x.hint.contains(&format!(
                    "Every one of its {calls} runtime calls launched GPU work"
                )),
                "{}",
                x.hint
            );
        }
    }
    // HTA's backward_thread trace records one runtime call, a launch whose
    // kernel sat queued: too few calls to say anything of a filter.
    let f = shared_findings("hta/call_stack/backward_thread.json", &AnalyzeOptions::default());
    let x = of(&f, "launch_delay_outliers");
    assert_eq!(x.len(), 1, "{f:?}");
    assert!(!x[0].hint.contains("trace was filtered"), "{}", x[0].hint);
}

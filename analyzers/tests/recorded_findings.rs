//! Findings on the GPU recordings in `fixtures/scenarios/recorded` (H100,
//! PyTorch 2.11; see its README): each planted problem is found with the
//! right detector, operator, range and source line; its fix makes the
//! finding go away; the clean baseline has no finding worth acting on; and
//! each finding's predicted saving is compared with what its fix measurably
//! saved (the README's "Predicted vs measured savings" table).
//!
//! Source lines: PyTorch's `with_stack` frames name a Python function by
//! its `def` line (`zero_grad_loop.py(49): opt_step`), so "the line where
//! the problem is planted" is the line of the function that plants it.
//!
//! # The honest comparison
//!
//! The recordings were profiled with `record_shapes` and `with_stack`,
//! which make every operator several times slower on the host (the
//! zero_grad_loop step is 70 ms profiled against 25.6 ms unprofiled), while
//! the step times that say what a fix saves were measured without the
//! profiler. Milliseconds from one cannot be compared with milliseconds of
//! the other. We compare shares of the step: the finding's
//! `est_savings_ns` over the profiled window (4 steps), against the
//! measured saving over the planted variant's unprofiled median step
//! (README: planted − fixed over planted). Within 25 % means the ratio of
//! the two lies in [0.75, 1.25].

use gapscope_analyzers::analysis::{Analysis, AnalyzeOptions};
use gapscope_analyzers::analyze;
use gapscope_analyzers::detectors::Finding;
use gapscope_collectors::kineto::{import_file, ImportOptions};
use std::path::Path;

fn recorded(name: &str) -> Analysis {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../fixtures/scenarios/recorded")
        .join(format!("{name}.pt.trace.json.gz"));
    let trace = import_file(&path, &ImportOptions::default()).unwrap_or_else(|e| panic!("{e}"));
    let a = analyze(&trace, &AnalyzeOptions::default());
    assert_eq!(a.devices.len(), 1, "{name}: one GPU");
    assert_eq!(a.steps.len(), 4, "{name}: the 4 profiled steps");
    a
}

fn window_ns(a: &Analysis) -> i64 {
    a.devices[0].breakdown.window_ns
}

fn of<'a>(a: &'a Analysis, id: &str) -> Vec<&'a Finding> {
    a.findings.iter().filter(|f| f.id == id).collect()
}

fn listing(a: &Analysis) -> String {
    a.findings
        .iter()
        .map(|f| {
            format!(
                "\n  {} {} sav={} idle={} op={:?} ann={:?} src={:?}",
                f.detector, f.id, f.est_savings_ns, f.idle_ns, f.operator, f.annotation, f.source
            )
        })
        .collect()
}

/// Measured saving of each fix as a share of the planted step (README's
/// unprofiled table: planted and fixed median step, ms).
#[allow(clippy::approx_constant)] // dataloader's 2.718 ms is a measurement, not e
fn measured_share(scenario: &str) -> f64 {
    let (planted, fixed) = match scenario {
        "baseline" => (2.351, 2.368),
        "cpu_op" => (16.228, 1.977),
        "dataloader" => (26.223, 2.718),
        "item_every_step" => (4.768, 2.902),
        "offload_pingpong" => (33.507, 1.011),
        "pageable_copy" => (11.388, 3.971),
        "scalar_htod" => (24.705, 20.720),
        "zero_grad_loop" => (25.608, 18.347),
        _ => unreachable!(),
    };
    (planted - fixed) / planted
}

/// Predicted share of the step: the findings' savings over the profiled
/// window.
fn predicted_share(a: &Analysis, findings: &[&Finding]) -> f64 {
    findings.iter().map(|f| f.est_savings_ns).sum::<i64>() as f64 / window_ns(a) as f64
}

fn ratio(a: &Analysis, findings: &[&Finding], scenario: &str) -> f64 {
    predicted_share(a, findings) / measured_share(scenario)
}

fn within_25_percent(r: f64) -> bool {
    (0.75..=1.25).contains(&r)
}

/// The top finding has detector `detector` and id `id`.
fn assert_top(a: &Analysis, name: &str, detector: &str, id: &str) -> Finding {
    let top = a
        .findings
        .first()
        .unwrap_or_else(|| panic!("{name}: no findings"));
    assert_eq!(
        (top.detector.as_str(), top.id.as_str()),
        (detector, id),
        "{name}:{}",
        listing(a)
    );
    top.clone()
}

#[test]
fn per_parameter_loops_are_the_top_finding_and_their_saving_matches() {
    let a = recorded("zero_grad_loop");
    // The model (100 small Linear layers, profiled with stacks and shapes)
    // is host-bound with or without the loops: the host time spread over
    // its other operators is one finding that names no operator, in the
    // fixed recording too, and its replay saves more than the loops'. The
    // planted loops are the top finding that names its culprit.
    let spread = &a.findings[0];
    assert_eq!(spread.id, "cpu_bound_other_operators", "{}", listing(&a));
    assert_eq!(spread.operator, None);
    let fixed = recorded("zero_grad_loop.fixed");
    assert_eq!(
        of(&fixed, "cpu_bound_other_operators").len(),
        1,
        "{}",
        listing(&fixed)
    );
    let named = Analysis {
        findings: a
            .findings
            .iter()
            .filter(|f| f.operator.is_some())
            .cloned()
            .collect(),
        ..a.clone()
    };
    let top = assert_top(&named, "zero_grad_loop", "D4", "per_parameter_loop");
    // The hand-written momentum SGD (`opt_step`, def at line 49) launches
    // `add_` per parameter inside the user's `optimizer` range.
    assert_eq!(top.operator.as_deref(), Some("aten::add_"), "{top:?}");
    assert_eq!(top.annotation.as_deref(), Some("optimizer"), "{top:?}");
    assert_eq!(
        top.source.as_deref(),
        Some("zero_grad_loop.py(49): opt_step"),
        "{top:?}"
    );
    assert!(top.hint.contains("foreach=True"), "{}", top.hint);
    // And `p.grad.zero_()` per parameter (`zero_grad`, def at line 44).
    let loops = of(&a, "per_parameter_loop");
    let zero = loops
        .iter()
        .find(|f| f.annotation.as_deref() == Some("zero_grad"))
        .unwrap_or_else(|| panic!("{}", listing(&a)));
    assert_eq!(zero.operator.as_deref(), Some("aten::zero_"), "{zero:?}");
    assert_eq!(
        zero.source.as_deref(),
        Some("zero_grad_loop.py(44): zero_grad"),
        "{zero:?}"
    );
    assert!(zero.hint.contains("set_to_none=True"), "{}", zero.hint);

    // The fix (foreach SGD, set_to_none) removes both loops.
    assert!(of(&fixed, "per_parameter_loop").is_empty(), "{}", listing(&fixed));

    // One fix for both loops: their savings together (README: 0.87).
    let r = ratio(&a, &loops, "zero_grad_loop");
    assert!(within_25_percent(r), "predicted/measured {r:.2}");
}

#[test]
fn scalar_host_to_device_copies_are_found_at_their_functions() {
    let a = recorded("scalar_htod");
    let scalar = of(&a, "scalar_host_to_device_copy");
    let sources: Vec<&str> = scalar.iter().filter_map(|f| f.source.as_deref()).collect();
    // `torch.tensor(eps, device=...)` in `_rms_norm` (line 28) and
    // `torch.rsqrt(torch.tensor(d, device=...))` in `_scale` (line 22).
    assert_eq!(
        sources,
        ["scalar_htod.py(28): _rms_norm", "scalar_htod.py(22): _scale"],
        "{}",
        listing(&a)
    );
    for f in &scalar {
        assert_eq!(f.detector, "D7");
        assert_eq!(f.operator.as_deref(), Some("aten::copy_"), "{f:?}");
        // 8 layers: 2 `_rms_norm` and 1 `_scale` copy per layer per step.
        assert!(f.occurrences >= 4 * 8, "{f:?}");
    }
    let fixed = recorded("scalar_htod.fixed");
    assert!(
        of(&fixed, "scalar_host_to_device_copy").is_empty(),
        "{}",
        listing(&fixed)
    );

    // Known gap (README table): profiled, the host is the bottleneck (42 ms
    // a step against 19.8 ms of GPU work), so the queue is nearly empty
    // when the syncs wait, and the replay, which removes the waits, the
    // operators that make the copies and the copies, predicts 3.3 % of the
    // step against 16.1 % measured without the profiler (ratio 0.20). Even
    // the idle the fix could remove at most (the waits and the drains
    // after them, `explained_ns`) is 3.7 %. Assert what holds: a positive
    // saving, and an underestimate.
    let r = ratio(&a, &scalar, "scalar_htod");
    assert!(r > 0.0 && r < 0.75, "predicted/measured {r:.2}");
}

#[test]
fn item_every_step_is_found_at_the_read() {
    let a = recorded("item_every_step");
    let reads = of(&a, "blocking_device_to_host_read");
    assert_eq!(reads.len(), 1, "{}", listing(&a));
    let f = reads[0];
    assert_eq!(f.detector, "D5");
    assert_eq!(f.operator.as_deref(), Some("aten::item"), "{f:?}");
    assert_eq!(f.annotation.as_deref(), Some("log_loss"), "{f:?}");
    // `loss.item()` is in `step` (def at line 44).
    assert_eq!(f.source.as_deref(), Some("item_every_step.py(44): step"), "{f:?}");
    assert_eq!(f.occurrences, 4, "one read per profiled step");
    assert!(f.hint.contains(".item()"), "{}", f.hint);

    // The fix reads once every 10 steps: one read in the 4 profiled steps.
    let fixed = recorded("item_every_step.fixed");
    let fixed_reads: u64 = of(&fixed, "blocking_device_to_host_read")
        .iter()
        .map(|f| f.occurrences)
        .sum();
    assert!(fixed_reads <= 1, "{}", listing(&fixed));

    // The drain after each read (the GPU empty while the host prepares the
    // next batch, ~1.8 ms of the 6.3 ms profiled step) bounds what not
    // reading can save: `explained_ns` covers it though D2 claims it.
    let w = window_ns(&a);
    assert!(f.explained_ns - f.idle_ns > w / 5, "{f:?}");
    assert!(f.explained_ns < w / 2, "{f:?}");

    // Known gap (README table): profiled, the host is the bottleneck (6.3 ms
    // a step against 2.6 ms of GPU work), so even without the read the host
    // could not get ahead of the GPU: the replay predicts 1.2 % against
    // 39 % measured without the profiler, though the wait and its drain
    // (29.6 % of the step) are what the fix removes when the host is fast.
    let r = ratio(&a, &reads, "item_every_step");
    assert!(r > 0.0 && r < 0.75, "predicted/measured {r:.2}");
}

#[test]
fn pageable_copy_is_the_top_finding_and_its_saving_matches() {
    let a = recorded("pageable_copy");
    let top = assert_top(&a, "pageable_copy", "D8", "pageable_copies");
    // `host[i % 2].to(ctx.device)` in `get_batch` (def at line 57).
    assert_eq!(top.operator.as_deref(), Some("aten::to"), "{top:?}");
    assert_eq!(top.annotation.as_deref(), Some("h2d_copy"), "{top:?}");
    assert_eq!(
        top.source.as_deref(),
        Some("pageable_copy.py(57): get_batch"),
        "{top:?}"
    );
    assert!(top.hint.contains("pin_memory"), "{}", top.hint);

    let fixed = recorded("pageable_copy.fixed");
    assert!(of(&fixed, "pageable_copies").is_empty(), "{}", listing(&fixed));

    let r = ratio(&a, &[&top], "pageable_copy");
    assert!(within_25_percent(r), "predicted/measured {r:.2}");
}

#[test]
fn offload_ping_pong_is_the_top_finding_and_its_saving_matches() {
    let a = recorded("offload_pingpong");
    let top = assert_top(&a, "offload_pingpong", "D10", "offload_ping_pong");
    // `model.to(ctx.device)` in `step` (def at line 35), inside
    // `offload.h2d`.
    assert_eq!(top.operator.as_deref(), Some("aten::to"), "{top:?}");
    assert_eq!(top.annotation.as_deref(), Some("offload.h2d"), "{top:?}");
    assert_eq!(
        top.source.as_deref(),
        Some("offload_pingpong.py(35): step"),
        "{top:?}"
    );
    // 4 steps, 8 weight tensors of 2 sizes... each a round trip per step.
    assert!(top.occurrences >= 4, "{top:?}");

    let fixed = recorded("offload_pingpong.fixed");
    assert!(of(&fixed, "offload_ping_pong").is_empty(), "{}", listing(&fixed));

    let r = ratio(&a, &[&top], "offload_pingpong");
    assert!(within_25_percent(r), "predicted/measured {r:.2}");
}

#[test]
fn host_side_range_is_the_top_finding_and_its_saving_matches() {
    let a = recorded("cpu_op");
    let top = assert_top(&a, "cpu_op", "D2", "cpu_bound_range");
    // The `features` range (def at line 19) sorts, sums and normalises on
    // the CPU; `torch.sort` takes most of its time.
    assert_eq!(top.operator.as_deref(), Some("aten::sort"), "{top:?}");
    assert_eq!(top.annotation.as_deref(), Some("features"), "{top:?}");
    assert_eq!(top.source.as_deref(), Some("cpu_op.py(19): features"), "{top:?}");
    assert_eq!(top.occurrences, 4, "one `features` range per profiled step");

    let fixed = recorded("cpu_op.fixed");
    assert!(
        !fixed
            .findings
            .iter()
            .any(|f| f.operator.as_deref() == Some("aten::sort")
                || (f.detector == "D2" && f.annotation.as_deref() == Some("features"))),
        "{}",
        listing(&fixed)
    );

    // The fix moves the whole range to the GPU, and the finding explains
    // the whole range (README: 0.86; the sort alone was 0.63).
    let r = ratio(&a, &[&top], "cpu_op");
    assert!(within_25_percent(r), "predicted/measured {r:.2}");
}

#[test]
fn dataloader_stall_is_the_top_finding_and_its_saving_matches() {
    let a = recorded("dataloader");
    let top = assert_top(&a, "dataloader", "D11", "dataloader_stall");
    let ann = top.annotation.as_deref().unwrap_or("");
    assert!(ann.contains("_SingleProcessDataLoaderIter.__next__"), "{top:?}");
    // The slow decode in `SlowDecodeDataset.__getitem__` (def at line 39).
    assert_eq!(
        top.source.as_deref(),
        Some("dataloader.py(39): __getitem__"),
        "{top:?}"
    );
    assert!(top.hint.contains("num_workers"), "{}", top.hint);

    let fixed = recorded("dataloader.fixed");
    assert!(of(&fixed, "dataloader_stall").is_empty(), "{}", listing(&fixed));

    let r = ratio(&a, &[&top], "dataloader");
    assert!(within_25_percent(r), "predicted/measured {r:.2}");
}

/// "Worth acting on": a finding predicted to save at least 10 % of the
/// profiled window. The smallest planted effect measured is 16 % of the
/// step (scalar_htod), and every planted finding that matches its
/// measurement predicts at least 24 %; below 10 % is what the profiler's
/// own host overhead leaves in a clean run (the baseline's largest finding,
/// D2 host time, is 7.4 % of the profiled window in one of its two runs
/// and 1.8 % in the other: the unprofiled runs differ by 0.7 %).
const BASELINE_MAX_SHARE: f64 = 0.10;

#[test]
fn clean_baseline_has_no_finding_worth_acting_on() {
    for name in ["baseline", "baseline.fixed"] {
        let a = recorded(name);
        let w = window_ns(&a) as f64;
        for f in &a.findings {
            assert!(
                (f.est_savings_ns as f64) < BASELINE_MAX_SHARE * w,
                "{name}: {f:?}"
            );
            // None of the planted patterns.
            assert!(
                !matches!(f.detector.as_str(), "D4" | "D5" | "D7" | "D8" | "D10" | "D11"),
                "{name}: {f:?}"
            );
        }
    }
}

/// Prints the README table's predicted columns
/// (`cargo test --test recorded_findings table -- --nocapture`).
#[test]
fn table() {
    for name in ["baseline", "baseline.fixed"] {
        let a = recorded(name);
        if let Some(f) = a.findings.first() {
            println!(
                "| {name} | largest: {} {} {:?} {:.1}% of the window",
                f.detector,
                f.id,
                f.annotation,
                100.0 * f.est_savings_ns as f64 / window_ns(&a) as f64
            );
        }
    }
    for (scenario, ids) in [
        ("zero_grad_loop", &["per_parameter_loop"][..]),
        ("scalar_htod", &["scalar_host_to_device_copy"]),
        ("item_every_step", &["blocking_device_to_host_read"]),
        ("pageable_copy", &["pageable_copies"]),
        ("offload_pingpong", &["offload_ping_pong"]),
        ("cpu_op", &["cpu_bound_range"]),
        ("dataloader", &["dataloader_stall"]),
    ] {
        let a = recorded(scenario);
        let mut fs: Vec<&Finding> = ids.iter().flat_map(|id| of(&a, id)).collect();
        if scenario == "cpu_op" {
            fs.truncate(1);
        }
        let sav: i64 = fs.iter().map(|f| f.est_savings_ns).sum();
        let explained: i64 = fs.iter().map(|f| f.explained_ns).sum();
        println!(
            "| {scenario} | {:.2} ms/step | {:.1}% | explained {:.1}% | measured {:.1}% | ratio {:.2} | {:?}",
            sav as f64 / 4e6,
            100.0 * predicted_share(&a, &fs),
            100.0 * explained as f64 / window_ns(&a) as f64,
            100.0 * measured_share(scenario),
            ratio(&a, &fs, scenario),
            fs.iter()
                .map(|f| (f.est_savings_ns, f.source.as_deref()))
                .collect::<Vec<_>>()
        );
    }
}

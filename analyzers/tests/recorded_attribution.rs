//! Idle attribution on the GPU recordings in `fixtures/scenarios/recorded`
//! (H100, PyTorch 2.11; see its README): where a planted problem leaves
//! the GPU idle, the planted cause is the top cause, named with the
//! operator or range and source line the scenario program plants it at,
//! and the fixed variant no longer shows it.

use gapscope_analyzers::analysis::{Analysis, AnalyzeOptions, DeviceReport};
use gapscope_analyzers::analyze;
use gapscope_analyzers::causes::Cause;
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

fn device(a: &Analysis) -> &DeviceReport {
    &a.devices[0]
}

/// The cause with the most idle time.
fn top_cause(d: &DeviceReport) -> Cause {
    d.idle_by_cause_ns.top().expect("some idle time")
}

fn share(d: &DeviceReport, cause: Cause) -> f64 {
    d.idle_by_cause_ns.get(cause) as f64 / d.breakdown.idle_ns as f64
}

#[test]
fn dataloader_without_workers_is_blamed_on_its_next() {
    let a = recorded("dataloader");
    let d = device(&a);
    assert_eq!(top_cause(d), Cause::Dataloader);
    assert!(share(d, Cause::Dataloader) > 0.8, "{:?}", d.idle_by_cause_ns);
    let top = &d.top_idle_operators[0];
    assert_eq!(top.cause, Cause::Dataloader);
    let ann = top.annotation.as_deref().unwrap_or("");
    assert!(ann.contains("_SingleProcessDataLoaderIter.__next__"), "{top:?}");
    assert!(
        top.source.as_deref().unwrap_or("").contains("dataloader.py"),
        "{top:?}"
    );

    // With workers the training thread no longer waits on decoding.
    let fixed = recorded("dataloader.fixed");
    let planted_ns = d.idle_by_cause_ns.get(Cause::Dataloader);
    let fixed_ns = device(&fixed).idle_by_cause_ns.get(Cause::Dataloader);
    assert!(
        fixed_ns * 20 < planted_ns,
        "dataloader idle {fixed_ns} vs {planted_ns} ns"
    );
}

#[test]
fn host_side_operator_is_blamed_with_its_source_line() {
    let a = recorded("cpu_op");
    let d = device(&a);
    assert_eq!(top_cause(d), Cause::CpuOp);
    assert!(share(d, Cause::CpuOp) > 0.7, "{:?}", d.idle_by_cause_ns);
    let top = d
        .top_idle_operators
        .iter()
        .find(|o| o.cause == Cause::CpuOp)
        .unwrap();
    // cpu_op.py sorts rows on the host inside its `features` range.
    assert_eq!(top.operator.as_deref(), Some("aten::sort"), "{top:?}");
    assert_eq!(top.annotation.as_deref(), Some("features"), "{top:?}");
    assert!(
        top.source.as_deref().unwrap_or("").starts_with("cpu_op.py("),
        "{top:?}"
    );

    let fixed = recorded("cpu_op.fixed");
    let per_step = |a: &Analysis| device(a).idle_by_cause_ns.get(Cause::CpuOp) / 4;
    assert!(
        per_step(&fixed) * 5 < per_step(&a),
        "{} vs {}",
        per_step(&fixed),
        per_step(&a)
    );
}

#[test]
fn offload_ping_pong_idles_in_synchronous_copies() {
    let a = recorded("offload_pingpong");
    let d = device(&a);
    // `model.to('cpu')` copies block the host until the GPU drains.
    assert_eq!(top_cause(d), Cause::Sync, "{:?}", d.idle_by_cause_ns);
    let fixed = recorded("offload_pingpong.fixed");
    assert_eq!(device(&fixed).idle_by_cause_ns.get(Cause::Sync), 0);
}

#[test]
fn clean_baseline_keeps_the_gpu_mostly_busy() {
    for name in ["baseline", "baseline.fixed"] {
        let a = recorded(name);
        let b = &device(&a).breakdown;
        let idle = b.idle_ns as f64 / b.window_ns as f64;
        assert!(idle < 0.3, "{name}: idle {idle:.2}");
        assert_eq!(device(&a).idle_by_cause_ns.get(Cause::Dataloader), 0, "{name}");
    }
}

//! TensorBoard's PyTorch profiler plugin checks its GPU metrics with a test
//! of its own (`tb_plugin/test/test_profiler.py`, `test_dump_gpu_metrics`):
//! `gpu_metrics_input.json` in, `gpu_metrics_expected.json` out, the input
//! trace with the counter events the plugin appends. gapscope computes the
//! same counters from the same input and must find the expected values.
//!
//! The plugin's test scales its values for the UI and says so in comments:
//! the utilization buckets are "faked data ... real data values are 1/100 of
//! these" and the SM efficiency ranges "real data values are 1/10 of
//! these". Both scales are applied here, nothing else. Each series also
//! starts with the plugin's baseline samples (a 1, then a 0, at the first
//! bucket's time), which only set the chart's y axis; they are checked and
//! skipped. Times in the file are µs since the epoch.

#[allow(dead_code)]
mod shared_traces;

use gapscope_analyzers::analysis::AnalyzeOptions;
use gapscope_analyzers::gpu_metrics::sm_efficiency_spans;
use gapscope_analyzers::Session;
use gapscope_collectors::kineto::{import_file, ImportOptions};
use serde_json::Value;
use shared_traces::shared;

/// `(µs, value)` of the counter events named `name`, in file order.
fn counters(expected: &Value, name: &str, arg: &str) -> Vec<(i64, f64)> {
    expected["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["ph"] == "C" && e["name"] == name)
        .map(|e| (e["ts"].as_i64().unwrap(), e["args"][arg].as_f64().unwrap()))
        .collect()
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-12 * a.abs().max(b.abs()).max(1.0)
}

#[test]
fn utilization_and_sm_efficiency_equal_the_plugins_expectations() {
    let dir = shared().join("kineto-tb-plugin");
    let trace = import_file(&dir.join("gpu_metrics_input.json"), &ImportOptions::default()).unwrap();
    let expected: Value =
        serde_json::from_slice(&std::fs::read(dir.join("gpu_metrics_expected.json")).unwrap()).unwrap();
    let us = |ns: i64| (trace.meta.origin_ns + ns) / 1_000;
    let session = Session::new(&trace, &AnalyzeOptions::default());
    let device = &session.analysis().devices[0];
    assert_eq!(device.device, 0);

    // Utilization: 1000 µs buckets over the 13,896 µs the trace spans.
    let util = &device.gpu_metrics.utilization_timeline;
    assert_eq!(util.bucket_ns, 1_000_000);
    let want = counters(&expected, "GPU 0 Utilization", "GPU Utilization");
    assert_eq!(
        (want[0].1, want[1].1),
        (1.0, 0.0),
        "the plugin's baseline samples"
    );
    assert_eq!(want[0].0, want[2].0);
    let want = &want[2..];
    assert_eq!(util.samples.len(), want.len());
    for (got, want) in util.samples.iter().zip(want) {
        assert_eq!(us(got.0), want.0);
        assert!(close(got.1, want.1 / 100.0), "{got:?} vs {want:?} / 100");
    }

    // SM efficiency: each stretch as a (start, value) and (end, 0) pair.
    let want = counters(&expected, "GPU 0 Est. SM Efficiency", "Est. SM Efficiency");
    assert_eq!(
        (want[0].1, want[1].1),
        (1.0, 0.0),
        "the plugin's baseline samples"
    );
    let want = &want[2..];
    let spans = sm_efficiency_spans(session.trace(), 0);
    assert_eq!(spans.len() * 2, want.len());
    for (span, pair) in spans.iter().zip(want.chunks(2)) {
        assert_eq!((us(span.0), us(span.1)), (pair[0].0, pair[1].0));
        assert!(close(span.2, pair[0].1 / 10.0), "{span:?} vs {pair:?} / 10");
        assert_eq!(pair[1].1, 0.0);
    }

    // The overall numbers follow from the same stretches over the one step.
    let m = &device.gpu_metrics;
    let step = session.window().span;
    let kernel_ns: i64 = session.devices()[0]
        .kernels
        .iter()
        .map(|&(s, e)| e.min(step.1) - s.max(step.0))
        .filter(|&d| d > 0)
        .sum();
    assert!(close(
        m.gpu_utilization,
        kernel_ns as f64 / (step.1 - step.0) as f64
    ));
    let eff: f64 = spans.iter().map(|s| s.2 * (s.1 - s.0) as f64).sum::<f64>() / (step.1 - step.0) as f64;
    assert!(close(m.est_sm_efficiency.unwrap(), eff));
}

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

/// Occupancy is kept as an f32 per kernel (seven significant digits, far
/// more than the whole percents Kineto writes), so sums of fractions agree
/// to that precision.
fn close_f32(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-6 * a.abs().max(b.abs()).max(1.0)
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

/// The plugin's own occupancy test (`test_gpu_utilization`): four kernels
/// with a duration and one without on device 1, occupancies given as
/// fractions. The device's number is the duration-weighted mean; the
/// zero-length kernel weighs nothing; per kernel name the same mean over
/// that name's rows. Fractions take the importer's serde path, so this also
/// checks that path keeps the value.
#[test]
fn achieved_occupancy_equals_the_plugins_expectations() {
    let kernel = |name: &str, ts: u32, dur: u32, corr: u32, occ: f64| {
        format!(
            r#"{{"ph": "X", "cat": "Kernel", "name": "{name}", "pid": 1, "tid": "stream 7", "ts": {ts}, "dur": {dur}, "args": {{"correlation": {corr}, "device": 1, "est. achieved occupancy %": {occ}}}}}"#
        )
    };
    let (nll, gemm) = (
        "void cunn_ClassNLLCriterion_updateGradInput_kernel<float>",
        "void gemmSN_TN_kernel_64addr",
    );
    let events = [
        r#"{"ph": "X", "cat": "Operator", "name": "aten::mat_mul", "pid": 13721, "tid": "456", "ts": 100, "dur": 100, "args": {"External id": 2}}"#.to_string(),
        kernel(nll, 130, 10, 334, 0.6),
        kernel(gemm, 135, 15, 335, 0.1),
        kernel(gemm, 150, 0, 336, 0.2),
        kernel(nll, 145, 25, 337, 1.0),
        kernel(nll, 200, 20, 338, 0.3),
    ];
    let json = format!(r#"{{"traceEvents": [{}]}}"#, events.join(",\n"));
    let trace = gapscope_collectors::kineto::import_bytes(
        json.as_bytes(),
        "occupancy.json",
        &ImportOptions::default(),
    )
    .unwrap();
    let session = Session::new(&trace, &AnalyzeOptions::default());
    let a = session.analysis();
    let device = a.devices.iter().find(|d| d.device == 1).unwrap();
    let want = (0.6 * 10.0 + 0.1 * 15.0 + 1.0 * 25.0 + 0.3 * 20.0) / (10.0 + 15.0 + 25.0 + 20.0);
    let got = device.gpu_metrics.est_achieved_occupancy_pct.unwrap();
    assert!(close_f32(got, want), "{got} vs {want}");

    let row = |name: &str| a.kernels.rows.iter().find(|r| r.name == name).unwrap();
    assert!(close_f32(row(gemm).mean_occupancy_pct.unwrap(), 0.1));
    let nll_want = (0.6 * 10.0 + 1.0 * 25.0 + 0.3 * 20.0) / (10.0 + 25.0 + 20.0);
    assert!(close_f32(row(nll).mean_occupancy_pct.unwrap(), nll_want));
}

/// On the plugin's real sample trace (ResNet-50 on a V100, integer
/// percents, the importer's fast path) the device's number equals the
/// plugin's rule computed here straight from the JSON, over the analysed
/// window; and a trace without the argument reports none.
#[test]
fn achieved_occupancy_of_a_real_trace_follows_the_plugins_rule() {
    let path =
        shared().join("kineto-tb-plugin/resnet50_num_workers_0.worker0.1623143089861.pt.trace.json.gz");
    let trace = import_file(&path, &ImportOptions::default()).unwrap();
    let session = Session::new(&trace, &AnalyzeOptions::default());
    let (ws, we) = session.window().span;
    let origin = trace.meta.origin_ns;

    let mut text = Vec::new();
    std::io::Read::read_to_end(
        &mut flate2::read::GzDecoder::new(std::fs::File::open(&path).unwrap()),
        &mut text,
    )
    .unwrap();
    let doc: Value = serde_json::from_slice(&text).unwrap();
    let (mut weighted, mut total, mut kernels) = (0.0, 0i64, 0);
    for e in doc["traceEvents"].as_array().unwrap() {
        let Some(occ) = e["args"]["est. achieved occupancy %"].as_f64() else {
            continue;
        };
        if e["cat"] != "Kernel" || e["args"]["device"] != 0 {
            continue;
        }
        kernels += 1;
        // ts and dur are whole µs in this trace.
        let s = e["ts"].as_i64().unwrap() * 1_000 - origin;
        let t = s + e["dur"].as_i64().unwrap() * 1_000;
        let d = t.min(we) - s.max(ws);
        if d > 0 {
            weighted += occ * d as f64;
            total += d;
        }
    }
    assert!(kernels > 1_000 && total > 0, "{kernels} kernels, {total} ns");
    let want = weighted / total as f64;
    let device = &session.analysis().devices[0];
    let got = device.gpu_metrics.est_achieved_occupancy_pct.unwrap();
    assert!(close_f32(got, want), "{got} vs {want}");

    let input = import_file(
        &shared().join("kineto-tb-plugin/gpu_metrics_input.json"),
        &ImportOptions::default(),
    )
    .unwrap();
    let s = Session::new(&input, &AnalyzeOptions::default());
    assert_eq!(
        s.analysis().devices[0].gpu_metrics.est_achieved_occupancy_pct,
        None
    );
    assert!(s
        .analysis()
        .kernels
        .rows
        .iter()
        .all(|r| r.mean_occupancy_pct.is_none()));
}

//! A time window gives the same analysis whether the importer drops the
//! rows outside it as it reads (`ReadLimits::time_window`, one or two passes)
//! or the whole trace is imported and the analysis cuts it: on every real
//! trace under ../shared/traces and fixtures/, for windows with and without
//! a start, alone and with the step options.

mod common;
use common::*;
use gapscope_analyzers::analysis::AnalyzeOptions;
use gapscope_analyzers::analyze;
use gapscope_analyzers::window::{event_extent, TimeRange, WindowOptions};
use gapscope_collectors::kineto::{
    import_bytes, import_bytes_partial, import_file, import_file_partial, ImportOptions, ReadLimits,
};
use std::path::{Path, PathBuf};

fn traces(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        let name = p.to_string_lossy();
        if p.is_dir() {
            traces(&p, out);
        } else if name.ends_with(".json") || name.ends_with(".json.gz") {
            out.push(p);
        }
    }
}

/// The analysis as JSON, without what depends on the rows read: the
/// whole trace's row counts and the importer's counts.
fn comparable(a: &gapscope_analyzers::analysis::Analysis) -> serde_json::Value {
    let mut j = serde_json::to_value(a).unwrap();
    j["diagnostics"]["rows"] = serde_json::Value::Null;
    j["diagnostics"]["importer"] = serde_json::Value::Null;
    j
}

/// The first few paths where two JSON values differ, with both values.
fn differences(a: &serde_json::Value, b: &serde_json::Value, path: &str, out: &mut Vec<String>) {
    use serde_json::Value::{Array, Object};
    if out.len() >= 5 || a == b {
        return;
    }
    match (a, b) {
        (Object(x), Object(y)) => {
            for (k, v) in x {
                differences(
                    v,
                    y.get(k).unwrap_or(&serde_json::Value::Null),
                    &format!("{path}.{k}"),
                    out,
                );
            }
        }
        (Array(x), Array(y)) if x.len() == y.len() => {
            for (i, (v, w)) in x.iter().zip(y).enumerate() {
                differences(v, w, &format!("{path}[{i}]"), out);
            }
        }
        _ => {
            let short = |v: &serde_json::Value| v.to_string().chars().take(300).collect::<String>();
            out.push(format!("{path}: {} != {}", short(a), short(b)));
        }
    }
}

/// Asserts that `whole` cut by the analysis and `read` (the rows the
/// importer kept) analyse the same under `opts`; returns the analysis.
fn same_analysis(
    whole: &gapscope_collectors::trace::Trace,
    read: &gapscope_collectors::trace::Trace,
    opts: &AnalyzeOptions,
    ctx: &str,
) -> serde_json::Value {
    let (cut, dropped) = (
        comparable(&analyze(whole, opts)),
        comparable(&analyze(read, opts)),
    );
    let mut diff = Vec::new();
    differences(&cut, &dropped, "", &mut diff);
    assert!(
        diff.is_empty(),
        "{ctx}: cut by the analysis != dropped by the importer:\n{}",
        diff.join("\n")
    );
    cut
}

#[test]
fn importer_drop_equals_analysis_cut_on_real_traces() {
    let mut files = Vec::new();
    traces(&shared_trace(""), &mut files);
    traces(&repo().join("fixtures"), &mut files);
    files.sort();
    let (mut compared, mut dropped_some) = (0, 0);
    for path in &files {
        // Files that are not traces (the TensorBoard plugin's expected
        // outputs) are not this test's business.
        let Ok(whole) = import_file(path, &ImportOptions::default()) else {
            continue;
        };
        let (lo, hi) = event_extent(&whole);
        if hi - lo < 100 {
            continue;
        }
        let at = |f: f64| lo + ((hi - lo) as f64 * f) as i64;
        let windows = [
            (Some(at(0.25)), Some(at(0.6))),
            (None, Some(at(0.4))),
            (Some(at(0.7)), None),
        ];
        for (start, end) in windows {
            let limits = ReadLimits {
                time_window: Some(TimeRange {
                    start_ns: start,
                    end_ns: end,
                }),
                ..ReadLimits::default()
            };
            let read = import_file_partial(path, &ImportOptions::default(), &limits)
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            assert_eq!(
                read.trace.meta.origin_ns,
                whole.meta.origin_ns,
                "{}",
                path.display()
            );
            assert_eq!(read.extent, Some((lo, hi)), "{}", path.display());
            for steps in [
                WindowOptions::default(),
                WindowOptions {
                    steps: None,
                    exclude_last_step: true,
                },
            ] {
                let opts = AnalyzeOptions {
                    window: steps,
                    time_window: Some(TimeRange {
                        start_ns: start,
                        end_ns: end,
                    }),
                    ..AnalyzeOptions::default()
                };
                dropped_some += usize::from(read.dropped > 0);
                same_analysis(
                    &whole,
                    &read.trace,
                    &opts,
                    &format!("{} window {start:?}..{end:?} {steps:?}", path.display()),
                );
                compared += 1;
            }
        }
    }
    assert!(
        compared >= 150,
        "{compared} windows compared: are the shared traces there?"
    );
    assert!(
        dropped_some * 2 >= compared,
        "the importer dropped rows in only {dropped_some} of {compared}"
    );
}

/// A correlation id used by two calls, the first 45 ms before its kernel
/// and outside the window, the second 22 days after it (what the
/// `kineto_window` fuzz target found). Without a window the kernel's launch
/// is the call before it. With one, imported whole and cut by the analysis
/// or read with the window, the analysis is the same: both link the rows
/// the window keeps, where the later call is the only one with the id and
/// is linked as a lone id is, whatever the times (clocks can be skewed).
#[test]
fn a_reused_correlation_id_links_the_same_with_the_window_read_or_cut() {
    const DAY_US: i64 = 86_400_000_000;
    let mut events =
        vec![r#"{"ph":"X","cat":"cpu_op","name":"aten::mm","pid":1,"tid":1,"ts":1000,"dur":60}"#.to_string()];
    for c in 1..=3 {
        events.push(format!(
            r#"{{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":{},"dur":5,"args":{{"correlation":{c}}}}}"#,
            1000 + 10 * c
        ));
        events.push(format!(
            r#"{{"ph":"X","cat":"kernel","name":"gemm","pid":0,"tid":7,"ts":{},"dur":5,"args":{{"device":0,"stream":7,"correlation":{c}}}}}"#,
            46_000 + 10 * c
        ));
    }
    events.push(format!(
        r#"{{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":{},"dur":5,"args":{{"correlation":2}}}}"#,
        46_020 + 22 * DAY_US
    ));
    let json = format!(r#"{{"traceEvents":[{}]}}"#, events.join(","));

    let whole = import_bytes(json.as_bytes(), "reused.json", &ImportOptions::default()).unwrap();
    let kernel = whole.gpu.correlation.iter().position(|&c| c == 2).unwrap();
    let call = whole.links.gpu_launch[kernel].expect("linked").index();
    assert_eq!(
        whole.runtime.start[call], 20_000,
        "the call 45 ms before the kernel"
    );

    let window = TimeRange {
        start_ns: Some(20_000_000),
        end_ns: None,
    };
    let read = import_bytes_partial(
        json.as_bytes(),
        "reused.json",
        &ImportOptions::default(),
        &ReadLimits {
            time_window: Some(window),
            ..ReadLimits::default()
        },
    )
    .unwrap();
    assert_eq!(read.dropped, 4, "the aten::mm and the first three calls");
    let opts = AnalyzeOptions {
        time_window: Some(window),
        ..AnalyzeOptions::default()
    };
    let cut = same_analysis(&whole, &read.trace, &opts, "reused.json");
    assert_eq!(cut["diagnostics"]["gpu_rows_without_launch"], 2);
}

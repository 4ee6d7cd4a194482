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
use gapscope_collectors::kineto::{import_file, import_file_partial, ImportOptions, ReadLimits};
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
                let (cut, dropped) = (
                    comparable(&analyze(&whole, &opts)),
                    comparable(&analyze(&read.trace, &opts)),
                );
                let mut diff = Vec::new();
                differences(&cut, &dropped, "", &mut diff);
                assert!(
                    diff.is_empty(),
                    "{} window {start:?}..{end:?} {steps:?}: cut by the analysis != dropped by the importer:\n{}",
                    path.display(),
                    diff.join("\n")
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

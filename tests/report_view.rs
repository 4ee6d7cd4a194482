//! Snapshots of the report's view model (`report --debug-context`) on the
//! shared traces and the demo: every number and word the page shows.
//!
//! The chart layouts are summarised (how many runs and columns, and that
//! they tile their chart) rather than kept rectangle by rectangle, so a
//! snapshot stays readable; `report_cli.rs` and `report_browser.rs` check
//! the drawn charts.
//!
//! When an analysis change moves these numbers on purpose, review the diff
//! and accept it with `INSTA_UPDATE=always cargo test -p gapscope --test
//! report_view` (or `cargo insta review`).

mod common;
use common::*;
use serde_json::{json, Value};

/// The view model of `report ARGS`, with the chart layouts summarised and
/// the version left out.
fn view(args: &[&str]) -> Value {
    let mut all = vec!["report", "-q", "--debug-context", "-o", "-"];
    all.extend(args);
    let mut v: Value = serde_json::from_str(&gapscope(&all).expect_code(0).stdout).expect("view JSON");
    v["generator"] = json!("gapscope (version)");
    for d in v["devices"]["items"].as_array_mut().unwrap() {
        let t = &mut d["timeline"];
        let runs = t["runs"].as_array().unwrap();
        let width: u64 = runs.iter().map(|r| r["w"].as_u64().unwrap()).sum();
        assert_eq!(
            width,
            t["width"].as_u64().unwrap(),
            "timeline runs do not tile the strip"
        );
        for r in runs {
            let h: f64 = r["fills"]
                .as_array()
                .unwrap()
                .iter()
                .map(|f| f["h"].as_f64().unwrap())
                .sum();
            assert_eq!(
                h,
                t["height"].as_f64().unwrap(),
                "a timeline column is not filled: {r}"
            );
        }
        t["runs"] = json!(format!("{} runs", runs.len()));
        let steps = &mut d["steps"];
        let n = steps["columns"].as_array().unwrap().len();
        steps["columns"] = json!(format!("{n} columns"));
        for bar in ["class_bar", "cause_bar"] {
            let w: f64 = d[bar]["segments"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| s["w"].as_f64().unwrap())
                .sum();
            assert!(w == 0.0 || (w - 100.0).abs() < 1e-6, "{bar} spans {w}");
        }
    }
    v
}

/// A shared trace as the binary sees it from the repository root (cargo
/// runs tests there), so snapshots do not depend on where the clone is.
fn shared(rel: &str) -> String {
    shared_trace(rel);
    format!("../shared/traces/{rel}")
}

#[test]
fn demo() {
    insta::assert_json_snapshot!(view(&["--demo"]));
}

#[test]
fn resnet50_dataloader_bound() {
    let t = shared("kineto-tb-plugin/resnet50_num_workers_0.worker0.1623143089861.pt.trace.json.gz");
    insta::assert_json_snapshot!(view(&[&t]));
}

#[test]
fn nccl_collectives() {
    let t = shared("hta/nccl_parser_config/nccl_data.json.gz");
    insta::assert_json_snapshot!(view(&[&t]));
}

#[test]
fn distributed_rank_with_two_steps() {
    let t = shared("hta/trace_filter/sampled_rank-0.json.gz");
    insta::assert_json_snapshot!(view(&[&t]));
}

#[test]
fn amd_trace() {
    let t = shared("hta/amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz");
    insta::assert_json_snapshot!(view(&[&t]));
}

#[test]
fn no_profiler_steps() {
    let t = shared("hta/critical_path/alexnet/benchmark_result_2869224_1695835535_trace.json.gz");
    insta::assert_json_snapshot!(view(&[&t]));
}

#[test]
fn cpu_only() {
    let t = shared("hta/cpu_only/rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz");
    insta::assert_json_snapshot!(view(&[&t]));
}

//! gapscope's operator diff against HTA 0.5.0's `TraceDiff` on the shared
//! control/test pair (`../shared/traces/hta/trace_diff`, HTA's results in
//! `../shared/oracle/hta/trace_diff_control_vs_test`).
//!
//! HTA compares the first iteration of each trace (ProfilerStep#1009 in
//! both) over all device types, by full name: counts of names added,
//! deleted, increased, decreased and unchanged. We select the same step
//! with `--steps 1009` and pool our categories by name the same way.
//!
//! The two differ in one way, explained and checked below: GPU rows whose
//! correlation id has no runtime call in the trace (614 kernels, copies and
//! memsets of the test trace's CUDA-graph replays, all inside step 1009)
//! count for gapscope by their own start time. HTA gives such a row the
//! iteration of its correlated CPU event, finds none, sets -1 and drops it
//! from every iteration. Without those rows our
//! counts equal HTA's name by name. We also name every `ProfilerStep#N`
//! `ProfilerStep#*` so runs at different step numbers line up; with one
//! step selected on each side that renames 1009 and changes no class.

use gapscope_analyzers::analysis::AnalyzeOptions;
use gapscope_analyzers::analyze;
use gapscope_analyzers::diff::ops::{self, Change, ChangeCounts, OpCategory, OpTotals};
use gapscope_analyzers::window::WindowOptions;
use gapscope_collectors::kineto::{import_file, ImportOptions};
use gapscope_collectors::trace::Trace;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn shared() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared")
}

fn oracle_dir() -> PathBuf {
    shared().join("oracle/hta/trace_diff_control_vs_test")
}

/// One side's step 1009: the trace, the window and our totals.
struct Step1009 {
    trace: Trace,
    window: (i64, i64),
    totals: OpTotals,
}

/// The totals of ProfilerStep#1009, the iteration HTA compares by default.
fn step_1009(side: &str) -> Step1009 {
    let path = shared().join(format!("traces/hta/trace_diff/{side}/{side}.json.gz"));
    let trace = import_file(&path, &ImportOptions::default()).unwrap_or_else(|e| panic!("{e}"));
    let opts = AnalyzeOptions {
        window: WindowOptions {
            steps: Some((1009, 1009)),
            exclude_last_step: false,
        },
        ..Default::default()
    };
    let a = analyze(&trace, &opts);
    assert_eq!(a.window.steps_selected, vec![1009]);
    let window = (a.window.start_ns, a.window.end_ns);
    let totals = ops::collect(&trace, window);
    Step1009 {
        trace,
        window,
        totals,
    }
}

/// GPU rows of the window with no runtime call sharing their correlation
/// id, by name: what HTA cannot place in any iteration.
fn unlaunched(s: &Step1009) -> BTreeMap<String, u64> {
    let (t, w) = (&s.trace, s.window);
    let mut out = BTreeMap::new();
    for i in 0..t.gpu.len() {
        if t.links.gpu_launch[i].is_none() && t.gpu.start[i] >= w.0 && t.gpu.start[i] < w.1 {
            *out.entry(t.strings.get(t.gpu.name[i]).to_string()).or_insert(0) += 1;
        }
    }
    out
}

/// Our counts as HTA would make them: pooled by name, unlaunched GPU rows
/// left out, the step under its own name.
fn hta_view(s: &Step1009) -> BTreeMap<String, u64> {
    let mut out = by_name(&s.totals);
    for (name, n) in unlaunched(s) {
        let c = out.get_mut(&name).unwrap();
        *c -= n;
        if *c == 0 {
            out.remove(&name);
        }
    }
    let step = out.remove("ProfilerStep#*").unwrap();
    out.insert("ProfilerStep#1009".to_string(), step);
    out
}

/// Counts pooled by name, as HTA groups them.
fn by_name(t: &OpTotals) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    for ((_, name), v) in t {
        *out.entry(name.clone()).or_insert(0) += v.count;
    }
    out
}

/// HTA's per-name counts from `compare_traces__ALL__full_names.csv`:
/// name → (control, test). Names may be quoted and hold commas.
fn hta_counts() -> BTreeMap<String, (u64, u64)> {
    let csv = std::fs::read_to_string(oracle_dir().join("compare_traces__ALL__full_names.csv")).unwrap();
    let mut out = BTreeMap::new();
    for record in split_csv(&csv).into_iter().skip(1) {
        let num = |s: &str| s.parse::<f64>().unwrap() as u64;
        out.insert(record[0].clone(), (num(&record[1]), num(&record[3])));
    }
    out
}

/// A minimal RFC 4180 reader: quoted fields may hold commas, doubled quotes
/// and newlines.
fn split_csv(text: &str) -> Vec<Vec<String>> {
    let mut rows = vec![];
    let (mut row, mut field, mut quoted) = (vec![], String::new(), false);
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                field.push('"');
                chars.next();
            }
            ('"', _) => quoted = !quoted,
            (',', false) => row.push(std::mem::take(&mut field)),
            ('\n', false) => {
                row.push(std::mem::take(&mut field));
                rows.push(std::mem::take(&mut row));
            }
            (c, _) => field.push(c),
        }
    }
    if !field.is_empty() || !row.is_empty() {
        row.push(field);
        rows.push(row);
    }
    rows
}

fn hta_ops_diff_counts() -> ChangeCounts {
    let info: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(oracle_dir().join("run_info.json")).unwrap()).unwrap();
    let c = &info["ops_diff_counts"];
    ChangeCounts {
        added: c["added"].as_u64().unwrap(),
        removed: c["deleted"].as_u64().unwrap(),
        increased: c["increased"].as_u64().unwrap(),
        decreased: c["decreased"].as_u64().unwrap(),
        unchanged: c["unchanged"].as_u64().unwrap(),
    }
}

fn classes(base: &BTreeMap<String, u64>, new: &BTreeMap<String, u64>) -> BTreeMap<String, Change> {
    base.keys()
        .chain(new.keys())
        .map(|n| {
            let c = Change::of(
                base.get(n).copied().unwrap_or(0),
                new.get(n).copied().unwrap_or(0),
            );
            (n.clone(), c)
        })
        .collect()
}

fn count_classes(classes: &BTreeMap<String, Change>) -> ChangeCounts {
    let mut out = ChangeCounts::default();
    for &c in classes.values() {
        out.add(c);
    }
    out
}

#[test]
fn ops_diff_matches_hta_control_vs_test() {
    let control = step_1009("control");
    let test = step_1009("test");

    // HTA's five counts (run_info.json).
    let hta = hta_ops_diff_counts();
    assert_eq!(
        hta,
        ChangeCounts {
            added: 32,
            removed: 138,
            increased: 35,
            decreased: 65,
            unchanged: 162
        }
    );

    // Ours as HTA would count: equal to HTA, name by name and per class.
    let (vc, vt) = (hta_view(&control), hta_view(&test));
    let hta_names = hta_counts();
    let mut names: Vec<&String> = vc.keys().chain(vt.keys()).collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), hta_names.len(), "432 names in all");
    for name in names {
        let ours = (
            vc.get(name).copied().unwrap_or(0),
            vt.get(name).copied().unwrap_or(0),
        );
        assert_eq!(Some(&ours), hta_names.get(name), "{name}");
    }
    let hta_classes = classes(&vc, &vt);
    assert_eq!(count_classes(&hta_classes), hta);
    let lists: BTreeMap<String, Vec<String>> =
        serde_json::from_str(&std::fs::read_to_string(oracle_dir().join("ops_diff__ALL.json")).unwrap())
            .unwrap();
    for (class, names) in &lists {
        for name in names {
            assert_eq!(
                hta_classes[name].name(),
                class.replace("deleted", "removed"),
                "{name}"
            );
        }
    }

    // The difference: control has no unlaunched GPU rows; test has 614,
    // all CUDA-graph replays (their correlation ids are those of graph
    // kernels, shared by hundreds of rows each, with no runtime call).
    assert!(unlaunched(&control).is_empty());
    let extra = unlaunched(&test);
    assert_eq!(extra.values().sum::<u64>(), 614);

    // gapscope's own diff: added and removed agree (every unlaunched name
    // also has launched rows in test), and 42 names move between increased,
    // decreased and unchanged, each of them one with unlaunched rows.
    let d = ops::diff(&control.totals, &test.totals);
    assert_eq!(
        d.all_names,
        ChangeCounts {
            added: 32,
            removed: 138,
            increased: 77,
            decreased: 61,
            unchanged: 124
        }
    );
    let ours = classes(&by_name(&control.totals), &by_name(&test.totals));
    let mut moved = 0;
    for (name, c) in &ours {
        let theirs = hta_classes.get(name).copied().unwrap_or_else(|| {
            assert_eq!(name, "ProfilerStep#*");
            Change::Unchanged
        });
        if *c != theirs {
            moved += 1;
            assert!(
                extra.contains_key(name),
                "{name}: {theirs:?} → {c:?} not explained"
            );
        }
    }
    assert_eq!(moved, 42);
}

#[test]
fn total_times_match_hta_within_its_rounding() {
    // HTA keeps integer µs (ceil of the start, floor of the end), so each
    // event may lose up to 1 µs; ours are exact ns. Both sides, every name.
    let csv = std::fs::read_to_string(oracle_dir().join("compare_traces__ALL__full_names.csv")).unwrap();
    let hta: BTreeMap<String, (f64, f64, f64, f64)> = split_csv(&csv)
        .into_iter()
        .skip(1)
        .map(|r| {
            let v = |i: usize| r[i].parse::<f64>().unwrap();
            (r[0].clone(), (v(1), v(2), v(3), v(4)))
        })
        .collect();
    for (side, col) in [("control", 0), ("test", 1)] {
        let s = step_1009(side);
        let extra = unlaunched(&s);
        let mut total: BTreeMap<String, i64> = BTreeMap::new();
        for ((_, name), v) in &s.totals {
            let name = if name == "ProfilerStep#*" {
                "ProfilerStep#1009"
            } else {
                name
            };
            *total.entry(name.to_string()).or_insert(0) += v.total_ns;
        }
        for (name, &(cc, cd, tc, td)) in &hta {
            let (count, us) = if col == 0 { (cc, cd) } else { (tc, td) };
            if count == 0.0 || extra.contains_key(name) {
                continue; // absent, or ours also holds the unlaunched rows
            }
            let ours_us = total[name] as f64 / 1e3;
            assert!(
                ours_us >= us - 1e-9 && ours_us <= us + count,
                "{side} {name}: ours {ours_us} µs, HTA {us} µs over {count}"
            );
        }
    }
}

#[test]
fn kernels_of_step_1009_match_hta_gpu_totals() {
    // HTA: GPU-only, 1,575 → 2,503 kernel instances (HTA, without
    // the 614 unlaunched rows); Memcpy DtoD from 3 to 768 (+37 unlaunched).
    let gpu_count = |t: &OpTotals| -> u64 {
        t.iter()
            .filter(|((c, _), _)| c.is_gpu())
            .map(|(_, v)| v.count)
            .sum()
    };
    let control = step_1009("control");
    let test = step_1009("test");
    assert_eq!(gpu_count(&control.totals), 1_575);
    assert_eq!(gpu_count(&test.totals), 2_503 + 614);
    let dtod = |t: &OpTotals| {
        t.iter()
            .filter(|((c, n), _)| *c == OpCategory::Memcpy && n.starts_with("Memcpy DtoD"))
            .map(|(_, v)| v.count)
            .sum::<u64>()
    };
    assert_eq!((dtod(&control.totals), dtod(&test.totals)), (3, 768 + 37));
}

//! `export --steps / --exclude-last-step / --time-window`: the part of a
//! trace that `analyze` reads with the same options, written out. Checked
//! the strong way: a capture exported with a selection, analysed whole,
//! gives the analysis that the original gives with that selection (devices,
//! idle causes, findings, kernels, steps, the window), on the demo and on
//! real traces of several shapes (one-process training, DDP with NCCL,
//! ROCm). Also the one-line errors.

mod common;
use common::*;
use serde_json::Value;
use std::path::{Path, PathBuf};

fn traces() -> Vec<PathBuf> {
    vec![
        repo().join("fixtures/demo/demo.pt.trace.json.gz"),
        shared_trace("kineto-tb-plugin/resnet50_num_workers_0.worker0.1623143089861.pt.trace.json.gz"),
        shared_trace("hta/ns_resolution_trace/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz"),
        shared_trace("hta/amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz"),
    ]
}

fn analysis(args: &[&str], trace: &Path) -> Value {
    let mut all: Vec<String> = vec![
        "analyze".into(),
        "--format".into(),
        "json".into(),
        "--quiet".into(),
    ];
    all.extend(args.iter().map(|s| s.to_string()));
    all.push(trace.display().to_string());
    gapscope(&all).expect_code(0).json()
}

/// What must agree: everything but the source, the whole trace's row
/// counts and the options that made the selection.
fn comparable(mut a: Value) -> Value {
    let o = a.as_object_mut().unwrap();
    o.remove("source");
    let d = o["diagnostics"].as_object_mut().unwrap();
    d.remove("rows");
    let w = o["window"].as_object_mut().unwrap();
    w.remove("steps_in_trace");
    w.remove("options");
    w.remove("time_window");
    a
}

fn steps_of(trace: &Path) -> Vec<u64> {
    analysis(&[], trace)["window"]["steps_selected"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap())
        .collect()
}

fn exported(dir: &TempDir, trace: &Path, select: &[&str], name: &str) -> PathBuf {
    let out = dir.path().join(name);
    let mut args: Vec<String> = vec!["export".into(), "--format".into(), "gst".into(), "--quiet".into()];
    args.extend(select.iter().map(|s| s.to_string()));
    args.extend([
        "-o".into(),
        out.display().to_string(),
        trace.display().to_string(),
    ]);
    gapscope(&args).expect_code(0);
    out
}

#[test]
fn a_selection_exported_analyses_as_the_original_does_with_it() {
    let dir = TempDir::new("export-window");
    for trace in traces() {
        let steps = steps_of(&trace);
        let (first, last) = (steps[0], *steps.last().unwrap());
        let mut selections: Vec<Vec<String>> = vec![
            vec!["--steps".into(), format!("{first}..{first}")],
            vec!["--steps".into(), format!("{last}..{last}")],
            vec!["--exclude-last-step".into()],
        ];
        if steps.len() >= 3 {
            selections.push(vec![
                "--steps".into(),
                format!("{}..{}", steps[1], steps[steps.len() - 2]),
            ]);
        }
        for (k, sel) in selections.iter().enumerate() {
            let sel: Vec<&str> = sel.iter().map(String::as_str).collect();
            let part = exported(&dir, &trace, &sel, &format!("part{k}.gst"));
            let want = comparable(analysis(&sel, &trace));
            let got = comparable(analysis(&[], &part));
            assert!(
                got == want,
                "{} {sel:?}: the exported part analyses differently\n--- part\n{}\n--- original with the options\n{}",
                trace.display(),
                serde_json::to_string(&got).unwrap(),
                serde_json::to_string(&want).unwrap()
            );
            // And the part is a part: fewer rows than the whole (or as many,
            // for a selection of everything).
            let whole = analysis(&[], &trace)["diagnostics"]["rows"]["gpu"]
                .as_u64()
                .unwrap();
            let kept = analysis(&[], &part)["diagnostics"]["rows"]["gpu"]
                .as_u64()
                .unwrap();
            assert!(kept <= whole, "{kept} > {whole}");
        }
    }
}

#[test]
fn a_time_window_exported_analyses_as_the_original_does_with_it() {
    let dir = TempDir::new("export-time-window");
    let trace = repo().join("fixtures/demo/demo.pt.trace.json.gz");
    for window in ["10ms..30ms", "..25ms", "60ms.."] {
        let part = exported(&dir, &trace, &["--time-window", window], "part.gst");
        let want = comparable(analysis(&["--time-window", window], &trace));
        let got = comparable(analysis(&[], &part));
        assert_eq!(got["devices"], want["devices"], "{window}");
        assert_eq!(got["findings"], want["findings"], "{window}");
        assert_eq!(got["window"]["start_ns"], want["window"]["start_ns"], "{window}");
        assert_eq!(got["window"]["end_ns"], want["window"]["end_ns"], "{window}");
    }
}

#[test]
fn selections_that_cannot_be_exported_are_one_line() {
    let dir = TempDir::new("export-window-errors");
    let demo = repo().join("fixtures/demo/demo.pt.trace.json.gz");
    let out = dir.path().join("x.gst");
    let one_line = |args: &[&str], says: &str| {
        let r = gapscope(args).expect_code(2);
        assert_eq!(r.stderr.trim_end().lines().count(), 1, "{}", r.stderr);
        assert!(r.stderr.contains(says), "{}", r.stderr);
        assert!(!out.exists(), "nothing written");
    };
    let (d, o) = (demo.to_str().unwrap(), out.to_str().unwrap());
    one_line(
        &["export", d, "--steps", "40..41", "--format", "gst", "-o", o],
        "--steps 40..41 selects no step (its steps are ProfilerStep#10 to #14)",
    );
    one_line(
        &["export", d, "--time-window", "900s..", "--format", "gst", "-o", o],
        "the time window 900s.. is outside the trace",
    );
    one_line(
        &["export", d, "--time-window", "5..9", "-o", o],
        "--time-window 5..9",
    );
    one_line(
        &["export", d, d, "--steps", "10..11", "-o", o],
        "give one trace, not the ranks of a job",
    );
    // An output that cannot be created is named as the user gave it.
    let missing = dir.path().join("no-such-dir/x.gst");
    let m = missing.to_str().unwrap();
    one_line(
        &["export", d, "--format", "gst", "-o", m],
        &format!("{m}: cannot create"),
    );
}

#[test]
fn a_perfetto_export_of_one_step_holds_that_step_alone() {
    let dir = TempDir::new("export-window-perfetto");
    let demo = repo().join("fixtures/demo/demo.pt.trace.json.gz");
    let out = dir.path().join("step.pftrace");
    gapscope([
        "export",
        demo.to_str().unwrap(),
        "--steps",
        "12..12",
        "--quiet",
        "-o",
        out.to_str().unwrap(),
    ])
    .expect_code(0);
    let rows = perfetto_query(
        &out,
        &["select name from slice where name like 'ProfilerStep#%' order by ts"],
    );
    let names: Vec<&str> = rows[0].iter().map(|r| r["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["ProfilerStep#12"]);
}

/// A step selection whose first kernel starts in the same utilization bin
/// as the step (step 2 at 1.55 ms, its kernel at 1.56 ms): the counter's
/// first bin starts at 1 ms, before any event of the selection, and is
/// drawn from the first event on. The export failed ("an analysis time
/// lies before the trace's first event") before 91010ed already; keeping
/// earlier steps' kernels that run into a selected step made it common
/// (the demo's step 12).
#[test]
fn a_step_whose_first_kernel_shares_its_utilization_bin_exports() {
    let dir = TempDir::new("export-kernel-first");
    // The host on pid 1, the GPU's stream 7 on pid 0.
    let x = x_event;
    let (host, gpu) = ((1, 1), (0, 7));
    let events = [
        x("user_annotation", "ProfilerStep#1", host, 0, 1500, ""),
        x(
            "cuda_runtime",
            "cudaLaunchKernel",
            host,
            10,
            5,
            r#""correlation": 1"#,
        ),
        x(
            "kernel",
            "k1",
            gpu,
            20,
            1380,
            r#""device": 0, "stream": 7, "correlation": 1"#,
        ),
        x("user_annotation", "ProfilerStep#2", host, 1550, 1450, ""),
        x(
            "cuda_runtime",
            "cudaLaunchKernel",
            host,
            1552,
            5,
            r#""correlation": 2"#,
        ),
        x(
            "kernel",
            "k2",
            gpu,
            1560,
            1340,
            r#""device": 0, "stream": 7, "correlation": 2"#,
        ),
    ];
    let json = kineto_json(&events);
    let trace = dir.file("two_steps.json", json.as_bytes());
    let out = dir.path().join("step2.pftrace");
    gapscope([
        "export",
        trace.to_str().unwrap(),
        "--steps",
        "2..2",
        "--quiet",
        "-o",
        out.to_str().unwrap(),
    ])
    .expect_code(0);
    let rows = perfetto_query(
        &out,
        &[
            "select min(ts) as t from slice",
            "select min(c.ts) as t from counter c join counter_track t on c.track_id = t.id \
             where t.name like '%utilization%'",
        ],
    );
    let (first_slice, first_sample) = (rows[0][0]["t"].as_i64(), rows[1][0]["t"].as_i64());
    assert!(first_sample.is_some(), "{rows:?}");
    assert_eq!(first_sample, first_slice, "{rows:?}");
}

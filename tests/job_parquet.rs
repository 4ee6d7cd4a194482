//! A job's Parquet: `export --format parquet` of every rank (tables with a
//! `rank` column) and `summarize` (per-rank summaries) read back by pyarrow;
//! the job analysis from the summaries equals the one from the traces.
//! Built with the `parquet` feature only.

#![cfg(feature = "parquet")]

mod common;
use common::*;
use serde_json::Value;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The Python with pyarrow (as tests/export_parquet.rs finds it).
fn python() -> PathBuf {
    match std::env::var_os("GAPSCOPE_PYARROW_PYTHON") {
        Some(p) if !p.is_empty() => PathBuf::from(p),
        _ => {
            assert!(
                !std::env::var("CI").is_ok_and(|v| v == "true"),
                "CI=true but GAPSCOPE_PYARROW_PYTHON is not set"
            );
            let p =
                PathBuf::from(std::env::var_os("HOME").unwrap()).join(".cache/gapscope-pyarrow/bin/python");
            assert!(p.exists(), "no pyarrow venv at {}: run .ci/run once", p.display());
            p
        }
    }
}

/// Runs `code` (Python with pyarrow) with `args`; its stdout as JSON.
fn py(code: &str, args: &[&Path]) -> Value {
    let out = Command::new(python())
        .arg("-c")
        .arg(code)
        .args(args)
        .output()
        .expect("python runs");
    assert!(
        out.status.success(),
        "python failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("JSON")
}

fn run(v: &[&str], paths: &[&Path]) -> Run {
    let mut a: Vec<OsString> = v.iter().map(OsString::from).collect();
    a.extend(paths.iter().map(|p| p.as_os_str().to_owned()));
    gapscope(a)
}

/// Rows per table and rank, and the ranks table.
const TABLES: &str = r#"
import json, os, sys, collections
import pyarrow.parquet as pq
d = sys.argv[1]
out = {}
for f in sorted(os.listdir(d)):
    t = pq.read_table(os.path.join(d, f))
    if f == "ranks.parquet":
        out[f] = t.to_pylist()
    else:
        assert t.schema.names[0] == "rank", (f, t.schema.names)
        out[f] = dict(sorted(collections.Counter(t.column("rank").to_pylist()).items()))
print(json.dumps(out))
"#;

#[test]
fn job_tables_have_a_rank_column_and_every_rank_s_rows() {
    let tmp = TempDir::new("job-parquet");
    let ranks = tmp.path().join("ranks");
    std::fs::create_dir_all(&ranks).unwrap();
    plant_job(
        &ranks,
        &["--ranks", "3", "--steps", "2", "--plant", "1:10:1:2:dataloader"],
    );
    let out = tmp.path().join("tables");
    run(
        &["export", "--format", "parquet", "-q", "-o", out.to_str().unwrap()],
        &[&ranks],
    )
    .expect_code(0);
    let got = py(TABLES, &[&out]);
    // Each rank's rows are exactly its single-trace export's rows.
    for r in 0..3 {
        let one = tmp.path().join(format!("one{r}"));
        let file = ranks.join(format!("rank{r}.pt.trace.json.gz"));
        run(
            &["export", "--format", "parquet", "-q", "-o", one.to_str().unwrap()],
            &[&file],
        )
        .expect_code(0);
        let count = py(
            "import json, os, sys\nimport pyarrow.parquet as pq\nd = sys.argv[1]\n\
             print(json.dumps({f: pq.read_metadata(os.path.join(d, f)).num_rows for f in sorted(os.listdir(d))}))",
            &[&one],
        );
        for (table, n) in count.as_object().unwrap() {
            let in_job = got[table][r.to_string()].as_u64().unwrap_or(0);
            assert_eq!(in_job, n.as_u64().unwrap(), "{table}, rank {r}");
        }
    }
    let job = run(&["analyze", "--format", "json"], &[&ranks])
        .expect_code(0)
        .json();
    let rows = got["ranks.parquet"].as_array().unwrap();
    assert_eq!(rows.len(), 3);
    for (row, a) in rows.iter().zip(job["alignment"]["ranks"].as_array().unwrap()) {
        assert_eq!(row["rank"], a["rank"]);
        assert_eq!(row["clock_offset_ns"], a["offset_ns"]);
        assert_eq!(row["world_size"], 3);
    }
}

#[test]
fn summaries_reduce_to_the_same_job() {
    let tmp = TempDir::new("job-summaries");
    let ranks = tmp.path().join("ranks");
    std::fs::create_dir_all(&ranks).unwrap();
    plant_job(
        &ranks,
        &[
            "--ranks",
            "4",
            "--steps",
            "3",
            "--end-jitter-ns",
            "1500",
            "--plant",
            "2:11:2:3:cpu_op",
        ],
    );
    let sums = tmp.path().join("summaries");
    // One task per trace, as a distributed engine would run them.
    for r in 0..4 {
        let file = ranks.join(format!("rank{r}.pt.trace.json.gz"));
        let w = run(&["summarize", "-o", sums.to_str().unwrap()], &[&file]).expect_code(0);
        assert!(w.stderr.contains("1 rank summary"), "{}", w.stderr);
    }
    let reduced = run(&["analyze", "--format", "json"], &[&sums])
        .expect_code(0)
        .json();
    let mut direct = run(&["analyze", "--format", "json"], &[&ranks])
        .expect_code(0)
        .json();
    for r in direct["ranks"].as_array_mut().unwrap() {
        r.as_object_mut().unwrap().remove("analysis");
    }
    assert_eq!(
        reduced, direct,
        "the job from the summaries is the job from the traces"
    );
    let f = reduced["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == "straggler_wait")
        .unwrap();
    assert_eq!(
        (f["culprit_rank"].as_i64(), f["step"].as_i64()),
        (Some(2), Some(11))
    );
    // The summaries are datasets any Parquet reader takes whole.
    let d = py(
        "import json, sys\nimport pyarrow.parquet as pq\nt = pq.read_table(sys.argv[1] + '/collectives')\n\
         print(json.dumps({'rows': t.num_rows, 'ranks': sorted(set(t.column('rank').to_pylist())), \
         'kinds': sorted(set(t.column('kind').to_pylist()))}))",
        &[&sums],
    );
    assert_eq!(d["rows"], 4 * 3 * 8);
    assert_eq!(d["ranks"], serde_json::json!([0, 1, 2, 3]));
    assert_eq!(d["kinds"], serde_json::json!(["all_reduce", "all_to_all"]));
    // Each rank's summary says what its trace shows the program doing,
    // which the job's hints read.
    let w = py(
        "import json, sys\nimport pyarrow.parquet as pq\nt = pq.read_table(sys.argv[1] + '/ranks')\n\
         print(json.dumps(sorted(set(t.column('workload').to_pylist()))))",
        &[&sums],
    );
    let workloads = w.as_array().unwrap();
    assert_eq!(workloads.len(), 1, "{w}");
    assert!(
        ["training", "no_backward_or_optimizer", "unknown"].contains(&workloads[0].as_str().unwrap()),
        "{w}"
    );
    // A text report reads them too.
    let t = run(&["analyze"], &[&sums]).expect_code(0).stdout;
    assert!(t.starts_with("job: 4 ranks of 4"), "{t}");
}

#[test]
fn summarize_of_bad_inputs() {
    let tmp = TempDir::new("job-summaries-bad");
    let bad = tmp.file("bad.json", b"{");
    let out = tmp.path().join("s");
    let r = run(&["summarize", "-o", out.to_str().unwrap()], &[&bad]).expect_code(2);
    assert_eq!(r.stderr.lines().count(), 1, "{}", r.stderr);
    assert!(r.stderr.contains("bad.json"), "{}", r.stderr);
    let good = shared_trace("param/dlrm_8rank/worker0_step_12.1694128201545.pt.trace.json.gz");
    let r = run(&["summarize", "-o", out.to_str().unwrap()], &[&bad, &good]).expect_code(0);
    assert!(
        r.stderr.contains("bad.json") && r.stderr.contains("left out"),
        "{}",
        r.stderr
    );
    let ranks = out.join("ranks/rank-000000-worker0_step_12.1694128201545.pt.trace.parquet");
    assert!(ranks.exists());
    // A summary whose workload is no known name: one line, exit 2.
    py(
        "import sys, json\nimport pyarrow as pa, pyarrow.parquet as pq\nt = pq.read_table(sys.argv[1])\n\
         t = t.set_column(t.schema.get_field_index('workload'), 'workload', pa.array(['bogus']))\n\
         pq.write_table(t, sys.argv[1])\nprint(json.dumps(None))",
        &[&ranks],
    );
    let r = run(&["analyze"], &[&out]).expect_code(2);
    assert_eq!(r.stderr.lines().count(), 1, "{}", r.stderr);
    assert!(
        r.stderr.contains("column `workload` holds \"bogus\""),
        "{}",
        r.stderr
    );
}

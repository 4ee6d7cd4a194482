//! `gapscope export --format parquet`: the Trace tables read back by an
//! independent reader, pyarrow (in a venv that .ci/run installs), and
//! compared with the Trace row by row, column by column: the demo and a
//! shared trace with every table filled. Plus the bad-output-path errors.
//!
//! Built with the `parquet` feature only (`cargo test --features parquet
//! --test export_parquet`); without it, the one test left checks that
//! `--format parquet` says how to get it.

mod common;
use common::*;

#[cfg(not(feature = "parquet"))]
#[test]
fn without_the_feature_parquet_says_how_to_get_it() {
    let dir = TempDir::new("export-parquet-nofeature");
    let src = dir.file("demo.json", &demo_json());
    let out = dir.path().join("tables");
    let r = gapscope([
        "export".as_ref(),
        src.as_os_str(),
        "--format".as_ref(),
        "parquet".as_ref(),
        "-o".as_ref(),
        out.as_os_str(),
    ])
    .expect_code(2);
    assert_eq!(r.stderr.lines().count(), 1, "{}", r.stderr);
    assert!(r.stderr.contains("--features parquet"), "{}", r.stderr);
    assert!(!out.exists());
}

#[cfg(feature = "parquet")]
mod with_parquet {
    use super::*;
    use gapscope_collectors::kineto::{self, ImportOptions};
    use gapscope_collectors::trace::{CallRow, OpRow, StrId, Trace};
    use serde_json::{json, Value};
    use std::path::{Path, PathBuf};
    use std::process::Command;

    /// The Python with pyarrow: `GAPSCOPE_PYARROW_PYTHON` (set by .ci/run),
    /// else the venv .ci/run makes. Never skipped: under `CI=true` the
    /// variable must be set, and without it the venv must exist.
    fn python() -> PathBuf {
        let ci = std::env::var("CI").is_ok_and(|v| v == "true");
        match std::env::var_os("GAPSCOPE_PYARROW_PYTHON") {
            Some(p) if !p.is_empty() => PathBuf::from(p),
            _ => {
                assert!(
                    !ci,
                    "CI=true but GAPSCOPE_PYARROW_PYTHON is not set: .ci/run must install pyarrow"
                );
                let home = std::env::var_os("HOME").expect("HOME");
                let p = PathBuf::from(home).join(".cache/gapscope-pyarrow/bin/python");
                assert!(
                    p.exists(),
                    "no pyarrow venv at {}: run .ci/run once, or `python3 -m venv ~/.cache/gapscope-pyarrow && \
                     ~/.cache/gapscope-pyarrow/bin/pip install pyarrow==26.0.1`, or set GAPSCOPE_PYARROW_PYTHON",
                    p.display()
                );
                p
            }
        }
    }

    /// Reads every `*.parquet` in a directory with pyarrow and prints one
    /// JSON object per file: rows, row groups, codec, arrow schema,
    /// key-value metadata and every row (doubles as their IEEE bits, so
    /// the comparison is exact).
    const READ: &str = r#"
import json, struct, sys, os
import pyarrow.parquet as pq
d = sys.argv[1]
for f in sorted(os.listdir(d)):
    pf = pq.ParquetFile(os.path.join(d, f))
    t = pf.read()
    md = pf.metadata
    codecs = sorted({md.row_group(g).column(c).compression
                     for g in range(md.num_row_groups) for c in range(md.num_columns)})
    rows = t.to_pylist()
    for r in rows:
        for k, v in r.items():
            if isinstance(v, float):
                r[k] = {"f64_bits": struct.unpack("<q", struct.pack("<d", v))[0]}
    print(json.dumps({
        "file": f,
        "rows": t.num_rows,
        "row_groups": md.num_row_groups,
        "codecs": codecs,
        "schema": [[n, str(ty)] for n, ty in zip(t.schema.names, t.schema.types)],
        "metadata": {k.decode(): v.decode() for k, v in (t.schema.metadata or {}).items()
                     if k.decode().startswith("gapscope.")},
        "data": rows,
    }))
"#;

    /// pyarrow's view of every file in `dir`, by file name.
    fn read_back(dir: &Path) -> serde_json::Map<String, Value> {
        let out = Command::new(python())
            .arg("-c")
            .arg(READ)
            .arg(dir)
            .output()
            .expect("python runs");
        assert!(
            out.status.success(),
            "pyarrow failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .map(|l| {
                let v: Value = serde_json::from_str(l).expect("JSON line");
                (v["file"].as_str().unwrap().to_string(), v)
            })
            .collect()
    }

    fn export(trace: &Path, out: &Path, extra: &[&str]) -> Run {
        let mut a: Vec<&std::ffi::OsStr> = vec![
            "export".as_ref(),
            trace.as_os_str(),
            "--format".as_ref(),
            "parquet".as_ref(),
            "-o".as_ref(),
            out.as_os_str(),
        ];
        a.extend(extra.iter().map(std::ffi::OsStr::new));
        gapscope(a)
    }

    /// The columns of each file, with their arrow types: the documented
    /// schema (docs/parquet.md).
    fn schema(file: &str) -> Vec<(&'static str, &'static str)> {
        let v: &[(&str, &str)] = match file {
            "threads.parquet" => &[
                ("id", "uint32"),
                ("pid", "int64"),
                ("tid", "int64"),
                ("name", "string"),
            ],
            "devices.parquet" => &[
                ("id", "uint32"),
                ("name", "string"),
                ("sm_count", "uint32"),
                ("memory_bytes", "uint64"),
                ("compute_capability_major", "uint32"),
                ("compute_capability_minor", "uint32"),
            ],
            "gpu_activity.parquet" => &[
                ("id", "uint32"),
                ("device", "uint32"),
                ("stream", "int64"),
                ("start_ns", "int64"),
                ("end_ns", "int64"),
                ("kind", "string"),
                ("name", "string"),
                ("correlation", "uint64"),
                ("external_id", "uint64"),
                ("bytes", "uint64"),
                ("copy_kind", "string"),
                ("src_mem", "string"),
                ("dst_mem", "string"),
                ("grid_x", "uint32"),
                ("grid_y", "uint32"),
                ("grid_z", "uint32"),
                ("block_x", "uint32"),
                ("block_y", "uint32"),
                ("block_z", "uint32"),
                ("registers", "uint32"),
                ("shared_mem", "uint32"),
                ("est_achieved_occupancy_pct", "double"),
                ("launch_id", "uint32"),
            ],
            "runtime_calls.parquet" => &[
                ("id", "uint32"),
                ("thread", "uint32"),
                ("start_ns", "int64"),
                ("end_ns", "int64"),
                ("name", "string"),
                ("api", "string"),
                ("correlation", "uint64"),
                ("external_id", "uint64"),
                ("op_id", "uint32"),
                ("gpu_count", "uint32"),
            ],
            "cpu_ops.parquet" => &[
                ("id", "uint32"),
                ("thread", "uint32"),
                ("start_ns", "int64"),
                ("end_ns", "int64"),
                ("name", "string"),
                ("kind", "string"),
                ("external_id", "uint64"),
                ("sequence", "int64"),
                ("shapes", "string"),
                ("source", "string"),
                ("parent_id", "uint32"),
                ("depth", "uint16"),
            ],
            "markers.parquet" => &[
                ("kind", "string"),
                ("thread", "uint32"),
                ("device", "uint32"),
                ("stream", "int64"),
                ("start_ns", "int64"),
                ("end_ns", "int64"),
                ("name", "string"),
                ("value", "double"),
            ],
            other => panic!("unexpected file {other}"),
        };
        v.to_vec()
    }

    /// An enum as the files name it: serde's snake_case name, lowercased
    /// (`CopyKind` has no serde renaming: `HtoD` is `htod`).
    fn name_of<T: serde::Serialize>(k: T) -> Value {
        json!(serde_json::to_value(k).unwrap().as_str().unwrap().to_lowercase())
    }

    /// What each row must hold, built from the Trace.
    fn expected_rows(t: &Trace, file: &str) -> Vec<Value> {
        let s = |id: StrId| json!(t.strings.get(id));
        // Links, and a marker's thread and device, are `None` for null.
        let link = |v: Option<u32>| v.map_or(Value::Null, |v| json!(v));
        let bits = |v: f64| json!({ "f64_bits": v.to_bits() as i64 });
        match file {
            "threads.parquet" => (0..t.threads.len())
                .map(|i| json!({"id": i, "pid": t.threads.pid[i], "tid": t.threads.tid[i], "name": s(t.threads.name[i])}))
                .collect(),
            "devices.parquet" => (0..t.devices.len())
                .map(|i| {
                    let d = t.devices.row(i);
                    json!({"id": d.id, "name": s(d.name), "sm_count": d.sm_count, "memory_bytes": d.memory_bytes,
                           "compute_capability_major": d.compute_capability.0,
                           "compute_capability_minor": d.compute_capability.1})
                })
                .collect(),
            "gpu_activity.parquet" => (0..t.gpu.len())
                .map(|i| {
                    let g = t.gpu.row(i);
                    json!({"id": i, "device": g.device, "stream": g.stream, "start_ns": g.start, "end_ns": g.end,
                           "kind": name_of(g.kind), "name": s(g.name), "correlation": g.correlation,
                           "external_id": g.external_id, "bytes": g.bytes, "copy_kind": name_of(g.copy_kind),
                           "src_mem": name_of(g.src_mem), "dst_mem": name_of(g.dst_mem),
                           "grid_x": g.grid[0], "grid_y": g.grid[1], "grid_z": g.grid[2],
                           "block_x": g.block[0], "block_y": g.block[1], "block_z": g.block[2],
                           "registers": g.registers, "shared_mem": g.shared_mem,
                           "est_achieved_occupancy_pct": g.occupancy_pct.map_or(Value::Null, |v| bits(f64::from(v))),
                           "launch_id": link(t.links.gpu_launch[i].map(CallRow::get))})
                })
                .collect(),
            "runtime_calls.parquet" => (0..t.runtime.len())
                .map(|i| {
                    let r = t.runtime.row(i);
                    json!({"id": i, "thread": r.thread.0, "start_ns": r.start, "end_ns": r.end, "name": s(r.name),
                           "api": name_of(r.api), "correlation": r.correlation, "external_id": r.external_id,
                           "op_id": link(t.links.runtime_op[i].map(OpRow::get)), "gpu_count": t.links.runtime_gpu_count[i]})
                })
                .collect(),
            "cpu_ops.parquet" => (0..t.cpu_ops.len())
                .map(|i| {
                    let c = t.cpu_ops.row(i);
                    json!({"id": i, "thread": c.thread.0, "start_ns": c.start, "end_ns": c.end, "name": s(c.name),
                           "kind": name_of(c.kind), "external_id": c.external_id, "sequence": c.sequence,
                           "shapes": s(c.shapes), "source": s(c.source), "parent_id": link(c.parent.map(OpRow::get)),
                           "depth": c.depth})
                })
                .collect(),
            "markers.parquet" => (0..t.markers.len())
                .map(|i| {
                    let m = t.markers.row(i);
                    json!({"kind": name_of(m.kind), "thread": link(m.thread.map(|t| t.0)), "device": link(m.device),
                           "stream": m.stream, "start_ns": m.start, "end_ns": m.end, "name": s(m.name),
                           "value": bits(m.value)})
                })
                .collect(),
            other => panic!("unexpected file {other}"),
        }
    }

    /// Exports `trace` and checks everything pyarrow reads against the
    /// Trace the importer makes of the same file. Returns pyarrow's view.
    fn check(trace: &Path, dir: &TempDir, extra: &[&str]) -> serde_json::Map<String, Value> {
        let out = dir.path().join("tables");
        let stats = dir.path().join("stats.json");
        let mut args = vec!["-q", "--stats-json", stats.to_str().unwrap()];
        args.extend(extra);
        export(trace, &out, &args).expect_code(0);
        let t = kineto::import_file(trace, &ImportOptions::default()).expect("imports");
        let files = read_back(&out);
        let names: Vec<&str> = files.keys().map(|k| k.as_str()).collect();
        assert_eq!(
            names,
            [
                "cpu_ops.parquet",
                "devices.parquet",
                "gpu_activity.parquet",
                "markers.parquet",
                "runtime_calls.parquet",
                "threads.parquet"
            ],
            "one file per table, nothing else (no .partial left)"
        );
        let wrote: Value = serde_json::from_slice(&std::fs::read(&stats).unwrap()).unwrap();
        let origin = t.meta.origin_ns.to_string();
        for (file, v) in &files {
            let cols: Vec<(String, String)> = v["schema"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| (c[0].as_str().unwrap().into(), c[1].as_str().unwrap().into()))
                .collect();
            let want: Vec<(String, String)> = schema(file)
                .iter()
                .map(|(a, b)| (a.to_string(), b.to_string()))
                .collect();
            assert_eq!(cols, want, "{file}: columns");
            assert_eq!(v["metadata"]["gapscope.origin_ns"], json!(origin), "{file}");
            assert_eq!(
                v["metadata"]["gapscope.table"],
                json!(file.trim_end_matches(".parquet"))
            );
            assert_eq!(v["metadata"]["gapscope.format"], json!(t.meta.format));
            let rows = expected_rows(&t, file);
            assert_eq!(v["rows"], json!(rows.len()), "{file}: rows");
            assert_eq!(wrote["tables"][file], json!(rows.len()), "{file}: --stats-json");
            let got = v["data"].as_array().unwrap();
            for (i, (g, w)) in got.iter().zip(&rows).enumerate() {
                assert_eq!(g, w, "{}: {file} row {i}", trace.display());
            }
        }
        files
    }

    /// The demo: every table, every row, plus values read off the demo's
    /// JSON by hand.
    #[test]
    fn demo_tables_read_back_exactly() {
        let dir = TempDir::new("export-parquet-demo");
        let src = dir.file("demo.json", &demo_json());
        let f = check(&src, &dir, &[]);
        for v in f.values() {
            assert!(v["codecs"] == json!(["SNAPPY"]) || v["rows"] == json!(0), "{v:?}");
        }
        let dev = &f["devices.parquet"]["data"][0];
        assert_eq!(dev["name"], json!("NVIDIA H100 80GB HBM3"));
        assert_eq!(dev["sm_count"], json!(132));
        assert_eq!(dev["compute_capability_major"], json!(9));
        // The first GPU row: the 16 MiB pageable input copy, launched by
        // the first cudaMemcpyAsync (correlation 1001).
        let g = &f["gpu_activity.parquet"]["data"][0];
        assert_eq!(g["kind"], json!("memcpy"));
        assert_eq!(g["copy_kind"], json!("htod"));
        assert_eq!(g["src_mem"], json!("pageable"));
        assert_eq!(g["bytes"], json!(16_777_216));
        assert_eq!(g["correlation"], json!(1001));
        let call = &f["runtime_calls.parquet"]["data"][g["launch_id"].as_u64().unwrap() as usize];
        assert_eq!(call["name"], json!("cudaMemcpyAsync"));
        assert_eq!(call["correlation"], json!(1001));
        // Kernels carry their launch dimensions.
        let kernels: Vec<&Value> = f["gpu_activity.parquet"]["data"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["kind"] == json!("kernel"))
            .collect();
        assert!(!kernels.is_empty());
        assert!(kernels.iter().any(|k| k["grid_x"].as_u64().unwrap() > 0));
        // Top-level ops have no parent, and every parent precedes its child.
        for op in f["cpu_ops.parquet"]["data"].as_array().unwrap() {
            match op["parent_id"].as_u64() {
                None => assert_eq!(op["depth"], json!(0)),
                Some(p) => assert!(p < op["id"].as_u64().unwrap()),
            }
        }
    }

    /// A shared trace with all six tables filled (9,096 GPU rows, 12,840
    /// instant markers), compressed and not; and one with counter markers.
    #[test]
    fn shared_trace_tables_read_back_exactly() {
        let trace =
            shared_trace("kineto-tb-plugin/resnet50_num_workers_0.worker0.1623143089861.pt.trace.json.gz");
        let dir = TempDir::new("export-parquet-shared");
        let f = check(&trace, &dir, &[]);
        for (file, v) in &f {
            assert!(v["rows"].as_u64().unwrap() > 0, "{file} is empty");
            assert_eq!(v["codecs"], json!(["SNAPPY"]), "{file}");
        }
        let dir = TempDir::new("export-parquet-shared-plain");
        let f = check(&trace, &dir, &["--no-compress"]);
        for (file, v) in &f {
            assert_eq!(v["codecs"], json!(["UNCOMPRESSED"]), "{file}");
        }

        let trace = shared_trace("kineto-tb-plugin/gpu_metrics_expected.json");
        let dir = TempDir::new("export-parquet-counters");
        let f = check(&trace, &dir, &[]);
        let counters = f["markers.parquet"]["data"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["kind"] == json!("counter") && m["name"] == json!("GPU 0 Utilization"))
            .count();
        assert!(counters > 10, "{counters} counter samples");
    }

    /// `-o` that is a file, a directory no file can be created in, or in a
    /// missing parent: one line naming the path, exit 2, nothing left.
    #[test]
    fn bad_output_paths() {
        let dir = TempDir::new("export-parquet-bad");
        let src = dir.file("demo.json", &demo_json());
        let file = dir.file("taken", b"x");
        let r = export(&src, &file, &[]).expect_code(2);
        assert_eq!(r.stderr.lines().count(), 1, "{}", r.stderr);
        assert!(r.stderr.contains("not a directory"), "{}", r.stderr);
        assert!(r.stderr.contains(file.to_str().unwrap()), "{}", r.stderr);
        assert_eq!(std::fs::read(&file).unwrap(), b"x", "the file is left alone");

        let missing = dir.path().join("no/such/parent/tables");
        let r = export(&src, &missing, &[]).expect_code(2);
        assert_eq!(r.stderr.lines().count(), 1, "{}", r.stderr);
        assert!(r.stderr.contains("no/such/parent"), "{}", r.stderr);

        // A directory where nothing can be created even by root (tests run
        // as root in CI, so permission bits alone would not do).
        let proc_dir = Path::new("/proc/self");
        let r = export(&src, proc_dir, &[]).expect_code(2);
        assert_eq!(r.stderr.lines().count(), 1, "{}", r.stderr);
        assert!(r.stderr.contains("/proc/self/"), "{}", r.stderr);
        assert!(!r.stderr.contains("panicked"), "{}", r.stderr);
    }
}

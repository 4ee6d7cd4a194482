//! Per-rank summaries as Parquet, for a job analysed past one machine: the
//! map step (`gapscope summarize`, one task per trace) writes each rank's
//! [`RankSummary`] as a set of small tables; the reduce step
//! (`gapscope analyze DIR`) reads them back (`crate::inputs::summaries`)
//! and runs the job analysis.
//!
//! A summary directory holds one subdirectory per table and one file per
//! rank in each, so tasks on different machines never write the same file
//! and any Parquet reader takes a table as a dataset
//! (`dask.dataframe.read_parquet("DIR/collectives")`):
//!
//! ```text
//! DIR/ranks/rank-000003-worker3.parquet        one row: rank, world size, clock origin, window
//! DIR/steps/...                                one row per step: the device's breakdown
//! DIR/step_idle/...                            (rank, step, cause, ns)
//! DIR/collectives/...                          one row per collective kernel, with its lead-in
//! DIR/lead_idle/...                            (rank, call, cause, ns): the lead-ins' idle time
//! DIR/lead_ops/...                             (rank, call, part, operator, ns)
//! DIR/overlap/...                              (rank, call, start_ns, end_ns): compute inside
//! ```
//!
//! Reading gives back exactly the summary that was written (tested).

use super::parquet::{col, Options, Table, TableFile, Values, NO_POOL};
use gapscope_analyzers::job::summary::{LeadOp, SUMMARY_VERSION};
use gapscope_analyzers::job::RankSummary;
use parquet::file::metadata::KeyValue;
use std::path::{Path, PathBuf};

/// The file name of a rank's summary in each table: `rank-000003-<file>`,
/// so ranks sort and two traces of one rank (two cycles) do not collide.
pub fn stem(s: &RankSummary) -> String {
    let file = s.source.rsplit(['/', '\\']).next().unwrap_or(&s.source);
    let clean: String = file
        .trim_end_matches(".gz")
        .trim_end_matches(".json")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("rank-{:06}-{clean}", s.rank.max(0))
}

/// Writes `s` into `dir` (created with its table directories when
/// missing). Returns the files written.
pub fn write(s: &RankSummary, dir: &Path, opts: &Options) -> std::io::Result<Vec<PathBuf>> {
    let stem = stem(s);
    let rank = s.rank;
    let calls = &s.collectives;
    let steps = &s.steps;
    let step_idle: Vec<(u64, &'static str, i64)> = steps
        .iter()
        .flat_map(|st| {
            st.idle_by_cause_ns
                .iter()
                .map(move |(c, ns)| (st.number, c.name(), ns))
        })
        .collect();
    let lead_idle: Vec<(usize, &'static str, i64)> = calls
        .iter()
        .enumerate()
        .flat_map(|(k, c)| {
            c.lead_in
                .idle_by_cause_ns
                .iter()
                .map(move |(cause, ns)| (k, cause.name(), ns))
        })
        .collect();
    let lead_ops: Vec<(usize, &LeadOp)> = calls
        .iter()
        .enumerate()
        .flat_map(|(k, c)| c.lead_in.top_ops.iter().map(move |o| (k, o)))
        .collect();
    let overlap: Vec<(usize, i64, i64)> = calls
        .iter()
        .enumerate()
        .flat_map(|(k, c)| c.compute_overlap.iter().map(move |&(a, b)| (k, a, b)))
        .collect();
    use Values::*;
    let r = move |_| rank;
    let tables = vec![
        Table {
            file: "ranks",
            rows: 1,
            columns: vec![
                col("summary_version", I64(Box::new(|_| s.summary_version as i64))),
                col("rank", I64(Box::new(r))),
                col("world_size", OptI64(Box::new(|_| s.world_size))),
                col("source", Text(Box::new(|_| s.source.as_str()))),
                col("origin_ns", I64(Box::new(|_| s.origin_ns))),
                col("device", OptI64(Box::new(|_| s.device.map(i64::from)))),
                col("window_start_ns", I64(Box::new(|_| s.window.0))),
                col("window_end_ns", I64(Box::new(|_| s.window.1))),
                col("gloo_collectives", U64(Box::new(|_| s.gloo_collectives))),
                col("workload", Text(Box::new(|_| s.workload.as_str()))),
            ],
        },
        Table {
            file: "steps",
            rows: steps.len(),
            columns: vec![
                col("rank", I64(Box::new(r))),
                col("step", U64(Box::new(|i| steps[i].number))),
                col("start_ns", I64(Box::new(|i| steps[i].start_ns))),
                col("end_ns", I64(Box::new(|i| steps[i].end_ns))),
                col("window_ns", I64(Box::new(|i| steps[i].breakdown.window_ns))),
                col("compute_ns", I64(Box::new(|i| steps[i].breakdown.compute_ns))),
                col(
                    "communication_ns",
                    I64(Box::new(|i| steps[i].breakdown.communication_ns)),
                ),
                col("memcpy_ns", I64(Box::new(|i| steps[i].breakdown.memcpy_ns))),
                col("memset_ns", I64(Box::new(|i| steps[i].breakdown.memset_ns))),
                col("idle_ns", I64(Box::new(|i| steps[i].breakdown.idle_ns))),
                col(
                    "memcpy_htod_ns",
                    I64(Box::new(|i| steps[i].breakdown.memcpy_by_kind_ns.htod)),
                ),
                col(
                    "memcpy_dtoh_ns",
                    I64(Box::new(|i| steps[i].breakdown.memcpy_by_kind_ns.dtoh)),
                ),
                col(
                    "memcpy_dtod_ns",
                    I64(Box::new(|i| steps[i].breakdown.memcpy_by_kind_ns.dtod)),
                ),
                col(
                    "memcpy_other_ns",
                    I64(Box::new(|i| steps[i].breakdown.memcpy_by_kind_ns.other)),
                ),
            ],
        },
        Table {
            file: "step_idle",
            rows: step_idle.len(),
            columns: vec![
                col("rank", I64(Box::new(r))),
                col("step", U64(Box::new(|i| step_idle[i].0))),
                col("cause", Enum(Box::new(|i| step_idle[i].1))),
                col("ns", I64(Box::new(|i| step_idle[i].2))),
            ],
        },
        Table {
            file: "collectives",
            rows: calls.len(),
            columns: vec![
                col("rank", I64(Box::new(r))),
                col("call", I64(Box::new(|i| i as i64))),
                col("kind", Text(Box::new(|i| calls[i].kind.as_str()))),
                col("group", OptText(Box::new(|i| calls[i].group.as_deref()))),
                col("seq", OptI64(Box::new(|i| calls[i].seq.map(|v| v as i64)))),
                col("step", OptI64(Box::new(|i| calls[i].step.map(|v| v as i64)))),
                col("stream", I64(Box::new(|i| calls[i].stream))),
                col("start_ns", I64(Box::new(|i| calls[i].start_ns))),
                col("end_ns", I64(Box::new(|i| calls[i].end_ns))),
                col("launch_ns", OptI64(Box::new(|i| calls[i].launch_ns))),
                col("lead_start_ns", I64(Box::new(|i| calls[i].lead_in.start_ns))),
                col("lead_compute_ns", I64(Box::new(|i| calls[i].lead_in.compute_ns))),
                col(
                    "lead_communication_ns",
                    I64(Box::new(|i| calls[i].lead_in.communication_ns)),
                ),
                col("lead_memcpy_ns", I64(Box::new(|i| calls[i].lead_in.memcpy_ns))),
                col("lead_memset_ns", I64(Box::new(|i| calls[i].lead_in.memset_ns))),
            ],
        },
        Table {
            file: "lead_idle",
            rows: lead_idle.len(),
            columns: vec![
                col("rank", I64(Box::new(r))),
                col("call", I64(Box::new(|i| lead_idle[i].0 as i64))),
                col("cause", Enum(Box::new(|i| lead_idle[i].1))),
                col("ns", I64(Box::new(|i| lead_idle[i].2))),
            ],
        },
        Table {
            file: "lead_ops",
            rows: lead_ops.len(),
            columns: vec![
                col("rank", I64(Box::new(r))),
                col("call", I64(Box::new(|i| lead_ops[i].0 as i64))),
                col("part", Text(Box::new(|i| lead_ops[i].1.part.as_str()))),
                col("operator", Text(Box::new(|i| lead_ops[i].1.operator.as_str()))),
                col("ns", I64(Box::new(|i| lead_ops[i].1.ns))),
            ],
        },
        Table {
            file: "overlap",
            rows: overlap.len(),
            columns: vec![
                col("rank", I64(Box::new(r))),
                col("call", I64(Box::new(|i| overlap[i].0 as i64))),
                col("start_ns", I64(Box::new(|i| overlap[i].1))),
                col("end_ns", I64(Box::new(|i| overlap[i].2))),
            ],
        },
    ];
    let mut written = Vec::new();
    for t in tables {
        let d = dir.join(t.file);
        std::fs::create_dir_all(&d)?;
        let kv = vec![
            KeyValue::new("gapscope.version".into(), env!("CARGO_PKG_VERSION").to_string()),
            KeyValue::new("gapscope.summary_version".into(), SUMMARY_VERSION.to_string()),
            KeyValue::new("gapscope.table".into(), t.file.to_string()),
        ];
        let mut f = TableFile::create(&d, &stem, &t.columns, kv, opts)?;
        f.append(&t, NO_POOL)?;
        f.finish()?;
        written.push(d.join(format!("{stem}.parquet")));
    }
    Ok(written)
}

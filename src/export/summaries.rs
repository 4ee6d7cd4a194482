//! Per-rank summaries as Parquet, for a job analysed past one machine: the
//! map step (`gapscope summarize`, one task per trace) writes each rank's
//! [`RankSummary`] as a set of small tables; the reduce step
//! (`gapscope analyze DIR`) reads them back and runs the job analysis.
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
use anyhow::{anyhow, bail, Context, Result};
use gapscope_analyzers::breakdown::{Breakdown, MemcpyByKind};
use gapscope_analyzers::causes::{Cause, CauseTotals};
use gapscope_analyzers::job::summary::{CollectiveCall, LeadIn, LeadOp, RankStep, SUMMARY_VERSION};
use gapscope_analyzers::job::RankSummary;
use parquet::file::metadata::KeyValue;
use parquet::file::reader::{FileReader, SerializedFileReader};
use parquet::record::{Field, Row};
use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::path::{Path, PathBuf};

/// Whether `dir` holds summaries (a `ranks/` table with files in it).
pub fn is_summary_dir(dir: &Path) -> bool {
    std::fs::read_dir(dir.join("ranks"))
        .is_ok_and(|mut e| e.any(|e| e.is_ok_and(|e| e.path().extension().is_some_and(|x| x == "parquet"))))
}

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

/// One row as (column name, value).
struct Rec(HashMap<String, Field>);

impl Rec {
    fn of(row: &Row) -> Rec {
        Rec(row
            .get_column_iter()
            .map(|(n, v)| (n.clone(), v.clone()))
            .collect())
    }

    fn field(&self, name: &str) -> Result<&Field> {
        self.0.get(name).ok_or_else(|| anyhow!("no column `{name}`"))
    }

    fn i64(&self, name: &str) -> Result<i64> {
        self.opt_i64(name)?.ok_or_else(|| anyhow!("`{name}` is null"))
    }

    fn opt_i64(&self, name: &str) -> Result<Option<i64>> {
        Ok(match self.field(name)? {
            Field::Null => None,
            Field::Long(v) => Some(*v),
            Field::ULong(v) => Some(*v as i64),
            Field::Int(v) => Some(*v as i64),
            Field::UInt(v) => Some(*v as i64),
            other => bail!("`{name}` is {other:?}, not an integer"),
        })
    }

    fn text(&self, name: &str) -> Result<String> {
        self.opt_text(name)?.ok_or_else(|| anyhow!("`{name}` is null"))
    }

    fn opt_text(&self, name: &str) -> Result<Option<String>> {
        Ok(match self.field(name)? {
            Field::Null => None,
            Field::Str(s) => Some(s.clone()),
            other => bail!("`{name}` is {other:?}, not text"),
        })
    }
}

fn rows(path: &Path) -> Result<Vec<Rec>> {
    let file = File::open(path).with_context(|| format!("{}: cannot open", path.display()))?;
    let reader =
        SerializedFileReader::new(file).with_context(|| format!("{}: not a Parquet file", path.display()))?;
    let mut out = Vec::new();
    for row in reader.get_row_iter(None)? {
        out.push(Rec::of(
            &row.with_context(|| format!("{}: unreadable row", path.display()))?,
        ));
    }
    Ok(out)
}

fn cause(name: &str) -> Result<Cause> {
    Cause::ALL
        .iter()
        .copied()
        .find(|c| c.name() == name)
        .ok_or_else(|| anyhow!("unknown idle cause `{name}` (written by a newer gapscope?)"))
}

/// Reads every rank's summary in `dir`, by rank.
pub fn read_dir(dir: &Path) -> Result<Vec<RankSummary>> {
    let mut stems: Vec<String> = std::fs::read_dir(dir.join("ranks"))
        .with_context(|| format!("{}: cannot read ranks/", dir.display()))?
        .flatten()
        .filter_map(|e| {
            let p = e.path();
            if p.extension()? != "parquet" {
                return None;
            }
            Some(p.file_stem()?.to_string_lossy().to_string())
        })
        .collect();
    stems.sort();
    let mut out = Vec::new();
    for stem in stems {
        let s = read_one(dir, &stem).with_context(|| format!("{}: summary {stem}", dir.display()))?;
        out.push(s);
    }
    out.sort_by_key(|s| s.rank);
    Ok(out)
}

fn read_one(dir: &Path, stem: &str) -> Result<RankSummary> {
    let table = |t: &str| rows(&dir.join(t).join(format!("{stem}.parquet")));
    let meta = table("ranks")?;
    let [m] = meta.as_slice() else {
        bail!("ranks/{stem}.parquet holds {} rows, not 1", meta.len());
    };
    let version = m.i64("summary_version")?;
    if version != SUMMARY_VERSION as i64 {
        bail!("summary version {version}; this gapscope reads version {SUMMARY_VERSION}: summarize the traces again with it");
    }
    let mut step_idle: BTreeMap<u64, CauseTotals> = BTreeMap::new();
    for r in table("step_idle")? {
        step_idle
            .entry(r.i64("step")? as u64)
            .or_default()
            .add(cause(&r.text("cause")?)?, r.i64("ns")?);
    }
    let steps = table("steps")?
        .iter()
        .map(|r| {
            let number = r.i64("step")? as u64;
            Ok(RankStep {
                number,
                start_ns: r.i64("start_ns")?,
                end_ns: r.i64("end_ns")?,
                breakdown: Breakdown {
                    window_ns: r.i64("window_ns")?,
                    compute_ns: r.i64("compute_ns")?,
                    communication_ns: r.i64("communication_ns")?,
                    memcpy_ns: r.i64("memcpy_ns")?,
                    memset_ns: r.i64("memset_ns")?,
                    idle_ns: r.i64("idle_ns")?,
                    memcpy_by_kind_ns: MemcpyByKind {
                        htod: r.i64("memcpy_htod_ns")?,
                        dtoh: r.i64("memcpy_dtoh_ns")?,
                        dtod: r.i64("memcpy_dtod_ns")?,
                        other: r.i64("memcpy_other_ns")?,
                    },
                },
                idle_by_cause_ns: step_idle.get(&number).copied().unwrap_or_default(),
            })
        })
        .collect::<Result<Vec<_>>>()?;
    let mut calls: Vec<CollectiveCall> = Vec::new();
    for r in table("collectives")? {
        let k = r.i64("call")? as usize;
        if k != calls.len() {
            bail!("collectives/{stem}.parquet: call {k} out of order");
        }
        calls.push(CollectiveCall {
            kind: r.text("kind")?,
            group: r.opt_text("group")?,
            seq: r.opt_i64("seq")?.map(|v| v as u64),
            step: r.opt_i64("step")?.map(|v| v as u64),
            stream: r.i64("stream")?,
            start_ns: r.i64("start_ns")?,
            end_ns: r.i64("end_ns")?,
            launch_ns: r.opt_i64("launch_ns")?,
            compute_overlap: Vec::new(),
            lead_in: LeadIn {
                start_ns: r.i64("lead_start_ns")?,
                compute_ns: r.i64("lead_compute_ns")?,
                communication_ns: r.i64("lead_communication_ns")?,
                memcpy_ns: r.i64("lead_memcpy_ns")?,
                memset_ns: r.i64("lead_memset_ns")?,
                idle_by_cause_ns: CauseTotals::default(),
                top_ops: Vec::new(),
            },
        });
    }
    let call = |r: &Rec, calls: &mut Vec<CollectiveCall>| -> Result<usize> {
        let k = r.i64("call")? as usize;
        if k >= calls.len() {
            bail!("call {k} of a table has no row in collectives/{stem}.parquet");
        }
        Ok(k)
    };
    for r in table("lead_idle")? {
        let k = call(&r, &mut calls)?;
        calls[k]
            .lead_in
            .idle_by_cause_ns
            .add(cause(&r.text("cause")?)?, r.i64("ns")?);
    }
    for r in table("lead_ops")? {
        let k = call(&r, &mut calls)?;
        calls[k].lead_in.top_ops.push(LeadOp {
            part: r.text("part")?,
            operator: r.text("operator")?,
            ns: r.i64("ns")?,
        });
    }
    for r in table("overlap")? {
        let k = call(&r, &mut calls)?;
        calls[k]
            .compute_overlap
            .push((r.i64("start_ns")?, r.i64("end_ns")?));
    }
    Ok(RankSummary {
        summary_version: SUMMARY_VERSION,
        rank: m.i64("rank")?,
        world_size: m.opt_i64("world_size")?,
        source: m.text("source")?,
        origin_ns: m.i64("origin_ns")?,
        device: m.opt_i64("device")?.map(|d| d as u32),
        window: (m.i64("window_start_ns")?, m.i64("window_end_ns")?),
        steps,
        collectives: calls,
        analysis: None,
    })
}

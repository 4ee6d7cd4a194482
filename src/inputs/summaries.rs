//! Per-rank summaries read back from Parquet: the reduce step of a job
//! analysed past one machine (`gapscope analyze DIR` on the directory the
//! map step, `gapscope summarize`, wrote with `crate::export::summaries`).
//! Reading gives back exactly the summary that was written (tested).

use anyhow::{anyhow, bail, Context, Result};
use gapscope_analyzers::breakdown::{Breakdown, MemcpyByKind};
use gapscope_analyzers::causes::{Cause, CauseTotals};
use gapscope_analyzers::job::summary::{CollectiveCall, LeadIn, LeadOp, RankStep, SUMMARY_VERSION};
use gapscope_analyzers::job::RankSummary;
use gapscope_analyzers::workload::Workload;
use parquet::file::reader::{FileReader, SerializedFileReader};
use parquet::record::{Field, Row};
use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::path::Path;

/// Whether `dir` holds summaries (a `ranks/` table with files in it).
pub fn is_summary_dir(dir: &Path) -> bool {
    std::fs::read_dir(dir.join("ranks"))
        .is_ok_and(|mut e| e.any(|e| e.is_ok_and(|e| e.path().extension().is_some_and(|x| x == "parquet"))))
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
        // Summaries written before this column count none.
        gloo_collectives: if m.0.contains_key("gloo_collectives") {
            m.i64("gloo_collectives")? as u64
        } else {
            0
        },
        // Summaries written before this column cannot tell.
        workload: if m.0.contains_key("workload") {
            let name = m.text("workload")?;
            Workload::from_name(&name).ok_or_else(|| {
                anyhow!(
                    "column `workload` holds {name:?}: expected training, \
                     no_backward_or_optimizer or unknown"
                )
            })?
        } else {
            Workload::Unknown
        },
        analysis: None,
    })
}

//! A job's Perfetto export: every rank in one file, on the job's aligned
//! clock, one process group per rank, and a flow from each late rank's
//! collective to every rank that waited for it.
//!
//! Ranks are read and written one at a time (one trace in memory), each as
//! two packet sequences of its own (its trace, its analysis); the trace processor sorts the whole file when
//! it loads it. Each waiting rank gets a `Waiting for peers` track under
//! its GPU: `waiting for peers` over the wait before the second-last member
//! arrived (several ranks late), `waiting for rank N` over the rest of the
//! wait (the late rank's alone), then `rank N arrived` over the rest of its
//! collective (the transfer). The trace processor points a
//! flow from the slice that starts first to the one that starts later, so
//! the flow runs from the late rank's kernel (starting at its arrival) to
//! the waiting rank's `rank N arrived` slice, which starts 1 ns later.

use super::perfetto::{self, tracks::Group, Counts, FindingSpan, Options, RankExport};
use anyhow::{Context, Result};
use gapscope_analyzers::analysis::AnalyzeOptions;
use gapscope_analyzers::job::{JobAnalysis, JobTimeline, RankSummary};
use gapscope_analyzers::Session;
use gapscope_collectors::trace::{Ns, Trace};
use std::collections::HashMap;
use std::io::Write;

/// Job flow ids live above every rank's launch flows.
const JOB_FLOW_BASE: u64 = 1 << 62;
/// Synthetic pids of the ranks' process groups start here.
const GROUP_PID_BASE: i32 = 0x4000_0000;

/// What rank `r` (an index into the job's ranks) needs besides its trace.
struct RankPlan {
    begin_flows: HashMap<(i64, Ns, Ns), Vec<u64>>,
    /// Spans, and the flow each one ends.
    waits: Vec<(FindingSpan, Option<u64>)>,
}

/// A job to export: its ranks' summaries (by rank), its analysis and
/// timeline.
pub struct Job<'a> {
    /// The ranks' summaries, by rank.
    pub ranks: &'a [RankSummary],
    /// The job analysis.
    pub analysis: &'a JobAnalysis,
    /// Its clock and timed collectives.
    pub timeline: &'a JobTimeline,
}

/// Writes `job` to `out`; `load` reads a rank's trace from its source.
/// Returns what was written and how many of the flows join two ranks.
pub fn write(
    job: &Job<'_>,
    opts: &Options,
    load: &dyn Fn(&str) -> Result<Trace>,
    mut out: impl Write,
) -> Result<(Counts, u64)> {
    let plans = plan(job);
    let between: u64 = plans
        .iter()
        .map(|p| p.waits.iter().filter(|w| w.1.is_some()).count() as u64)
        .sum();
    let offsets: Vec<Ns> = job
        .ranks
        .iter()
        .map(|s| {
            let off = job
                .analysis
                .alignment
                .ranks
                .iter()
                .find(|a| a.rank == s.rank)
                .and_then(|a| a.offset_ns)
                .unwrap_or(0);
            s.origin_ns + off
        })
        .collect();
    // Every time written is >= 0: lift the whole job when a clock is odd.
    let lift = offsets.iter().copied().min().map_or(0, |m| (-m).max(0));
    let mut total = Counts::default();
    for (k, (s, plan)) in job.ranks.iter().zip(plans).enumerate() {
        let trace = load(&s.source)?;
        let rows = gpu_rows(&trace);
        let to_rows = |m: HashMap<(i64, Ns, Ns), Vec<u64>>| -> HashMap<u32, Vec<u64>> {
            m.into_iter()
                .filter_map(|(key, v)| Some((*rows.get(&key)?, v)))
                .collect()
        };
        // The rank's own findings, as in a single trace's export.
        let mut spans = s
            .analysis
            .as_ref()
            .map_or_else(Vec::new, |a| perfetto::finding_spans(&a.findings));
        let mut span_flows: HashMap<u32, Vec<u64>> = HashMap::new();
        for (span, flow) in plan.waits {
            if let Some(id) = flow {
                span_flows.insert(spans.len() as u32, vec![id]);
            }
            spans.push(span);
        }
        let rank = RankExport {
            group: Group {
                uuid_base: (k as u64 + 1) << 32,
                pid: GROUP_PID_BASE + k as i32,
                title: format!("rank {}: {}", s.rank, file_name(&s.source)),
            },
            sequence: 2 * k as u32 + 1,
            clock_shift: offsets[k] + lift,
            flow_base: (k as u64 + 1) << 40,
            begin_flows: to_rows(plan.begin_flows),
            span_flows,
        };
        let session = Session::new(&trace, &AnalyzeOptions::default());
        let c = perfetto::write_rank(&session, || spans, opts, Some(&rank), &mut out)
            .with_context(|| format!("rank {}: write failed", s.rank))?;
        total.add(&c);
    }
    Ok((total, between))
}

/// Flows and wait spans of every rank, from the late collectives.
fn plan(job: &Job<'_>) -> Vec<RankPlan> {
    let mut plans: Vec<RankPlan> = job
        .ranks
        .iter()
        .map(|_| RankPlan {
            begin_flows: HashMap::new(),
            waits: Vec::new(),
        })
        .collect();
    let t = &job.timeline;
    for (k, (c, &late)) in t.timed.iter().zip(&t.late).enumerate() {
        if !late {
            continue;
        }
        let last = c.last();
        let late_rank = job.ranks[last.rank].rank;
        let key_of = |r: usize, call: usize| {
            let x = &job.ranks[r].collectives[call];
            (x.stream, x.start_ns, x.end_ns)
        };
        let step = c.step.map_or(String::new(), |s| format!(", step {s}"));
        for (m, a) in c.arrivals[..c.arrivals.len() - 1].iter().enumerate() {
            if a.wait_ns <= 0 {
                continue;
            }
            let call = &job.ranks[a.rank].collectives[a.call];
            let Some(device) = job.ranks[a.rank].device else {
                continue;
            };
            let arrived = call.start_ns + a.wait_ns;
            let args = vec![
                ("late_rank", late_rank.to_string()),
                ("wait_ns", a.wait_ns.to_string()),
                ("lateness_ns", c.lateness_ns.to_string()),
            ];
            // Until the second-last member arrived the rank waited for it
            // too: only the rest of the wait is the late rank's alone.
            let alone = arrived - c.caused_wait_of(a);
            if alone > call.start_ns {
                plans[a.rank].waits.push((
                    FindingSpan {
                        device,
                        start: call.start_ns,
                        end: alone,
                        title: format!("waiting for peers: {} #{}{step}", c.kind, c.ordinal),
                        track: "Waiting for peers",
                        args: args.clone(),
                    },
                    None,
                ));
            }
            if arrived > alone {
                plans[a.rank].waits.push((
                    FindingSpan {
                        device,
                        start: alone,
                        end: arrived,
                        title: format!("waiting for rank {late_rank}: {} #{}{step}", c.kind, c.ordinal),
                        track: "Waiting for peers",
                        args: args.clone(),
                    },
                    None,
                ));
            }
            // A flow needs its end slice to start strictly after the late
            // kernel: 1 ns after the arrival (none when the transfer is
            // shorter than that).
            if call.end_ns <= arrived + 1 {
                continue;
            }
            let id = JOB_FLOW_BASE + ((k as u64) << 20) + m as u64;
            plans[last.rank]
                .begin_flows
                .entry(key_of(last.rank, last.call))
                .or_default()
                .push(id);
            plans[a.rank].waits.push((
                FindingSpan {
                    device,
                    start: arrived + 1,
                    end: call.end_ns,
                    title: format!("rank {late_rank} arrived: {} #{}{step}", c.kind, c.ordinal),
                    track: "Waiting for peers",
                    args,
                },
                Some(id),
            ));
        }
    }
    plans
}

/// GPU rows by (stream, start, end): how a summary's call is found again
/// in its trace.
fn gpu_rows(trace: &Trace) -> HashMap<(i64, Ns, Ns), u32> {
    (0..trace.gpu.len())
        .map(|i| {
            (
                (trace.gpu.stream[i], trace.gpu.start[i], trace.gpu.end[i]),
                i as u32,
            )
        })
        .collect()
}

fn file_name(path: &str) -> &str {
    path.rsplit(['/', '\\']).next().unwrap_or(path)
}

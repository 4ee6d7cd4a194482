//! Native Perfetto protobuf export (`.pftrace`): opens in ui.perfetto.dev
//! and loads cleanly in the trace processor.
//!
//! The rules the trace processor needs (breaking one decodes without
//! error yet loads wrong): one packet sequence with interned names;
//! descriptors first; per track, slices that nest (lanes otherwise)
//! with ENDs before BEGINs at equal times; packets in time order; flows from
//! each launch call to its GPU work with unique, terminating ids.

pub mod args;
pub mod lanes;
pub mod proto;
pub mod tracks;
pub mod writer;

use crate::export::idle::idle_gaps;
use gapscope_analyzers::detectors::Finding;
use gapscope_analyzers::Session;
use gapscope_collectors::trace::Ns;
use lanes::Edge;
use std::cmp::Reverse;
use std::collections::binary_heap::{BinaryHeap, PeekMut};
use std::collections::HashMap;
use std::io::{self, Write};
use tracks::Src;
pub use writer::Counts;
use writer::PacketWriter;

/// Export settings.
#[derive(Clone, Debug)]
pub struct Options {
    /// Width of a GPU utilization bin, ns.
    pub utilization_bin_ns: i64,
    /// zlib level of the compressed packet chunks; `None` writes plain
    /// packets.
    pub compression: Option<u32>,
}

/// The default zlib level. zlib-rs's level 2 (its fast deflate) encodes 1M
/// slices as fast as plain packets (there is 17x less to write) while
/// level 6 took 2.5x as long for files 10-30% smaller; every shared trace
/// is within the 35% size goal at level 2 (bench/README.md, "Perfetto
/// export").
pub const DEFAULT_COMPRESSION: u32 = 2;

impl Default for Options {
    fn default() -> Self {
        Options {
            utilization_bin_ns: 1_000_000,
            compression: Some(DEFAULT_COMPRESSION),
        }
    }
}

/// A detector finding drawn as a slice on its device's "Findings" track.
#[derive(Clone, Debug, PartialEq)]
pub struct FindingSpan {
    /// GPU index.
    pub device: u32,
    /// Start, ns since the trace origin.
    pub start: Ns,
    /// End, ns since the trace origin.
    pub end: Ns,
    /// Slice name (the finding's title).
    pub title: String,
    /// The track it goes on, under its device (`Findings`; a job's export
    /// adds `Waiting for peers`).
    pub track: &'static str,
    /// Args shown on the slice (`debug.<name>`): id, savings, hint, ...
    pub args: Vec<(&'static str, String)>,
}

/// The ranked `findings`, one slice per piece of evidence, on a "Findings"
/// track under each GPU: `#rank title`, with the finding's id, savings and
/// hint as args, so the timeline shows where each one happens.
pub fn finding_spans(findings: &[Finding]) -> Vec<FindingSpan> {
    let mut spans = Vec::new();
    for (i, f) in findings.iter().enumerate() {
        for e in &f.evidence {
            spans.push(FindingSpan {
                device: f.device,
                start: e.start_ns,
                end: e.end_ns.max(e.start_ns),
                title: format!("#{} {}", i + 1, f.title),
                track: "Findings",
                args: vec![
                    ("finding", f.id.clone()),
                    ("detector", f.detector.clone()),
                    ("est_savings_ns", f.est_savings_ns.to_string()),
                    ("hint", f.hint.clone()),
                ],
            });
        }
    }
    spans
}

/// One rank of a job, written as its own packet sequence into a file that
/// holds every rank ([`write_rank`]).
#[derive(Clone, Debug)]
pub struct RankExport {
    /// The rank's process group and uuid range.
    pub group: tracks::Group,
    /// Its packet sequence (non-zero, one per rank).
    pub sequence: u32,
    /// Absolute time of the trace's 0 on the job's clock, ns (its origin
    /// plus its clock offset); every written time is this plus the
    /// trace's, and must not be negative.
    pub clock_shift: i64,
    /// Its launch-to-kernel flow ids are `flow_base + GPU row + 1`: flow
    /// ids are global to the file.
    pub flow_base: u64,
    /// Flows that start at the BEGIN of a GPU row (a late rank's
    /// collective), by row.
    pub begin_flows: HashMap<u32, Vec<u64>>,
    /// Flows that end at the BEGIN of a span (index into the findings
    /// spans): the waiting rank's transfer, which starts when the late
    /// rank arrived. The trace processor points a flow from the slice that
    /// starts first to the one that starts later.
    pub span_flows: HashMap<u32, Vec<u64>>,
}

/// Writes the session's trace, with its idle gaps, counters and the
/// `findings`, as a Perfetto trace to `out` and returns what was written.
/// `out` should be buffered.
pub fn write<W: Write>(
    session: &Session,
    findings: &[FindingSpan],
    opts: &Options,
    out: W,
) -> io::Result<Counts> {
    write_rank(session, findings, opts, None, out)
}

/// [`write`], or with `rank`, one rank of a job: its tracks under its own
/// process group, its times on the job's clock, its flows numbered apart
/// and the cross-rank flows attached.
pub fn write_rank<W: Write>(
    session: &Session,
    findings: &[FindingSpan],
    opts: &Options,
    rank: Option<&RankExport>,
    out: W,
) -> io::Result<Counts> {
    let trace = session.trace();
    let idle = &idle_gaps(session);
    let (items, mut layout, groups) = tracks::build(trace, idle, findings, rank.map(|r| &r.group));
    for (&device, &guuid) in &groups {
        let util = session.utilization(device, opts.utilization_bin_ns);
        let queue = session.launch_queue(device);
        let bin_ms = opts.utilization_bin_ns as f64 / 1e6;
        // A counter track without samples is not created by the trace
        // processor, so it is not declared either: the track count we
        // report must be the one it loads.
        for (name, unit, rank, samples) in [
            (
                format!("GPU {device} utilization ({bin_ms} ms bins)"),
                "%",
                20_000,
                util,
            ),
            (
                format!("GPU {device} launch queue"),
                "launched, not started",
                20_001,
                queue,
            ),
        ] {
            if !samples.is_empty() {
                layout.counter_track(name, unit, guuid, rank, samples);
            }
        }
    }

    // Timestamps are absolute in the source's clock when that stays >= 0.
    let counter_times = || layout.counters.iter().flat_map(|c| c.samples.iter().map(|x| x.0));
    let min_ts = items
        .start
        .iter()
        .copied()
        .chain(counter_times())
        .min()
        .unwrap_or(0);
    let base = if let Some(r) = rank {
        r.clock_shift
    } else if trace.meta.origin_ns.checked_add(min_ts).is_some_and(|t| t >= 0) {
        trace.meta.origin_ns
    } else {
        -min_ts
    };
    let abs = |t: i64| (t + base) as u64;
    // The incremental clock counts µs when every time is a whole µs (Kineto
    // JSON times usually are): most deltas then fit one byte.
    let whole_us = |t: &i64| (t + base) % 1000 == 0;
    let unit = if items.start.iter().chain(&items.end).all(whole_us) && counter_times().all(|t| whole_us(&t))
    {
        1000
    } else {
        1
    };

    // Flow ids: GPU row + 1, started on the launch call, ended on the GPU
    // row. Only when the work starts no earlier than its call: the flow runs
    // from the earlier slice to the later one, and a terminating id seen
    // before its start would be dropped.
    let flow_call =
        |g: usize| trace.links.gpu_launch[g].filter(|c| trace.gpu.start[g] >= trace.runtime.start[c.index()]);
    let flow_base = rank.map_or(0, |r| r.flow_base);
    let mut call_flows: Vec<Vec<u64>> = vec![Vec::new(); trace.runtime.len()];
    for g in 0..trace.gpu.len() {
        if let Some(c) = flow_call(g) {
            call_flows[c.index()].push(flow_base + g as u64 + 1);
        }
    }
    let no_map = HashMap::new();
    let begin_flows = rank.map_or(&no_map, |r| &r.begin_flows);
    let span_flows = rank.map_or(&no_map, |r| &r.span_flows);

    let level = opts.compression.map(|l| flate2::Compression::new(l.min(9)));
    let mut w = match rank {
        Some(r) => PacketWriter::with_sequence(out, &trace.strings, abs(min_ts), unit, level, r.sequence),
        None => PacketWriter::new(out, &trace.strings, abs(min_ts), unit, level),
    };
    for td in std::mem::take(&mut layout.descriptors) {
        w.descriptor(td)?;
    }
    let slice_tracks = layout.slices.iter().filter(|t| !t.edges.is_empty()).count();
    let counter_tracks = layout.counters.iter().filter(|t| !t.samples.is_empty()).count();
    w.set_data_tracks(slice_tracks as u64, counter_tracks as u64);

    // k-way merge of every track's events by (time, rank): file order is
    // time order, and per track the edges keep their own order.
    let n_slice = layout.slices.len();
    let mut pos = vec![0usize; n_slice + layout.counters.len()];
    let head = |s: usize, p: usize| -> Option<(i64, u8)> {
        if s < n_slice {
            let t = &layout.slices[s];
            t.edges.get(p).map(|e| (e.ts, t.rank))
        } else {
            layout.counters[s - n_slice]
                .samples
                .get(p)
                .map(|x| (x.0, tracks::RANK_COUNTER))
        }
    };
    // The key (time, rank, track) packed in one u128, ordered as the tuple:
    // one comparison per heap step.
    let key = |t: i64, r: u8, s: usize| -> Reverse<u128> {
        let t = (t as u64 ^ (1 << 63)) as u128; // order-preserving for i64
        Reverse(t << 64 | (r as u128) << 56 | s as u128)
    };
    let mut heap: BinaryHeap<Reverse<u128>> = (0..pos.len())
        .filter_map(|s| head(s, 0).map(|(t, r)| key(t, r, s)))
        .collect();
    let mut args = Vec::with_capacity(16);
    let no_flows: &[u64] = &[];
    // The top entry is replaced in place (one sift down) rather than popped
    // and pushed again.
    while let Some(mut top) = heap.peek_mut() {
        let s = (top.0 & ((1 << 56) - 1)) as usize;
        let p = pos[s];
        if s < n_slice {
            let track = &layout.slices[s];
            let e: Edge = track.edges[p];
            let src = items.src[e.item() as usize];
            if e.is_end() {
                w.end(abs(e.ts), track.uuid)?;
            } else {
                let (name, cat) = args::describe(trace, idle, findings, src, &mut args);
                let launch_flow;
                let (flows, term): (&[u64], &[u64]) = match src {
                    Src::Call(r) => (&call_flows[r as usize], no_flows),
                    Src::Gpu(g) => {
                        launch_flow = [flow_base + g as u64 + 1];
                        let starts = begin_flows.get(&g).map_or(no_flows, Vec::as_slice);
                        (
                            starts,
                            if flow_call(g as usize).is_some() {
                                &launch_flow
                            } else {
                                no_flows
                            },
                        )
                    }
                    Src::Finding(k) => (no_flows, span_flows.get(&k).map_or(no_flows, Vec::as_slice)),
                    _ => (no_flows, no_flows),
                };
                w.begin(abs(e.ts), track.uuid, name, cat, &args, flows, term)?;
            }
        } else {
            let c = &layout.counters[s - n_slice];
            let (t, v) = c.samples[p];
            w.counter(abs(t), c.uuid, v)?;
        }
        pos[s] = p + 1;
        match head(s, p + 1) {
            Some((t, r)) => *top = key(t, r, s),
            None => {
                PeekMut::pop(top);
            }
        }
    }
    w.finish()
}

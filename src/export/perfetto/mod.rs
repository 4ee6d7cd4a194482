//! Native Perfetto protobuf export (`.pftrace`): opens in ui.perfetto.dev
//! and loads cleanly in the trace processor.
//!
//! The rules the trace processor needs (breaking one decodes without
//! error yet loads wrong): interned names per packet sequence;
//! descriptors first; per track, slices that nest (lanes otherwise)
//! with ENDs before BEGINs at equal times; packets in time order; flows from
//! each launch call to its GPU work with unique, terminating ids.

pub mod args;
pub mod lanes;
pub mod proto;
pub mod tracks;
pub mod writer;

use crate::export::idle::{idle_gaps, IdleGap};
use gapscope_analyzers::detectors::Finding;
use gapscope_analyzers::Session;
use gapscope_collectors::trace::{MarkerKind, Ns, Trace};
use lanes::Edge;
use std::cmp::Reverse;
use std::collections::binary_heap::{BinaryHeap, PeekMut};
use std::collections::{BTreeMap, HashMap};
use std::io::{self, Write};
use tracks::Src;
pub use writer::Counts;
use writer::{PacketWriter, SEQUENCE_ID};

/// Export settings.
#[derive(Clone, Debug)]
pub struct Options {
    /// Width of a GPU utilization bin, ns.
    pub utilization_bin_ns: i64,
    /// Level (libdeflate's, 1-12) of the zlib-compressed packet chunks;
    /// `None` writes plain packets.
    pub compression: Option<u32>,
}

/// The default level. libdeflate's level 1 compressed an export's packets
/// in two thirds of the time zlib-rs's level 2 (the default before) took,
/// into a 3% smaller file; higher levels cost more than the few percent
/// of size they save (bench/README.md, "libdeflate for the export's
/// chunks").
pub const DEFAULT_COMPRESSION: u32 = 1;

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
    /// Its packet sequences: this one (non-zero) for the trace's own
    /// tracks, the next for the analysis' tracks.
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
/// `findings` (made on first use, from the analysis), as a Perfetto trace
/// to `out` and returns what was written. `out` should be buffered.
pub fn write<W: Write>(
    session: &Session,
    findings: impl FnOnce() -> Vec<FindingSpan> + Send,
    opts: &Options,
    out: W,
) -> io::Result<Counts> {
    write_rank(session, findings, opts, None, out)
}

/// [`write`], or with `rank`, one rank of a job: its tracks under its own
/// process group, its times on the job's clock, its flows numbered apart
/// and the cross-rank flows attached.
///
/// Two packet sequences: first the trace's own tracks (threads, streams,
/// annotations), which need only the trace and are laid out and written
/// on this thread while the analysis (idle segments, then `findings` and
/// the counters) runs on another; then the analysis' tracks. The trace
/// processor sorts the whole file when it loads it, and no flow or nesting
/// joins the two sequences' tracks but a job's waits.
pub fn write_rank<W: Write>(
    session: &Session,
    findings: impl FnOnce() -> Vec<FindingSpan> + Send,
    opts: &Options,
    rank: Option<&RankExport>,
    mut out: W,
) -> io::Result<Counts> {
    let trace = session.trace();
    std::thread::scope(|s| {
        let analysis = s.spawn(|| {
            let idle = idle_gaps(session);
            let findings = findings();
            let counters = counters(session, &idle, &findings, opts);
            (idle, findings, counters)
        });
        let own = write_own(trace, opts, rank, &mut out);
        let (idle, findings, counters) = analysis.join().unwrap_or_else(|p| std::panic::resume_unwind(p));
        let mut own = own?;
        let derived = Derived {
            idle: &idle,
            findings: &findings,
            counters,
        };
        let counts = write_derived(trace, &mut own, derived, opts, rank, &mut out)?;
        own.counts.add(&counts);
        Ok(own.counts)
    })
}

/// What the trace's own sequence leaves for the analysis' one.
struct Own {
    counts: Counts,
    layout: tracks::Layout,
    groups: BTreeMap<u32, u64>,
    /// Added to a trace time to make the written (absolute) one.
    base: i64,
    /// No trace time is below this.
    floor: i64,
}

/// The analysis' part of the timeline.
struct Derived<'a, 't> {
    idle: &'a [IdleGap<'t>],
    findings: &'a [FindingSpan],
    counters: Vec<DeviceCounters>,
}

/// One device's counter samples (time, value).
struct DeviceCounters {
    device: u32,
    utilization: Vec<(i64, f64)>,
    queue: Vec<(i64, f64)>,
}

/// Per device that will have a group track: its utilization and launch
/// queue as counter samples.
fn counters(
    session: &Session,
    idle: &[IdleGap<'_>],
    findings: &[FindingSpan],
    opts: &Options,
) -> Vec<DeviceCounters> {
    let trace = session.trace();
    let markers = &trace.markers;
    // A handful of devices among millions of rows: a scan of the few seen
    // so far beats collecting and sorting every row's device.
    let mut devices: Vec<u32> = Vec::new();
    let annotations = (0..markers.len())
        .filter(|&i| markers.kind[i] == MarkerKind::GpuAnnotation)
        .filter_map(|i| markers.device[i]);
    let all = trace.gpu.device.iter().copied().chain(annotations);
    let all = all
        .chain(idle.iter().map(|g| g.device))
        .chain(findings.iter().map(|f| f.device));
    let mut last = None;
    for d in all {
        if last != Some(d) && !devices.contains(&d) {
            devices.push(d);
        }
        last = Some(d);
    }
    devices.sort_unstable();
    devices
        .into_iter()
        .map(|device| DeviceCounters {
            device,
            utilization: session.utilization(device, opts.utilization_bin_ns),
            queue: session.launch_queue(device),
        })
        .collect()
}

/// The incremental clock counts µs when every time is a whole µs (Kineto
/// JSON times usually are): most deltas then fit one byte.
fn clock_unit(mut times: impl Iterator<Item = i64>, base: i64) -> u64 {
    if times.all(|t| (t + base) % 1000 == 0) {
        1000
    } else {
        1
    }
}

/// Lays out and writes the trace's own tracks, with the launch flows.
fn write_own<W: Write>(trace: &Trace, opts: &Options, rank: Option<&RankExport>, out: W) -> io::Result<Own> {
    let (items, mut layout, groups) = tracks::build_own(trace, rank.map(|r| &r.group));
    // Timestamps are absolute in the source's clock when that stays >= 0.
    // The analysis' times all lie within the trace's events, so the lowest
    // event time decides for both sequences (the items are rows of the
    // tables it is taken over: none starts below it).
    let floor = trace.event_extent().0;
    let items_min = items.start.iter().copied().min();
    let base = if let Some(r) = rank {
        r.clock_shift
    } else if trace.meta.origin_ns.checked_add(floor).is_some_and(|t| t >= 0) {
        trace.meta.origin_ns
    } else {
        -floor
    };
    let abs = |t: i64| (t + base) as u64;
    let unit = clock_unit(items.start.iter().chain(&items.end).copied(), base);

    // Flow ids: GPU row + 1, started on the launch call, ended on the GPU
    // row. Only when the work starts no earlier than its call: the flow runs
    // from the earlier slice to the later one, and a terminating id seen
    // before its start would be dropped.
    let flow_call =
        |g: usize| trace.links.gpu_launch[g].filter(|c| trace.gpu.start[g] >= trace.runtime.start[c.index()]);
    let flow_base = rank.map_or(0, |r| r.flow_base);
    let call_flows = CallFlows::new(
        trace.runtime.len(),
        (0..trace.gpu.len()).filter_map(|g| flow_call(g).map(|c| (c.index(), flow_base + g as u64 + 1))),
    );
    let no_map = HashMap::new();
    let begin_flows = rank.map_or(&no_map, |r| &r.begin_flows);

    let level = opts.compression;
    let t0 = abs(items_min.unwrap_or(floor));
    let mut w = match rank {
        Some(r) => PacketWriter::with_sequence(out, &trace.strings, t0, unit, level, r.sequence),
        None => PacketWriter::new(out, &trace.strings, t0, unit, level),
    };
    for td in std::mem::take(&mut layout.descriptors) {
        w.descriptor(td)?;
    }
    let slice_tracks = layout.slices.iter().filter(|t| !t.edges.is_empty()).count();
    w.set_data_tracks(slice_tracks as u64, 0);
    emit(
        &mut w,
        trace,
        &[],
        &[],
        &items,
        &layout,
        abs,
        |src, starts, ends| match src {
            Src::Call(r) => starts.extend_from_slice(call_flows.of(r as usize)),
            Src::Gpu(g) => {
                if let Some(f) = begin_flows.get(&g) {
                    starts.extend_from_slice(f);
                }
                if flow_call(g as usize).is_some() {
                    ends.push(flow_base + g as u64 + 1);
                }
            }
            _ => {}
        },
    )?;
    let counts = w.finish()?;
    layout.slices = Vec::new();
    Ok(Own {
        counts,
        layout,
        groups,
        base,
        floor,
    })
}

/// Lays out and writes the analysis' tracks (idle gaps, findings, counters)
/// as a second packet sequence; nothing when there are none.
fn write_derived<W: Write>(
    trace: &Trace,
    own: &mut Own,
    derived: Derived<'_, '_>,
    opts: &Options,
    rank: Option<&RankExport>,
    out: W,
) -> io::Result<Counts> {
    let (idle, findings) = (derived.idle, derived.findings);
    let (items, mut layout) = tracks::build_derived(trace, &own.layout, &mut own.groups, idle, findings);
    for DeviceCounters {
        device,
        utilization: util,
        queue,
    } in derived.counters
    {
        let Some(&guuid) = own.groups.get(&device) else {
            continue;
        };
        let bin_ms = opts.utilization_bin_ns as f64 / 1e6;
        // A counter track without samples is not created by the trace
        // processor, so it is not declared either: the track count we
        // report must be the one it loads.
        // The first utilization bin starts at a bin boundary, which can lie
        // before the trace's first event when that is a GPU row starting
        // inside a bin (a step selection whose earliest row is an earlier
        // step's kernel running into it): the sample is drawn from the
        // first event on.
        let util = util.into_iter().map(|(t, v)| (t.max(own.floor), v)).collect();
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
    if layout.descriptors.is_empty() {
        return Ok(Counts::default());
    }
    let counter_times = || layout.counters.iter().flat_map(|c| c.samples.iter().map(|x| x.0));
    let min_ts = items
        .start
        .iter()
        .copied()
        .chain(counter_times())
        .min()
        .unwrap_or(own.floor);
    let base = own.base;
    if min_ts < own.floor {
        // Never seen: idle segments, findings and counters are cut from the
        // trace's own events. Written anyway, times would be wrong.
        return Err(io::Error::other(format!(
            "an analysis time ({min_ts} ns) lies before the trace's first event ({} ns); \
             please report this trace",
            own.floor
        )));
    }
    let abs = |t: i64| (t + base) as u64;
    let unit = clock_unit(
        items
            .start
            .iter()
            .chain(&items.end)
            .copied()
            .chain(counter_times()),
        base,
    );
    let level = opts.compression;
    let sequence = rank.map_or(SEQUENCE_ID, |r| r.sequence) + 1;
    let mut w = PacketWriter::with_sequence(out, &trace.strings, abs(min_ts), unit, level, sequence);
    for td in std::mem::take(&mut layout.descriptors) {
        w.descriptor(td)?;
    }
    let slice_tracks = layout.slices.iter().filter(|t| !t.edges.is_empty()).count();
    let counter_tracks = layout.counters.iter().filter(|t| !t.samples.is_empty()).count();
    w.set_data_tracks(slice_tracks as u64, counter_tracks as u64);
    let no_map = HashMap::new();
    let span_flows = rank.map_or(&no_map, |r| &r.span_flows);
    emit(
        &mut w,
        trace,
        idle,
        findings,
        &items,
        &layout,
        abs,
        |src, _, ends| {
            if let Src::Finding(k) = src {
                if let Some(f) = span_flows.get(&k) {
                    ends.extend_from_slice(f);
                }
            }
        },
    )?;
    w.finish()
}

/// Flow ids started by each runtime call, all in one list.
struct CallFlows {
    /// Call `c`'s ids are `ids[start[c]..start[c + 1]]`.
    start: Vec<u32>,
    ids: Vec<u64>,
}

impl CallFlows {
    /// From `(call, flow id)` pairs, kept in their order per call.
    fn new(calls: usize, pairs: impl Iterator<Item = (usize, u64)> + Clone) -> CallFlows {
        let mut start = vec![0u32; calls + 1];
        for (c, _) in pairs.clone() {
            start[c + 1] += 1;
        }
        for c in 0..calls {
            start[c + 1] += start[c];
        }
        let mut next = start.clone();
        let mut ids = vec![0; start[calls] as usize];
        for (c, id) in pairs {
            ids[next[c] as usize] = id;
            next[c] += 1;
        }
        CallFlows { start, ids }
    }

    fn of(&self, call: usize) -> &[u64] {
        &self.ids[self.start[call] as usize..self.start[call + 1] as usize]
    }
}

/// Writes every track of `layout` as a k-way merge of their events by
/// (time, rank): file order is time order, and per track the edges keep
/// their own order. `flows` fills a BEGIN's started and terminated flow ids.
#[allow(clippy::too_many_arguments)]
fn emit<W: Write>(
    w: &mut PacketWriter<'_, W>,
    trace: &Trace,
    idle: &[IdleGap<'_>],
    findings: &[FindingSpan],
    items: &tracks::Items,
    layout: &tracks::Layout,
    abs: impl Fn(i64) -> u64,
    flows: impl Fn(Src, &mut Vec<u64>, &mut Vec<u64>),
) -> io::Result<()> {
    let n_slice = layout.slices.len();
    let mut pos = vec![0usize; n_slice + layout.counters.len()];
    let head = |s: usize, p: usize| -> Option<(i64, u8)> {
        if s < n_slice {
            let t = &layout.slices[s];
            t.edges.get(p).map(|e| (e.ts(items), t.rank))
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
    let (mut starts, mut ends) = (Vec::new(), Vec::new());
    // The top entry is replaced in place (one sift down) rather than popped
    // and pushed again.
    while let Some(mut top) = heap.peek_mut() {
        let s = (top.0 & ((1 << 56) - 1)) as usize;
        let p = pos[s];
        let t = (top.0 >> 64) as u64 ^ (1 << 63);
        let t = t as i64;
        if s < n_slice {
            let track = &layout.slices[s];
            let e: Edge = track.edges[p];
            if e.is_end() {
                w.end(abs(t), track.uuid)?;
            } else {
                let src = items.src[e.item() as usize];
                let (name, cat) = args::describe(trace, idle, findings, src, &mut args);
                starts.clear();
                ends.clear();
                flows(src, &mut starts, &mut ends);
                w.begin(abs(t), track.uuid, name, cat, &args, &starts, &ends)?;
            }
        } else {
            let c = &layout.counters[s - n_slice];
            let (_, v) = c.samples[p];
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
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::CallFlows;

    #[test]
    fn call_flows_keep_each_calls_ids_in_order() {
        // Call 1 launches three rows (a graph launch), call 3 one, calls 0
        // and 2 none; the pairs come in GPU row order, interleaved.
        let pairs = [(1, 11), (3, 31), (1, 12), (1, 13)];
        let f = CallFlows::new(4, pairs.iter().copied());
        assert_eq!(f.of(0), &[] as &[u64]);
        assert_eq!(f.of(1), &[11, 12, 13]);
        assert_eq!(f.of(2), &[] as &[u64]);
        assert_eq!(f.of(3), &[31]);
        let none = CallFlows::new(2, std::iter::empty());
        assert!(none.of(0).is_empty() && none.of(1).is_empty());
    }
}

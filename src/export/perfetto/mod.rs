//! Native Perfetto protobuf export (`.pftrace`): opens in ui.perfetto.dev
//! and loads cleanly in the trace processor.
//!
//! The recipe and every rule cited as "pitfall N" is in
//! `shared/notes/perfetto.md`. In short: one packet sequence with interned
//! names; descriptors first; per track, slices that nest (lanes otherwise)
//! with ENDs before BEGINs at equal times; packets in time order; flows from
//! each launch call to its GPU work with unique, terminating ids.

pub mod args;
pub mod counters;
pub mod lanes;
pub mod proto;
pub mod tracks;
pub mod writer;

use crate::export::idle::{busy_by_device, IdleGap};
use gapscope_collectors::trace::{Ns, Trace, NONE};
use lanes::Edge;
use std::cmp::Reverse;
use std::collections::binary_heap::{BinaryHeap, PeekMut};
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
/// This is the hook for the detectors: `gapscope export` passes none until
/// findings exist.
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
    /// Args shown on the slice (`debug.<name>`): id, savings, hint, ...
    pub args: Vec<(&'static str, String)>,
}

/// Writes `trace` (with the idle gaps `idle` and the `findings`) as a
/// Perfetto trace to `out` and returns what was written. `out` should be
/// buffered.
pub fn write<W: Write>(
    trace: &Trace,
    idle: &[IdleGap],
    findings: &[FindingSpan],
    opts: &Options,
    out: W,
) -> io::Result<Counts> {
    let (items, mut layout, groups) = tracks::build(trace, idle, findings);
    let busy = busy_by_device(trace);
    for (&device, &guuid) in &groups {
        let spans = busy
            .iter()
            .find(|(d, _)| *d == device)
            .map(|(_, s)| s.as_slice())
            .unwrap_or(&[]);
        let util = counters::utilization(spans, opts.utilization_bin_ns.max(1));
        let queue = counters::launch_queue(trace, device);
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
    let base = if trace.meta.origin_ns.checked_add(min_ts).is_some_and(|t| t >= 0) {
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
    let flow_ok = |g: usize| {
        let c = trace.links.gpu_launch[g];
        c != NONE && trace.gpu.start[g] >= trace.runtime.start[c as usize]
    };
    let mut call_flows: Vec<Vec<u64>> = vec![Vec::new(); trace.runtime.len()];
    for g in 0..trace.gpu.len() {
        if flow_ok(g) {
            call_flows[trace.links.gpu_launch[g] as usize].push(g as u64 + 1);
        }
    }

    let level = opts.compression.map(|l| flate2::Compression::new(l.min(9)));
    let mut w = PacketWriter::new(out, &trace.strings, abs(min_ts), unit, level);
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
            if e.is_end() {
                w.end(abs(e.ts), track.uuid)?;
            } else {
                let src = items.src[e.item() as usize];
                let (name, cat) = args::describe(trace, idle, findings, src, &mut args);
                let (flows, term): (&[u64], &[u64]) = match src {
                    Src::Call(r) => (&call_flows[r as usize], no_flows),
                    Src::Gpu(g) if flow_ok(g as usize) => (no_flows, &[g as u64 + 1]),
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

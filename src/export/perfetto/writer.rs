//! [`PacketWriter`]: streams `TracePacket`s to any `Write`, one packet at a
//! time, with interned event names, categories and arg names, and counts
//! what it wrote so tests can compare with the trace processor.
//!
//! The file is `Trace { repeated TracePacket packet = 1; }`, so each packet is
//! written as field 1 (tag byte `0x0A`, varint length, bytes) and no `Trace`
//! is ever held in memory.
//!
//! By default the packets are written in compressed chunks: each chunk is a
//! packet whose only field is `compressed_packets` (50), a zlib stream of
//! a run of packets framed exactly as in a plain file. The trace processor
//! (and so ui.perfetto.dev) inflates each chunk and reads its packets in
//! place, in order, so sequence state, interning and the incremental clock
//! carry across chunks as they do across plain packets.

use super::proto::*;
use gapscope_collectors::trace::{StrId, Strings};
use libdeflater::{CompressionLvl, Compressor};
use prost::Message;
use serde::Serialize;
use std::collections::{HashMap, VecDeque};
use std::fmt::Write as _;
use std::hash::{BuildHasherDefault, Hasher};
use std::io::{self, Write};
use std::sync::mpsc::{Receiver, Sender, SyncSender};
use std::sync::{Arc, Mutex};

/// One writer is one packet sequence. Any non-zero id works; zero breaks
/// interning, and iids are scoped to it. A job's
/// export writes one sequence per rank ([`PacketWriter::with_sequence`]).
pub const SEQUENCE_ID: u32 = 1;

/// Flush the packet buffer to the output once it holds this much.
const FLUSH_AT: usize = 1 << 20;

/// Compressed output: a chunk is cut once its packets reach this many
/// bytes...
const CHUNK_AT: usize = 448 << 10;
/// ...and never holds more than this. Perfetto asks that each
/// `compressed_packets` packet, framing included, stay under 512 KiB
/// (trace_packet.proto). zlib's worst case (incompressible input, stored
/// blocks) adds 5 bytes per 64 KiB block plus 6 of header and checksum, so
/// 480 KiB of input always fits with room to spare. A single packet larger
/// than this (a huge interned name) is written uncompressed.
const CHUNK_MAX: usize = 480 << 10;

/// What the writer emitted; the trace processor must report the same.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Counts {
    /// Packets written (inside the compressed chunks, when compressed; the
    /// chunks themselves are not counted here).
    pub packets: u64,
    /// Bytes written to the output: the file's size.
    pub bytes: u64,
    /// Bytes of the packets before compression (equal to `bytes` when
    /// uncompressed).
    pub packet_bytes: u64,
    /// `compressed_packets` chunks written (0 when uncompressed).
    pub compressed_chunks: u64,
    /// Track descriptors written.
    pub tracks: u64,
    /// Of those, tracks that got at least one slice.
    pub slice_tracks: u64,
    /// Of those, counter tracks that got at least one sample.
    pub counter_tracks: u64,
    /// Slices (BEGIN packets; each has exactly one END).
    pub slices: u64,
    /// Flows: ids that were started and later terminated.
    pub flows: u64,
    /// Counter samples.
    pub counter_samples: u64,
}

impl Counts {
    /// Adds `other`'s counts (another sequence of the same file).
    pub fn add(&mut self, other: &Counts) {
        self.packets += other.packets;
        self.bytes += other.bytes;
        self.packet_bytes += other.packet_bytes;
        self.compressed_chunks += other.compressed_chunks;
        self.tracks += other.tracks;
        self.slice_tracks += other.slice_tracks;
        self.counter_tracks += other.counter_tracks;
        self.slices += other.slices;
        self.flows += other.flows;
        self.counter_samples += other.counter_samples;
    }
}

/// A slice or arg name: a string of the trace's pool, or other text.
#[derive(Clone, Copy, Debug)]
pub enum Name<'a> {
    /// Interned in the trace.
    Id(StrId),
    /// Anything else (synthetic names such as `idle`).
    Text(&'a str),
}

/// A typed arg value. Text values are interned per sequence: shapes,
/// source lines and operator names repeat across thousands of slices.
#[derive(Clone, Copy, Debug)]
pub enum ArgValue<'a> {
    /// Signed integer.
    Int(i64),
    /// Double.
    Double(f64),
    /// A string of the trace's pool.
    Id(StrId),
    /// Other text.
    Str(&'a str),
    /// A launch dimension, written as text `[x, y, z]`.
    Dims([u32; 3]),
}

/// One arg on a slice: `debug.<name>` in the trace processor's `args`.
#[derive(Clone, Copy, Debug)]
pub struct Arg<'a> {
    /// Arg name, interned per sequence.
    pub name: &'static str,
    /// Value.
    pub value: ArgValue<'a>,
}

/// A fast non-cryptographic hasher (FxHash) for the interning maps: their
/// keys are our own strings, and SipHash showed up in profiles.
#[derive(Default, Clone, Copy)]
pub struct FxHasher(u64);

impl Hasher for FxHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            self.add(u64::from_le_bytes(c.try_into().unwrap_or_default()));
        }
        for &b in chunks.remainder() {
            self.add(b as u64);
        }
    }
    fn write_u8(&mut self, i: u8) {
        self.add(i as u64);
    }
    fn write_u32(&mut self, i: u32) {
        self.add(i as u64);
    }
    fn write_u64(&mut self, i: u64) {
        self.add(i);
    }
    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }
}

impl FxHasher {
    #[inline]
    fn add(&mut self, w: u64) {
        self.0 = (self.0.rotate_left(5) ^ w).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}

type FxMap<K, V> = HashMap<K, V, BuildHasherDefault<FxHasher>>;

/// Compresses the chunks on threads of their own, one per core, while the
/// writer encodes the packets of the next ones (compression was a sixth of
/// an export's CPU time, and one thread could not keep up with the writer
/// once the analysis was done); the compressed chunks are written in the
/// order they were made, so the file is the same as compressing them in
/// line.
struct Deflate {
    /// Raw chunks, each with the channel its compressed form comes back
    /// on, to the compressing threads; `None` when none could be started,
    /// and then `inline` compresses here.
    jobs: Option<SyncSender<DeflateJob>>,
    /// Those channels, in the order the chunks were sent: the framed
    /// `compressed_packets` packets come back through them.
    pending: VecDeque<Receiver<io::Result<Vec<u8>>>>,
    inline: Option<Compressor>,
    level: CompressionLvl,
}

/// libdeflate's level `l`, within its range 1-12.
fn level(l: u32) -> CompressionLvl {
    CompressionLvl::new(l.clamp(1, 12) as i32).unwrap_or_default()
}

/// A raw chunk, and where its compressed form goes.
type DeflateJob = (Vec<u8>, Sender<io::Result<Vec<u8>>>);

/// Chunks sent to the compressing threads and not yet written before the
/// writer waits: about 4 MB of packets.
const CHUNKS_IN_FLIGHT: usize = 8;

impl Deflate {
    fn new(level: CompressionLvl) -> Deflate {
        let (jobs, queue) = std::sync::mpsc::sync_channel::<DeflateJob>(CHUNKS_IN_FLIGHT);
        let queue = Arc::new(Mutex::new(queue));
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
        let mut started = 0;
        for _ in 0..threads {
            let queue = Arc::clone(&queue);
            let worker = std::thread::Builder::new()
                .name("perfetto-deflate".into())
                .spawn(move || {
                    let mut z = Compressor::new(level);
                    loop {
                        // One thread at a time waits for and takes the
                        // next chunk; the lock is let go before compressing.
                        let job = queue.lock().ok().and_then(|q| q.recv().ok());
                        let Some((packets, back)) = job else {
                            return;
                        };
                        // A writer that has gone (an error) no longer reads.
                        let _ = back.send(compressed_chunk(&mut z, &packets));
                    }
                });
            started += usize::from(worker.is_ok());
        }
        Deflate {
            jobs: (started > 0).then_some(jobs),
            pending: VecDeque::new(),
            inline: (started == 0).then(|| Compressor::new(level)),
            level,
        }
    }
}

/// Streams packets of one sequence to `out`.
///
/// The first packet clears the sequence's incremental state and declares
/// its incremental clock ([`CLOCK_INCREMENTAL`], a [`ClockSnapshot`] tying
/// it to BOOTTIME, and [`TracePacketDefaults`] making it every packet's
/// clock): each event's `timestamp` is then the delta from the previous
/// event, in units of `unit` ns: 1–3 bytes instead of 9.
pub struct PacketWriter<'t, W: Write> {
    out: W,
    buf: Vec<u8>,
    /// `Some` to write compressed chunks.
    deflate: Option<Deflate>,
    /// Flush `buf` once it holds this much.
    flush_at: usize,
    strings: &'t Strings,
    /// Time of the previous event (or the clock snapshot), ns.
    last_ts: u64,
    /// ns per unit of the incremental clock: 1 or 1000.
    unit: u64,
    /// iid of trace string `i` is `i + 1` once emitted; `false` until then.
    name_sent: Vec<bool>,
    /// Other names: iids after the trace's.
    text_iids: FxMap<String, u64>,
    /// Categories and arg names: a few dozen static names.
    cat_iids: StaticIids,
    arg_iids: StaticIids,
    /// Arg string values: iid of trace string `i` (0: not sent yet), and of
    /// other text; one iid space for both.
    value_iid_of_id: Vec<u64>,
    value_iids: FxMap<String, u64>,
    dims_iids: FxMap<[u32; 3], u64>,
    next_value_iid: u64,
    /// Scratch for formatting [`ArgValue::Dims`].
    text: String,
    /// Scratch for a BEGIN's TrackEvent and InternedData bytes.
    event: Vec<u8>,
    interned_bytes: Vec<u8>,
    /// A BEGIN's args as encoded: (name iid, value).
    annotations: Vec<(u64, Annotation)>,
    /// Where a BEGIN without interned data is put together: its header
    /// right before its event, which starts at [`HEAD_MAX`].
    packet: Box<[u8; BEGIN_MAX]>,
    /// Names first used by the packet being built.
    interned: InternedData,
    first: bool,
    counts: Counts,
    flows_started: u64,
    /// This writer's `trusted_packet_sequence_id`.
    sequence: u32,
    /// Flows may start or end in another sequence (a job's export): the
    /// started/ended balance is checked by the trace processor, not here.
    foreign_flows: bool,
}

impl<'t, W: Write> PacketWriter<'t, W> {
    /// A writer whose `Name::Id`s resolve in `strings`. Events must come in
    /// time order from `t0` (ns, BOOTTIME) on, and every event time must be
    /// `t0` plus a multiple of `unit` (1 or 1000 ns). With `compression`,
    /// packets go out in zlib-compressed chunks at that libdeflate level
    /// (1-12; higher ones are taken as 12).
    pub fn new(out: W, strings: &'t Strings, t0: u64, unit: u64, compression: Option<u32>) -> Self {
        let mut w = Self::with_sequence(out, strings, t0, unit, compression, SEQUENCE_ID);
        w.foreign_flows = false;
        w
    }

    /// [`PacketWriter::new`] on packet sequence `sequence` (non-zero): the
    /// ranks of a job go to one file as one sequence each, one after the
    /// other, so each can be read and dropped in turn. Flows may then
    /// cross sequences (flow ids are global to the file).
    pub fn with_sequence(
        out: W,
        strings: &'t Strings,
        t0: u64,
        unit: u64,
        compression: Option<u32>,
        sequence: u32,
    ) -> Self {
        assert!(unit == 1 || unit == 1000, "unit {unit}");
        assert!(sequence > 0, "sequence 0 breaks interning");
        let flush_at = if compression.is_some() { CHUNK_AT } else { FLUSH_AT };
        let mut w = PacketWriter {
            out,
            buf: Vec::with_capacity(flush_at + 4096),
            deflate: compression.map(|l| Deflate::new(level(l))),
            flush_at,
            strings,
            last_ts: t0,
            unit,
            name_sent: vec![false; strings.len()],
            text_iids: FxMap::default(),
            cat_iids: StaticIids::default(),
            arg_iids: StaticIids::default(),
            value_iid_of_id: vec![0; strings.len()],
            value_iids: FxMap::default(),
            dims_iids: FxMap::default(),
            next_value_iid: 1,
            text: String::new(),
            event: Vec::with_capacity(256),
            interned_bytes: Vec::with_capacity(256),
            annotations: Vec::with_capacity(16),
            packet: Box::new([0; BEGIN_MAX]),
            interned: InternedData::default(),
            first: true,
            counts: Counts::default(),
            flows_started: 0,
            sequence,
            foreign_flows: true,
        };
        let mut p = TracePacket {
            trusted_packet_sequence_id: Some(sequence),
            trace_packet_defaults: Some(TracePacketDefaults {
                timestamp_clock_id: Some(CLOCK_INCREMENTAL),
            }),
            data: Some(PacketData::ClockSnapshot(ClockSnapshot {
                clocks: vec![
                    Clock {
                        clock_id: Some(CLOCK_BOOTTIME),
                        timestamp: Some(t0),
                        ..Default::default()
                    },
                    Clock {
                        clock_id: Some(CLOCK_INCREMENTAL),
                        timestamp: Some(t0 / unit),
                        is_incremental: Some(true),
                        unit_multiplier_ns: (unit != 1).then_some(unit),
                    },
                ],
            })),
            ..Default::default()
        };
        w.mark_first(&mut p);
        w.emit(&p);
        w
    }

    /// Declares a track. Must precede every event on it.
    pub fn descriptor(&mut self, td: TrackDescriptor) -> io::Result<()> {
        self.counts.tracks += 1;
        let mut p = TracePacket {
            trusted_packet_sequence_id: Some(self.sequence),
            data: Some(PacketData::TrackDescriptor(td)),
            ..Default::default()
        };
        self.mark_first(&mut p);
        let before = self.emit(&p);
        self.maybe_flush(before)
    }

    /// Opens a slice on `track` at `ts`. `flows` start here and `terminating`
    /// end here.
    ///
    /// Encoded by hand like every event packet (see [`encode_begin`]); a
    /// unit test checks the bytes against prost.
    #[allow(clippy::too_many_arguments)]
    pub fn begin(
        &mut self,
        ts: u64,
        track: u64,
        name: Name<'_>,
        category: &'static str,
        args: &[Arg<'_>],
        flows: &[u64],
        terminating: &[u64],
    ) -> io::Result<()> {
        self.counts.slices += 1;
        self.flows_started += flows.len() as u64;
        self.counts.flows += terminating.len() as u64;
        let name_iid = self.name_iid(name);
        let cat_iid = self.cat_iid(category);
        // Names and values first: a first use adds to the interned data,
        // which decides how the packet is put together.
        let mut anns = std::mem::take(&mut self.annotations);
        anns.clear();
        for a in args {
            let name = self.arg_iid(a.name);
            let value = match a.value {
                ArgValue::Int(v) => Annotation::Int(v),
                ArgValue::Double(v) => Annotation::Double(v),
                ArgValue::Id(id) => Annotation::StringIid(self.value_iid_id(id)),
                ArgValue::Str(s) => Annotation::StringIid(self.value_iid_text(s)),
                ArgValue::Dims(d) => Annotation::StringIid(self.value_iid_dims(d)),
            };
            anns.push((name, value));
        }
        let delta = self.delta(ts);
        let before = self.buf.len();
        let event = Event {
            cat_iid,
            args: &anns,
            name_iid,
            track,
            flows,
            terminating,
        };
        let fits = anns.len() <= FAST_ARGS && flows.len() + terminating.len() <= FAST_FLOWS;
        if self.interned.is_empty() && fits {
            // Almost every BEGIN: put together in one buffer with a
            // running index, then appended at once.
            let at = encode_begin_in(&mut self.packet, delta, self.sequence, &event);
            self.buf.extend_from_slice(&self.packet[at]);
        } else {
            let mut ev = std::mem::take(&mut self.event);
            ev.clear();
            encode_event(&mut ev, &event);
            let mut interned = std::mem::take(&mut self.interned_bytes);
            interned.clear();
            if !self.interned.is_empty() {
                // Rare (first uses only): prost is fine here.
                let _ = self.interned.encode(&mut interned);
                self.interned.clear();
            }
            encode_begin(&mut self.buf, delta, self.sequence, &interned, &ev);
            self.event = ev;
            self.interned_bytes = interned;
        }
        self.annotations = anns;
        self.emitted(before)
    }

    /// Closes the innermost open slice on `track`. No name: an END with a
    /// different name is a data-loss stat.
    ///
    /// END and counter packets carry no interned ids, so they go without
    /// `sequence_flags`.
    pub fn end(&mut self, ts: u64, track: u64) -> io::Result<()> {
        let delta = self.delta(ts);
        let before = self.buf.len();
        encode_end(&mut self.buf, delta, self.sequence, track);
        self.emitted(before)
    }

    /// A counter sample on counter track `track`.
    pub fn counter(&mut self, ts: u64, track: u64, value: f64) -> io::Result<()> {
        self.counts.counter_samples += 1;
        let delta = self.delta(ts);
        let before = self.buf.len();
        encode_counter(&mut self.buf, delta, self.sequence, track, value);
        self.emitted(before)
    }

    /// Records how many tracks got slices / counter samples (the layout
    /// knows; the writer does not track per-track state).
    pub fn set_data_tracks(&mut self, slice_tracks: u64, counter_tracks: u64) {
        self.counts.slice_tracks = slice_tracks;
        self.counts.counter_tracks = counter_tracks;
    }

    /// Flushes and returns the counts. Every started flow must have been
    /// terminated: an open flow would be a dangling arrow.
    pub fn finish(mut self) -> io::Result<Counts> {
        debug_assert!(
            self.foreign_flows || self.flows_started == self.counts.flows,
            "unterminated flows"
        );
        // Below the flush threshold, so at most one chunk.
        self.flush_buf(self.buf.len())?;
        self.write_chunks(0)?;
        self.out.flush()?;
        Ok(self.counts)
    }

    /// The incremental clock's reading for an event at `ts`.
    #[inline]
    fn delta(&mut self, ts: u64) -> u64 {
        debug_assert!(ts >= self.last_ts, "event at {ts} after {}", self.last_ts);
        let d = ts - self.last_ts;
        self.last_ts = ts;
        if self.unit == 1 {
            d
        } else {
            debug_assert_eq!(d % 1000, 0);
            d / 1000
        }
    }

    /// The first packet clears incremental state; without it every packet
    /// that needs it is dropped.
    fn mark_first(&mut self, p: &mut TracePacket) {
        if self.first {
            self.first = false;
            p.first_packet_on_sequence = Some(true);
            p.sequence_flags = Some(p.sequence_flags.unwrap_or(0) | SEQ_INCREMENTAL_STATE_CLEARED);
        }
    }

    /// Appends `p` and returns where it starts in the buffer.
    fn emit(&mut self, p: &TracePacket) -> usize {
        let before = self.buf.len();
        prost::encoding::message::encode(1, p, &mut self.buf);
        self.counts.packets += 1;
        self.counts.packet_bytes += (self.buf.len() - before) as u64;
        before
    }

    /// Counts the packet that starts at `before` in the buffer.
    #[inline]
    fn emitted(&mut self, before: usize) -> io::Result<()> {
        self.counts.packets += 1;
        self.counts.packet_bytes += (self.buf.len() - before) as u64;
        self.maybe_flush(before)
    }

    /// `last`: where the packet just added starts in the buffer.
    #[inline]
    fn maybe_flush(&mut self, last: usize) -> io::Result<()> {
        if self.buf.len() >= self.flush_at {
            self.flush_buf(last)?;
        }
        Ok(())
    }

    /// Writes the buffered packets out; `last` is where the newest one
    /// starts. Compressed, the packets before it are below [`CHUNK_AT`]
    /// (else they would have been flushed), so they make one chunk; the
    /// newest joins them when that stays within [`CHUNK_MAX`].
    fn flush_buf(&mut self, last: usize) -> io::Result<()> {
        if self.deflate.is_none() {
            self.out.write_all(&self.buf)?;
            self.counts.bytes += self.buf.len() as u64;
            self.buf.clear();
            return Ok(());
        }
        if self.buf.len() <= CHUNK_MAX {
            let chunk = std::mem::replace(&mut self.buf, Vec::with_capacity(self.flush_at + 4096));
            return self.send_chunk(chunk);
        }
        if last > 0 {
            self.send_chunk(self.buf[..last].to_vec())?;
        }
        if self.buf.len() - last <= CHUNK_MAX {
            // Starts the next chunk.
            self.buf.drain(..last);
        } else {
            self.write_chunks(0)?;
            self.out.write_all(&self.buf[last..])?;
            self.counts.bytes += (self.buf.len() - last) as u64;
            self.buf.clear();
        }
        Ok(())
    }

    /// Hands `packets` (whole framed packets) to the compressor as one
    /// chunk, and writes the chunks it has finished.
    fn send_chunk(&mut self, packets: Vec<u8>) -> io::Result<()> {
        let Some(d) = &mut self.deflate else {
            return Ok(());
        };
        let packets = match &d.jobs {
            Some(jobs) => {
                let (back, compressed) = std::sync::mpsc::channel();
                match jobs.send((packets, back)) {
                    Ok(()) => {
                        d.pending.push_back(compressed);
                        return self.write_chunks(CHUNKS_IN_FLIGHT);
                    }
                    // The threads are gone (they cannot fail but by
                    // panicking): compress here from now on.
                    Err(e) => {
                        d.jobs = None;
                        d.inline = Some(Compressor::new(d.level));
                        e.0 .0
                    }
                }
            }
            None => packets,
        };
        self.write_chunks(0)?;
        let z = self
            .deflate
            .as_mut()
            .and_then(|d| d.inline.as_mut())
            .expect("inline compressor");
        let chunk = compressed_chunk(z, &packets)?;
        self.write_compressed(&chunk)
    }

    /// Writes compressed chunks in order until at most `keep` are in flight.
    fn write_chunks(&mut self, keep: usize) -> io::Result<()> {
        loop {
            let Some(d) = &mut self.deflate else {
                return Ok(());
            };
            let Some(next) = d.pending.front() else {
                return Ok(());
            };
            let chunk = if d.pending.len() > keep {
                next.recv()
                    .map_err(|_| io::Error::other("a compressing thread stopped"))?
            } else {
                match next.try_recv() {
                    Ok(chunk) => chunk,
                    Err(_) => return Ok(()),
                }
            };
            d.pending.pop_front();
            self.write_compressed(&chunk?)?;
        }
    }

    fn write_compressed(&mut self, chunk: &[u8]) -> io::Result<()> {
        self.out.write_all(chunk)?;
        self.counts.bytes += chunk.len() as u64;
        self.counts.compressed_chunks += 1;
        Ok(())
    }

    fn name_iid(&mut self, name: Name<'_>) -> u64 {
        match name {
            Name::Id(id) => {
                let i = id.0 as usize;
                if !self.name_sent[i] {
                    self.name_sent[i] = true;
                    self.interned.event_names.push(InternedString {
                        iid: Some(i as u64 + 1),
                        name: Some(self.strings.get(id).to_string()),
                    });
                }
                i as u64 + 1
            }
            Name::Text(s) => {
                if let Some(&iid) = self.text_iids.get(s) {
                    return iid;
                }
                let iid = (self.name_sent.len() + self.text_iids.len()) as u64 + 1;
                self.text_iids.insert(s.to_string(), iid);
                self.interned.event_names.push(InternedString {
                    iid: Some(iid),
                    name: Some(s.to_string()),
                });
                iid
            }
        }
    }

    fn new_value_iid(&mut self, s: &str) -> u64 {
        let iid = self.next_value_iid;
        self.next_value_iid += 1;
        self.interned.debug_annotation_string_values.push(InternedString {
            iid: Some(iid),
            name: Some(s.to_string()),
        });
        iid
    }

    fn value_iid_id(&mut self, id: StrId) -> u64 {
        let i = id.0 as usize;
        if self.value_iid_of_id[i] == 0 {
            self.value_iid_of_id[i] = self.new_value_iid(self.strings.get(id));
        }
        self.value_iid_of_id[i]
    }

    fn value_iid_text(&mut self, s: &str) -> u64 {
        if let Some(&iid) = self.value_iids.get(s) {
            return iid;
        }
        let iid = self.new_value_iid(s);
        self.value_iids.insert(s.to_string(), iid);
        iid
    }

    /// A launch dimension as text `[x, y, z]`, formatted once per value.
    fn value_iid_dims(&mut self, d: [u32; 3]) -> u64 {
        if let Some(&iid) = self.dims_iids.get(&d) {
            return iid;
        }
        let mut t = std::mem::take(&mut self.text);
        t.clear();
        let _ = write!(t, "[{}, {}, {}]", d[0], d[1], d[2]);
        let iid = self.value_iid_text(&t);
        self.text = t;
        self.dims_iids.insert(d, iid);
        iid
    }

    fn cat_iid(&mut self, cat: &'static str) -> u64 {
        self.cat_iids.iid(&mut self.interned.event_categories, cat)
    }

    fn arg_iid(&mut self, name: &'static str) -> u64 {
        self.arg_iids.iid(&mut self.interned.debug_annotation_names, name)
    }
}

/// `packets` (whole framed packets) as one framed `compressed_packets`
/// packet: a zlib stream (what the trace processor's inflate expects; it
/// also accepts gzip, Perfetto's own service writes zlib). libdeflate
/// compresses a whole buffer at once, which is what a chunk is: its level 1
/// took two thirds of zlib-rs level 2's time for a 3% smaller file
/// (bench/README.md, "libdeflate for the export's chunks").
fn compressed_chunk(z: &mut Compressor, packets: &[u8]) -> io::Result<Vec<u8>> {
    let mut deflated = vec![0u8; z.zlib_compress_bound(packets.len())];
    let n = z
        .zlib_compress(packets, &mut deflated)
        .map_err(|e| io::Error::other(format!("compressing a chunk: {e:?}")))?;
    // Trace.packet (1) { compressed_packets (50, length-delimited) }
    let packet_len = 2 + varint_len(n as u64) + n;
    let mut chunk = Vec::with_capacity(n + 24);
    chunk.byte(1 << 3 | 2);
    chunk.varint(packet_len as u64);
    chunk.bytes(&[0x92, 0x03]); // 50 << 3 | 2
    chunk.varint(n as u64);
    chunk.bytes(&deflated[..n]);
    Ok(chunk)
}

impl InternedData {
    fn is_empty(&self) -> bool {
        self.event_names.is_empty()
            && self.event_categories.is_empty()
            && self.debug_annotation_names.is_empty()
            && self.debug_annotation_string_values.is_empty()
    }

    fn clear(&mut self) {
        self.event_names.clear();
        self.event_categories.clear();
        self.debug_annotation_names.clear();
        self.debug_annotation_string_values.clear();
    }
}

/// The iids of a few dozen static names (iid = position + 1), looked up
/// by the literal's address: a BEGIN looks up its category and each arg
/// name, millions of times in a big export.
struct StaticIids {
    names: Vec<&'static str>,
    /// Address and length of a name, and its iid (0: empty slot), in slot
    /// [`StaticIids::slot`].
    recent: [(usize, usize, u64); 64],
}

impl Default for StaticIids {
    fn default() -> Self {
        StaticIids {
            names: Vec::new(),
            recent: [(0, 0, 0); 64],
        }
    }
}

impl StaticIids {
    #[inline]
    fn slot(s: &str) -> usize {
        let a = s.as_ptr() as usize;
        (a ^ a >> 6 ^ s.len()) & 63
    }

    /// iid of `s`, adding it to `new` on first use.
    #[inline]
    fn iid(&mut self, new: &mut Vec<InternedString>, s: &'static str) -> u64 {
        let k = Self::slot(s);
        let (a, n, iid) = self.recent[k];
        if iid != 0 && a == s.as_ptr() as usize && n == s.len() {
            return iid;
        }
        let iid = intern_static(&mut self.names, new, s);
        self.recent[k] = (s.as_ptr() as usize, s.len(), iid);
        iid
    }
}

/// iid of `s` in `table` (iid = position + 1), adding it to `new` on
/// first use.
fn intern_static(table: &mut Vec<&'static str>, new: &mut Vec<InternedString>, s: &'static str) -> u64 {
    // The same literal is almost always the same pointer: look for that
    // first, and compare text only when it is not there.
    let k = table.iter().position(|&t| std::ptr::eq(t, s));
    if let Some(k) = k.or_else(|| table.iter().position(|&t| t == s)) {
        return k as u64 + 1;
    }
    table.push(s);
    let iid = table.len() as u64;
    new.push(InternedString {
        iid: Some(iid),
        name: Some(s.to_string()),
    });
    iid
}

// Hand encoding of the event packets. Field numbers are those of
// [`TracePacket`], [`TrackEvent`] and [`DebugAnnotation`] in proto.rs; a
// tag byte is `field << 3 | wire type` (0 varint, 1 fixed64, 2 length-
// delimited), two varint bytes from field 16 on.

/// Where the encoders write: a `Vec`, or a [`Cursor`] over a buffer big
/// enough for the packet (the common, faster case: the index stays in a
/// register where a `Vec`'s length goes back to memory at every byte).
trait Sink {
    fn byte(&mut self, b: u8);
    fn bytes(&mut self, s: &[u8]);
    /// Appends `v` as a protobuf varint.
    #[inline]
    fn varint(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.byte(v as u8 | 0x80);
            v >>= 7;
        }
        self.byte(v as u8);
    }
}

impl Sink for Vec<u8> {
    #[inline]
    fn byte(&mut self, b: u8) {
        self.push(b);
    }
    #[inline]
    fn bytes(&mut self, s: &[u8]) {
        self.extend_from_slice(s);
    }
}

/// Writes into `a` from `n` on; the caller sizes `a` for what it writes
/// (an index past it panics: a bug, never a short packet).
struct Cursor<'a> {
    a: &'a mut [u8],
    n: usize,
}

impl Sink for Cursor<'_> {
    #[inline]
    fn byte(&mut self, b: u8) {
        self.a[self.n] = b;
        self.n += 1;
    }
    #[inline]
    fn bytes(&mut self, s: &[u8]) {
        self.a[self.n..self.n + s.len()].copy_from_slice(s);
        self.n += s.len();
    }
}

/// Room for a BEGIN's header (framing, timestamp, sequence id, flags, the
/// event's tag and length) before its event: at most 2 + 10 + 11 + 6 + 2
/// + 6 bytes.
const HEAD_MAX: usize = 40;
/// A BEGIN with at most this many args and flows goes through the
/// one-buffer path: 11 bytes of category, 26 per arg, 26 of type, name
/// and track, 10 per flow id stay within [`BEGIN_MAX`].
const FAST_ARGS: usize = 24;
const FAST_FLOWS: usize = 32;
const BEGIN_MAX: usize = HEAD_MAX + 11 + FAST_ARGS * 26 + 26 + FAST_FLOWS * 10;

#[inline]
fn varint_len(v: u64) -> usize {
    (64 - (v | 1).leading_zeros() as usize).div_ceil(7)
}

/// A debug annotation value as the writer encodes it.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Annotation {
    Int(i64),
    Double(f64),
    StringIid(u64),
}

/// What a BEGIN's TrackEvent holds, its names and values as iids.
struct Event<'a> {
    cat_iid: u64,
    args: &'a [(u64, Annotation)],
    name_iid: u64,
    track: u64,
    flows: &'a [u64],
    terminating: &'a [u64],
}

/// A BEGIN's TrackEvent: `category_iids` (3), the args, then
/// [`encode_event_tail`].
#[inline]
fn encode_event<S: Sink>(ev: &mut S, e: &Event<'_>) {
    encode_event_head(ev, e.cat_iid);
    for &(name, value) in e.args {
        encode_annotation(ev, name, value);
    }
    encode_event_tail(ev, e.name_iid, e.track, e.flows, e.terminating);
}

/// A whole BEGIN packet without interned data, put together in `p`: the
/// event from [`HEAD_MAX`] on, then its header right before it. Returns
/// where the packet lies in `p`. `e` has at most [`FAST_ARGS`] args and
/// [`FAST_FLOWS`] flows.
#[inline]
fn encode_begin_in(p: &mut [u8; BEGIN_MAX], delta: u64, seq: u32, e: &Event<'_>) -> std::ops::Range<usize> {
    debug_assert!(e.args.len() <= FAST_ARGS && e.flows.len() + e.terminating.len() <= FAST_FLOWS);
    let (head, event) = p.split_at_mut(HEAD_MAX);
    let mut ev = Cursor { a: event, n: 0 };
    encode_event(&mut ev, e);
    let event_len = ev.n;
    let mut h = [0u8; HEAD_MAX];
    let mut hc = Cursor { a: &mut h, n: 0 };
    encode_begin_head(&mut hc, delta, seq, &[], event_len);
    let head_len = hc.n;
    head[HEAD_MAX - head_len..].copy_from_slice(&h[..head_len]);
    HEAD_MAX - head_len..HEAD_MAX + event_len
}

/// TrackEvent of a BEGIN, first part: `category_iids` (3).
#[inline]
fn encode_event_head<S: Sink>(ev: &mut S, cat_iid: u64) {
    ev.byte(3 << 3);
    ev.varint(cat_iid);
}

/// One `debug_annotations` (4) entry: `name_iid` (1) and the value: `int`
/// (4, varint), `double` (5, fixed64) or `string_value_iid` (17, varint).
#[inline]
fn encode_annotation<S: Sink>(ev: &mut S, name_iid: u64, value: Annotation) {
    let value_len = match value {
        Annotation::Int(v) => 1 + varint_len(v as u64),
        Annotation::Double(_) => 1 + 8,
        Annotation::StringIid(v) => 2 + varint_len(v),
    };
    ev.byte(4 << 3 | 2);
    ev.varint((1 + varint_len(name_iid) + value_len) as u64);
    ev.byte(1 << 3);
    ev.varint(name_iid);
    match value {
        Annotation::Int(v) => {
            ev.byte(4 << 3);
            ev.varint(v as u64);
        }
        Annotation::Double(v) => {
            ev.byte(5 << 3 | 1);
            ev.bytes(&v.to_le_bytes());
        }
        Annotation::StringIid(v) => {
            ev.bytes(&[0x88, 0x01]); // 17 << 3
            ev.varint(v);
        }
    }
}

/// TrackEvent of a BEGIN, last part: `type` (9) = SLICE_BEGIN, `name_iid`
/// (10), `track_uuid` (11), `flow_ids` (47) and `terminating_flow_ids` (48),
/// unpacked fixed64.
#[inline]
fn encode_event_tail<S: Sink>(ev: &mut S, name_iid: u64, track: u64, flows: &[u64], terminating: &[u64]) {
    ev.bytes(&[9 << 3, EventType::SliceBegin as u8, 10 << 3]);
    ev.varint(name_iid);
    ev.byte(11 << 3);
    ev.varint(track);
    for &f in flows {
        ev.bytes(&[0xF9, 0x02]); // 47 << 3 | 1
        ev.bytes(&f.to_le_bytes());
    }
    for &f in terminating {
        ev.bytes(&[0x81, 0x03]); // 48 << 3 | 1
        ev.bytes(&f.to_le_bytes());
    }
}

/// A BEGIN packet up to its event's bytes: the framing, `timestamp`,
/// `trusted_packet_sequence_id`, `sequence_flags`, `interned` (encoded
/// InternedData, field 12, when not empty), then the `track_event` (11)
/// tag and length of an event of `event_len` bytes, which the caller
/// writes next.
#[inline]
fn encode_begin_head<S: Sink>(out: &mut S, delta: u64, seq: u32, interned: &[u8], event_len: usize) {
    let interned_len = if interned.is_empty() {
        0
    } else {
        1 + varint_len(interned.len() as u64) + interned.len()
    };
    let packet_len = 1
        + varint_len(delta)
        + 1
        + varint_len(seq as u64)
        + interned_len
        + 2
        + 1
        + varint_len(event_len as u64)
        + event_len;
    out.byte(1 << 3 | 2);
    out.varint(packet_len as u64);
    out.byte(8 << 3);
    out.varint(delta);
    // Every packet that uses iids says so, or the names come out NULL.
    out.byte(10 << 3);
    out.varint(seq as u64);
    out.bytes(&[13 << 3, SEQ_NEEDS_INCREMENTAL_STATE as u8]);
    if !interned.is_empty() {
        out.byte(12 << 3 | 2);
        out.varint(interned.len() as u64);
        out.bytes(interned);
    }
    out.byte(11 << 3 | 2);
    out.varint(event_len as u64);
}

/// `Trace.packet` (field 1) holding `{timestamp: delta,
/// trusted_packet_sequence_id, interned_data (12, when not empty),
/// sequence_flags: NEEDS_INCREMENTAL_STATE, track_event: event}`, with
/// `interned` and `event` already encoded.
fn encode_begin(buf: &mut Vec<u8>, delta: u64, seq: u32, interned: &[u8], event: &[u8]) {
    encode_begin_head(buf, delta, seq, interned, event.len());
    buf.bytes(event);
}

/// `Trace.packet` (field 1) holding `{timestamp: delta,
/// trusted_packet_sequence_id, track_event {type: SLICE_END, track_uuid:
/// track}}`.
fn encode_end(buf: &mut Vec<u8>, delta: u64, seq: u32, track: u64) {
    // TrackEvent: type (9, varint) = 2; track_uuid (11, varint).
    let event_len = 2 + 1 + varint_len(track);
    encode_event_packet(buf, delta, seq, event_len, |out| {
        out.bytes(&[9 << 3, EventType::SliceEnd as u8, 11 << 3]);
        out.varint(track);
    });
}

/// Like [`encode_end`] for `track_event {type: COUNTER, track_uuid, value}`:
/// an integral value as `counter_value` (30, varint: 2-4 bytes for queue
/// lengths and 0/100 %), others as `double_counter_value` (44, fixed64).
fn encode_counter(buf: &mut Vec<u8>, delta: u64, seq: u32, track: u64, value: f64) {
    let int = (value.fract() == 0.0 && value.abs() < 1e15).then_some(value as i64);
    let value_len = match int {
        Some(v) => 2 + varint_len(v as u64),
        None => 2 + 8,
    };
    let event_len = 2 + 1 + varint_len(track) + value_len;
    encode_event_packet(buf, delta, seq, event_len, |out| {
        out.bytes(&[9 << 3, EventType::Counter as u8, 11 << 3]);
        out.varint(track);
        match int {
            Some(v) => {
                out.bytes(&[0xF0, 0x01]); // 30 << 3
                out.varint(v as u64);
            }
            None => {
                out.bytes(&[0xE1, 0x02]); // 44 << 3 | 1
                out.bytes(&value.to_le_bytes());
            }
        }
    });
}

/// A packet with `timestamp` (8), `trusted_packet_sequence_id` (10) and a
/// `track_event` (11) of `event_len` bytes (at most 36) written by
/// `event`, put together on the stack and appended at once.
#[inline]
fn encode_event_packet(
    buf: &mut Vec<u8>,
    delta: u64,
    seq: u32,
    event_len: usize,
    event: impl FnOnce(&mut Cursor<'_>),
) {
    let packet_len =
        1 + varint_len(delta) + 1 + varint_len(seq as u64) + 1 + varint_len(event_len as u64) + event_len;
    // Framing 2 + 10, timestamp 11, sequence id 6, event 2 + 36.
    let mut a = [0u8; 72];
    let mut out = Cursor { a: &mut a, n: 0 };
    out.byte(1 << 3 | 2);
    out.varint(packet_len as u64);
    let start = out.n;
    out.byte(8 << 3);
    out.varint(delta);
    out.byte(10 << 3);
    out.varint(seq as u64);
    out.byte(11 << 3 | 2);
    out.varint(event_len as u64);
    event(&mut out);
    debug_assert_eq!(out.n - start, packet_len);
    let n = out.n;
    buf.extend_from_slice(&a[..n]);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `buf` holds one `Trace.packet`: its decoded packet, checking the
    /// framing.
    fn decode_one(buf: &[u8]) -> TracePacket {
        assert_eq!(buf[0], 0x0A);
        let mut rest = &buf[1..];
        let len = prost::encoding::decode_varint(&mut rest).unwrap() as usize;
        assert_eq!(rest.len(), len);
        TracePacket::decode(rest).unwrap()
    }

    fn prost_len(p: &TracePacket) -> usize {
        let mut b = Vec::new();
        prost::encoding::message::encode(1, p, &mut b);
        b.len()
    }

    /// The hand-encoded END and counter packets decode, with prost, to
    /// exactly the messages they stand for, and are as long as prost would
    /// make them.
    #[test]
    fn hand_encoded_end_and_counter_packets_match_prost() {
        for (i, (ts, track, value)) in [
            (0u64, 1u64, 0.0f64),
            (1_700_000_000_123_456_789, 300, 87.5),
            (5, 7, 3.0),
            (99, 8, -2.0),
            (u64::MAX, u64::MAX, -1e300),
        ]
        .into_iter()
        .enumerate()
        {
            // Job exports number sequences by rank: one- and multi-byte ids.
            let seq = [SEQUENCE_ID, 127, 128, 70_000, u32::MAX][i];
            for counter in [false, true] {
                let mut buf = Vec::new();
                if counter {
                    encode_counter(&mut buf, ts, seq, track, value);
                } else {
                    encode_end(&mut buf, ts, seq, track);
                }
                let int = value.fract() == 0.0 && value.abs() < 1e15;
                let want = TracePacket {
                    timestamp: Some(ts),
                    trusted_packet_sequence_id: Some(seq),
                    data: Some(PacketData::TrackEvent(TrackEvent {
                        r#type: Some(if counter {
                            EventType::Counter
                        } else {
                            EventType::SliceEnd
                        } as i32),
                        track_uuid: Some(track),
                        counter_value: counter.then_some(if int {
                            CounterValue::Int(value as i64)
                        } else {
                            CounterValue::Double(value)
                        }),
                        ..Default::default()
                    })),
                    ..Default::default()
                };
                assert_eq!(buf.len(), prost_len(&want));
                assert_eq!(decode_one(&buf), want);
            }
        }
    }

    /// The same for BEGIN packets: args of every kind, flows both ways, with
    /// and without interned data.
    #[test]
    fn hand_encoded_begin_packets_match_prost() {
        let s = |iid: u64, t: &str| InternedString {
            iid: Some(iid),
            name: Some(t.to_string()),
        };
        // (delta, track, name iid, category iid, args, flows, terminating, interned)
        type Case = (
            u64,
            u64,
            u64,
            u64,
            Vec<(u64, Annotation)>,
            Vec<u64>,
            Vec<u64>,
            InternedData,
        );
        let cases: Vec<Case> = vec![
            (0, 1, 1, 1, vec![], vec![], vec![], InternedData::default()),
            (
                1_700_000_000_123_456_789,
                300,
                70_000,
                12,
                vec![
                    (1, Annotation::Int(42)),
                    (2, Annotation::Int(-1)),
                    (3, Annotation::Double(0.4096)),
                    (200, Annotation::StringIid(1 << 40)),
                ],
                vec![1, u64::MAX],
                vec![],
                InternedData {
                    event_categories: vec![s(12, "kernel")],
                    event_names: vec![s(70_000, "gemm"), s(3, "x")],
                    debug_annotation_names: vec![s(1, "a"), s(2, "b")],
                    debug_annotation_string_values: vec![s(1 << 40, "[1, 2, 3]")],
                },
            ),
            (
                u64::MAX,
                u64::MAX,
                u64::MAX,
                u64::MAX,
                vec![(5, Annotation::StringIid(0))],
                vec![],
                vec![7, 8],
                InternedData::default(),
            ),
            // The most the one-buffer path takes, every number at its
            // longest.
            (
                u64::MAX,
                u64::MAX,
                u64::MAX,
                u64::MAX,
                (0..FAST_ARGS as u64)
                    .map(|k| {
                        let v = match k % 3 {
                            0 => Annotation::Int(i64::MIN),
                            1 => Annotation::Double(f64::MAX),
                            _ => Annotation::StringIid(u64::MAX),
                        };
                        (u64::MAX - k, v)
                    })
                    .collect(),
                (0..FAST_FLOWS as u64 / 2).map(|k| u64::MAX - k).collect(),
                (0..FAST_FLOWS as u64 / 2).collect(),
                InternedData::default(),
            ),
        ];
        for (delta, track, name, cat, args, flows, term, interned) in cases {
            let mut ev = Vec::new();
            encode_event_head(&mut ev, cat);
            for &(n, v) in &args {
                encode_annotation(&mut ev, n, v);
            }
            encode_event_tail(&mut ev, name, track, &flows, &term);
            let mut ib = Vec::new();
            if !interned.is_empty() {
                interned.encode(&mut ib).unwrap();
            }
            let seq = [SEQUENCE_ID, 200, 1 << 20][(track % 3) as usize];
            let mut buf = Vec::new();
            encode_begin(&mut buf, delta, seq, &ib, &ev);
            let want = TracePacket {
                timestamp: Some(delta),
                trusted_packet_sequence_id: Some(seq),
                sequence_flags: Some(SEQ_NEEDS_INCREMENTAL_STATE),
                interned_data: (!interned.is_empty()).then_some(interned),
                data: Some(PacketData::TrackEvent(TrackEvent {
                    category_iids: vec![cat],
                    debug_annotations: args
                        .iter()
                        .map(|&(n, v)| DebugAnnotation {
                            name: Some(AnnotationName::NameIid(n)),
                            value: Some(match v {
                                Annotation::Int(x) => AnnotationValue::Int(x),
                                Annotation::Double(x) => AnnotationValue::Double(x),
                                Annotation::StringIid(x) => AnnotationValue::StringIid(x),
                            }),
                        })
                        .collect(),
                    r#type: Some(EventType::SliceBegin as i32),
                    track_uuid: Some(track),
                    flow_ids: flows,
                    terminating_flow_ids: term,
                    name: Some(EventName::NameIid(name)),
                    ..Default::default()
                })),
                ..Default::default()
            };
            assert_eq!(buf.len(), prost_len(&want));
            assert_eq!(decode_one(&buf), want);
            if want.interned_data.is_none() {
                // The one-buffer path writes the same bytes.
                let event = Event {
                    cat_iid: cat,
                    args: &args,
                    name_iid: name,
                    track,
                    flows: &want_flows(&want).0,
                    terminating: &want_flows(&want).1,
                };
                let mut p = Box::new([0u8; BEGIN_MAX]);
                let at = encode_begin_in(&mut p, delta, seq, &event);
                assert_eq!(&p[at], &buf[..]);
            }
        }
    }

    /// The flow ids a BEGIN packet starts and ends.
    fn want_flows(p: &TracePacket) -> (Vec<u64>, Vec<u64>) {
        match &p.data {
            Some(PacketData::TrackEvent(e)) => (e.flow_ids.clone(), e.terminating_flow_ids.clone()),
            _ => (Vec::new(), Vec::new()),
        }
    }

    /// The packets of a file, each with its framing; a compressed chunk is
    /// replaced by the packets it holds. Checks every chunk against
    /// Perfetto's 512 KiB limit and returns the number of chunks.
    fn inflate_file(mut file: &[u8], plain: &mut Vec<u8>) -> usize {
        use std::io::Read;
        let mut chunks = 0;
        while !file.is_empty() {
            let whole = file;
            assert_eq!(file[0], 0x0A);
            file = &file[1..];
            let len = prost::encoding::decode_varint(&mut file).unwrap() as usize;
            let framed = &whole[..whole.len() - file.len() + len];
            let p = TracePacket::decode(&file[..len]).unwrap();
            if let Some(PacketData::CompressedPackets(z)) = &p.data {
                assert!(framed.len() < 512 << 10, "chunk of {} bytes", framed.len());
                assert_eq!(
                    p,
                    TracePacket {
                        data: p.data.clone(),
                        ..Default::default()
                    },
                    "nothing beside the chunk"
                );
                flate2::read::ZlibDecoder::new(&z[..]).read_to_end(plain).unwrap();
                chunks += 1;
            } else {
                plain.extend_from_slice(framed);
            }
            file = &file[len..];
        }
        chunks
    }

    /// Writes the same packets plain and compressed: `events` slices of
    /// incompressible-looking names (so the chunks are near their limit),
    /// one of them `huge_name` bytes long.
    fn write_both(events: usize, huge_name: usize) -> (Vec<u8>, Counts, Vec<u8>, Counts) {
        let mut strings = Strings::default();
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        let ids: Vec<StrId> = (0..events)
            .map(|k| {
                let n = if k == events / 2 { huge_name } else { 40 };
                let name: String = (0..n)
                    .map(|_| {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        char::from(b'!' + (x % 90) as u8)
                    })
                    .collect();
                strings.intern(&name)
            })
            .collect();
        let run = |level: Option<u32>| {
            let mut out = Vec::new();
            let mut w = PacketWriter::new(&mut out, &strings, 1_000, 1, level);
            w.descriptor(TrackDescriptor {
                uuid: Some(7),
                ..Default::default()
            })
            .unwrap();
            for (k, &id) in ids.iter().enumerate() {
                let t = 1_000 + 10 * k as u64;
                w.begin(t, 7, Name::Id(id), "kernel", &[], &[], &[]).unwrap();
                w.end(t + 5, 7).unwrap();
            }
            let c = w.finish().unwrap();
            (out, c)
        };
        let (plain, pc) = run(None);
        let (z, zc) = run(Some(6));
        (plain, pc, z, zc)
    }

    /// Compressed output holds exactly the plain packets, in order, in
    /// chunks under 512 KiB; a packet too big for a chunk goes out plain
    /// between two chunks.
    #[test]
    fn compressed_chunks_hold_exactly_the_plain_packets() {
        for (events, huge) in [(3, 10), (40_000, 10), (40_000, 700 << 10)] {
            let (plain, pc, z, zc) = write_both(events, huge);
            assert_eq!(pc.bytes, plain.len() as u64);
            assert_eq!(pc.packet_bytes, pc.bytes);
            assert_eq!(pc.compressed_chunks, 0);
            assert_eq!(zc.bytes, z.len() as u64);
            assert_eq!(zc.packet_bytes, pc.packet_bytes);
            assert_eq!((zc.packets, zc.slices), (pc.packets, pc.slices));
            let mut inflated = Vec::new();
            let chunks = inflate_file(&z, &mut inflated);
            assert_eq!(chunks as u64, zc.compressed_chunks);
            assert!(
                inflated == plain,
                "{events} events: inflated packets differ from the plain file"
            );
            let want_chunks = (pc.packet_bytes as usize).div_ceil(CHUNK_AT);
            assert!(chunks >= want_chunks.min(2), "{events} events: {chunks} chunks");
            if huge > CHUNK_MAX {
                // The huge packet sits uncompressed between chunks.
                assert!(z.len() > huge, "{} bytes", z.len());
            }
        }
    }

    #[test]
    fn varint_lengths() {
        for v in [0u64, 1, 127, 128, 16_383, 16_384, u64::MAX] {
            let mut b = Vec::new();
            b.varint(v);
            assert_eq!(b.len(), varint_len(v), "{v}");
            assert_eq!(b.len(), prost::encoding::encoded_len_varint(v), "{v}");
        }
    }
}

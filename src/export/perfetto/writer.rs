//! [`PacketWriter`]: streams `TracePacket`s to any `Write`, one packet at a
//! time, with interned event names, categories and arg names, and counts
//! what it wrote so tests can compare with the trace processor.
//!
//! The file is `Trace { repeated TracePacket packet = 1; }`, so each packet is
//! written as field 1 (tag byte `0x0A`, varint length, bytes) and no `Trace`
//! is ever held in memory (notes §2).

use super::proto::*;
use gapscope_collectors::trace::{StrId, Strings};
use prost::Message;
use serde::Serialize;
use std::collections::HashMap;
use std::fmt::Write as _;
use std::io::{self, Write};

/// One writer is one packet sequence. Any non-zero id works; zero breaks
/// interning (pitfall 8), and iids are scoped to it (pitfall 7).
const SEQUENCE_ID: u32 = 1;

/// Flush the packet buffer to the output once it holds this much.
const FLUSH_AT: usize = 256 * 1024;

/// What the writer emitted; the trace processor must report the same.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Counts {
    /// Packets written.
    pub packets: u64,
    /// Bytes written.
    pub bytes: u64,
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

/// Streams packets of one sequence to `out`.
pub struct PacketWriter<'t, W: Write> {
    out: W,
    buf: Vec<u8>,
    strings: &'t Strings,
    /// iid of trace string `i` is `i + 1` once emitted; `false` until then.
    name_sent: Vec<bool>,
    /// Other names: iids after the trace's.
    text_iids: HashMap<String, u64>,
    /// A few dozen static names at most: a scan beats hashing.
    cat_iids: Vec<&'static str>,
    arg_iids: Vec<&'static str>,
    /// Arg string values: iid of trace string `i` (0: not sent yet), and of
    /// other text; one iid space for both.
    value_iid_of_id: Vec<u64>,
    value_iids: HashMap<String, u64>,
    next_value_iid: u64,
    /// Scratch for formatting [`ArgValue::Dims`].
    text: String,
    /// Reused for every event to avoid per-packet allocations.
    packet: TracePacket,
    event: TrackEvent,
    interned: InternedData,
    first: bool,
    counts: Counts,
    flows_started: u64,
}

impl<'t, W: Write> PacketWriter<'t, W> {
    /// A writer whose `Name::Id`s resolve in `strings`.
    pub fn new(out: W, strings: &'t Strings) -> Self {
        PacketWriter {
            out,
            buf: Vec::with_capacity(FLUSH_AT + 4096),
            strings,
            name_sent: vec![false; strings.len()],
            text_iids: HashMap::new(),
            cat_iids: Vec::new(),
            arg_iids: Vec::new(),
            value_iid_of_id: vec![0; strings.len()],
            value_iids: HashMap::new(),
            next_value_iid: 1,
            text: String::new(),
            packet: TracePacket::default(),
            event: TrackEvent::default(),
            interned: InternedData::default(),
            first: true,
            counts: Counts::default(),
            flows_started: 0,
        }
    }

    /// Declares a track. Must precede every event on it (pitfall 12).
    pub fn descriptor(&mut self, td: TrackDescriptor) -> io::Result<()> {
        self.counts.tracks += 1;
        let mut p = TracePacket {
            trusted_packet_sequence_id: Some(SEQUENCE_ID),
            data: Some(PacketData::TrackDescriptor(td)),
            ..Default::default()
        };
        self.mark_first(&mut p);
        self.emit(&p)
    }

    /// Opens a slice on `track` at `ts`. `flows` start here and `terminating`
    /// end here.
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
        let mut ev = std::mem::take(&mut self.event);
        ev.r#type = Some(EventType::SliceBegin as i32);
        ev.track_uuid = Some(track);
        ev.name = Some(EventName::NameIid(self.name_iid(name)));
        ev.category_iids.clear();
        ev.category_iids.push(self.cat_iid(category));
        ev.debug_annotations.clear();
        for a in args {
            let name = Some(AnnotationName::NameIid(self.arg_iid(a.name)));
            let value = Some(match a.value {
                ArgValue::Int(v) => AnnotationValue::Int(v),
                ArgValue::Double(v) => AnnotationValue::Double(v),
                ArgValue::Id(id) => AnnotationValue::StringIid(self.value_iid_id(id)),
                ArgValue::Str(s) => AnnotationValue::StringIid(self.value_iid_text(s)),
                ArgValue::Dims([x, y, z]) => {
                    let mut t = std::mem::take(&mut self.text);
                    t.clear();
                    let _ = write!(t, "[{x}, {y}, {z}]");
                    let iid = self.value_iid_text(&t);
                    self.text = t;
                    AnnotationValue::StringIid(iid)
                }
            });
            ev.debug_annotations.push(DebugAnnotation { name, value });
        }
        ev.flow_ids.clear();
        ev.flow_ids.extend_from_slice(flows);
        ev.terminating_flow_ids.clear();
        ev.terminating_flow_ids.extend_from_slice(terminating);
        self.event_packet(ts, ev)
    }

    /// Closes the innermost open slice on `track`. No name: an END with a
    /// different name is a data-loss stat (pitfall 14).
    ///
    /// END and counter packets are half of all packets and carry no
    /// interned ids, so they are encoded by hand (see [`encode_end`]) and
    /// without `sequence_flags`; a unit test checks them against prost.
    pub fn end(&mut self, ts: u64, track: u64) -> io::Result<()> {
        let before = self.buf.len();
        encode_end(&mut self.buf, ts, track);
        self.emitted(before)
    }

    /// A counter sample on counter track `track`.
    pub fn counter(&mut self, ts: u64, track: u64, value: f64) -> io::Result<()> {
        self.counts.counter_samples += 1;
        let before = self.buf.len();
        encode_counter(&mut self.buf, ts, track, value);
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
        debug_assert_eq!(self.flows_started, self.counts.flows, "unterminated flows");
        self.flush_buf()?;
        self.out.flush()?;
        Ok(self.counts)
    }

    fn event_packet(&mut self, ts: u64, ev: TrackEvent) -> io::Result<()> {
        let mut p = std::mem::take(&mut self.packet);
        p.timestamp = Some(ts);
        p.trusted_packet_sequence_id = Some(SEQUENCE_ID);
        // Every packet that uses iids says so, or the names come out NULL
        // (pitfall 5).
        p.sequence_flags = Some(SEQ_NEEDS_INCREMENTAL_STATE);
        p.first_packet_on_sequence = None;
        let interned = std::mem::take(&mut self.interned);
        let has_new = !(interned.event_names.is_empty()
            && interned.event_categories.is_empty()
            && interned.debug_annotation_names.is_empty()
            && interned.debug_annotation_string_values.is_empty());
        p.interned_data = has_new.then_some(interned);
        p.data = Some(PacketData::TrackEvent(ev));
        self.mark_first(&mut p);
        let r = self.emit(&p);
        if let Some(PacketData::TrackEvent(ev)) = p.data.take() {
            self.event = ev;
        }
        if let Some(mut i) = p.interned_data.take() {
            i.event_names.clear();
            i.event_categories.clear();
            i.debug_annotation_names.clear();
            i.debug_annotation_string_values.clear();
            self.interned = i;
        }
        self.packet = p;
        r
    }

    /// The first packet clears incremental state; without it every packet
    /// that needs it is dropped (pitfall 6).
    fn mark_first(&mut self, p: &mut TracePacket) {
        if self.first {
            self.first = false;
            p.first_packet_on_sequence = Some(true);
            p.sequence_flags = Some(p.sequence_flags.unwrap_or(0) | SEQ_INCREMENTAL_STATE_CLEARED);
        }
    }

    fn emit(&mut self, p: &TracePacket) -> io::Result<()> {
        let before = self.buf.len();
        prost::encoding::message::encode(1, p, &mut self.buf);
        debug_assert_eq!(
            self.buf.len() - before,
            1 + prost::length_delimiter_len(p.encoded_len()) + p.encoded_len()
        );
        self.emitted(before)
    }

    /// Counts the packet that starts at `before` in the buffer.
    fn emitted(&mut self, before: usize) -> io::Result<()> {
        self.counts.packets += 1;
        self.counts.bytes += (self.buf.len() - before) as u64;
        if self.buf.len() >= FLUSH_AT {
            self.flush_buf()?;
        }
        Ok(())
    }

    fn flush_buf(&mut self) -> io::Result<()> {
        self.out.write_all(&self.buf)?;
        self.buf.clear();
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

    fn value_iid_id(&mut self, id: StrId) -> u64 {
        let i = id.0 as usize;
        if self.value_iid_of_id[i] == 0 {
            let iid = self.next_value_iid;
            self.next_value_iid += 1;
            self.value_iid_of_id[i] = iid;
            self.interned.debug_annotation_string_values.push(InternedString {
                iid: Some(iid),
                name: Some(self.strings.get(id).to_string()),
            });
        }
        self.value_iid_of_id[i]
    }

    fn value_iid_text(&mut self, s: &str) -> u64 {
        if let Some(&iid) = self.value_iids.get(s) {
            return iid;
        }
        let iid = self.next_value_iid;
        self.next_value_iid += 1;
        self.value_iids.insert(s.to_string(), iid);
        self.interned.debug_annotation_string_values.push(InternedString {
            iid: Some(iid),
            name: Some(s.to_string()),
        });
        iid
    }

    fn cat_iid(&mut self, cat: &'static str) -> u64 {
        intern_static(&mut self.cat_iids, &mut self.interned.event_categories, cat)
    }

    fn arg_iid(&mut self, name: &'static str) -> u64 {
        intern_static(
            &mut self.arg_iids,
            &mut self.interned.debug_annotation_names,
            name,
        )
    }
}

/// iid of `s` in `table` (iid = position + 1), adding it to `new` on
/// first use.
fn intern_static(table: &mut Vec<&'static str>, new: &mut Vec<InternedString>, s: &'static str) -> u64 {
    if let Some(k) = table.iter().position(|&t| std::ptr::eq(t, s) || t == s) {
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

/// Appends `v` as a protobuf varint.
fn put_varint(buf: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        buf.push(v as u8 | 0x80);
        v >>= 7;
    }
    buf.push(v as u8);
}

fn varint_len(v: u64) -> usize {
    (64 - (v | 1).leading_zeros() as usize).div_ceil(7)
}

/// `Trace.packet` (field 1) holding `{timestamp: ts, trusted_packet_sequence_id,
/// track_event {type: SLICE_END, track_uuid: track}}`, field numbers as in
/// [`TracePacket`] and [`TrackEvent`].
fn encode_end(buf: &mut Vec<u8>, ts: u64, track: u64) {
    // TrackEvent: type (9, varint) = 2; track_uuid (11, varint).
    let event_len = 2 + 1 + varint_len(track);
    encode_event_packet(buf, ts, event_len, |buf| {
        buf.extend_from_slice(&[9 << 3, EventType::SliceEnd as u8, 11 << 3]);
        put_varint(buf, track);
    });
}

/// Like [`encode_end`] for `track_event {type: COUNTER, track_uuid,
/// double_counter_value (44, fixed64)}`.
fn encode_counter(buf: &mut Vec<u8>, ts: u64, track: u64, value: f64) {
    let event_len = 2 + 1 + varint_len(track) + 2 + 8;
    encode_event_packet(buf, ts, event_len, |buf| {
        buf.extend_from_slice(&[9 << 3, EventType::Counter as u8, 11 << 3]);
        put_varint(buf, track);
        // Tag of field 44, wire type 1 (64-bit): 44 << 3 | 1 = 353, two varint bytes.
        buf.extend_from_slice(&[0xE1, 0x02]);
        buf.extend_from_slice(&value.to_le_bytes());
    });
}

/// A packet with `timestamp` (8), `trusted_packet_sequence_id` (10) and a
/// `track_event` (11) of `event_len` bytes written by `event`.
fn encode_event_packet(buf: &mut Vec<u8>, ts: u64, event_len: usize, event: impl FnOnce(&mut Vec<u8>)) {
    let packet_len = 1
        + varint_len(ts)
        + 1
        + varint_len(SEQUENCE_ID as u64)
        + 1
        + varint_len(event_len as u64)
        + event_len;
    buf.reserve(1 + varint_len(packet_len as u64) + packet_len);
    buf.push(1 << 3 | 2);
    put_varint(buf, packet_len as u64);
    let start = buf.len();
    buf.push(8 << 3);
    put_varint(buf, ts);
    buf.push(10 << 3);
    put_varint(buf, SEQUENCE_ID as u64);
    buf.push(11 << 3 | 2);
    put_varint(buf, event_len as u64);
    event(buf);
    debug_assert_eq!(buf.len() - start, packet_len);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The hand-encoded packets decode, with prost, to exactly the messages
    /// they stand for, and are as long as prost would make them.
    #[test]
    fn hand_encoded_packets_match_prost() {
        for (ts, track, value) in [
            (0u64, 1u64, 0.0f64),
            (1_700_000_000_123_456_789, 300, 87.5),
            (u64::MAX, u64::MAX, -1e300),
        ] {
            for counter in [false, true] {
                let mut buf = Vec::new();
                if counter {
                    encode_counter(&mut buf, ts, track, value);
                } else {
                    encode_end(&mut buf, ts, track);
                }
                let want = TracePacket {
                    timestamp: Some(ts),
                    trusted_packet_sequence_id: Some(SEQUENCE_ID),
                    data: Some(PacketData::TrackEvent(TrackEvent {
                        r#type: Some(if counter {
                            EventType::Counter
                        } else {
                            EventType::SliceEnd
                        } as i32),
                        track_uuid: Some(track),
                        counter_value: counter.then_some(CounterValue::Double(value)),
                        ..Default::default()
                    })),
                    ..Default::default()
                };
                let mut prost_buf = Vec::new();
                prost::encoding::message::encode(1, &want, &mut prost_buf);
                assert_eq!(buf.len(), prost_buf.len());
                assert_eq!(buf[0], 0x0A);
                let mut rest = &buf[1..];
                let len = prost::encoding::decode_varint(&mut rest).unwrap() as usize;
                assert_eq!(rest.len(), len);
                assert_eq!(TracePacket::decode(rest).unwrap(), want);
            }
        }
    }

    #[test]
    fn varint_lengths() {
        for v in [0u64, 1, 127, 128, 16_383, 16_384, u64::MAX] {
            let mut b = Vec::new();
            put_varint(&mut b, v);
            assert_eq!(b.len(), varint_len(v), "{v}");
            assert_eq!(b.len(), prost::encoding::encoded_len_varint(v), "{v}");
        }
    }
}

//! The subset of Perfetto's trace protos that the exporter writes, as our own
//! prost messages.
//!
//! Field numbers are Perfetto's (`protos/perfetto/trace/...`); they never
//! change, so owning them is safe. We do not depend on `perfetto_protos`: it
//! is rust-protobuf, not prost, and takes minutes to build.
//!
//! **Every repeated scalar says `packed = "false"`.** Perfetto's protozero
//! decoder reads proto2 fields only as declared (unpacked) and silently drops
//! packed `flow_ids`: zero flows, no error.

/// `TracePacket.sequence_flags`: the sequence's interning state was reset
/// here. Set on the first packet of the sequence.
pub const SEQ_INCREMENTAL_STATE_CLEARED: u32 = 1;
/// `TracePacket.sequence_flags`: this packet defines or uses interned ids.
pub const SEQ_NEEDS_INCREMENTAL_STATE: u32 = 2;

/// `ClockSnapshot.Clock.clock_id` of BOOTTIME, the trace processor's
/// default trace clock.
pub const CLOCK_BOOTTIME: u32 = 6;
/// Our incremental clock: ids 64..=127 are scoped to one packet sequence.
pub const CLOCK_INCREMENTAL: u32 = 64;

/// One packet of the trace; the file is `repeated TracePacket packet = 1`,
/// which the writer streams one length-delimited packet at a time.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TracePacket {
    /// Event time. Event packets leave the clock id to the sequence's
    /// [`TracePacketDefaults`]: [`CLOCK_INCREMENTAL`], declared by the
    /// first packet's [`ClockSnapshot`] (a clock without a snapshot drops
    /// events), so this is a delta from the previous event, in
    /// that clock's unit.
    #[prost(uint64, optional, tag = "8")]
    pub timestamp: Option<u64>,
    /// Non-zero on every packet: interning with sequence id 0 rejects the
    /// whole trace.
    #[prost(uint32, optional, tag = "10")]
    pub trusted_packet_sequence_id: Option<u32>,
    /// Names, categories and arg names first used by this packet.
    #[prost(message, optional, tag = "12")]
    pub interned_data: Option<InternedData>,
    /// [`SEQ_INCREMENTAL_STATE_CLEARED`] | [`SEQ_NEEDS_INCREMENTAL_STATE`].
    #[prost(uint32, optional, tag = "13")]
    pub sequence_flags: Option<u32>,
    /// True on the first packet this writer emits.
    #[prost(bool, optional, tag = "87")]
    pub first_packet_on_sequence: Option<bool>,
    /// Sequence-wide defaults; part of the incremental state, so set on the
    /// packet that clears it.
    #[prost(message, optional, tag = "59")]
    pub trace_packet_defaults: Option<TracePacketDefaults>,
    /// What the packet carries.
    #[prost(oneof = "PacketData", tags = "6, 11, 50, 60")]
    pub data: Option<PacketData>,
}

/// Defaults for every packet of the sequence.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TracePacketDefaults {
    /// Clock of every `timestamp` that does not name its own.
    #[prost(uint32, optional, tag = "58")]
    pub timestamp_clock_id: Option<u32>,
}

/// Readings of several clocks at one instant: how the trace processor
/// converts our clock to its trace clock.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ClockSnapshot {
    /// The readings.
    #[prost(message, repeated, tag = "1")]
    pub clocks: Vec<Clock>,
}

/// One clock reading.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Clock {
    /// Builtin (1..=63) or sequence-scoped (64..=127) id.
    #[prost(uint32, optional, tag = "1")]
    pub clock_id: Option<u32>,
    /// The reading, in the clock's unit.
    #[prost(uint64, optional, tag = "2")]
    pub timestamp: Option<u64>,
    /// Packet timestamps on this clock are deltas from the previous packet
    /// on it (the first from this reading).
    #[prost(bool, optional, tag = "3")]
    pub is_incremental: Option<bool>,
    /// ns per unit of this clock (default 1).
    #[prost(uint64, optional, tag = "4")]
    pub unit_multiplier_ns: Option<u64>,
}

/// `TracePacket.data`, the members we use.
#[derive(Clone, PartialEq, prost::Oneof)]
pub enum PacketData {
    /// Declares the incremental clock.
    #[prost(message, tag = "6")]
    ClockSnapshot(ClockSnapshot),
    /// A slice begin/end, instant or counter value.
    #[prost(message, tag = "11")]
    TrackEvent(TrackEvent),
    /// Declares a track (process, thread, named or counter track).
    #[prost(message, tag = "60")]
    TrackDescriptor(TrackDescriptor),
    /// A zlib stream whose content is a serialized `Trace` (packets framed
    /// as field 1, exactly as in the file); the trace processor inflates it
    /// and reads the packets in its place. Written by hand (writer.rs);
    /// here so tests can decode it.
    #[prost(bytes, tag = "50")]
    CompressedPackets(Vec<u8>),
}

/// `TrackEvent.type`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
#[repr(i32)]
pub enum EventType {
    /// Not set.
    Unspecified = 0,
    /// Opens a slice on its track.
    SliceBegin = 1,
    /// Closes the most recently opened slice on its track.
    SliceEnd = 2,
    /// A zero-length point.
    Instant = 3,
    /// A counter sample.
    Counter = 4,
}

/// A slice edge or counter sample on a track.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TrackEvent {
    /// Interned category ids.
    #[prost(uint64, repeated, packed = "false", tag = "3")]
    pub category_iids: Vec<u64>,
    /// Typed args; they land in the `args` table as `debug.<name>`.
    #[prost(message, repeated, tag = "4")]
    pub debug_annotations: Vec<DebugAnnotation>,
    /// Begin, end, instant or counter.
    #[prost(enumeration = "EventType", optional, tag = "9")]
    pub r#type: Option<i32>,
    /// The track (a uuid declared by a [`TrackDescriptor`] earlier).
    #[prost(uint64, optional, tag = "11")]
    pub track_uuid: Option<u64>,
    /// Plain-text categories (unused when interning).
    #[prost(string, repeated, tag = "22")]
    pub categories: Vec<String>,
    /// Flows that start at this slice.
    #[prost(fixed64, repeated, packed = "false", tag = "47")]
    pub flow_ids: Vec<u64>,
    /// Flows that end at this slice; a terminated id may be reused safely,
    /// though we keep ids unique anyway.
    #[prost(fixed64, repeated, packed = "false", tag = "48")]
    pub terminating_flow_ids: Vec<u64>,
    /// Slice name, interned or plain.
    #[prost(oneof = "EventName", tags = "10, 23")]
    pub name: Option<EventName>,
    /// Counter value.
    #[prost(oneof = "CounterValue", tags = "30, 44")]
    pub counter_value: Option<CounterValue>,
}

/// `TrackEvent.name_field`.
#[derive(Clone, PartialEq, prost::Oneof)]
pub enum EventName {
    /// Interned name ([`InternedData::event_names`]).
    #[prost(uint64, tag = "10")]
    NameIid(u64),
    /// Plain name.
    #[prost(string, tag = "23")]
    Name(String),
}

/// `TrackEvent.counter_value_field`.
#[derive(Clone, PartialEq, prost::Oneof)]
pub enum CounterValue {
    /// Integer value.
    #[prost(int64, tag = "30")]
    Int(i64),
    /// Floating-point value.
    #[prost(double, tag = "44")]
    Double(f64),
}

/// A typed arg on an event.
#[derive(Clone, PartialEq, prost::Message)]
pub struct DebugAnnotation {
    /// Arg name, interned or plain.
    #[prost(oneof = "AnnotationName", tags = "1, 10")]
    pub name: Option<AnnotationName>,
    /// Arg value.
    #[prost(oneof = "AnnotationValue", tags = "2, 3, 4, 5, 6, 17")]
    pub value: Option<AnnotationValue>,
}

/// `DebugAnnotation.name_field`.
#[derive(Clone, PartialEq, prost::Oneof)]
pub enum AnnotationName {
    /// Interned ([`InternedData::debug_annotation_names`]).
    #[prost(uint64, tag = "1")]
    NameIid(u64),
    /// Plain.
    #[prost(string, tag = "10")]
    Name(String),
}

/// `DebugAnnotation.value`, the scalar members.
#[derive(Clone, PartialEq, prost::Oneof)]
pub enum AnnotationValue {
    /// Boolean.
    #[prost(bool, tag = "2")]
    Bool(bool),
    /// Unsigned integer.
    #[prost(uint64, tag = "3")]
    Uint(u64),
    /// Signed integer.
    #[prost(int64, tag = "4")]
    Int(i64),
    /// Double.
    #[prost(double, tag = "5")]
    Double(f64),
    /// String.
    #[prost(string, tag = "6")]
    String(String),
    /// Interned string ([`InternedData::debug_annotation_string_values`]).
    #[prost(uint64, tag = "17")]
    StringIid(u64),
}

/// One interned string: `{iid = 1; name = 2}` for names, categories and
/// annotation names alike (`InternedString.str = 2` for string values is
/// `bytes` in Perfetto's proto: the same wire type as `string`).
#[derive(Clone, PartialEq, prost::Message)]
pub struct InternedString {
    /// Id, > 0, scoped to the packet sequence.
    #[prost(uint64, optional, tag = "1")]
    pub iid: Option<u64>,
    /// The text.
    #[prost(string, optional, tag = "2")]
    pub name: Option<String>,
}

/// Interning table entries introduced by a packet.
#[derive(Clone, PartialEq, prost::Message)]
pub struct InternedData {
    /// Category ids.
    #[prost(message, repeated, tag = "1")]
    pub event_categories: Vec<InternedString>,
    /// Event name ids.
    #[prost(message, repeated, tag = "2")]
    pub event_names: Vec<InternedString>,
    /// Debug annotation name ids.
    #[prost(message, repeated, tag = "3")]
    pub debug_annotation_names: Vec<InternedString>,
    /// Debug annotation string values (shapes, source lines, operator
    /// names repeat across thousands of slices).
    #[prost(message, repeated, tag = "29")]
    pub debug_annotation_string_values: Vec<InternedString>,
}

/// `TrackDescriptor.child_ordering`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
#[repr(i32)]
pub enum ChildOrdering {
    /// Not set.
    Unknown = 0,
    /// By name.
    Lexicographic = 1,
    /// By first event.
    Chronological = 2,
    /// By `sibling_order_rank`.
    Explicit = 3,
}

/// Declares a track. Emitted before any event uses its uuid.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TrackDescriptor {
    /// The track's id, unique in the trace.
    #[prost(uint64, optional, tag = "1")]
    pub uuid: Option<u64>,
    /// Display name (ignored for process and thread tracks).
    #[prost(string, optional, tag = "2")]
    pub name: Option<String>,
    /// Makes this a process track.
    #[prost(message, optional, tag = "3")]
    pub process: Option<ProcessDescriptor>,
    /// Makes this a thread track.
    #[prost(message, optional, tag = "4")]
    pub thread: Option<ThreadDescriptor>,
    /// The enclosing track.
    #[prost(uint64, optional, tag = "5")]
    pub parent_uuid: Option<u64>,
    /// Makes this a counter track.
    #[prost(message, optional, tag = "8")]
    pub counter: Option<CounterDescriptor>,
    /// How the UI orders this track's children.
    #[prost(enumeration = "ChildOrdering", optional, tag = "11")]
    pub child_ordering: Option<i32>,
    /// Position among siblings when the parent orders explicitly.
    #[prost(int32, optional, tag = "12")]
    pub sibling_order_rank: Option<i32>,
}

/// A process, identified by pid.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ProcessDescriptor {
    /// Process id.
    #[prost(int32, optional, tag = "1")]
    pub pid: Option<i32>,
    /// Display name.
    #[prost(string, optional, tag = "6")]
    pub process_name: Option<String>,
}

/// A thread, identified by pid and tid.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ThreadDescriptor {
    /// Process id.
    #[prost(int32, optional, tag = "1")]
    pub pid: Option<i32>,
    /// Thread id.
    #[prost(int32, optional, tag = "2")]
    pub tid: Option<i32>,
    /// Display name.
    #[prost(string, optional, tag = "5")]
    pub thread_name: Option<String>,
}

/// Makes a track a counter track.
#[derive(Clone, PartialEq, prost::Message)]
pub struct CounterDescriptor {
    /// Free-text unit shown in the UI (`%`, `kernels`).
    #[prost(string, optional, tag = "6")]
    pub unit_name: Option<String>,
}

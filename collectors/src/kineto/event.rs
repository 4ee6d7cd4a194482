//! One trace event as the converter reads it: small, every string borrowed.
//!
//! The fast reader (`fast.rs`) fills an [`Event`] in place from the bytes
//! of the file; an event it leaves to serde is read into a
//! [`RawEvent`](super::wire::RawEvent) and looked at through
//! [`RawEvent::view`]. Both give the same `Event` for the same text (tested
//! on every event of the shared traces), so the converter has one input.

use super::wire::{CowStr, IdOrStr, RawArgs, RawEvent, RawText};
use std::borrow::Cow;

/// One element of `traceEvents` (see [`RawEvent`] for the fields'
/// meaning). `ts` and `dur` are the number's text as written (with the
/// quotes when it is a string), converted exactly by
/// [`micros_to_ns`](super::number::micros_to_ns).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Event<'a> {
    /// Phase.
    pub ph: Option<&'a str>,
    /// Category.
    pub cat: Option<&'a str>,
    /// Name.
    pub name: Option<&'a str>,
    /// Process id.
    pub pid: Id<'a>,
    /// Thread id.
    pub tid: Id<'a>,
    /// Start, µs, as text.
    pub ts: Option<&'a str>,
    /// Duration, µs, as text.
    pub dur: Option<&'a str>,
    /// Instant scope.
    pub scope: Option<&'a str>,
    /// The arguments the importer uses.
    pub args: Option<Args<'a>>,
}

/// A `pid`/`tid`: an integer, a label, or missing (see [`IdOrStr`]).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub enum Id<'a> {
    /// Absent or of an unusable type.
    #[default]
    Missing,
    /// A number.
    Int(i64),
    /// A label.
    Str(&'a str),
}

/// The `args` keys the importer uses (see [`RawArgs`]).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Args<'a> {
    /// `External id`.
    pub external_id: Option<i64>,
    /// `correlation`.
    pub correlation: Option<i64>,
    /// `device`.
    pub device: Option<i64>,
    /// `stream`.
    pub stream: Option<i64>,
    /// `bytes`.
    pub bytes: Option<i64>,
    /// `size`: the bytes an older ROCm tracer gives on a copy call.
    pub size: Option<i64>,
    /// `grid`.
    pub grid: Option<[u32; 3]>,
    /// `block`.
    pub block: Option<[u32; 3]>,
    /// `registers per thread`.
    pub registers: Option<i64>,
    /// `shared memory`.
    pub shared_mem: Option<i64>,
    /// `Sequence number`.
    pub sequence: Option<i64>,
    /// `est. achieved occupancy %`.
    pub occupancy: Option<f64>,
    /// `Input Dims` as written.
    pub input_dims: Option<&'a str>,
    /// `name` (metadata).
    pub name: Option<&'a str>,
    /// `kind` (ROCm copies).
    pub kind: Option<&'a str>,
    /// `Collective name`.
    pub collective_name: Option<&'a str>,
    /// `Process Group Name`.
    pub group: Option<&'a str>,
    /// `Process Group Description`.
    pub group_desc: Option<&'a str>,
    /// `Process Group Ranks`.
    pub group_ranks: Option<&'a str>,
    /// `Group size`.
    pub group_size: Option<i64>,
    /// `Seq` / `seq`.
    pub seq: Option<i64>,
    /// The first other numeric argument (a counter's value).
    pub first_number: Option<f64>,
}

impl RawEvent<'_> {
    /// This event as the converter reads it, borrowing from `self`.
    pub fn view(&self) -> Event<'_> {
        Event {
            ph: self.ph.as_deref(),
            cat: self.cat.as_deref(),
            name: self.name.as_deref(),
            pid: self.pid.view(),
            tid: self.tid.view(),
            ts: self.ts.as_ref().map(RawText::get),
            dur: self.dur.as_ref().map(RawText::get),
            scope: self.scope.as_deref(),
            args: self.args.as_ref().map(RawArgs::view),
        }
    }
}

impl IdOrStr<'_> {
    fn view(&self) -> Id<'_> {
        match self {
            IdOrStr::Missing => Id::Missing,
            IdOrStr::Int(i) => Id::Int(*i),
            IdOrStr::Str(s) => Id::Str(s),
        }
    }
}

impl RawArgs<'_> {
    fn view(&self) -> Args<'_> {
        Args {
            external_id: self.external_id,
            correlation: self.correlation,
            device: self.device,
            stream: self.stream,
            bytes: self.bytes,
            size: self.size,
            grid: self.grid,
            block: self.block,
            registers: self.registers,
            shared_mem: self.shared_mem,
            sequence: self.sequence,
            occupancy: self.occupancy,
            input_dims: self.input_dims.as_ref().map(RawText::get),
            name: self.name.as_deref(),
            kind: self.kind.as_deref(),
            collective_name: self.collective_name.as_deref(),
            group: self.group.as_deref(),
            group_desc: self.group_desc.as_deref(),
            group_ranks: self.group_ranks.as_deref(),
            group_size: self.group_size,
            seq: self.seq,
            first_number: self.first_number,
        }
    }
}

impl Event<'_> {
    /// An owned copy, for the few events kept until every chunk is read
    /// (`B`/`E` halves); [`RawEvent::view`] reads it back.
    pub fn to_raw(self) -> RawEvent<'static> {
        let s = |v: Option<&str>| v.map(|v| CowStr(Cow::Owned(v.to_string())));
        let t = |v: Option<&str>| v.map(|v| RawText(Cow::Owned(v.to_string())));
        let id = |v: Id<'_>| match v {
            Id::Missing => IdOrStr::Missing,
            Id::Int(i) => IdOrStr::Int(i),
            Id::Str(v) => IdOrStr::Str(Cow::Owned(v.to_string())),
        };
        RawEvent {
            ph: s(self.ph),
            cat: s(self.cat),
            name: s(self.name),
            pid: id(self.pid),
            tid: id(self.tid),
            ts: t(self.ts),
            dur: t(self.dur),
            scope: s(self.scope),
            args: self.args.map(|a| RawArgs {
                external_id: a.external_id,
                correlation: a.correlation,
                device: a.device,
                stream: a.stream,
                bytes: a.bytes,
                size: a.size,
                grid: a.grid,
                block: a.block,
                registers: a.registers,
                shared_mem: a.shared_mem,
                sequence: a.sequence,
                occupancy: a.occupancy,
                input_dims: t(a.input_dims),
                name: s(a.name),
                kind: s(a.kind),
                collective_name: s(a.collective_name),
                group: s(a.group),
                group_desc: s(a.group_desc),
                group_ranks: s(a.group_ranks),
                group_size: a.group_size,
                seq: a.seq,
                first_number: a.first_number,
            }),
        }
    }
}

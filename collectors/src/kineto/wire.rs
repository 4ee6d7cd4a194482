//! The Kineto / Chrome trace JSON wire format, as flat borrowed structs.
//!
//! Field names follow the Trace Event Format spec ("ph" = phase, "ts" =
//! timestamp in µs, "dur" = duration in µs, "pid"/"tid" = process/thread)
//! and Kineto's `args` keys. Everything borrows from the input buffer.
//!
//! The structs are flat on purpose: `ts`/`dur` are kept as raw number text
//! (parsed exactly by [`number`](super::number)), and serde's internally
//! tagged enums and `flatten` would buffer content and lose that
//! (serde-rs/json#505). Values of unexpected types are
//! read leniently (as "absent") so one odd field does not cost the event.

use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;
use std::borrow::Cow;
use std::fmt;

/// One element of `traceEvents`.
#[derive(Deserialize, Debug, Default, PartialEq)]
pub struct RawEvent<'a> {
    /// Phase: `X` complete, `B`/`E` begin/end, `i`/`I` instant, `C` counter,
    /// `M` metadata, `s`/`f`/`t` flow.
    #[serde(borrow)]
    pub ph: Option<CowStr<'a>>,
    /// Category (`kernel`, `cpu_op`, ... or the 2021 `Kernel`, `Operator`).
    #[serde(borrow)]
    pub cat: Option<CowStr<'a>>,
    /// Event name.
    #[serde(borrow)]
    pub name: Option<CowStr<'a>>,
    /// Process id: an integer, or a label such as `"Spans"`.
    #[serde(borrow, default)]
    pub pid: IdOrStr<'a>,
    /// Thread id: an integer, or a label such as `"stream 7"`.
    #[serde(borrow, default)]
    pub tid: IdOrStr<'a>,
    /// Start, µs, as number text.
    #[serde(borrow)]
    pub ts: Option<RawText<'a>>,
    /// Duration, µs, as number text (complete events).
    #[serde(borrow)]
    pub dur: Option<RawText<'a>>,
    /// Instant scope: `g` global, `p` process, `t` thread.
    #[serde(borrow, rename = "s")]
    pub scope: Option<CowStr<'a>>,
    /// Event arguments.
    #[serde(borrow)]
    pub args: Option<RawArgs<'a>>,
}

/// A JSON value's text exactly as written (what serde_json's `RawValue`
/// captures, but constructible as an owned copy too). Borrowed from the
/// input, owned in the copies [`Event::to_raw`](super::event::Event::to_raw)
/// makes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RawText<'a>(pub Cow<'a, str>);

impl RawText<'_> {
    /// The text.
    pub fn get(&self) -> &str {
        &self.0
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for RawText<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        <&'a RawValue>::deserialize(d).map(|v| RawText(Cow::Borrowed(v.get())))
    }
}

/// A string borrowed from the input when it has no escapes.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CowStr<'a>(pub Cow<'a, str>);

impl std::ops::Deref for CowStr<'_> {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for CowStr<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = CowStr<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(CowStr(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(CowStr(Cow::Owned(v.to_owned())))
            }
        }
        d.deserialize_str(V)
    }
}

/// A `pid`/`tid`: Kineto writes integers, labels (`"Spans"`, `"stream 7"`)
/// and, in 2021 traces, integers as strings (`"25738"`).
#[derive(Clone, Debug, Default, PartialEq)]
pub enum IdOrStr<'a> {
    /// Absent or of an unusable type.
    #[default]
    Missing,
    /// A number.
    Int(i64),
    /// A label.
    Str(Cow<'a, str>),
}

impl<'de: 'a, 'a> Deserialize<'de> for IdOrStr<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(Loose).map(|v| match v {
            Scalar::Int(i) => IdOrStr::Int(i),
            Scalar::Float(f) if f.fract() == 0.0 && f.abs() < 9.0e15 => IdOrStr::Int(f as i64),
            Scalar::Str(s) => IdOrStr::Str(s),
            _ => IdOrStr::Missing,
        })
    }
}

/// An integer that may be written as a number, an integral float, a decimal
/// string or a `0x` hex string (ROCm's `"stream": "0x0"`); anything else
/// reads as absent.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct LooseInt(pub Option<i64>);

impl<'de> Deserialize<'de> for LooseInt {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(Loose).map(|v| LooseInt(v.as_int()))
    }
}

/// Any JSON value reduced to what the importer can use.
enum Scalar<'a> {
    Int(i64),
    Float(f64),
    Str(Cow<'a, str>),
    Dims([u32; 3]),
    Other,
}

impl Scalar<'_> {
    fn as_int(&self) -> Option<i64> {
        match self {
            Scalar::Int(i) => Some(*i),
            Scalar::Float(f) if f.fract() == 0.0 && f.abs() < 9.0e15 => Some(*f as i64),
            Scalar::Str(s) => parse_int_text(s),
            _ => None,
        }
    }

    fn as_f64(&self) -> Option<f64> {
        match self {
            Scalar::Int(i) => Some(*i as f64),
            Scalar::Float(f) => Some(*f),
            _ => None,
        }
    }
}

/// `"123"`, `"-4"`, `"0x1f"` → the integer.
pub fn parse_int_text(s: &str) -> Option<i64> {
    let s = s.trim();
    match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(hex) => i64::from_str_radix(hex, 16).ok(),
        None => s.parse().ok(),
    }
}

/// A visitor that accepts every JSON value and never fails on type.
struct Loose;

impl<'de> Visitor<'de> for Loose {
    type Value = Scalar<'de>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any value")
    }
    fn visit_i64<E>(self, v: i64) -> Result<Self::Value, E> {
        Ok(Scalar::Int(v))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Self::Value, E> {
        Ok(i64::try_from(v).map_or(Scalar::Other, Scalar::Int))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Self::Value, E> {
        Ok(Scalar::Float(v))
    }
    fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
        Ok(Scalar::Other)
    }
    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(Scalar::Str(Cow::Borrowed(v)))
    }
    fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Scalar::Str(Cow::Owned(v.to_owned())))
    }
    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(Scalar::Other)
    }
    fn visit_none<E>(self) -> Result<Self::Value, E> {
        Ok(Scalar::Other)
    }
    /// Arrays are only ever used as launch dimensions: keep the first three
    /// integers.
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut dims = [0u32; 3];
        let mut i = 0;
        while let Some(v) = seq.next_element::<LooseInt>()? {
            if let (Some(slot), Some(n)) = (dims.get_mut(i), v.0) {
                *slot = u32::try_from(n).unwrap_or(0);
            }
            i += 1;
        }
        Ok(Scalar::Dims(dims))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(Scalar::Other)
    }
}

/// Kernel launch dimensions `[x, y, z]`; missing or odd entries read as 0,
/// and a value that is not an array reads as absent.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Dims3(pub Option<[u32; 3]>);

impl<'de> Deserialize<'de> for Dims3 {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(Loose).map(|v| match v {
            Scalar::Dims(dims) => Dims3(Some(dims)),
            _ => Dims3(None),
        })
    }
}

/// The `args` of an event: only the keys the importer uses are kept.
#[derive(Debug, Default, PartialEq)]
pub struct RawArgs<'a> {
    /// `External id` (`external id` in 2021 traces): links ops, calls and GPU work.
    pub external_id: Option<i64>,
    /// `correlation`: links a runtime call and the GPU work it launched.
    pub correlation: Option<i64>,
    /// `device`: GPU index of GPU work.
    pub device: Option<i64>,
    /// `stream`: CUDA/HIP stream of GPU work.
    pub stream: Option<i64>,
    /// `bytes` moved or set by a copy or memset.
    pub bytes: Option<i64>,
    /// `size`: the bytes an older ROCm tracer gives on a copy call.
    pub size: Option<i64>,
    /// `grid` of a kernel launch.
    pub grid: Option<[u32; 3]>,
    /// `block` of a kernel launch.
    pub block: Option<[u32; 3]>,
    /// `registers per thread` of a kernel.
    pub registers: Option<i64>,
    /// `shared memory` per block of a kernel, bytes.
    pub shared_mem: Option<i64>,
    /// `Sequence number` of an autograd op.
    pub sequence: Option<i64>,
    /// `est. achieved occupancy %` of a kernel (a number; else absent).
    pub occupancy: Option<f64>,
    /// `Input Dims` as written.
    pub input_dims: Option<RawText<'a>>,
    /// `name`: the value of `process_name` / `thread_name` metadata.
    pub name: Option<CowStr<'a>>,
    /// `kind`: ROCm's copy direction (`"HtoD"`).
    pub kind: Option<CowStr<'a>>,
    /// `Collective name` of a collective (`allreduce`).
    pub collective_name: Option<CowStr<'a>>,
    /// `Process Group Name` of a collective.
    pub group: Option<CowStr<'a>>,
    /// `Process Group Description`.
    pub group_desc: Option<CowStr<'a>>,
    /// `Process Group Ranks`, as the string PyTorch writes (`"[0, 1]"`).
    pub group_ranks: Option<CowStr<'a>>,
    /// `Group size`.
    pub group_size: Option<i64>,
    /// `Seq` (`seq`): the collective's sequence number in its group.
    pub seq: Option<i64>,
    /// The first other numeric argument: a counter's value (`ph: C`).
    pub first_number: Option<f64>,
}

impl<'de: 'a, 'a> Deserialize<'de> for RawArgs<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(ArgsVisitor)
    }
}

struct ArgsVisitor;

impl<'de> Visitor<'de> for ArgsVisitor {
    type Value = RawArgs<'de>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an args object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RawArgs<'de>, A::Error> {
        let mut a = RawArgs::default();
        while let Some(key) = map.next_key::<CowStr<'de>>()? {
            let int = |v: LooseInt| v.0;
            match &*key {
                "External id" | "external id" => a.external_id = int(map.next_value()?),
                "correlation" => a.correlation = int(map.next_value()?),
                "device" => a.device = int(map.next_value()?),
                "stream" => a.stream = int(map.next_value()?),
                "bytes" => a.bytes = int(map.next_value()?),
                // Also a counter's value when it comes first.
                "size" => {
                    let v = map.next_value::<Scalar>()?;
                    a.size = v.as_int();
                    if a.first_number.is_none() {
                        a.first_number = v.as_f64();
                    }
                }
                "grid" => a.grid = map.next_value::<Dims3>()?.0,
                "block" => a.block = map.next_value::<Dims3>()?.0,
                "registers per thread" => a.registers = int(map.next_value()?),
                "shared memory" => a.shared_mem = int(map.next_value()?),
                "Sequence number" => a.sequence = int(map.next_value()?),
                "est. achieved occupancy %" => a.occupancy = map.next_value::<Scalar>()?.as_f64(),
                "Input Dims" => a.input_dims = Some(map.next_value()?),
                "name" => a.name = string(map.next_value::<Scalar>()?),
                "kind" => a.kind = string(map.next_value::<Scalar>()?),
                "Collective name" => a.collective_name = string(map.next_value::<Scalar>()?),
                "Process Group Name" => a.group = string(map.next_value::<Scalar>()?),
                "Process Group Description" => a.group_desc = string(map.next_value::<Scalar>()?),
                "Process Group Ranks" => a.group_ranks = string(map.next_value::<Scalar>()?),
                "Group size" => a.group_size = int(map.next_value()?),
                "Seq" | "seq" => a.seq = int(map.next_value()?),
                _ if a.first_number.is_none() => a.first_number = map.next_value::<Scalar>()?.as_f64(),
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(a)
    }
}

fn string(v: Scalar<'_>) -> Option<CowStr<'_>> {
    match v {
        Scalar::Str(s) => Some(CowStr(s)),
        _ => None,
    }
}

impl<'de> Deserialize<'de> for Scalar<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(Loose)
    }
}

/// One entry of the top-level `deviceProperties` (or the 2021
/// `computeProperties`) array.
#[derive(Deserialize, Default)]
#[serde(default)]
pub struct RawDevice {
    /// GPU index.
    pub id: LooseInt,
    /// Marketing name.
    pub name: Option<String>,
    /// Global memory, bytes.
    #[serde(rename = "totalGlobalMem")]
    pub total_global_mem: LooseInt,
    /// Compute capability major (`major` in 2021 traces).
    #[serde(rename = "computeMajor", alias = "major")]
    pub compute_major: LooseInt,
    /// Compute capability minor (`minor` in 2021 traces).
    #[serde(rename = "computeMinor", alias = "minor")]
    pub compute_minor: LooseInt,
    /// Number of SMs (`multiProcessorCount` in 2021 traces).
    #[serde(rename = "numSms", alias = "multiProcessorCount")]
    pub num_sms: LooseInt,
}

/// The top-level `distributedInfo` object.
#[derive(Deserialize, Default)]
#[serde(default)]
pub struct RawDistributedInfo {
    /// This process's rank.
    pub rank: LooseInt,
    /// Number of ranks.
    pub world_size: LooseInt,
}

//! The top level of a trace file: an object with `traceEvents` and header
//! keys (`deviceProperties`, `distributedInfo`, ...), or a bare event array
//! (the Trace Event Format's "JSON Array Format").
//!
//! Header values are small and parsed with serde; `traceEvents` goes to
//! [`events`](super::events). `baseTimeNanoseconds` and `displayTimeUnit` are
//! read past on purpose: `ts`/`dur` are always µs, and the origin stays in
//! the source's own clock (traces/README.md).

use super::convert::{Converter, Seen};
use super::error::KinetoError;
use super::events::{parse_events, ArrayEnd, EventsError, Parsed, Pass};
use super::scan::{read_member_key, skip_value, skip_ws, ScanError, MAX_DEPTH};
use super::wire::{RawDevice, RawDistributedInfo};
use crate::trace::{Device, TraceBuilder};

/// What the header keys said.
#[derive(Default)]
pub(super) struct Header {
    devices: Vec<RawDevice>,
    distributed: Option<RawDistributedInfo>,
    bad_keys: Vec<&'static str>,
}

/// How far a document was read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reach {
    /// Events read from `traceEvents` (complete ones, skipped or not).
    pub events: usize,
    /// The data ended early: inside `traceEvents` (`Some(true)`: the event
    /// being written was dropped) or after it (`Some(false)`).
    pub cut: Option<bool>,
    /// The event limit stopped the reading.
    pub limited: bool,
    /// Just after the top-level value, when it was read to its end.
    pub end: usize,
    /// The rows seen, kept or not.
    pub seen: Seen,
}

/// Parses a whole (decompressed) trace into a builder, not yet finished.
/// A document cut after some events is read as far as it goes (see
/// [`Reach`]); one cut before any event is [`KinetoError::Truncated`].
pub fn read_document(
    buf: &[u8],
    file: &str,
    threads: usize,
    pass: &Pass<'_>,
) -> Result<(TraceBuilder, Reach), KinetoError> {
    let p = skip_ws(buf, skip_bom(buf));
    let err = Errors { file, len: buf.len() };
    let (conv, header, reach) = match buf.get(p) {
        None => return Err(KinetoError::Empty { file: file.into() }),
        Some(b'{') => read_object(buf, p + 1, threads, pass, &err)?,
        Some(b'[') => {
            let parsed = parse_events(buf, p + 1, threads, pass).map_err(|e| err.events(e))?;
            let reach = reach_of(&parsed);
            (parsed.into_conv(pass), Header::default(), reach)
        }
        Some(&b) => return Err(err.not_json(format!("it starts with {:?}", char::from(b)))),
    };
    if reach.cut.is_some() && reach.events == 0 {
        return Err(err.truncated());
    }
    if reach.cut.is_none() && !reach.limited {
        let end = skip_ws(buf, reach.end);
        if end < buf.len() {
            return Err(err.not_json(format!(
                "unexpected data after the end of the trace, at byte offset {end}"
            )));
        }
    }
    let (mut builder, seen) = conv.into_parts();
    apply_header(&mut builder, header);
    Ok((builder, Reach { seen, ..reach }))
}

fn reach_of(parsed: &Parsed) -> Reach {
    Reach {
        events: parsed.events,
        cut: matches!(parsed.end, ArrayEnd::Truncated { .. }).then_some(true),
        limited: parsed.end == ArrayEnd::Limit,
        end: match parsed.end {
            ArrayEnd::Closed(p) => p,
            _ => 0,
        },
        seen: Seen::default(),
    }
}

pub(super) fn skip_bom(buf: &[u8]) -> usize {
    if buf.starts_with(&[0xEF, 0xBB, 0xBF]) {
        3
    } else {
        0
    }
}

/// Why a file with a second `traceEvents` array is refused (by this reader
/// and the streamed one).
pub(super) const TWO_EVENT_ARRAYS: &str =
    "the top-level object has \"traceEvents\" twice (files joined or damaged?)";

/// Walks the members of the top-level object that opens before `p`.
fn read_object(
    buf: &[u8],
    mut p: usize,
    threads: usize,
    pass: &Pass<'_>,
    err: &Errors<'_>,
) -> Result<(Converter, Header, Reach), KinetoError> {
    let mut header = Header::default();
    let mut events: Option<(Converter, Reach)> = None;
    p = skip_ws(buf, p);
    if buf.get(p) == Some(&b'}') {
        return Err(err.not_a_trace("the top-level object is empty"));
    }
    // The end of the data after the events were read is a cut trailer: the
    // events stand, the trace is read as far as it goes.
    let cut_after_events = |events: Option<(Converter, Reach)>, header: Header| match events {
        Some((conv, reach)) => Ok((
            conv,
            header,
            Reach {
                cut: Some(false),
                ..reach
            },
        )),
        None => Err(err.truncated()),
    };
    loop {
        let m = match read_member_key(buf, p) {
            Ok(m) => m,
            Err(ScanError::Eof) => return cut_after_events(events, header),
            Err(e) => return Err(err.scan(e, buf)),
        };
        let value_end = if m.key == b"traceEvents" {
            // A second array would replace the first, but a time window
            // has already dropped rows measured from the first array's
            // events: no reading of such a file is right, so none is made.
            if events.is_some() {
                return Err(err.not_a_trace(TWO_EVENT_ARRAYS));
            }
            if buf[m.value_start] != b'[' {
                return Err(err.not_a_trace("\"traceEvents\" is not an array"));
            }
            let parsed = parse_events(buf, m.value_start + 1, threads, pass).map_err(|e| err.events(e))?;
            let reach = reach_of(&parsed);
            let ArrayEnd::Closed(end) = parsed.end else {
                return Ok((parsed.into_conv(pass), header, reach));
            };
            events = Some((parsed.into_conv(pass), reach));
            end
        } else {
            match skip_value(buf, m.value_start) {
                Ok(end) => {
                    header.read(m.key, &buf[m.value_start..end]);
                    end
                }
                Err(ScanError::Eof) => return cut_after_events(events, header),
                Err(e) => return Err(err.scan(e, buf)),
            }
        };
        p = skip_ws(buf, value_end);
        match buf.get(p) {
            Some(b',') => p += 1,
            Some(b'}') => break,
            None => return cut_after_events(events, header),
            Some(_) => return Err(err.scan(ScanError::Unexpected(p), buf)),
        }
    }
    let (conv, reach) = events.ok_or_else(|| err.not_a_trace("there is no \"traceEvents\" key"))?;
    Ok((conv, header, Reach { end: p + 1, ..reach }))
}

impl Header {
    /// Reads one header member; a malformed value is noted, not fatal.
    pub(super) fn read(&mut self, key: &[u8], value: &[u8]) {
        match key {
            b"deviceProperties" | b"computeProperties" => match serde_json::from_slice(value) {
                Ok(devices) => self.devices = devices,
                Err(_) => self.bad_keys.push("bad_device_properties"),
            },
            b"distributedInfo" => match serde_json::from_slice(value) {
                Ok(info) => self.distributed = Some(info),
                Err(_) => self.bad_keys.push("bad_distributed_info"),
            },
            _ => {}
        }
    }
}

pub(super) fn apply_header(b: &mut TraceBuilder, h: Header) {
    for d in h.devices {
        let Some(id) = d.id.0.and_then(|i| u32::try_from(i).ok()) else {
            b.diagnostics.note("device_without_id", || {
                "a deviceProperties entry has no id".into()
            });
            continue;
        };
        let u = |v: Option<i64>| v.and_then(|v| u32::try_from(v).ok()).unwrap_or(0);
        let name = b.intern(d.name.as_deref().unwrap_or(""));
        b.device(Device {
            id,
            name,
            sm_count: u(d.num_sms.0),
            memory_bytes: d
                .total_global_mem
                .0
                .and_then(|v| u64::try_from(v).ok())
                .unwrap_or(0),
            compute_capability: (u(d.compute_major.0), u(d.compute_minor.0)),
        });
    }
    if let Some(info) = h.distributed {
        b.meta.rank = info.rank.0;
        b.meta.world_size = info.world_size.0;
    }
    for reason in h.bad_keys {
        b.diagnostics
            .note(reason, || format!("{reason}: the header value was ignored"));
    }
}

/// Builds file-level errors for one file.
pub(super) struct Errors<'f> {
    /// The file as the user named it.
    pub file: &'f str,
    /// Where its data ends (a cut's offset).
    pub len: usize,
}

impl Errors<'_> {
    pub(super) fn not_json(&self, reason: String) -> KinetoError {
        KinetoError::NotJson {
            file: self.file.into(),
            reason,
        }
    }

    pub(super) fn not_a_trace(&self, reason: &str) -> KinetoError {
        KinetoError::NotATrace {
            file: self.file.into(),
            reason: reason.into(),
        }
    }

    pub(super) fn truncated(&self) -> KinetoError {
        KinetoError::Truncated {
            file: self.file.into(),
            offset: self.len,
        }
    }

    pub(super) fn too_deep(&self, offset: usize) -> KinetoError {
        KinetoError::TooDeep {
            file: self.file.into(),
            offset,
            limit: MAX_DEPTH,
        }
    }

    pub(super) fn scan(&self, e: ScanError, buf: &[u8]) -> KinetoError {
        match e {
            ScanError::Eof => self.truncated(),
            ScanError::TooDeep(o) => self.too_deep(o),
            ScanError::Unexpected(o) => self.not_json(format!(
                "unexpected {:?} at byte offset {o} of the top-level object",
                buf.get(o).map_or(' ', |&b| char::from(b))
            )),
        }
    }

    pub(super) fn events(&self, e: EventsError) -> KinetoError {
        match e {
            EventsError::Eof => self.truncated(),
            EventsError::TooDeep(o) => self.too_deep(o),
            EventsError::Syntax {
                offset,
                event,
                reason,
            } => KinetoError::Syntax {
                file: self.file.into(),
                offset,
                event,
                reason,
            },
        }
    }
}

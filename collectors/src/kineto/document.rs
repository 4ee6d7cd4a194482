//! The top level of a trace file: an object with `traceEvents` and header
//! keys (`deviceProperties`, `distributedInfo`, ...), or a bare event array
//! (the Trace Event Format's "JSON Array Format").
//!
//! Header values are small and parsed with serde; `traceEvents` goes to
//! [`events`](super::events). `baseTimeNanoseconds` and `displayTimeUnit` are
//! read past on purpose: `ts`/`dur` are always µs, and the origin stays in
//! the source's own clock (traces/README.md).

use super::convert::Converter;
use super::error::KinetoError;
use super::events::{parse_events, EventsError};
use super::scan::{read_member_key, skip_value, skip_ws, ScanError, MAX_DEPTH};
use super::wire::{RawDevice, RawDistributedInfo};
use crate::trace::{Device, TraceBuilder};
use indicatif::ProgressBar;

/// What the header keys said.
#[derive(Default)]
struct Header {
    devices: Vec<RawDevice>,
    distributed: Option<RawDistributedInfo>,
    bad_keys: Vec<&'static str>,
}

/// Parses a whole (decompressed) trace into a builder, not yet finished.
pub fn read_document(
    buf: &[u8],
    file: &str,
    threads: usize,
    progress: Option<&ProgressBar>,
) -> Result<TraceBuilder, KinetoError> {
    let p = skip_ws(buf, skip_bom(buf));
    let err = Errors { file, len: buf.len() };
    let (conv, header) = match buf.get(p) {
        None => return Err(KinetoError::Empty { file: file.into() }),
        Some(b'{') => read_object(buf, p + 1, threads, progress, &err)?,
        Some(b'[') => {
            let (conv, _) = parse_events(buf, p + 1, threads, progress).map_err(|e| err.events(e))?;
            (conv, Header::default())
        }
        Some(&b) => return Err(err.not_json(format!("it starts with {:?}", char::from(b)))),
    };
    let mut builder = conv.into_builder();
    apply_header(&mut builder, header);
    Ok(builder)
}

fn skip_bom(buf: &[u8]) -> usize {
    if buf.starts_with(&[0xEF, 0xBB, 0xBF]) {
        3
    } else {
        0
    }
}

/// Walks the members of the top-level object that opens before `p`.
fn read_object<'a>(
    buf: &'a [u8],
    mut p: usize,
    threads: usize,
    progress: Option<&ProgressBar>,
    err: &Errors<'_>,
) -> Result<(Converter<'a>, Header), KinetoError> {
    let mut header = Header::default();
    let mut events = None;
    p = skip_ws(buf, p);
    if buf.get(p) == Some(&b'}') {
        return Err(err.not_a_trace("the top-level object is empty"));
    }
    loop {
        let m = read_member_key(buf, p).map_err(|e| err.scan(e, buf))?;
        let value_end = if m.key == b"traceEvents" {
            if buf[m.value_start] != b'[' {
                return Err(err.not_a_trace("\"traceEvents\" is not an array"));
            }
            let (conv, end) =
                parse_events(buf, m.value_start + 1, threads, progress).map_err(|e| err.events(e))?;
            events = Some(conv);
            end
        } else {
            let end = skip_value(buf, m.value_start).map_err(|e| err.scan(e, buf))?;
            header.read(m.key, &buf[m.value_start..end]);
            end
        };
        p = skip_ws(buf, value_end);
        match buf.get(p) {
            Some(b',') => p += 1,
            Some(b'}') => break,
            None => return Err(err.truncated()),
            Some(_) => return Err(err.scan(ScanError::Unexpected(p), buf)),
        }
    }
    let conv = events.ok_or_else(|| err.not_a_trace("there is no \"traceEvents\" key"))?;
    Ok((conv, header))
}

impl Header {
    /// Reads one header member; a malformed value is noted, not fatal.
    fn read(&mut self, key: &[u8], value: &[u8]) {
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

fn apply_header(b: &mut TraceBuilder, h: Header) {
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
struct Errors<'f> {
    file: &'f str,
    len: usize,
}

impl Errors<'_> {
    fn not_json(&self, reason: String) -> KinetoError {
        KinetoError::NotJson {
            file: self.file.into(),
            reason,
        }
    }

    fn not_a_trace(&self, reason: &str) -> KinetoError {
        KinetoError::NotATrace {
            file: self.file.into(),
            reason: reason.into(),
        }
    }

    fn truncated(&self) -> KinetoError {
        KinetoError::Truncated {
            file: self.file.into(),
            offset: self.len,
        }
    }

    fn too_deep(&self, offset: usize) -> KinetoError {
        KinetoError::TooDeep {
            file: self.file.into(),
            offset,
            limit: MAX_DEPTH,
        }
    }

    fn scan(&self, e: ScanError, buf: &[u8]) -> KinetoError {
        match e {
            ScanError::Eof => self.truncated(),
            ScanError::TooDeep(o) => self.too_deep(o),
            ScanError::Unexpected(o) => self.not_json(format!(
                "unexpected {:?} at byte offset {o} of the top-level object",
                buf.get(o).map_or(' ', |&b| char::from(b))
            )),
        }
    }

    fn events(&self, e: EventsError) -> KinetoError {
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

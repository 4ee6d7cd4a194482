//! Parses the `traceEvents` array in parallel chunks.
//!
//! ```text
//! [{ev 0}, {ev 1}, ... {ev i}, {ev i+1}, ... {ev j}, {ev j+1}, ... ]
//!  ^ chunk 0            guess 1 ^              guess 2 ^
//! ```
//!
//! The array is cut at guessed event starts ([`guess_event_start`]); each
//! chunk is parsed on its own thread, event by event, and stops at the first
//! event boundary at or past the next guess. A guess is confirmed when the
//! chunk before it stops exactly there: that chunk began at a true boundary
//! and walked whole events, so where it stops is a true boundary too. A
//! guess fooled by text inside a string is never confirmed; its chunk is
//! discarded and the range re-parsed from the true boundary (rare: it needs
//! `, {"` inside a string at the cut).

use super::convert::{Converter, Keep};
use super::event::Event;
use super::fast;
use super::scan::{guess_event_start, skip_value, skip_ws, ScanError};
use super::wire::RawEvent;
use indicatif::ProgressBar;
use serde_json::error::Category;
use std::sync::atomic::AtomicI64;
use std::sync::Arc;

/// Below this many bytes the array is parsed on one thread.
const MIN_PARALLEL_BYTES: usize = 4 << 20;

/// About this many bytes per chunk: many more chunks than threads, taken
/// by whichever thread is free, so a thread that drew a costly stretch of
/// the file (GPU events, long stacks) does not leave the others idle at
/// the end.
const CHUNK_BYTES: usize = 16 << 20;

/// At most this many chunks per thread.
const MAX_CHUNKS_PER_THREAD: usize = 4;

/// Progress is reported every this many bytes.
const PROGRESS_STEP: usize = 8 << 20;

/// The longest event read. Profilers write events of a few hundred bytes
/// (a few KB with long shapes or stacks); one of this size is damage or an
/// attack, and a streamed read would have to buffer all of it.
pub const MAX_EVENT_BYTES: usize = 256 << 20;

/// Why an event over [`MAX_EVENT_BYTES`] is refused.
pub fn too_long() -> String {
    format!(
        "the event is over {} MiB long, and no profiler writes events that big",
        MAX_EVENT_BYTES >> 20
    )
}

/// Read bytes are handed to [`Pass::release`] every this many bytes (and
/// at the end of each chunk): what is resident of a mapped file stays
/// within a few of these per thread.
const RELEASE_STEP: usize = 4 << 20;

/// How one pass over the events reads them.
#[derive(Clone, Copy, Default)]
pub struct Pass<'p> {
    /// Stop after this many events (then on one thread, in order).
    pub limit: Option<usize>,
    /// Which rows to keep.
    pub keep: Keep,
    /// Shared by the pass's converters, see `Converter::with_keep`.
    pub shared_earliest: Option<&'p Arc<AtomicI64>>,
    /// Advanced by the bytes read.
    pub progress: Option<&'p ProgressBar>,
    /// Told, as the parse moves on, about byte ranges `[from, to)` of the
    /// buffer it has read past, so a mapped file's pages can be given back
    /// (what is still borrowed from there is read again from the file).
    pub release: Option<&'p (dyn Fn(usize, usize) + Sync)>,
}

/// Why the events could not be parsed; offsets are into the whole buffer.
#[derive(Debug, PartialEq)]
pub enum EventsError {
    /// The data ends inside the array.
    Eof,
    /// Nesting deeper than the limit at this offset.
    TooDeep(usize),
    /// Malformed JSON in event `event` (index in the array) at `offset`.
    Syntax {
        /// Byte offset of the problem.
        offset: usize,
        /// Index of the event holding it.
        event: usize,
        /// The parser's message.
        reason: String,
    },
}

/// Where a chunk stopped.
enum End {
    /// At the event starting here (at or past the chunk's stop).
    Boundary(usize),
    /// After the array's closing `]`.
    Closed(usize),
    /// The event limit was reached before the array's end.
    Limit,
    /// The data ends inside the array, see [`ArrayEnd::Truncated`].
    Cut { resume: usize, separator: bool },
}

/// One parsed chunk: its rows, how many events it read, where it ended.
struct Chunk {
    start: usize,
    conv: Converter,
    events: usize,
    end: Result<End, EventsError>,
}

/// How the events array ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArrayEnd {
    /// At its closing `]`; the position just after it.
    Closed(usize),
    /// The data ends inside the array (a cut file): every complete event
    /// before the cut was read, the one cut off was dropped. A streamed
    /// read goes on at `resume` once it has more data: at an event (or the
    /// closing `]`), or at the `,` after one when `separator`.
    Truncated {
        /// Where the unread data starts.
        resume: usize,
        /// `resume` is just after a whole event.
        separator: bool,
    },
    /// The caller's event limit was reached; the rest was not read.
    Limit,
}

/// The events read: rows, how many events, how the array ended.
pub struct Parsed {
    /// The rows, a converter per stretch of the array in file order, each
    /// with the index of its first event.
    pub parts: Vec<(usize, Converter)>,
    /// Events read (complete ones, skipped or not).
    pub events: usize,
    /// How the array ended.
    pub end: ArrayEnd,
}

impl Parsed {
    /// All the rows in one converter.
    pub fn into_conv(self, pass: &Pass<'_>) -> Converter {
        Converter::concat(self.parts, pass.keep, pass.shared_earliest.cloned())
    }
}

/// Parses the array whose contents start at `body` (just after `[`), as
/// `pass` says. A file cut inside the array is not an error: what was read
/// is returned with [`ArrayEnd::Truncated`].
pub fn parse_events(buf: &[u8], body: usize, threads: usize, pass: &Pass<'_>) -> Result<Parsed, EventsError> {
    let threads = if pass.limit.is_some() { 1 } else { threads };
    let starts = chunk_starts(buf, body, threads);
    let mut parsed = parse_all(buf, &starts, pass, threads);
    let mut parts: Vec<(usize, Converter)> = Vec::new();
    let mut base = 0;
    let mut pos = body;
    loop {
        let chunk = take_chunk_at(&mut parsed, pos)
            .unwrap_or_else(|| parse_chunk(buf, pos, starts.iter().copied().find(|&s| s > pos), pass));
        let kind = match chunk.end {
            Ok(End::Boundary(p)) => {
                parts.push((base, chunk.conv));
                base += chunk.events;
                pos = p;
                continue;
            }
            Ok(End::Closed(p)) => ArrayEnd::Closed(p),
            Ok(End::Limit) => ArrayEnd::Limit,
            Ok(End::Cut { resume, separator }) => ArrayEnd::Truncated { resume, separator },
            Err(e) => return Err(with_base(e, base)),
        };
        parts.push((base, chunk.conv));
        return Ok(Parsed {
            parts,
            events: base + chunk.events,
            end: kind,
        });
    }
}

/// Where chunks begin: the array body, then guessed event starts, evenly
/// spaced, about [`CHUNK_BYTES`] apart and at least one per thread.
fn chunk_starts(buf: &[u8], body: usize, threads: usize) -> Vec<usize> {
    let len = buf.len().saturating_sub(body);
    let threads = threads.max(1);
    let n = if len < MIN_PARALLEL_BYTES || threads == 1 {
        1
    } else {
        (len / CHUNK_BYTES).clamp(threads, threads * MAX_CHUNKS_PER_THREAD)
    };
    let mut starts = vec![body];
    for k in 1..n {
        let from = body + len / n * k;
        match guess_event_start(buf, from, buf.len()) {
            Some(g) if g > *starts.last().unwrap_or(&body) => starts.push(g),
            _ => {}
        }
    }
    starts
}

/// Parses every chunk on `threads` threads (this one included), each
/// taking the next chunk not yet taken.
fn parse_all(buf: &[u8], starts: &[usize], pass: &Pass<'_>, threads: usize) -> Vec<Option<Chunk>> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Mutex;
    let next = AtomicUsize::new(0);
    let done: Vec<Mutex<Option<Chunk>>> = starts.iter().map(|_| Mutex::new(None)).collect();
    let work = || loop {
        let k = next.fetch_add(1, Ordering::Relaxed);
        let Some(&start) = starts.get(k) else { return };
        let chunk = parse_chunk(buf, start, starts.get(k + 1).copied(), pass);
        *done[k].lock().unwrap_or_else(|e| e.into_inner()) = Some(chunk);
    };
    std::thread::scope(|s| {
        let helpers: Vec<_> = (1..threads.min(starts.len())).map(|_| s.spawn(work)).collect();
        work();
        for h in helpers {
            h.join().unwrap_or_else(|p| std::panic::resume_unwind(p));
        }
    });
    done.into_iter()
        .map(|m| m.into_inner().unwrap_or_else(|e| e.into_inner()))
        .collect()
}

/// The parsed chunk that starts exactly at `pos`, if any.
fn take_chunk_at(parsed: &mut [Option<Chunk>], pos: usize) -> Option<Chunk> {
    parsed
        .iter_mut()
        .find(|c| c.as_ref().is_some_and(|c| c.start == pos))?
        .take()
}

fn with_base(e: EventsError, base: usize) -> EventsError {
    match e {
        EventsError::Syntax {
            offset,
            event,
            reason,
        } => EventsError::Syntax {
            offset,
            event: event + base,
            reason,
        },
        e => e,
    }
}

/// Parses events from `start` until the first event boundary at or past
/// `stop` (or the array's end when `stop` is `None`), or `pass.limit` events.
fn parse_chunk(buf: &[u8], start: usize, stop: Option<usize>, pass: &Pass<'_>) -> Chunk {
    let mut conv = Converter::with_keep(pass.keep, pass.shared_earliest.cloned());
    let mut ev = Event::default();
    let mut p = start;
    let mut events = 0;
    let mut reported = start;
    let mut released = start;
    let end = loop {
        p = skip_ws(buf, p);
        if stop.is_some_and(|s| p >= s) {
            break Ok(End::Boundary(p));
        }
        if let Some(pb) = pass.progress.filter(|_| p - reported >= PROGRESS_STEP) {
            pb.inc((p - reported) as u64);
            reported = p;
        }
        if let Some(release) = pass.release.filter(|_| p - released >= RELEASE_STEP) {
            release(released, p);
            released = p;
        }
        match buf.get(p) {
            None => {
                break Ok(End::Cut {
                    resume: p,
                    separator: false,
                })
            }
            // An empty array, or a trailing comma: lenient like browsers.
            Some(b']') => break Ok(End::Closed(p + 1)),
            Some(_) => {}
        }
        if pass.limit.is_some_and(|l| events >= l) {
            break Ok(End::Limit);
        }
        match parse_one(buf, p, events, &mut conv, &mut ev) {
            Ok(e) => p = skip_ws(buf, e),
            Err(EventsError::Eof) => {
                break Ok(End::Cut {
                    resume: p,
                    separator: false,
                })
            }
            Err(e) => break Err(e),
        }
        events += 1;
        match buf.get(p) {
            Some(b',') => p += 1,
            Some(b']') => break Ok(End::Closed(p + 1)),
            None => {
                break Ok(End::Cut {
                    resume: p,
                    separator: true,
                })
            }
            Some(&b) => {
                break Err(syntax(
                    p,
                    events,
                    format!("expected ',' or ']' after an event, found {:?}", b as char),
                ))
            }
        }
    };
    if let Some(pb) = pass.progress {
        pb.inc(p.saturating_sub(reported) as u64);
    }
    // Nothing read is borrowed past the event that read it.
    if let Some(release) = pass.release {
        release(released, p.min(buf.len()));
    }
    Chunk {
        start,
        conv,
        events,
        end,
    }
}

/// Parses the event at `p` into `conv`; returns the position after it.
/// The hand-written fast path (`fast.rs`) reads what it can vouch for; serde
/// reads the rest, and reports errors. An event of the wrong shape (a field of an impossible type) is skipped
/// and counted; malformed JSON is an error.
fn parse_one<'a>(
    buf: &'a [u8],
    p: usize,
    index: usize,
    conv: &mut Converter,
    ev: &mut Event<'a>,
) -> Result<usize, EventsError> {
    if let Some(end) = fast::event(buf, p, ev) {
        if end - p > MAX_EVENT_BYTES {
            return Err(syntax(p, index, too_long()));
        }
        conv.event(index, ev);
        return Ok(end);
    }
    let mut stream = serde_json::Deserializer::from_slice(&buf[p..]).into_iter::<RawEvent<'a>>();
    match stream.next() {
        Some(Ok(ev)) => {
            let end = p + stream.byte_offset();
            if open_ended(buf, end) {
                return Err(EventsError::Eof);
            }
            if end - p > MAX_EVENT_BYTES {
                return Err(syntax(p, index, too_long()));
            }
            conv.event(index, &ev.view());
            Ok(end)
        }
        None => Err(EventsError::Eof),
        Some(Err(e)) => match e.classify() {
            Category::Data => {
                // Noted only once the event is known to be whole: a cut
                // event is read again when a stream has more data.
                let end = skip_value(buf, p).map_err(|s| match s {
                    ScanError::Eof => EventsError::Eof,
                    ScanError::TooDeep(o) => EventsError::TooDeep(o),
                    ScanError::Unexpected(o) => syntax(o, index, "unexpected character".into()),
                })?;
                if open_ended(buf, end) {
                    return Err(EventsError::Eof);
                }
                if end - p > MAX_EVENT_BYTES {
                    return Err(syntax(p, index, too_long()));
                }
                conv.defect(index, "wrong_type", || e.to_string());
                Ok(end)
            }
            Category::Eof => Err(EventsError::Eof),
            Category::Syntax | Category::Io => {
                let offset = p + offset_in(&buf[p..], e.line(), e.column());
                if e.to_string().starts_with("recursion limit exceeded") {
                    Err(EventsError::TooDeep(offset))
                } else if cut_off(buf, p, offset) {
                    Err(EventsError::Eof)
                } else if let Some(end) = bad_string(buf, p, &e) {
                    // A name with bytes that are not UTF-8 (or a broken
                    // escape) spoils that event, not the file.
                    conv.defect(index, "bad_string", || e.to_string());
                    Ok(end)
                } else {
                    Err(syntax(offset, index, e.to_string()))
                }
            }
        },
    }
}

/// Whether a value that ends at `end` may go on past the data: a number or
/// a literal that runs to the last byte (`12` may be the start of `123`).
/// Objects, arrays and strings end with their own closing byte.
pub fn open_ended(buf: &[u8], end: usize) -> bool {
    end == buf.len() && end > 0 && !matches!(buf[end - 1], b'}' | b']' | b'"')
}

/// Whether a syntax error at `offset` in the event at `p` is the file
/// ending mid-event rather than damage: the error is in the last few bytes
/// (a UTF-8 character or a `\u` escape cut in half reads as invalid, not as
/// the end) and the event never closes.
fn cut_off(buf: &[u8], p: usize, offset: usize) -> bool {
    offset + 6 >= buf.len() && skip_value(buf, p) == Err(ScanError::Eof)
}

/// The end of the event at `p` when serde's error `e` is about the text of
/// a string (invalid UTF-8, a control character, a bad escape) and the event
/// is otherwise whole.
fn bad_string(buf: &[u8], p: usize, e: &serde_json::Error) -> Option<usize> {
    const STRING_ERRORS: &[&str] = &[
        "invalid unicode code point",
        "control character",
        "lone leading surrogate",
        "invalid escape",
        "unexpected end of hex escape",
    ];
    let msg = e.to_string();
    if !STRING_ERRORS.iter().any(|m| msg.starts_with(m)) {
        return None;
    }
    skip_value(buf, p).ok()
}

fn syntax(offset: usize, event: usize, reason: String) -> EventsError {
    EventsError::Syntax {
        offset,
        event,
        reason,
    }
}

/// Byte offset in `s` of serde_json's 1-based `line` and `column`.
fn offset_in(s: &[u8], line: usize, column: usize) -> usize {
    let line_start = if line <= 1 {
        0
    } else {
        memchr::memchr_iter(b'\n', s)
            .nth(line - 2)
            .map_or(s.len(), |i| i + 1)
    };
    (line_start + column.saturating_sub(1)).min(s.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn events_json(n: usize, name: impl Fn(usize) -> String) -> String {
        let evs: Vec<String> = (0..n)
            .map(|i| {
                format!(
                    r#"{{"ph": "X", "cat": "cpu_op", "name": {}, "pid": 1, "tid": 1, "ts": {}, "dur": 1}}"#,
                    serde_json::to_string(&name(i)).unwrap(),
                    i * 10
                )
            })
            .collect();
        format!("[{}]", evs.join(", "))
    }

    fn limit(n: usize) -> Pass<'static> {
        Pass {
            limit: Some(n),
            ..Pass::default()
        }
    }

    fn names_of(conv: Converter) -> Vec<String> {
        let tr = conv.into_builder().finish();
        (0..tr.cpu_ops.len())
            .map(|i| tr.strings.get(tr.cpu_ops.name[i]).to_string())
            .collect()
    }

    #[test]
    fn chunks_agree_with_one_pass_even_when_strings_look_like_boundaries() {
        // Names full of `}, {"` and escaped quotes, so many guesses are fooled.
        let json = events_json(40_000, |i| format!("op{i}\"}}, {{\"ph\": [{{ \\\"x"));
        let buf = json.as_bytes();
        let one = parse_events(buf, 1, 1, &Pass::default()).unwrap();
        assert_eq!(one.end, ArrayEnd::Closed(buf.len()));
        let many = parse_events(buf, 1, 7, &Pass::default()).unwrap();
        assert_eq!(many.end, ArrayEnd::Closed(buf.len()));
        assert_eq!(many.events, 40_000);
        assert!(chunk_starts(buf, 1, 7).len() > 1);
        let (a, b) = (
            names_of(one.into_conv(&Pass::default())),
            names_of(many.into_conv(&Pass::default())),
        );
        assert_eq!(a.len(), 40_000);
        assert_eq!(a, b);
    }

    #[test]
    fn guessed_starts_inside_strings_are_rejected() {
        // Every name is one big fake boundary: `, {"ph": ...` inside a string.
        let fake = format!(", {{\"{}", "y".repeat(300));
        let json = events_json(20_000, |i| format!("{i}{fake}"));
        let buf = json.as_bytes();
        let parsed = parse_events(buf, 1, 5, &Pass::default()).unwrap();
        assert_eq!(parsed.end, ArrayEnd::Closed(buf.len()));
        let names = names_of(parsed.into_conv(&Pass::default()));
        assert_eq!(names.len(), 20_000);
        assert_eq!(names[19_999], format!("19999{fake}"));
    }

    #[test]
    fn reports_truncation_and_syntax_errors_with_event_index() {
        let json = events_json(5, |i| format!("n{i}"));
        let cut = &json.as_bytes()[..json.len() - 30];
        let partial = parse_events(cut, 1, 1, &Pass::default()).unwrap();
        assert_eq!(
            (partial.end, partial.events),
            (
                ArrayEnd::Truncated {
                    resume: cut.iter().rposition(|&b| b == b'{').unwrap(),
                    separator: false
                },
                4
            )
        );
        assert_eq!(names_of(partial.into_conv(&Pass::default())).len(), 4);
        // Cut inside a multi-byte character: still a cut, not damage.
        let utf8 = events_json(3, |i| format!("n{i}é"));
        let at = utf8.rfind('é').unwrap() + 1;
        let partial = parse_events(&utf8.as_bytes()[..at], 1, 1, &Pass::default()).unwrap();
        assert_eq!(
            (partial.end, partial.events),
            (
                ArrayEnd::Truncated {
                    resume: utf8.rfind('{').unwrap(),
                    separator: false
                },
                2
            )
        );
        // A limit stops reading, on as many threads as asked.
        let limited = parse_events(json.as_bytes(), 1, 4, &limit(2)).unwrap();
        assert_eq!((limited.end, limited.events), (ArrayEnd::Limit, 2));
        let all = parse_events(json.as_bytes(), 1, 4, &limit(5)).unwrap();
        assert_eq!((all.end, all.events), (ArrayEnd::Closed(json.len()), 5));
        let bad = json.replacen(
            r#""pid": 1, "tid": 1, "ts": 30"#,
            r#""pid": 1 "tid": 1, "ts": 30"#,
            1,
        );
        match parse_events(bad.as_bytes(), 1, 1, &Pass::default()) {
            Err(EventsError::Syntax { event, offset, .. }) => {
                assert_eq!(event, 3);
                assert_eq!(&bad.as_bytes()[offset..offset + 5], b"\"tid\"");
            }
            Err(other) => panic!("{other:?}"),
            Ok(_) => panic!("a syntax error was accepted"),
        }
        assert!(parse_events(b"[]", 1, 1, &Pass::default()).is_ok());
    }

    #[test]
    fn wrong_types_skip_the_event_only() {
        let json = r#"[{"ph": "X", "name": 5, "ts": 1, "dur": 1}, 7, {"ph": "X", "cat": "cpu_op", "name": "ok", "pid": 1, "tid": 1, "ts": 1, "dur": 1}]"#;
        let parsed = parse_events(json.as_bytes(), 1, 1, &Pass::default()).unwrap();
        let tr = parsed.into_conv(&Pass::default()).into_builder().finish();
        assert_eq!(tr.cpu_ops.len(), 1);
        assert_eq!(tr.diagnostics.counts["wrong_type"], 2);
        assert!(tr.diagnostics.examples[0].starts_with("event #0:"));
        assert!(tr.diagnostics.examples[1].starts_with("event #1:"));
    }
}

//! Streamed reading of a trace whose JSON is produced as it is read (a
//! gzip file): the JSON passes through a buffer of a few tens of MB and is
//! never held whole, so memory is the tables plus that buffer (plus the
//! largest single value, which must fit in it to be parsed).
//!
//! ```text
//! decoder ──▶ [ read past │ event │ event │ … │ event, cut…]   buffer
//!               dropped      parsed in parallel (events.rs)  ▲ resume here
//! ```
//!
//! The walk is [`document`](super::document)'s, on a window of the data:
//! whenever a value or an event runs past the buffer's end, what is read
//! is dropped from the front, more data is appended, and the same position
//! is tried again (an event bigger than the buffer doubles the next read).
//! Rows are owned by the builders as they are made, and each buffer's
//! builders are joined to the rows before them once it is parsed; the few
//! borrowed things kept for the end (`B`/`E` halves, thread names) are
//! copied ([`Converter::detach`]) before the buffer is reused. The inflated
//! data comes in blocks that go back to the inflating thread once read.

use super::convert::Converter;
use super::document::{apply_header, skip_bom, Errors, Header, Reach, TWO_EVENT_ARRAYS};
use super::error::KinetoError;
use super::events::{open_ended, parse_events, too_long, ArrayEnd, EventsError, Pass, MAX_EVENT_BYTES};
use super::scan::{read_member_key, skip_value, skip_ws, ScanError};
use crate::trace::TraceBuilder;
use std::io::{ErrorKind, Read};

/// Bytes read from the decoder at a time.
const READ_SIZE: usize = 32 << 20;

/// A window on the data: `buf` holds the bytes from absolute offset `base`.
struct Window<R> {
    reader: R,
    buf: Vec<u8>,
    base: usize,
    /// The reader has no more data.
    eof: bool,
    /// It ended early (the reader said `UnexpectedEof`: a gzip stream cut
    /// short).
    cut: bool,
    /// How much the next read asks for.
    want: usize,
    /// How much a read asks for normally.
    read_size: usize,
}

impl<R: Read> Window<R> {
    fn new(reader: R, read_size: usize) -> Self {
        Window {
            reader,
            buf: Vec::new(),
            base: 0,
            eof: false,
            cut: false,
            want: read_size,
            read_size,
        }
    }

    /// Absolute offset of the end of the data so far.
    fn end(&self) -> usize {
        self.base + self.buf.len()
    }

    /// The byte at absolute offset `at`, if read.
    fn at(&self, at: usize) -> Option<u8> {
        self.buf.get(at - self.base).copied()
    }

    /// Drops the bytes before absolute offset `upto`.
    fn consume(&mut self, upto: usize) {
        let n = (upto - self.base).min(self.buf.len());
        self.buf.drain(..n);
        self.base += n;
    }

    /// Appends up to `want` more bytes; `false` when there are none.
    fn more(&mut self) -> Result<bool, std::io::Error> {
        if self.eof {
            return Ok(false);
        }
        let old = self.buf.len();
        // `read_to_end` grows the buffer with the data (a small file does not
        // cost a zeroed `want`) and keeps what it read before an error.
        let want = self.want as u64;
        match (&mut self.reader).take(want).read_to_end(&mut self.buf) {
            Ok(_) => {}
            Err(e) if e.kind() == ErrorKind::UnexpectedEof => {
                self.eof = true;
                self.cut = true;
            }
            Err(e) => return Err(e),
        }
        if ((self.buf.len() - old) as u64) < want {
            self.eof = true;
        }
        self.want = self.read_size;
        Ok(self.buf.len() > old)
    }

    /// The next read asks for as much again as is buffered: one value
    /// did not fit, so growing by a constant would re-parse it many times.
    fn grow(&mut self) {
        self.want = self.want.max(self.buf.len());
    }

    /// The first non-whitespace offset at or after `p`, reading (and
    /// dropping whitespace) as needed; [`Window::end`] at the end of data.
    fn skip_ws(&mut self, p: usize) -> Result<usize, std::io::Error> {
        let mut p = p;
        loop {
            let q = skip_ws(&self.buf, p - self.base) + self.base;
            if q < self.end() {
                return Ok(q);
            }
            p = q;
            self.consume(p);
            if !self.more()? {
                return Ok(p);
            }
        }
    }
}

/// What a streamed read gives: the rows, how far it got, the JSON's length
/// and whether the data ended early.
pub struct Streamed {
    /// The rows, not yet finished.
    pub builder: TraceBuilder,
    /// How far the document was read.
    pub reach: Reach,
    /// Bytes of JSON read.
    pub len: usize,
    /// The reader ended early (a cut gzip stream).
    pub cut: bool,
}

/// Reads a whole document from `reader`, as
/// [`read_document`](super::document::read_document) reads a buffer.
/// `io_error` turns a read error into the file's error (for gzip: corrupt
/// data).
pub fn read_stream<R: Read + Send>(
    reader: R,
    file: &str,
    threads: usize,
    pass: &Pass<'_>,
    io_error: &dyn Fn(std::io::Error) -> KinetoError,
) -> Result<Streamed, KinetoError> {
    // The reader (gzip's inflation: one core's work, as long as the parse
    // or longer) runs on a thread of its own, a few blocks ahead of the
    // parse that reads what it gave.
    std::thread::scope(|s| {
        let (pipe, producer) = Pipe::spawn(s, reader);
        let read = read_in_pieces(pipe, READ_SIZE, file, threads, pass, io_error);
        // The pipe is dropped by now, so the reader thread stops at its
        // next block. Joined here rather than by the scope, which counts a
        // thread done once its closure returns, before the thread itself
        // has exited (its thread-locals and handle freed after the import
        // returned: a leak to a checker that looks right then).
        if let Err(p) = producer.join() {
            std::panic::resume_unwind(p);
        }
        read
    })
}

/// Bytes the reader thread hands over at a time.
const BLOCK: usize = 4 << 20;

/// Blocks the reader thread may read ahead of the parse.
const BLOCKS_AHEAD: usize = 4;

/// What the reader thread hands over: data, or the error that ended it.
type Block = std::io::Result<Vec<u8>>;

/// Reads `reader` to its end (or first error) in blocks of [`BLOCK`]
/// bytes, sending each; stops early when the parse no longer listens.
/// Blocks the parse has read come `back` and are filled again: with a new
/// block for every 4 MiB, freed on the parse's thread, `.json.gz` peaked
/// 7-37 MiB higher in the analysis than it does now (bench/README.md).
/// Returns how many blocks it allocated: at most `BLOCKS_AHEAD + 2` (those
/// queued, the one the parse reads, this one).
fn produce<R: Read>(
    mut reader: R,
    tx: &std::sync::mpsc::SyncSender<Block>,
    back: &std::sync::mpsc::Receiver<Vec<u8>>,
) -> usize {
    let mut allocated = 0;
    loop {
        let mut block = back.try_recv().unwrap_or_else(|_| {
            allocated += 1;
            Vec::with_capacity(BLOCK)
        });
        block.clear();
        let got = (&mut reader).take(BLOCK as u64).read_to_end(&mut block);
        let (last, error) = match got {
            Ok(n) => (n < BLOCK, None),
            Err(e) => (true, Some(e)),
        };
        if !block.is_empty() && tx.send(Ok(block)).is_err() {
            return allocated;
        }
        if let Some(e) = error {
            let _ = tx.send(Err(e));
        }
        if last {
            return allocated;
        }
    }
}

/// The reading end of [`produce`]: the blocks, in order, then the error
/// that ended them (if any) at the same place in the data.
struct Pipe {
    blocks: std::sync::mpsc::Receiver<Block>,
    block: Vec<u8>,
    at: usize,
    /// Where a block goes once read: back to [`produce`].
    back: std::sync::mpsc::Sender<Vec<u8>>,
}

impl Pipe {
    /// Starts [`produce`] on `reader` in a thread of `scope`; the pipe
    /// reads what it gives, and the thread ends with the number of blocks
    /// it allocated.
    fn spawn<'s, R: Read + Send + 's>(
        scope: &'s std::thread::Scope<'s, '_>,
        reader: R,
    ) -> (Pipe, std::thread::ScopedJoinHandle<'s, usize>) {
        let (tx, blocks) = std::sync::mpsc::sync_channel(BLOCKS_AHEAD);
        let (back, back_rx) = std::sync::mpsc::channel();
        let producer = scope.spawn(move || produce(reader, &tx, &back_rx));
        let pipe = Pipe {
            blocks,
            block: Vec::new(),
            at: 0,
            back,
        };
        (pipe, producer)
    }
}

impl Read for Pipe {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        while self.at == self.block.len() {
            // The block read goes back before the next is taken, so the
            // reader thread never fills a new one while this one waits.
            // (The pipe starts with an empty `Vec`, not a block; a block
            // is refused only once the reader thread is done.)
            let read = std::mem::take(&mut self.block);
            if read.capacity() > 0 {
                let _ = self.back.send(read);
            }
            self.at = 0;
            match self.blocks.recv() {
                Ok(Ok(block)) => self.block = block,
                Ok(Err(e)) => return Err(e),
                // The reader thread is done: the end of the data.
                Err(_) => return Ok(0),
            }
        }
        let n = out.len().min(self.block.len() - self.at);
        out[..n].copy_from_slice(&self.block[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

/// [`read_stream`], reading `read_size` bytes at a time.
fn read_in_pieces<R: Read>(
    reader: R,
    read_size: usize,
    file: &str,
    threads: usize,
    pass: &Pass<'_>,
    io_error: &dyn Fn(std::io::Error) -> KinetoError,
) -> Result<Streamed, KinetoError> {
    let mut w = Window::new(reader, read_size);
    match read_top(&mut w, file, threads, pass, io_error) {
        Ok((builder, reach)) => Ok(Streamed {
            builder,
            reach,
            len: w.end(),
            cut: w.cut,
        }),
        // A cut stream holds the start of a file, never a file of its own:
        // the JSON's own "empty" or "truncated" say less than "it is cut".
        Err(KinetoError::Empty { .. } | KinetoError::Truncated { .. }) if w.cut => Err(KinetoError::Gzip {
            file: file.to_string(),
            reason: format!(
                "the data ends early, after {} bytes of JSON and before any event",
                w.end()
            ),
        }),
        // A JSON error in data that is itself corrupt (a flipped bit that
        // inflates to garbage before the checksum says so) is the data's
        // fault: the rest is read to find out.
        Err(e) => Err(drain(&mut w, io_error).err().unwrap_or(e)),
    }
}

fn drain<R: Read>(
    w: &mut Window<R>,
    io_error: &dyn Fn(std::io::Error) -> KinetoError,
) -> Result<(), KinetoError> {
    loop {
        w.consume(w.end());
        if !w.more().map_err(io_error)? {
            return Ok(());
        }
    }
}

/// Walks the top-level value.
fn read_top<R: Read>(
    w: &mut Window<R>,
    file: &str,
    threads: usize,
    pass: &Pass<'_>,
    io_error: &dyn Fn(std::io::Error) -> KinetoError,
) -> Result<(TraceBuilder, Reach), KinetoError> {
    let io = |e| io_error(e);
    while w.buf.len() < 3 && w.more().map_err(io)? {}
    let p = w.skip_ws(skip_bom(&w.buf)).map_err(io)?;
    let err = |w: &Window<R>| Errors { file, len: w.end() };
    let (conv, header, reach) = match w.at(p) {
        None => return Err(KinetoError::Empty { file: file.into() }),
        Some(b'{') => read_object(w, p + 1, file, threads, pass, io_error)?,
        Some(b'[') => {
            let (conv, reach) = read_events(w, p + 1, file, threads, pass, io_error)?;
            (conv, Header::default(), reach)
        }
        Some(b) => return Err(err(w).not_json(format!("it starts with {:?}", char::from(b)))),
    };
    if reach.cut.is_some() && reach.events == 0 {
        return Err(err(w).truncated());
    }
    if reach.cut.is_none() && !reach.limited {
        let end = w.skip_ws(reach.end).map_err(io)?;
        if end < w.end() {
            return Err(err(w).not_json(format!(
                "unexpected data after the end of the trace, at byte offset {end}"
            )));
        }
    }
    let (mut builder, seen) = conv.into_parts();
    apply_header(&mut builder, header);
    Ok((builder, Reach { seen, ..reach }))
}

/// The members of the top-level object opened before `p`.
fn read_object<R: Read>(
    w: &mut Window<R>,
    mut p: usize,
    file: &str,
    threads: usize,
    pass: &Pass<'_>,
    io_error: &dyn Fn(std::io::Error) -> KinetoError,
) -> Result<(Converter, Header, Reach), KinetoError> {
    let io = |e| io_error(e);
    let err = |w: &Window<R>| Errors { file, len: w.end() };
    let mut header = Header::default();
    let mut events: Option<(Converter, Reach)> = None;
    p = w.skip_ws(p).map_err(io)?;
    if w.at(p) == Some(b'}') {
        return Err(err(w).not_a_trace("the top-level object is empty"));
    }
    let cut_after_events = |w: &Window<R>, events: Option<(Converter, Reach)>, header| match events {
        Some((conv, reach)) => Ok((
            conv,
            header,
            Reach {
                cut: Some(false),
                ..reach
            },
        )),
        None => Err(err(w).truncated()),
    };
    loop {
        w.consume(p);
        let member = read_member_key(&w.buf, p - w.base)
            .map(|m| (m.key == b"traceEvents", m.key.to_vec(), m.value_start + w.base));
        let (is_events, key, value_start) = match member {
            Ok(m) => m,
            Err(ScanError::Eof) if w.more().map_err(io)? => continue,
            Err(ScanError::Eof) => return cut_after_events(w, events, header),
            Err(e) => return Err(scan_error(&err(w), e, w)),
        };
        let value_end = if is_events {
            // As in `document::read_object`: a window has already dropped
            // rows measured from the first array.
            if events.is_some() {
                return Err(err(w).not_a_trace(TWO_EVENT_ARRAYS));
            }
            if w.at(value_start) != Some(b'[') {
                return Err(err(w).not_a_trace("\"traceEvents\" is not an array"));
            }
            let (conv, reach) = read_events(w, value_start + 1, file, threads, pass, io_error)?;
            if reach.cut.is_some() || reach.limited {
                return Ok((conv, header, reach));
            }
            let end = reach.end;
            events = Some((conv, reach));
            end
        } else {
            match skip_value(&w.buf, value_start - w.base) {
                Ok(end) if !open_ended(&w.buf, end) || w.eof => {
                    header.read(&key, &w.buf[value_start - w.base..end]);
                    end + w.base
                }
                Ok(_) | Err(ScanError::Eof) => {
                    if w.end() - value_start > MAX_EVENT_BYTES {
                        return Err(err(w).not_json(format!(
                            "the value of the top-level key at byte offset {value_start} is over {} MiB long, \
                             and no profiler writes one that big",
                            MAX_EVENT_BYTES >> 20
                        )));
                    }
                    w.grow();
                    if w.more().map_err(io)? {
                        continue;
                    }
                    return cut_after_events(w, events, header);
                }
                Err(e) => return Err(scan_error(&err(w), e, w)),
            }
        };
        p = w.skip_ws(value_end).map_err(io)?;
        match w.at(p) {
            Some(b',') => p += 1,
            Some(b'}') => break,
            None => return cut_after_events(w, events, header),
            Some(_) => return Err(scan_error(&err(w), ScanError::Unexpected(p - w.base), w)),
        }
    }
    let (conv, reach) = events.ok_or_else(|| err(w).not_a_trace("there is no \"traceEvents\" key"))?;
    Ok((conv, header, Reach { end: p + 1, ..reach }))
}

/// A scan error at an offset into the buffer, told with file offsets.
fn scan_error<R>(err: &Errors<'_>, e: ScanError, w: &Window<R>) -> KinetoError {
    match e {
        ScanError::Eof => err.truncated(),
        ScanError::TooDeep(o) => err.too_deep(o + w.base),
        ScanError::Unexpected(o) => err.not_json(format!(
            "unexpected {:?} at byte offset {} of the top-level object",
            w.buf.get(o).map_or(' ', |&b| char::from(b)),
            o + w.base
        )),
    }
}

/// The events of the array whose contents start at `body`, a buffer at a
/// time; `reach.end` is just after its `]`.
fn read_events<R: Read>(
    w: &mut Window<R>,
    body: usize,
    file: &str,
    threads: usize,
    pass: &Pass<'_>,
    io_error: &dyn Fn(std::io::Error) -> KinetoError,
) -> Result<(Converter, Reach), KinetoError> {
    let io = |e| io_error(e);
    let mut parts: Vec<(usize, Converter)> = Vec::new();
    let mut events = 0usize;
    let mut pos = body;
    let mut separator = false;
    let done = |parts: Vec<(usize, Converter)>, events, cut, limited, end| {
        let conv = Converter::concat(parts, pass.keep, pass.shared_earliest.cloned());
        let reach = Reach {
            events,
            cut,
            limited,
            end,
            seen: Default::default(),
        };
        Ok((conv, reach))
    };
    loop {
        w.consume(pos);
        if separator {
            pos = w.skip_ws(pos).map_err(io)?;
            match w.at(pos) {
                Some(b',') => {
                    pos += 1;
                    separator = false;
                    continue;
                }
                Some(b']') => return done(parts, events, None, false, pos + 1),
                None => return done(parts, events, Some(true), false, 0),
                Some(b) => {
                    return Err(Errors { file, len: w.end() }.events(EventsError::Syntax {
                        offset: pos,
                        event: events,
                        reason: format!("expected ',' or ']' after an event, found {:?}", b as char),
                    }))
                }
            }
        }
        if w.end() - pos < w.read_size / 2 && !w.eof {
            w.more().map_err(io)?;
        }
        let this = Pass {
            limit: pass.limit.map(|l| l.saturating_sub(events)),
            progress: None,
            release: None,
            ..*pass
        };
        let base = w.base;
        let parsed = parse_events(&w.buf, pos - base, threads, &this)
            .map_err(|e| Errors { file, len: w.end() }.events(shifted(e, base, events)))?;
        let (n, end) = (parsed.events, parsed.end);
        parts.extend(
            parsed
                .parts
                .into_iter()
                .map(|(first, conv)| (events + first, conv)),
        );
        events += n;
        // The window's parts joined to what came before at once: kept
        // apart to the end (two or more per 32 MiB read), the parts' rows,
        // freed only then, left nccl x62's `.json.gz` peaking 20 MiB above
        // its `.json` in the analysis (bench/README.md).
        if parts.len() > 1 {
            let joined = Converter::concat(
                std::mem::take(&mut parts),
                pass.keep,
                pass.shared_earliest.cloned(),
            );
            parts.push((0, joined));
        }
        match end {
            ArrayEnd::Closed(p) => return done(parts, events, None, false, p + base),
            ArrayEnd::Limit => return done(parts, events, None, true, 0),
            ArrayEnd::Truncated { .. } if w.eof => return done(parts, events, Some(true), false, 0),
            ArrayEnd::Truncated {
                resume,
                separator: sep,
            } => {
                if n == 0 && resume + base == pos {
                    // One event fills the buffer: read on, unless it is
                    // longer than any event can be.
                    if w.end() - pos > MAX_EVENT_BYTES {
                        return Err(Errors { file, len: w.end() }.events(EventsError::Syntax {
                            offset: pos,
                            event: events,
                            reason: too_long(),
                        }));
                    }
                    w.grow();
                }
                pos = resume + base;
                separator = sep;
                w.consume(pos);
                w.more().map_err(io)?;
            }
        }
    }
}

/// An error from a buffer starting at file offset `base`, whose first event
/// is number `first`, with file offsets and event numbers.
fn shifted(e: EventsError, base: usize, first: usize) -> EventsError {
    match e {
        EventsError::Syntax {
            offset,
            event,
            reason,
        } => EventsError::Syntax {
            offset: offset + base,
            event: event + first,
            reason,
        },
        EventsError::TooDeep(o) => EventsError::TooDeep(o + base),
        EventsError::Eof => EventsError::Eof,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kineto::document::read_document;

    fn summary(b: TraceBuilder, reach: &Reach) -> String {
        let t = b.finish();
        let names: Vec<&str> = (0..t.cpu_ops.len())
            .map(|i| t.strings.get(t.cpu_ops.name[i]))
            .collect();
        format!(
            "events {} cut {:?} limited {} ops {:?} gpu {} devices {} diag {:?} origin {}",
            reach.events,
            reach.cut,
            reach.limited,
            names,
            t.gpu.len(),
            t.devices.len(),
            t.diagnostics.counts,
            t.meta.origin_ns
        )
    }

    /// The reader thread's blocks read back as the reader itself: every
    /// byte in order, then its error at the same place.
    #[test]
    fn the_pipe_gives_the_readers_bytes_then_its_error() {
        struct Failing {
            left: usize,
            kind: ErrorKind,
        }
        impl Read for Failing {
            fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
                if self.left == 0 {
                    return Err(std::io::Error::new(self.kind, "cut"));
                }
                let n = out.len().min(self.left).min(777_777);
                for (i, b) in out[..n].iter_mut().enumerate() {
                    *b = ((self.left - i) % 251) as u8;
                }
                self.left -= n;
                Ok(n)
            }
        }
        for (len, kind) in [
            (10_000_000, ErrorKind::UnexpectedEof),
            (3 * BLOCK, ErrorKind::InvalidData),
            (0, ErrorKind::Other),
        ] {
            let mut direct = Vec::new();
            let want = Failing { left: len, kind }
                .read_to_end(&mut direct)
                .unwrap_err()
                .kind();
            std::thread::scope(|s| {
                let mut piped = Vec::new();
                let (mut pipe, _) = Pipe::spawn(s, Failing { left: len, kind });
                let got = pipe.read_to_end(&mut piped).unwrap_err().kind();
                assert_eq!((got, piped.len()), (want, direct.len()));
                assert!(piped == direct);
            });
        }
        // A reader that ends cleanly ends the pipe cleanly; a long one
        // passes through the same few blocks, each refilled only once read
        // (no byte of a block is overwritten before the parse has it).
        for blocks in [2, 3 * BLOCKS_AHEAD] {
            let data: Vec<u8> = (0..BLOCK * blocks + 5).map(|i| (i % 251) as u8).collect();
            std::thread::scope(|s| {
                let (mut pipe, producer) = Pipe::spawn(s, &data[..]);
                let mut piped = Vec::new();
                let mut buf = vec![0; 100_003];
                loop {
                    let n = pipe.read(&mut buf).unwrap();
                    if n == 0 {
                        break;
                    }
                    piped.extend_from_slice(&buf[..n]);
                }
                assert!(piped == data);
                let allocated = producer.join().unwrap();
                assert!(allocated <= BLOCKS_AHEAD + 2, "{allocated} blocks for {blocks}");
            });
        }
    }

    /// The streamed read agrees with the buffered one however the data is
    /// cut into reads, including reads of one byte.
    #[test]
    fn streamed_equals_buffered_at_any_read_size() {
        let json = br#"{"deviceProperties": [{"id": 0, "name": "G"}], "traceEvents": [
            {"ph": "X", "cat": "cpu_op", "name": "a\u00e9", "pid": 1, "tid": 1, "ts": 10, "dur": 5},
            7, {"ph": "B", "name": "outer", "pid": 1, "tid": "main", "ts": 11},
            {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 12.5, "dur": 1, "args": {"device": 0, "correlation": 3}},
            {"ph": "E", "pid": 1, "tid": "main", "ts": 20}, 123,
            {"ph": "M", "name": "thread_name", "pid": 1, "tid": "main", "args": {"name": "Main"}}
        ], "traceName": "x", "big": [1, 2, {"a": "]}"}]}"#;
        let (b, reach) = read_document(json, "t", 1, &Pass::default()).unwrap();
        let want = summary(b, &reach);
        for step in [1, 2, 3, 7, 64, 4096] {
            let s = read_in_pieces(&json[..], step, "t", 2, &Pass::default(), &|e| KinetoError::Io {
                file: "t".into(),
                source: e,
            })
            .unwrap();
            assert_eq!(s.len, json.len());
            assert_eq!(summary(s.builder, &s.reach), want, "reads of {step} bytes");
        }
    }
}

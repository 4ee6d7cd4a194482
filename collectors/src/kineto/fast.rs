//! A fast path for reading one event: a hand-written reader for the shape
//! Kineto writes, several times faster than serde_json's derive on big
//! traces.
//!
//! It fills an [`Event`] with exactly what serde would read (the
//! `#[derive(Deserialize)]` of [`RawEvent`](super::wire::RawEvent) and its
//! visitors in `wire.rs`, seen through [`RawEvent::view`]) or gives up with
//! `None`, and the caller then parses the event with serde, which also
//! produces the error messages. So it only has to be *strict*: it gives up
//! on anything it does not fully check, such as escapes (`\`) or control
//! bytes in strings, non-integer numbers where serde would convert them,
//! nesting deeper than [`MAX_DEPTH`], a repeated field, or any syntax error.
//! Strings it keeps are UTF-8 validated as serde's are; JSON it skips is
//! checked for syntax as serde's `IgnoredAny` does.
//!
//! Where the time goes: strings are scanned 16 bytes at a time (the
//! closing quote, any escape or control byte, and whether all is ASCII, in
//! one pass), keys are told apart by length first, integers are read while
//! their grammar is checked, and the event is written in place.

use super::event::{Args, Event, Id};
use super::wire::parse_int_text;

/// Nesting the fast path handles; deeper values go to serde (whose own
/// limit is 128).
const MAX_DEPTH: usize = 64;

/// Reads the event whose `{` is at `start` into `ev`; returns the position
/// just after its `}`, or `None` to let serde read it (`ev` is then
/// unspecified).
pub fn event<'a>(buf: &'a [u8], start: usize, ev: &mut Event<'a>) -> Option<usize> {
    let mut r = Reader { b: buf, p: start };
    r.event(ev)?;
    Some(r.p)
}

struct Reader<'a> {
    b: &'a [u8],
    p: usize,
}

/// What a value starts with.
#[derive(Clone, Copy, PartialEq)]
enum Lead {
    Str,
    Num,
    Null,
    Bool,
    Object,
    Array,
}

/// The keys of an event the importer reads.
#[derive(Clone, Copy, PartialEq)]
enum Field {
    Ph,
    Cat,
    Name,
    Pid,
    Tid,
    Ts,
    Dur,
    Scope,
    Args,
    Other,
}

impl Field {
    fn of(key: &[u8]) -> Field {
        match key.len() {
            1 if key == b"s" => Field::Scope,
            2 if key == b"ph" => Field::Ph,
            2 if key == b"ts" => Field::Ts,
            3 => match key {
                b"cat" => Field::Cat,
                b"pid" => Field::Pid,
                b"tid" => Field::Tid,
                b"dur" => Field::Dur,
                _ => Field::Other,
            },
            4 => match key {
                b"name" => Field::Name,
                b"args" => Field::Args,
                _ => Field::Other,
            },
            _ => Field::Other,
        }
    }

    /// A bit per field, to refuse a repeated one as serde's derive does.
    fn bit(self) -> u16 {
        match self {
            Field::Other => 0,
            f => 1 << f as u16,
        }
    }
}

/// The `args` keys the importer reads.
#[derive(Clone, Copy, PartialEq)]
enum Arg {
    ExternalId,
    Correlation,
    Device,
    Stream,
    Bytes,
    Grid,
    Block,
    Registers,
    SharedMem,
    Sequence,
    Occupancy,
    InputDims,
    Name,
    Kind,
    Size,
    CollectiveName,
    Group,
    GroupDesc,
    GroupRanks,
    GroupSize,
    Seq,
    Other,
}

impl Arg {
    fn of(key: &[u8]) -> Arg {
        match key.len() {
            3 => match key {
                b"Seq" | b"seq" => Arg::Seq,
                _ => Arg::Other,
            },
            4 => match key {
                b"grid" => Arg::Grid,
                b"name" => Arg::Name,
                b"kind" => Arg::Kind,
                b"size" => Arg::Size,
                _ => Arg::Other,
            },
            5 => match key {
                b"bytes" => Arg::Bytes,
                b"block" => Arg::Block,
                _ => Arg::Other,
            },
            6 => match key {
                b"device" => Arg::Device,
                b"stream" => Arg::Stream,
                _ => Arg::Other,
            },
            10 => match key {
                b"Input Dims" => Arg::InputDims,
                b"Group size" => Arg::GroupSize,
                _ => Arg::Other,
            },
            11 => match key {
                b"External id" | b"external id" => Arg::ExternalId,
                b"correlation" => Arg::Correlation,
                _ => Arg::Other,
            },
            13 if key == b"shared memory" => Arg::SharedMem,
            15 => match key {
                b"Sequence number" => Arg::Sequence,
                b"Collective name" => Arg::CollectiveName,
                _ => Arg::Other,
            },
            18 if key == b"Process Group Name" => Arg::Group,
            19 if key == b"Process Group Ranks" => Arg::GroupRanks,
            20 if key == b"registers per thread" => Arg::Registers,
            25 => match key {
                b"Process Group Description" => Arg::GroupDesc,
                b"est. achieved occupancy %" => Arg::Occupancy,
                _ => Arg::Other,
            },
            _ => Arg::Other,
        }
    }
}

impl<'a> Reader<'a> {
    #[inline(always)]
    fn ws(&mut self) {
        loop {
            match self.b.get(self.p) {
                // Every whitespace byte is at or below the space: most
                // calls stop at the first test.
                Some(&c) if c > b' ' => return,
                Some(b' ' | b'\n' | b'\r' | b'\t') => self.p += 1,
                _ => return,
            }
        }
    }

    /// Skips whitespace and says what the next value is.
    #[inline]
    fn lead(&mut self) -> Option<Lead> {
        self.ws();
        Some(match *self.b.get(self.p)? {
            b'"' => Lead::Str,
            b'-' | b'0'..=b'9' => Lead::Num,
            b'n' => Lead::Null,
            b't' | b'f' => Lead::Bool,
            b'{' => Lead::Object,
            b'[' => Lead::Array,
            _ => return None,
        })
    }

    #[inline]
    fn eat(&mut self, c: u8) -> Option<()> {
        self.ws();
        (self.b.get(self.p) == Some(&c)).then(|| self.p += 1)
    }

    /// The raw bytes of the string at `p` (which is `"`), without its
    /// quotes, and whether they are all ASCII; `None` on escapes, control
    /// bytes or a missing end.
    #[inline]
    fn string_bytes(&mut self) -> Option<(&'a [u8], bool)> {
        let start = self.p + 1;
        let (end, ascii) = scan_string(self.b, start)?;
        self.p = end + 1;
        Some((&self.b[start..end], ascii))
    }

    /// A string to keep: validated as UTF-8 (serde's borrowed strings are).
    #[inline]
    fn string(&mut self) -> Option<&'a str> {
        let (s, ascii) = self.string_bytes()?;
        if ascii {
            return Some(ascii_str(s));
        }
        std::str::from_utf8(s).ok()
    }

    /// A string value's text with its quotes (what `RawValue` keeps).
    fn string_raw(&mut self) -> Option<&'a str> {
        let start = self.p;
        self.string()?;
        Some(ascii_or_utf8(&self.b[start..self.p]))
    }

    /// A JSON number's text, checked against the grammar
    /// `-?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?`.
    fn number(&mut self) -> Option<&'a str> {
        let b = self.b;
        let start = self.p;
        let mut p = start;
        if b.get(p) == Some(&b'-') {
            p += 1;
        }
        match b.get(p) {
            Some(b'0') => p += 1,
            Some(b'1'..=b'9') => p = digits(b, p),
            _ => return None,
        }
        if b.get(p) == Some(&b'.') {
            let q = digits(b, p + 1);
            if q == p + 1 {
                return None;
            }
            p = q;
        }
        if let Some(b'e' | b'E') = b.get(p) {
            p += 1;
            if let Some(b'+' | b'-') = b.get(p) {
                p += 1;
            }
            let q = digits(b, p);
            if q == p {
                return None;
            }
            p = q;
        }
        self.p = p;
        Some(ascii_str(&b[start..p]))
    }

    /// An integer without fraction or exponent that surely fits an `i64`
    /// (at most 18 digits); other numbers give up.
    #[inline]
    fn int(&mut self) -> Option<i64> {
        let b = self.b;
        let mut p = self.p;
        let neg = b.get(p) == Some(&b'-');
        if neg {
            p += 1;
        }
        let first = p;
        let mut n: i64 = 0;
        match b.get(p) {
            Some(b'0') => p += 1,
            Some(b'1'..=b'9') => {
                while let Some(&d @ b'0'..=b'9') = b.get(p) {
                    n = n * 10 + i64::from(d - b'0');
                    p += 1;
                    if p - first > 18 {
                        return None;
                    }
                }
            }
            _ => return None,
        }
        if let Some(b'.' | b'e' | b'E') = b.get(p) {
            return None;
        }
        self.p = p;
        Some(if neg { -n } else { n })
    }

    #[inline]
    fn literal(&mut self) -> Option<()> {
        let rest = &self.b[self.p..];
        let n = if rest.starts_with(b"null") || rest.starts_with(b"true") {
            4
        } else if rest.starts_with(b"false") {
            5
        } else {
            return None;
        };
        self.p += n;
        Some(())
    }

    /// Skips any value, checking its syntax.
    fn skip(&mut self, depth: usize) -> Option<()> {
        match self.lead()? {
            Lead::Str => self.string_bytes().map(drop),
            Lead::Num => self.number().map(drop),
            Lead::Null | Lead::Bool => self.literal(),
            Lead::Object => {
                if depth >= MAX_DEPTH {
                    return None;
                }
                self.p += 1;
                self.members(|r, _, _| r.skip(depth + 1))
            }
            Lead::Array => {
                if depth >= MAX_DEPTH {
                    return None;
                }
                self.p += 1;
                self.ws();
                if self.b.get(self.p) == Some(&b']') {
                    self.p += 1;
                    return Some(());
                }
                loop {
                    self.skip(depth + 1)?;
                    self.ws();
                    match self.b.get(self.p)? {
                        b',' => self.p += 1,
                        b']' => {
                            self.p += 1;
                            return Some(());
                        }
                        _ => return None,
                    }
                }
            }
        }
    }

    /// Walks the members of an object whose `{` was just passed, calling
    /// `value` with each key (escape-free, and whether it is ASCII)
    /// positioned at the value.
    #[inline]
    fn members(&mut self, mut value: impl FnMut(&mut Self, &'a [u8], bool) -> Option<()>) -> Option<()> {
        self.ws();
        if self.b.get(self.p) == Some(&b'}') {
            self.p += 1;
            return Some(());
        }
        loop {
            self.ws();
            if self.b.get(self.p) != Some(&b'"') {
                return None;
            }
            let (key, ascii) = self.string_bytes()?;
            self.eat(b':')?;
            value(self, key, ascii)?;
            self.ws();
            match self.b.get(self.p)? {
                b',' => self.p += 1,
                b'}' => {
                    self.p += 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    /// `Option<CowStr>`: a string, or null.
    #[inline]
    fn opt_str(&mut self) -> Option<Option<&'a str>> {
        match self.lead()? {
            Lead::Str => Some(Some(self.string()?)),
            Lead::Null => self.literal().map(|()| None),
            _ => None,
        }
    }

    /// `IdOrStr`: an integer, a label, or (null, a boolean) missing.
    #[inline]
    fn id(&mut self) -> Option<Id<'a>> {
        match self.lead()? {
            Lead::Num => self.int().map(Id::Int),
            Lead::Str => Some(Id::Str(self.string()?)),
            Lead::Null | Lead::Bool => self.literal().map(|()| Id::Missing),
            _ => None,
        }
    }

    /// `Option<RawText>` for `ts`/`dur`: a number or a string as written;
    /// null is `None`.
    #[inline]
    fn raw_scalar(&mut self) -> Option<Option<&'a str>> {
        match self.lead()? {
            Lead::Num => self.number().map(Some),
            Lead::Str => self.string_raw().map(Some),
            Lead::Null => self.literal().map(|()| None),
            _ => None,
        }
    }

    /// `LooseInt`: an integer, an integer string (`"7"`, `"0x1f"`), else
    /// absent (null, booleans, other strings).
    #[inline]
    fn loose_int(&mut self) -> Option<Option<i64>> {
        match self.lead()? {
            Lead::Num => self.int().map(Some),
            Lead::Str => self.string().map(parse_int_text),
            Lead::Null | Lead::Bool => self.literal().map(|()| None),
            _ => None,
        }
    }

    /// `Dims3`: an array of integers (first three kept, the rest read); a
    /// string or null is absent.
    fn dims(&mut self) -> Option<Option<[u32; 3]>> {
        match self.lead()? {
            Lead::Array => {}
            Lead::Str => return self.string().map(|_| None),
            Lead::Null | Lead::Bool => return self.literal().map(|()| None),
            _ => return None,
        }
        self.p += 1;
        let mut dims = [0u32; 3];
        self.ws();
        if self.b.get(self.p) == Some(&b']') {
            self.p += 1;
            return Some(Some(dims));
        }
        let mut i = 0;
        loop {
            if self.lead()? != Lead::Num {
                return None;
            }
            let n = self.int()?;
            if let Some(slot) = dims.get_mut(i) {
                *slot = u32::try_from(n).unwrap_or(0);
            }
            i += 1;
            self.ws();
            match self.b.get(self.p)? {
                b',' => self.p += 1,
                b']' => {
                    self.p += 1;
                    return Some(Some(dims));
                }
                _ => return None,
            }
        }
    }

    /// A value read as `Scalar` and kept only if a string (`args.name`,
    /// `args.kind`).
    fn scalar_string(&mut self) -> Option<Option<&'a str>> {
        match self.lead()? {
            Lead::Str => self.string().map(Some),
            Lead::Num => self.int().map(|_| None),
            Lead::Null | Lead::Bool => self.literal().map(|()| None),
            _ => None,
        }
    }

    /// A value read as `Scalar` and kept only if a number (`as_f64`).
    #[inline]
    fn scalar_number(&mut self) -> Option<Option<f64>> {
        match self.lead()? {
            Lead::Num => self.int().map(|i| Some(i as f64)),
            Lead::Str => self.string().map(|_| None),
            Lead::Null | Lead::Bool => self.literal().map(|()| None),
            _ => None,
        }
    }

    fn args(&mut self, out: &mut Option<Args<'a>>) -> Option<()> {
        match self.lead()? {
            Lead::Object => self.p += 1,
            Lead::Null => {
                *out = None;
                return self.literal();
            }
            _ => return None,
        }
        let a = out.insert(Args::default());
        self.members(|r, key, ascii| {
            match Arg::of(key) {
                Arg::ExternalId => a.external_id = r.loose_int()?,
                Arg::Correlation => a.correlation = r.loose_int()?,
                Arg::Device => a.device = r.loose_int()?,
                Arg::Stream => a.stream = r.loose_int()?,
                Arg::Bytes => a.bytes = r.loose_int()?,
                Arg::Grid => a.grid = r.dims()?,
                Arg::Block => a.block = r.dims()?,
                Arg::Registers => a.registers = r.loose_int()?,
                Arg::SharedMem => a.shared_mem = r.loose_int()?,
                Arg::Sequence => a.sequence = r.loose_int()?,
                Arg::Occupancy => a.occupancy = r.scalar_number()?,
                Arg::InputDims => {
                    r.ws();
                    let start = r.p;
                    r.skip(1)?;
                    a.input_dims = Some(std::str::from_utf8(&r.b[start..r.p]).ok()?);
                }
                Arg::Name => a.name = r.scalar_string()?,
                Arg::Kind => a.kind = r.scalar_string()?,
                // Also a counter's value when it comes first, as an
                // unknown key's would be: read the value twice.
                Arg::Size => {
                    let at = r.p;
                    a.size = r.loose_int()?;
                    if a.first_number.is_none() {
                        r.p = at;
                        a.first_number = r.scalar_number()?;
                    }
                }
                Arg::CollectiveName => a.collective_name = r.scalar_string()?,
                Arg::Group => a.group = r.scalar_string()?,
                Arg::GroupDesc => a.group_desc = r.scalar_string()?,
                Arg::GroupRanks => a.group_ranks = r.scalar_string()?,
                Arg::GroupSize => a.group_size = r.loose_int()?,
                Arg::Seq => a.seq = r.loose_int()?,
                // Keys are matched as text, so a non-UTF-8 key is serde's.
                Arg::Other if !ascii && std::str::from_utf8(key).is_err() => return None,
                Arg::Other if a.first_number.is_none() => a.first_number = r.scalar_number()?,
                Arg::Other => r.skip(1)?,
            }
            Some(())
        })
    }

    fn event(&mut self, ev: &mut Event<'a>) -> Option<()> {
        if self.lead()? != Lead::Object {
            return None;
        }
        self.p += 1;
        *ev = Event::default();
        let mut seen = 0u16;
        self.members(|r, key, ascii| {
            let field = Field::of(key);
            match field {
                Field::Ph => ev.ph = r.opt_str()?,
                Field::Cat => ev.cat = r.opt_str()?,
                Field::Name => ev.name = r.opt_str()?,
                Field::Pid => ev.pid = r.id()?,
                Field::Tid => ev.tid = r.id()?,
                Field::Ts => ev.ts = r.raw_scalar()?,
                Field::Dur => ev.dur = r.raw_scalar()?,
                Field::Scope => ev.scope = r.opt_str()?,
                Field::Args => r.args(&mut ev.args)?,
                Field::Other if !ascii && std::str::from_utf8(key).is_err() => return None,
                Field::Other => r.skip(1)?,
            }
            // serde's derive rejects a repeated field: let it say so.
            let bit = field.bit();
            if seen & bit != 0 {
                return None;
            }
            seen |= bit;
            Some(())
        })
    }
}

/// The closing quote of the string whose text starts at `p`, and whether
/// the text before it is all ASCII; `None` at a backslash, a control byte
/// (below 0x20, invalid in JSON strings) or the end of the data.
#[inline]
fn scan_string(b: &[u8], p: usize) -> Option<(usize, bool)> {
    #[cfg(target_arch = "x86_64")]
    {
        scan_string_sse2(b, p)
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        scan_string_bytes(b, p, true)
    }
}

/// [`scan_string`] 16 bytes at a time (SSE2, which every x86-64 has), the
/// last few bytes of the data one at a time.
#[cfg(target_arch = "x86_64")]
#[inline]
fn scan_string_sse2(b: &[u8], mut p: usize) -> Option<(usize, bool)> {
    use std::arch::x86_64::*;
    let mut high = 0u32;
    while p + 16 <= b.len() {
        // SAFETY: the 16 bytes at `p` are inside `b` (checked just above);
        // SSE2 is part of the x86-64 baseline.
        let (stop, hi) = unsafe {
            let x = _mm_loadu_si128(b.as_ptr().add(p).cast::<__m128i>());
            let quote = _mm_cmpeq_epi8(x, _mm_set1_epi8(b'"' as i8));
            let slash = _mm_cmpeq_epi8(x, _mm_set1_epi8(b'\\' as i8));
            // x <= 0x1f (unsigned) exactly when min(x, 0x1f) == x.
            let control = _mm_cmpeq_epi8(_mm_min_epu8(x, _mm_set1_epi8(0x1f)), x);
            let stop = _mm_or_si128(_mm_or_si128(quote, slash), control);
            (_mm_movemask_epi8(stop) as u32, _mm_movemask_epi8(x) as u32)
        };
        if stop != 0 {
            let i = stop.trailing_zeros();
            let at = p + i as usize;
            let ascii = (high | (hi & ((1u32 << i) - 1))) == 0;
            return (b[at] == b'"').then_some((at, ascii));
        }
        high |= hi;
        p += 16;
    }
    scan_string_bytes(b, p, high == 0)
}

/// [`scan_string`] a byte at a time, from `p`, the bytes before it ASCII
/// when `ascii`.
#[inline]
fn scan_string_bytes(b: &[u8], mut p: usize, mut ascii: bool) -> Option<(usize, bool)> {
    while let Some(&c) = b.get(p) {
        match c {
            b'"' => return Some((p, ascii)),
            b'\\' | 0..=0x1f => return None,
            0x80.. => ascii = false,
            _ => {}
        }
        p += 1;
    }
    None
}

/// Text known to be ASCII (checked by the caller, or matched by the number
/// grammar) as a `str`, without validating it again.
#[inline]
fn ascii_str(s: &[u8]) -> &str {
    debug_assert!(s.is_ascii());
    // SAFETY: every caller passes bytes below 0x80, which are valid UTF-8.
    unsafe { std::str::from_utf8_unchecked(s) }
}

/// Text already validated as UTF-8 by [`Reader::string`], with its quotes.
fn ascii_or_utf8(s: &[u8]) -> &str {
    debug_assert!(std::str::from_utf8(s).is_ok());
    // SAFETY: the caller validated the string between the quotes (the
    // quotes are ASCII).
    unsafe { std::str::from_utf8_unchecked(s) }
}

fn digits(b: &[u8], mut p: usize) -> usize {
    while let Some(b'0'..=b'9') = b.get(p) {
        p += 1;
    }
    p
}

#[cfg(test)]
mod tests {
    use super::super::wire::RawEvent;
    use super::*;

    /// What serde reads, as `parse_one`'s fallback does.
    fn serde(json: &str) -> Option<(RawEvent<'_>, usize)> {
        let mut s = serde_json::Deserializer::from_str(json).into_iter::<RawEvent<'_>>();
        let ev = s.next()?.ok()?;
        Some((ev, s.byte_offset()))
    }

    /// What the fast path reads, and where it stops.
    fn fast(json: &str) -> Option<(Event<'_>, usize)> {
        let mut ev = Event::default();
        let end = event(json.as_bytes(), 0, &mut ev)?;
        Some((ev, end))
    }

    /// The fast path either gives up or agrees with serde exactly.
    fn check(json: &str) -> bool {
        match fast(json) {
            None => false,
            Some((ev, end)) => {
                let (raw, serde_end) = serde(json).unwrap_or_else(|| panic!("serde refused {json}"));
                assert_eq!(ev, raw.view(), "{json}");
                assert_eq!(end, serde_end, "{json}");
                true
            }
        }
    }

    #[test]
    fn reads_kineto_events_as_serde_does() {
        for json in [
            r#"{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1712195495519689.047, "dur": 3.5, "args": {"External id": 5, "correlation": 9, "device": 0, "stream": 7, "grid": [4, 1, 1], "block": [128, 1, 1, 9], "registers per thread": 32, "shared memory": 0, "queued": 0}}"#,
            r#"{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 5, "dur": 0, "args": {"Trace name": "PyTorch Profiler", "Trace iteration": 0, "External id": 3, "Input Dims": [[2, 3], [3, 4]], "Input type": ["float", "float"], "Sequence number": 4, "Call stack": "a.py(1): f;b.py(2): g"}}"#,
            r#"{"ph": "X", "cat": "Operator", "name": "aten::empty", "pid": "25738", "tid": "25738", "ts": 1623142623460111, "dur": 25, "args": {"Device": 25738, "External id": 2}}"#,
            r#"{"ph": "f", "id": 1869554, "pid": 3113936, "tid": 3126441, "ts": 1661203463029548, "cat": "async_cpu_to_gpu", "name": "async_gpu", "bp": "e"}"#,
            r#"{"name": "thread_name", "ph": "M", "ts": 1, "pid": 3, "tid": 0, "args": {"name": "stream 7"}}"#,
            r#"{"name": "Record Window End", "ph": "i", "s": "g", "pid": "", "tid": "", "ts": 1661203463125562}"#,
            r#"{"ph": "C", "name": "mem", "pid": 1, "ts": "12.5", "args": {"x": "a", "y": null, "z": -3, "w": 2}}"#,
            r#"{"ph": null, "cat": null, "pid": null, "tid": true, "ts": null, "dur": null, "args": null}"#,
            r#"{"ph": "X", "name": "ü→", "args": {"stream": "0x1f", "kind": "HtoD", "grid": "x", "block": null, "name": 4}}"#,
            r#"{"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "args": {"Collective name": "allreduce", "Process Group Name": "0", "Process Group Description": "default_pg", "Process Group Ranks": "[0, 1]", "Group size": 2, "Seq": 17, "Rank": 0}}"#,
            r#"{"ph": "X", "cat": "kernel", "args": {"seq": "18", "Process Group Name": 3, "Group size": "8", "Process Group Ranks": null, "Collective name": null}}"#,
            r#"{ "ph" : "X" , "args" : { } , "x" : [ { "a" : [ ] } , -0.5e-3 , false ] }"#,
            // `size`: a copy call's bytes (a string or a number), and a
            // counter's value when first; not the value after another.
            r#"{"ph": "X", "cat": "cuda_runtime", "name": "hipMemcpyWithStream", "args": {"cid": 153, "size": "2560", "kind": "1"}}"#,
            r#"{"ph": "C", "name": "q", "args": {"size": 3}}"#,
            r#"{"ph": "C", "name": "q", "args": {"size": "0x10", "other": 4}}"#,
            r#"{"ph": "C", "name": "q", "args": {"other": 4, "size": 9}}"#,
            r#"{"ph": "X", "args": {"size": null, "bytes": 8}}"#,
            "{}",
        ] {
            assert!(check(json), "the fast path gave up on {json}");
        }
    }

    #[test]
    fn gives_up_where_serde_must_decide() {
        for json in [
            // Escapes, control bytes, repeated fields, wrong types.
            r#"{"ph": "X", "name": "a\"b"}"#,
            "{\"ph\": \"X\", \"name\": \"a\tb\"}",
            r#"{"ph": "X", "ph": "B"}"#,
            r#"{"ph": "X", "name": 5}"#,
            r#"{"ph": "X", "args": [1]}"#,
            r#"{"ph": "X", "args": {"correlation": 1.5}}"#,
            r#"{"ph": "X", "args": {"queued": 1e400}}"#,
            r#"{"ph": "X", "pid": 12345678901234567890}"#,
            r#"{"ph": "X", "pid": [1]}"#,
            r#"{"ph": "X", "ts": [1]}"#,
            r#"{"ph": "X", "args": {"grid": [1.5]}}"#,
            r#"{"ph": "X", "args": {"size": 2.5}}"#,
            // Syntax errors.
            r#"{"ph": "X",}"#,
            r#"{"ph": "X" "cat": "k"}"#,
            r#"{"ph": "X", "x": [1,]}"#,
            r#"{"ph": "X", "x": 01}"#,
            r#"{"ph": "X", "x": 1.}"#,
            r#"{"ph": "X", "x": tru}"#,
            r#"{"ph": "X", "x": nul"#,
            r#"{"ph": "X""#,
            "7",
            "[1]",
        ] {
            assert!(fast(json).is_none(), "the fast path read {json}");
        }
        let deep = format!(r#"{{"x": {}1{}}}"#, "[".repeat(MAX_DEPTH), "]".repeat(MAX_DEPTH));
        assert!(fast(&deep).is_none());
        let ok = format!(r#"{{"x": {}1{}}}"#, "[".repeat(10), "]".repeat(10));
        assert!(check(&ok));
    }

    /// Every event of every real trace: the fast path agrees with serde,
    /// and reads nearly all of them.
    #[test]
    fn agrees_with_serde_on_every_shared_trace() {
        use std::io::Read;
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/traces");
        let mut files = vec![root];
        let (mut events, mut fast, mut groups) = (0usize, 0usize, 0usize);
        while let Some(path) = files.pop() {
            if path.is_dir() {
                files.extend(std::fs::read_dir(&path).unwrap().map(|e| e.unwrap().path()));
                continue;
            }
            let name = path.to_string_lossy();
            if !(name.ends_with(".json") || name.ends_with(".json.gz")) {
                continue;
            }
            let bytes = std::fs::read(&path).unwrap();
            let mut json = Vec::new();
            if bytes.starts_with(&[0x1f, 0x8b]) {
                flate2::read::MultiGzDecoder::new(&bytes[..])
                    .read_to_end(&mut json)
                    .unwrap();
            } else {
                json = bytes;
            }
            #[derive(serde::Deserialize)]
            struct Doc<'a> {
                #[serde(borrow, rename = "traceEvents", default)]
                events: Vec<&'a serde_json::value::RawValue>,
            }
            let Ok(doc) = serde_json::from_slice::<Doc<'_>>(&json) else {
                continue; // not a trace (the plugin's expected-output file)
            };
            for raw in doc.events {
                events += 1;
                fast += usize::from(check(raw.get()));
                let (ev, _) = serde(raw.get()).unwrap();
                groups += usize::from(
                    ev.args
                        .is_some_and(|a| a.group.is_some() && a.collective_name.is_some()),
                );
            }
        }
        assert!(events > 400_000, "{events} events: are the shared traces there?");
        assert!(fast * 1000 >= events * 999, "fast path read {fast} of {events}");
        // The collective args are among what both read (nccl_data's 42
        // events and B200's 2 name a process group).
        assert_eq!(groups, 44, "events naming a process group");
    }

    #[test]
    fn stops_just_after_the_event() {
        let json = r#"{"ph": "X", "ts": 1} , {"ph": "B"}"#;
        let (_, end) = fast(json).unwrap();
        assert_eq!(&json[end..], " , {\"ph\": \"B\"}");
        let mut ev = Event::default();
        let end = event(json.as_bytes(), end + 3, &mut ev).unwrap();
        assert_eq!(end, json.len());
    }
}

#[cfg(test)]
mod scan_tests {
    use super::*;

    /// The string scan, 16 bytes at a time or one at a time, finds what a
    /// byte-by-byte reading of the rule finds, wherever the stop falls.
    #[test]
    fn string_scan_agrees_with_the_rule_at_every_position() {
        let rule = |b: &[u8], p: usize| -> Option<(usize, bool)> {
            let mut ascii = true;
            for (i, &c) in b.iter().enumerate().skip(p) {
                if c == b'"' {
                    return Some((i, ascii));
                }
                if c == b'\\' || c < 0x20 {
                    return None;
                }
                ascii &= c < 0x80;
            }
            None
        };
        let fillers: [&[u8]; 3] = [b"a", "é".as_bytes(), b"\x7f"];
        for stop in [&b"\""[..], b"\\", b"\n", b"\x00", b"\x1f", b""] {
            for len in 0..40 {
                for filler in fillers {
                    for odd_at in [None, Some(0), Some(len / 2)] {
                        let mut text: Vec<u8> = Vec::new();
                        for i in 0..len {
                            text.extend_from_slice(if Some(i) == odd_at { filler } else { b"x" });
                        }
                        text.extend_from_slice(stop);
                        text.extend_from_slice(b"tail\" pad pad pad pad pad");
                        for cut in [text.len(), text.len() - 20] {
                            let b = &text[..cut];
                            assert_eq!(scan_string(b, 0), rule(b, 0), "{:?}", String::from_utf8_lossy(b));
                            assert_eq!(scan_string_bytes(b, 0, true), rule(b, 0));
                        }
                    }
                }
            }
        }
    }
}

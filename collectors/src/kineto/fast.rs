//! A fast path for reading one event: a hand-written reader for the shape
//! Kineto writes, about 3x faster than serde_json's derive on big traces.
//!
//! It either returns exactly the [`RawEvent`] that serde would (the
//! `#[derive(Deserialize)]` in `wire.rs` and its visitors) or gives up with
//! `None`, and the caller then parses the event with serde, which also
//! produces the error messages. So it only has to be *strict*: it gives up
//! on anything it does not fully check, such as escapes (`\`) or control
//! bytes in strings, non-integer numbers where serde would convert them,
//! nesting deeper than [`MAX_DEPTH`], a repeated field, or any syntax error.
//! Strings it keeps are UTF-8 validated as serde's are; JSON it skips is
//! checked for syntax as serde's `IgnoredAny` does.

use super::wire::{parse_int_text, CowStr, IdOrStr, RawArgs, RawEvent, RawText};
use memchr::memchr2;
use std::borrow::Cow;

/// Nesting the fast path handles; deeper values go to serde (whose own
/// limit is 128).
const MAX_DEPTH: usize = 64;

/// Reads the event whose `{` is at `start`; returns it and the position
/// just after its `}`, or `None` to let serde read it.
pub fn event(buf: &[u8], start: usize) -> Option<(RawEvent<'_>, usize)> {
    let mut r = Reader { b: buf, p: start };
    let ev = r.event()?;
    Some((ev, r.p))
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

impl<'a> Reader<'a> {
    fn ws(&mut self) {
        while let Some(b' ' | b'\n' | b'\r' | b'\t') = self.b.get(self.p) {
            self.p += 1;
        }
    }

    /// Skips whitespace and says what the next value is.
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

    fn eat(&mut self, c: u8) -> Option<()> {
        self.ws();
        (self.b.get(self.p) == Some(&c)).then(|| self.p += 1)
    }

    /// The raw bytes of the string at `p` (which is `"`), without its
    /// quotes; `None` on escapes, control bytes or a missing end.
    fn string_bytes(&mut self) -> Option<&'a [u8]> {
        let start = self.p + 1;
        let rest = self.b.get(start..)?;
        let i = memchr2(b'"', b'\\', rest)?;
        if rest[i] == b'\\' {
            return None;
        }
        let s = &rest[..i];
        // Branch-free so it vectorizes: any byte below 0x20 is invalid JSON.
        if s.iter().fold(false, |bad, &c| bad | (c < 0x20)) {
            return None;
        }
        self.p = start + i + 1;
        Some(s)
    }

    /// A string to keep: validated as UTF-8 (serde's borrowed strings are).
    fn string(&mut self) -> Option<&'a str> {
        let s = self.string_bytes()?;
        if s.iter().fold(0u8, |hi, &c| hi | c) < 0x80 {
            return Some(ascii(s));
        }
        std::str::from_utf8(s).ok()
    }

    /// A string value's text with its quotes (what `RawValue` keeps).
    fn string_raw(&mut self) -> Option<&'a str> {
        let start = self.p;
        self.string()?;
        std::str::from_utf8(&self.b[start..self.p]).ok()
    }

    /// A JSON number's text, checked against the grammar
    /// `-?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?`; `int` says whether it
    /// had neither fraction nor exponent.
    fn number(&mut self) -> Option<(&'a str, bool)> {
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
        let mut int = true;
        if b.get(p) == Some(&b'.') {
            int = false;
            let q = digits(b, p + 1);
            if q == p + 1 {
                return None;
            }
            p = q;
        }
        if let Some(b'e' | b'E') = b.get(p) {
            int = false;
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
        Some((ascii(&b[start..p]), int))
    }

    /// An integer that surely fits an `i64` (at most 18 digits); other
    /// numbers give up.
    fn int(&mut self) -> Option<i64> {
        let (text, int) = self.number()?;
        let (neg, digits) = match text.strip_prefix('-') {
            Some(d) => (true, d),
            None => (false, text),
        };
        if !int || digits.len() > 18 {
            return None;
        }
        let n = digits.bytes().fold(0i64, |n, d| n * 10 + i64::from(d - b'0'));
        Some(if neg { -n } else { n })
    }

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
                self.members(|r, _| r.skip(depth + 1))
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
    /// `value` with each key (escape-free) positioned at the value.
    fn members(&mut self, mut value: impl FnMut(&mut Self, &'a [u8]) -> Option<()>) -> Option<()> {
        self.ws();
        if self.b.get(self.p) == Some(&b'}') {
            self.p += 1;
            return Some(());
        }
        loop {
            if self.lead()? != Lead::Str {
                return None;
            }
            let key = self.string_bytes()?;
            self.eat(b':')?;
            value(self, key)?;
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
    fn opt_str(&mut self) -> Option<Option<CowStr<'a>>> {
        match self.lead()? {
            Lead::Str => Some(Some(CowStr(Cow::Borrowed(self.string()?)))),
            Lead::Null => self.literal().map(|()| None),
            _ => None,
        }
    }

    /// `IdOrStr`: an integer, a label, or (null, a boolean) missing.
    fn id_or_str(&mut self) -> Option<IdOrStr<'a>> {
        match self.lead()? {
            Lead::Str => Some(IdOrStr::Str(Cow::Borrowed(self.string()?))),
            Lead::Num => self.int().map(IdOrStr::Int),
            Lead::Null | Lead::Bool => self.literal().map(|()| IdOrStr::Missing),
            _ => None,
        }
    }

    /// `Option<RawText>` for `ts`/`dur`: a number or a string as written;
    /// null is `None`.
    fn raw_scalar(&mut self) -> Option<Option<RawText<'a>>> {
        match self.lead()? {
            Lead::Str => self.string_raw().map(|s| Some(RawText(Cow::Borrowed(s)))),
            Lead::Num => self.number().map(|(s, _)| Some(RawText(Cow::Borrowed(s)))),
            Lead::Null => self.literal().map(|()| None),
            _ => None,
        }
    }

    /// `LooseInt`: an integer, an integer string (`"7"`, `"0x1f"`), else
    /// absent (null, booleans, other strings).
    fn loose_int(&mut self) -> Option<Option<i64>> {
        match self.lead()? {
            Lead::Str => self.string().map(parse_int_text),
            Lead::Num => self.int().map(Some),
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
    fn scalar_string(&mut self) -> Option<Option<CowStr<'a>>> {
        match self.lead()? {
            Lead::Str => self.string().map(|s| Some(CowStr(Cow::Borrowed(s)))),
            Lead::Num => self.int().map(|_| None),
            Lead::Null | Lead::Bool => self.literal().map(|()| None),
            _ => None,
        }
    }

    /// A value read as `Scalar` and kept only if a number (`as_f64`).
    fn scalar_number(&mut self) -> Option<Option<f64>> {
        match self.lead()? {
            Lead::Str => self.string().map(|_| None),
            Lead::Num => self.int().map(|i| Some(i as f64)),
            Lead::Null | Lead::Bool => self.literal().map(|()| None),
            _ => None,
        }
    }

    fn args(&mut self) -> Option<Option<RawArgs<'a>>> {
        match self.lead()? {
            Lead::Object => self.p += 1,
            Lead::Null => return self.literal().map(|()| None),
            _ => return None,
        }
        let mut a = RawArgs::default();
        self.members(|r, key| {
            match key {
                b"External id" | b"external id" => a.external_id = r.loose_int()?,
                b"correlation" => a.correlation = r.loose_int()?,
                b"device" => a.device = r.loose_int()?,
                b"stream" => a.stream = r.loose_int()?,
                b"bytes" => a.bytes = r.loose_int()?,
                b"grid" => a.grid = r.dims()?,
                b"block" => a.block = r.dims()?,
                b"registers per thread" => a.registers = r.loose_int()?,
                b"shared memory" => a.shared_mem = r.loose_int()?,
                b"Sequence number" => a.sequence = r.loose_int()?,
                b"Input Dims" => {
                    r.ws();
                    let start = r.p;
                    r.skip(1)?;
                    a.input_dims = Some(RawText(Cow::Borrowed(
                        std::str::from_utf8(&r.b[start..r.p]).ok()?,
                    )));
                }
                b"name" => a.name = r.scalar_string()?,
                b"kind" => a.kind = r.scalar_string()?,
                // Keys are matched as text, so a non-UTF-8 key is serde's.
                _ if std::str::from_utf8(key).is_err() => return None,
                _ if a.first_number.is_none() => a.first_number = r.scalar_number()?,
                _ => r.skip(1)?,
            }
            Some(())
        })?;
        Some(Some(a))
    }

    fn event(&mut self) -> Option<RawEvent<'a>> {
        if self.lead()? != Lead::Object {
            return None;
        }
        self.p += 1;
        let mut ev = RawEvent::default();
        let mut seen = 0u16;
        self.members(|r, key| {
            let bit = match key {
                b"ph" => {
                    ev.ph = r.opt_str()?;
                    1
                }
                b"cat" => {
                    ev.cat = r.opt_str()?;
                    2
                }
                b"name" => {
                    ev.name = r.opt_str()?;
                    4
                }
                b"pid" => {
                    ev.pid = r.id_or_str()?;
                    8
                }
                b"tid" => {
                    ev.tid = r.id_or_str()?;
                    16
                }
                b"ts" => {
                    ev.ts = r.raw_scalar()?;
                    32
                }
                b"dur" => {
                    ev.dur = r.raw_scalar()?;
                    64
                }
                b"s" => {
                    ev.scope = r.opt_str()?;
                    128
                }
                b"args" => {
                    ev.args = r.args()?;
                    256
                }
                _ if std::str::from_utf8(key).is_err() => return None,
                _ => {
                    r.skip(1)?;
                    0
                }
            };
            // serde's derive rejects a repeated field: let it say so.
            if seen & bit != 0 {
                return None;
            }
            seen |= bit;
            Some(())
        })?;
        Some(ev)
    }
}

/// Text known to be ASCII (checked by the caller, or matched by the number
/// grammar) as a `str`, without validating it again.
fn ascii(s: &[u8]) -> &str {
    debug_assert!(s.is_ascii());
    // SAFETY: every caller passes bytes below 0x80, which are valid UTF-8.
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
    use super::*;

    /// What serde reads, as `parse_one`'s fallback does.
    fn serde(json: &str) -> Option<(RawEvent<'_>, usize)> {
        let mut s = serde_json::Deserializer::from_str(json).into_iter::<RawEvent<'_>>();
        let ev = s.next()?.ok()?;
        Some((ev, s.byte_offset()))
    }

    /// The fast path either gives up or agrees with serde exactly.
    fn check(json: &str) -> bool {
        match event(json.as_bytes(), 0) {
            None => false,
            Some(fast) => {
                assert_eq!(Some(&fast), serde(json).as_ref(), "{json}");
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
            r#"{ "ph" : "X" , "args" : { } , "x" : [ { "a" : [ ] } , -0.5e-3 , false ] }"#,
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
            assert!(event(json.as_bytes(), 0).is_none(), "the fast path read {json}");
        }
        let deep = format!(r#"{{"x": {}1{}}}"#, "[".repeat(MAX_DEPTH), "]".repeat(MAX_DEPTH));
        assert!(event(deep.as_bytes(), 0).is_none());
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
        let (mut events, mut fast) = (0usize, 0usize);
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
            }
        }
        assert!(events > 400_000, "{events} events: are the shared traces there?");
        assert!(fast * 1000 >= events * 999, "fast path read {fast} of {events}");
    }

    #[test]
    fn stops_just_after_the_event() {
        let json = r#"{"ph": "X", "ts": 1} , {"ph": "B"}"#;
        let (_, end) = event(json.as_bytes(), 0).unwrap();
        assert_eq!(&json[end..], " , {\"ph\": \"B\"}");
        let (_, end) = event(json.as_bytes(), end + 3).unwrap();
        assert_eq!(end, json.len());
    }
}

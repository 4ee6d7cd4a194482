//! A small structural JSON scanner: skips values and finds event boundaries
//! without building anything, so the big `traceEvents` array can be cut into
//! chunks that are parsed in parallel.
//!
//! It tracks only what decides structure: whether we are inside a string
//! (with `\` escapes) and the bracket depth. It does not validate scalars;
//! serde_json does that when the pieces are parsed.

use memchr::{memchr, memchr2};

/// Deepest nesting accepted (serde_json's own default recursion limit).
pub const MAX_DEPTH: usize = 128;

/// What stopped a scan.
#[derive(Debug, PartialEq, Eq)]
pub enum ScanError {
    /// The data ends inside a value.
    Eof,
    /// More than [`MAX_DEPTH`] open brackets, at this offset.
    TooDeep(usize),
    /// A byte that cannot start or continue a value here.
    Unexpected(usize),
}

/// The first non-whitespace position at or after `pos` (or `buf.len()`).
pub fn skip_ws(buf: &[u8], mut pos: usize) -> usize {
    while pos < buf.len() && matches!(buf[pos], b' ' | b'\n' | b'\r' | b'\t') {
        pos += 1;
    }
    pos
}

/// The position just after the string that opens at `pos` (`buf[pos] == b'"'`).
pub fn skip_string(buf: &[u8], pos: usize) -> Result<usize, ScanError> {
    let mut p = pos + 1;
    loop {
        let rest = buf.get(p..).ok_or(ScanError::Eof)?;
        let i = memchr2(b'"', b'\\', rest).ok_or(ScanError::Eof)?;
        if rest[i] == b'"' {
            return Ok(p + i + 1);
        }
        // A backslash escapes exactly the next byte (`\uXXXX` has no quote).
        p += i + 2;
    }
}

/// The position just after the JSON value that starts at `pos` (after
/// whitespace). Nested objects and arrays are skipped by depth counting.
pub fn skip_value(buf: &[u8], pos: usize) -> Result<usize, ScanError> {
    let mut p = skip_ws(buf, pos);
    let mut depth = 0usize;
    loop {
        let &b = buf.get(p).ok_or(ScanError::Eof)?;
        match b {
            b'"' => p = skip_string(buf, p)?,
            b'{' | b'[' => {
                depth += 1;
                if depth > MAX_DEPTH {
                    return Err(ScanError::TooDeep(p));
                }
                p += 1;
            }
            b'}' | b']' => {
                if depth == 0 {
                    return Err(ScanError::Unexpected(p));
                }
                depth -= 1;
                p += 1;
            }
            b',' | b':' | b' ' | b'\n' | b'\r' | b'\t' if depth > 0 => p += 1,
            b'-' | b'+' | b'.' | b'0'..=b'9' | b'a'..=b'z' | b'A'..=b'Z' => p = skip_scalar(buf, p),
            _ => return Err(ScanError::Unexpected(p)),
        }
        if depth == 0 {
            return Ok(p);
        }
    }
}

fn skip_scalar(buf: &[u8], mut p: usize) -> usize {
    while p < buf.len() && matches!(buf[p], b'-' | b'+' | b'.' | b'0'..=b'9' | b'a'..=b'z' | b'A'..=b'Z') {
        p += 1;
    }
    p
}

/// A likely event boundary at or after `from`: a `{` whose previous
/// non-whitespace byte is `,` and whose next one is `"`, as between two
/// events of `[{...}, {"ph": ...}]`. Text inside a string can look the same,
/// so callers must confirm the guess (the chunk before must end exactly
/// there). `None` when there is none before `end`.
pub fn guess_event_start(buf: &[u8], from: usize, end: usize) -> Option<usize> {
    let end = end.min(buf.len());
    let mut p = from;
    while p < end {
        let i = p + memchr(b'{', &buf[p..end])?;
        if prev_non_ws(buf, i) == Some(b',') && buf.get(skip_ws(buf, i + 1)) == Some(&b'"') {
            return Some(i);
        }
        p = i + 1;
    }
    None
}

fn prev_non_ws(buf: &[u8], pos: usize) -> Option<u8> {
    buf[..pos]
        .iter()
        .rev()
        .find(|b| !matches!(b, b' ' | b'\n' | b'\r' | b'\t'))
        .copied()
}

/// One `"key": value` member of an object, as byte ranges.
pub struct Member<'a> {
    /// The key's raw text between its quotes (escapes not decoded; the keys we
    /// look for have none).
    pub key: &'a [u8],
    /// Where the value starts (its first non-whitespace byte).
    pub value_start: usize,
}

/// Reads `"key":` at `pos` (after whitespace), returning the member with the
/// value's start. The caller skips or parses the value.
pub fn read_member_key(buf: &[u8], pos: usize) -> Result<Member<'_>, ScanError> {
    let p = skip_ws(buf, pos);
    match buf.get(p) {
        Some(b'"') => {}
        Some(_) => return Err(ScanError::Unexpected(p)),
        None => return Err(ScanError::Eof),
    }
    let end = skip_string(buf, p)?;
    let colon = skip_ws(buf, end);
    match buf.get(colon) {
        Some(b':') => {}
        Some(_) => return Err(ScanError::Unexpected(colon)),
        None => return Err(ScanError::Eof),
    }
    let value_start = skip_ws(buf, colon + 1);
    if value_start >= buf.len() {
        return Err(ScanError::Eof);
    }
    Ok(Member {
        key: &buf[p + 1..end - 1],
        value_start,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skips_strings_with_braces_brackets_and_escaped_quotes() {
        let s = br#"{"a": "}]\"{[", "b": [1, {"c": "\\"}], "d": null} tail"#;
        let end = skip_value(s, 0).unwrap();
        assert_eq!(&s[end..], b" tail");
        let s = br#""x\"y\\" , 1"#;
        assert_eq!(skip_string(s, 0).unwrap(), 8);
        assert_eq!(skip_value(b" -12.5e3, ", 0).unwrap(), 8);
    }

    #[test]
    fn reports_eof_depth_and_stray_bytes() {
        assert_eq!(skip_value(br#"{"a": [1, 2"#, 0), Err(ScanError::Eof));
        assert_eq!(skip_value(br#""abc\"#, 0), Err(ScanError::Eof));
        let deep = "[".repeat(MAX_DEPTH + 1);
        assert_eq!(skip_value(deep.as_bytes(), 0), Err(ScanError::TooDeep(MAX_DEPTH)));
        assert_eq!(skip_value(b"}", 0), Err(ScanError::Unexpected(0)));
        assert_eq!(skip_value(b"", 0), Err(ScanError::Eof));
    }

    #[test]
    fn guesses_event_starts_and_is_fooled_only_inside_strings() {
        let s = br#"[{"a": {"b": 1}}, {"ph": "X"},{"n": ", {\"x"}]"#;
        let first = guess_event_start(s, 1, s.len()).unwrap();
        assert_eq!(&s[first..first + 5], br#"{"ph""#);
        let second = guess_event_start(s, first + 1, s.len()).unwrap();
        assert_eq!(&s[second..second + 4], br#"{"n""#);
        // The text `, {\"x` inside a string is not followed by a bare quote.
        assert_eq!(guess_event_start(s, second + 1, s.len()), None);
        // A string that looks exactly like a boundary does fool the guess.
        let tricky = br#"[{"n": "a, {\"b"}, {"n": "x, {"}]"#;
        let g = guess_event_start(tricky, 2, tricky.len()).unwrap();
        assert_eq!(&tricky[g..g + 4], br#"{"n""#);
        let fooled = br#"[{"n": "a, {" , "m": 1}]"#;
        assert_eq!(guess_event_start(fooled, 2, fooled.len()), Some(11));
    }

    #[test]
    fn reads_member_keys() {
        let s = br#"{ "traceEvents" : [1]}"#;
        let m = read_member_key(s, 1).unwrap();
        assert_eq!(m.key, b"traceEvents");
        assert_eq!(s[m.value_start], b'[');
        assert_eq!(
            read_member_key(br#"{"a" 1}"#, 1).err(),
            Some(ScanError::Unexpected(5))
        );
        assert_eq!(read_member_key(br#"{"a":"#, 1).err(), Some(ScanError::Eof));
    }
}

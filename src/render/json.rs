//! JSON output: the [`Analysis`](gapscope_analyzers::analysis::Analysis)
//! as serde writes it, pretty-printed. One trace: one object; several: an
//! array of them, in the order given. Field by field: docs/json-schema.md.

use crate::analysed::Analysed;
use serde::Serialize;
use serde_json::ser::Formatter;
use std::io::{self, Write};

/// Writes the results as JSON followed by a newline.
pub fn write(out: &mut dyn Write, results: &[Analysed]) -> io::Result<()> {
    let analyses: Vec<_> = results.iter().map(|r| &r.analysis).collect();
    match analyses.as_slice() {
        [one] => pretty(&mut *out, one)?,
        many => pretty(&mut *out, many)?,
    }
    writeln!(out)
}

/// Writes analyses of a batch: one result as its object, several as an
/// array in input order. A job is its `JobAnalysis` (`"kind": "job"`,
/// docs/job-schema.md), with each rank's own analysis inside.
pub fn write_outputs(out: &mut dyn Write, outputs: &[crate::analysed::Output]) -> io::Result<()> {
    use crate::analysed::Output;
    #[derive(serde::Serialize)]
    #[serde(untagged)]
    enum One<'a> {
        Single(&'a gapscope_analyzers::analysis::Analysis),
        Job(&'a gapscope_analyzers::job::JobAnalysis),
    }
    let all: Vec<One> = outputs
        .iter()
        .map(|o| match o {
            Output::Single(a) => One::Single(&a.analysis),
            Output::Job(j) => One::Job(&j.analysis),
        })
        .collect();
    match all.as_slice() {
        [one] => pretty(&mut *out, one)?,
        many => pretty(&mut *out, many)?,
    }
    writeln!(out)
}

/// `value` as `serde_json::to_writer_pretty` writes it, byte for byte, in
/// less time: an analysis holds millions of numbers (a 550 MB trace's is
/// 14 MB, most of it busy spans), and serde_json's pretty printer writes
/// each line's indentation two bytes at a time, each write a call through
/// `out`'s vtable. Here writes go to a buffer of a concrete type first,
/// and a line break and its indentation are one write.
fn pretty(out: &mut dyn Write, value: &(impl Serialize + ?Sized)) -> io::Result<()> {
    let mut buf = io::BufWriter::with_capacity(1 << 16, out);
    let mut ser = serde_json::Serializer::with_formatter(&mut buf, Pretty::default());
    value.serialize(&mut ser).map_err(io::Error::from)?;
    buf.flush()
}

/// serde_json's `PrettyFormatter` with its default two-space indent: the
/// same bytes, each line break and its indentation written at once.
#[derive(Default)]
struct Pretty {
    depth: usize,
    has_value: bool,
}

/// A line break and the indentation of [`NEWLINE_DEPTHS`] levels.
const NEWLINE: &[u8; 1 + 2 * NEWLINE_DEPTHS] = &{
    let mut b = [b' '; 1 + 2 * NEWLINE_DEPTHS];
    b[0] = b'\n';
    b
};
/// Deeper than any analysis nests; deeper lines take more writes.
const NEWLINE_DEPTHS: usize = 32;

impl Pretty {
    fn newline<W: ?Sized + Write>(&self, w: &mut W) -> io::Result<()> {
        let mut left = self.depth;
        let first = left.min(NEWLINE_DEPTHS);
        w.write_all(&NEWLINE[..1 + 2 * first])?;
        left -= first;
        while left > 0 {
            let more = left.min(NEWLINE_DEPTHS);
            w.write_all(&NEWLINE[1..1 + 2 * more])?;
            left -= more;
        }
        Ok(())
    }

    fn open<W: ?Sized + Write>(&mut self, w: &mut W, bracket: &[u8]) -> io::Result<()> {
        self.depth += 1;
        self.has_value = false;
        w.write_all(bracket)
    }

    fn close<W: ?Sized + Write>(&mut self, w: &mut W, bracket: &[u8]) -> io::Result<()> {
        self.depth -= 1;
        if self.has_value {
            self.newline(w)?;
        }
        w.write_all(bracket)
    }

    fn item<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        if !first {
            w.write_all(b",")?;
        }
        self.newline(w)
    }
}

impl Formatter for Pretty {
    fn begin_array<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.open(w, b"[")
    }

    fn end_array<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.close(w, b"]")
    }

    fn begin_array_value<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        self.item(w, first)
    }

    fn end_array_value<W: ?Sized + Write>(&mut self, _w: &mut W) -> io::Result<()> {
        self.has_value = true;
        Ok(())
    }

    fn begin_object<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.open(w, b"{")
    }

    fn end_object<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.close(w, b"}")
    }

    fn begin_object_key<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        self.item(w, first)
    }

    fn begin_object_value<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        w.write_all(b": ")
    }

    fn end_object_value<W: ?Sized + Write>(&mut self, _w: &mut W) -> io::Result<()> {
        self.has_value = true;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ours(v: &(impl Serialize + ?Sized)) -> String {
        let mut out = Vec::new();
        pretty(&mut out, v).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn pretty_writes_what_serde_json_writes() {
        // Empty and nested containers, strings that need escapes, numbers
        // of every kind, and nesting past the indentation written at once.
        let mut deep = json!([1, {"x": []}]);
        for i in 0..(NEWLINE_DEPTHS * 2 + 3) {
            deep = if i % 2 == 0 {
                json!([deep, {}])
            } else {
                json!({"k": deep, "e": [] })
            };
        }
        let values = [
            json!(null),
            json!([]),
            json!({}),
            json!([[]]),
            json!({"a": {}, "b": [[], [{}]], "c": "q\"\n\u{1}é", "d": -1.5e300, "e": u64::MAX, "f": i64::MIN, "g": true}),
            deep,
        ];
        for v in &values {
            assert_eq!(ours(v), serde_json::to_string_pretty(v).unwrap());
        }
    }

    #[test]
    fn pretty_writes_the_demo_analysis_as_serde_json_does() {
        let trace = crate::inputs::load_demo(&Default::default()).expect("the demo trace imports");
        let analysis = gapscope_analyzers::analyze(&trace, &Default::default());
        let theirs = serde_json::to_string_pretty(&analysis).unwrap();
        assert!(
            theirs.len() > 10_000,
            "the demo's analysis is {} bytes",
            theirs.len()
        );
        assert_eq!(ours(&analysis), theirs);
    }
}

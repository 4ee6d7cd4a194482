//! JSON output: the [`Analysis`](gapscope_analyzers::analysis::Analysis)
//! as serde writes it, pretty-printed. One trace: one object; several: an
//! array of them, in the order given. Field by field: docs/json-schema.md.

use crate::analyze::Analysed;
use std::io::{self, Write};

/// Writes the results as JSON followed by a newline.
pub fn write(out: &mut dyn Write, results: &[Analysed]) -> io::Result<()> {
    let analyses: Vec<_> = results.iter().map(|r| &r.analysis).collect();
    match analyses.as_slice() {
        [one] => serde_json::to_writer_pretty(&mut *out, one)?,
        many => serde_json::to_writer_pretty(&mut *out, many)?,
    }
    writeln!(out)
}

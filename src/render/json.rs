//! JSON output: the [`Analysis`](gapscope_analyzers::analysis::Analysis)
//! as serde writes it, pretty-printed. One trace: one object; several: an
//! array of them, in the order given. Field by field: docs/json-schema.md.

use crate::analysed::Analysed;
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
        [one] => serde_json::to_writer_pretty(&mut *out, one)?,
        many => serde_json::to_writer_pretty(&mut *out, many)?,
    }
    writeln!(out)
}

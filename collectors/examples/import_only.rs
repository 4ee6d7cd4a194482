//! The importer alone, for the benchmark (bench/run.sh): reads a Kineto trace
//! into the Trace model and prints its row counts and the time it took.
//!
//! ```text
//! cargo run --release -p gapscope-collectors --example import_only -- TRACE.json[.gz]
//! ```

use gapscope_collectors::kineto::{import_file, ImportOptions};
use std::time::Instant;

fn main() {
    let Some(path) = std::env::args_os().nth(1) else {
        eprintln!("usage: import_only TRACE.json[.gz]");
        std::process::exit(2);
    };
    let t = Instant::now();
    let trace = match import_file(path.as_ref(), &ImportOptions::default()) {
        Ok(trace) => trace,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    };
    let secs = t.elapsed().as_secs_f64();
    println!(
        "import {secs:.3} s: {} gpu, {} runtime, {} cpu_ops, {} markers, {} skipped",
        trace.gpu.len(),
        trace.runtime.len(),
        trace.cpu_ops.len(),
        trace.markers.len(),
        trace.diagnostics.skipped_count()
    );
}

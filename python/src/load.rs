//! Reads one trace file the way `gapscope analyze` does, through the one
//! loader every front end uses (`gapscope_collectors::open`), with its
//! one-line messages.

use gapscope_collectors::kineto::{ImportOptions, Imported, ReadLimits};
use gapscope_collectors::open::{open, ReadOptions};
use std::path::Path;

/// Imports `path`; `limits` apply to Kineto traces (a capture is written
/// whole, so it is read whole or not at all).
pub fn load(path: &Path, limits: &ReadLimits) -> Result<Imported, String> {
    if path.is_dir() {
        return Err(format!(
            "{}: is a directory; give one trace file (.json, .json.gz or .gst)",
            path.display()
        ));
    }
    let opts = ReadOptions {
        import: ImportOptions { progress: false },
        limits: limits.clone(),
    };
    open(path, &opts).map_err(|e| one_line(&e.to_string()))
}

/// The message on one line, as the command line prints it.
pub fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

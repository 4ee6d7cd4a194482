//! Reads one trace file the way `gapscope analyze` does: a gapscope capture
//! (told by its first bytes, whatever its name) or a Kineto trace, as far
//! as it can be read, with the readers' own one-line messages.

use gapscope_collectors::capture;
use gapscope_collectors::kineto::{self, ImportOptions, Imported, ReadLimits};
use std::path::Path;

/// Imports `path`; `limits` apply to Kineto traces (a capture is written
/// whole, so it is read whole or not at all).
pub fn load(path: &Path, limits: &ReadLimits) -> Result<Imported, String> {
    let import = ImportOptions { progress: false };
    if path.is_dir() {
        return Err(format!(
            "{}: is a directory; give one trace file (.json, .json.gz or .gst)",
            path.display()
        ));
    }
    if !capture::is_capture_file(path) {
        return kineto::import_file_partial(path, &import, limits).map_err(|e| one_line(&e.to_string()));
    }
    let trace = capture::read_file(path).map_err(|e| one_line(&e.to_string()))?;
    let events = trace.gpu.len() + trace.runtime.len() + trace.cpu_ops.len() + trace.markers.len();
    let extent = (events > 0).then(|| gapscope_analyzers::window::event_extent(&trace));
    Ok(Imported {
        trace,
        events,
        truncated: None,
        limited: false,
        extent,
        dropped: 0,
    })
}

/// The message on one line, as the command line prints it.
pub fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

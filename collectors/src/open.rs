//! One loader for every file a subcommand reads: a PyTorch profiler
//! (Kineto) trace, plain or gzip-compressed, or a gapscope capture (`.gst`).
//! What the file is comes from its first bytes, never its name.
//!
//! ```no_run
//! use gapscope_collectors::open::{open, ReadOptions};
//!
//! let imported = open("rank-0.pt.trace.json.gz".as_ref(), &ReadOptions::default())?;
//! for line in imported.warnings("rank-0.pt.trace.json.gz") {
//!     eprintln!("warning: {line}");
//! }
//! println!("{} kernels", imported.trace.gpu.len());
//! # Ok::<(), gapscope_collectors::open::OpenError>(())
//! ```
//!
//! - A Kineto file is mapped or streamed by [`kineto`]; a file cut short
//!   gives the events before the cut (see [`Imported::warnings`]), and
//!   [`ReadOptions::limits`] read a slice of a trace too big to read whole.
//! - A capture is written whole (through a renamed temporary file), so it
//!   is read whole or not at all; limits do not apply to it.
//! - A pipe or device (`<(zcat run.json.gz)`) is read once into memory,
//!   since sniffing its first bytes would consume them.
//!
//! Every error is one line: the file, what is wrong, what to do.

use crate::capture::{self, CaptureError};
use crate::kineto::{self, ImportOptions, Imported, KinetoError, ReadLimits};
use crate::trace::Trace;
use std::path::Path;

/// How to read a file.
#[derive(Clone, Debug, Default)]
pub struct ReadOptions {
    /// How the Kineto importer reports progress.
    pub import: ImportOptions,
    /// What to read of a Kineto trace too big to read whole (ignored for a
    /// capture, which is read whole).
    pub limits: ReadLimits,
}

/// A file that could not be read as a trace.
#[non_exhaustive]
#[derive(thiserror::Error, Debug)]
pub enum OpenError {
    /// The path could not be read at all.
    #[error("{file}: cannot read the file ({source}); check the path and its permissions")]
    Io {
        /// The file as the user named it.
        file: String,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// A Kineto trace that cannot be imported.
    #[error(transparent)]
    Kineto(#[from] KinetoError),
    /// A capture that cannot be read.
    #[error(transparent)]
    Capture(#[from] CaptureError),
}

/// Reads the trace at `path` as far as it can be read: a Kineto file cut
/// short gives the rows before the cut and says so in
/// [`Imported::truncated`].
pub fn open(path: &Path, opts: &ReadOptions) -> Result<Imported, OpenError> {
    let name = path.display().to_string();
    let trace = match sniff(path)? {
        Input::Capture => capture::read_file(path)?,
        Input::Piped(b) if capture::is_capture(&b) => capture::read_bytes(&b, &name)?,
        Input::Kineto => return Ok(kineto::import_file_partial(path, &opts.import, &opts.limits)?),
        Input::Piped(b) => {
            return Ok(kineto::import_bytes_partial(
                &b,
                &name,
                &opts.import,
                &opts.limits,
            )?)
        }
    };
    Ok(whole_capture(trace))
}

/// Reads the whole trace at `path`: a Kineto file cut short is an error
/// ([`KinetoError::Truncated`]), and no limits apply.
pub fn open_whole(path: &Path, import: &ImportOptions) -> Result<Trace, OpenError> {
    let name = path.display().to_string();
    Ok(match sniff(path)? {
        Input::Capture => capture::read_file(path)?,
        Input::Kineto => kineto::import_file(path, import)?,
        Input::Piped(b) if capture::is_capture(&b) => capture::read_bytes(&b, &name)?,
        Input::Piped(b) => kineto::import_bytes(&b, &name, import)?,
    })
}

/// A capture as an [`Imported`]: every row read, nothing cut or dropped.
fn whole_capture(trace: Trace) -> Imported {
    let events = trace.gpu.len() + trace.runtime.len() + trace.cpu_ops.len() + trace.markers.len();
    // A time window is cut by the analysis: the extent is the whole trace's.
    let extent = (events > 0).then(|| trace.event_extent());
    Imported {
        trace,
        events,
        truncated: None,
        limited: false,
        extent,
        dropped: 0,
    }
}

/// What a path holds.
enum Input {
    /// A regular file that starts like a capture.
    Capture,
    /// Anything else the Kineto importer opens itself (and names in its
    /// errors when it cannot).
    Kineto,
    /// A pipe or device, read once, here.
    Piped(Vec<u8>),
}

fn sniff(path: &Path) -> Result<Input, OpenError> {
    match std::fs::metadata(path) {
        Ok(m) if !m.is_file() && !m.is_dir() => {
            std::fs::read(path)
                .map(Input::Piped)
                .map_err(|source| OpenError::Io {
                    file: path.display().to_string(),
                    source,
                })
        }
        _ if capture::is_capture_file(path) => Ok(Input::Capture),
        _ => Ok(Input::Kineto),
    }
}

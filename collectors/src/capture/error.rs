//! Why a capture could not be read or written. Each message is one line:
//! the file, what is wrong, and what to do about it.

/// A capture that cannot be read, or a trace that cannot be written.
#[non_exhaustive]
#[derive(thiserror::Error, Debug)]
pub enum CaptureError {
    /// The file could not be opened or read.
    #[error("{file}: cannot read the file ({source}); check the path and its permissions")]
    Io {
        /// The file as the user named it.
        file: String,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// The capture could not be written.
    #[error("{file}: cannot write the capture ({source}); check that the folder exists, is writable and has space")]
    Write {
        /// The file as the user named it (`<output>` for a plain writer).
        file: String,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// The first bytes are not the capture magic.
    #[error(
        "{file}: not a gapscope capture (it does not start with the .gst magic bytes); expected a \
         file written by `gapscope record`, `gapscope bench --profile run.gst` or \
         `gapscope export --format gst`"
    )]
    NotACapture {
        /// The file as the user named it.
        file: String,
    },
    /// Written by a newer gapscope.
    #[error("{file}: capture format version {version} is newer than this gapscope reads ({supported}); upgrade gapscope")]
    TooNew {
        /// The file as the user named it.
        file: String,
        /// The file's format version.
        version: u32,
        /// The newest version this build reads.
        supported: u32,
    },
    /// The file ends before its end marker.
    #[error(
        "{file}: truncated at byte {offset}, in {section} (the recording process was probably \
         killed); re-record"
    )]
    Truncated {
        /// The file as the user named it.
        file: String,
        /// Where the data ends (the file's length).
        offset: u64,
        /// What was being read there (`the file header`, `section GPUA, the GPU activities`).
        section: String,
    },
    /// The bytes are there but wrong: a bad checksum, an id out of range, an
    /// unknown tag.
    #[error(
        "{file}: damaged capture at byte {offset}, in {section}: {reason}; re-copy the file or re-record"
    )]
    Corrupt {
        /// The file as the user named it.
        file: String,
        /// Byte offset in the file (of the section holding the defect).
        offset: u64,
        /// What was being read there.
        section: String,
        /// What is wrong.
        reason: String,
    },
    /// The trace has a time further than the format holds from its first
    /// event (±2^62 ns, 146 years): an imported trace with a damaged
    /// timestamp, which the analysis reads but a capture cannot hold.
    #[error(
        "{file}: cannot write this trace as a capture: {reason}; a timestamp in the trace is \
         probably damaged (a capture holds 146 years either side of the trace's first event)"
    )]
    TimeOutOfRange {
        /// The file as the user named it (`<output>` for a plain writer).
        file: String,
        /// Which row, and its times.
        reason: String,
    },
    /// The trace breaks an invariant the format relies on (a writer bug: a
    /// `Trace` not made by `TraceBuilder`), so it is not written rather than
    /// written unreadable.
    #[error(
        "{file}: cannot write this trace as a capture: {reason}; this is a gapscope bug, please report it"
    )]
    Invalid {
        /// The file as the user named it (`<output>` for a plain writer).
        file: String,
        /// What is wrong.
        reason: String,
    },
}

impl CaptureError {
    /// The same write error naming `name` instead of `<output>` (the plain
    /// writer does not know the path it writes to).
    pub fn named(self, name: &str) -> Self {
        match self {
            CaptureError::Write { source, .. } => CaptureError::Write {
                file: name.to_string(),
                source,
            },
            CaptureError::Invalid { reason, .. } => CaptureError::Invalid {
                file: name.to_string(),
                reason,
            },
            CaptureError::TimeOutOfRange { reason, .. } => CaptureError::TimeOutOfRange {
                file: name.to_string(),
                reason,
            },
            e => e,
        }
    }
}

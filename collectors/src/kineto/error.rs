//! File-level import errors: the file cannot be read as a trace at all.
//! Defects of single events are not errors; they are counted in
//! [`Diagnostics`](crate::trace::Diagnostics).

/// Why a file could not be imported. Each message is one line: the file,
/// what is wrong, and what to do about it.
#[non_exhaustive]
#[derive(thiserror::Error, Debug)]
pub enum KinetoError {
    /// The file could not be opened or read.
    #[error("{file}: cannot read the file ({source}); check the path and its permissions")]
    Io {
        /// The file as the user named it.
        file: String,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// The file has no bytes (or only whitespace).
    #[error(
        "{file}: the file is empty; the profiler probably did not finish writing it, record the trace again"
    )]
    Empty {
        /// The file as the user named it.
        file: String,
    },
    /// The file starts with gzip's magic bytes but does not inflate.
    #[error("{file}: corrupt gzip data ({reason}); re-copy the file or record it again")]
    Gzip {
        /// The file as the user named it.
        file: String,
        /// What the decoder said.
        reason: String,
    },
    /// The bytes are not JSON.
    #[error(
        "{file}: not JSON ({reason}); expected a PyTorch profiler trace (.json or .json.gz from \
         torch.profiler's export_chrome_trace)"
    )]
    NotJson {
        /// The file as the user named it.
        file: String,
        /// What was found instead.
        reason: String,
    },
    /// Valid JSON that is not a Chrome/Kineto trace.
    #[error(
        "{file}: JSON but not a trace: {reason}; expected an object with a \"traceEvents\" array \
         (torch.profiler's export_chrome_trace output)"
    )]
    NotATrace {
        /// The file as the user named it.
        file: String,
        /// What is missing.
        reason: String,
    },
    /// The file stops before the JSON is complete.
    #[error(
        "{file}: truncated: the JSON ends at byte offset {offset} before the trace is complete; \
         the profiler or a copy was probably interrupted, record or copy the trace again"
    )]
    Truncated {
        /// The file as the user named it.
        file: String,
        /// Byte offset (in the decompressed JSON) where the data ends.
        offset: usize,
    },
    /// JSON nested deeper than any trace needs: a corrupt or hostile file.
    #[error(
        "{file}: JSON nested too deep (over {limit} levels) at byte offset {offset}; this is not a \
         profiler trace, check that the right file was given"
    )]
    TooDeep {
        /// The file as the user named it.
        file: String,
        /// Byte offset (in the decompressed JSON) where the limit was passed.
        offset: usize,
        /// The nesting limit.
        limit: usize,
    },
    /// The JSON is malformed somewhere after a valid start.
    #[error(
        "{file}: invalid JSON at byte offset {offset} (in event #{event}): {reason}; the file is \
         damaged, record or copy the trace again"
    )]
    Syntax {
        /// The file as the user named it.
        file: String,
        /// Byte offset (in the decompressed JSON) of the event holding the error.
        offset: usize,
        /// Index of that event in `traceEvents`.
        event: usize,
        /// The parser's message.
        reason: String,
    },
}

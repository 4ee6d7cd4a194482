//! PyTorch profiler (Kineto) Chrome-trace import: `.json` and `.json.gz`.
//!
//! ```no_run
//! use gapscope_collectors::kineto::{import_file, ImportOptions};
//!
//! let trace = import_file("rank-0.pt.trace.json.gz".as_ref(), &ImportOptions::default())?;
//! println!("{} kernels, {} skipped events", trace.gpu.len(), trace.diagnostics.total());
//! # Ok::<(), gapscope_collectors::kineto::KinetoError>(())
//! ```
//!
//! How it reads a file:
//! 1. the bytes (a file is mapped, not read), inflated when they start with
//!    gzip's magic `1f 8b`;
//! 2. the top-level object (`document.rs`): header keys with serde, the
//!    `traceEvents` array cut into chunks at event boundaries (`events.rs`);
//! 3. each chunk on its own thread into borrowed flat structs (`wire.rs`; a
//!    hand-written reader in `fast.rs` for the usual shapes, serde for the
//!    rest and for errors) and on into a
//!    [`TraceBuilder`](crate::trace::TraceBuilder) (`convert.rs`);
//! 4. the builders appended in file order and finished.
//!
//! The JSON is never held as a DOM: peak memory is the decompressed bytes
//! plus the tables. Times are read from the number text, exactly, into
//! integer ns (`number.rs`). Bad events are skipped and counted in
//! [`Diagnostics`](crate::trace::Diagnostics); only a file that cannot be a
//! trace at all is a [`KinetoError`].

mod category;
mod convert;
mod document;
mod error;
mod events;
mod fast;
mod number;
mod scan;
mod wire;

pub use error::KinetoError;
pub use number::micros_to_ns;

use crate::trace::Trace;
use indicatif::{ProgressBar, ProgressStyle};
use std::io::{IsTerminal, Read};
use std::path::Path;

/// How to import.
#[derive(Default, Clone, Debug)]
pub struct ImportOptions {
    /// Show a progress bar on stderr for big files, when stderr is a terminal.
    pub progress: bool,
}

/// Files smaller than this get no progress bar: they take well under a second.
const PROGRESS_MIN_BYTES: usize = 64 << 20;

/// Imports a Kineto trace file (`.json`, or gzip-compressed whatever its name).
/// A file cut short is an error ([`KinetoError::Truncated`]); see
/// [`import_file_partial`] to read what it holds.
pub fn import_file(path: &Path, opts: &ImportOptions) -> Result<Trace, KinetoError> {
    let file = path.display().to_string();
    whole(import_file_partial(path, opts, &ReadLimits::default())?, &file)
}

/// Imports a Kineto trace file as far as it can be read: a file cut short
/// (a killed job, an interrupted copy: plain or gzip) gives the events
/// before the cut and a [`Truncation`] saying where the data ends. Only a
/// file with nothing readable is an error. `limits` read a slice of a trace
/// too big to analyse whole.
pub fn import_file_partial(
    path: &Path,
    opts: &ImportOptions,
    limits: &ReadLimits,
) -> Result<Imported, KinetoError> {
    let file = path.display().to_string();
    let bytes = read(path).map_err(|source| KinetoError::Io {
        file: file.clone(),
        source,
    })?;
    let (builder, reach, gzip_cut) = if is_gzip(&bytes) {
        let (json, cut) = gunzip(&bytes, &file)?;
        drop(bytes);
        let (b, r) = build(&json, &file, opts, limits, cut)?;
        (b, r, cut)
    } else {
        let (b, r) = build(&bytes, &file, opts, limits, false)?;
        drop(bytes);
        (b, r, false)
    };
    // The tables own their strings: the JSON goes before finishing, which
    // lowers the peak (finish copies columns while it sorts).
    finish(builder, reach, gzip_cut, &file)
}

/// What to read of a trace too big to analyse whole.
#[derive(Default, Clone, Debug)]
pub struct ReadLimits {
    /// Stop after this many events of `traceEvents` (in file order; the rest
    /// of the file is not read).
    pub max_events: Option<usize>,
}

/// A trace as far as it could be read.
#[derive(Debug)]
pub struct Imported {
    /// The rows read.
    pub trace: Trace,
    /// Events read from `traceEvents` (complete ones, skipped or not).
    pub events: usize,
    /// Where the data ended early, when it did.
    pub truncated: Option<Truncation>,
    /// `max_events` stopped the reading before the end of the events.
    pub limited: bool,
}

/// Where a cut file ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Truncation {
    /// Byte offset in the (decompressed) JSON where the data ends.
    pub offset: usize,
    /// The cut is inside `traceEvents`: the event being written was dropped.
    /// Otherwise every event was read and only the end of the file is lost.
    pub inside_events: bool,
    /// The gzip stream itself is cut short (the offset is then into what it
    /// inflated to).
    pub gzip: bool,
}

impl Imported {
    /// One line per reason the trace is incomplete (cut, or limited), each
    /// naming `name`, where the data ends and how many events were read.
    pub fn warnings(&self, name: &str) -> Vec<String> {
        let mut out = Vec::new();
        let events = plural(self.events, "event");
        if let Some(t) = &self.truncated {
            let what = if t.gzip {
                "the gzip data is cut short; the JSON it holds"
            } else {
                "the JSON"
            };
            let lost = if t.inside_events {
                "the event being written there was dropped"
            } else {
                "after the last event"
            };
            out.push(format!(
                "{name}: truncated: {what} ends at byte offset {} ({lost}); analysed the {events} read before \
                 the cut; the profiler or a copy was probably interrupted",
                t.offset
            ));
        }
        if self.limited {
            out.push(format!(
                "{name}: read only the first {events} (--max-events); the rest of the trace is not analysed"
            ));
        }
        out
    }
}

fn plural(n: usize, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else {
        format!("{n} {what}s")
    }
}

/// A file's bytes: mapped when it is a regular file (no copy; pages come
/// from the page cache on demand: a 500 MB trace maps in ~0.03 s where
/// reading it into a `Vec` takes ~0.7 s of page faults and copying), else
/// read.
enum FileBytes {
    Mapped(memmap2::Mmap),
    Read(Vec<u8>),
}

impl std::ops::Deref for FileBytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            FileBytes::Mapped(m) => m,
            FileBytes::Read(v) => v,
        }
    }
}

fn read(path: &Path) -> std::io::Result<FileBytes> {
    let mut file = std::fs::File::open(path)?;
    let meta = file.metadata()?;
    if meta.is_file() && meta.len() > 0 {
        // SAFETY: the map is private and read-only. A process that rewrites
        // or truncates the trace while we parse it can change the bytes
        // under us or fault the read: the usual caveat of mapping an input,
        // accepted as other tools that map their inputs do (an analysis of a
        // file being rewritten is meaningless anyway).
        if let Ok(map) = unsafe { memmap2::Mmap::map(&file) } {
            return Ok(FileBytes::Mapped(map));
        }
    }
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)?;
    Ok(FileBytes::Read(bytes))
}

/// Imports a trace from memory: gzip (magic `1f 8b`) or plain JSON.
/// `source_name` names it in messages and in [`TraceMeta::source`](crate::trace::TraceMeta::source).
/// Cut data is an error, as for [`import_file`].
pub fn import_bytes(bytes: &[u8], source_name: &str, opts: &ImportOptions) -> Result<Trace, KinetoError> {
    whole(
        import_bytes_partial(bytes, source_name, opts, &ReadLimits::default())?,
        source_name,
    )
}

/// Imports a trace from memory as far as it can be read, as
/// [`import_file_partial`] does.
pub fn import_bytes_partial(
    bytes: &[u8],
    source_name: &str,
    opts: &ImportOptions,
    limits: &ReadLimits,
) -> Result<Imported, KinetoError> {
    if is_gzip(bytes) {
        let (json, cut) = gunzip(bytes, source_name)?;
        let (builder, reach) = build(&json, source_name, opts, limits, cut)?;
        drop(json);
        finish(builder, reach, cut, source_name)
    } else {
        let (builder, reach) = build(bytes, source_name, opts, limits, false)?;
        finish(builder, reach, false, source_name)
    }
}

/// The trace of a file that must be whole.
fn whole(imported: Imported, file: &str) -> Result<Trace, KinetoError> {
    match imported.truncated {
        Some(t) if t.gzip => Err(KinetoError::Gzip {
            file: file.to_string(),
            reason: format!("the data ends early, after {} bytes of JSON", t.offset),
        }),
        Some(t) => Err(KinetoError::Truncated {
            file: file.to_string(),
            offset: t.offset,
        }),
        None => Ok(imported.trace),
    }
}

fn finish(
    builder: crate::trace::TraceBuilder,
    reach: (document::Reach, usize),
    gzip_cut: bool,
    file: &str,
) -> Result<Imported, KinetoError> {
    let (reach, len) = reach;
    let trace = usable(builder.finish(), file)?;
    let truncated = match (reach.cut, gzip_cut) {
        (Some(inside_events), _) => Some(Truncation {
            offset: len,
            inside_events,
            gzip: gzip_cut,
        }),
        // The inflated JSON is complete but the gzip stream is cut (its
        // trailer lost): every event was read.
        (None, true) => Some(Truncation {
            offset: len,
            inside_events: false,
            gzip: true,
        }),
        (None, false) => None,
    };
    Ok(Imported {
        trace,
        events: reach.events,
        truncated,
        limited: reach.limited,
    })
}

/// A file whose every event was skipped is not a trace with defects but not
/// a trace at all (a JSON array of numbers, say): an error, not an empty
/// analysis.
fn usable(trace: Trace, file: &str) -> Result<Trace, KinetoError> {
    let rows = trace.gpu.len() + trace.runtime.len() + trace.cpu_ops.len() + trace.markers.len();
    let skipped = trace.diagnostics.total();
    if rows == 0 && skipped > 0 {
        let first = trace.diagnostics.examples.first().map_or("", String::as_str);
        return Err(KinetoError::NotATrace {
            file: file.to_string(),
            reason: format!("none of its {skipped} events could be read (first: {first})"),
        });
    }
    Ok(trace)
}

/// Parses the JSON; with the length read, so a cut can say where it is.
/// `gzip_cut`: the JSON is what a cut gzip stream inflated to, whose end is
/// a truncation even when it falls where a whole file could end.
fn build(
    json: &[u8],
    file: &str,
    opts: &ImportOptions,
    limits: &ReadLimits,
    gzip_cut: bool,
) -> Result<(crate::trace::TraceBuilder, (document::Reach, usize)), KinetoError> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let bar = progress_bar(json.len(), opts);
    let read = document::read_document(json, file, threads, limits.max_events, bar.as_ref());
    let (mut builder, reach) = match read {
        // A cut gzip stream holds the start of a file, never a file of its
        // own: the JSON's own errors say less than "it is cut".
        Err(KinetoError::Empty { .. } | KinetoError::Truncated { .. }) if gzip_cut => {
            return Err(KinetoError::Gzip {
                file: file.to_string(),
                reason: format!(
                    "the data ends early, after {} bytes of JSON and before any event",
                    json.len()
                ),
            })
        }
        r => r?,
    };
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    builder.meta.source = file.to_string();
    builder.meta.format = "kineto-json".to_string();
    Ok((builder, (reach, json.len())))
}

fn progress_bar(len: usize, opts: &ImportOptions) -> Option<ProgressBar> {
    if !opts.progress || len < PROGRESS_MIN_BYTES || !std::io::stderr().is_terminal() {
        return None;
    }
    let bar = ProgressBar::new(len as u64);
    let style = ProgressStyle::with_template("parsing trace {bar:40} {bytes}/{total_bytes} ({eta})")
        .unwrap_or_else(|_| ProgressStyle::default_bar());
    bar.set_style(style);
    Some(bar)
}

fn is_gzip(bytes: &[u8]) -> bool {
    bytes.starts_with(&[0x1f, 0x8b])
}

/// Inflates a gzip file (all members, as `gzip -d` does). A stream that
/// ends early gives what it inflated to and `true`; corrupt data (a bad
/// CRC, a broken deflate stream) is an error.
fn gunzip(bytes: &[u8], file: &str) -> Result<(Vec<u8>, bool), KinetoError> {
    let mut out = Vec::with_capacity(inflated_size_hint(bytes));
    match flate2::read::MultiGzDecoder::new(bytes).read_to_end(&mut out) {
        Ok(_) => Ok((out, false)),
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => Ok((out, true)),
        Err(e) => Err(KinetoError::Gzip {
            file: file.to_string(),
            reason: e.to_string(),
        }),
    }
}

/// The size gzip's trailer records (ISIZE, mod 2^32), trusted only within
/// deflate's maximum ratio so a corrupt trailer cannot force a huge
/// allocation. Reserving it up front avoids doubling a 500 MB `Vec`.
fn inflated_size_hint(bytes: &[u8]) -> usize {
    let Some(tail) = bytes.len().checked_sub(4).and_then(|s| bytes.get(s..)) else {
        return 0;
    };
    let isize = u32::from_le_bytes([tail[0], tail[1], tail[2], tail[3]]) as usize;
    isize.min(bytes.len().saturating_mul(1032))
}

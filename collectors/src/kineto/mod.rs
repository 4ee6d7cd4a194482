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
pub fn import_file(path: &Path, opts: &ImportOptions) -> Result<Trace, KinetoError> {
    let file = path.display().to_string();
    let bytes = read(path).map_err(|source| KinetoError::Io {
        file: file.clone(),
        source,
    })?;
    let builder = if is_gzip(&bytes) {
        let json = gunzip(&bytes, &file)?;
        drop(bytes);
        build(&json, &file, opts)?
    } else {
        let builder = build(&bytes, &file, opts)?;
        drop(bytes);
        builder
    };
    // The tables own their strings: the JSON goes before finishing, which
    // lowers the peak (finish copies columns while it sorts).
    usable(builder.finish(), &file)
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
pub fn import_bytes(bytes: &[u8], source_name: &str, opts: &ImportOptions) -> Result<Trace, KinetoError> {
    if is_gzip(bytes) {
        let json = gunzip(bytes, source_name)?;
        let builder = build(&json, source_name, opts)?;
        drop(json);
        usable(builder.finish(), source_name)
    } else {
        usable(build(bytes, source_name, opts)?.finish(), source_name)
    }
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

fn build(json: &[u8], file: &str, opts: &ImportOptions) -> Result<crate::trace::TraceBuilder, KinetoError> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let bar = progress_bar(json.len(), opts);
    let mut builder = document::read_document(json, file, threads, bar.as_ref())?;
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    builder.meta.source = file.to_string();
    builder.meta.format = "kineto-json".to_string();
    Ok(builder)
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

/// Inflates a gzip file (all members, as `gzip -d` does).
fn gunzip(bytes: &[u8], file: &str) -> Result<Vec<u8>, KinetoError> {
    let mut out = Vec::with_capacity(inflated_size_hint(bytes));
    flate2::read::MultiGzDecoder::new(bytes)
        .read_to_end(&mut out)
        .map_err(|e| KinetoError::Gzip {
            file: file.to_string(),
            reason: e.to_string(),
        })?;
    Ok(out)
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

//! gapscope's own capture format (`.gst`): the file `gapscope record` and
//! `gapscope bench --profile run.gst` write and every subcommand reads.
//!
//! ```
//! use gapscope_collectors::capture;
//! use gapscope_collectors::trace::*;
//!
//! let mut b = TraceBuilder::new();
//! let main = b.thread(1, 1);
//! let launch = b.intern("cudaLaunchKernel");
//! let gemm = b.intern("gemm");
//! b.push_runtime(RuntimeCall::new(main, 2_000, 3_000, launch, 7));
//! b.push_gpu(GpuActivity::kernel(0, 7, 4_000, 6_000, gemm, 7));
//! let trace = b.finish();
//!
//! let mut bytes = Vec::new();
//! capture::write(&trace, &mut bytes)?;
//! assert!(capture::is_capture(&bytes));
//! let back = capture::read_bytes(&bytes, "run.gst")?;
//! assert_eq!(back.gpu.start, trace.gpu.start);
//! assert_eq!(back.links.gpu_launch, vec![Some(CallRow::new(0))]);
//! assert_eq!(back.meta.format, "gapscope-capture");
//! # Ok::<(), capture::CaptureError>(())
//! ```
//!
//! The layout is `docs/capture-format.md`: a 16-byte header (magic,
//! [`FORMAT_VERSION`], flags), then one section per table of the
//! [`Trace`](crate::trace::Trace), each framed with its lengths and two
//! CRC-32s and, when that is smaller, zlib-compressed; inside, every column
//! is a little-endian fixed-width array split into byte planes, times
//! delta-coded. Nesting (`parent`, `depth`), `cpu_op_thread_start` and the
//! links are not stored: the reader puts the rows through
//! [`TraceBuilder`](crate::trace::TraceBuilder), which recomputes them, so a
//! file can never hold a parent cycle or a link to a row that does not
//! exist.

mod check;
mod error;
mod merge;
mod read;
mod wire;
mod write;

pub use check::MAX_ABS_TIME;
pub use error::CaptureError;
pub use wire::{FORMAT_VERSION, MAGIC};

use crate::trace::Trace;
use std::io::Write;
use std::path::{Path, PathBuf};

/// What [`TraceMeta::format`](crate::trace::TraceMeta::format) says of a
/// trace read from a capture.
pub const FORMAT_NAME: &str = "gapscope-capture";

/// The file name extension of captures.
pub const EXTENSION: &str = "gst";

/// Writes `trace` as a capture.
pub fn write(trace: &Trace, mut out: impl Write) -> Result<(), CaptureError> {
    write::write_to(trace, &mut out, write::LEVEL).map(|_| ())
}

/// Writes `trace` as a capture and says how many bytes that took.
pub fn write_counted(trace: &Trace, mut out: impl Write) -> Result<u64, CaptureError> {
    write::write_to(trace, &mut out, write::LEVEL)
}

/// As [`write_counted`], with zlib's level (0 to 9) chosen; [`write`] uses
/// [`DEFAULT_LEVEL`]. Every level reads the same.
pub fn write_level(trace: &Trace, mut out: impl Write, level: u32) -> Result<u64, CaptureError> {
    write::write_to(trace, &mut out, level.min(9))
}

/// The zlib level [`write`] uses.
pub const DEFAULT_LEVEL: u32 = write::LEVEL;

/// Writes `trace` to `path`, through `path.tmp` renamed at the end, so a
/// writer killed half-way never leaves a partial file under the real name
/// (it leaves `path.tmp`). A path that exists and is not a regular file
/// (`/dev/null`, a pipe) is written in place: renaming over it would
/// replace it.
pub fn write_file(trace: &Trace, path: &Path) -> Result<(), CaptureError> {
    let name = path.display().to_string();
    let in_place = path.exists() && !path.is_file();
    let target = if in_place {
        path.to_path_buf()
    } else {
        tmp_path(path)
    };
    let werr = |source| CaptureError::Write {
        file: name.clone(),
        source,
    };
    let file = std::fs::File::create(&target).map_err(werr)?;
    let mut out = std::io::BufWriter::with_capacity(1 << 20, file);
    let written = write::write_to(trace, &mut out, write::LEVEL)
        .and_then(|_| out.into_inner().map_err(|e| werr(e.into_error())).map(|_| ()))
        .map_err(|e| e.named(&name));
    if let Err(e) = written {
        if !in_place {
            let _ = std::fs::remove_file(&target);
        }
        return Err(e);
    }
    if !in_place {
        std::fs::rename(&target, path).map_err(werr)?;
    }
    Ok(())
}

fn tmp_path(path: &Path) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".tmp");
    path.with_file_name(name)
}

/// Reads a capture from memory. `source_name` names it in messages and in
/// [`TraceMeta::source`](crate::trace::TraceMeta::source).
pub fn read_bytes(bytes: &[u8], source_name: &str) -> Result<Trace, CaptureError> {
    read::trace(bytes, source_name)
}

/// Reads a capture file.
pub fn read_file(path: &Path) -> Result<Trace, CaptureError> {
    let name = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|source| CaptureError::Io {
        file: name.clone(),
        source,
    })?;
    read_bytes(&bytes, &name)
}

/// True when `prefix` (the first bytes of a file, 8 are enough) is the
/// start of a capture. A file shorter than the magic that matches as far as
/// it goes counts too, so a capture cut inside its first 8 bytes is
/// reported as a cut capture, not as a JSON file that does not parse.
pub fn is_capture(prefix: &[u8]) -> bool {
    let n = prefix.len().min(MAGIC.len());
    n > 0 && prefix[..n] == MAGIC[..n]
}

/// True when `path` is a regular file that starts like a capture (false
/// when it cannot be read: the importer that gets it then says why). Pipes
/// and devices are not opened: reading their first bytes would consume
/// them; read those whole and ask [`is_capture`].
pub fn is_capture_file(path: &Path) -> bool {
    use std::io::Read;
    if !path.is_file() {
        return false;
    }
    let Ok(f) = std::fs::File::open(path) else {
        return false;
    };
    let mut prefix = Vec::with_capacity(MAGIC.len());
    if f.take(MAGIC.len() as u64).read_to_end(&mut prefix).is_err() {
        return false;
    }
    is_capture(&prefix)
}

/// Merges captures of several processes (a training process and its
/// DataLoader workers, say, each written by one process) into one trace.
///
/// - Each part is placed by its absolute origin (`meta.origin_ns`): the
///   merged origin is the earliest origin of the parts that have rows, and
///   every row keeps its absolute time.
/// - Threads keep their pid and tid (two parts naming the same pid and tid
///   share one thread); strings are re-interned; a GPU described by
///   several parts keeps a description with a name.
/// - Correlation and external ids are per process. Part 0 keeps its ids;
///   each later part's non-zero ids are shifted past the largest id of the
///   parts before it, so ids of different parts never collide and a kernel
///   links only to a launch of its own process.
/// - Nesting and links are recomputed over the merged rows by
///   [`TraceBuilder`](crate::trace::TraceBuilder); diagnostics are summed.
/// - `meta.source` is `source`; `meta.format` the parts' common format (or
///   `merged`); rank and world size are kept when all parts that give one
///   agree.
pub fn merge(parts: Vec<Trace>, source: &str) -> Trace {
    merge::merge(parts, source)
}

/// What a capture says about itself, read from its header and metadata
/// section only.
#[derive(Clone, Debug)]
pub struct CaptureInfo {
    /// The file's format version.
    pub format_version: u32,
    /// Absolute time of the trace's 0, ns.
    pub origin_ns: i64,
    /// What the trace was recorded or converted from, as its writer named it.
    pub recorded_from: String,
    /// The format it was read from before it was written (`kineto-json`, ...).
    pub recorded_format: String,
    /// The program that wrote the file (`gapscope 0.1.0`).
    pub writer: String,
    /// The distributed rank the trace was recorded as, when known.
    pub rank: Option<i64>,
}

/// Reads a capture's header and metadata (cheap: no table is decoded).
pub fn info(bytes: &[u8], source_name: &str) -> Result<CaptureInfo, CaptureError> {
    let mut r = read::Reader::open(bytes, source_name)?;
    let m = r.section(wire::Section::Meta, read::meta)?;
    Ok(CaptureInfo {
        format_version: r.version,
        origin_ns: m.origin_ns,
        recorded_from: m.source,
        recorded_format: m.format,
        writer: m.writer,
        rank: m.rank,
    })
}

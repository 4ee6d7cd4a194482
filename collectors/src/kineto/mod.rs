//! PyTorch profiler (Kineto) Chrome-trace import: `.json` and `.json.gz`.
//!
//! ```no_run
//! use gapscope_collectors::kineto::{import_file, ImportOptions};
//!
//! let trace = import_file("rank-0.pt.trace.json.gz".as_ref(), &ImportOptions::default())?;
//! println!("{} kernels, {} skipped events", trace.gpu.len(), trace.diagnostics.skipped_count());
//! # Ok::<(), gapscope_collectors::kineto::KinetoError>(())
//! ```
//!
//! How it reads a file:
//! 1. the bytes: a plain file is mapped, not read, and the pages the parse
//!    has moved past are given back as it goes; a file that starts with
//!    gzip's magic `1f 8b` is inflated on a thread of its own, a few blocks
//!    ahead of the parse, into a buffer the parse walks (`stream.rs`);
//! 2. the top-level object (`document.rs`): header keys with serde, the
//!    `traceEvents` array cut into chunks at event boundaries (`events.rs`),
//!    several per thread;
//! 3. the chunks, each taken by whichever thread is free, read event by
//!    event into a small borrowed `Event` (`event.rs`; a
//!    hand-written reader in `fast.rs` for the usual shapes, serde's derive
//!    of `wire.rs` for the rest and for errors) and on into a
//!    [`TraceBuilder`](crate::trace::TraceBuilder) per chunk (`convert.rs`);
//! 4. the chunks' builders joined in file order, the first one's columns
//!    grown to hold the rest (a gzip file's after each buffer it reads),
//!    and finished (sorted, nested, linked) on two threads.
//!
//! The JSON is never held as a DOM, nor whole: peak memory is the tables
//! plus the part of the JSON being parsed. Times are read from the number text, exactly, into
//! integer ns (`number.rs`). Bad events are skipped and counted in
//! [`Diagnostics`](crate::trace::Diagnostics); only a file that cannot be a
//! trace at all is a [`KinetoError`].

mod category;
mod convert;
mod document;
mod error;
mod event;
mod events;
mod fast;
mod number;
mod scan;
mod stream;
mod wire;

pub use convert::overlaps;
pub use error::KinetoError;
pub use number::micros_to_ns;

use crate::trace::{Ns, TimeRange, Trace};
use convert::{Keep, WindowKeep};
use events::Pass;
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
    let io = |source| KinetoError::Io {
        file: file.clone(),
        source,
    };
    let bytes = read(path).map_err(io)?;
    if is_gzip(&bytes) {
        let size = bytes.len();
        match bytes {
            // A regular file is streamed from the file, not the map (the
            // compressed pages would stay resident), and opened again for
            // a second pass.
            FileBytes::Mapped(map) => {
                drop(map);
                let open = || -> std::io::Result<Box<dyn Read + Send>> {
                    Ok(Box::new(std::io::BufReader::with_capacity(
                        1 << 20,
                        std::fs::File::open(path)?,
                    )))
                };
                import(&Input::Gzip { open: &open, size }, &file, opts, limits)
            }
            // A pipe can be read once: what it gave is in memory.
            FileBytes::Read(data) => {
                let open = || -> std::io::Result<Box<dyn Read + Send + '_>> { Ok(Box::new(&data[..])) };
                import(&Input::Gzip { open: &open, size }, &file, opts, limits)
            }
        }
    } else {
        let map = match &bytes {
            FileBytes::Mapped(m) => Some(m),
            FileBytes::Read(_) => None,
        };
        import(&Input::Json { bytes: &bytes, map }, &file, opts, limits)
    }
}

/// What to read of a trace too big to analyse whole.
#[derive(Default, Clone, Debug)]
pub struct ReadLimits {
    /// Stop after this many events of `traceEvents` (in file order; the rest
    /// of the file is not read).
    pub max_events: Option<usize>,
    /// Keep only the rows that overlap this time window (and every
    /// ProfilerStep); the rest are dropped as they are read.
    ///
    /// Kineto files are not sorted by time, so rows are dropped by their
    /// own times as they come. The origin must be known first to place a
    /// window with a start: such a read makes two passes over the file, the
    /// first only to find the earliest event (no rows are kept; for gzip,
    /// the data is inflated twice). A window open at the start (`..END`) is
    /// read in one pass: the earliest start seen so far is never before the
    /// origin, so a row that starts past `earliest + END` is past the
    /// window's end.
    pub time_window: Option<TimeRange>,
}

/// The trace's JSON as an import reads it.
enum Input<'i> {
    /// Plain JSON in memory; `map` when it is a mapped file whose pages can
    /// be given back as the parse moves on.
    Json {
        bytes: &'i [u8],
        map: Option<&'i memmap2::Mmap>,
    },
    /// Gzip: `open` gives the compressed bytes from the start (once per
    /// pass), `size` of them.
    Gzip {
        open: &'i dyn Fn() -> std::io::Result<Box<dyn Read + Send + 'i>>,
        size: usize,
    },
}

/// Reads `input` as `limits` say: with a window that has a start, a first
/// pass finds the origin; then the rows are read.
fn import(
    input: &Input<'_>,
    file: &str,
    opts: &ImportOptions,
    limits: &ReadLimits,
) -> Result<Imported, KinetoError> {
    let keep = match limits.time_window {
        None => Keep::All,
        Some(w) if w.start_ns.is_none() => Keep::Window(WindowKeep {
            origin: None,
            start: None,
            end: w.end_ns,
        }),
        Some(w) => {
            let probe = one_pass(input, file, opts, limits, Keep::Probe)?;
            match probe.reach.seen.earliest {
                Some(origin) => Keep::Window(WindowKeep {
                    origin: Some(origin),
                    start: w.start_ns,
                    end: w.end_ns,
                }),
                // No rows at all: nothing to leave out.
                None => Keep::All,
            }
        }
    };
    let read = one_pass(input, file, opts, limits, keep)?;
    finish(read, file)
}

/// One pass's result, not yet finished.
struct Pass1 {
    builder: crate::trace::TraceBuilder,
    reach: document::Reach,
    /// Bytes of JSON read.
    len: usize,
    /// The gzip stream ended early.
    gzip_cut: bool,
}

fn one_pass(
    input: &Input<'_>,
    file: &str,
    opts: &ImportOptions,
    limits: &ReadLimits,
    keep: Keep,
) -> Result<Pass1, KinetoError> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let shared = matches!(keep, Keep::Window(WindowKeep { origin: None, .. }))
        .then(|| std::sync::Arc::new(std::sync::atomic::AtomicI64::new(Ns::MAX)));
    match *input {
        Input::Json { bytes, map } => {
            let bar = progress_bar(bytes.len(), opts);
            let release = |from: usize, to: usize| {
                if let Some(m) = map {
                    give_back(m, from, to);
                }
            };
            let pass = Pass {
                limit: limits.max_events,
                keep,
                shared_earliest: shared.as_ref(),
                progress: bar.as_ref(),
                release: map
                    .is_some()
                    .then_some(&release as &(dyn Fn(usize, usize) + Sync)),
            };
            let (mut builder, reach) = document::read_document(bytes, file, threads, &pass)?;
            if let Some(bar) = bar {
                bar.finish_and_clear();
            }
            // What is still borrowed from the map has been read; the rest of
            // the pages go back too before the tables are finished.
            release(0, bytes.len());
            label(&mut builder, file);
            Ok(Pass1 {
                builder,
                reach,
                len: bytes.len(),
                gzip_cut: false,
            })
        }
        Input::Gzip { open, size } => {
            let raw = open().map_err(|source| KinetoError::Io {
                file: file.to_string(),
                source,
            })?;
            let bar = progress_bar(size, opts);
            let counted = Counted {
                inner: raw,
                bar: bar.as_ref(),
            };
            let pass = Pass {
                limit: limits.max_events,
                keep,
                shared_earliest: shared.as_ref(),
                progress: None,
                release: None,
            };
            let gzip_error = |e: std::io::Error| KinetoError::Gzip {
                file: file.to_string(),
                reason: e.to_string(),
            };
            let decoder = flate2::read::MultiGzDecoder::new(counted);
            let read = stream::read_stream(decoder, file, threads, &pass, &gzip_error);
            if let Some(bar) = bar {
                bar.finish_and_clear();
            }
            let s = read?;
            let mut builder = s.builder;
            label(&mut builder, file);
            Ok(Pass1 {
                builder,
                reach: s.reach,
                len: s.len,
                gzip_cut: s.cut,
            })
        }
    }
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
    /// First start and last end of every row read, kept or not, in ns after
    /// the origin: the trace's own extent even when a time window left
    /// rows out. `None` when there are no rows.
    pub extent: Option<(Ns, Ns)>,
    /// Rows left out by [`ReadLimits::time_window`].
    pub dropped: u64,
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
        let open = || -> std::io::Result<Box<dyn Read + Send + '_>> { Ok(Box::new(bytes)) };
        import(
            &Input::Gzip {
                open: &open,
                size: bytes.len(),
            },
            source_name,
            opts,
            limits,
        )
    } else {
        import(&Input::Json { bytes, map: None }, source_name, opts, limits)
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

fn finish(read: Pass1, file: &str) -> Result<Imported, KinetoError> {
    let Pass1 {
        builder,
        reach,
        len,
        gzip_cut,
    } = read;
    let seen = reach.seen;
    let trace = usable(builder.finish(), file, seen.dropped)?;
    if len >= TRIM_MIN_BYTES {
        release_freed_memory();
    }
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
    let origin = trace.meta.origin_ns;
    Ok(Imported {
        events: reach.events,
        truncated,
        limited: reach.limited,
        extent: seen
            .earliest
            .zip(seen.latest)
            .map(|(a, b)| (a.saturating_sub(origin), b.saturating_sub(origin))),
        dropped: seen.dropped,
        trace,
    })
}

/// JSON this big or bigger gives its freed memory back after the import
/// ([`release_freed_memory`]); below, there is little to give and the call
/// would only cost (the Python API and fuzzing import many small files).
const TRIM_MIN_BYTES: usize = 64 << 20;

/// Hands the memory the import freed back to the kernel. The parse threads
/// build their chunks' rows in allocator arenas of their own; once the rows
/// are joined and the threads gone, glibc keeps those arenas' freed pages
/// resident (it trims only the top of the main heap, and only past a
/// threshold), where the analysis, on other threads, cannot reuse them.
fn release_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only returns free pages to the kernel; no live
    // allocation is touched.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// A file whose every event was skipped is not a trace with defects but not
/// a trace at all (a JSON array of numbers, say): an error, not an empty
/// analysis.
fn usable(trace: Trace, file: &str, dropped: u64) -> Result<Trace, KinetoError> {
    let rows = trace.gpu.len() + trace.runtime.len() + trace.cpu_ops.len() + trace.markers.len();
    let skipped = trace.diagnostics.skipped_count();
    // Rows left out by a time window were read: the file is a trace.
    if rows == 0 && skipped > 0 && dropped == 0 {
        let first = trace.diagnostics.examples.first().map_or("", String::as_str);
        return Err(KinetoError::NotATrace {
            file: file.to_string(),
            reason: format!("none of its {skipped} events could be read (first: {first})"),
        });
    }
    Ok(trace)
}

/// Names the format and source of what a pass read.
fn label(builder: &mut crate::trace::TraceBuilder, file: &str) {
    builder.meta.source = file.to_string();
    builder.meta.format = "kineto-json".to_string();
}

/// Gives back to the kernel the mapped pages wholly inside `[from, to)`:
/// they stop counting in the process's memory and stay in the page cache.
/// The map is private and never written, so a later read of a given-back
/// page reads the file again and sees the same bytes.
fn give_back(map: &memmap2::Mmap, from: usize, to: usize) {
    #[cfg(unix)]
    {
        const PAGE: usize = 4096;
        let a = from.div_ceil(PAGE) * PAGE;
        let b = (to.min(map.len()) / PAGE) * PAGE;
        if b > a {
            // SAFETY: DONTNEED on a private, read-only file map drops the
            // pages; the next access faults them in from the file again,
            // unchanged (the caveat of mapping an input, see `read`).
            let _ = unsafe { map.unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, a, b - a) };
        }
    }
    #[cfg(not(unix))]
    let _ = (map, from, to);
}

/// A reader that moves a progress bar by the bytes it reads.
struct Counted<'b, R> {
    inner: R,
    bar: Option<&'b ProgressBar>,
}

impl<R: Read> Read for Counted<'_, R> {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(out)?;
        if let Some(bar) = self.bar {
            bar.inc(n as u64);
        }
        Ok(n)
    }
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

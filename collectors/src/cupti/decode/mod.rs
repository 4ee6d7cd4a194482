//! The CUPTI activity-record decoder: no FFI, no `unsafe`.
//!
//! CUPTI hands its client buffers of records packed back to back, each a C
//! struct whose first `u32` is its `CUpti_ActivityKind`. Which struct (and so
//! which size) a kind uses depends on the **libcupti that runs**, not on the
//! headers anyone compiled against, so the layouts here are chosen at run time
//! from the API version `cuptiGetVersion` reports ([`Layouts::for_api_version`]).
//!
//! Fields are read as little-endian integers at fixed byte offsets, with every
//! read checked against the record's length. Nothing is ever reinterpreted as
//! a bindgen struct: those hold Rust enums, and CUPTI may write values they do
//! not list. Unknown enum values come out as `Unknown(n)`.
//!
//! - [`RecordIter`] walks a buffer with the version's size table, as
//!   `cuptiActivityGetNextRecord` does (the oracle test checks that they agree).
//! - [`decode_record`] turns one record's bytes into a [`Record`].
//! - [`Decoder`] turns records into [`TraceBuilder`](crate::trace::TraceBuilder)
//!   rows, joining what CUPTI splits across records and buffers (external ids,
//!   marker START/END pairs, sync records' devices).
//!
//! Layout modules, one per record family: [`kernel`], [`memcpy`] (copies and
//! peer copies), [`memset`], [`sync`], [`api`], [`external`], [`marker`],
//! [`overhead`].

pub mod api;
pub mod external;
pub mod kernel;
pub mod marker;
pub mod memcpy;
pub mod memset;
pub mod overhead;
mod reader;
pub mod sync;
mod trace;

pub use reader::Short;
pub use trace::{nvtx_range, DecodeStats, Decoder, MapResolver, Resolver};

use api::{ApiLayout, ApiRecord};
use external::{ExternalLayout, ExternalRecord};
use kernel::{KernelLayout, KernelRecord};
use marker::{MarkerLayout, MarkerRecord};
use memcpy::{MemcpyLayout, MemcpyRecord, PeerLayout, PeerMemcpyRecord};
use memset::{MemsetLayout, MemsetRecord};
use overhead::{OverheadLayout, OverheadRecord};
use sync::{SyncLayout, SyncRecord};

/// `CUpti_ActivityKind` values (the same in CUPTI 12.9 and 13.x).
pub mod kind {
    /// `CUPTI_ACTIVITY_KIND_MEMCPY`.
    pub const MEMCPY: u32 = 1;
    /// `CUPTI_ACTIVITY_KIND_MEMSET`.
    pub const MEMSET: u32 = 2;
    /// `CUPTI_ACTIVITY_KIND_KERNEL` (serialising; we never enable it).
    pub const KERNEL: u32 = 3;
    /// `CUPTI_ACTIVITY_KIND_DRIVER`.
    pub const DRIVER: u32 = 4;
    /// `CUPTI_ACTIVITY_KIND_RUNTIME`.
    pub const RUNTIME: u32 = 5;
    /// `CUPTI_ACTIVITY_KIND_CONTEXT`.
    pub const CONTEXT: u32 = 9;
    /// `CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL`.
    pub const CONCURRENT_KERNEL: u32 = 10;
    /// `CUPTI_ACTIVITY_KIND_NAME`.
    pub const NAME: u32 = 11;
    /// `CUPTI_ACTIVITY_KIND_MARKER`.
    pub const MARKER: u32 = 12;
    /// `CUPTI_ACTIVITY_KIND_MARKER_DATA`.
    pub const MARKER_DATA: u32 = 13;
    /// `CUPTI_ACTIVITY_KIND_OVERHEAD`.
    pub const OVERHEAD: u32 = 17;
    /// `CUPTI_ACTIVITY_KIND_MEMCPY2` (peer to peer).
    pub const MEMCPY2: u32 = 22;
    /// `CUPTI_ACTIVITY_KIND_CUDA_EVENT`.
    pub const CUDA_EVENT: u32 = 36;
    /// `CUPTI_ACTIVITY_KIND_STREAM`.
    pub const STREAM: u32 = 37;
    /// `CUPTI_ACTIVITY_KIND_SYNCHRONIZATION`.
    pub const SYNCHRONIZATION: u32 = 38;
    /// `CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION`.
    pub const EXTERNAL_CORRELATION: u32 = 39;
    /// `CUPTI_ACTIVITY_KIND_INTERNAL_LAUNCH_API`.
    pub const INTERNAL_LAUNCH_API: u32 = 48;
    /// `CUPTI_ACTIVITY_KIND_GRAPH_TRACE`.
    pub const GRAPH_TRACE: u32 = 51;

    /// A short lowercase name for counts and messages.
    pub fn name(kind: u32) -> &'static str {
        match kind {
            MEMCPY => "memcpy",
            MEMSET => "memset",
            KERNEL => "kernel",
            DRIVER => "driver",
            RUNTIME => "runtime",
            CONTEXT => "context",
            CONCURRENT_KERNEL => "concurrent_kernel",
            NAME => "name",
            MARKER => "marker",
            MARKER_DATA => "marker_data",
            OVERHEAD => "overhead",
            MEMCPY2 => "memcpy2",
            CUDA_EVENT => "cuda_event",
            STREAM => "stream",
            SYNCHRONIZATION => "synchronization",
            EXTERNAL_CORRELATION => "external_correlation",
            INTERNAL_LAUNCH_API => "internal_launch_api",
            GRAPH_TRACE => "graph_trace",
            _ => "other",
        }
    }
}

/// The CUPTI release families whose layouts we know.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Family {
    /// CUPTI 12.9 (API version 28): `Kernel9`, 208-byte kernels.
    Cupti12_9,
    /// CUPTI 13.0 (API version 130001): `Kernel10`, 216-byte kernels.
    Cupti13_0,
}

/// The record layouts of one CUPTI family, and its record sizes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layouts {
    /// Which family.
    pub family: Family,
    /// CONCURRENT_KERNEL and KERNEL.
    pub kernel: KernelLayout,
    /// MEMCPY.
    pub memcpy: MemcpyLayout,
    /// MEMCPY2.
    pub peer: PeerLayout,
    /// MEMSET.
    pub memset: MemsetLayout,
    /// SYNCHRONIZATION.
    pub sync: SyncLayout,
    /// RUNTIME, DRIVER and INTERNAL_LAUNCH_API.
    pub api: ApiLayout,
    /// EXTERNAL_CORRELATION.
    pub external: ExternalLayout,
    /// MARKER.
    pub marker: MarkerLayout,
    /// OVERHEAD.
    pub overhead: OverheadLayout,
    /// MARKER_DATA size (`MarkerData` 32 on 12.9, `MarkerData2` 40 on 13.0);
    /// walked over, not decoded.
    pub marker_data_size: usize,
}

/// CUPTI 12.9's layouts.
pub const CUPTI_12_9: Layouts = Layouts {
    family: Family::Cupti12_9,
    kernel: kernel::KERNEL9,
    memcpy: memcpy::MEMCPY6_V12,
    peer: memcpy::PTOP4,
    memset: memset::MEMSET4_V12,
    sync: sync::SYNC2,
    api: api::API,
    external: external::EXTERNAL,
    marker: marker::MARKER2,
    overhead: overhead::OVERHEAD3,
    marker_data_size: 32,
};

/// CUPTI 13.0's layouts.
pub const CUPTI_13_0: Layouts = Layouts {
    family: Family::Cupti13_0,
    kernel: kernel::KERNEL10,
    memcpy: memcpy::MEMCPY6_V13,
    memset: memset::MEMSET4_V13,
    marker_data_size: 40,
    ..CUPTI_12_9
};

/// The API version of CUPTI 12.9.
pub const API_VERSION_12_9: u32 = 28;
/// The API version of CUPTI 13.0.
pub const API_VERSION_13_0: u32 = 130001;
/// The API version of CUPTI 13.1, the first with `Kernel11`.
pub const API_VERSION_13_1: u32 = 130101;

/// A CUPTI whose record layouts we do not know.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "CUPTI API version {0} is not supported: gapscope reads the records of CUPTI 12.9 \
     (API 28) and 13.0 (API 130001); use the libcupti of one of those releases"
)]
pub struct UnsupportedVersion(pub u32);

impl Layouts {
    /// The layouts for the API version `cuptiGetVersion` reports.
    ///
    /// Only releases whose headers were checked are accepted: 12.9 (28) and
    /// 13.0 (130001..130100). Older 12.x and 13.1+ change record structs
    /// (`Synchronization`, `Overhead2`, `Kernel11`...), so they are refused
    /// rather than misread.
    pub fn for_api_version(api: u32) -> Result<Layouts, UnsupportedVersion> {
        match api {
            API_VERSION_12_9 => Ok(CUPTI_12_9),
            API_VERSION_13_0..API_VERSION_13_1 => Ok(CUPTI_13_0),
            v => Err(UnsupportedVersion(v)),
        }
    }

    /// How many bytes a record of `kind` takes in this family's buffers, as
    /// CUPTI's iterator steps over it; `None` for kinds we do not know.
    pub fn record_size(&self, kind: u32) -> Option<usize> {
        Some(match kind {
            kind::MEMCPY => self.memcpy.size,
            kind::MEMSET => self.memset.size,
            kind::KERNEL | kind::CONCURRENT_KERNEL => self.kernel.size,
            kind::DRIVER | kind::RUNTIME | kind::INTERNAL_LAUNCH_API => self.api.size,
            kind::CONTEXT => 32,
            kind::NAME => 32,
            kind::MARKER => self.marker.size,
            kind::MARKER_DATA => self.marker_data_size,
            kind::OVERHEAD => self.overhead.size,
            kind::MEMCPY2 => self.peer.size,
            kind::CUDA_EVENT => 56,
            kind::STREAM => 24,
            kind::SYNCHRONIZATION => self.sync.size,
            kind::EXTERNAL_CORRELATION => self.external.size,
            kind::GRAPH_TRACE => 56,
            _ => return None,
        })
    }
}

/// One decoded record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Record {
    /// CONCURRENT_KERNEL or KERNEL.
    Kernel(KernelRecord),
    /// MEMCPY.
    Memcpy(MemcpyRecord),
    /// MEMCPY2.
    PeerMemcpy(PeerMemcpyRecord),
    /// MEMSET.
    Memset(MemsetRecord),
    /// SYNCHRONIZATION.
    Sync(SyncRecord),
    /// RUNTIME.
    Runtime(ApiRecord),
    /// DRIVER.
    Driver(ApiRecord),
    /// EXTERNAL_CORRELATION.
    External(ExternalRecord),
    /// MARKER.
    Marker(MarkerRecord),
    /// OVERHEAD.
    Overhead(OverheadRecord),
    /// A kind of known size that gapscope does not decode (NAME, STREAM, ...).
    Skipped(u32),
}

/// Why a record could not be decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    /// Fewer than 4 bytes: not even a kind.
    #[error("record of {0} bytes has no kind")]
    NoKind(usize),
    /// A kind this family does not know.
    #[error("unknown activity kind {0}")]
    UnknownKind(u32),
    /// Shorter than its layout.
    #[error("{kind} record of {have} bytes, layout needs {need}")]
    Truncated {
        /// The record's kind.
        kind: u32,
        /// Bytes the layout needs.
        need: usize,
        /// Bytes the record has.
        have: usize,
    },
}

/// Decodes one record: `rec` starts at the record's kind and runs to the next
/// record (or the buffer's valid end).
pub fn decode_record(rec: &[u8], layouts: &Layouts) -> Result<Record, DecodeError> {
    let k = match rec.get(0..4) {
        Some(b) => u32::from_le_bytes([b[0], b[1], b[2], b[3]]),
        None => return Err(DecodeError::NoKind(rec.len())),
    };
    let short = |s: Short| DecodeError::Truncated {
        kind: k,
        need: s.need,
        have: s.have,
    };
    Ok(match k {
        kind::KERNEL | kind::CONCURRENT_KERNEL => {
            Record::Kernel(kernel::parse(rec, &layouts.kernel).map_err(short)?)
        }
        kind::MEMCPY => Record::Memcpy(memcpy::parse(rec, &layouts.memcpy).map_err(short)?),
        kind::MEMCPY2 => Record::PeerMemcpy(memcpy::parse_peer(rec, &layouts.peer).map_err(short)?),
        kind::MEMSET => Record::Memset(memset::parse(rec, &layouts.memset).map_err(short)?),
        kind::SYNCHRONIZATION => Record::Sync(sync::parse(rec, &layouts.sync).map_err(short)?),
        kind::RUNTIME => Record::Runtime(api::parse(rec, &layouts.api).map_err(short)?),
        kind::DRIVER => Record::Driver(api::parse(rec, &layouts.api).map_err(short)?),
        kind::EXTERNAL_CORRELATION => {
            Record::External(external::parse(rec, &layouts.external).map_err(short)?)
        }
        kind::MARKER => Record::Marker(marker::parse(rec, &layouts.marker).map_err(short)?),
        kind::OVERHEAD => Record::Overhead(overhead::parse(rec, &layouts.overhead).map_err(short)?),
        k if layouts.record_size(k).is_some() => Record::Skipped(k),
        k => return Err(DecodeError::UnknownKind(k)),
    })
}

/// Why a buffer walk stopped early.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum WalkError {
    /// A kind whose size is unknown: nothing after it can be found
    /// (CUPTI's iterator says `CUPTI_ERROR_INVALID_KIND`).
    #[error("unknown activity kind {kind} at byte {offset}")]
    UnknownKind {
        /// Where the record starts.
        offset: usize,
        /// Its kind.
        kind: u32,
    },
    /// The last record runs past the buffer's valid end.
    #[error("record of kind {kind} at byte {offset} needs {need} bytes, {have} left")]
    Truncated {
        /// Where the record starts.
        offset: usize,
        /// Its kind (0 when fewer than 4 bytes were left).
        kind: u32,
        /// Bytes it needs.
        need: usize,
        /// Bytes left.
        have: usize,
    },
}

/// Walks a buffer's valid bytes record by record, yielding
/// `(offset, record bytes)`; stops after the first error.
pub struct RecordIter<'a> {
    buf: &'a [u8],
    pos: usize,
    layouts: Layouts,
    done: bool,
}

impl<'a> RecordIter<'a> {
    /// Iterates `buf` (the buffer's first `validSize` bytes).
    pub fn new(buf: &'a [u8], layouts: &Layouts) -> Self {
        RecordIter {
            buf,
            pos: 0,
            layouts: *layouts,
            done: false,
        }
    }
}

impl<'a> Iterator for RecordIter<'a> {
    type Item = Result<(usize, &'a [u8]), WalkError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done || self.pos >= self.buf.len() {
            return None;
        }
        let offset = self.pos;
        let rest = &self.buf[offset..];
        let fail = |this: &mut Self, e| {
            this.done = true;
            Some(Err(e))
        };
        let Some(kb) = rest.get(0..4) else {
            return fail(
                self,
                WalkError::Truncated {
                    offset,
                    kind: 0,
                    need: 4,
                    have: rest.len(),
                },
            );
        };
        let k = u32::from_le_bytes([kb[0], kb[1], kb[2], kb[3]]);
        let Some(size) = self.layouts.record_size(k) else {
            return fail(self, WalkError::UnknownKind { offset, kind: k });
        };
        if size > rest.len() {
            return fail(
                self,
                WalkError::Truncated {
                    offset,
                    kind: k,
                    need: size,
                    have: rest.len(),
                },
            );
        }
        self.pos += size;
        Some(Ok((offset, &rest[..size])))
    }
}

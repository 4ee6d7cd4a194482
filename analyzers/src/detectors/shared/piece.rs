//! A piece of an idle segment and what a runtime call inside it is: the
//! detectors' biggest table, cut by [`super::pieces`].

use crate::causes::Cause;
use gapscope_collectors::trace::{CallRow, Ns};

/// What a runtime call inside an idle stretch is, for the detectors that
/// blame the call itself rather than the code around it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CallClass {
    /// A copy to or from pageable host memory (D8).
    Pageable,
    /// A host→device copy of at most [`TINY_COPY_BYTES`] (D7).
    TinyHtoD,
    /// A non-`Async` memcpy (except small host→device ones) or memset (D9).
    SyncCopy,
    /// `cudaMalloc` / `cudaFree` / pinned host allocation (D14).
    Alloc,
    /// Any other call longer than [`SLOW_CALL_NS`] (D14).
    Slow,
}

/// "Scalar" copy size: fits any single element, complex128 included
/// (docs/detectors.md, D5 and D7; ours).
pub(crate) const TINY_COPY_BYTES: u64 = 16;
/// Host→device copies up to 64 KB return before the copy completes, so
/// nsys's `cuda_memcpy_sync` rule skips them (CUDA Programming Guide,
/// "Concurrent Execution between Host and Device").
pub(crate) const SMALL_HTOD_BYTES: u64 = 64 * 1024;
/// HTA's `runtime_cutoff`: a runtime call longer than 50 µs is an outlier.
pub(crate) const SLOW_CALL_NS: Ns = 50_000;
/// A copy call this close before a sync (TraceLens/HTA 50 µs runtime scale)
/// is the copy the sync waits for: PyTorch's blocking `.to()` is
/// `cudaMemcpyAsync` + `cudaStreamSynchronize` (docs/detectors.md, D9).
pub(crate) const COPY_SYNC_PAIR_NS: Ns = 50_000;

/// One piece of an idle segment: the segment cut at the edges of the
/// runtime calls of interest.
///
/// What the segment says beyond its cause (operator, annotation, source,
/// first call) is read through [`Cx::seg`](super::context::Cx::seg), and
/// the piece's CPU thread through
/// [`Cx::thread`](super::context::Cx::thread): pieces are the detectors'
/// biggest table (millions on a large trace), so each keeps only what
/// the claims test on every piece.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Piece {
    pub start: Ns,
    pub end: Ns,
    /// The piece's segment: an index into [`Cx::segs`](super::context::Cx::segs).
    pub seg: u32,
    /// The blocking call holding the piece (cause `sync`), if any.
    pub blocking: Option<CallRow>,
    /// The call of interest holding the piece, if any.
    pub call: Option<CallRow>,
    /// Why the device was idle (the segment's cause).
    pub cause: Cause,
    pub class: Option<CallClass>,
}

impl Piece {
    pub fn dur(&self) -> Ns {
        self.end - self.start
    }
}

// A piece stays at 32 bytes: there are millions of them on a big trace.
const _: () = assert!(std::mem::size_of::<Piece>() == 32);

//! A piece of an idle segment and what a runtime call inside it is: the
//! detectors' biggest table, cut by [`super::pieces`].

use crate::causes::Cause;
use crate::segments::IdleSegment;
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
/// A copy call that returned this close before a sync started
/// (TraceLens/HTA 50 µs runtime scale) is the copy the sync waits for:
/// PyTorch's blocking `.to()` is `cudaMemcpyAsync` + `cudaStreamSynchronize`
/// (docs/detectors.md, D9). Timed from the call's end: a pageable copy's
/// call can last milliseconds.
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

/// A piece's index: lists of pieces hold `u32`s (a group can hold
/// millions), loops count in `usize`.
pub(crate) trait PieceIndex: Copy {
    fn index(self) -> usize;
}

impl PieceIndex for usize {
    #[inline]
    fn index(self) -> usize {
        self
    }
}

impl PieceIndex for u32 {
    #[inline]
    fn index(self) -> usize {
        self as usize
    }
}

/// The pieces of a device's idle segments, in time order, read by index
/// ([`Pieces::get`]).
///
/// Most pieces are a whole segment holding no call (on a 551 MB DDP trace
/// 1.67 M of 1.99 M): such a piece is kept as its segment's index alone,
/// 4 bytes instead of a 32-byte [`Piece`], and made again from the
/// segment when read. The others are kept whole.
///
/// Two small indexes serve the detectors that want few of the pieces, so
/// that they read those instead of every piece (a read of a whole piece
/// reads its 32-byte segment; on that trace the scans of the 15 or so
/// detectors that read every piece were most of a 0.26 s stretch on one
/// core): each piece's cause, one byte, and where the pieces kept whole
/// are.
#[derive(Debug, Default)]
pub(crate) struct Pieces {
    /// Per piece: its segment's index when it is that whole segment, else
    /// [`CUT`] plus its index in `cut`.
    ix: Vec<u32>,
    cut: Vec<Piece>,
    /// The piece index of each of `cut`, ascending.
    cut_at: Vec<u32>,
    /// Each piece's cause.
    causes: Vec<Cause>,
}

/// The mark of an index into [`Pieces::cut`]; segment indices below it.
const CUT: u32 = 1 << 31;

impl Pieces {
    pub fn with_capacity(n: usize) -> Pieces {
        Pieces {
            ix: Vec::with_capacity(n),
            cut: Vec::new(),
            cut_at: Vec::new(),
            causes: Vec::with_capacity(n),
        }
    }

    /// Appends `p`, a piece of `seg`.
    pub fn push(&mut self, p: Piece, seg: &IdleSegment) {
        debug_assert_eq!(p.cause, seg.cause);
        // Lists of pieces hold `u32` indices.
        assert!(self.ix.len() < u32::MAX as usize, "idle pieces past u32::MAX");
        let whole = p.start == seg.start
            && p.end == seg.end
            && p.blocking.is_none()
            && p.call.is_none()
            && p.class.is_none();
        self.causes.push(p.cause);
        if whole && p.seg < CUT {
            self.ix.push(p.seg);
        } else {
            let k = u32::try_from(self.cut.len())
                .ok()
                .filter(|&k| k < CUT)
                .expect("cut idle pieces past 2^31");
            self.cut_at.push(self.ix.len() as u32);
            self.ix.push(CUT | k);
            self.cut.push(p);
        }
    }

    pub fn len(&self) -> usize {
        self.ix.len()
    }

    /// The cause of every piece, in order.
    pub fn causes(&self) -> &[Cause] {
        &self.causes
    }

    /// The pieces kept whole (those with a call, a blocking call or a
    /// class, and those cut from their segment), with their indices, in
    /// order: every piece not made again from its segment alone.
    pub fn kept(&self) -> impl Iterator<Item = (usize, &Piece)> + '_ {
        self.cut_at.iter().map(|&i| i as usize).zip(&self.cut)
    }

    /// Whether piece `i` is made again from its segment alone (no call,
    /// blocking call or class; the segment's whole span).
    pub fn is_whole(&self, i: usize) -> bool {
        self.ix[i] & CUT == 0
    }

    /// Piece `i`, whose segments are `segs`.
    #[inline]
    pub fn get(&self, segs: &[IdleSegment], i: usize) -> Piece {
        let v = self.ix[i];
        if v & CUT == 0 {
            let s = &segs[v as usize];
            Piece {
                start: s.start,
                end: s.end,
                seg: v,
                blocking: None,
                call: None,
                cause: s.cause,
                class: None,
            }
        } else {
            self.cut[(v & !CUT) as usize]
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seg(start: Ns, end: Ns, cause: Cause) -> IdleSegment {
        IdleSegment::unblamed(start, end, cause)
    }

    #[test]
    fn pieces_read_back_as_pushed_whole_or_cut() {
        let segs = [
            seg(0, 10, Cause::CpuOp),
            seg(10, 30, Cause::Sync),
            seg(30, 35, Cause::Queued),
        ];
        let whole = |n: u32| Piece {
            start: segs[n as usize].start,
            end: segs[n as usize].end,
            seg: n,
            blocking: None,
            call: None,
            cause: segs[n as usize].cause,
            class: None,
        };
        let pushed = [
            whole(0),
            // Cut at a call: two pieces, the first holding the call.
            Piece {
                end: 20,
                call: Some(CallRow::new(4)),
                class: Some(CallClass::Slow),
                ..whole(1)
            },
            Piece {
                start: 20,
                ..whole(1)
            },
            // Whole, but inside a blocking call: kept as it is.
            Piece {
                blocking: Some(CallRow::new(7)),
                ..whole(2)
            },
        ];
        let mut pieces = Pieces::with_capacity(segs.len());
        for p in pushed {
            pieces.push(p, &segs[p.seg as usize]);
        }
        assert_eq!(pieces.len(), 4);
        // Only the first is stored as its segment's index.
        assert_eq!(pieces.cut.len(), 3);
        assert_eq!(pieces.kept().map(|(i, _)| i).collect::<Vec<_>>(), vec![1, 2, 3]);
        assert!(pieces.is_whole(0) && !pieces.is_whole(1));
        assert_eq!(
            pieces.causes(),
            &[Cause::CpuOp, Cause::Sync, Cause::Sync, Cause::Queued]
        );
        for (i, p) in pushed.iter().enumerate() {
            let got = pieces.get(&segs, i);
            assert_eq!(
                (
                    got.start,
                    got.end,
                    got.seg,
                    got.blocking,
                    got.call,
                    got.cause,
                    got.class
                ),
                (p.start, p.end, p.seg, p.blocking, p.call, p.cause, p.class),
                "piece {i}"
            );
        }
    }
}

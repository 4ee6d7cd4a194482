//! Pieces: the idle segments of a device cut at the edges of the runtime
//! calls some detectors blame directly (copies, allocator calls, slow
//! calls), each piece with the blocking call or the call of interest that
//! holds it, and the copy a blocking call waits for.

use super::context::Cx;
use crate::causes::Cause;
use crate::names::{api_name, is_alloc_api, is_async_api, is_memcpy_api, is_memset_api, is_sync_api};
use crate::segments::{IdleAnalyzer, IdleSegment};
use gapscope_collectors::trace::{CallRow, CopyKind, GpuKind, GpuRow, MemKind, Ns};

pub(crate) use super::piece::*;

/// How many calls [`Cx::paired_copy`] walks back over: the calls other
/// threads started while the copy call ran sit between it and its sync
/// (ours; a bound, not a measure: on the shared traces a handful).
const PAIR_SCAN_CALLS: usize = 4096;

impl Cx<'_> {
    /// Cuts [`Cx::segs`] at the edges of the calls of interest (they are
    /// already split at the edges of lazy kernel loading, whose time D16's
    /// warm-up claims exactly).
    /// No call explains time once the next work is queued, nor graph setup
    /// or profiler time: those pieces carry no call.
    pub(crate) fn cut(&self) -> Pieces {
        let calls = self.calls_of_interest();
        let queued = IdleAnalyzer::with_context(self.trace, self.ops).queued_by_gap(self.ev, self.window);
        let mut out = Pieces::with_capacity(self.segs.len());
        let (mut k, mut g) = (0, 0);
        for (n, seg) in self.segs.iter().enumerate() {
            let n = u32::try_from(n).expect("idle segments past u32::MAX");
            while k < calls.len() && calls[k].1 <= seg.start {
                k += 1;
            }
            // When the next work of the segment's gap was queued.
            while g < queued.len() && queued[g].0 <= seg.start {
                g += 1;
            }
            let queued_from = queued.get(g).map_or(Ns::MAX, |q| q.1);
            if matches!(seg.cause, Cause::GraphCapture | Cause::Profiler) || seg.start >= queued_from {
                out.push(self.make_piece(n, seg, seg.start, seg.end, None, None), seg);
                continue;
            }
            let host_end = seg.end.min(queued_from);
            let mut at = seg.start;
            let mut j = k;
            while at < host_end {
                let (call, class, until) = match calls.get(j) {
                    Some(&(s, e, c, cl)) if s < host_end => {
                        if s > at {
                            (None, None, s)
                        } else {
                            j += 1;
                            (Some(c), Some(cl), e.min(host_end))
                        }
                    }
                    _ => (None, None, host_end),
                };
                if until > at {
                    out.push(self.make_piece(n, seg, at, until, call, class), seg);
                }
                at = until.max(at);
            }
            if host_end < seg.end {
                out.push(self.make_piece(n, seg, host_end, seg.end, None, None), seg);
            }
        }
        out
    }

    /// Piece `[start, end)` of segment `seg` (index `n` in
    /// [`Cx::segs`]).
    fn make_piece(
        &self,
        n: u32,
        seg: &IdleSegment,
        start: Ns,
        end: Ns,
        call: Option<CallRow>,
        class: Option<CallClass>,
    ) -> Piece {
        let blocking = match seg.cause {
            Cause::Sync => self.ev.blocking_at(start).map(|b| b.call),
            _ => None,
        };
        Piece {
            start,
            end,
            seg: n,
            blocking,
            call,
            cause: seg.cause,
            class,
        }
    }

    /// Calls of interest on the launching threads, sorted and disjoint (the
    /// earlier call keeps an overlap).
    pub(crate) fn calls_of_interest(&self) -> Vec<(Ns, Ns, CallRow, CallClass)> {
        let rt = &self.trace.runtime;
        let mut launcher = vec![false; self.trace.threads.len()];
        for t in &self.ev.launchers {
            launcher[t.0 as usize] = true;
        }
        let (ws, we) = self.window;
        // Names decide most calls: a launch is of interest only when slow.
        // Classify each distinct name once (millions of calls, few names).
        let mut plain: Vec<Option<bool>> = vec![None; self.trace.strings.len()];
        let mut out: Vec<(Ns, Ns, CallRow, CallClass)> = Vec::new();
        for r in 0..rt.len() {
            if rt.start[r] >= we || rt.end[r] <= ws || rt.end[r] <= rt.start[r] {
                continue;
            }
            if !launcher.get(rt.thread[r].0 as usize).copied().unwrap_or(false) {
                continue;
            }
            let id = rt.name[r].0 as usize;
            let name = api_name(self.trace.strings.get(rt.name[r]));
            let is_plain = *plain[id]
                .get_or_insert_with(|| !(is_memcpy_api(name) || is_memset_api(name) || is_alloc_api(name)));
            if is_plain && rt.end[r] - rt.start[r] <= SLOW_CALL_NS {
                continue;
            }
            if let Some(class) = self.call_class_named(CallRow::new(r), name) {
                let s = out.last().map_or(rt.start[r], |l| rt.start[r].max(l.1));
                if rt.end[r] > s {
                    out.push((s, rt.end[r], CallRow::new(r), class));
                }
            }
        }
        out
    }

    /// What runtime call `r` (named `name`) is, if it is of interest.
    pub(crate) fn call_class_named(&self, r: CallRow, name: &str) -> Option<CallClass> {
        let rt = &self.trace.runtime;
        let is_async = is_async_api(name);
        let g = self.call_gpu[r.index()];
        let gpu = &self.trace.gpu;
        if let Some(g) = g
            .map(GpuRow::index)
            .filter(|&g| is_memcpy_api(name) && gpu.kind[g] == GpuKind::Memcpy)
        {
            let (bytes, kind) = (gpu.bytes[g], gpu.copy_kind[g]);
            if kind == CopyKind::HtoD && bytes <= TINY_COPY_BYTES {
                return Some(CallClass::TinyHtoD);
            }
            let pageable = gpu.src_mem[g] == MemKind::Pageable || gpu.dst_mem[g] == MemKind::Pageable;
            let small_htod = kind == CopyKind::HtoD && bytes <= SMALL_HTOD_BYTES;
            if !(is_async || small_htod || kind == CopyKind::DtoD) {
                return Some(CallClass::SyncCopy);
            }
            if pageable {
                return Some(CallClass::Pageable);
            }
            return None;
        }
        if is_memset_api(name) && !is_async && g.is_some() {
            return Some(CallClass::SyncCopy);
        }
        if is_alloc_api(name) {
            return Some(CallClass::Alloc);
        }
        let dur = rt.end[r.index()] - rt.start[r.index()];
        (dur > SLOW_CALL_NS && !is_sync_api(name) && !is_memcpy_api(name)).then_some(CallClass::Slow)
    }

    /// The copy (or memset) GPU row a blocking call waits for: its own, or
    /// that of a copy call on the same thread that ended at most
    /// [`COPY_SYNC_PAIR_NS`] before it started.
    pub fn paired_copy(&self, call: CallRow) -> Option<GpuRow> {
        let g = &self.trace.gpu;
        let copy = |row: Option<GpuRow>| {
            row.filter(|r| matches!(g.kind[r.index()], GpuKind::Memcpy | GpuKind::Memset))
        };
        if let Some(own) = copy(self.call_gpu[call.index()]) {
            return Some(own);
        }
        let rt = &self.trace.runtime;
        let (start, thread) = (rt.start[call.index()], rt.thread[call.index()]);
        let k = rt.start.partition_point(|&s| s < start);
        // The pair is timed from the copy call's end: a pageable copy's
        // call is staged for as long as the copy (2 ms for ResNet-50's
        // 19 MB batch), so its start can lie far before the sync. Calls of
        // one thread follow each other, so walking back, the first call of
        // this thread that ended before the pair window ends the search;
        // other threads' calls in between are skipped, up to a bound.
        for r in (0..k).rev().take(PAIR_SCAN_CALLS) {
            if rt.thread[r] != thread {
                continue;
            }
            if rt.end[r] < start - COPY_SYNC_PAIR_NS {
                break;
            }
            if let Some(row) = copy(self.call_gpu[r]) {
                return Some(row);
            }
        }
        None
    }
}

//! [`Cx`]: what the detectors of one device share, built once per device:
//! the trace, the blame columns, the window and steps, the CPU-side
//! evidence, the idle pieces and the first GPU row of every call. The
//! replay graph that estimates savings is built beside the detectors
//! (`detect_device`), from the same evidence.

use super::piece::{Piece, PieceIndex, Pieces};
use crate::attribution::OpContext;
use crate::detectors::artifacts;
use crate::evidence::DeviceEvidence;
use crate::intervals::Span;
use crate::names::is_graph_launch_api;
use crate::platform::Platform;
use crate::segments::IdleSegment;
use crate::window::{Step, Window};
use crate::workload::Workload;
use gapscope_collectors::trace::{CallRow, GpuKind, GpuRow, Ns, ThreadId, Trace};
use std::borrow::Cow;

/// Everything the detectors of one device share.
pub(crate) struct Cx<'a> {
    pub trace: &'a Trace,
    pub ops: &'a OpContext,
    pub device: u32,
    pub window: Span,
    pub steps: &'a [Step],
    pub ev: &'a DeviceEvidence,
    /// The device's idle segments, split at the edges of lazy kernel
    /// loading: what [`Piece::seg`] indexes.
    pub segs: Cow<'a, [IdleSegment]>,
    /// Read through [`Cx::piece`].
    pub pieces: Pieces,
    /// Per `runtime` row: the first busy or sync GPU row of this device it
    /// launched, if any.
    pub call_gpu: Vec<Option<GpuRow>>,
    /// The window's last step when the capture cut it short (D16).
    pub partial_last: Option<artifacts::PartialStep>,
    /// CUDA or ROCm: the words hints use.
    pub platform: Platform,
    /// Whether the trace shows training: the advice hints give.
    pub workload: Workload,
    /// The device's busy GPU rows in start order.
    pub busy: Vec<GpuRow>,
    /// Per `gpu` row: a collective kernel
    /// ([`collectives::communication_rows`](crate::collectives::communication_rows)).
    pub comm: &'a [bool],
    /// Read through [`Cx::graph_replayed`].
    graph_replayed: std::sync::OnceLock<(u64, u64)>,
}

impl<'a> Cx<'a> {
    pub(crate) fn new(
        trace: &'a Trace,
        ops: &'a OpContext,
        comm: &'a [bool],
        ev: &'a DeviceEvidence,
        window: &'a Window,
        segs: &'a [IdleSegment],
    ) -> Cx<'a> {
        let device = ev.device;
        let mut call_gpu = vec![None; trace.runtime.len()];
        for i in 0..trace.gpu.len() {
            if let Some(c) = trace.links.gpu_launch[i].filter(|_| trace.gpu.device[i] == device) {
                call_gpu[c.index()].get_or_insert(GpuRow::new(i));
            }
        }
        let mut cx = Cx {
            trace,
            ops,
            device,
            window: window.span,
            steps: &window.steps,
            ev,
            segs: split_at(segs, &ev.lazy_loading),
            pieces: Pieces::default(),
            call_gpu,
            partial_last: artifacts::partial_last_step(trace, device, &window.steps),
            platform: Platform::of(trace),
            workload: ops.workload,
            busy: crate::gaps::busy_rows(trace, device),
            comm,
            graph_replayed: std::sync::OnceLock::new(),
        };
        cx.pieces = cx.cut();
        cx
    }

    /// What the context owns (the pieces and the per-row columns), for
    /// freeing apart from it.
    pub(crate) fn into_owned(self) -> impl Send + 'static {
        let segs = match self.segs {
            Cow::Owned(v) => Some(v),
            Cow::Borrowed(_) => None,
        };
        (segs, self.pieces, self.call_gpu, self.busy)
    }

    /// The device's kernels in the window with a launching call: those a
    /// graph launch replayed, and all of them.
    pub fn graph_replayed(&self) -> (u64, u64) {
        *self.graph_replayed.get_or_init(|| {
            let (t, (ws, we)) = (self.trace, self.window);
            let (mut replayed, mut all) = (0, 0);
            for &r in &self.busy {
                let r = r.index();
                if t.gpu.kind[r] != GpuKind::Kernel || t.gpu.start[r] >= we || t.gpu.end[r] <= ws {
                    continue;
                }
                let Some(c) = t.links.gpu_launch[r] else { continue };
                all += 1;
                if is_graph_launch_api(t.strings.get(t.runtime.name[c.index()])) {
                    replayed += 1;
                }
            }
            (replayed, all)
        })
    }

    /// Piece `i`.
    #[inline]
    pub fn piece(&self, i: impl PieceIndex) -> Piece {
        self.pieces.get(&self.segs, i.index())
    }

    /// Every piece, in order.
    pub fn all_pieces(&self) -> impl DoubleEndedIterator<Item = Piece> + ExactSizeIterator + '_ {
        (0..self.n_pieces()).map(|i| self.piece(i))
    }

    /// The number of pieces.
    pub fn n_pieces(&self) -> usize {
        self.pieces.len()
    }

    /// The first piece for which `pred` is false, `pred` being true of
    /// every piece before it and false of every piece after (as
    /// [`slice::partition_point`]).
    pub fn piece_partition_point(&self, pred: impl Fn(&Piece) -> bool) -> usize {
        let (mut lo, mut hi) = (0, self.n_pieces());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if pred(&self.piece(mid)) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }

    /// The segment piece `p` was cut from: its operator, annotation,
    /// source and first call.
    pub fn seg(&self, p: &Piece) -> &IdleSegment {
        &self.segs[p.seg as usize]
    }

    /// The CPU thread whose time piece `p` is, if known: the thread of its
    /// blocking call or call of interest, else of its segment's operator
    /// or annotation, else the device's first launching thread.
    pub fn thread(&self, p: &Piece) -> Option<ThreadId> {
        let seg = self.seg(p);
        p.blocking
            .or(p.call)
            .map(|c| self.trace.runtime.thread[c.index()])
            .or_else(|| {
                seg.op
                    .or(seg.annotation)
                    .map(|o| self.trace.cpu_ops.thread[o.index()])
            })
            .or_else(|| self.ev.launchers.first().copied())
    }

    /// Total length of `pieces`.
    pub fn total(&self, pieces: &[u32]) -> Ns {
        pieces.iter().map(|&i| self.piece(i).dur()).sum()
    }

    /// Number of complete profiled steps (at least 1), to say "per step":
    /// a last step cut short by the capture does not count (D16 claims its
    /// idle time).
    pub fn n_steps(&self) -> i64 {
        let partial = usize::from(self.partial_last.is_some());
        (self.steps.len() - partial).max(1) as i64
    }

    /// "per step", or "in the window" for a window without profiled steps:
    /// what a per-step figure ([`Cx::n_steps`]) covers, said truthfully.
    pub fn per_step(&self) -> &'static str {
        if self.steps.is_empty() {
            "in the window"
        } else {
            "per step"
        }
    }

    pub fn window_ns(&self) -> Ns {
        self.window.1 - self.window.0
    }

    /// The busy row that starts when the device becomes busy again at or
    /// after `t` (the end of a gap), preferring one with a known launch,
    /// the earliest launched; none when nothing starts after `t`.
    pub fn next_row(&self, t: Ns) -> Option<GpuRow> {
        let g = &self.trace.gpu;
        self.earliest_launched_at(self.busy.partition_point(|&r| g.start[r.index()] < t))
    }

    /// [`next_row`](Self::next_row) for times that never go back: the
    /// search walks on from `*from` (0 at first), left where this answer
    /// is. A walk over all of a device's gaps reads the busy rows once.
    pub fn next_row_from(&self, t: Ns, from: &mut usize) -> Option<GpuRow> {
        let g = &self.trace.gpu;
        while self.busy.get(*from).is_some_and(|&r| g.start[r.index()] < t) {
            *from += 1;
        }
        self.earliest_launched_at(*from)
    }

    /// Of the busy rows that start with the `k`-th, the one launched
    /// earliest.
    fn earliest_launched_at(&self, k: usize) -> Option<GpuRow> {
        let g = &self.trace.gpu;
        let first = *self.busy.get(k)?;
        let at = g.start[first.index()];
        let launch_start = |r: GpuRow| {
            self.trace.links.gpu_launch[r.index()].map_or(Ns::MAX, |c| self.trace.runtime.start[c.index()])
        };
        self.busy[k..]
            .iter()
            .take_while(|&&r| g.start[r.index()] == at)
            .copied()
            .min_by_key(|&r| launch_start(r))
    }

    /// Whether runtime call `c` holds a `Lazy Function Loading` record: the
    /// driver loaded a kernel's module inside it, so the call is that
    /// kernel's first launch, however long the loading made it (on the
    /// b200 trace 82 µs of a 141.5 µs `cudaLaunchKernel`). CUPTI files the
    /// record under no thread (pid -1), so only time places it in the call.
    pub fn loads_module(&self, c: CallRow) -> bool {
        let rt = &self.trace.runtime;
        let (s, e) = (rt.start[c.index()], rt.end[c.index()]);
        let lazy = &self.ev.lazy_loading;
        let k = lazy.partition_point(|l| l.0 < s);
        lazy.get(k).is_some_and(|l| l.1 <= e)
    }

    /// Whether GPU work follows the gap of piece `i` (anything starts on
    /// the device after it). A read after which nothing runs waits for the
    /// final result: removing the wait lets no GPU work start earlier.
    pub fn followed_by_work(&self, i: impl PieceIndex) -> bool {
        let mut j = i.index();
        let mut end = self.piece(j).end;
        while j + 1 < self.n_pieces() {
            let next = self.piece(j + 1);
            if next.start != end {
                break;
            }
            end = next.end;
            j += 1;
        }
        self.next_row(end).is_some()
    }
}

/// `segs` split at the edges of the sorted, disjoint `spans`.
fn split_at<'s>(segs: &'s [IdleSegment], spans: &[(Ns, Ns)]) -> Cow<'s, [IdleSegment]> {
    // Without spans the segments are the pieces' input as they are: a copy
    // would be as big as the segments (84 MB on a 551 MB DDP trace).
    if spans.is_empty() {
        return Cow::Borrowed(segs);
    }
    let mut out = Vec::with_capacity(segs.len());
    for seg in segs {
        let first = spans.partition_point(|s| s.1 <= seg.start);
        let mut at = seg.start;
        for &(s, e) in spans[first..].iter().take_while(|s| s.0 < seg.end) {
            for edge in [s, e] {
                if edge > at && edge < seg.end {
                    out.push(IdleSegment {
                        start: at,
                        end: edge,
                        ..*seg
                    });
                    at = edge;
                }
            }
        }
        out.push(IdleSegment { start: at, ..*seg });
    }
    Cow::Owned(out)
}

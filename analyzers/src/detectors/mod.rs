//! Detectors (notes/detectors.md D2–D14, D16): turn idle segments into
//! [`Finding`]s a user can act on, each with its evidence, the operator and
//! source line to look at, a PyTorch hint, and a saving estimated by the
//! [what-if replay](crate::whatif).
//!
//! # Who claims which idle nanosecond
//!
//! Detectors do not look for gaps again: they start from the
//! [`IdleSegment`]s of [`segments`](crate::segments), which already carry a
//! cause and an attribution. Segments are cut further at the edges of the
//! runtime calls that some detectors care about (allocator calls, pageable
//! or synchronous copies, slow calls), giving *pieces*. Primary detectors
//! then claim pieces in this order, and a claimed piece is never claimed
//! again, so the idle time of all primary findings together is at most the
//! device's idle time:
//!
//! ```text
//! D16 profiler artifacts      cause profiler; a last step cut short by the
//!                             capture; untraced edges of the window
//! D10 offload ping-pong       syncs/copies of same-size HtoD+DtoH round trips
//! D5  blocking DtoH read      cause sync, the call waits for a DtoH copy
//! D7  scalar HtoD copy        cause sync or inside the copy call, ≤ 16 B HtoD
//! D9  synchronous copy        cause sync on another copy; non-Async copy/memset
//! D6  explicit sync           cause sync, no copy involved
//! D11 DataLoader stall        cause dataloader
//! D14 runtime outliers        inside an allocator call or an outlier call;
//!                             queued work on an idle device after its launch
//! D8  pageable copies         inside a copy call from/to pageable memory
//! D4  per-parameter loop      inside a zero_grad / optimizer range that loops
//! D3  small serial kernels    inside a run of short kernels
//! D2  CPU-bound               cause cpu_op / framework_overhead, the rest
//! ```
//!
//! D12 (underfilled kernels) and D13 (cross-stream waits) are context: they
//! are not about device idle time and claim nothing (`primary: false`).
//!
//! # Savings
//!
//! Each finding carries an [`Edit`] of the dependency graph (remove the CPU
//! time of its pieces, the waits of its syncs, the GPU rows a fix deletes);
//! `est_savings_ns` is the replay's makespan reduction, capped at
//! `explained_ns` (its idle time plus the busy time the fix removes, plus
//! the drain after the syncs of D5 and D7: [`Cx::drain_after`]), and 0
//! for findings whose fix cannot be estimated from a timeline.

mod artifacts;
mod cpu_bound;
mod d2h_read;
mod dataloader;
mod explicit_sync;
mod offload;
mod pageable;
mod param_loop;
mod runtime_outliers;
mod scalar_h2d;
mod small_kernels;
mod stream_wait;
mod sync_copy;
mod underfilled;

use crate::attribution::{display_source, OpContext};
use crate::causes::Cause;
use crate::evidence::DeviceEvidence;
use crate::intervals::Span;
use crate::segments::{IdleAnalyzer, IdleSegment};
use crate::whatif::{Edit, Replay};
use crate::window::{Step, Window};
use gapscope_collectors::trace::{CopyKind, GpuKind, MemKind, Ns, StrId, Strings, ThreadId, Trace, NONE};
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, HashSet};

/// One problem found in a trace, with what to do about it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Finding {
    /// Stable snake_case slug (`dataloader_stall`).
    pub id: String,
    /// Catalog number in notes/detectors.md (`D11`).
    pub detector: String,
    /// One line saying what was found.
    pub title: String,
    /// GPU index.
    pub device: u32,
    /// How many times the pattern occurred (calls, ranges, runs, copies).
    pub occurrences: u64,
    /// Device idle time this finding explains, ns. For primary findings each
    /// idle nanosecond belongs to at most one finding.
    pub idle_ns: Ns,
    /// `idle_ns` plus the busy time the fix removes (the kernels of a
    /// per-parameter loop, the copies of an offload), ns; for blocking reads
    /// and scalar copies (D5, D7) also the drain after each sync (idle
    /// time other findings claim, which the fix removes when the host
    /// keeps ahead of the GPU).
    pub explained_ns: Ns,
    /// What the fix should save, from the what-if replay, capped at
    /// `explained_ns`; 0 when not estimable.
    pub est_savings_ns: Ns,
    /// Whether `idle_ns` is an exclusive claim on device idle time (false
    /// for context findings such as underfilled kernels).
    pub primary: bool,
    /// The operator to look at (`aten::item`).
    pub operator: Option<String>,
    /// Its nearest annotation / module / optimizer / DataLoader range.
    pub annotation: Option<String>,
    /// Source location (`train.py(42): step`) when the trace has it.
    pub source: Option<String>,
    /// Where in the trace: idle pieces and the rows behind them.
    pub evidence: Vec<Evidence>,
    /// What to change, in PyTorch terms.
    pub hint: String,
}

/// A place in the trace a finding points at. Rows index the analysed trace's
/// tables; times are ns since the trace origin.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Evidence {
    /// `idle` (a claimed idle piece), `gpu`, `runtime` or `cpu_op` (a row).
    pub kind: String,
    /// Row in the table named by `kind` (none for `idle`).
    pub row: Option<u32>,
    /// Start, ns since the trace origin.
    pub start_ns: Ns,
    /// End, ns since the trace origin.
    pub end_ns: Ns,
}

/// Most evidence items kept per finding.
pub const MAX_EVIDENCE: usize = 12;
/// Most findings one detector emits per device (distinct call sites or
/// operators); the rest are folded into nothing rather than flooding the
/// report with small items.
pub const MAX_GROUPS: usize = 3;

/// Runs every detector on every active device of `trace` inside `window`,
/// ranked by [`rank`].
pub fn detect(trace: &Trace, window: &Window) -> Vec<Finding> {
    let ia = IdleAnalyzer::new(trace);
    let mut out = Vec::new();
    for d in trace.active_devices() {
        let segs = ia.segments(d, window.span);
        out.extend(detect_device(trace, ia.context(), d, window, &segs));
    }
    rank(&mut out);
    out
}

/// Runs every detector on one device, from its idle segments (computed by
/// [`IdleAnalyzer::segments`] over `window.span`). Not ranked.
pub fn detect_device(
    trace: &Trace,
    ops: &OpContext,
    device: u32,
    window: &Window,
    segs: &[IdleSegment],
) -> Vec<Finding> {
    let cx = Cx::new(trace, ops, device, window, segs);
    let mut claims = vec![false; cx.pieces.len()];
    let mut drafts = Vec::new();
    drafts.extend(artifacts::detect(&cx, &mut claims));
    drafts.extend(offload::detect(&cx, &mut claims));
    drafts.extend(d2h_read::detect(&cx, &mut claims));
    drafts.extend(scalar_h2d::detect(&cx, &mut claims));
    drafts.extend(sync_copy::detect(&cx, &mut claims));
    drafts.extend(explicit_sync::detect(&cx, &mut claims));
    drafts.extend(dataloader::detect(&cx, &mut claims));
    drafts.extend(runtime_outliers::detect(&cx, &mut claims));
    drafts.extend(pageable::detect(&cx, &mut claims));
    drafts.extend(param_loop::detect(&cx, &mut claims));
    drafts.extend(small_kernels::detect(&cx, &mut claims));
    drafts.extend(cpu_bound::detect(&cx, &mut claims));
    drafts.extend(underfilled::detect(&cx));
    drafts.extend(stream_wait::detect(&cx));
    let savings = cx.all_savings(&drafts);
    drafts
        .into_iter()
        .zip(savings)
        .map(|(d, s)| cx.finish(d, s))
        .collect()
}

/// Sorts findings by estimated savings, then explained time, then id.
pub fn rank(findings: &mut [Finding]) {
    findings.sort_by(|a, b| {
        (b.est_savings_ns, b.explained_ns, b.idle_ns)
            .cmp(&(a.est_savings_ns, a.explained_ns, a.idle_ns))
            .then_with(|| (a.device, &a.id, &a.operator).cmp(&(b.device, &b.id, &b.operator)))
    });
}

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
/// (notes/detectors.md D5/D7, ours).
pub(crate) const TINY_COPY_BYTES: u64 = 16;
/// Host→device copies up to 64 KB return before the copy completes, so
/// nsys's `cuda_memcpy_sync` rule skips them (CUDA Programming Guide,
/// "Concurrent Execution between Host and Device").
pub(crate) const SMALL_HTOD_BYTES: u64 = 64 * 1024;
/// HTA's `runtime_cutoff`: a runtime call longer than 50 µs is an outlier.
pub(crate) const SLOW_CALL_NS: Ns = 50_000;
/// A copy call this close before a sync (TraceLens/HTA 50 µs runtime scale)
/// is the copy the sync waits for: PyTorch's blocking `.to()` is
/// `cudaMemcpyAsync` + `cudaStreamSynchronize` (notes/detectors.md D9).
pub(crate) const COPY_SYNC_PAIR_NS: Ns = 50_000;
/// TraceLens's idle noise floor: shorter pieces are not worth a finding on
/// their own.
pub(crate) const NOISE_NS: Ns = 5_000;

/// One piece of an idle segment: the segment cut at the edges of the
/// runtime calls of interest.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Piece {
    pub start: Ns,
    pub end: Ns,
    pub seg: IdleSegment,
    /// The blocking call holding the piece (cause `sync`), or [`NONE`].
    pub blocking: u32,
    /// The call of interest holding the piece, or [`NONE`].
    pub call: u32,
    pub class: Option<CallClass>,
    /// The CPU thread whose time the piece is.
    pub thread: Option<ThreadId>,
}

impl Piece {
    pub fn dur(&self) -> Ns {
        self.end - self.start
    }
}

/// A finding before its totals and savings are computed.
pub(crate) struct Draft {
    pub detector: &'static str,
    pub id: &'static str,
    pub title: String,
    pub pieces: Vec<usize>,
    pub occurrences: u64,
    /// Busy time the fix removes (added to `explained_ns`).
    pub removed_busy_ns: Ns,
    /// Idle time after the draft's blocking calls returned that their fix
    /// can also remove, without claiming it (added to `explained_ns`): see
    /// [`Cx::drain_after`].
    pub drain_ns: Ns,
    /// Graph edit beyond removing the pieces' own CPU time.
    pub edit: Edit,
    /// Also remove the CPU time of the claimed pieces in the replay.
    pub remove_piece_cpu: bool,
    /// False: savings are not estimable (reported as 0).
    pub estimable: bool,
    pub primary: bool,
    pub hint: String,
    /// `(operator, annotation, source)` to report instead of the dominant
    /// attribution of the pieces.
    pub blame: Option<(Option<String>, Option<String>, Option<String>)>,
    /// Idle time to report for a non-primary finding (primary ones sum
    /// their pieces).
    pub context_idle_ns: Ns,
    pub evidence: Vec<Evidence>,
}

impl Draft {
    pub fn new(detector: &'static str, id: &'static str, title: String, hint: String) -> Draft {
        Draft {
            detector,
            id,
            title,
            pieces: Vec::new(),
            occurrences: 0,
            removed_busy_ns: 0,
            drain_ns: 0,
            edit: Edit::default(),
            remove_piece_cpu: true,
            estimable: true,
            primary: true,
            hint,
            blame: None,
            context_idle_ns: 0,
            evidence: Vec::new(),
        }
    }
}

/// Everything the detectors of one device share.
pub(crate) struct Cx<'a> {
    pub trace: &'a Trace,
    pub ops: &'a OpContext,
    pub device: u32,
    pub window: Span,
    pub steps: &'a [Step],
    pub ev: DeviceEvidence,
    pub pieces: Vec<Piece>,
    /// Per `runtime` row: the first busy or sync GPU row of this device it
    /// launched, or [`NONE`].
    pub call_gpu: Vec<u32>,
    pub replay: Replay,
    /// The window's last step when the capture cut it short (D16).
    pub partial_last: Option<artifacts::PartialStep>,
}

impl<'a> Cx<'a> {
    fn new(
        trace: &'a Trace,
        ops: &'a OpContext,
        device: u32,
        window: &'a Window,
        segs: &[IdleSegment],
    ) -> Cx<'a> {
        let ev = DeviceEvidence::new(trace, device);
        let mut call_gpu = vec![NONE; trace.runtime.len()];
        for i in 0..trace.gpu.len() {
            let c = trace.links.gpu_launch[i];
            if c != NONE && trace.gpu.device[i] == device && call_gpu[c as usize] == NONE {
                call_gpu[c as usize] = i as u32;
            }
        }
        let replay = Replay::new(trace, device, window.span, &ev);
        let mut cx = Cx {
            trace,
            ops,
            device,
            window: window.span,
            steps: &window.steps,
            ev,
            pieces: Vec::new(),
            call_gpu,
            replay,
            partial_last: artifacts::partial_last_step(trace, device, &window.steps),
        };
        cx.pieces = cx.cut(segs);
        cx
    }

    /// Cuts segments at the edges of the calls of interest.
    fn cut(&self, segs: &[IdleSegment]) -> Vec<Piece> {
        let calls = self.calls_of_interest();
        let mut out = Vec::with_capacity(segs.len());
        let mut k = 0;
        for seg in segs {
            while k < calls.len() && calls[k].1 <= seg.start {
                k += 1;
            }
            let mut at = seg.start;
            let mut j = k;
            while at < seg.end {
                let (call, class, until) = match calls.get(j) {
                    Some(&(s, e, c, cl)) if s < seg.end => {
                        if s > at {
                            (NONE, None, s)
                        } else {
                            j += 1;
                            (c, Some(cl), e.min(seg.end))
                        }
                    }
                    _ => (NONE, None, seg.end),
                };
                if until > at {
                    out.push(self.piece(seg, at, until, call, class));
                }
                at = until.max(at);
            }
        }
        out
    }

    fn piece(&self, seg: &IdleSegment, start: Ns, end: Ns, call: u32, class: Option<CallClass>) -> Piece {
        let blocking = match seg.cause {
            Cause::Sync => self.ev.blocking_at(start).map_or(NONE, |b| b.call),
            _ => NONE,
        };
        let ops = &self.trace.cpu_ops;
        let thread = if blocking != NONE {
            Some(self.trace.runtime.thread[blocking as usize])
        } else if call != NONE {
            Some(self.trace.runtime.thread[call as usize])
        } else if seg.op != NONE {
            Some(ops.thread[seg.op as usize])
        } else if seg.annotation != NONE {
            Some(ops.thread[seg.annotation as usize])
        } else {
            self.ev.launchers.first().copied()
        };
        Piece {
            start,
            end,
            seg: *seg,
            blocking,
            call,
            class,
            thread,
        }
    }

    /// Calls of interest on the launching threads, sorted and disjoint (the
    /// earlier call keeps an overlap).
    fn calls_of_interest(&self) -> Vec<(Ns, Ns, u32, CallClass)> {
        let rt = &self.trace.runtime;
        let mut launcher = vec![false; self.trace.threads.len()];
        for t in &self.ev.launchers {
            launcher[t.0 as usize] = true;
        }
        let (ws, we) = self.window;
        // Names decide most calls: a launch is of interest only when slow.
        // Classify each distinct name once (millions of calls, few names).
        let mut plain: Vec<Option<bool>> = vec![None; self.trace.strings.len()];
        let mut out: Vec<(Ns, Ns, u32, CallClass)> = Vec::new();
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
            if let Some(class) = self.call_class_named(r as u32, name) {
                let s = out.last().map_or(rt.start[r], |l| rt.start[r].max(l.1));
                if rt.end[r] > s {
                    out.push((s, rt.end[r], r as u32, class));
                }
            }
        }
        out
    }

    /// What runtime call `r` is, if it is of interest.
    /// What runtime call `r` (named `name`) is, if it is of interest.
    fn call_class_named(&self, r: u32, name: &str) -> Option<CallClass> {
        let rt = &self.trace.runtime;
        let is_async = name.contains("Async");
        let g = self.call_gpu[r as usize];
        let gpu = &self.trace.gpu;
        if is_memcpy_api(name) && g != NONE && gpu.kind[g as usize] == GpuKind::Memcpy {
            let g = g as usize;
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
        if is_memset_api(name) && !is_async && g != NONE {
            return Some(CallClass::SyncCopy);
        }
        if is_alloc_api(name) {
            return Some(CallClass::Alloc);
        }
        let dur = rt.end[r as usize] - rt.start[r as usize];
        (dur > SLOW_CALL_NS && !is_sync_api(name) && !is_memcpy_api(name)).then_some(CallClass::Slow)
    }

    /// The copy (or memset) GPU row a blocking call waits for: its own, or
    /// that of a copy call on the same thread that ended at most
    /// [`COPY_SYNC_PAIR_NS`] before it started.
    pub fn paired_copy(&self, call: u32) -> u32 {
        let g = &self.trace.gpu;
        let is_copy =
            |row: u32| row != NONE && matches!(g.kind[row as usize], GpuKind::Memcpy | GpuKind::Memset);
        let own = self.call_gpu[call as usize];
        if is_copy(own) {
            return own;
        }
        let rt = &self.trace.runtime;
        let (start, thread) = (rt.start[call as usize], rt.thread[call as usize]);
        let k = rt.start.partition_point(|&s| s < start);
        // A copy call and its sync are adjacent on one thread; a few calls
        // of other threads may sit between them in start order.
        for r in (0..k).rev().take(64) {
            if rt.start[r] < start - COPY_SYNC_PAIR_NS - SLOW_CALL_NS {
                break;
            }
            if rt.thread[r] != thread || rt.end[r] < start - COPY_SYNC_PAIR_NS {
                continue;
            }
            let row = self.call_gpu[r];
            if is_copy(row) {
                return row;
            }
        }
        NONE
    }

    /// Claims every unclaimed piece for which `pred` holds.
    pub fn take(&self, claims: &mut [bool], pred: impl Fn(&Piece) -> bool) -> Vec<usize> {
        let mut out = Vec::new();
        for (i, p) in self.pieces.iter().enumerate() {
            if !claims[i] && pred(p) {
                claims[i] = true;
                out.push(i);
            }
        }
        out
    }

    /// Claims the unclaimed pieces inside `span` for which `pred` holds.
    pub fn take_in(&self, claims: &mut [bool], (s, e): Span, pred: impl Fn(&Piece) -> bool) -> Vec<usize> {
        let first = self.pieces.partition_point(|p| p.start < s);
        let mut out = Vec::new();
        for (i, p) in self.pieces.iter().enumerate().skip(first) {
            if p.start >= e {
                break;
            }
            if p.end <= e && !claims[i] && pred(p) {
                claims[i] = true;
                out.push(i);
            }
        }
        out
    }

    /// Operator, annotation and source of the call that launched `gpu` row
    /// `row`.
    pub fn launch_blame(&self, row: u32) -> (Option<String>, Option<String>, Option<String>) {
        let call = if row == NONE {
            NONE
        } else {
            self.trace.links.gpu_launch[row as usize]
        };
        let op = if call == NONE {
            NONE
        } else {
            self.trace.links.runtime_op[call as usize]
        };
        if op == NONE {
            return (None, None, None);
        }
        let o = op as usize;
        (
            self.name(self.outer_operator(op)),
            self.name(self.ops.annotation[o]),
            self.source(self.ops.source[o]),
        )
    }

    /// Total length of `pieces`.
    pub fn total(&self, pieces: &[usize]) -> Ns {
        pieces.iter().map(|&i| self.pieces[i].dur()).sum()
    }

    /// Number of complete profiled steps (at least 1), to say "per step":
    /// a last step cut short by the capture does not count (D16 claims its
    /// idle time).
    pub fn n_steps(&self) -> i64 {
        let partial = usize::from(self.partial_last.is_some());
        (self.steps.len() - partial).max(1) as i64
    }

    pub fn window_ns(&self) -> Ns {
        self.window.1 - self.window.0
    }

    /// Name of cpu op row `row`.
    pub fn name(&self, row: u32) -> Option<String> {
        self.trace.op_name(row).map(str::to_string)
    }

    /// The outermost operator around row `row` (`aten::item` rather than
    /// the `aten::_local_scalar_dense` inside it): what the user called.
    pub fn outer_operator(&self, row: u32) -> u32 {
        let mut best = if row == NONE {
            NONE
        } else {
            self.ops.operator[row as usize]
        };
        let ops = &self.trace.cpu_ops;
        let mut at = best;
        while at != NONE {
            let p = ops.parent[at as usize];
            if p == NONE {
                break;
            }
            let o = self.ops.operator[p as usize];
            if o == NONE {
                break;
            }
            best = o;
            at = o;
        }
        best
    }

    /// Display form of a source string id.
    pub fn source(&self, id: StrId) -> Option<String> {
        (id != Strings::EMPTY).then(|| display_source(self.trace.strings.get(id)).to_string())
    }

    /// The call site of a piece: its source frame, else its outermost
    /// operator, else its annotation.
    pub fn site(&self, p: &Piece) -> String {
        let anchor = if p.blocking != NONE {
            self.trace.links.runtime_op[p.blocking as usize]
        } else {
            p.seg.op
        };
        let src = if p.blocking != NONE && anchor != NONE {
            self.ops.source[anchor as usize]
        } else {
            p.seg.source
        };
        if let Some(s) = self.source(src) {
            return s;
        }
        self.name(self.outer_operator(anchor))
            .or_else(|| self.name(p.seg.annotation))
            .unwrap_or_default()
    }

    /// Distinct values of `f` over pieces (for occurrence counts).
    pub fn distinct(&self, pieces: &[usize], f: impl Fn(&Piece) -> u32) -> u64 {
        let mut v: Vec<u32> = pieces.iter().map(|&i| f(&self.pieces[i])).collect();
        v.sort_unstable();
        v.dedup();
        v.len() as u64
    }

    /// "`op` at `file.py(N): fn`" for hints.
    pub fn where_(&self, op: &Option<String>, source: &Option<String>) -> String {
        match (op, source) {
            (Some(o), Some(s)) => format!("`{o}` at {s}"),
            (Some(o), None) => format!("`{o}`"),
            (None, Some(s)) => format!("the code at {s}"),
            (None, None) => "this code".to_string(),
        }
    }

    /// Dominant `(operator, annotation, source)` of pieces by idle time;
    /// sync pieces are blamed on the outermost operator around the call.
    pub fn blame(&self, pieces: &[usize]) -> (Option<String>, Option<String>, Option<String>) {
        let mut by: HashMap<(u32, u32, StrId), Ns> = HashMap::new();
        let name_row = |r: u32| {
            if r == NONE {
                NONE
            } else {
                self.trace.cpu_ops.name[r as usize].0
            }
        };
        let mut rep: HashMap<(u32, u32, StrId), (u32, u32)> = HashMap::new();
        for &i in pieces {
            let p = &self.pieces[i];
            let op = if p.blocking != NONE {
                self.outer_operator(self.trace.links.runtime_op[p.blocking as usize])
            } else {
                p.seg.op
            };
            let key = (name_row(op), name_row(p.seg.annotation), p.seg.source);
            *by.entry(key).or_default() += p.dur();
            rep.entry(key).or_insert((op, p.seg.annotation));
        }
        let Some((key, _)) = by
            .into_iter()
            .max_by(|a, b| a.1.cmp(&b.1).then_with(|| b.0.cmp(&a.0)))
        else {
            return (None, None, None);
        };
        let (op, ann) = rep[&key];
        (self.name(op), self.name(ann), self.source(key.2))
    }

    /// The replayed saving of every draft (capped at what it explains; 0
    /// when not estimable). Replays are independent passes over one
    /// read-only graph, so they run on all cores.
    fn all_savings(&self, drafts: &[Draft]) -> Vec<Ns> {
        let one = |d: &Draft| -> Ns {
            let idle = if d.primary {
                self.total(&d.pieces)
            } else {
                d.context_idle_ns
            };
            let explained = idle + d.removed_busy_ns + d.drain_ns;
            if !d.estimable || explained == 0 {
                return 0;
            }
            let mut edit = d.edit.clone();
            if d.remove_piece_cpu {
                for &i in &d.pieces {
                    let p = &self.pieces[i];
                    if let Some(t) = p.thread {
                        edit.remove_cpu.push((t, (p.start, p.end)));
                    }
                }
            }
            self.replay.savings(&edit).min(explained)
        };
        let threads = std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .min(drafts.len());
        if threads <= 1 {
            return drafts.iter().map(one).collect();
        }
        let chunk = drafts.len().div_ceil(threads);
        std::thread::scope(|s| {
            let handles: Vec<_> = drafts
                .chunks(chunk)
                .map(|part| s.spawn(move || part.iter().map(one).collect::<Vec<Ns>>()))
                .collect();
            handles
                .into_iter()
                .flat_map(|h| h.join().expect("a replay panicked"))
                .collect()
        })
    }

    fn finish(&self, d: Draft, est_savings_ns: Ns) -> Finding {
        let idle_ns = if d.primary {
            self.total(&d.pieces)
        } else {
            d.context_idle_ns
        };
        let explained_ns = idle_ns + d.removed_busy_ns + d.drain_ns;
        let (operator, annotation, source) = d.blame.clone().unwrap_or_else(|| self.blame(&d.pieces));
        let mut evidence = d.evidence;
        let mut largest: Vec<usize> = d.pieces.clone();
        largest.sort_by_key(|&i| (std::cmp::Reverse(self.pieces[i].dur()), self.pieces[i].start));
        for &i in largest.iter().take(MAX_EVIDENCE.saturating_sub(evidence.len())) {
            let p = &self.pieces[i];
            evidence.push(Evidence {
                kind: "idle".into(),
                row: None,
                start_ns: p.start,
                end_ns: p.end,
            });
        }
        evidence.truncate(MAX_EVIDENCE);
        Finding {
            id: d.id.to_string(),
            detector: d.detector.to_string(),
            title: d.title,
            device: self.device,
            occurrences: d.occurrences,
            idle_ns,
            explained_ns,
            est_savings_ns,
            primary: d.primary,
            operator,
            annotation,
            source,
            evidence,
            hint: d.hint,
        }
    }

    /// Evidence pointing at a `runtime` row.
    pub fn runtime_evidence(&self, r: u32) -> Evidence {
        Evidence {
            kind: "runtime".into(),
            row: Some(r),
            start_ns: self.trace.runtime.start[r as usize],
            end_ns: self.trace.runtime.end[r as usize],
        }
    }

    /// Evidence pointing at a `gpu` row.
    pub fn gpu_evidence(&self, g: u32) -> Evidence {
        Evidence {
            kind: "gpu".into(),
            row: Some(g),
            start_ns: self.trace.gpu.start[g as usize],
            end_ns: self.trace.gpu.end[g as usize],
        }
    }

    /// Evidence pointing at a `cpu_ops` row.
    pub fn op_evidence(&self, o: u32) -> Evidence {
        Evidence {
            kind: "cpu_op".into(),
            row: Some(o),
            start_ns: self.trace.cpu_ops.start[o as usize],
            end_ns: self.trace.cpu_ops.end[o as usize],
        }
    }
}

/// What a blocking call waits on, for the sync-family detectors.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SyncKind {
    /// A device→host copy: `.item()`, `.cpu()`, `nonzero` (D5).
    DtoHRead,
    /// A host→device copy of at most [`TINY_COPY_BYTES`] (D7).
    TinyHtoD,
    /// Any other copy or memset made synchronous (D9).
    Copy,
    /// A synchronize with no copy involved (D6).
    Plain,
}

/// Claimed pieces of one call site, with what the sync detectors report.
pub(crate) struct SiteGroup {
    pub pieces: Vec<usize>,
    pub idle_ns: Ns,
    /// Distinct blocking calls and calls of interest behind the pieces.
    pub calls: Vec<u32>,
    /// Distinct copy rows behind them.
    pub copies: Vec<u32>,
    /// Largest copy size among them.
    pub max_bytes: u64,
    pub blame: (Option<String>, Option<String>, Option<String>),
}

impl Cx<'_> {
    /// What blocking call `call` waits on, and the copy row if any.
    pub fn sync_kind(&self, call: u32) -> (SyncKind, u32) {
        let row = self.paired_copy(call);
        if row == NONE {
            return (SyncKind::Plain, NONE);
        }
        let g = &self.trace.gpu;
        let r = row as usize;
        let kind = match (g.kind[r], g.copy_kind[r]) {
            (GpuKind::Memcpy, CopyKind::DtoH) => SyncKind::DtoHRead,
            (GpuKind::Memcpy, CopyKind::HtoD) if g.bytes[r] <= TINY_COPY_BYTES => SyncKind::TinyHtoD,
            _ => SyncKind::Copy,
        };
        (kind, row)
    }

    /// Claims the pieces `pred` accepts, groups them by call site, and
    /// keeps the groups of at least [`NOISE_NS`] (releasing the others).
    pub fn site_groups(&self, claims: &mut [bool], pred: impl Fn(&Piece) -> bool) -> Vec<SiteGroup> {
        let taken = self.take(claims, pred);
        let mut all = self.groups_all(taken, |p| self.site(p));
        let mut out = Vec::new();
        for (n, (_, pieces)) in all.drain(..).enumerate() {
            let idle_ns = self.total(&pieces);
            if idle_ns < NOISE_NS || n >= MAX_GROUPS {
                if idle_ns < NOISE_NS {
                    for &i in &pieces {
                        claims[i] = false;
                    }
                }
                // Past MAX_GROUPS the pieces stay claimed but unreported:
                // they are still this pattern, just smaller.
                continue;
            }
            let mut calls: Vec<u32> = Vec::new();
            let mut copies: Vec<u32> = Vec::new();
            let mut max_bytes = 0;
            for &i in &pieces {
                let p = &self.pieces[i];
                for c in [p.blocking, p.call] {
                    if c == NONE {
                        continue;
                    }
                    calls.push(c);
                    let row = self.paired_copy(c);
                    if row != NONE {
                        copies.push(row);
                        max_bytes = max_bytes.max(self.trace.gpu.bytes[row as usize]);
                    }
                }
            }
            calls.sort_unstable();
            calls.dedup();
            copies.sort_unstable();
            copies.dedup();
            let blame = self.blame(&pieces);
            out.push(SiteGroup {
                pieces,
                idle_ns,
                calls,
                copies,
                max_bytes,
                blame,
            });
        }
        out
    }

    /// The drain after the blocking calls of `pieces`: for each claimed
    /// sync piece, the rest of its gap after the call returned (up to the
    /// next blocking call's wait), whoever claimed it.
    ///
    /// A sync empties the GPU's queue; when it returns, the GPU stays empty
    /// until the host has launched again, so this idle exists because of
    /// the sync. It is already claimed (mostly by D2, as the host work that
    /// follows), so it is not claimed again; it only bounds what removing
    /// the sync can save, which the replay decides: whether the host, no
    /// longer waiting, would have queued work ahead of the GPU.
    pub fn drain_after(&self, pieces: &[usize]) -> Ns {
        let mut seen: HashSet<usize> = HashSet::new();
        for &i in pieces {
            if self.pieces[i].seg.cause != Cause::Sync {
                continue;
            }
            let mut j = i + 1;
            while j < self.pieces.len()
                && self.pieces[j].start == self.pieces[j - 1].end
                && self.pieces[j].seg.cause != Cause::Sync
            {
                seen.insert(j);
                j += 1;
            }
        }
        seen.iter().map(|&j| self.pieces[j].dur()).sum()
    }

    /// Groups pieces by `key`, largest idle first.
    pub fn groups_all(
        &self,
        pieces: Vec<usize>,
        key: impl Fn(&Piece) -> String,
    ) -> Vec<(String, Vec<usize>)> {
        self.groups_by_index(pieces, |i| key(&self.pieces[i]))
    }

    /// Groups pieces by `key` of their index, largest idle first.
    pub fn groups_by_index(
        &self,
        pieces: Vec<usize>,
        key: impl Fn(usize) -> String,
    ) -> Vec<(String, Vec<usize>)> {
        let mut by: HashMap<String, Vec<usize>> = HashMap::new();
        for i in pieces {
            by.entry(key(i)).or_default().push(i);
        }
        let mut groups: Vec<(String, Vec<usize>)> = by.into_iter().collect();
        groups.sort_by(|a, b| {
            self.total(&b.1)
                .cmp(&self.total(&a.1))
                .then_with(|| a.0.cmp(&b.0))
        });
        groups
    }

    /// A draft for a sync-family group: the edit lets its blocking calls
    /// return without waiting and removes the CPU time of its other pieces
    /// (those inside copy calls).
    pub fn sync_draft(
        &self,
        g: &SiteGroup,
        detector: &'static str,
        id: &'static str,
        title: String,
        hint: String,
    ) -> Draft {
        let mut d = Draft::new(detector, id, title, hint);
        d.occurrences = g.calls.len() as u64;
        d.pieces = g.pieces.clone();
        d.blame = Some(g.blame.clone());
        d.remove_piece_cpu = false;
        let rt = &self.trace.runtime;
        for &i in &g.pieces {
            let p = &self.pieces[i];
            if p.blocking != NONE {
                d.edit.no_wait.push(p.blocking);
                // The wait removed from the other launching threads too
                // (the autograd thread waits for the one that synced).
                let b = p.blocking as usize;
                d.edit.remove_cpu.push((rt.thread[b], (rt.start[b], rt.end[b])));
            } else if let Some(t) = p.thread {
                d.edit.remove_cpu.push((t, (p.start, p.end)));
            }
        }
        d.edit.remove_cpu.sort_unstable();
        d.edit.remove_cpu.dedup();
        d.edit.no_wait.sort_unstable();
        d.edit.no_wait.dedup();
        for &c in g.calls.iter().take(MAX_EVIDENCE / 2) {
            d.evidence.push(self.runtime_evidence(c));
        }
        d
    }
}

/// A runtime API name without the leading underscores some tracers add.
pub(crate) fn api_name(name: &str) -> &str {
    name.trim_start_matches('_')
}

pub(crate) fn is_memcpy_api(api: &str) -> bool {
    ["cudaMemcpy", "cuMemcpy", "hipMemcpy"]
        .iter()
        .any(|p| api.starts_with(p))
}

pub(crate) fn is_memset_api(api: &str) -> bool {
    ["cudaMemset", "cuMemset", "hipMemset"]
        .iter()
        .any(|p| api.starts_with(p))
}

pub(crate) fn is_sync_api(api: &str) -> bool {
    api.contains("Synchronize")
}

/// Device and pinned-host allocator calls: inside a training step they mean
/// the caching allocator is growing (or pinned buffers are made per copy).
pub(crate) fn is_alloc_api(api: &str) -> bool {
    const ALLOC: [&str; 12] = [
        "cudaMalloc",
        "cudaFree",
        "cudaHostAlloc",
        "cudaMallocHost",
        "cudaFreeHost",
        "cudaHostRegister",
        "cuMemAlloc",
        "cuMemFree",
        "cuMemHostAlloc",
        "hipMalloc",
        "hipFree",
        "hipHostMalloc",
    ];
    ALLOC.iter().any(|p| api.starts_with(p))
}

/// `1.23 ms`, `45.6 µs`, `800 ns`.
pub(crate) fn fmt_ns(ns: Ns) -> String {
    let a = ns.abs();
    if a >= 1_000_000_000 {
        format!("{:.2} s", ns as f64 / 1e9)
    } else if a >= 1_000_000 {
        format!("{:.2} ms", ns as f64 / 1e6)
    } else if a >= 1_000 {
        format!("{:.1} µs", ns as f64 / 1e3)
    } else {
        format!("{ns} ns")
    }
}

/// "once", "3 times".
pub(crate) fn times(n: usize) -> String {
    if n == 1 {
        "once".to_string()
    } else {
        format!("{n} times")
    }
}

/// `part` as a whole percentage of `whole`.
pub(crate) fn pct(part: Ns, whole: Ns) -> String {
    if whole <= 0 {
        return "0 %".into();
    }
    format!("{:.0} %", 100.0 * part as f64 / whole as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_well() {
        assert_eq!(fmt_ns(1_234_567), "1.23 ms");
        assert_eq!(fmt_ns(45_600), "45.6 µs");
        assert_eq!(fmt_ns(800), "800 ns");
        assert_eq!(pct(1, 4), "25 %");
    }
}

//! Detectors (docs/detectors.md defines each): turn idle segments into
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
//! D16 graph capture          cause graph_capture (one-off setup)
//! D10 offload ping-pong       syncs/copies of same-size HtoD+DtoH round trips
//! D5  blocking DtoH read      cause sync, the call waits for a DtoH copy
//! D7  scalar HtoD copy        cause sync or inside the copy call, ≤ 16 B HtoD
//! D9  synchronous copy        cause sync on another copy; non-Async copy/memset
//! D6  explicit sync           cause sync, no copy involved
//! D11 DataLoader stall        cause dataloader
//! D16 first-call warm-up      host time in an operator's costly first call,
//!                             under a `Lazy Function Loading` record, or in
//!                             a slow call that holds one
//! D13 untraced event wait     cause queued, the stream waits on an event no
//!                             recorded work signals
//! D14 runtime outliers        inside an allocator call or an outlier call;
//!                             cause queued (work held by nothing in the trace)
//! D8  pageable copies         inside a copy call from/to pageable memory
//! D4  per-parameter loop      inside a zero_grad / optimizer range that loops
//! D3  small serial kernels    inside a run of short kernels
//! D2  CPU-bound               cause cpu_op / framework_overhead, the rest
//! D17 kernel launch gaps      cause launch_overhead, the rest
//! ```
//!
//! D12 (underfilled kernels), D13's cross-stream waits and D15 (exposed
//! communication) are context: they are not about device idle time and
//! claim nothing (`primary: false`).
//!
//! Findings rank by [`Finding::weight`]: the estimated saving, or for a
//! primary finding whose saving the trace cannot estimate (the cause is
//! outside the trace, one-off setup or warm-up), the idle time it claims.
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
mod exposed_comm;
mod graph_capture;
mod launch_gaps;
mod offload;
mod pageable;
mod param_loop;
mod runtime_outliers;
mod scalar_h2d;
mod small_kernels;
mod stream_wait;
mod sync_copy;
mod underfilled;
mod untraced_wait;
mod warmup;

mod shared;

pub(crate) use shared::{CallClass, Cx, Draft, SiteGroup, SyncKind, NOISE_NS, SLOW_CALL_NS, TINY_COPY_BYTES};

use crate::attribution::OpContext;
use crate::evidence::DeviceEvidence;
use crate::free::free_beside;
use crate::segments::{IdleAnalyzer, IdleSegment};
use crate::whatif::Replay;
use crate::window::Window;
use gapscope_collectors::trace::{Ns, Trace};
use serde::{Deserialize, Serialize};
use shared::all_savings;

/// One problem found in a trace, with what to do about it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Finding {
    /// Stable snake_case slug (`dataloader_stall`).
    pub id: String,
    /// The detector's id in docs/detectors.md (`D11`).
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
    /// False when the trace cannot say what the fix saves (the cause is
    /// outside the trace, one-off setup or warm-up, a collection artifact,
    /// context): `est_savings_ns` is then 0 and means "unknown".
    #[serde(default = "yes")]
    pub estimable: bool,
    /// When the saving is not estimable: the most the fix could save, the
    /// device idle time the finding covers (for exposed communication, the
    /// exposed time); absent when the saving is estimable or nothing bounds
    /// it. Findings rank by it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub savings_bound_ns: Option<Ns>,
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
    let comm = crate::collectives::communication_rows(trace);
    let mut out = Vec::new();
    for d in trace.active_devices() {
        let ev = DeviceEvidence::new(trace, d);
        let segs = ia.segments_with(&ev, window.span);
        out.extend(detect_device(trace, ia.context(), &comm, &ev, window, &segs));
    }
    rank(&mut out);
    out
}

/// Runs every detector on the device `ev` describes, from its idle
/// segments (computed by [`IdleAnalyzer::segments_with`] over
/// `window.span`), with `comm` from
/// [`communication_rows`](crate::collectives::communication_rows). Not
/// ranked.
pub fn detect_device(
    trace: &Trace,
    ops: &OpContext,
    comm: &[bool],
    ev: &DeviceEvidence,
    window: &Window,
    segs: &[IdleSegment],
) -> Vec<Finding> {
    // The replay graph (only the savings estimates read it) is built on a
    // thread of its own while the pieces are cut and the detectors claim
    // them.
    let (replay, (cx, drafts)) = std::thread::scope(|s| {
        let replay = s.spawn(|| Replay::new(trace, ev.device, window.span, ev));
        let cx = Cx::new(trace, ops, comm, ev, window, segs);
        let drafts = all_drafts(&cx);
        (
            replay.join().unwrap_or_else(|p| std::panic::resume_unwind(p)),
            (cx, drafts),
        )
    });
    // What the replays need and the findings are read from the pieces,
    // which are then freed before the replays take their buffers: the
    // pieces and those buffers together were the analysis' peak.
    let (jobs, mut findings) = cx.jobs_and_findings(drafts);
    let rows = cx.n_pieces();
    free_beside(cx.into_owned(), rows);
    for (f, s) in findings.iter_mut().zip(all_savings(&replay, &jobs)) {
        f.est_savings_ns = s;
    }
    free_beside(replay.into_owned(), rows);
    findings
}

fn yes() -> bool {
    true
}

impl Finding {
    /// What ranks the finding: its estimated saving, or, when the trace
    /// cannot estimate one, the most it could save
    /// ([`savings_bound_ns`](Finding::savings_bound_ns)).
    pub fn weight(&self) -> Ns {
        if self.estimable {
            self.est_savings_ns
        } else {
            self.savings_bound_ns.unwrap_or(0)
        }
    }
}

/// Every detector's drafts, in claim order.
fn all_drafts(cx: &Cx) -> Vec<Draft> {
    let mut claims = vec![false; cx.n_pieces()];
    let mut drafts = Vec::new();
    drafts.extend(artifacts::detect(cx, &mut claims));
    drafts.extend(graph_capture::detect(cx, &mut claims));
    drafts.extend(offload::detect(cx, &mut claims));
    drafts.extend(d2h_read::detect(cx, &mut claims));
    drafts.extend(scalar_h2d::detect(cx, &mut claims));
    drafts.extend(sync_copy::detect(cx, &mut claims));
    drafts.extend(explicit_sync::detect(cx, &mut claims));
    drafts.extend(dataloader::detect(cx, &mut claims));
    drafts.extend(warmup::detect(cx, &mut claims));
    drafts.extend(untraced_wait::detect(cx, &mut claims));
    drafts.extend(runtime_outliers::detect(cx, &mut claims));
    drafts.extend(pageable::detect(cx, &mut claims));
    drafts.extend(param_loop::detect(cx, &mut claims));
    drafts.extend(small_kernels::detect(cx, &mut claims));
    // D17 takes the launch pieces left now (D2 takes none of them); it and
    // the context detectors, which claim nothing, are drafted while D2
    // drafts its largest group on another thread.
    let launch = launch_gaps::take(cx, &mut claims);
    let (cpu_bound, (launch_gaps, context)) = cpu_bound::detect(cx, &mut claims, || {
        let launch_gaps = launch_gaps::draft(cx, launch);
        let mut context: Vec<Draft> = Vec::new();
        context.extend(underfilled::detect(cx));
        context.extend(exposed_comm::detect(cx));
        context.extend(stream_wait::detect(cx));
        (launch_gaps, context)
    });
    drafts.extend(cpu_bound);
    drafts.extend(launch_gaps);
    drafts.extend(context);
    drafts
}

/// Sorts findings by [`Finding::weight`], then explained time, then id.
pub fn rank(findings: &mut [Finding]) {
    findings.sort_by(|a, b| {
        (b.weight(), b.explained_ns, b.idle_ns)
            .cmp(&(a.weight(), a.explained_ns, a.idle_ns))
            .then_with(|| (a.device, &a.id, &a.operator).cmp(&(b.device, &b.id, &b.operator)))
    });
}

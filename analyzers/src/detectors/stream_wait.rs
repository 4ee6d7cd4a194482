//! D13, cross-stream waits (context): work on one stream was launched and
//! its stream was free, yet it started only when work on another stream
//! finished, because the stream waits on an event recorded behind that
//! work (docs/detectors.md, D13; TraceLens's `cross_stream_dep`).
//!
//! ```text
//! stream 20   [producer (NCCL, a copy, a side-stream kernel)....]
//! stream 24   [k1]                                               [consumer]
//! thread 1    [L1][record][cudaStreamWaitEvent][L consumer]
//!                                                 ^ ready        ^ start
//!                                              [waited..........]
//! ```
//!
//! A stream waits when a trace shows either
//!
//! - a Kineto `Stream Wait Event` record (`cuda_sync` category) on it: its
//!   stream is the waiting one, and its correlation names the
//!   `cudaStreamWaitEvent` call; or
//! - a `cudaStreamWaitEvent` / `cuStreamWaitEvent` / `hipStreamWaitEvent`
//!   call without such a record (traces from before Kineto recorded sync
//!   events, or with them off): the waiting stream is the one the same
//!   thread launches on next, which is how `stream.wait_event(e)` /
//!   `wait_stream` are used (PyTorch's c10d issues record → wait → launch).
//!
//! Kineto's `Event Sync` records are not stream-to-stream waits: they are
//! the host blocked in `cudaEventSynchronize` (or polling with
//! `cudaEventQuery`), D6's explicit synchronizations.
//!
//! The wait is real when the *consumer* (the first row on the waiting
//! stream launched after the wait) starts at least
//! [`NOISE_NS`](super::NOISE_NS) after it was *ready* (its launch call had
//! returned, the previous row on its stream had ended, the wait was
//! issued), and a row of another stream of the device (the *producer*)
//! ended within [`PRODUCER_SLACK_NS`] before the consumer started. The
//! producer's launch call started before the wait call (before the
//! consumer's launch when the trace has no wait call): the event was
//! recorded before the wait was issued, so work queued after it cannot be
//! what it waits for, however close its end is to the consumer's start;
//! when no such row ended in time, no wait is counted. The waited span is
//! ready → consumer start; a consumer is counted once however many waits
//! precede it.
//!
//! Findings, both context (`primary: false`): `communication_wait` when
//! the producer is a collective (NCCL/RCCL: communication exposed on the
//! compute stream), `cross_stream_wait` otherwise. The device is usually
//! busy meanwhile (the producer runs), so this is about one stream, not
//! device idle time: `explained_ns` is the waiting time, `idle_ns` the part
//! of it when the whole device was idle, and the saving is not estimable
//! (it depends on whether the producer can start earlier or be split).
//! Waits of several streams at once count the device idle under them once.
//! Attribution: the operator that launched the producer the finding names
//! (that of its heaviest waiting stream, producer stream and producer
//! name). The title's count and time are those of the stream pair it
//! names; waits of other pairs are said apart, and `occurrences` and
//! `explained_ns` count every wait. The hint's time is the named
//! producer's.

use super::{Cx, Draft, Evidence, MAX_EVIDENCE, NOISE_NS};
use crate::format::{duration, times};
use crate::names::{is_wait_api, is_wait_record_name};
use crate::workload::Workload;
use gapscope_collectors::trace::{CallRow, FxHashMap, FxHashSet, GpuKind, GpuRow, Ns, StrId};

/// Longest time from the producer's end to the consumer's start for the
/// one to have held the other (ours, measured on the shared traces: waits
/// resume 0–19 µs after a producer launched before the wait ends in
/// nccl_data, trace_diff and alexnet, while a stream gap with no wait
/// behind it ends milliseconds after the last row of another stream).
/// Four NCCL waits of trace_diff's control rank resume 33–38 µs after
/// theirs and are not counted. Measured again (consumers counted once):
/// after a producer launched before the wait, control resumes 0–9 µs in
/// 25 of 33 waits, then 18, 33–38 (4) and over 3 ms (3); test 0–7 µs in
/// 15 of 30, then 17, 19, 31, 66, 129–135 (4) and 441–1717 µs (7);
/// nccl_data, DLRM and alexnet 1–5 µs. Consumers with no row of another
/// stream ending before them start up to 23 µs after they were ready, so
/// that much latency needs no wait at all; past it the delays run on with
/// no gap that a wider slack (or a multiple of the 2 µs median) could
/// follow, so the slack stays at 20 µs.
pub const PRODUCER_SLACK_NS: Ns = 20_000;

/// How far to look for the consumer: calls of the waiting thread after the
/// wait, rows of the waiting stream after it.
const LOOKAHEAD: usize = 64;

/// One stream told to wait, and when.
#[derive(Clone, Copy, Debug)]
pub(super) struct Wait {
    pub stream: i64,
    /// The wait call (`runtime` row); `None` for a record without one.
    pub call: Option<CallRow>,
    /// The sync record (`gpu` row), if any.
    pub record: Option<GpuRow>,
    /// When the wait was issued: the call's end, else the record's start.
    pub at: Ns,
}

/// One consumer that waited, and on what.
struct Waited {
    consumer: GpuRow,
    producer: GpuRow,
    span: (Ns, Ns),
    wait: Wait,
}

/// Every stream wait of the device inside the window: from `Stream Wait
/// Event` records, and from wait calls without a record.
pub(super) fn waits(cx: &Cx) -> Vec<Wait> {
    let t = cx.trace;
    let (g, rt) = (&t.gpu, &t.runtime);
    let (ws, we) = cx.window;
    let mut waits: Vec<Wait> = Vec::new();
    let mut recorded: FxHashSet<CallRow> = FxHashSet::default();
    for i in 0..g.len() {
        if g.device[i] != cx.device || g.start[i] >= we || g.end[i] <= ws {
            continue;
        }
        if g.kind[i] == GpuKind::Sync && g.stream[i] >= 0 && is_wait_record_name(t.strings.get(g.name[i])) {
            let call = t.links.gpu_launch[i];
            if let Some(c) = call {
                recorded.insert(c);
            }
            waits.push(Wait {
                stream: g.stream[i],
                call,
                record: Some(GpuRow::new(i)),
                at: call.map_or(g.start[i], |c| rt.end[c.index()]),
            });
        }
    }
    waits.extend(unrecorded_waits(cx, &recorded));
    waits
}

pub(super) fn detect(cx: &Cx) -> Vec<Draft> {
    let t = cx.trace;
    let g = &t.gpu;
    let (ws, we) = cx.window;
    let mut per_stream: FxHashMap<i64, Vec<GpuRow>> = FxHashMap::default();
    let mut by_end: Vec<GpuRow> = Vec::new();
    for i in 0..g.len() {
        if g.device[i] != cx.device || g.start[i] >= we || g.end[i] <= ws {
            continue;
        }
        if g.is_busy(i) {
            per_stream.entry(g.stream[i]).or_default().push(GpuRow::new(i));
            by_end.push(GpuRow::new(i));
        }
    }
    let waits = waits(cx);
    if waits.is_empty() {
        return Vec::new();
    }
    by_end.sort_by_key(|&r| (g.end[r.index()], r));
    let mut seen: FxHashSet<GpuRow> = FxHashSet::default();
    let mut found: Vec<Waited> = Vec::new();
    for w in waits {
        let Some(rows) = per_stream.get(&w.stream) else {
            continue;
        };
        let Some((k, ready)) = consumer(cx, rows, &w) else {
            continue;
        };
        let start = g.start[k.index()];
        if start - ready < NOISE_NS || seen.contains(&k) {
            continue;
        }
        // The producer: the row of another stream that ended last by then,
        // within the slack, among those the wait can be on.
        let j = by_end.partition_point(|&r| g.end[r.index()] <= start);
        let cutoff = queued_before(cx, &w, k);
        let Some(&p) = by_end[..j]
            .iter()
            .rev()
            .take_while(|&&r| start - g.end[r.index()] <= PRODUCER_SLACK_NS)
            .find(|&&r| g.stream[r.index()] != w.stream && launched_before(cx, r, cutoff))
        else {
            continue;
        };
        if g.end[p.index()] <= ready {
            continue;
        }
        seen.insert(k);
        found.push(Waited {
            consumer: k,
            producer: p,
            span: (ready, start),
            wait: w,
        });
    }
    let (comm, other): (Vec<Waited>, Vec<Waited>) =
        found.into_iter().partition(|x| cx.comm[x.producer.index()]);
    [draft(cx, comm, true), draft(cx, other, false)]
        .into_iter()
        .flatten()
        .collect()
}

/// The time a producer must have been launched before for `w` to wait on
/// it: the event a stream waits on is recorded before the wait is issued,
/// behind work already queued, so work launched after the wait call (or,
/// without one, after the consumer's launch) cannot be what it waits for.
/// `None` when the trace links neither to a call.
pub(super) fn queued_before(cx: &Cx, w: &Wait, consumer: GpuRow) -> Option<Ns> {
    let t = cx.trace;
    w.call
        .or(t.links.gpu_launch[consumer.index()])
        .map(|c| t.runtime.start[c.index()])
}

/// Whether row `r`'s launch call started before `cutoff`; a row whose
/// launch the trace does not link, or a wait with no cutoff, cannot be
/// ruled out.
pub(super) fn launched_before(cx: &Cx, r: GpuRow, cutoff: Option<Ns>) -> bool {
    let t = cx.trace;
    match (t.links.gpu_launch[r.index()], cutoff) {
        (Some(l), Some(c)) => t.runtime.start[l.index()] < c,
        _ => true,
    }
}

/// Waits known only from their runtime call: the stream is that of the
/// next row of this device the same thread launches.
fn unrecorded_waits(cx: &Cx, recorded: &FxHashSet<CallRow>) -> Vec<Wait> {
    let t = cx.trace;
    let rt = &t.runtime;
    let (ws, we) = cx.window;
    let mut out = Vec::new();
    let mut wait_api: FxHashMap<StrId, bool> = FxHashMap::default();
    for c in 0..rt.len() {
        if rt.start[c] >= we || rt.end[c] <= ws || recorded.contains(&CallRow::new(c)) {
            continue;
        }
        let name = rt.name[c];
        if !*wait_api
            .entry(name)
            .or_insert_with(|| is_wait_api(t.strings.get(name)))
        {
            continue;
        }
        let thread = rt.thread[c];
        // Bounded: other threads' calls interleave, but the launch follows
        // the wait closely.
        let next = (c + 1..rt.len())
            .take(LOOKAHEAD * LOOKAHEAD)
            .filter(|&r| rt.thread[r] == thread)
            .take(LOOKAHEAD)
            .filter_map(|r| cx.call_gpu[r])
            .find(|&row| t.gpu.is_busy(row.index()));
        if let Some(row) = next {
            out.push(Wait {
                stream: t.gpu.stream[row.index()],
                call: Some(CallRow::new(c)),
                record: None,
                at: rt.end[c],
            });
        }
    }
    out
}

/// The first row of the waiting stream launched after the wait (by the
/// waiting thread when the wait call is known), and when it was ready.
fn consumer(cx: &Cx, rows: &[GpuRow], w: &Wait) -> Option<(GpuRow, Ns)> {
    let t = cx.trace;
    let (g, rt) = (&t.gpu, &t.runtime);
    let first = rows.partition_point(|&r| g.start[r.index()] < w.at);
    for (n, &k) in rows[first..].iter().enumerate().take(LOOKAHEAD) {
        let launch = t.links.gpu_launch[k.index()];
        let launched_after = match (launch.map(CallRow::index), w.call.map(CallRow::index)) {
            (None, _) => true,
            (Some(l), None) => rt.start[l] >= w.at,
            (Some(l), Some(c)) => rt.start[l] >= rt.start[c] && rt.thread[l] == rt.thread[c],
        };
        if !launched_after {
            continue;
        }
        let prev_end = (first + n)
            .checked_sub(1)
            .map_or(Ns::MIN, |i| g.end[rows[i].index()]);
        let launched = launch.map_or(Ns::MIN, |l| rt.end[l.index()]);
        return Some((k, w.at.max(prev_end).max(launched)));
    }
    None
}

fn draft(cx: &Cx, found: Vec<Waited>, comm: bool) -> Option<Draft> {
    if found.is_empty() {
        return None;
    }
    let t = cx.trace;
    let g = &t.gpu;
    let waited: Ns = found.iter().map(|x| x.span.1 - x.span.0).sum();
    // Waits of several streams overlap in time; the device's idle time
    // under them counts once.
    let spans = crate::intervals::union(found.iter().map(|x| x.span).collect());
    let idle: Ns = spans.iter().map(|&s| idle_within(cx, s)).sum();
    // The heaviest (waiting stream, producer stream, producer name).
    let mut by: FxHashMap<(i64, i64, u32), Ns> = FxHashMap::default();
    for x in &found {
        let p = x.producer.index();
        let key = (g.stream[x.consumer.index()], g.stream[p], g.name[p].0);
        *by.entry(key).or_default() += x.span.1 - x.span.0;
    }
    let ((s, ps, pname), _) = by
        .into_iter()
        .max_by(|a, b| a.1.cmp(&b.1).then_with(|| b.0.cmp(&a.0)))?;
    let producer: String = t.strings.get(StrId(pname)).chars().take(80).collect();
    let count = found.len();
    // The title's numbers are those of the stream pair it names, the
    // hint's those of the producer it names; the rest is said apart.
    let span = |x: &Waited| x.span.1 - x.span.0;
    let pair = |x: &&Waited| (g.stream[x.consumer.index()], g.stream[x.producer.index()]) == (s, ps);
    let pair_count = found.iter().filter(pair).count();
    let pair_waited: Ns = found.iter().filter(pair).map(span).sum();
    let producer_waited: Ns = found
        .iter()
        .filter(pair)
        .filter(|x| g.name[x.producer.index()].0 == pname)
        .map(span)
        .sum();
    let others = match count - pair_count {
        0 => String::new(),
        n => format!(
            "; {n} more {} between other streams, {}",
            if n == 1 { "wait" } else { "waits" },
            duration(waited - pair_waited)
        ),
    };
    let blame = {
        // The launching operator of the producer the text names, weighted
        // by waiting time: the heaviest producer row of every wait could be
        // another stream's or kernel's, and the hint would say the named
        // producer was "launched by" an operator that launched other work.
        let mut w: FxHashMap<GpuRow, Ns> = FxHashMap::default();
        for x in &found {
            let p = x.producer.index();
            if (g.stream[x.consumer.index()], g.stream[p], g.name[p].0) != (s, ps, pname) {
                continue;
            }
            *w.entry(x.producer).or_default() += x.span.1 - x.span.0;
        }
        let (&row, _) = w.iter().max_by(|a, b| a.1.cmp(b.1).then_with(|| b.0.cmp(a.0)))?;
        cx.launch_blame(row)
    };
    let from = blame
        .0
        .as_ref()
        .map(|o| format!(" (launched by `{o}`)"))
        .unwrap_or_default();
    let (id, title, hint) = if comm {
        (
            "communication_wait",
            format!(
                "Stream {s} waits {} for communication on stream {ps} ({} in total{others})",
                times(pair_count),
                duration(pair_waited)
            ),
            format!(
                "Work on stream {s} waits for the collective `{producer}` on stream {ps}{from}, \
                 {} in total: the communication is exposed instead of overlapping compute. {}",
                duration(producer_waited),
                communication_overlap(cx.workload)
            ),
        )
    } else {
        (
            "cross_stream_wait",
            format!(
                "Stream {s} waits {} on work of stream {ps} ({} in total{others})",
                times(pair_count),
                duration(pair_waited)
            ),
            format!(
                "Work on stream {s} waits for an event recorded after `{producer}` on stream \
                 {ps}{from}, {} in total. If the consumer does not need all of the producer's \
                 output, split the producer or record the event earlier (`event.record()` right \
                 after the part that is needed) so the streams overlap; start the producer \
                 earlier (prefetch copies one step ahead) so it is done when it is needed.",
                duration(producer_waited)
            ),
        )
    };
    let mut d = Draft::new("D13", id, title, hint);
    d.occurrences = count as u64;
    d.primary = false;
    d.estimable = false;
    d.context_idle_ns = idle;
    d.removed_busy_ns = waited - idle;
    d.blame = Some(blame);
    let mut order: Vec<&Waited> = found.iter().collect();
    order.sort_by_key(|x| (std::cmp::Reverse(x.span.1 - x.span.0), x.consumer));
    for x in order.into_iter().take(MAX_EVIDENCE / 3) {
        d.evidence.push(cx.gpu_evidence(x.producer));
        d.evidence.push(Evidence {
            kind: "stream_wait".into(),
            row: x.wait.record.map(GpuRow::get),
            start_ns: x.span.0,
            end_ns: x.span.1,
        });
        d.evidence.push(cx.gpu_evidence(x.consumer));
    }
    Some(d)
}

/// Device idle time inside `span`, from the idle pieces.
fn idle_within(cx: &Cx, (s, e): (Ns, Ns)) -> Ns {
    let first = cx.piece_partition_point(|p| p.end <= s);
    (first..cx.n_pieces())
        .map(|i| cx.piece(i))
        .take_while(|p| p.start < e)
        .map(|p| p.end.min(e) - p.start.max(s))
        .sum()
}

/// How to overlap a collective with compute: DDP and FSDP gradient overlap
/// only where the trace may show training.
fn communication_overlap(workload: Workload) -> &'static str {
    if workload.may_train() {
        "With DDP, let gradient buckets (`bucket_cap_mb`) start all-reduce during backward and \
         use `no_sync()` during gradient accumulation; with FSDP, enable `forward_prefetch` \
         and `backward_prefetch`; with `dist.all_reduce(..., async_op=True)`, call \
         `work.wait()` as late as possible."
    } else {
        "The trace has no backward pass or optimizer step, so DDP/FSDP gradient overlap does \
         not apply: with `dist.all_reduce(..., async_op=True)`, call `work.wait()` as late as \
         possible."
    }
}

//! D13, a stream waiting on an event that no work in the trace records:
//! the launched work sat queued on an idle device because its stream was
//! told to wait (`cudaStreamWaitEvent` / `hipStreamWaitEvent`, or a Kineto
//! `Stream Wait Event` record) for an event recorded by work the trace does
//! not hold: another process, another device, a stream the profiler did
//! not capture, or work from before the capture.
//!
//! ```text
//! µs          0    80 100 112 123 128                        463 380
//! stream 2    [k1..]                                          (nothing)
//! stream 3                                                    [k2.....]
//! thread 1       [hipStreamWaitEvent s3][L k2]  [hipMemcpyWithStream.....]
//! pieces                                 [queued........................]
//!                                        -> untraced_event_wait
//! ```
//!
//! Evidence: `queued` pieces (launched work not started within
//! [`QUEUED_AFTER_NS`](crate::segments::QUEUED_AFTER_NS) on an idle device)
//! whose held row's stream was told to wait after the previous row of that
//! stream was launched and before the held row was. The device was idle
//! up to the row's start, so no work of its own released it; when a row of
//! another device, launched before the wait call, ended within
//! [`PRODUCER_SLACK_NS`] before it, the hint names that row as the likely
//! producer.
//!
//! Primary: the idle time is the wait's. Attribution: the operator that
//! issued the wait. Savings: not estimable (the producer is not in the
//! trace).

use super::runtime_outliers::held_rows;
use super::stream_wait::{launched_before, queued_before, waits, Wait, PRODUCER_SLACK_NS};
use super::{Cx, Draft, Evidence, MAX_EVIDENCE};
use crate::format::{duration, times};
use gapscope_collectors::trace::{GpuRow, Ns};
use std::collections::HashMap;

/// One held row and the wait that held it.
struct Held {
    row: GpuRow,
    wait: Wait,
    pieces: Vec<u32>,
}

pub(super) fn detect(cx: &Cx, claims: &mut [bool]) -> Option<Draft> {
    let held = held_rows(cx, claims);
    if held.is_empty() {
        return None;
    }
    let mut by_stream: HashMap<i64, Vec<Wait>> = HashMap::new();
    for w in waits(cx) {
        by_stream.entry(w.stream).or_default().push(w);
    }
    if by_stream.is_empty() {
        return None;
    }
    for v in by_stream.values_mut() {
        v.sort_by_key(|w| w.at);
    }
    let t = cx.trace;
    let (g, rt) = (&t.gpu, &t.runtime);
    let launched_at =
        |row: GpuRow| t.links.gpu_launch[row.index()].map_or(g.start[row.index()], |c| rt.start[c.index()]);
    let mut found: Vec<Held> = Vec::new();
    for (row, pieces) in held {
        let stream = g.stream[row.index()];
        let Some(ws) = by_stream.get(&stream) else {
            continue;
        };
        let after = previous_launch(cx, row);
        let before = launched_at(row);
        // The last wait issued between the two launches.
        let k = ws.partition_point(|w| w.at <= before);
        let Some(&wait) = ws[..k].iter().rev().find(|w| w.at >= after) else {
            continue;
        };
        found.push(Held { row, wait, pieces });
    }
    if found.is_empty() {
        return None;
    }
    let mut pieces: Vec<u32> = found.iter().flat_map(|h| h.pieces.iter().copied()).collect();
    pieces.sort_unstable();
    for &i in &pieces {
        claims[i as usize] = true;
    }
    let idle = cx.total(&pieces);
    let longest = found
        .iter()
        .max_by_key(|h| (cx.total(&h.pieces), std::cmp::Reverse(h.row)))?;
    let stream = g.stream[longest.row.index()];
    let api = match longest.wait.call {
        None => cx.platform.api("cudaStreamWaitEvent"),
        Some(c) => t.strings.get(rt.name[c.index()]).to_string(),
    };
    let blame = match longest.wait.call.and_then(|c| t.links.runtime_op[c.index()]) {
        None => (None, None, None),
        Some(op) => (
            cx.name(cx.outer_operator(Some(op))),
            cx.name(cx.ops.annotation[op.index()]),
            cx.source(cx.ops.source[op.index()]),
        ),
    };
    let place = cx.where_(&blame.0, &blame.2);
    let consumer: String = t
        .strings
        .get(g.name[longest.row.index()])
        .chars()
        .take(80)
        .collect();
    let start = g.start[longest.row.index()];
    let elsewhere = other_device_producer(cx, start, queued_before(cx, &longest.wait, longest.row))
        .map(|(d, name)| {
            format!(
                " Work on GPU {d} (`{name}`) ended just before it started: that device's work is the \
                 likely producer, so the wait is on it."
            )
        })
        .unwrap_or_default();
    let title = format!(
        "Stream {stream} waited {} on an event no recorded work signals ({} idle)",
        times(found.len()),
        duration(idle)
    );
    let hint = format!(
        "{place} made stream {stream} wait (`{api}`) for an event that no work in this trace \
         records; `{consumer}`, queued behind the wait, started {} later while the GPU had \
         nothing else to run. The event is recorded by work the profiler did not capture: \
         another process or rank, another device, a stream recorded outside the profiled \
         range, or a previous iteration (an overlap scheduler waiting for the step before).\
         {elsewhere} Profile that work too to see what it waited for; if the dependency is not \
         needed yet, wait on the event later, only before the work that reads the result.",
        duration(cx.total(&longest.pieces))
    );
    let mut d = Draft::new("D13", "untraced_event_wait", title, hint);
    d.occurrences = found.len() as u64;
    d.estimable = false;
    d.blame = Some(blame);
    let mut order: Vec<&Held> = found.iter().collect();
    order.sort_by_key(|h| (std::cmp::Reverse(cx.total(&h.pieces)), h.row));
    for h in order.into_iter().take(MAX_EVIDENCE / 3) {
        if let Some(c) = h.wait.call {
            d.evidence.push(cx.runtime_evidence(c));
        }
        let first = cx.piece(h.pieces[0]).start;
        d.evidence.push(Evidence {
            kind: "stream_wait".into(),
            row: h.wait.record.map(GpuRow::get),
            start_ns: first,
            end_ns: g.start[h.row.index()],
        });
        d.evidence.push(cx.gpu_evidence(h.row));
    }
    d.pieces = pieces;
    Some(d)
}

/// When the row before `row` on its stream was launched (its own start
/// without a launch call), or `Ns::MIN` for the stream's first row.
fn previous_launch(cx: &Cx, row: GpuRow) -> Ns {
    let t = cx.trace;
    let g = &t.gpu;
    let stream = g.stream[row.index()];
    let k = cx.busy.partition_point(|&r| r < row);
    cx.busy[..k]
        .iter()
        .rev()
        .find(|&&r| g.stream[r.index()] == stream)
        .map_or(Ns::MIN, |&r| {
            t.links.gpu_launch[r.index()].map_or(g.start[r.index()], |c| t.runtime.start[c.index()])
        })
}

/// A busy row of another device, launched before `cutoff` (the wait
/// cannot be on work queued after it), that ended within
/// [`PRODUCER_SLACK_NS`] before `start`: its device and name.
fn other_device_producer(cx: &Cx, start: Ns, cutoff: Option<Ns>) -> Option<(u32, String)> {
    let g = &cx.trace.gpu;
    (0..g.len())
        .filter(|&i| g.device[i] != cx.device && g.is_busy(i))
        .filter(|&i| g.end[i] <= start && start - g.end[i] <= PRODUCER_SLACK_NS)
        .filter(|&i| launched_before(cx, GpuRow::new(i), cutoff))
        .max_by_key(|&i| g.end[i])
        .map(|i| {
            (
                g.device[i],
                cx.trace.strings.get(g.name[i]).chars().take(80).collect(),
            )
        })
}

//! D13, cross-stream waits (context): a stream sits idle on a
//! `cudaStreamWaitEvent` until a producer on another stream finishes
//! (notes/detectors.md D13; TraceLens's `cross_stream_dep`).
//!
//! ```text
//! stream 20   [producer (e.g. NCCL / copy)............]
//! stream 24   [k1]  [Stream Wait Event]                [consumer k2...]
//!                 ^ stream gap ...........................^  waited
//! ```
//!
//! Evidence: a Kineto `Stream Wait Event` record on a stream, followed on
//! that stream by a gap of at least [`NOISE_NS`](super::NOISE_NS) that ends
//! when its next work starts; the producer is the row on another stream
//! that ended last before then. The device is usually busy meanwhile (the
//! producer runs), so this is about one stream, not device idle time:
//! `explained_ns` is the stream's waiting time, `idle_ns` the part of it
//! when the whole device was idle, and the saving is not estimable (it
//! depends on whether the producer can start earlier).

use super::{fmt_ns, Cx, Draft, NOISE_NS};
use gapscope_collectors::trace::{GpuKind, Ns};
use std::collections::HashMap;

pub(super) fn detect(cx: &Cx) -> Option<Draft> {
    let t = cx.trace;
    let g = &t.gpu;
    let (ws, we) = cx.window;
    let mut per_stream: HashMap<i64, Vec<u32>> = HashMap::new();
    let mut by_end: Vec<u32> = Vec::new();
    let mut waits: Vec<u32> = Vec::new();
    for i in 0..g.len() {
        if g.device[i] != cx.device || g.start[i] >= we || g.end[i] <= ws {
            continue;
        }
        if g.is_busy(i) {
            per_stream.entry(g.stream[i]).or_default().push(i as u32);
            by_end.push(i as u32);
        } else if g.kind[i] == GpuKind::Sync && t.strings.get(g.name[i]).contains("Wait Event") {
            waits.push(i as u32);
        }
    }
    if waits.is_empty() {
        return None;
    }
    by_end.sort_by_key(|&r| g.end[r as usize]);
    let mut waited: Ns = 0;
    let mut idle: Ns = 0;
    let mut count = 0u64;
    let mut producers: HashMap<u32, Ns> = HashMap::new();
    let mut evidence = Vec::new();
    for &w in &waits {
        let s = g.stream[w as usize];
        let Some(rows) = per_stream.get(&s) else {
            continue;
        };
        let at = g.start[w as usize];
        let k = rows.partition_point(|&r| g.start[r as usize] < at);
        let Some(&next) = rows.get(k) else {
            continue;
        };
        let prev_end = if k > 0 { g.end[rows[k - 1] as usize] } else { at };
        let span = (prev_end.max(at), g.start[next as usize]);
        if span.1 - span.0 < NOISE_NS {
            continue;
        }
        count += 1;
        waited += span.1 - span.0;
        idle += idle_within(cx, span);
        // The producer: the row of another stream that ended last by then.
        let j = by_end.partition_point(|&r| g.end[r as usize] <= span.1);
        if let Some(&p) = by_end[..j]
            .iter()
            .rev()
            .take(64)
            .find(|&&r| g.stream[r as usize] != s)
        {
            *producers.entry(g.name[p as usize].0).or_default() += span.1 - span.0;
            if evidence.len() < super::MAX_EVIDENCE {
                evidence.push(cx.gpu_evidence(p));
            }
        }
        if evidence.len() < super::MAX_EVIDENCE {
            evidence.push(super::Evidence {
                kind: "stream_wait".into(),
                row: Some(w),
                start_ns: span.0,
                end_ns: span.1,
            });
        }
    }
    if count == 0 {
        return None;
    }
    let producer = producers
        .iter()
        .max_by_key(|(k, v)| (**v, std::cmp::Reverse(**k)))
        .map(|(&k, _)| {
            t.strings
                .get(gapscope_collectors::trace::StrId(k))
                .chars()
                .take(80)
                .collect::<String>()
        })
        .unwrap_or_default();
    let mut d = Draft::new(
        "D13",
        "cross_stream_wait",
        format!(
            "Streams wait {count} times on work of other streams ({} in total)",
            fmt_ns(waited)
        ),
        format!(
            "A stream waits for an event recorded on another stream, mostly on `{producer}` \
             ({} in total). If the consumer does not need all of the producer's output, split \
             the producer or record the event earlier (`event.record()` right after the part \
             that is needed) so compute can overlap; for communication, bucket gradients so \
             all-reduce starts during backward.",
            fmt_ns(waited)
        ),
    );
    d.occurrences = count;
    d.primary = false;
    d.estimable = false;
    d.context_idle_ns = idle;
    d.removed_busy_ns = waited - idle;
    d.blame = Some((None, None, None));
    d.evidence = evidence;
    Some(d)
}

/// Device idle time inside `span`, from the idle pieces.
fn idle_within(cx: &Cx, (s, e): (Ns, Ns)) -> Ns {
    let first = cx.pieces.partition_point(|p| p.end <= s);
    cx.pieces[first..]
        .iter()
        .take_while(|p| p.start < e)
        .map(|p| p.end.min(e) - p.start.max(s))
        .sum()
}

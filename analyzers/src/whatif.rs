//! What-if replay (Daydream-style, notes/detectors.md §4): rebuild the
//! dependency graph of one device's window from the trace, apply a fix as a
//! graph edit, replay it, and read off how much earlier everything ends.
//!
//! # The graph
//!
//! Nodes are the runtime calls of the threads that launch work on the device
//! and the device's busy GPU rows. Edges, each with a *lag* measured on the
//! trace so that replaying with no edit gives back the recorded times
//! exactly:
//!
//! - **thread order**: a call starts `lag` after the previous call on its
//!   thread ended (the CPU work in between: Python, operators, the
//!   DataLoader), or, for a call nested in the previous one, `lag` after it
//!   started;
//! - **stream order**: a GPU row starts no earlier than the previous row on
//!   its stream ended;
//! - **launch → activity**: a GPU row starts no earlier than `d` after its
//!   launch call started; `d` is the recorded delay when the row waited for
//!   its launch (its stream was idle before it), else at most the call's
//!   length (a queued row could have started as soon as the call was made);
//! - **sync**: a blocking call (from [`DeviceEvidence`]) returns `r` after the
//!   GPU work it waits for ended: its own copy for a blocking memcpy, else
//!   the last rows launched before it on the synchronized stream (the
//!   stream of its Kineto sync record), or on every stream when that is not
//!   known (device / event sync). `r` is the recorded return latency.
//!
//! Removed CPU time shortens the gaps between calls on every launching
//! thread, not only the thread it was removed from: a thread with no call
//! in that time was waiting for another (PyTorch's autograd thread waits
//! for the forward thread, which waits for `backward()` to return), so it
//! would have started earlier too. Time inside a call is only removed from
//! the call's own thread.
//!
//! A GPU row with no known launch keeps its recorded distance to the
//! previous row on its stream. Stream-wait (cross-stream) edges are not
//! modelled: the replay may let a consumer stream start early, which only
//! matters for fixes that move multi-stream work.
//!
//! # Edits
//!
//! [`Edit`] removes CPU time on a thread (between calls or inside a call),
//! removes the wait of blocking calls (they return after their own
//! non-waiting part), and removes GPU rows (their duration becomes 0).
//!
//! # A sync's drain, removed
//!
//! ```text
//! ns          0    10   15  30 40      100  105  120 125 130       150     180
//! stream 7    [k1 c=1.......................]            [k2 c=2..............]
//! thread 1    [L1]  [cudaStreamSynchronize.......]  [L2 c=2]
//!                   ^10                      105^   120  125
//! gap                                       [100......130]
//!
//! edit: the sync does not wait: it returns after its own 5 ns (its
//!       recorded return latency), at 15; the 15 ns of CPU work after it
//!       follow, L2 starts at 30; k2 would start 10 ns after L2 (at 40) but
//!       its stream is busy with k1 until 100: k2 runs 100..150.
//! saving: 180 − 150 = 30 ns, the whole gap.
//! ```

use crate::evidence::DeviceEvidence;
use crate::intervals::{union, Span};
use gapscope_collectors::trace::{GpuKind, Ns, ThreadId, Trace, NONE};
use std::collections::HashMap;

/// A fix expressed as a change to the dependency graph.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Edit {
    /// CPU time to remove, per thread: the work done in these spans (in the
    /// trace's own times) no longer happens.
    pub remove_cpu: Vec<(ThreadId, Span)>,
    /// Blocking calls (`runtime` rows) that no longer wait for the device.
    pub no_wait: Vec<u32>,
    /// GPU rows (`gpu` rows) that no longer run.
    pub remove_gpu: Vec<u32>,
}

impl Edit {
    /// True when the edit changes nothing.
    pub fn is_empty(&self) -> bool {
        self.remove_cpu.is_empty() && self.no_wait.is_empty() && self.remove_gpu.is_empty()
    }
}

/// What a blocking call waits for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Wait {
    /// Not a blocking call.
    No,
    /// The GPU rows it launched itself (a blocking copy).
    Own,
    /// The last rows launched before it on this stream (node stream index).
    Stream(usize),
    /// The last rows launched before it on every stream of the device.
    All,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Ev {
    CallEnd(u32),
    CallStart(u32),
    Gpu(u32),
}

/// The dependency graph of one device in one window, ready to replay many
/// edits (the event order is computed once; each replay is one pass).
pub struct Replay {
    window: Span,
    // Calls.
    call_row: Vec<u32>,
    call_thread: Vec<u32>,
    cs: Vec<Ns>,
    ce: Vec<Ns>,
    prev_on_thread: Vec<u32>,
    wait: Vec<Wait>,
    /// Per blocking call: recorded return latency after the awaited work.
    ret: Vec<Ns>,
    /// Per blocking call: the part of its length that is not waiting.
    own: Vec<Ns>,
    /// GPU nodes each call launched.
    launched: Vec<Vec<u32>>,
    // GPU rows.
    gpu_row: Vec<u32>,
    gs: Vec<Ns>,
    ge: Vec<Ns>,
    g_stream: Vec<usize>,
    g_launch: Vec<u32>,
    g_delay: Vec<Ns>,
    g_prev: Vec<u32>,
    g_stream_lag: Vec<Ns>,
    n_streams: usize,
    events: Vec<Ev>,
    /// Thread index → the last call node of the thread.
    thread_last: HashMap<u32, u32>,
    baseline: Ns,
}

/// New times of every node after a replay.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// When the last GPU row or launching thread finished.
    pub makespan: Ns,
    gpu_row: Vec<u32>,
    gs: Vec<Ns>,
    ge: Vec<Ns>,
    call_row: Vec<u32>,
    cs: Vec<Ns>,
    ce: Vec<Ns>,
}

impl Outcome {
    /// The replayed `[start, end)` of `runtime` row `row`, if it is in the
    /// graph.
    pub fn call_span(&self, row: u32) -> Option<Span> {
        let i = self.call_row.binary_search(&row).ok()?;
        Some((self.cs[i], self.ce[i]))
    }

    /// The replayed `[start, end)` of `gpu` row `row`, if it is in the graph.
    pub fn gpu_span(&self, row: u32) -> Option<Span> {
        let i = self.gpu_row.binary_search(&row).ok()?;
        Some((self.gs[i], self.ge[i]))
    }
}

impl Replay {
    /// Builds the graph of `device` inside `window`.
    pub fn new(trace: &Trace, device: u32, window: Span, ev: &DeviceEvidence) -> Replay {
        let (ws, we) = window;
        let rt = &trace.runtime;
        let g = &trace.gpu;
        let mut launcher = vec![false; trace.threads.len()];
        for t in &ev.launchers {
            launcher[t.0 as usize] = true;
        }
        let call_rows: Vec<u32> = (0..rt.len() as u32)
            .filter(|&r| {
                let r = r as usize;
                launcher.get(rt.thread[r].0 as usize).copied().unwrap_or(false)
                    && rt.start[r] < we
                    && rt.end[r] > ws
            })
            .collect();
        // `call_rows` is sorted (the runtime table is): a binary search
        // finds a row's node without a map over millions of calls.
        let node_of = |row: u32| call_rows.binary_search(&row).ok().map(|i| i as u32);
        let nc = call_rows.len();
        let cs: Vec<Ns> = call_rows.iter().map(|&r| rt.start[r as usize]).collect();
        let ce: Vec<Ns> = call_rows.iter().map(|&r| rt.end[r as usize]).collect();
        let call_thread: Vec<u32> = call_rows.iter().map(|&r| rt.thread[r as usize].0).collect();
        let mut prev_on_thread = vec![NONE; nc];
        let mut thread_last: HashMap<u32, u32> = HashMap::new();
        for i in 0..nc {
            if let Some(p) = thread_last.insert(call_thread[i], i as u32) {
                prev_on_thread[i] = p;
            }
        }

        // GPU nodes and streams.
        let gpu_row: Vec<u32> = (0..g.len() as u32)
            .filter(|&i| {
                let i = i as usize;
                g.device[i] == device && g.is_busy(i) && g.start[i] < we && g.end[i] > ws
            })
            .collect();
        let mut stream_ix: HashMap<i64, usize> = HashMap::new();
        let g_stream: Vec<usize> = gpu_row
            .iter()
            .map(|&r| {
                let n = stream_ix.len();
                *stream_ix.entry(g.stream[r as usize]).or_insert(n)
            })
            .collect();
        let gs: Vec<Ns> = gpu_row.iter().map(|&r| g.start[r as usize]).collect();
        let ge: Vec<Ns> = gpu_row.iter().map(|&r| g.end[r as usize]).collect();
        let mut launched = vec![Vec::new(); nc];
        let mut g_launch = vec![NONE; gpu_row.len()];
        let mut g_prev = vec![NONE; gpu_row.len()];
        let mut last_on_stream = vec![NONE; stream_ix.len()];
        for (i, &r) in gpu_row.iter().enumerate() {
            let call = trace.links.gpu_launch[r as usize];
            if let Some(c) = (call != NONE).then(|| node_of(call)).flatten() {
                g_launch[i] = c;
                launched[c as usize].push(i as u32);
            }
            g_prev[i] = last_on_stream[g_stream[i]];
            last_on_stream[g_stream[i]] = i as u32;
        }
        let mut g_delay = vec![0; gpu_row.len()];
        let mut g_stream_lag = vec![0; gpu_row.len()];
        for i in 0..gpu_row.len() {
            let p = g_prev[i];
            let waited_for_launch = p == NONE || gs[i] > ge[p as usize];
            let c = g_launch[i];
            if c != NONE {
                let c = c as usize;
                let since_call = (gs[i] - cs[c]).max(0);
                g_delay[i] = if waited_for_launch {
                    since_call
                } else {
                    since_call.min(ce[c] - cs[c])
                };
            }
            if p != NONE {
                let gap = gs[i] - ge[p as usize];
                g_stream_lag[i] = if c != NONE { gap.min(0) } else { gap };
            }
        }

        // What each blocking call waits for.
        let mut wait = vec![Wait::No; nc];
        let sync_records: HashMap<u64, i64> = (0..g.len())
            .filter(|&i| g.kind[i] == GpuKind::Sync && g.correlation[i] != 0 && g.stream[i] >= 0)
            .map(|i| (g.correlation[i], g.stream[i]))
            .collect();
        for b in &ev.blocking {
            let Some(c) = node_of(b.call) else {
                continue;
            };
            let name = trace.strings.get(rt.name[b.call as usize]);
            wait[c as usize] = if name.contains("emcpy") && !launched[c as usize].is_empty() {
                Wait::Own
            } else {
                sync_stream(trace, b.call, &sync_records, &stream_ix).map_or(Wait::All, Wait::Stream)
            };
        }

        // At one instant: calls end, then calls start, then GPU rows start
        // (a launch precedes what it launched); a call of zero length ends
        // after everything else at its instant, never before it started.
        // Starts and GPU rows are already in time order, so the events are a
        // merge of three sorted lists, not a sort of all of them.
        let end_rank = |i: usize| if ce[i] > cs[i] { 0u8 } else { 3 };
        let mut ends: Vec<u32> = (0..nc as u32).collect();
        // Stable and adaptive: call ends are nearly in order already.
        ends.sort_by_key(|&i| (ce[i as usize], end_rank(i as usize)));
        let mut events: Vec<Ev> = Vec::with_capacity(2 * nc + gpu_row.len());
        let (mut a, mut b, mut c) = (0usize, 0usize, 0usize);
        loop {
            let ka = ends.get(a).map(|&i| (ce[i as usize], end_rank(i as usize)));
            let kb = (b < nc).then(|| (cs[b], 1u8));
            let kc = (c < gs.len()).then(|| (gs[c], 2u8));
            let best = [ka, kb, kc].into_iter().flatten().min();
            match best {
                None => break,
                Some(k) if Some(k) == ka => {
                    events.push(Ev::CallEnd(ends[a]));
                    a += 1;
                }
                Some(k) if Some(k) == kb => {
                    events.push(Ev::CallStart(b as u32));
                    b += 1;
                }
                Some(_) => {
                    events.push(Ev::Gpu(c as u32));
                    c += 1;
                }
            }
        }
        let mut replay = Replay {
            window,
            call_row: call_rows,
            call_thread,
            cs,
            ce,
            prev_on_thread,
            wait,
            ret: vec![0; nc],
            own: vec![0; nc],
            launched,
            gpu_row,
            gs,
            ge,
            g_stream,
            g_launch,
            g_delay,
            g_prev,
            g_stream_lag,
            n_streams: stream_ix.len(),
            events,
            thread_last,
            baseline: 0,
        };
        // Calibrate the sync edges: what each blocking call awaited in the
        // recording, hence its return latency and its non-waiting part.
        let awaited = replay.pass(&Prepared::none(&replay), true).1;
        for (i, &w) in awaited.iter().enumerate() {
            if replay.wait[i] == Wait::No {
                continue;
            }
            let dur = replay.ce[i] - replay.cs[i];
            if w > replay.ce[i] {
                // It returned before work it supposedly waits for ended: it
                // waited on less (one stream of several, an earlier event).
                // Not knowing on what, keep its recorded length.
                replay.wait[i] = Wait::No;
                continue;
            }
            let r = replay.ce[i].saturating_sub(w).clamp(0, dur);
            replay.ret[i] = r;
            replay.own[i] = if w > replay.cs[i] { r } else { dur };
        }
        replay.baseline = replay.run(&Edit::default()).makespan;
        replay
    }

    /// The makespan with no edit (equal to the recording's, by construction).
    pub fn baseline(&self) -> Ns {
        self.baseline
    }

    /// Replays `edit`.
    pub fn run(&self, edit: &Edit) -> Outcome {
        let p = Prepared::new(self, edit);
        self.pass(&p, false).0
    }

    /// How much earlier the device and its launching threads finish with
    /// `edit` applied (never negative).
    pub fn savings(&self, edit: &Edit) -> Ns {
        if edit.is_empty() {
            return 0;
        }
        (self.baseline - self.run(edit).makespan).max(0)
    }

    /// One pass in recorded order. With `calibrate`, blocking calls end when
    /// they did and the second result holds what each awaited.
    fn pass(&self, p: &Prepared, calibrate: bool) -> (Outcome, Vec<Ns>) {
        let nc = self.cs.len();
        let ng = self.gs.len();
        let mut ncs = vec![0; nc];
        let mut nce = vec![0; nc];
        let mut ended = vec![false; nc];
        let mut started = vec![false; nc];
        let mut ngs = vec![0; ng];
        let mut nge = vec![0; ng];
        // Per stream: (recorded launch start, replayed end) in stream order.
        let mut streams: Vec<Vec<(Ns, Ns)>> = vec![Vec::new(); self.n_streams];
        let mut awaited = vec![Ns::MIN; if calibrate { nc } else { 0 }];
        for &e in &self.events {
            match e {
                Ev::CallStart(c) => {
                    let c = c as usize;
                    let prev = self.prev_on_thread[c];
                    ncs[c] = if prev == NONE {
                        self.cs[c] - p.removed_before[c]
                    } else {
                        let q = prev as usize;
                        if ended[q] && self.cs[c] >= self.ce[q] {
                            nce[q] + (self.cs[c] - self.ce[q]) - p.removed_before[c]
                        } else {
                            ncs[q] + (self.cs[c] - self.cs[q]) - p.removed_before[c]
                        }
                    };
                    started[c] = true;
                }
                Ev::CallEnd(c) => {
                    let c = c as usize;
                    let dur = self.ce[c] - self.cs[c];
                    nce[c] = match self.wait[c] {
                        Wait::No => ncs[c] + dur - p.removed_inside[c],
                        _ if calibrate => {
                            awaited[c] = self.awaited(c, &streams, &nge);
                            ncs[c] + dur
                        }
                        _ if p.no_wait[c] => ncs[c] + self.own[c],
                        _ => {
                            let w = self.awaited(c, &streams, &nge);
                            (ncs[c] + self.own[c]).max(w.saturating_add(self.ret[c]))
                        }
                    };
                    ended[c] = true;
                }
                Ev::Gpu(i) => {
                    let i = i as usize;
                    let mut start = Ns::MIN;
                    let c = self.g_launch[i];
                    if c != NONE && started[c as usize] {
                        // CPU time removed inside the launch call shortens
                        // the launch itself (launch overhead removed).
                        let d = (self.g_delay[i] - p.removed_inside[c as usize]).max(0);
                        start = ncs[c as usize] + d;
                    }
                    let prev = self.g_prev[i];
                    if prev != NONE {
                        let lag = if c != NONE && !started[c as usize] {
                            // Clock skew put the row before its launch: keep
                            // its recorded distance to its stream neighbour.
                            self.gs[i] - self.ge[prev as usize]
                        } else {
                            self.g_stream_lag[i]
                        };
                        start = start.max(nge[prev as usize] + lag);
                    }
                    if start == Ns::MIN {
                        start = self.gs[i];
                    }
                    ngs[i] = start;
                    nge[i] = start
                        + if p.removed_gpu[i] {
                            0
                        } else {
                            self.ge[i] - self.gs[i]
                        };
                    let launch_start = if c != NONE {
                        self.cs[c as usize]
                    } else {
                        self.gs[i]
                    };
                    streams[self.g_stream[i]].push((launch_start, nge[i]));
                }
            }
        }
        let mut makespan = nge.iter().copied().max().unwrap_or(Ns::MIN);
        for (&t, &last) in &self.thread_last {
            let l = last as usize;
            let tail = (self.window.1 - self.ce[l]).max(0) - p.removed_tail.get(&t).copied().unwrap_or(0);
            makespan = makespan.max(nce[l] + tail.max(0));
        }
        let out = Outcome {
            makespan,
            gpu_row: self.gpu_row.clone(),
            gs: ngs,
            ge: nge,
            call_row: self.call_row.clone(),
            cs: ncs,
            ce: nce,
        };
        (out, awaited)
    }

    /// The replayed end of the work blocking call `c` waits for.
    fn awaited(&self, c: usize, streams: &[Vec<(Ns, Ns)>], nge: &[Ns]) -> Ns {
        let before = self.cs[c];
        let last_before = |s: &Vec<(Ns, Ns)>| {
            s.iter()
                .rev()
                .find(|&&(launch, _)| launch < before)
                .map_or(Ns::MIN, |&(_, end)| end)
        };
        match self.wait[c] {
            Wait::No => Ns::MIN,
            Wait::Own => self.launched[c]
                .iter()
                .map(|&g| nge[g as usize])
                .max()
                .unwrap_or(Ns::MIN),
            Wait::Stream(s) => last_before(&streams[s]),
            Wait::All => streams.iter().map(last_before).max().unwrap_or(Ns::MIN),
        }
    }

    /// The `runtime` row of call node `c` (for tests and diagnostics).
    pub fn call_rows(&self) -> &[u32] {
        &self.call_row
    }
}

/// An [`Edit`] turned into per-node amounts.
struct Prepared {
    removed_before: Vec<Ns>,
    removed_inside: Vec<Ns>,
    removed_tail: HashMap<u32, Ns>,
    no_wait: Vec<bool>,
    removed_gpu: Vec<bool>,
}

impl Prepared {
    fn none(r: &Replay) -> Prepared {
        Prepared {
            removed_before: vec![0; r.cs.len()],
            removed_inside: vec![0; r.cs.len()],
            removed_tail: HashMap::new(),
            no_wait: vec![false; r.cs.len()],
            removed_gpu: vec![false; r.gs.len()],
        }
    }

    fn new(r: &Replay, edit: &Edit) -> Prepared {
        let mut p = Prepared::none(r);
        let mut by_thread: HashMap<u32, Vec<Span>> = HashMap::new();
        for &(t, s) in &edit.remove_cpu {
            by_thread.entry(t.0).or_default().push(s);
        }
        let all = Cumulative::new(union(edit.remove_cpu.iter().map(|&(_, s)| s).collect()));
        let by_thread: HashMap<u32, Cumulative> = by_thread
            .into_iter()
            .map(|(t, spans)| (t, Cumulative::new(union(spans))))
            .collect();
        for c in 0..r.cs.len() {
            if edit.remove_cpu.is_empty() {
                break;
            }
            let prev = r.prev_on_thread[c];
            let from = match prev {
                NONE => r.window.0,
                q if r.cs[c] >= r.ce[q as usize] => r.ce[q as usize],
                q => r.cs[q as usize],
            };
            // Between its calls a thread either works (its own removed time
            // counts) or waits for another launching thread (the forward
            // thread for the autograd thread, and back): time removed on any
            // launching thread then shortens the wait too.
            p.removed_before[c] = all.within(from, r.cs[c]);
            if let Some(own) = by_thread.get(&r.call_thread[c]) {
                p.removed_inside[c] = own.within(r.cs[c], r.ce[c]);
            }
        }
        if !edit.remove_cpu.is_empty() {
            for (&t, &last) in &r.thread_last {
                p.removed_tail
                    .insert(t, all.within(r.ce[last as usize], r.window.1));
            }
        }
        for c in &edit.no_wait {
            if let Ok(i) = r.call_row.binary_search(c) {
                p.no_wait[i] = true;
            }
        }
        for g in &edit.remove_gpu {
            if let Ok(i) = r.gpu_row.binary_search(g) {
                p.removed_gpu[i] = true;
            }
        }
        p
    }
}

/// Disjoint sorted spans with prefix sums: the covered length of any range
/// in O(log n).
struct Cumulative {
    spans: Vec<Span>,
    prefix: Vec<Ns>,
}

impl Cumulative {
    fn new(spans: Vec<Span>) -> Cumulative {
        let mut prefix = Vec::with_capacity(spans.len() + 1);
        prefix.push(0);
        for &(s, e) in &spans {
            prefix.push(prefix.last().unwrap() + (e - s));
        }
        Cumulative { spans, prefix }
    }

    /// Covered length of everything before `t`.
    fn upto(&self, t: Ns) -> Ns {
        let k = self.spans.partition_point(|&(s, _)| s < t);
        let mut total = self.prefix[k];
        if k > 0 {
            let (s, e) = self.spans[k - 1];
            if e > t {
                total -= e - t.max(s);
            }
        }
        total
    }

    fn within(&self, a: Ns, b: Ns) -> Ns {
        if b <= a {
            return 0;
        }
        self.upto(b) - self.upto(a)
    }
}

/// The stream a sync call synchronizes, from its Kineto `Stream Sync`
/// record (`sync_records`: correlation → stream), as a node stream index.
fn sync_stream(
    trace: &Trace,
    call: u32,
    sync_records: &HashMap<u64, i64>,
    stream_ix: &HashMap<i64, usize>,
) -> Option<usize> {
    let name = trace.strings.get(trace.runtime.name[call as usize]);
    if !name.contains("StreamSynchronize") {
        return None;
    }
    let stream = sync_records.get(&trace.runtime.correlation[call as usize])?;
    stream_ix.get(stream).copied()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cumulative_lengths() {
        let c = Cumulative::new(vec![(0, 10), (20, 30)]);
        assert_eq!(c.within(5, 25), 10);
        assert_eq!(c.within(-5, 100), 20);
        assert_eq!(c.within(10, 20), 0);
        assert_eq!(c.within(25, 22), 0);
    }
}

//! What-if replay (Daydream-style, docs/analysis.md, "What-if replay"): rebuild the
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
//! non-waiting part), and removes GPU rows (their duration becomes 0) or
//! shortens them.
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
use crate::names::{is_memcpy_api, is_stream_sync_api};
use crate::segments::QUEUED_AFTER_NS;
use gapscope_collectors::trace::{CallRow, FxHashMap, GpuKind, GpuRow, Ns, ThreadId, Trace};
use std::cell::Cell;
use std::sync::Mutex;

/// "No node" in the graph's own index columns (`prev_on_thread`,
/// `g_launch`, `g_prev`): node indices are not table rows, and these columns
/// are read once per node per replay, so they stay plain `u32`s.
const NO_NODE: u32 = u32::MAX;

/// Calls per entry of [`Replay`]'s `reach`.
const REACH_BLOCK: usize = 64;

/// The trace's columns the recorded times are read from.
#[derive(Clone, Copy)]
struct Recorded<'t> {
    call_start: &'t [Ns],
    call_end: &'t [Ns],
    gpu_start: &'t [Ns],
    gpu_end: &'t [Ns],
}

/// A fix expressed as a change to the dependency graph.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Edit {
    /// CPU time to remove, per thread: the work done in these spans (in the
    /// trace's own times) no longer happens.
    pub remove_cpu: Vec<(ThreadId, Span)>,
    /// Blocking calls that no longer wait for the device.
    pub no_wait: Vec<CallRow>,
    /// GPU rows that no longer run.
    pub remove_gpu: Vec<GpuRow>,
    /// GPU rows that run shorter: `(gpu row, new duration)` (a pageable
    /// copy made pinned still takes its bytes over the bus).
    pub shorten_gpu: Vec<(GpuRow, Ns)>,
}

impl Edit {
    /// True when the edit changes nothing.
    pub fn is_empty(&self) -> bool {
        self.remove_cpu.is_empty()
            && self.no_wait.is_empty()
            && self.remove_gpu.is_empty()
            && self.shorten_gpu.is_empty()
    }
}

/// What a blocking call waits for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Wait {
    /// The GPU rows it launched itself (a blocking copy).
    Own,
    /// The last rows launched before it on this stream (node stream index).
    Stream(usize),
    /// The last rows launched before it on every stream of the device.
    All,
}

/// A blocking call of the graph: what it waits for, and how it returns.
/// Few calls block, so these live in a table of their own that
/// [`Replay::blocker`] points into, not in columns over every call.
#[derive(Clone, Copy, Debug)]
struct Blocker {
    wait: Wait,
    /// Recorded return latency after the awaited work.
    ret: Ns,
    /// The part of its length that is not waiting.
    own: Ns,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Ev {
    CallEnd(u32),
    CallStart(u32),
    Gpu(u32),
}

/// An [`Ev`] in 4 bytes instead of 8 (the event list is the graph's
/// longest column: two per call, one per GPU row): the kind in the top two
/// bits, the node below them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct PackedEv(u32);

impl PackedEv {
    const NODE: u32 = (1 << 30) - 1;

    fn new(e: Ev) -> PackedEv {
        let (kind, node) = match e {
            Ev::CallEnd(n) => (0, n),
            Ev::CallStart(n) => (1, n),
            Ev::Gpu(n) => (2, n),
        };
        // Node indices stay below 2^30: a device with a billion calls or
        // GPU rows would need some 100 GB for the graph alone.
        debug_assert!(node <= Self::NODE);
        PackedEv(kind << 30 | (node & Self::NODE))
    }

    fn get(self) -> Ev {
        let node = self.0 & Self::NODE;
        match self.0 >> 30 {
            0 => Ev::CallEnd(node),
            1 => Ev::CallStart(node),
            _ => Ev::Gpu(node),
        }
    }
}

/// Replayed times of every node: calls' `[cs, ce)`, GPU rows' `[gs, ge)`.
#[derive(Clone, Debug, Default)]
struct State {
    cs: Vec<Ns>,
    ce: Vec<Ns>,
    gs: Vec<Ns>,
    ge: Vec<Ns>,
}

impl State {
    fn zeros(nc: usize, ng: usize) -> State {
        State {
            cs: vec![0; nc],
            ce: vec![0; nc],
            gs: vec![0; ng],
            ge: vec![0; ng],
        }
    }
}

/// The dependency graph of one device in one window, ready to replay many
/// edits (the event order is computed once; each replay is one pass).
///
/// A replay of an edit starts from the baseline's state at the first event
/// the edit can change: every event before it computes exactly what the
/// baseline computed (same inputs, same arithmetic), so only the rest of the
/// window is replayed, in a reused buffer rather than freshly allocated
/// arrays.
pub struct Replay<'t> {
    window: Span,
    /// The recorded times, read from the trace's own columns (`runtime`
    /// and `gpu` start and end) through `call_row` and `gpu_row`, not
    /// copied: [`Replay::cs`] and its siblings.
    recorded: Recorded<'t>,
    // Calls.
    call_row: Vec<CallRow>,
    call_thread: Vec<u32>,
    prev_on_thread: Vec<u32>,
    /// Per call: its index in `blockers`, [`NO_NODE`] when it does not
    /// block.
    blocker: Vec<u32>,
    blockers: Vec<Blocker>,
    /// GPU nodes call `c` launched: `launched[launched_at[c]..launched_at[c + 1]]`
    /// (one flat list, not a vector per call: a trace has millions of calls).
    launched_at: Vec<u32>,
    launched: Vec<u32>,
    /// Per block of [`REACH_BLOCK`] calls, in node order: the latest
    /// recorded start or end of the calls up to the block's end (where the
    /// first call an edit's CPU time can touch is looked for).
    reach: Vec<Ns>,
    // GPU rows.
    gpu_row: Vec<GpuRow>,
    g_launch: Vec<u32>,
    g_delay: Vec<Ns>,
    g_prev: Vec<u32>,
    g_stream_lag: Vec<Ns>,
    /// Per GPU node: held by something outside the trace (it started more
    /// than [`QUEUED_AFTER_NS`] after it was queued: its launch call had
    /// returned and its stream neighbour had ended). What held it is not
    /// in the trace, so no edit of the trace moves it earlier: its recorded
    /// start is a floor in every replay.
    g_held: Vec<bool>,
    /// Per stream: its GPU nodes in order.
    stream_nodes: Vec<Vec<u32>>,
    events: Vec<PackedEv>,
    /// Position in `events` of each call's start and end and each GPU row.
    start_pos: Vec<u32>,
    end_pos: Vec<u32>,
    gpu_pos: Vec<u32>,
    /// (thread index, the last call node of the thread), by thread.
    thread_last: Vec<(u32, u32)>,
    baseline: Ns,
    /// The baseline replay's times when they differ from the recorded ones
    /// (`None`, the usual case: the lags are measured so that a replay
    /// without an edit gives back the recording, and a copy of every time
    /// would double the graph's largest columns); read through
    /// [`Replay::base_state`] and [`Replay::restore`].
    base: Option<State>,
    /// `base_ge_max[i]`: the latest baseline end of GPU nodes `0..i`.
    base_ge_max: Vec<Ns>,
    /// Buffers holding the baseline's times, reused by [`Replay::savings`].
    pool: Mutex<Vec<State>>,
}

/// New times of every node after a replay.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// When the last GPU row or launching thread finished.
    pub makespan: Ns,
    gpu_row: Vec<GpuRow>,
    gs: Vec<Ns>,
    ge: Vec<Ns>,
    call_row: Vec<CallRow>,
    cs: Vec<Ns>,
    ce: Vec<Ns>,
}

impl Outcome {
    /// The replayed `[start, end)` of `runtime` row `row`, if it is in the
    /// graph.
    pub fn call_span(&self, row: CallRow) -> Option<Span> {
        let i = self.call_row.binary_search(&row).ok()?;
        Some((self.cs[i], self.ce[i]))
    }

    /// The replayed `[start, end)` of `gpu` row `row`, if it is in the graph.
    pub fn gpu_span(&self, row: GpuRow) -> Option<Span> {
        let i = self.gpu_row.binary_search(&row).ok()?;
        Some((self.gs[i], self.ge[i]))
    }
}

impl<'t> Replay<'t> {
    /// Builds the graph of `device` inside `window`.
    pub fn new(trace: &'t Trace, device: u32, window: Span, ev: &DeviceEvidence) -> Replay<'t> {
        let (ws, we) = window;
        let rt = &trace.runtime;
        let g = &trace.gpu;
        let n_threads = trace.threads.len();
        let mut launcher = vec![false; n_threads];
        for t in &ev.launchers {
            launcher[t.0 as usize] = true;
        }
        let call_rows: Vec<CallRow> = (0..rt.len())
            .filter(|&r| {
                launcher.get(rt.thread[r].0 as usize).copied().unwrap_or(false)
                    && rt.start[r] < we
                    && rt.end[r] > ws
            })
            .map(CallRow::new)
            .collect();
        // Each runtime row's node plus one, 0 for none: one lookup per GPU
        // row and blocking call (a binary search over the calls took 2-3
        // times as long on the benchmark traces). Zeroed memory: only the
        // pages of the graph's own rows are touched.
        let mut node_at = vec![0u32; rt.len()];
        for (i, r) in call_rows.iter().enumerate() {
            node_at[r.index()] = i as u32 + 1;
        }
        let node_of = |row: CallRow| node_at[row.index()].checked_sub(1);
        let nc = call_rows.len();
        // The recorded times, read through the rows (not copied).
        let cs = |c: usize| rt.start[call_rows[c].index()];
        let ce = |c: usize| rt.end[call_rows[c].index()];
        let call_thread: Vec<u32> = call_rows.iter().map(|&r| rt.thread[r.index()].0).collect();
        let mut prev_on_thread = vec![NO_NODE; nc];
        // Every call's thread is a launcher, hence an index below n_threads.
        let mut last_of_thread = vec![NO_NODE; n_threads];
        for i in 0..nc {
            let t = call_thread[i] as usize;
            prev_on_thread[i] = last_of_thread[t];
            last_of_thread[t] = i as u32;
        }
        let thread_last: Vec<(u32, u32)> = last_of_thread
            .iter()
            .enumerate()
            .filter(|&(_, &l)| l != NO_NODE)
            .map(|(t, &l)| (t as u32, l))
            .collect();
        let mut reach = Vec::with_capacity(nc.div_ceil(REACH_BLOCK));
        let mut latest = Ns::MIN;
        for i in 0..nc {
            latest = latest.max(cs(i)).max(ce(i));
            if i % REACH_BLOCK == REACH_BLOCK - 1 || i == nc - 1 {
                reach.push(latest);
            }
        }

        // GPU nodes and streams.
        let gpu_row: Vec<GpuRow> = (0..g.len())
            .filter(|&i| g.device[i] == device && g.is_busy(i) && g.start[i] < we && g.end[i] > ws)
            .map(GpuRow::new)
            .collect();
        let mut stream_ix: FxHashMap<i64, usize> = FxHashMap::default();
        let g_stream: Vec<usize> = gpu_row
            .iter()
            .map(|&r| {
                let n = stream_ix.len();
                *stream_ix.entry(g.stream[r.index()]).or_insert(n)
            })
            .collect();
        let gs = |i: usize| g.start[gpu_row[i].index()];
        let ge = |i: usize| g.end[gpu_row[i].index()];
        let mut g_launch = vec![NO_NODE; gpu_row.len()];
        let mut g_prev = vec![NO_NODE; gpu_row.len()];
        let mut stream_nodes: Vec<Vec<u32>> = vec![Vec::new(); stream_ix.len()];
        let mut launched_at = vec![0u32; nc + 1];
        for (i, &r) in gpu_row.iter().enumerate() {
            if let Some(c) = trace.links.gpu_launch[r.index()].and_then(node_of) {
                g_launch[i] = c;
                launched_at[c as usize + 1] += 1;
            }
            let on_stream = &mut stream_nodes[g_stream[i]];
            g_prev[i] = on_stream.last().copied().unwrap_or(NO_NODE);
            on_stream.push(i as u32);
        }
        for c in 0..nc {
            launched_at[c + 1] += launched_at[c];
        }
        // Each call's GPU nodes in node order, as they were met.
        let mut launched = vec![0u32; launched_at[nc] as usize];
        let mut fill = launched_at.clone();
        for (i, &c) in g_launch.iter().enumerate() {
            if c != NO_NODE {
                launched[fill[c as usize] as usize] = i as u32;
                fill[c as usize] += 1;
            }
        }
        let mut g_delay = vec![0; gpu_row.len()];
        let mut g_stream_lag = vec![0; gpu_row.len()];
        let mut g_held = vec![false; gpu_row.len()];
        // When launched node `i` (launch call `c`) was queued: its call had
        // returned and its stream neighbour had ended.
        let queued_at = |i: usize, c: usize| {
            let p = g_prev[i];
            ce(c).max(if p == NO_NODE { Ns::MIN } else { ge(p as usize) })
        };
        for i in 0..gpu_row.len() {
            let p = g_prev[i];
            let waited_for_launch = p == NO_NODE || gs(i) > ge(p as usize);
            let c = g_launch[i];
            if c != NO_NODE {
                let c = c as usize;
                let since_call = (gs(i) - cs(c)).max(0);
                g_delay[i] = if waited_for_launch {
                    since_call
                } else {
                    since_call.min(ce(c) - cs(c))
                };
                g_held[i] = gs(i) - queued_at(i, c) > QUEUED_AFTER_NS;
            }
            if p != NO_NODE {
                let gap = gs(i) - ge(p as usize);
                g_stream_lag[i] = if c != NO_NODE { gap.min(0) } else { gap };
            }
        }

        // Held only on an idle device, as the `queued` cause is: a row
        // that waited while other streams' rows ran may have waited for
        // them (a stream waiting on an event), which the trace does show.
        if g_held.iter().any(|&h| h) {
            let busy = union((0..gpu_row.len()).map(|i| (gs(i), ge(i))).collect());
            for (i, held) in g_held.iter_mut().enumerate().filter(|(_, h)| **h) {
                let (start, queued) = (gs(i), queued_at(i, g_launch[i] as usize));
                let k = busy.partition_point(|s| s.0 < start);
                *held = match k.checked_sub(1).map(|k| busy[k].1) {
                    // Something ran up to its start.
                    Some(end) if end >= start => false,
                    // The device went idle at `idle_from`.
                    idle_from => start - queued.max(idle_from.unwrap_or(Ns::MIN)) > QUEUED_AFTER_NS,
                };
            }
        }

        // What each blocking call waits for.
        let mut blocker = vec![NO_NODE; nc];
        let mut blockers: Vec<Blocker> = Vec::new();
        let sync_records: FxHashMap<u64, i64> = (0..g.len())
            .filter(|&i| g.kind[i] == GpuKind::Sync && g.correlation[i] != 0 && g.stream[i] >= 0)
            .map(|i| (g.correlation[i], g.stream[i]))
            .collect();
        for b in &ev.blocking {
            let Some(c) = node_of(b.call) else {
                continue;
            };
            let name = trace.strings.get(rt.name[b.call.index()]);
            let launched_any = launched_at[c as usize] < launched_at[c as usize + 1];
            let wait = if is_memcpy_api(name) && launched_any {
                Wait::Own
            } else {
                sync_stream(trace, b.call, &sync_records, &stream_ix).map_or(Wait::All, Wait::Stream)
            };
            match blocker[c as usize] {
                NO_NODE => {
                    blocker[c as usize] = blockers.len() as u32;
                    blockers.push(Blocker { wait, ret: 0, own: 0 });
                }
                // A call listed twice: the later entry decides, as it did
                // when this was a column over every call.
                k => blockers[k as usize].wait = wait,
            }
        }

        // At one instant: calls end, then calls start, then GPU rows start
        // (a launch precedes what it launched); a call of zero length ends
        // after everything else at its instant, never before it started.
        // Starts and GPU rows are already in time order, so the events are a
        // merge of three sorted lists, not a sort of all of them.
        let end_rank = |i: usize| if ce(i) > cs(i) { 0u8 } else { 3 };
        let mut ends: Vec<u32> = (0..nc as u32).collect();
        // Stable and adaptive: call ends are nearly in order already.
        ends.sort_by_key(|&i| (ce(i as usize), end_rank(i as usize)));
        let mut events: Vec<PackedEv> = Vec::with_capacity(2 * nc + gpu_row.len());
        let mut start_pos = vec![0u32; nc];
        let mut end_pos = vec![0u32; nc];
        let mut gpu_pos = vec![0u32; gpu_row.len()];
        // Each list's head as (time, rank); an exhausted list's head is
        // `DONE`, above every real key (ranks are at most 3). Ranks differ
        // between the lists, so the smallest head is never a tie.
        const DONE: (Ns, u8) = (Ns::MAX, u8::MAX);
        let ng = gpu_row.len();
        let end_key = |a: usize| {
            ends.get(a)
                .map_or(DONE, |&i| (ce(i as usize), end_rank(i as usize)))
        };
        let start_key = |b: usize| if b < nc { (cs(b), 1) } else { DONE };
        let gpu_key = |c: usize| if c < ng { (gs(c), 2) } else { DONE };
        let (mut a, mut b, mut c) = (0usize, 0usize, 0usize);
        let (mut ka, mut kb, mut kc) = (end_key(0), start_key(0), gpu_key(0));
        for at in 0..(2 * nc + ng) as u32 {
            if ka < kb && ka < kc {
                end_pos[ends[a] as usize] = at;
                events.push(PackedEv::new(Ev::CallEnd(ends[a])));
                a += 1;
                ka = end_key(a);
            } else if kb < kc {
                start_pos[b] = at;
                events.push(PackedEv::new(Ev::CallStart(b as u32)));
                b += 1;
                kb = start_key(b);
            } else {
                gpu_pos[c] = at;
                events.push(PackedEv::new(Ev::Gpu(c as u32)));
                c += 1;
                kc = gpu_key(c);
            }
        }
        // The building's own columns go before the calibration allocates
        // its state: the graph's peak is then the graph and one state.
        drop((launcher, node_at, g_stream, fill, sync_records, stream_ix, ends));
        let mut replay = Replay {
            window,
            recorded: Recorded {
                call_start: &rt.start,
                call_end: &rt.end,
                gpu_start: &g.start,
                gpu_end: &g.end,
            },
            call_row: call_rows,
            call_thread,
            prev_on_thread,
            blocker,
            blockers,
            launched_at,
            launched,
            reach,
            gpu_row,
            g_launch,
            g_delay,
            g_prev,
            g_stream_lag,
            g_held,
            stream_nodes,
            events,
            start_pos,
            end_pos,
            gpu_pos,
            thread_last,
            baseline: 0,
            base: None,
            base_ge_max: Vec::new(),
            pool: Mutex::new(Vec::new()),
        };
        // Calibrate the sync edges: what each blocking call awaited in the
        // recording, hence its return latency and its non-waiting part.
        let none = Applied::none();
        let mut awaited = vec![Ns::MIN; replay.blockers.len()];
        let mut st = State::zeros(nc, ng);
        replay.pass(&mut st, 0, &none, Some(&mut awaited));
        for i in 0..nc {
            let k = replay.blocker[i];
            if k == NO_NODE {
                continue;
            }
            let w = awaited[k as usize];
            let (cs, ce) = (replay.cs(i), replay.ce(i));
            let dur = ce - cs;
            if w > ce {
                // It returned before work it supposedly waits for ended: it
                // waited on less (one stream of several, an earlier event).
                // Not knowing on what, keep its recorded length.
                replay.blocker[i] = NO_NODE;
                continue;
            }
            let r = ce.saturating_sub(w).clamp(0, dur);
            let b = &mut replay.blockers[k as usize];
            b.ret = r;
            b.own = if w > cs { r } else { dur };
        }
        drop(awaited);
        // The baseline. When the calibration pass gave back the recording,
        // the baseline is the same: by induction over the events, every
        // node reads the same times as it did there, and a blocking call
        // that began when it did returns when it did, at
        // max(start + own, awaited + ret) = its recorded end (or keeps its
        // recorded length, when it was dropped above). Else it is replayed
        // from scratch, into the same buffer.
        let mut recorded = replay.is_recorded(&st);
        if !recorded {
            replay.pass(&mut st, 0, &none, None);
            recorded = replay.is_recorded(&st);
        }
        replay.baseline = replay.makespan(&st, 0, &none);
        let mut base_ge_max = Vec::with_capacity(ng + 1);
        let mut latest = Ns::MIN;
        base_ge_max.push(latest);
        for &e in &st.ge {
            latest = latest.max(e);
            base_ge_max.push(latest);
        }
        replay.base_ge_max = base_ge_max;
        replay.base = (!recorded).then_some(st);
        replay
    }

    /// Recorded start of call node `c`.
    fn cs(&self, c: usize) -> Ns {
        self.recorded.call_start[self.call_row[c].index()]
    }

    /// Recorded end of call node `c`.
    fn ce(&self, c: usize) -> Ns {
        self.recorded.call_end[self.call_row[c].index()]
    }

    /// Recorded start of GPU node `i`.
    fn gs(&self, i: usize) -> Ns {
        self.recorded.gpu_start[self.gpu_row[i].index()]
    }

    /// Recorded end of GPU node `i`.
    fn ge(&self, i: usize) -> Ns {
        self.recorded.gpu_end[self.gpu_row[i].index()]
    }

    /// Whether `st` holds the recorded times.
    fn is_recorded(&self, st: &State) -> bool {
        (0..st.cs.len()).all(|c| st.cs[c] == self.cs(c) && st.ce[c] == self.ce(c))
            && (0..st.gs.len()).all(|i| st.gs[i] == self.gs(i) && st.ge[i] == self.ge(i))
    }

    /// A copy of the baseline replay's times: the recorded ones unless
    /// they differ.
    fn base_state(&self) -> State {
        match &self.base {
            Some(b) => b.clone(),
            None => State {
                cs: (0..self.call_row.len()).map(|c| self.cs(c)).collect(),
                ce: (0..self.call_row.len()).map(|c| self.ce(c)).collect(),
                gs: (0..self.gpu_row.len()).map(|i| self.gs(i)).collect(),
                ge: (0..self.gpu_row.len()).map(|i| self.ge(i)).collect(),
            },
        }
    }

    /// Puts the baseline's times back into `st` where a replay from event
    /// `from` wrote them: calls from `call_from`, the ends of the calls
    /// ending in events `from..`, GPU nodes from `gpu_from`.
    fn restore(&self, st: &mut State, from: usize, call_from: usize, gpu_from: usize) {
        match &self.base {
            Some(b) => {
                st.cs[call_from..].copy_from_slice(&b.cs[call_from..]);
                st.gs[gpu_from..].copy_from_slice(&b.gs[gpu_from..]);
                st.ge[gpu_from..].copy_from_slice(&b.ge[gpu_from..]);
            }
            None => {
                for c in call_from..st.cs.len() {
                    st.cs[c] = self.cs(c);
                }
                for i in gpu_from..st.gs.len() {
                    st.gs[i] = self.gs(i);
                    st.ge[i] = self.ge(i);
                }
            }
        }
        for &e in &self.events[from..] {
            if let Ev::CallEnd(c) = e.get() {
                let c = c as usize;
                st.ce[c] = match &self.base {
                    Some(b) => b.ce[c],
                    None => self.ce(c),
                };
            }
        }
    }

    /// The makespan with no edit (equal to the recording's, by construction).
    pub fn baseline(&self) -> Ns {
        self.baseline
    }

    /// Replays `edit` over the whole window.
    pub fn run(&self, edit: &Edit) -> Outcome {
        let a = Applied::new(self, edit);
        let mut st = State::zeros(self.call_row.len(), self.gpu_row.len());
        self.pass(&mut st, 0, &a, None);
        Outcome {
            makespan: self.makespan(&st, 0, &a),
            gpu_row: self.gpu_row.clone(),
            gs: st.gs,
            ge: st.ge,
            call_row: self.call_row.clone(),
            cs: st.cs,
            ce: st.ce,
        }
    }

    /// How much earlier the device and its launching threads finish with
    /// `edit` applied (never negative). Equal to the baseline's makespan
    /// less [`Replay::run`]'s, replaying only from the first event the edit
    /// changes.
    pub fn savings(&self, edit: &Edit) -> Ns {
        if edit.is_empty() {
            return 0;
        }
        let a = Applied::new(self, edit);
        let from = self.first_changed(&a);
        let mut st = self
            .pool
            .lock()
            .ok()
            .and_then(|mut p| p.pop())
            .unwrap_or_else(|| self.base_state());
        self.pass(&mut st, from, &a, None);
        let gpu_from = self.gpu_pos.partition_point(|&p| (p as usize) < from);
        let makespan = self.makespan(&st, gpu_from, &a);
        // Back to the baseline's times for the next replay.
        let call_from = self.start_pos.partition_point(|&p| (p as usize) < from);
        self.restore(&mut st, from, call_from, gpu_from);
        if let Ok(mut p) = self.pool.lock() {
            p.push(st);
        }
        (self.baseline - makespan).max(0)
    }

    /// The first event whose inputs `a` changes (`events.len()` when none).
    fn first_changed(&self, a: &Applied) -> usize {
        let mut from = self.events.len();
        // Removed CPU time changes a call only when the call, or the time
        // before it since its thread's previous call, reaches past the
        // first removed span's start: the first call whose recorded start
        // or end is past it (`reach` is monotonic: the block holding that
        // call, then the call inside the block).
        if let Some(&(s0, _)) = a.all.spans.first() {
            let block = self.reach.partition_point(|&r| r <= s0);
            let nc = self.call_row.len();
            let c = (block * REACH_BLOCK..nc)
                .find(|&c| self.cs(c).max(self.ce(c)) > s0)
                .unwrap_or(nc);
            if c < nc {
                from = from.min(self.start_pos[c] as usize);
            }
        }
        // A call's changes are read at its end and by the rows it launched
        // once it started: never before its start.
        if let Some(&c) = a.no_wait.first() {
            from = from.min(self.start_pos[c as usize] as usize);
        }
        if let Some(&i) = a.removed_gpu.first() {
            from = from.min(self.gpu_pos[i as usize] as usize);
        }
        if let Some(&(i, _)) = a.shortened_gpu.first() {
            from = from.min(self.gpu_pos[i as usize] as usize);
        }
        from
    }

    /// CPU time `a` removes before call `c` since its thread's previous call.
    fn removed_before(&self, a: &Applied, c: usize) -> Ns {
        if a.all.spans.is_empty() {
            return 0;
        }
        let from = match self.prev_on_thread[c] {
            NO_NODE => self.window.0,
            q if self.cs(c) >= self.ce(q as usize) => self.ce(q as usize),
            q => self.cs(q as usize),
        };
        // Between its calls a thread either works (its own removed time
        // counts) or waits for another launching thread (the forward
        // thread for the autograd thread, and back): time removed on any
        // launching thread then shortens the wait too.
        a.all.within(from, self.cs(c))
    }

    /// CPU time `a` removes inside call `c` (on its own thread only).
    fn removed_inside(&self, a: &Applied, c: usize) -> Ns {
        match a.by_thread.get(self.call_thread[c] as usize) {
            Some(own) => own.within(self.cs(c), self.ce(c)),
            None => 0,
        }
    }

    /// Replays events `from..` into `st`, whose nodes before `from` must
    /// hold the times of a replay of the same edit (the baseline's, when
    /// `a` changes nothing before `from`). With `awaited`, blocking calls
    /// end when they did and `awaited` receives what each awaited, by its
    /// index in `blockers`.
    fn pass(&self, st: &mut State, from: usize, a: &Applied, mut awaited: Option<&mut [Ns]>) {
        // Calls start and GPU rows run in node order: nodes below these
        // counts have been replayed.
        let mut started = self.start_pos.partition_point(|&p| (p as usize) < from);
        let mut gpu_done = self.gpu_pos.partition_point(|&p| (p as usize) < from);
        for (pos, &e) in self.events.iter().enumerate().skip(from) {
            match e.get() {
                Ev::CallStart(c) => {
                    let c = c as usize;
                    let removed = self.removed_before(a, c);
                    let prev = self.prev_on_thread[c];
                    let cs = self.cs(c);
                    st.cs[c] = if prev == NO_NODE {
                        cs - removed
                    } else {
                        let q = prev as usize;
                        let ce_q = self.ce(q);
                        if (self.end_pos[q] as usize) < pos && cs >= ce_q {
                            st.ce[q] + (cs - ce_q) - removed
                        } else {
                            st.cs[q] + (cs - self.cs(q)) - removed
                        }
                    };
                    started = c + 1;
                }
                Ev::CallEnd(c) => {
                    let c = c as usize;
                    let dur = self.ce(c) - self.cs(c);
                    let blocker = self.blocker[c];
                    st.ce[c] = match self.blockers.get(blocker as usize) {
                        None => st.cs[c] + dur - self.removed_inside(a, c),
                        Some(_) if awaited.is_some() => {
                            let w = self.awaited(c, st, gpu_done);
                            if let Some(aw) = awaited.as_deref_mut() {
                                aw[blocker as usize] = w;
                            }
                            st.cs[c] + dur
                        }
                        Some(b) if a.no_wait.binary_search(&(c as u32)).is_ok() => st.cs[c] + b.own,
                        Some(b) => {
                            let w = self.awaited(c, st, gpu_done);
                            (st.cs[c] + b.own).max(w.saturating_add(b.ret))
                        }
                    };
                }
                Ev::Gpu(i) => {
                    let i = i as usize;
                    let mut start = Ns::MIN;
                    let c = self.g_launch[i];
                    let launched = c != NO_NODE && (c as usize) < started;
                    if launched {
                        // CPU time removed inside the launch call shortens
                        // the launch itself (launch overhead removed).
                        let d = (self.g_delay[i] - self.removed_inside(a, c as usize)).max(0);
                        start = st.cs[c as usize] + d;
                    }
                    let prev = self.g_prev[i];
                    if prev != NO_NODE {
                        let lag = if c != NO_NODE && !launched {
                            // Clock skew put the row before its launch: keep
                            // its recorded distance to its stream neighbour.
                            self.gs(i) - self.ge(prev as usize)
                        } else {
                            self.g_stream_lag[i]
                        };
                        start = start.max(st.ge[prev as usize] + lag);
                    }
                    let gs = self.gs(i);
                    if start == Ns::MIN || self.g_held[i] {
                        start = start.max(gs);
                    }
                    st.gs[i] = start;
                    let recorded = self.ge(i) - gs;
                    st.ge[i] = start
                        + if !a.removed_gpu.is_empty() && a.removed_gpu.binary_search(&(i as u32)).is_ok() {
                            0
                        } else if a.shortened_gpu.is_empty() {
                            recorded
                        } else {
                            match a.shortened_gpu.binary_search_by_key(&(i as u32), |x| x.0) {
                                Ok(k) => a.shortened_gpu[k].1.min(recorded),
                                Err(_) => recorded,
                            }
                        };
                    gpu_done = i + 1;
                }
            }
        }
    }

    /// The makespan of a finished replay in `st`; GPU nodes below `gpu_from`
    /// hold the baseline's times.
    fn makespan(&self, st: &State, gpu_from: usize, a: &Applied) -> Ns {
        let before = if gpu_from == 0 {
            Ns::MIN
        } else {
            self.base_ge_max[gpu_from]
        };
        let mut makespan = st.ge[gpu_from..].iter().copied().fold(before, Ns::max);
        for &(_, last) in &self.thread_last {
            let l = last as usize;
            let ce = self.ce(l);
            let removed = a.all.within(ce, self.window.1);
            let tail = (self.window.1 - ce).max(0) - removed;
            makespan = makespan.max(st.ce[l] + tail.max(0));
        }
        makespan
    }

    /// The replayed end of the work blocking call `c` waits for, when GPU
    /// nodes below `gpu_done` have been replayed (a row not yet replayed
    /// counts as ending at 0).
    fn awaited(&self, c: usize, st: &State, gpu_done: usize) -> Ns {
        let before = self.cs(c);
        let last_before = |s: &Vec<u32>| {
            let pushed = s.partition_point(|&g| (g as usize) < gpu_done);
            s[..pushed]
                .iter()
                .rev()
                .find(|&&g| self.launch_start(g as usize) < before)
                .map_or(Ns::MIN, |&g| st.ge[g as usize])
        };
        let Some(b) = self.blockers.get(self.blocker[c] as usize) else {
            return Ns::MIN;
        };
        match b.wait {
            Wait::Own => self.launched[self.launched_at[c] as usize..self.launched_at[c + 1] as usize]
                .iter()
                .map(|&g| {
                    if (g as usize) < gpu_done {
                        st.ge[g as usize]
                    } else {
                        0
                    }
                })
                .max()
                .unwrap_or(Ns::MIN),
            Wait::Stream(s) => last_before(&self.stream_nodes[s]),
            Wait::All => self.stream_nodes.iter().map(last_before).max().unwrap_or(Ns::MIN),
        }
    }

    /// Recorded start of GPU node `g`'s launch call (its own start without
    /// one).
    fn launch_start(&self, g: usize) -> Ns {
        match self.g_launch[g] {
            NO_NODE => self.gs(g),
            c => self.cs(c as usize),
        }
    }

    /// What the graph owns (every column but the trace's it reads), for
    /// freeing apart from the trace.
    pub fn into_owned(self) -> impl Send + 'static {
        (
            self.call_row,
            self.call_thread,
            self.prev_on_thread,
            self.blocker,
            self.blockers,
            self.launched_at,
            self.launched,
            self.reach,
            self.gpu_row,
            self.g_launch,
            self.g_delay,
            self.g_prev,
            self.g_stream_lag,
            self.g_held,
            self.stream_nodes,
            self.events,
            self.start_pos,
            self.end_pos,
            self.gpu_pos,
            self.thread_last,
            self.base,
            self.base_ge_max,
            self.pool,
        )
    }

    /// The `runtime` row of call node `c` (for tests and diagnostics).
    pub fn call_rows(&self) -> &[CallRow] {
        &self.call_row
    }
}

/// An [`Edit`] in the graph's terms.
struct Applied {
    /// Union of the CPU time removed on any thread.
    all: Cumulative,
    /// Per thread index: the CPU time removed on it.
    by_thread: Vec<Cumulative>,
    /// Call nodes that no longer wait, sorted.
    no_wait: Vec<u32>,
    /// GPU nodes that no longer run, sorted.
    removed_gpu: Vec<u32>,
    /// GPU nodes that run shorter, with their new duration, sorted.
    shortened_gpu: Vec<(u32, Ns)>,
}

impl Applied {
    fn none() -> Applied {
        Applied {
            all: Cumulative::new(Vec::new()),
            by_thread: Vec::new(),
            no_wait: Vec::new(),
            removed_gpu: Vec::new(),
            shortened_gpu: Vec::new(),
        }
    }

    fn new(r: &Replay<'_>, edit: &Edit) -> Applied {
        let n = edit
            .remove_cpu
            .iter()
            .map(|&(t, _)| t.0 as usize + 1)
            .max()
            .unwrap_or(0);
        let mut spans: Vec<Vec<Span>> = vec![Vec::new(); n];
        for &(t, s) in &edit.remove_cpu {
            spans[t.0 as usize].push(s);
        }
        fn nodes<R: Ord>(rows: &[R], of: &[R]) -> Vec<u32> {
            let mut v: Vec<u32> = rows
                .iter()
                .filter_map(|row| of.binary_search(row).ok().map(|i| i as u32))
                .collect();
            v.sort_unstable();
            v.dedup();
            v
        }
        Applied {
            all: Cumulative::new(union(edit.remove_cpu.iter().map(|&(_, s)| s).collect())),
            by_thread: spans.into_iter().map(|s| Cumulative::new(union(s))).collect(),
            no_wait: nodes(&edit.no_wait, &r.call_row),
            removed_gpu: nodes(&edit.remove_gpu, &r.gpu_row),
            shortened_gpu: {
                let mut v: Vec<(u32, Ns)> = edit
                    .shorten_gpu
                    .iter()
                    .filter_map(|&(row, d)| r.gpu_row.binary_search(&row).ok().map(|i| (i as u32, d.max(0))))
                    .collect();
                v.sort_unstable();
                v.dedup_by_key(|x| x.0);
                v
            },
        }
    }
}

/// Disjoint sorted spans with prefix sums: the covered length of any range
/// in O(log n), and in O(1) when successive queries move little.
///
/// A replay asks for the removed time between each call and the one before
/// it on its thread, in the order the calls start: the ranges' starts move
/// forward by a few spans at a time. A cursor remembers where the last
/// range started, and each query walks from there; a walk of more than
/// [`Cumulative::WALK`] steps (a thread's previous call far back) falls
/// back to a binary search. Either way the position found is the same, so
/// the result is too.
struct Cumulative {
    spans: Vec<Span>,
    prefix: Vec<Ns>,
    /// Where the last [`Cumulative::within`] range started.
    cursor: Cell<usize>,
}

impl Cumulative {
    /// Steps walked before binary searching instead.
    const WALK: usize = 4;

    fn new(spans: Vec<Span>) -> Cumulative {
        let mut prefix = Vec::with_capacity(spans.len() + 1);
        prefix.push(0);
        for &(s, e) in &spans {
            prefix.push(prefix.last().unwrap() + (e - s));
        }
        Cumulative {
            spans,
            prefix,
            cursor: Cell::new(0),
        }
    }

    /// The number of spans starting before `t`, searched from `from`.
    fn seek(&self, t: Ns, from: usize) -> usize {
        let n = self.spans.len();
        let mut k = from.min(n);
        for _ in 0..Self::WALK {
            if k < n && self.spans[k].0 < t {
                k += 1;
            } else if k > 0 && self.spans[k - 1].0 >= t {
                k -= 1;
            } else {
                return k;
            }
        }
        self.spans.partition_point(|&(s, _)| s < t)
    }

    /// Covered length of everything before `t`, where `k` spans start
    /// before `t`.
    fn upto(&self, t: Ns, k: usize) -> Ns {
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
        if b <= a || self.spans.is_empty() {
            return 0;
        }
        let ka = self.seek(a, self.cursor.get());
        self.cursor.set(ka);
        let kb = self.seek(b, ka);
        self.upto(b, kb) - self.upto(a, ka)
    }
}

/// The stream a sync call synchronizes, from its Kineto `Stream Sync`
/// record (`sync_records`: correlation → stream), as a node stream index.
fn sync_stream(
    trace: &Trace,
    call: CallRow,
    sync_records: &FxHashMap<u64, i64>,
    stream_ix: &FxHashMap<i64, usize>,
) -> Option<usize> {
    let name = trace.strings.get(trace.runtime.name[call.index()]);
    if !is_stream_sync_api(name) {
        return None;
    }
    let stream = sync_records.get(&trace.runtime.correlation[call.index()])?;
    stream_ix.get(stream).copied()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The baseline's times are the recorded ones (no copy kept); were
    /// they not, the copy kept is what replays start from: a savings
    /// estimate is the same either way when the copy holds the same times,
    /// and a replay run twice gives the same answer (the pooled buffer is
    /// put back to the baseline after each use).
    #[test]
    fn baseline_copy_only_when_it_differs() {
        use gapscope_collectors::trace::Sketch;
        let t = Sketch::new()
            .step(1, 0, 180)
            .call(0, 5, "cudaLaunchKernel", 1)
            .call(10, 105, "cudaStreamSynchronize", 0)
            .call(120, 125, "cudaLaunchKernel", 2)
            .kernel(7, 0, 100, 1)
            .kernel(7, 130, 180, 2)
            .finish();
        let ev = DeviceEvidence::new(&t, 0);
        let mut r = Replay::new(&t, 0, (0, 180), &ev);
        assert!(r.base.is_none(), "the baseline replay gives back the recording");
        assert_eq!(r.blockers.len(), 1);
        let edit = Edit {
            no_wait: vec![CallRow::new(1)],
            ..Edit::default()
        };
        assert_eq!(r.savings(&edit), 30);
        assert_eq!(r.savings(&edit), 30);
        r.base = Some(r.base_state());
        r.pool.lock().unwrap().clear();
        assert_eq!(r.savings(&edit), 30);
        assert_eq!(r.savings(&edit), 30);
    }

    #[test]
    fn packed_events_unpack_to_what_was_packed() {
        for n in [0, 1, 12_345, PackedEv::NODE] {
            for e in [Ev::CallEnd(n), Ev::CallStart(n), Ev::Gpu(n)] {
                assert_eq!(PackedEv::new(e).get(), e);
            }
        }
    }

    #[test]
    fn cumulative_lengths() {
        let c = Cumulative::new(vec![(0, 10), (20, 30)]);
        assert_eq!(c.within(5, 25), 10);
        assert_eq!(c.within(-5, 100), 20);
        assert_eq!(c.within(10, 20), 0);
        assert_eq!(c.within(25, 22), 0);
    }

    /// The cursor gives what a fresh binary search gives, whatever order
    /// the queries come in (forward in small steps, far jumps back and
    /// forth, repeats).
    #[test]
    fn cursor_agrees_with_binary_search() {
        let spans: Vec<Span> = (0..200).map(|i| (i * 10, i * 10 + 3 + i % 5)).collect();
        let c = Cumulative::new(spans.clone());
        let fresh = |a: Ns, b: Ns| {
            let upto = |t: Ns| spans.iter().map(|&(s, e)| (e.min(t) - s).max(0)).sum::<Ns>();
            if b <= a {
                0
            } else {
                upto(b) - upto(a)
            }
        };
        let mut x: u64 = 7;
        let mut queries: Vec<(Ns, Ns)> = (0..500).map(|i| (i * 4 - 20, i * 4 + 13)).collect();
        for _ in 0..500 {
            // xorshift: far jumps in both directions
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let a = (x % 2100) as Ns - 50;
            queries.push((a, a + (x >> 20) as Ns % 300));
        }
        for (a, b) in queries {
            assert_eq!(c.within(a, b), fresh(a, b), "within({a}, {b})");
        }
    }
}

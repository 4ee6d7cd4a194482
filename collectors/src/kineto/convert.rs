//! Turns wire events into Trace rows, one chunk of `traceEvents` at a time.
//!
//! Each parallel chunk gets its own [`Converter`] (its own
//! [`TraceBuilder`]); they are joined in file order ([`Converter::concat`]).
//! Whatever needs the whole trace waits for that: `B`/`E` pairs (a pair may
//! straddle two chunks) and thread names from metadata (they apply to CPU
//! threads only, known once every row is in).

use super::category::{classify, copy_info, memset_mem, Class};
use super::event::{Args, Event, Id};
use super::number::micros_to_ns;
use super::wire::RawEvent;
use crate::trace::*;
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

/// Events skipped or odd, with their index in the chunk, merged into
/// [`Diagnostics`] once the chunk's position in the file is known.
#[derive(Default)]
pub struct Defects {
    counts: BTreeMap<&'static str, u64>,
    examples: Vec<(usize, &'static str, String)>,
}

impl Defects {
    /// Examples kept per reason per chunk (Diagnostics keeps 3 in all).
    const EXAMPLES_PER_REASON: u64 = 3;

    /// Counts event `index` under `reason`.
    pub fn note(&mut self, index: usize, reason: &'static str, detail: impl FnOnce() -> String) {
        let n = self.counts.entry(reason).or_insert(0);
        *n += 1;
        if *n <= Self::EXAMPLES_PER_REASON {
            self.examples.push((index, reason, detail()));
        }
    }

    /// Writes these into `diag`, numbering events from `base`.
    fn merge_into(self, diag: &mut Diagnostics, base: usize) {
        let mut counts = self.counts;
        for (i, reason, detail) in self.examples {
            diag.note(reason, || format!("event #{}: {detail}", base + i));
            if let Some(c) = counts.get_mut(reason) {
                *c -= 1;
            }
        }
        for (reason, c) in counts.into_iter().filter(|&(_, c)| c > 0) {
            *diag.counts.entry(reason.to_string()).or_insert(0) += c;
        }
    }
}

/// A `(pid, tid)` key as stored in [`ThreadTable`].
type ThreadKey = (i64, i64);

/// Which rows a pass over the events keeps.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Keep {
    /// Every row.
    #[default]
    All,
    /// None: the pass only finds the earliest row start (the origin a time
    /// window is measured from) and checks the file.
    Probe,
    /// The rows a time window needs.
    Window(WindowKeep),
}

/// A time window as the converter applies it: the rows that overlap
/// `[origin + start, origin + end)` (ns) are kept, and every ProfilerStep
/// (few, and needed to number and select steps). Rows are dropped by their
/// own times, as they come: the file is not sorted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WindowKeep {
    /// The trace's origin (its earliest row start), found by a
    /// [`Keep::Probe`] pass. Without it only the end is applied, against
    /// the earliest start seen so far: that is never before the origin, so
    /// a row dropped then is past the end whatever comes later.
    pub origin: Option<Ns>,
    /// Window start, ns after the origin (`None`: open).
    pub start: Option<Ns>,
    /// Window end, ns after the origin (`None`: open).
    pub end: Option<Ns>,
}

/// What a pass saw of the rows, kept or not.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Seen {
    /// Earliest start of any row (absolute ns).
    pub earliest: Option<Ns>,
    /// Latest end of any row (absolute ns).
    pub latest: Option<Ns>,
    /// Rows left out by a time window.
    pub dropped: u64,
}

impl Seen {
    fn row(&mut self, start: Ns, end: Ns) {
        self.earliest = Some(self.earliest.map_or(start, |e| e.min(start)));
        self.latest = Some(self.latest.map_or(end, |l| l.max(end)));
    }

    fn absorb(&mut self, other: Seen) {
        if let Some(e) = other.earliest {
            self.row(e, other.latest.unwrap_or(e));
        }
        self.dropped += other.dropped;
    }
}

/// Whether the row `[start, end)` overlaps `[lo, hi)` (`None`: open). A
/// zero-length row (an instant) overlaps when `lo <= start < hi`.
pub fn overlaps(start: Ns, end: Ns, lo: Option<Ns>, hi: Option<Ns>) -> bool {
    hi.is_none_or(|h| start < h) && lo.is_none_or(|l| end > l || (start == end && start >= l))
}

/// Fills one [`TraceBuilder`] from events.
pub struct Converter {
    /// The rows so far.
    pub builder: TraceBuilder,
    defects: Defects,
    /// `B`/`E` events in file order, with their chunk-local index (copied:
    /// the buffer they were read from may be reused before the end).
    halves: Vec<(usize, RawEvent<'static>)>,
    /// `thread_name` metadata: key and name.
    thread_names: Vec<(ThreadKey, String)>,
    /// Threads that hold CPU rows, and their builder ids.
    threads: HashMap<ThreadKey, ThreadId>,
    /// The thread of the last CPU row, and its key.
    last_thread: Option<(ThreadKey, ThreadId)>,
    /// Which rows to keep.
    keep: Keep,
    /// The earliest row start seen by every converter of this pass, for a
    /// window without a known origin: the parallel chunks and the streamed
    /// buffers after the first judge the window's end from it, not from
    /// their own first rows (which can be far into the trace).
    shared_earliest: Option<Arc<AtomicI64>>,
    /// The rows seen, kept or not.
    seen: Seen,
}

impl Converter {
    /// An empty converter that keeps the rows `keep` says.
    pub fn with_keep(keep: Keep, shared_earliest: Option<Arc<AtomicI64>>) -> Self {
        Converter {
            builder: TraceBuilder::new(),
            defects: Defects::default(),
            halves: Vec::new(),
            thread_names: Vec::new(),
            threads: HashMap::new(),
            last_thread: None,
            keep,
            shared_earliest,
            seen: Seen::default(),
        }
    }

    /// A probe only notes where rows are: `true` when this one is done with.
    /// Otherwise the row is made in full, kept or not, so strings and
    /// threads are interned in the same order with or without a window
    /// (ties in the analysis's rankings fall the same way), and
    /// [`keeps`](Self::keeps) decides at the end.
    fn probe(&mut self, start: Ns, end: Ns) -> bool {
        if self.keep == Keep::Probe {
            self.seen.row(start, end);
            return true;
        }
        false
    }

    /// Whether to keep a row `[start, end)` (absolute ns); every row passes
    /// here, kept or not, so the origin is the same with or without a window.
    fn keeps(&mut self, start: Ns, end: Ns, step: bool) -> bool {
        self.seen.row(start, end);
        match self.keep {
            Keep::All => true,
            Keep::Probe => false,
            Keep::Window(_) if step => true,
            Keep::Window(w) => {
                let origin = match (w.origin, &self.shared_earliest) {
                    (Some(o), _) => o,
                    (None, Some(shared)) => shared.fetch_min(start, Ordering::Relaxed).min(start),
                    (None, None) => self.seen.earliest.unwrap_or(start),
                };
                let lo = w
                    .start
                    .filter(|_| w.origin.is_some())
                    .map(|s| origin.saturating_add(s));
                let hi = w.end.map(|e| origin.saturating_add(e));
                let keep = overlaps(start, end, lo, hi);
                if !keep {
                    self.seen.dropped += 1;
                }
                keep
            }
        }
    }

    /// Records that event `index` was skipped or odd.
    pub fn defect(&mut self, index: usize, reason: &'static str, detail: impl FnOnce() -> String) {
        self.defects.note(index, reason, detail);
    }

    /// Converts event number `index` (within this chunk).
    pub fn event(&mut self, index: usize, ev: &Event<'_>) {
        match ev.ph {
            Some("X") => {
                if let Some((start, end)) = self.times(index, ev) {
                    self.complete(index, ev, start, end);
                }
            }
            Some("B" | "E") => self.halves.push((index, ev.to_raw())),
            Some("i" | "I") => self.instant(index, ev),
            Some("C") => self.counter(index, ev),
            Some("M") => self.metadata(ev),
            // Flows are not defects and carry nothing new: Kineto's `ac2g`
            // flows repeat what correlation ids link, `fwdbwd` flows join
            // autograd ops that sequence numbers also join.
            Some("s" | "f" | "t") => {}
            Some(_) => self.defect(index, "unknown_phase", || describe(ev)),
            None => self.defect(index, "missing_phase", || describe(ev)),
        }
    }

    /// Start and end of a complete event, or `None` (noted) when unusable.
    fn times(&mut self, index: usize, ev: &Event<'_>) -> Option<(Ns, Ns)> {
        let start = self.ts(index, ev)?;
        let dur = match ev.dur.map(|d| micros_to_ns(d.as_bytes())) {
            Some(Some(d)) => d,
            Some(None) => return self.skip(index, "bad_duration", ev),
            None => return self.skip(index, "missing_duration", ev),
        };
        if dur < 0 {
            return self.skip(index, "negative_duration", ev);
        }
        match start.checked_add(dur) {
            Some(end) => Some((start, end)),
            None => self.skip(index, "bad_duration", ev),
        }
    }

    fn ts(&mut self, index: usize, ev: &Event<'_>) -> Option<Ns> {
        match ev.ts.map(|t| micros_to_ns(t.as_bytes())) {
            Some(Some(t)) => Some(t),
            Some(None) => self.skip(index, "bad_timestamp", ev),
            None => self.skip(index, "missing_timestamp", ev),
        }
    }

    fn skip<T>(&mut self, index: usize, reason: &'static str, ev: &Event<'_>) -> Option<T> {
        self.defect(index, reason, || describe(ev));
        None
    }

    /// A complete range, from an `X` event or a matched `B`/`E` pair.
    fn complete(&mut self, index: usize, ev: &Event<'_>, start: Ns, end: Ns) {
        let name = ev.name.unwrap_or("");
        let args = ev.args.as_ref();
        match classify(ev.cat.unwrap_or(""), name) {
            Class::Cpu(kind) => self.cpu_op(ev, kind, start, end),
            Class::Runtime(api) => self.runtime(ev, api, start, end),
            Class::Gpu(kind) => self.gpu(index, ev, kind, start, end),
            Class::GpuMarker(kind) => {
                if self.probe(start, end) {
                    return;
                }
                let (device, stream) = gpu_place(ev, args);
                let mut m = Marker::new(kind, start, end, self.builder.intern(name));
                m.device = device;
                m.stream = stream;
                if self.keeps(start, end, false) {
                    self.builder.push_marker(m);
                }
            }
            Class::Unknown => {
                self.defect(index, "unknown_category", || describe(ev));
                self.cpu_op(ev, CpuOpKind::Other, start, end);
            }
        }
    }

    fn cpu_op(&mut self, ev: &Event<'_>, kind: CpuOpKind, start: Ns, end: Ns) {
        if self.probe(start, end) {
            return;
        }
        let thread = self.cpu_thread(ev.pid, ev.tid);
        let name = self.builder.intern(ev.name.unwrap_or(""));
        let mut op = CpuOp::new(thread, start, end, name, kind);
        if kind == CpuOpKind::PythonFunction {
            // Python frames are named `file.py(42): fn`: the name is the source.
            op.source = name;
        }
        if let Some(a) = &ev.args {
            op.external_id = id(a.external_id);
            op.sequence = a.sequence.unwrap_or(-1);
            op.shapes = a
                .input_dims
                .as_ref()
                .map_or(Strings::EMPTY, |d| self.builder.intern(d));
            op.collective = self.collective(a);
        }
        if self.keeps(start, end, kind == CpuOpKind::ProfilerStep) {
            self.builder.push_cpu_op(op);
        }
    }

    fn runtime(&mut self, ev: &Event<'_>, api: ApiKind, start: Ns, end: Ns) {
        if self.probe(start, end) {
            return;
        }
        let thread = self.cpu_thread(ev.pid, ev.tid);
        let name = self.builder.intern(ev.name.unwrap_or(""));
        let args = ev.args.as_ref();
        let mut call = RuntimeCall::new(thread, start, end, name, id(args.and_then(|a| a.correlation)));
        call.api = api;
        call.external_id = id(args.and_then(|a| a.external_id));
        // Kept even when the call is not: its copy may be in the window.
        if let Some(kind) = hip_copy_kind(ev.name.unwrap_or(""), args.and_then(|a| a.kind)) {
            self.builder.call_copy_kind(call.correlation, kind);
        }
        if crate::trace::api::is_memcpy_api(ev.name.unwrap_or("")) {
            if let Some(bytes) = args.and_then(|a| a.size.or(a.bytes)) {
                self.builder
                    .call_copy_bytes(call.correlation, u64::try_from(bytes).unwrap_or(0));
            }
        }
        if self.keeps(start, end, false) {
            self.builder.push_runtime(call);
        }
    }

    fn gpu(&mut self, index: usize, ev: &Event<'_>, kind: GpuKind, start: Ns, end: Ns) {
        let args = ev.args.as_ref();
        let (Some(device), stream) = gpu_place(ev, args) else {
            return self.defect(index, "gpu_event_without_device", || describe(ev));
        };
        if self.probe(start, end) {
            return;
        }
        let name_text = ev.name.unwrap_or("");
        let name = self.builder.intern(name_text);
        let mut row = GpuActivity::new(kind, device, stream, start, end, name, 0);
        if let Some(a) = args {
            fill_gpu_args(&mut row, a);
            if kind == GpuKind::Kernel {
                row.collective = self.collective(a);
            }
        }
        match kind {
            GpuKind::Memcpy => {
                let kind_arg = args.and_then(|a| a.kind);
                (row.copy_kind, row.src_mem, row.dst_mem) = copy_info(name_text, kind_arg);
            }
            GpuKind::Memset => row.src_mem = memset_mem(name_text),
            GpuKind::Kernel | GpuKind::Sync => {}
        }
        if self.keeps(start, end, false) {
            self.builder.push_gpu(row);
        }
    }

    /// The collective identity `a` gives, when it names a collective, a
    /// process group or a sequence number.
    fn collective(&mut self, a: &Args<'_>) -> Option<CollectiveRow> {
        if a.collective_name.is_none() && a.group.is_none() && a.seq.is_none() {
            return None;
        }
        let mut s = |v: Option<&str>| v.map_or(Strings::EMPTY, |v| self.builder.intern(v));
        let row = Collective {
            name: s(a.collective_name),
            group: s(a.group),
            group_desc: s(a.group_desc),
            group_ranks: s(a.group_ranks),
            group_size: a.group_size.and_then(|n| u32::try_from(n).ok()).unwrap_or(0),
            seq: a.seq.and_then(|n| u64::try_from(n).ok()),
        };
        Some(self.builder.push_collective(row))
    }

    fn instant(&mut self, index: usize, ev: &Event<'_>) {
        let Some(t) = self.ts(index, ev) else { return };
        if self.probe(t, t) {
            return;
        }
        let name = self.builder.intern(ev.name.unwrap_or(""));
        let mut m = Marker::new(MarkerKind::Instant, t, t, name);
        // Global (`g`) and process (`p`) instants belong to no thread.
        if !matches!(ev.scope, Some("g" | "p")) {
            m.thread = Some(self.cpu_thread(ev.pid, ev.tid));
        }
        if self.keeps(t, t, false) {
            self.builder.push_marker(m);
        }
    }

    fn counter(&mut self, index: usize, ev: &Event<'_>) {
        let Some(t) = self.ts(index, ev) else { return };
        let Some(value) = ev.args.as_ref().and_then(|a| a.first_number) else {
            return self.defect(index, "counter_without_value", || describe(ev));
        };
        if self.probe(t, t) {
            return;
        }
        let name = self.builder.intern(ev.name.unwrap_or(""));
        let mut m = Marker::new(MarkerKind::Counter, t, t, name);
        m.value = value;
        if self.keeps(t, t, false) {
            self.builder.push_marker(m);
        }
    }

    fn metadata(&mut self, ev: &Event<'_>) {
        if ev.name != Some("thread_name") {
            // process_name, process_labels, *_sort_index: display-only.
            return;
        }
        if let Some(name) = ev.args.as_ref().and_then(|a| a.name) {
            self.thread_names
                .push(((key(ev.pid), key(ev.tid)), name.to_string()));
        }
    }

    /// The CPU thread of `pid`/`tid`, created on first use. A label tid
    /// (`"PyTorch Profiler"`) names the thread it becomes.
    fn cpu_thread(&mut self, pid: Id<'_>, tid: Id<'_>) -> ThreadId {
        let k = (key(pid), key(tid));
        // Events come in runs from one thread: skip the hash most times.
        if let Some((last, t)) = self.last_thread {
            if last == k {
                return t;
            }
        }
        if let Some(&t) = self.threads.get(&k) {
            self.last_thread = Some((k, t));
            return t;
        }
        let t = self.builder.thread(k.0, k.1);
        if let Id::Str(s) = tid {
            if s.trim().parse::<i64>().is_err() {
                self.builder.set_thread_name(t, s);
            }
        }
        self.threads.insert(k, t);
        self.last_thread = Some((k, t));
        t
    }

    /// The converters of consecutive stretches of the events, in file
    /// order, each with the index of its first event, joined into one (or
    /// an empty one that keeps the rows `keep` says, when there are none).
    pub fn concat(
        parts: Vec<(usize, Converter)>,
        keep: Keep,
        shared_earliest: Option<Arc<AtomicI64>>,
    ) -> Converter {
        let mut out = Converter::with_keep(keep, shared_earliest);
        let mut builders = Vec::with_capacity(parts.len());
        let mut keys: Vec<ThreadKey> = Vec::new();
        // Notes in file order, each part's skipped events numbered from its
        // first event; examples are kept for the first few of each reason
        // in the whole file.
        let mut diagnostics = Diagnostics::default();
        for (k, (base, mut part)) in parts.into_iter().enumerate() {
            if k == 0 {
                out.keep = part.keep;
                out.shared_earliest = part.shared_earliest.take();
            }
            diagnostics.absorb(std::mem::take(&mut part.builder.diagnostics));
            part.defects.merge_into(&mut diagnostics, base);
            builders.push(part.builder);
            keys.extend(part.threads.into_keys());
            out.halves
                .extend(part.halves.into_iter().map(|(i, ev)| (i + base, ev)));
            out.thread_names.extend(part.thread_names);
            out.seen.absorb(part.seen);
        }
        out.builder = TraceBuilder::concat(builders);
        out.builder.diagnostics = diagnostics;
        for k in keys {
            let t = out.builder.thread(k.0, k.1);
            out.threads.insert(k, t);
        }
        out
    }

    /// Finishes what needs every chunk: `B`/`E` matching, thread names, and
    /// this converter's own defects (it is chunk 0, numbered from 0).
    #[cfg(test)]
    pub fn into_builder(self) -> TraceBuilder {
        self.into_parts().0
    }

    /// [`into_builder`](Self::into_builder), and what was seen of the rows.
    /// When rows were left out, the builder's origin is fixed to the
    /// earliest row seen, so times are the same as in a whole read.
    pub fn into_parts(mut self) -> (TraceBuilder, Seen) {
        std::mem::take(&mut self.defects).merge_into(&mut self.builder.diagnostics, 0);
        self.match_begin_end();
        let defects = std::mem::take(&mut self.defects);
        defects.merge_into(&mut self.builder.diagnostics, 0);
        for (k, name) in std::mem::take(&mut self.thread_names) {
            if let Some(&t) = self.threads.get(&k) {
                self.builder.set_thread_name(t, &name);
            }
        }
        if self.keep != Keep::All {
            if let Some(origin) = self.seen.earliest {
                self.builder.set_origin(origin);
            }
        }
        // A window open at the start dropped rows against the earliest start
        // each chunk had seen by then; now that the true one is known, the
        // rows past its end go too, whatever the chunks' timing was.
        if let (Keep::Window(w), Some(origin)) = (self.keep, self.seen.earliest) {
            if let (None, Some(end)) = (w.origin, w.end) {
                self.seen.dropped += self.builder.drop_rows_from(origin.saturating_add(end));
            }
        }
        (self.builder, self.seen)
    }

    /// Pairs `B` and `E` events per thread, as a stack (Trace Event Format:
    /// "B/E events must be properly nested per thread").
    fn match_begin_end(&mut self) {
        let mut open: HashMap<ThreadKey, Vec<(usize, RawEvent<'static>, Ns)>> = HashMap::new();
        for (index, raw) in std::mem::take(&mut self.halves) {
            let Some(t) = self.ts(index, &raw.view()) else {
                continue;
            };
            let k = (key(raw.view().pid), key(raw.view().tid));
            if raw.view().ph == Some("B") {
                open.entry(k).or_default().push((index, raw, t));
                continue;
            }
            match open.get_mut(&k).and_then(Vec::pop) {
                Some((bi, begin, start)) if t >= start => self.complete(bi, &begin.view(), start, t),
                Some((bi, begin, _)) => self.defect(bi, "negative_duration", || describe(&begin.view())),
                None => self.defect(index, "unmatched_end", || describe(&raw.view())),
            }
        }
        let mut left: Vec<_> = open.into_values().flatten().collect();
        left.sort_by_key(|(i, _, _)| *i);
        for (i, ev, _) in left {
            self.defect(i, "unmatched_begin", || describe(&ev.view()));
        }
    }
}

/// Device and stream of GPU-side work: `args.device` else the pid, and
/// `args.stream` else the tid (`-1` when neither is a number).
fn gpu_place(ev: &Event<'_>, args: Option<&Args<'_>>) -> (Option<u32>, i64) {
    let device = args
        .and_then(|a| a.device)
        .or(match ev.pid {
            Id::Int(p) => Some(p),
            _ => None,
        })
        .and_then(|d| u32::try_from(d).ok());
    let stream = args.and_then(|a| a.stream).or(match ev.tid {
        Id::Int(t) => Some(t),
        _ => None,
    });
    (device, stream.unwrap_or(-1))
}

fn fill_gpu_args(row: &mut GpuActivity, a: &Args<'_>) {
    row.correlation = id(a.correlation);
    row.external_id = id(a.external_id);
    row.bytes = a.bytes.and_then(|b| u64::try_from(b).ok()).unwrap_or(0);
    row.grid = a.grid.unwrap_or_default();
    row.block = a.block.unwrap_or_default();
    row.registers = a.registers.and_then(|r| u32::try_from(r).ok()).unwrap_or(0);
    row.shared_mem = a.shared_mem.and_then(|s| u32::try_from(s).ok()).unwrap_or(0);
    // Kineto writes a percent; anything outside 0..=100 is not one (the
    // TensorBoard plugin drops negative values the same way).
    row.occupancy_pct = a
        .occupancy
        .filter(|v| (0.0..=100.0).contains(v))
        .map(|v| v as f32);
}

/// An id column value: 0 means none, as do negative ids.
fn id(v: Option<i64>) -> u64 {
    v.and_then(|v| u64::try_from(v).ok()).unwrap_or(0)
}

/// A thread-table id for a pid or tid. Integers and integer strings
/// (`"25738"` in 2021 traces) are themselves; any other label maps to a
/// stable negative id, the same in every chunk and every run (a hash of the
/// text), and absent ids read as the empty label.
pub fn key(v: Id<'_>) -> i64 {
    match v {
        Id::Int(i) => i,
        Id::Str(s) => s.trim().parse().unwrap_or_else(|_| label_id(s)),
        Id::Missing => label_id(""),
    }
}

/// FNV-1a of the label, folded into `-2^62..=-1`.
fn label_id(s: &str) -> i64 {
    let h = s.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    -1 - (h >> 2) as i64
}

/// A short description of an event for diagnostics.
pub fn describe(ev: &Event<'_>) -> String {
    let name = ev.name.unwrap_or("");
    let name: String = name.chars().take(80).collect();
    let raw = |v: Option<&str>| v.map_or("-".to_string(), |v| v.chars().take(40).collect());
    format!(
        "ph={} cat={} name={:?} ts={} dur={}",
        ev.ph.unwrap_or("-"),
        ev.cat.unwrap_or("-"),
        name,
        raw(ev.ts),
        raw(ev.dur)
    )
}

/// The direction a HIP copy call asked for, from its `kind` arg
/// (`hipMemcpyKind`: 0 host to host, 1 host to device, 2 device to host, 3
/// device to device; 4, `hipMemcpyDefault`, leaves it to the pointers and
/// says nothing).
fn hip_copy_kind(name: &str, kind: Option<&str>) -> Option<CopyKind> {
    if !name.trim_start_matches('_').starts_with("hipMemcpy") {
        return None;
    }
    match kind?.trim() {
        "0" => Some(CopyKind::HtoH),
        "1" => Some(CopyKind::HtoD),
        "2" => Some(CopyKind::DtoH),
        "3" => Some(CopyKind::DtoD),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op(json: &str) -> Event<'_> {
        let mut ev = Event::default();
        super::super::fast::event(json.as_bytes(), 0, &mut ev).unwrap();
        ev
    }

    /// Two chunks read in parallel, the later one first: it judges the end
    /// of a window open at the start from its own first row, keeps what is
    /// past the true end, and the end of the pass drops it.
    #[test]
    fn a_window_open_at_the_start_is_cut_at_the_true_origin_whatever_the_timing() {
        let keep = Keep::Window(WindowKeep {
            origin: None,
            start: None,
            end: Some(100_000),
        });
        let (mut first, mut later) = (Converter::with_keep(keep, None), Converter::with_keep(keep, None));
        let x = |name: &str, ts: u32| {
            format!(
                r#"{{"ph": "X", "cat": "cpu_op", "name": "{name}", "pid": 1, "tid": 1, "ts": {ts}, "dur": 1}}"#
            )
        };
        let late = [x("late_a", 1000), x("late_b", 1050), x("step", 1060)];
        let step = r#"{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#9", "pid": 1, "tid": 1, "ts": 1070, "dur": 1}"#;
        for (i, e) in late.iter().enumerate() {
            later.event(i, &op(e));
        }
        later.event(3, &op(step));
        let early = [x("origin", 10), x("inside", 109)];
        for (i, e) in early.iter().enumerate() {
            first.event(i, &op(e));
        }
        let joined = Converter::concat(vec![(0, first), (2, later)], keep, None);
        let (b, seen) = joined.into_parts();
        let t = b.finish();
        let names: Vec<&str> = (0..t.cpu_ops.len())
            .map(|i| t.strings.get(t.cpu_ops.name[i]))
            .collect();
        assert_eq!(names, ["origin", "inside", "ProfilerStep#9"]);
        assert_eq!(seen.dropped, 3);
        assert_eq!(t.meta.origin_ns, 10_000);
    }
}

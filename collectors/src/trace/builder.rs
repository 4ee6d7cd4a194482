//! [`TraceBuilder`]: the one way rows get into a [`Trace`].

use super::hash::FxHashMap;
use super::links::Links;
use super::parallel::{both, PARALLEL_ROWS};
use super::rows::{CollectiveRow, OpRow};
use super::strings::{StrId, Strings};
use super::tables::*;
use super::{Diagnostics, Ns, Trace, TraceMeta};

/// Collects rows with absolute times, then [`finish`](Self::finish)es them
/// into a [`Trace`]. Importers that parse in parallel give each worker its own
/// builder and [`append`](Self::append) them in order.
#[derive(Default)]
pub struct TraceBuilder {
    /// Provenance; `origin_ns` is computed by `finish` unless
    /// [`set_origin`](Self::set_origin) fixed it.
    pub meta: TraceMeta,
    /// What was skipped or odd so far.
    pub diagnostics: Diagnostics,
    strings: Strings,
    threads: ThreadTable,
    thread_index: FxHashMap<(i64, i64), ThreadId>,
    devices: DeviceTable,
    gpu: GpuActivityTable,
    runtime: RuntimeCallTable,
    cpu_ops: CpuOpTable,
    markers: MarkerTable,
    collectives: CollectiveTable,
    origin: Option<Ns>,
    /// Copy directions and sizes stated by launching calls, by correlation
    /// id: see [`call_copy_kind`](Self::call_copy_kind) and
    /// [`call_copy_bytes`](Self::call_copy_bytes).
    call_copy: FxHashMap<u64, CallCopy>,
}

impl TraceBuilder {
    /// An empty builder.
    pub fn new() -> Self {
        Self::default()
    }

    /// Interns a string in this builder's pool.
    pub fn intern(&mut self, s: &str) -> StrId {
        self.strings.intern(s)
    }

    /// The string pool so far.
    pub fn strings(&self) -> &Strings {
        &self.strings
    }

    /// The thread `(pid, tid)`, added on first sight.
    pub fn thread(&mut self, pid: i64, tid: i64) -> ThreadId {
        if let Some(&t) = self.thread_index.get(&(pid, tid)) {
            return t;
        }
        let t = ThreadId(self.threads.len() as u32);
        self.threads.push(Thread {
            pid,
            tid,
            name: Strings::EMPTY,
        });
        self.thread_index.insert((pid, tid), t);
        t
    }

    /// Names a thread (the last name given wins).
    pub fn set_thread_name(&mut self, thread: ThreadId, name: &str) {
        let id = self.strings.intern(name);
        self.threads.name[thread.0 as usize] = id;
    }

    /// Records or replaces a GPU's properties.
    pub fn device(&mut self, device: Device) {
        match self.devices.id.iter().position(|&d| d == device.id) {
            Some(i) => {
                self.devices.name[i] = device.name;
                self.devices.sm_count[i] = device.sm_count;
                self.devices.memory_bytes[i] = device.memory_bytes;
                self.devices.compute_capability[i] = device.compute_capability;
            }
            None => self.devices.push(device),
        }
    }

    /// Fixes the absolute time that becomes 0 (else: the earliest row).
    pub fn set_origin(&mut self, origin_ns: Ns) {
        self.origin = Some(origin_ns);
    }

    /// Adds a kernel, copy, memset or sync record (absolute times).
    pub fn push_gpu(&mut self, row: GpuActivity) {
        self.gpu.push(row);
    }

    /// Adds a runtime/driver API call (absolute times).
    pub fn push_runtime(&mut self, row: RuntimeCall) {
        self.runtime.push(row);
    }

    /// Adds a CPU range (absolute times); `parent`/`depth` are ignored.
    pub fn push_cpu_op(&mut self, row: CpuOp) {
        self.cpu_ops.push(row);
    }

    /// Adds a marker (absolute times).
    pub fn push_marker(&mut self, row: Marker) {
        self.markers.push(row);
    }

    /// Adds a collective's identity, for a GPU or CPU row to point to.
    pub fn push_collective(&mut self, row: Collective) -> CollectiveRow {
        self.collectives.push(row);
        CollectiveRow::new(self.collectives.len() - 1)
    }

    /// Records that the runtime call with `correlation` asked for a copy in
    /// direction `kind` (whether or not the call itself is kept). The copy
    /// with that correlation takes that direction when the trace is
    /// finished: ROCm's tracer records a `hipMemcpyWithStream`
    /// from device to host (its `kind` arg 2, `hipMemcpyDeviceToHost`) as
    /// `Memcpy DtoD (Device -> Device)`, and host-to-device
    /// `hipMemcpyAsync` calls likewise, while the call says what the code
    /// asked for.
    pub fn call_copy_kind(&mut self, correlation: u64, kind: CopyKind) {
        if correlation != 0 {
            self.call_copy.entry(correlation).or_default().kind = Some(kind);
        }
    }

    /// Records that the runtime call with `correlation` copies `bytes`
    /// (whether or not the call itself is kept). The copy with that
    /// correlation takes that size when it has none of its own: older
    /// ROCm tracers give the size only on the call (`hipMemcpyWithStream`'s
    /// `size` arg), never on the GPU record.
    pub fn call_copy_bytes(&mut self, correlation: u64, bytes: u64) {
        if correlation != 0 && bytes > 0 {
            self.call_copy.entry(correlation).or_default().bytes = bytes;
        }
    }

    /// Drops the rows that start at or after `cutoff` (absolute ns), except
    /// ProfilerSteps, and says how many went. A time window open at the
    /// start is applied as rows come, against the earliest start seen so
    /// far, which parallel chunks learn at different moments; this applies
    /// it once more against the true earliest, so the rows kept never
    /// depend on timing.
    pub fn drop_rows_from(&mut self, cutoff: Ns) -> u64 {
        let keep = |start: &[Ns]| -> Vec<bool> { start.iter().map(|&s| s < cutoff).collect() };
        let mut dropped = 0u64;
        let mut apply = |keep: Vec<bool>| -> Option<Vec<bool>> {
            let gone = keep.iter().filter(|&&k| !k).count() as u64;
            dropped += gone;
            (gone > 0).then_some(keep)
        };
        if let Some(k) = apply(keep(&self.gpu.start)) {
            self.gpu.retain_rows(&k);
        }
        if let Some(k) = apply(keep(&self.runtime.start)) {
            self.runtime.retain_rows(&k);
        }
        let ops: Vec<bool> = (0..self.cpu_ops.len())
            .map(|i| self.cpu_ops.start[i] < cutoff || self.cpu_ops.kind[i] == CpuOpKind::ProfilerStep)
            .collect();
        if let Some(k) = apply(ops) {
            self.cpu_ops.retain_rows(&k);
        }
        if let Some(k) = apply(keep(&self.markers.start)) {
            self.markers.retain_rows(&k);
        }
        dropped
    }

    /// Number of rows of every kind so far.
    pub fn row_count(&self) -> usize {
        self.gpu.len() + self.runtime.len() + self.cpu_ops.len() + self.markers.len()
    }

    /// Moves every row of `other` into `self`, remapping its strings and
    /// threads. Rows keep their order: `self`'s first, then `other`'s.
    pub fn append(&mut self, other: TraceBuilder) {
        let first = std::mem::take(self);
        *self = TraceBuilder::concat(vec![first, other]);
    }

    /// The builders of consecutive stretches of a source (parallel chunks),
    /// joined in order as if one builder had read them all: the first
    /// one's provenance, strings and threads, then each next one's rows
    /// with its strings and threads remapped. Each table is the first
    /// one's, grown in place to hold the rest, so joining a small part to
    /// a big one costs the small one.
    pub fn concat(parts: Vec<TraceBuilder>) -> TraceBuilder {
        let mut parts = parts.into_iter();
        let Some(mut out) = parts.next() else {
            return TraceBuilder::default();
        };
        let mut rest: Vec<TraceBuilder> = parts.collect();
        if rest.is_empty() {
            return out;
        }
        // Strings and threads of each later part, as ids of `out`, in the
        // order a single builder would have met them.
        let mut maps: Vec<(Vec<StrId>, Vec<ThreadId>)> = Vec::with_capacity(rest.len());
        for p in &mut rest {
            let smap: Vec<StrId> = p.strings.iter().map(|(_, s)| out.strings.intern(s)).collect();
            let tmap: Vec<ThreadId> = (0..p.threads.len())
                .map(|i| {
                    let t = out.thread(p.threads.pid[i], p.threads.tid[i]);
                    if p.threads.name[i] != Strings::EMPTY {
                        out.threads.name[t.0 as usize] = smap[p.threads.name[i].0 as usize];
                    }
                    t
                })
                .collect();
            for i in 0..p.devices.len() {
                let mut d = p.devices.row(i);
                d.name = smap[d.name.0 as usize];
                out.device(d);
            }
            out.call_copy.extend(std::mem::take(&mut p.call_copy));
            out.diagnostics.absorb(std::mem::take(&mut p.diagnostics));
            if let Some(o) = p.origin {
                out.origin = Some(out.origin.map_or(o, |m| m.min(o)));
            }
            p.strings = Strings::default();
            maps.push((smap, tmap));
        }
        // Each later part's rows in the joined tables: gpu, runtime,
        // cpu_ops, markers.
        let mut at = [
            out.gpu.len(),
            out.runtime.len(),
            out.cpu_ops.len(),
            out.markers.len(),
        ];
        let ranges: Vec<[std::ops::Range<usize>; 4]> = rest
            .iter()
            .map(|p| {
                let rows = [p.gpu.len(), p.runtime.len(), p.cpu_ops.len(), p.markers.len()];
                std::array::from_fn(|t| {
                    at[t] += rows[t];
                    at[t] - rows[t]..at[t]
                })
            })
            .collect();
        // Collective rows: each later part's after the ones before it,
        // with its strings remapped.
        let mut coll_at = Vec::with_capacity(rest.len());
        let mut n_coll = out.collectives.len();
        for (p, (smap, _)) in rest.iter_mut().zip(&maps) {
            coll_at.push(n_coll);
            n_coll += p.collectives.len();
            let c = &mut p.collectives;
            for col in [&mut c.name, &mut c.group, &mut c.group_desc, &mut c.group_ranks] {
                col.iter_mut().for_each(|id| *id = smap[id.0 as usize]);
            }
        }
        out.collectives = CollectiveTable::concat(take_parts(&mut out, &mut rest, |b| &mut b.collectives));
        // Each table joined and its ids remapped on one of two threads:
        // copying hundreds of MB into fresh columns is mostly page faults,
        // which two threads take in half the time.
        let (gpu, runtime, cpu_ops, markers) = (
            take_parts(&mut out, &mut rest, |b| &mut b.gpu),
            take_parts(&mut out, &mut rest, |b| &mut b.runtime),
            take_parts(&mut out, &mut rest, |b| &mut b.cpu_ops),
            take_parts(&mut out, &mut rest, |b| &mut b.markers),
        );
        // Per later part: its string and thread maps, its rows' ranges in
        // the joined tables, and where its collectives start.
        let later = || maps.iter().zip(&ranges).zip(&coll_at);
        let parallel = at.iter().sum::<usize>() >= PARALLEL_ROWS;
        let ((gpu, runtime), (cpu_ops, markers)) = both(
            parallel,
            || {
                let mut gpu = GpuActivityTable::concat(gpu);
                let mut runtime = RuntimeCallTable::concat(runtime);
                for (((smap, tmap), [g, rt, _, _]), &base) in later() {
                    remap_collectives(&mut gpu.collective[g.clone()], base);
                    remap_strings(&mut gpu.name[g.clone()], smap);
                    remap_strings(&mut runtime.name[rt.clone()], smap);
                    remap_threads(runtime.thread[rt.clone()].iter_mut(), tmap);
                }
                (gpu, runtime)
            },
            || {
                let mut ops = CpuOpTable::concat(cpu_ops);
                let mut markers = MarkerTable::concat(markers);
                for (((smap, tmap), [_, _, op, mk]), &base) in later() {
                    remap_collectives(&mut ops.collective[op.clone()], base);
                    remap_strings(&mut ops.name[op.clone()], smap);
                    remap_strings(&mut ops.shapes[op.clone()], smap);
                    remap_strings(&mut ops.source[op.clone()], smap);
                    remap_threads(ops.thread[op.clone()].iter_mut(), tmap);
                    remap_strings(&mut markers.name[mk.clone()], smap);
                    remap_threads(markers.thread[mk.clone()].iter_mut().flatten(), tmap);
                }
                (ops, markers)
            },
        );
        (out.gpu, out.runtime, out.cpu_ops, out.markers) = (gpu, runtime, cpu_ops, markers);
        out
    }

    /// Rebases times to the origin, sorts every table, nests CPU ranges per
    /// thread and links GPU work to runtime calls and operators.
    pub fn finish(mut self) -> Trace {
        let origin = self.origin.unwrap_or_else(|| self.earliest());
        self.meta.origin_ns = origin;
        rebase(&mut self.gpu.start, &mut self.gpu.end, origin);
        rebase(&mut self.runtime.start, &mut self.runtime.end, origin);
        rebase(&mut self.cpu_ops.start, &mut self.cpu_ops.end, origin);
        rebase(&mut self.markers.start, &mut self.markers.end, origin);

        // The CPU ranges (the biggest table, and nesting) on a thread of
        // their own while the other tables sort here.
        let n_threads = self.threads.len();
        let (cpu_ops, gpu, runtime, markers) = (
            &mut self.cpu_ops,
            &mut self.gpu,
            &mut self.runtime,
            &mut self.markers,
        );
        let (thread_start, partial) = both(
            cpu_ops.len() >= PARALLEL_ROWS,
            || {
                // Parents before children: by thread, then start, then
                // longest first; equal ranges keep the outer kind (step >
                // annotation > frame > op) first.
                sort_by_key(
                    cpu_ops,
                    |t, i| {
                        (
                            t.thread[i],
                            t.start[i],
                            std::cmp::Reverse(t.end[i]),
                            kind_rank(t.kind[i]),
                        )
                    },
                    CpuOpTable::permute,
                );
                let thread_start = thread_offsets(&cpu_ops.thread, n_threads);
                (thread_start, nest(cpu_ops))
            },
            || {
                sort_by_key(gpu, |t, i| (t.start[i], t.end[i]), GpuActivityTable::permute);
                sort_by_key(runtime, |t, i| (t.start[i], t.end[i]), RuntimeCallTable::permute);
                sort_by_key(markers, |t, i| t.start[i], MarkerTable::permute);
            },
        )
        .0;
        if partial > 0 {
            self.diagnostics
                .counts
                .insert(Diagnostics::PARTIAL_OVERLAP.into(), partial);
        }
        self.apply_call_copy_kinds();
        let links = Links::build(&self.gpu, &self.runtime, &self.cpu_ops, &thread_start);
        if links.reused_correlation > 0 {
            self.diagnostics
                .counts
                .insert(Diagnostics::CORRELATION_REUSED.into(), links.reused_correlation);
        }
        self.link_collectives(&links);
        Trace {
            meta: self.meta,
            strings: self.strings,
            threads: self.threads,
            devices: self.devices,
            gpu: self.gpu,
            runtime: self.runtime,
            cpu_ops: self.cpu_ops,
            markers: self.markers,
            collectives: self.collectives,
            links,
            cpu_op_thread_start: thread_start,
            diagnostics: self.diagnostics,
        }
    }

    /// Gives each kernel launched inside an operator with collective args
    /// those args: Kineto copies `record_param_comms`' args to the NCCL
    /// kernel in newer versions only, and never all of them (older ones
    /// leave the kernel bare; `Seq` stays on the operator). A kernel with
    /// args of its own keeps them, completed with the operator's sequence
    /// number and group where it lacks them. Running this again changes
    /// nothing, so a trace read back from a capture is linked alike.
    fn link_collectives(&mut self, links: &Links) {
        if self.collectives.is_empty() {
            return;
        }
        // The collective of each CPU row or of its nearest enclosing row
        // that has one (parents precede children).
        let ops = &self.cpu_ops;
        let mut held: Vec<Option<CollectiveRow>> = Vec::with_capacity(ops.len());
        for i in 0..ops.len() {
            let inherited = ops.parent[i].and_then(|p| held[p.index()]);
            held.push(ops.collective[i].or(inherited));
        }
        let c = &mut self.collectives;
        for i in 0..self.gpu.len() {
            if self.gpu.kind[i] != GpuKind::Kernel {
                continue;
            }
            let Some(op) = links.gpu_launch[i]
                .and_then(|call| links.runtime_op[call.index()])
                .and_then(|op| held[op.index()])
            else {
                continue;
            };
            let own = match self.gpu.collective[i] {
                None => {
                    self.gpu.collective[i] = Some(op);
                    continue;
                }
                Some(own) => own,
            };
            let (k, o) = (own.index(), op.index());
            let group_fits = c.group[k] == Strings::EMPTY || c.group[k] == c.group[o];
            let lacks = (c.seq[k].is_none() && c.seq[o].is_some())
                || (c.group[k] == Strings::EMPTY && c.group[o] != Strings::EMPTY);
            if own != op && group_fits && lacks {
                let mut merged = c.row(k);
                merged.seq = merged.seq.or(c.seq[o]);
                for (mine, theirs) in [
                    (&mut merged.group, c.group[o]),
                    (&mut merged.group_desc, c.group_desc[o]),
                    (&mut merged.group_ranks, c.group_ranks[o]),
                    (&mut merged.name, c.name[o]),
                ] {
                    if *mine == Strings::EMPTY {
                        *mine = theirs;
                    }
                }
                if merged.group_size == 0 {
                    merged.group_size = c.group_size[o];
                }
                c.push(merged);
                self.gpu.collective[i] = Some(CollectiveRow::new(c.len() - 1));
            }
        }
    }

    /// Gives each copy the direction its launching call asked for (see
    /// [`call_copy_kind`](Self::call_copy_kind)), and its size when it has
    /// none ([`call_copy_bytes`](Self::call_copy_bytes)); a host side the
    /// record called "Device" becomes unknown memory.
    fn apply_call_copy_kinds(&mut self) {
        if self.call_copy.is_empty() {
            return;
        }
        let g = &mut self.gpu;
        let mut changed = 0u64;
        for i in 0..g.len() {
            if g.kind[i] != GpuKind::Memcpy || g.correlation[i] == 0 {
                continue;
            }
            // By correlation, not by link: the call may be outside a time
            // window the importer kept while its copy is inside.
            let Some(&call) = self.call_copy.get(&g.correlation[i]) else {
                continue;
            };
            if g.bytes[i] == 0 {
                g.bytes[i] = call.bytes;
            }
            let Some(kind) = call.kind.filter(|&k| k != g.copy_kind[i]) else {
                continue;
            };
            // A record that named no direction only gains one.
            if g.copy_kind[i] != CopyKind::None {
                changed += 1;
            }
            g.copy_kind[i] = kind;
            let host = |m: MemKind| if m == MemKind::Device { MemKind::Unknown } else { m };
            match kind {
                CopyKind::HtoD => g.src_mem[i] = host(g.src_mem[i]),
                CopyKind::DtoH => g.dst_mem[i] = host(g.dst_mem[i]),
                CopyKind::HtoH => {
                    g.src_mem[i] = host(g.src_mem[i]);
                    g.dst_mem[i] = host(g.dst_mem[i]);
                }
                _ => {}
            }
        }
        if changed > 0 {
            *self
                .diagnostics
                .counts
                .entry(Diagnostics::COPY_DIRECTION_FROM_CALL.into())
                .or_default() += changed;
        }
    }

    fn earliest(&self) -> Ns {
        [
            &self.gpu.start,
            &self.runtime.start,
            &self.cpu_ops.start,
            &self.markers.start,
        ]
        .iter()
        .filter_map(|c| c.iter().min().copied())
        .min()
        .unwrap_or(0)
    }
}

/// Table `table` of `out` and of each of `rest`, in order, taken out of
/// them.
fn take_parts<T: Default>(
    out: &mut TraceBuilder,
    rest: &mut [TraceBuilder],
    table: fn(&mut TraceBuilder) -> &mut T,
) -> Vec<T> {
    let mut all = vec![std::mem::take(table(out))];
    all.extend(rest.iter_mut().map(|p| std::mem::take(table(p))));
    all
}

/// A later part's collective links, made rows of the joined table.
fn remap_collectives(col: &mut [Option<CollectiveRow>], base: usize) {
    col.iter_mut()
        .flatten()
        .for_each(|c| *c = CollectiveRow::new(c.index() + base))
}

/// A later part's string ids, made ids of the joined strings.
fn remap_strings(col: &mut [StrId], smap: &[StrId]) {
    col.iter_mut().for_each(|id| *id = smap[id.0 as usize]);
}

/// A later part's thread ids, made ids of the joined threads.
fn remap_threads<'c>(ids: impl Iterator<Item = &'c mut ThreadId>, tmap: &[ThreadId]) {
    ids.for_each(|t| *t = tmap[t.0 as usize]);
}

fn rebase(start: &mut [Ns], end: &mut [Ns], origin: Ns) {
    start.iter_mut().for_each(|t| *t -= origin);
    end.iter_mut().for_each(|t| *t -= origin);
}

fn kind_rank(k: CpuOpKind) -> u8 {
    match k {
        CpuOpKind::ProfilerStep => 0,
        CpuOpKind::UserAnnotation => 1,
        CpuOpKind::PythonFunction => 2,
        CpuOpKind::Other => 3,
        CpuOpKind::Operator => 4,
    }
}

/// What a copy's launching call says of it, for the copy to take.
#[derive(Clone, Copy, Debug, Default)]
struct CallCopy {
    /// The direction the call asked for.
    kind: Option<CopyKind>,
    /// The bytes the call copies (0: not said).
    bytes: u64,
}

/// Stable sort of a table's rows by `key`, skipped when already sorted (the
/// common case for importers that see events in time order).
fn sort_by_key<T, K: Ord>(table: &mut T, key: impl Fn(&T, usize) -> K, permute: fn(&mut T, &[u32]))
where
    T: HasLen,
{
    let n = table.rows();
    if (1..n).all(|i| key(table, i - 1) <= key(table, i)) {
        return;
    }
    let mut order: Vec<u32> = (0..n as u32).collect();
    order.sort_by_key(|&i| key(table, i as usize));
    permute(table, &order);
}

trait HasLen {
    fn rows(&self) -> usize;
}
macro_rules! has_len {
    ($($t:ty),*) => { $( impl HasLen for $t { fn rows(&self) -> usize { self.len() } } )* };
}
has_len!(GpuActivityTable, RuntimeCallTable, CpuOpTable, MarkerTable);

/// Offsets of each thread's rows in a table sorted by thread.
fn thread_offsets(threads: &[ThreadId], n_threads: usize) -> Vec<u32> {
    let mut start = vec![0u32; n_threads + 1];
    for t in threads {
        start[t.0 as usize + 1] += 1;
    }
    for i in 1..start.len() {
        start[i] += start[i - 1];
    }
    start
}

/// Sets `parent` and `depth` of rows sorted by (thread, start, end desc).
/// A row's parent is the innermost earlier row on its thread that contains
/// it. A row that starts inside another but ends after it (bad nesting,
/// seen with Python frames) is counted and placed beside it, not inside.
fn nest(ops: &mut CpuOpTable) -> u64 {
    let mut stack: Vec<OpRow> = Vec::new();
    let mut partial = 0;
    for i in 0..ops.len() {
        if i > 0 && ops.thread[i] != ops.thread[i - 1] {
            stack.clear();
        }
        while let Some(&top) = stack.last() {
            let t = top.index();
            if ops.start[i] < ops.end[t] || (ops.start[i] == ops.start[t] && ops.end[i] <= ops.end[t]) {
                if ops.end[i] <= ops.end[t] {
                    break;
                }
                partial += 1;
            }
            stack.pop();
        }
        ops.parent[i] = stack.last().copied();
        ops.depth[i] = stack.len().min(u16::MAX as usize) as u16;
        stack.push(OpRow::new(i));
    }
    partial
}

impl CpuOp {
    /// A range with no ids, shapes or source.
    pub fn new(thread: ThreadId, start: Ns, end: Ns, name: StrId, kind: CpuOpKind) -> Self {
        CpuOp {
            thread,
            start,
            end,
            name,
            kind,
            external_id: 0,
            sequence: -1,
            shapes: Strings::EMPTY,
            source: Strings::EMPTY,
            collective: None,
            parent: None,
            depth: 0,
        }
    }
}

impl RuntimeCall {
    /// A runtime API call with a correlation id.
    pub fn new(thread: ThreadId, start: Ns, end: Ns, name: StrId, correlation: u64) -> Self {
        RuntimeCall {
            thread,
            start,
            end,
            name,
            api: ApiKind::Runtime,
            correlation,
            external_id: 0,
        }
    }
}

impl GpuActivity {
    /// A row of `kind` with everything optional left unknown.
    pub fn new(
        kind: GpuKind,
        device: u32,
        stream: i64,
        start: Ns,
        end: Ns,
        name: StrId,
        correlation: u64,
    ) -> Self {
        GpuActivity {
            device,
            stream,
            start,
            end,
            kind,
            name,
            correlation,
            external_id: 0,
            bytes: 0,
            copy_kind: CopyKind::None,
            src_mem: MemKind::Unknown,
            dst_mem: MemKind::Unknown,
            grid: [0; 3],
            block: [0; 3],
            registers: 0,
            shared_mem: 0,
            occupancy_pct: None,
            collective: None,
        }
    }

    /// A kernel on `device`/`stream`.
    pub fn kernel(device: u32, stream: i64, start: Ns, end: Ns, name: StrId, correlation: u64) -> Self {
        Self::new(GpuKind::Kernel, device, stream, start, end, name, correlation)
    }
}

impl Collective {
    /// An identity with nothing known.
    pub fn unknown() -> Self {
        Collective {
            name: Strings::EMPTY,
            group: Strings::EMPTY,
            group_desc: Strings::EMPTY,
            group_ranks: Strings::EMPTY,
            group_size: 0,
            seq: None,
        }
    }
}

impl Marker {
    /// A marker of `kind` with no thread, device or value.
    pub fn new(kind: MarkerKind, start: Ns, end: Ns, name: StrId) -> Self {
        Marker {
            kind,
            thread: None,
            device: None,
            stream: -1,
            start,
            end,
            name,
            value: 0.0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// ```text
    /// thread 1: [step.............................]
    ///             [op A.....]   [op B..........]
    ///               [inner]          [C]
    /// ```
    #[test]
    fn nests_ranges_per_thread() {
        let mut b = TraceBuilder::new();
        let t = b.thread(1, 1);
        let u = b.thread(1, 2);
        let n = |b: &mut TraceBuilder, s| b.intern(s);
        let (step, a, inner, bb, c, other) = (
            n(&mut b, "ProfilerStep#1"),
            n(&mut b, "A"),
            n(&mut b, "inner"),
            n(&mut b, "B"),
            n(&mut b, "C"),
            n(&mut b, "other thread"),
        );
        // Pushed out of order on purpose.
        b.push_cpu_op(CpuOp::new(t, 30, 60, bb, CpuOpKind::Operator));
        b.push_cpu_op(CpuOp::new(u, 5, 50, other, CpuOpKind::Operator));
        b.push_cpu_op(CpuOp::new(t, 0, 100, step, CpuOpKind::ProfilerStep));
        b.push_cpu_op(CpuOp::new(t, 10, 25, a, CpuOpKind::Operator));
        b.push_cpu_op(CpuOp::new(t, 12, 20, inner, CpuOpKind::Operator));
        b.push_cpu_op(CpuOp::new(t, 40, 45, c, CpuOpKind::Operator));
        let tr = b.finish();
        let names: Vec<_> = (0..tr.cpu_ops.len())
            .map(|i| {
                let p = tr.cpu_ops.parent[i];
                (
                    tr.strings.get(tr.cpu_ops.name[i]),
                    tr.op_name(p).unwrap_or("-"),
                    tr.cpu_ops.depth[i],
                )
            })
            .collect();
        assert_eq!(
            names,
            vec![
                ("ProfilerStep#1", "-", 0),
                ("A", "ProfilerStep#1", 1),
                ("inner", "A", 2),
                ("B", "ProfilerStep#1", 1),
                ("C", "B", 2),
                ("other thread", "-", 0),
            ]
        );
        assert_eq!(tr.cpu_ops_of(t), 0..5);
        assert_eq!(tr.cpu_ops_of(u), 5..6);
    }

    #[test]
    fn equal_ranges_nest_outer_kind_first_and_partial_overlaps_are_counted() {
        let mut b = TraceBuilder::new();
        let t = b.thread(1, 1);
        let op = b.intern("aten::add");
        let ann = b.intern("forward");
        let py = b.intern("x.py(1): f");
        b.push_cpu_op(CpuOp::new(t, 10, 20, op, CpuOpKind::Operator));
        b.push_cpu_op(CpuOp::new(t, 10, 20, ann, CpuOpKind::UserAnnotation));
        b.push_cpu_op(CpuOp::new(t, 15, 30, py, CpuOpKind::PythonFunction));
        let tr = b.finish();
        assert_eq!(tr.op_name(Some(OpRow::new(0))), Some("forward"));
        assert_eq!(tr.cpu_ops.parent[1], Some(OpRow::new(0)));
        assert_eq!(tr.cpu_ops.parent[2], None);
        assert_eq!(tr.diagnostics.counts["cpu_op_partial_overlap"], 2);
    }

    #[test]
    fn append_remaps_strings_and_threads() {
        let mut a = TraceBuilder::new();
        let ta = a.thread(1, 1);
        let x = a.intern("x");
        a.push_cpu_op(CpuOp::new(ta, 0, 10, x, CpuOpKind::Operator));
        let mut b = TraceBuilder::new();
        let _unused = b.thread(9, 9);
        let tb = b.thread(1, 1);
        let y = b.intern("y");
        b.push_cpu_op(CpuOp::new(tb, 20, 30, y, CpuOpKind::Operator));
        b.push_gpu(GpuActivity::kernel(0, 7, 25, 28, y, 3));
        a.append(b);
        let tr = a.finish();
        assert_eq!(tr.threads.len(), 2);
        assert_eq!(tr.cpu_ops_of(ThreadId(0)), 0..2);
        assert_eq!(tr.op_name(Some(OpRow::new(1))), Some("y"));
        assert_eq!(tr.strings.get(tr.gpu.name[0]), "y");
    }

    /// ```text
    /// thread 1  [record_param_comms (group "7", seq 41)....]   [aten::mm....]
    ///             [nccl:all_reduce........]                      [L3]
    ///               [L1]     [L2]
    /// stream 9          [ncclKernel]  [copy kernel]      (no args)
    /// stream 7                                              [gemm]
    /// ```
    /// Kernels launched inside the operator take its collective; the gemm
    /// launched elsewhere takes none. Chunks appended keep their rows.
    #[test]
    fn kernels_take_the_collective_of_the_operator_around_their_launch() {
        let mut a = TraceBuilder::new();
        let t = a.thread(1, 1);
        let (ann, mm, launch) = (
            a.intern("nccl:all_reduce"),
            a.intern("aten::mm"),
            a.intern("cudaLaunchKernel"),
        );
        let mut b = TraceBuilder::new();
        let tb = b.thread(1, 1);
        let group = b.intern("7");
        let rpc_b = b.intern("record_param_comms");
        let mut op = CpuOp::new(tb, 0, 100, rpc_b, CpuOpKind::Operator);
        op.collective = Some(b.push_collective(Collective {
            group,
            seq: Some(41),
            ..Collective::unknown()
        }));
        b.push_cpu_op(op);
        a.push_cpu_op(CpuOp::new(t, 5, 60, ann, CpuOpKind::UserAnnotation));
        a.push_cpu_op(CpuOp::new(t, 120, 200, mm, CpuOpKind::Operator));
        a.push_runtime(RuntimeCall::new(t, 10, 15, launch, 1));
        a.push_runtime(RuntimeCall::new(t, 30, 35, launch, 2));
        a.push_runtime(RuntimeCall::new(t, 130, 135, launch, 3));
        let k = a.intern("ncclKernel_AllReduce");
        a.push_gpu(GpuActivity::kernel(0, 9, 20, 80, k, 1));
        a.push_gpu(GpuActivity::kernel(0, 9, 85, 90, mm, 2));
        a.push_gpu(GpuActivity::kernel(0, 7, 140, 150, mm, 3));
        a.append(b);
        let tr = a.finish();
        assert_eq!(tr.collectives.len(), 1);
        let c = Some(CollectiveRow::new(0));
        assert_eq!(tr.gpu.collective, vec![c, c, None]);
        assert_eq!(tr.strings.get(tr.collectives.group[0]), "7");
        assert_eq!(tr.collectives.seq[0], Some(41));
        assert_eq!(
            tr.op_name(
                tr.cpu_ops
                    .collective
                    .iter()
                    .position(|c| c.is_some())
                    .map(OpRow::new)
            ),
            Some("record_param_comms")
        );
    }
}

//! [`Decoder`]: CUPTI records into [`TraceBuilder`] rows.

use super::external::ExternalKind;
use super::marker::{FLAG_END, FLAG_START};
use super::memcpy::{CopyDirection, MemoryKind};
use super::sync::SYNC_INVALID_VALUE;
use super::{decode_record, kind, DecodeError, Layouts, Record, RecordIter, WalkError};
use crate::trace::{
    ApiKind, CopyKind, CpuOp, CpuOpKind, GpuActivity, GpuKind, MarkerKind, MemKind, Ns, RuntimeCall, StrId,
    ThreadId, TraceBuilder,
};
use std::collections::{BTreeMap, HashMap};

/// Turns the addresses and ids in CUPTI records into names. The live
/// collector reads CUPTI's strings and asks `cuptiGetCallbackName`; tests and
/// replays use a [`MapResolver`].
pub trait Resolver {
    /// The NUL-terminated string at `addr` (kernel, marker and domain names),
    /// or `None` when it cannot be read.
    fn string(&mut self, addr: u64) -> Option<String>;
    /// The function name of callback id `cbid` of the runtime or driver API,
    /// or `None` when unknown.
    fn api_name(&mut self, api: ApiKind, cbid: u32) -> Option<String>;
}

/// A [`Resolver`] backed by maps (tests, captured string tables).
#[derive(Clone, Debug, Default)]
pub struct MapResolver {
    /// Strings by address.
    pub strings: HashMap<u64, String>,
    /// API function names by (API, cbid).
    pub apis: HashMap<(ApiKind, u32), String>,
}

impl Resolver for MapResolver {
    fn string(&mut self, addr: u64) -> Option<String> {
        self.strings.get(&addr).cloned()
    }

    fn api_name(&mut self, api: ApiKind, cbid: u32) -> Option<String> {
        self.apis.get(&(api, cbid)).cloned()
    }
}

/// What the decoder saw, counted. The same counts, under `cupti_*` names, go
/// into the trace's [`Diagnostics`](crate::trace::Diagnostics).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DecodeStats {
    /// Records decoded, by kind name.
    pub records: BTreeMap<&'static str, u64>,
    /// Records of known size that gapscope does not use (NAME, STREAM, ...).
    pub skipped: u64,
    /// Buffer walks stopped by a kind of unknown size.
    pub unknown_kind: u64,
    /// Records shorter than their layout (buffer walks stopped or single
    /// records refused).
    pub truncated: u64,
    /// Intervals with a zero start or end (CUPTI ran out of device buffer).
    pub zero_timestamp: u64,
    /// Intervals that end before they start.
    pub end_before_start: u64,
    /// Timestamps too large for i64 ns.
    pub timestamp_overflow: u64,
    /// Marker ENDs with no START.
    pub marker_end_without_start: u64,
    /// Marker STARTs never ended.
    pub marker_unclosed: u64,
    /// Markers on a device, context or stream rather than a thread (kept as
    /// instants with no thread).
    pub marker_not_on_thread: u64,
    /// Sync records whose context was never seen on a GPU record, so their
    /// device is unknown (dropped).
    pub sync_unknown_device: u64,
    /// Kernels, copies and memsets whose correlation id matches no runtime
    /// or driver record (API tracing off, or its record lost).
    pub gpu_without_api: u64,
    /// Records CUPTI dropped for lack of buffer space (set by the collector).
    pub dropped_by_cupti: u64,
    /// Buffer requests the collector refused because its pool was full
    /// (CUPTI drops records instead; set by the collector).
    pub buffers_refused: u64,
}

impl DecodeStats {
    /// Every count as `(diagnostic name, value)`, zeros left out.
    pub fn counts(&self) -> Vec<(String, u64)> {
        let mut v = vec![
            ("cupti_skipped_kind".to_string(), self.skipped),
            ("cupti_unknown_kind".into(), self.unknown_kind),
            ("cupti_truncated_record".into(), self.truncated),
            ("cupti_zero_timestamp".into(), self.zero_timestamp),
            ("cupti_end_before_start".into(), self.end_before_start),
            ("cupti_timestamp_overflow".into(), self.timestamp_overflow),
            (
                "cupti_marker_end_without_start".into(),
                self.marker_end_without_start,
            ),
            ("cupti_marker_unclosed".into(), self.marker_unclosed),
            ("cupti_marker_not_on_thread".into(), self.marker_not_on_thread),
            ("cupti_sync_unknown_device".into(), self.sync_unknown_device),
            ("cupti_gpu_without_api".into(), self.gpu_without_api),
            ("cupti_dropped_records".into(), self.dropped_by_cupti),
            ("cupti_buffers_refused".into(), self.buffers_refused),
        ];
        v.retain(|(_, n)| *n > 0);
        v
    }
}

struct MarkerStart {
    thread: Option<ThreadId>,
    time: Ns,
    name: StrId,
    kind: CpuOpKind,
}

/// What an NVTX range is on the CPU timeline, and its name there.
///
/// PyTorch's `emit_nvtx()` names each operator's range
/// `aten::mm, seq = 12, op_id = 40, sizes = [[8, 8], [8, 8]]`: the operator's
/// name comes first, then what the profiler knows of the call. The name is
/// cut before the first such field, so ranges group by operator as a PyTorch
/// profiler trace's do. A name with `::` (`aten::mm`,
/// `autograd::engine::evaluate_function: MmBackward0`) is an operator, as in
/// a PyTorch profiler trace's `cpu_op` category; `ProfilerStep#N` is a step;
/// anything else (`torch.profiler.record_function`, a user's
/// `torch.cuda.nvtx.range`) is a user annotation.
pub fn nvtx_range(name: &str) -> (&str, CpuOpKind) {
    const FIELDS: [&str; 4] = [", seq = ", ", op_id = ", ", sizes = ", ", input_op_ids = "];
    let cut = FIELDS
        .iter()
        .filter_map(|f| name.find(f))
        .min()
        .unwrap_or(name.len());
    let name = &name[..cut];
    let kind = if name.starts_with("ProfilerStep#") {
        CpuOpKind::ProfilerStep
    } else if name.contains("::") {
        CpuOpKind::Operator
    } else {
        CpuOpKind::UserAnnotation
    };
    (name, kind)
}

/// Decodes CUPTI buffers into trace rows.
///
/// CUPTI does not order records, and related records may sit in different
/// buffers (an external id before its API record, a kernel in another
/// thread's buffer), so joins wait for [`finish`](Self::finish): external ids
/// onto API and GPU rows by correlation id, marker STARTs onto their ENDs by
/// id, and sync records onto the device of their context.
pub struct Decoder<R: Resolver> {
    layouts: Layouts,
    resolver: R,
    builder: TraceBuilder,
    stats: DecodeStats,
    gpu: Vec<GpuActivity>,
    syncs: Vec<(GpuActivity, u32)>,
    runtime: Vec<RuntimeCall>,
    /// correlation id → (kind, external id), the preferred kind kept.
    external: HashMap<u32, (ExternalKind, u64)>,
    context_device: HashMap<u32, u32>,
    marker_starts: HashMap<u32, MarkerStart>,
    marker_ends: Vec<(u32, Ns)>,
    kernel_names: HashMap<u64, StrId>,
    api_names: HashMap<(ApiKind, u32), StrId>,
    copy_names: HashMap<(CopyDirection, MemoryKind, MemoryKind), StrId>,
}

impl<R: Resolver> Decoder<R> {
    /// A decoder for one process's records in `layouts`' format.
    pub fn new(layouts: Layouts, resolver: R) -> Self {
        let mut builder = TraceBuilder::new();
        builder.meta.format = "cupti".into();
        Decoder {
            layouts,
            resolver,
            builder,
            stats: DecodeStats::default(),
            gpu: Vec::new(),
            syncs: Vec::new(),
            runtime: Vec::new(),
            external: HashMap::new(),
            context_device: HashMap::new(),
            marker_starts: HashMap::new(),
            marker_ends: Vec::new(),
            kernel_names: HashMap::new(),
            api_names: HashMap::new(),
            copy_names: HashMap::new(),
        }
    }

    /// The counts so far.
    pub fn stats(&self) -> &DecodeStats {
        &self.stats
    }

    /// The resolver, e.g. to read what it cached.
    pub fn resolver_mut(&mut self) -> &mut R {
        &mut self.resolver
    }

    /// The layouts records are read with.
    pub fn layouts(&self) -> &Layouts {
        &self.layouts
    }

    /// Adds buffer requests refused for a full pool.
    pub fn note_refused_buffers(&mut self, n: u64) {
        self.stats.buffers_refused += n;
    }

    /// Adds records CUPTI reported as dropped.
    pub fn add_dropped(&mut self, n: u64) {
        self.stats.dropped_by_cupti += n;
    }

    /// Decodes every record of a buffer's valid bytes, walking it with this
    /// family's sizes. A kind of unknown size or a cut-off last record stops
    /// the walk and is counted; the records before it are kept.
    pub fn decode_buffer(&mut self, valid: &[u8]) {
        for item in RecordIter::new(valid, &self.layouts) {
            match item {
                Ok((_, rec)) => self.decode_one(rec),
                Err(WalkError::UnknownKind { .. }) => self.stats.unknown_kind += 1,
                Err(WalkError::Truncated { .. }) => self.stats.truncated += 1,
            }
        }
    }

    /// Decodes one record (its bytes up to the next record), as CUPTI's own
    /// iterator delimits them in the live collector.
    pub fn decode_one(&mut self, rec: &[u8]) {
        match decode_record(rec, &self.layouts) {
            Ok(r) => self.add(r),
            Err(DecodeError::UnknownKind(_)) => self.stats.unknown_kind += 1,
            Err(DecodeError::NoKind(_) | DecodeError::Truncated { .. }) => self.stats.truncated += 1,
        }
    }

    /// Adds one decoded record.
    pub fn add(&mut self, record: Record) {
        let kind_name = match &record {
            Record::Kernel(_) => "kernel",
            Record::Memcpy(_) => "memcpy",
            Record::PeerMemcpy(_) => "memcpy2",
            Record::Memset(_) => "memset",
            Record::Sync(_) => "synchronization",
            Record::Runtime(_) => "runtime",
            Record::Driver(_) => "driver",
            Record::External(_) => "external_correlation",
            Record::Marker(_) => "marker",
            Record::Overhead(_) => "overhead",
            Record::Skipped(k) => kind::name(*k),
        };
        *self.stats.records.entry(kind_name).or_insert(0) += 1;
        match record {
            Record::Kernel(k) => {
                self.context_device.insert(k.context_id, k.device_id);
                let Some((start, end)) = self.interval(k.start, k.end) else {
                    return;
                };
                let name = self.kernel_name(k.name);
                let mut row = GpuActivity::kernel(
                    k.device_id,
                    k.stream_id as i64,
                    start,
                    end,
                    name,
                    k.correlation_id as u64,
                );
                row.grid = k.grid.map(|g| g.max(0) as u32);
                row.block = k.block.map(|b| b.max(0) as u32);
                row.registers = k.registers_per_thread as u32;
                row.shared_mem = (k.static_shared_memory.max(0) as u32)
                    .saturating_add(k.dynamic_shared_memory.max(0) as u32);
                self.gpu.push(row);
            }
            Record::Memcpy(m) => {
                self.context_device.insert(m.context_id, m.device_id);
                let Some((start, end)) = self.interval(m.start, m.end) else {
                    return;
                };
                let row = self.copy_row(
                    (m.device_id, m.stream_id, start, end, m.correlation_id),
                    m.direction,
                    m.src,
                    m.dst,
                    m.bytes,
                );
                self.gpu.push(row);
            }
            Record::PeerMemcpy(m) => {
                self.context_device.insert(m.context_id, m.device_id);
                let Some((start, end)) = self.interval(m.start, m.end) else {
                    return;
                };
                let row = self.copy_row(
                    (m.device_id, m.stream_id, start, end, m.correlation_id),
                    m.direction,
                    m.src,
                    m.dst,
                    m.bytes,
                );
                self.gpu.push(row);
            }
            Record::Memset(m) => {
                self.context_device.insert(m.context_id, m.device_id);
                let Some((start, end)) = self.interval(m.start, m.end) else {
                    return;
                };
                let mem = mem_kind(m.memory);
                let name = match self
                    .copy_names
                    .get(&(CopyDirection::Unknown(0), m.memory, m.memory))
                {
                    Some(&n) => n,
                    None => {
                        let n = self.builder.intern(&format!("Memset ({})", mem_label(m.memory)));
                        self.copy_names
                            .insert((CopyDirection::Unknown(0), m.memory, m.memory), n);
                        n
                    }
                };
                let mut row = GpuActivity::new(
                    GpuKind::Memset,
                    m.device_id,
                    m.stream_id as i64,
                    start,
                    end,
                    name,
                    m.correlation_id as u64,
                );
                row.bytes = m.bytes;
                row.src_mem = mem;
                row.dst_mem = mem;
                self.gpu.push(row);
            }
            Record::Sync(s) => {
                let Some((start, end)) = self.interval(s.start, s.end) else {
                    return;
                };
                let name = self.builder.intern(s.sync_type.label());
                let stream = match s.stream_id {
                    SYNC_INVALID_VALUE => -1,
                    v => v as i64,
                };
                let row = GpuActivity::new(
                    GpuKind::Sync,
                    u32::MAX,
                    stream,
                    start,
                    end,
                    name,
                    s.correlation_id as u64,
                );
                self.syncs.push((row, s.context_id));
            }
            Record::Runtime(a) | Record::Driver(a) => {
                let api = if kind_name == "runtime" {
                    ApiKind::Runtime
                } else {
                    ApiKind::Driver
                };
                let Some((start, end)) = self.interval(a.start, a.end) else {
                    return;
                };
                let thread = self.builder.thread(a.process_id as i64, a.thread_id as i64);
                let name = self.api_name(api, a.cbid);
                let mut row = RuntimeCall::new(thread, start, end, name, a.correlation_id as u64);
                row.api = api;
                self.runtime.push(row);
            }
            Record::External(e) => {
                let better = |old: ExternalKind| rank(e.kind) < rank(old);
                match self.external.get(&e.correlation_id) {
                    Some(&(old, _)) if !better(old) => {}
                    _ => {
                        self.external.insert(e.correlation_id, (e.kind, e.external_id));
                    }
                }
            }
            Record::Marker(m) => {
                let Some(time) = self.time(m.timestamp) else {
                    return;
                };
                let thread = m
                    .process_thread()
                    .map(|(p, t)| self.builder.thread(p as i64, t as i64));
                if m.flags & FLAG_END != 0 {
                    self.marker_ends.push((m.id, time));
                    return;
                }
                if m.flags & FLAG_START != 0 {
                    let full = if m.name == 0 {
                        None
                    } else {
                        self.resolver.string(m.name)
                    };
                    let (name, kind) = match full.as_deref().map(nvtx_range) {
                        Some((name, kind)) => (self.builder.intern(name), kind),
                        None => (
                            self.builder.intern("<unnamed NVTX range>"),
                            CpuOpKind::UserAnnotation,
                        ),
                    };
                    self.marker_starts.insert(
                        m.id,
                        MarkerStart {
                            thread,
                            time,
                            name,
                            kind,
                        },
                    );
                    return;
                }
                let name = self.string_or(m.name, "<unnamed NVTX range>");
                let mut row = crate::trace::Marker::new(MarkerKind::Instant, time, time, name);
                row.thread = thread;
                if thread.is_none() {
                    self.stats.marker_not_on_thread += 1;
                }
                self.builder.push_marker(row);
            }
            Record::Overhead(o) => {
                let Some((start, end)) = self.interval(o.start, o.end) else {
                    return;
                };
                let name = self.builder.intern(o.kind.label());
                let mut row = crate::trace::Marker::new(MarkerKind::ProfilerOverhead, start, end, name);
                if o.object_kind == super::marker::object_kind::THREAD {
                    row.thread = Some(self.builder.thread(o.object_id[0] as i64, o.object_id[1] as i64));
                }
                self.builder.push_marker(row);
            }
            Record::Skipped(_) => self.stats.skipped += 1,
        }
    }

    /// Joins what waited for every buffer and returns the builder (rows in
    /// absolute CUPTI ns; `finish` it into a trace) and the counts.
    pub fn finish(mut self) -> (TraceBuilder, DecodeStats) {
        // External ids onto API calls and the GPU work they launched.
        for r in &mut self.runtime {
            if let Some(&(_, ext)) = self.external.get(&(r.correlation as u32)) {
                r.external_id = ext;
            }
        }
        for g in &mut self.gpu {
            if let Some(&(_, ext)) = self.external.get(&(g.correlation as u32)) {
                g.external_id = ext;
            }
        }
        let api_corr: std::collections::HashSet<u64> = self.runtime.iter().map(|r| r.correlation).collect();
        self.stats.gpu_without_api += self
            .gpu
            .iter()
            .filter(|g| !api_corr.contains(&g.correlation))
            .count() as u64;
        // Sync records: the device of their context, or the only device seen.
        let devices: Vec<u32> = {
            let mut d: Vec<u32> = self.context_device.values().copied().collect();
            d.sort_unstable();
            d.dedup();
            d
        };
        for (mut row, ctx) in std::mem::take(&mut self.syncs) {
            let device = self
                .context_device
                .get(&ctx)
                .copied()
                .or_else(|| (devices.len() == 1).then(|| devices[0]));
            match device {
                Some(d) => {
                    row.device = d;
                    if let Some(&(_, ext)) = self.external.get(&(row.correlation as u32)) {
                        row.external_id = ext;
                    }
                    self.gpu.push(row);
                }
                None => self.stats.sync_unknown_device += 1,
            }
        }
        // NVTX ranges: START and END share an id.
        for (id, end) in std::mem::take(&mut self.marker_ends) {
            match self.marker_starts.remove(&id) {
                Some(s) => match s.thread {
                    Some(t) if end >= s.time => {
                        self.builder
                            .push_cpu_op(CpuOp::new(t, s.time, end, s.name, s.kind));
                    }
                    Some(_) => self.stats.end_before_start += 1,
                    None => {
                        self.stats.marker_not_on_thread += 1;
                        let row = crate::trace::Marker::new(MarkerKind::Instant, s.time, s.time, s.name);
                        self.builder.push_marker(row);
                    }
                },
                None => self.stats.marker_end_without_start += 1,
            }
        }
        self.stats.marker_unclosed += self.marker_starts.len() as u64;
        for row in self.gpu.drain(..) {
            self.builder.push_gpu(row);
        }
        for row in self.runtime.drain(..) {
            self.builder.push_runtime(row);
        }
        for (name, n) in self.stats.counts() {
            *self.builder.diagnostics.counts.entry(name).or_insert(0) += n;
        }
        (self.builder, self.stats)
    }

    fn time(&mut self, t: u64) -> Option<Ns> {
        if t == 0 {
            self.stats.zero_timestamp += 1;
            return None;
        }
        match i64::try_from(t) {
            Ok(v) => Some(v),
            Err(_) => {
                self.stats.timestamp_overflow += 1;
                None
            }
        }
    }

    fn interval(&mut self, start: u64, end: u64) -> Option<(Ns, Ns)> {
        if start == 0 || end == 0 {
            self.stats.zero_timestamp += 1;
            return None;
        }
        if end < start {
            self.stats.end_before_start += 1;
            return None;
        }
        match (i64::try_from(start), i64::try_from(end)) {
            (Ok(s), Ok(e)) => Some((s, e)),
            _ => {
                self.stats.timestamp_overflow += 1;
                None
            }
        }
    }

    fn kernel_name(&mut self, addr: u64) -> StrId {
        if let Some(&id) = self.kernel_names.get(&addr) {
            return id;
        }
        let id = self.string_or(addr, "<unnamed kernel>");
        self.kernel_names.insert(addr, id);
        id
    }

    fn string_or(&mut self, addr: u64, fallback: &str) -> StrId {
        let s = if addr == 0 {
            None
        } else {
            self.resolver.string(addr)
        };
        match s {
            Some(s) => self.builder.intern(&s),
            None => self.builder.intern(fallback),
        }
    }

    fn api_name(&mut self, api: ApiKind, cbid: u32) -> StrId {
        if let Some(&id) = self.api_names.get(&(api, cbid)) {
            return id;
        }
        let name = match self.resolver.api_name(api, cbid) {
            Some(n) => super::api::normalize_callback_name(&n).to_string(),
            None => match api {
                ApiKind::Runtime => format!("cuda_runtime_cbid_{cbid}"),
                ApiKind::Driver => format!("cuda_driver_cbid_{cbid}"),
            },
        };
        let id = self.builder.intern(&name);
        self.api_names.insert((api, cbid), id);
        id
    }

    fn copy_row(
        &mut self,
        (device, stream, start, end, corr): (u32, u32, Ns, Ns, u32),
        dir: CopyDirection,
        src: MemoryKind,
        dst: MemoryKind,
        bytes: u64,
    ) -> GpuActivity {
        let name = match self.copy_names.get(&(dir, src, dst)) {
            Some(&n) => n,
            None => {
                let n = self.builder.intern(&format!(
                    "Memcpy {} ({} -> {})",
                    dir_label(dir),
                    mem_label(src),
                    mem_label(dst)
                ));
                self.copy_names.insert((dir, src, dst), n);
                n
            }
        };
        let mut row = GpuActivity::new(
            GpuKind::Memcpy,
            device,
            stream as i64,
            start,
            end,
            name,
            corr as u64,
        );
        row.bytes = bytes;
        row.copy_kind = copy_kind(dir);
        row.src_mem = mem_kind(src);
        row.dst_mem = mem_kind(dst);
        row
    }
}

/// Preference among external-id kinds for one correlation id: the
/// framework's operator id (CUSTOM0) first.
fn rank(k: ExternalKind) -> u8 {
    match k {
        ExternalKind::Custom0 => 0,
        ExternalKind::Unknown => 1,
        ExternalKind::Custom1 => 2,
        ExternalKind::Custom2 => 3,
        ExternalKind::OpenAcc => 4,
        ExternalKind::Other(_) => 5,
    }
}

fn copy_kind(d: CopyDirection) -> CopyKind {
    match d {
        CopyDirection::HtoD | CopyDirection::HtoA => CopyKind::HtoD,
        CopyDirection::DtoH | CopyDirection::AtoH => CopyKind::DtoH,
        CopyDirection::DtoD | CopyDirection::AtoA | CopyDirection::AtoD | CopyDirection::DtoA => {
            CopyKind::DtoD
        }
        CopyDirection::HtoH => CopyKind::HtoH,
        CopyDirection::PtoP => CopyKind::PtoP,
        CopyDirection::Unknown(_) => CopyKind::None,
    }
}

fn dir_label(d: CopyDirection) -> &'static str {
    match d {
        CopyDirection::HtoD => "HtoD",
        CopyDirection::DtoH => "DtoH",
        CopyDirection::HtoA => "HtoA",
        CopyDirection::AtoH => "AtoH",
        CopyDirection::AtoA => "AtoA",
        CopyDirection::AtoD => "AtoD",
        CopyDirection::DtoA => "DtoA",
        CopyDirection::DtoD => "DtoD",
        CopyDirection::HtoH => "HtoH",
        CopyDirection::PtoP => "PtoP",
        CopyDirection::Unknown(_) => "Unknown",
    }
}

fn mem_kind(m: MemoryKind) -> MemKind {
    match m {
        MemoryKind::Pageable => MemKind::Pageable,
        MemoryKind::Pinned => MemKind::Pinned,
        MemoryKind::Device | MemoryKind::DeviceStatic => MemKind::Device,
        MemoryKind::Array => MemKind::Array,
        MemoryKind::Managed | MemoryKind::ManagedStatic => MemKind::Managed,
        MemoryKind::Unknown(_) => MemKind::Unknown,
    }
}

fn mem_label(m: MemoryKind) -> &'static str {
    match m {
        MemoryKind::Pageable => "Pageable",
        MemoryKind::Pinned => "Pinned",
        MemoryKind::Device => "Device",
        MemoryKind::Array => "Array",
        MemoryKind::Managed => "Managed",
        MemoryKind::DeviceStatic => "Device Static",
        MemoryKind::ManagedStatic => "Managed Static",
        MemoryKind::Unknown(_) => "Unknown",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nvtx_ranges_are_named_and_kinded_as_pytorch_profiler_traces_are() {
        // emit_nvtx() forms, with and without shapes and sequence numbers.
        assert_eq!(
            nvtx_range("aten::mm, seq = 12, op_id = 40"),
            ("aten::mm", CpuOpKind::Operator)
        );
        assert_eq!(
            nvtx_range("aten::add_, op_id = 7, sizes = [[1], []], input_op_ids = [(0, 0)]"),
            ("aten::add_", CpuOpKind::Operator)
        );
        assert_eq!(
            nvtx_range("autograd::engine::evaluate_function: MmBackward0, seq = 12, op_id = 90"),
            (
                "autograd::engine::evaluate_function: MmBackward0",
                CpuOpKind::Operator
            )
        );
        assert_eq!(nvtx_range("aten::empty"), ("aten::empty", CpuOpKind::Operator));
        assert_eq!(
            nvtx_range("ProfilerStep#7"),
            ("ProfilerStep#7", CpuOpKind::ProfilerStep)
        );
        assert_eq!(
            nvtx_range("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__, op_id = 3"),
            (
                "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__",
                CpuOpKind::UserAnnotation
            )
        );
        // A user's own range keeps its whole name, commas included.
        assert_eq!(
            nvtx_range("load, then decode"),
            ("load, then decode", CpuOpKind::UserAnnotation)
        );
    }
}

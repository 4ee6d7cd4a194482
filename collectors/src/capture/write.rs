//! Trace → capture bytes.

use super::check;
use super::error::CaptureError;
use super::wire::*;
use crate::trace::{CollectiveRow, StrId, ThreadId, Trace};
use flate2::write::ZlibEncoder;
use flate2::Compression;
use std::io::{self, Write};

/// Sections this small (metadata, thread and device tables of small traces)
/// are stored when zlib's 6-byte frame would make them bigger.
const SMALL: usize = 256;

/// How hard zlib works: zlib's default. On the shared traces level 6 makes
/// captures about 35% smaller than level 1 for about twice the write time
/// (docs/capture-format.md has the measurements); `capture::write_level`
/// picks another.
pub const LEVEL: u32 = 6;

/// One section's payload, compressed as it is written, so the writer holds
/// the compressed bytes of one section, not the decoded ones.
struct Payload {
    enc: ZlibEncoder<Vec<u8>>,
    raw: u64,
    head: Vec<u8>,
}

impl Payload {
    fn new(level: u32) -> Self {
        Payload {
            enc: ZlibEncoder::new(Vec::new(), Compression::new(level)),
            raw: 0,
            head: Vec::new(),
        }
    }

    fn bytes(&mut self, b: &[u8]) -> io::Result<()> {
        self.raw += b.len() as u64;
        if self.raw <= SMALL as u64 {
            self.head.extend_from_slice(b);
        }
        self.enc.write_all(b)
    }

    fn value<T: Fixed>(&mut self, v: T) -> io::Result<()> {
        let mut b = Vec::with_capacity(T::WIDTH);
        v.put(&mut b);
        self.bytes(&b)
    }

    fn string(&mut self, s: &str) -> io::Result<()> {
        let len = u32::try_from(s.len()).map_err(|_| io::Error::other("a string over 4 GiB"))?;
        self.value(len)?;
        self.bytes(s.as_bytes())
    }

    fn opt(&mut self, v: Option<i64>) -> io::Result<()> {
        self.value(u8::from(v.is_some()))?;
        self.value(v.unwrap_or(0))
    }

    /// A table's row count, checked against the format's u32.
    fn rows(&mut self, n: usize, table: &str) -> Result<(), CaptureError> {
        let n = u32::try_from(n).map_err(|_| invalid(format!("the {table} has {n} rows, over 2^32")))?;
        self.value(n).map_err(write_err)
    }

    fn column<T: Fixed>(&mut self, v: &[T]) -> io::Result<()> {
        self.bytes(&split(v))
    }

    fn u8s<E: Copy>(&mut self, v: &[E], tag: fn(E) -> u8) -> io::Result<()> {
        let t: Vec<u8> = v.iter().map(|&e| tag(e)).collect();
        self.bytes(&t)
    }

    fn strs(&mut self, v: &[StrId]) -> io::Result<()> {
        let ids: Vec<u32> = v.iter().map(|s| s.0).collect();
        self.column(&ids)
    }

    /// Collective row links: 0 for none, else the row plus one.
    fn collectives(&mut self, v: &[Option<CollectiveRow>]) -> io::Result<()> {
        let ids: Vec<u32> = v.iter().map(|c| c.map_or(0, |c| c.get() + 1)).collect();
        self.column(&ids)
    }

    fn threads(&mut self, v: &[ThreadId]) -> io::Result<()> {
        let ids: Vec<u32> = v.iter().map(|t| t.0).collect();
        self.column(&ids)
    }

    /// Marker threads and devices: the id, or [`NO_ID`] for none.
    fn opt_ids(&mut self, v: impl Iterator<Item = Option<u32>>) -> io::Result<()> {
        self.column(&v.map(id_bits).collect::<Vec<u32>>())
    }

    fn starts(&mut self, start: &[i64]) -> io::Result<()> {
        self.column(&delta(start.iter().copied()))
    }

    fn ends(&mut self, start: &[i64], end: &[i64]) -> io::Result<()> {
        let d: Vec<u64> = start
            .iter()
            .zip(end)
            .map(|(&s, &e)| zigzag(e.wrapping_sub(s)))
            .collect();
        self.column(&d)
    }

    fn ids(&mut self, v: &[u64]) -> io::Result<()> {
        self.column(&delta(v.iter().map(|&x| x as i64)))
    }

    /// Writes the section header and the payload, stored or compressed,
    /// whichever is smaller.
    fn finish(self, section: Section, out: &mut dyn Write) -> io::Result<u64> {
        let compressed = self.enc.finish()?;
        let (codec, stored) = if self.raw <= SMALL as u64 && self.head.len() <= compressed.len() {
            (CODEC_STORED, self.head)
        } else {
            (CODEC_ZLIB, compressed)
        };
        let mut crc = flate2::Crc::new();
        crc.update(&stored);
        let mut h = Vec::with_capacity(SECTION_HEADER_LEN);
        h.extend_from_slice(&section.tag());
        h.extend_from_slice(&[codec, 0, 0, 0]);
        self.raw.put(&mut h);
        (stored.len() as u64).put(&mut h);
        crc.sum().put(&mut h);
        // The header's own checksum: a damaged length is then reported as
        // damage, not as a file cut short.
        let mut hcrc = flate2::Crc::new();
        hcrc.update(&h);
        hcrc.sum().put(&mut h);
        out.write_all(&h)?;
        out.write_all(&stored)?;
        Ok((h.len() + stored.len()) as u64)
    }
}

fn write_err(source: io::Error) -> CaptureError {
    CaptureError::Write {
        file: "<output>".into(),
        source,
    }
}

fn invalid(reason: String) -> CaptureError {
    CaptureError::Invalid {
        file: "<output>".into(),
        reason,
    }
}

/// Checks what the reader will check, so no unreadable file is written.
/// Times out of range come first and are the trace's fault: an imported
/// trace can hold them (a damaged timestamp). Anything else is the
/// writer's (a `Trace` no importer makes).
pub fn validate(t: &Trace) -> Result<(), CaptureError> {
    for (start, end, table) in [
        (&t.gpu.start, &t.gpu.end, "GPU activity"),
        (&t.runtime.start, &t.runtime.end, "runtime call"),
        (&t.cpu_ops.start, &t.cpu_ops.end, "CPU op"),
        (&t.markers.start, &t.markers.end, "marker"),
    ] {
        check::time_range(start, end, table).map_err(|reason| CaptureError::TimeOutOfRange {
            file: "<output>".into(),
            reason,
        })?;
    }
    invariants(t).map_err(invalid)
}

/// The reader's checks but the time range.
fn invariants(t: &Trace) -> Result<(), String> {
    let ns = t.strings.len();
    let nt = t.threads.len();
    check::str_ids(&t.threads.name, ns, "thread name")?;
    check::unique(
        (0..nt).map(|i| (t.threads.pid[i], t.threads.tid[i])),
        "thread table",
    )?;
    check::str_ids(&t.devices.name, ns, "device name")?;
    check::unique(t.devices.id.iter(), "device table")?;
    let c = &t.collectives;
    for (col, what) in [
        (&c.name, "collective name"),
        (&c.group, "collective group"),
        (&c.group_desc, "collective group description"),
        (&c.group_ranks, "collective group ranks"),
    ] {
        check::str_ids(col, ns, what)?;
    }
    check::collective_ids(&t.gpu.collective, c.len(), "GPU activity collective")?;
    check::occupancy(&t.gpu.occupancy_pct, "GPU activity occupancy")?;
    check::collective_ids(&t.cpu_ops.collective, c.len(), "CPU op collective")?;
    check::str_ids(&t.gpu.name, ns, "GPU activity name")?;
    check::ordered(&t.gpu.start, &t.gpu.end, "GPU activity")?;
    check::thread_ids(&t.runtime.thread, nt, "runtime call thread")?;
    check::str_ids(&t.runtime.name, ns, "runtime call name")?;
    check::ordered(&t.runtime.start, &t.runtime.end, "runtime call")?;
    check::thread_ids(&t.cpu_ops.thread, nt, "CPU op thread")?;
    check::str_ids(&t.cpu_ops.name, ns, "CPU op name")?;
    check::str_ids(&t.cpu_ops.shapes, ns, "CPU op shapes")?;
    check::str_ids(&t.cpu_ops.source, ns, "CPU op source")?;
    check::ordered(&t.cpu_ops.start, &t.cpu_ops.end, "CPU op")?;
    check::opt_thread_ids(&t.markers.thread, nt, "marker thread")?;
    check::str_ids(&t.markers.name, ns, "marker name")?;
    check::ordered(&t.markers.start, &t.markers.end, "marker")?;
    Ok(())
}

/// Writes `trace` as a capture to `out`. Returns the bytes written.
pub fn write_to(trace: &Trace, out: &mut dyn Write, level: u32) -> Result<u64, CaptureError> {
    write_version(trace, out, level, FORMAT_VERSION)
}

/// Writes `trace` in format `version` (an older one only in tests, to
/// check that files written before a column existed still read).
fn write_version(trace: &Trace, out: &mut dyn Write, level: u32, version: u32) -> Result<u64, CaptureError> {
    validate(trace)?;
    let mut head = Vec::with_capacity(FILE_HEADER_LEN);
    head.extend_from_slice(&MAGIC);
    version.put(&mut head);
    0u32.put(&mut head);
    out.write_all(&head).map_err(write_err)?;
    let mut total = head.len() as u64;
    for section in Section::ORDER {
        if section == Section::Collectives && version < 3 {
            continue;
        }
        let mut p = Payload::new(level);
        fill(&mut p, section, trace, version)?;
        total += p.finish(section, out).map_err(write_err)?;
    }
    out.flush().map_err(write_err)?;
    Ok(total)
}

/// One section's payload. The field lists mirror `read.rs`; the format's
/// column order is docs/capture-format.md's tables.
fn fill(p: &mut Payload, section: Section, t: &Trace, version: u32) -> Result<(), CaptureError> {
    let io = |r: io::Result<()>| r.map_err(write_err);
    match section {
        Section::Meta => {
            let m = &t.meta;
            io(p.value(m.origin_ns))?;
            io(p.opt(m.rank))?;
            io(p.opt(m.world_size))?;
            io(p.string(&m.source))?;
            io(p.string(&m.format))?;
            io(p.string(concat!("gapscope ", env!("CARGO_PKG_VERSION"))))?;
        }
        Section::Strings => {
            p.rows(t.strings.len(), "string table")?;
            let lens = t.strings.iter().map(|(_, s)| u32::try_from(s.len()));
            let lens: Vec<u32> = lens
                .collect::<Result<_, _>>()
                .map_err(|_| invalid("a string over 4 GiB".into()))?;
            io(p.column(&lens))?;
            for (_, s) in t.strings.iter() {
                io(p.bytes(s.as_bytes()))?;
            }
        }
        Section::Threads => {
            let th = &t.threads;
            p.rows(th.len(), "thread table")?;
            io(p.column(&th.pid))?;
            io(p.column(&th.tid))?;
            io(p.strs(&th.name))?;
        }
        Section::Devices => {
            let d = &t.devices;
            p.rows(d.len(), "device table")?;
            io(p.column(&d.id))?;
            io(p.strs(&d.name))?;
            io(p.column(&d.sm_count))?;
            io(p.column(&d.memory_bytes))?;
            let (major, minor): (Vec<u32>, Vec<u32>) = d.compute_capability.iter().copied().unzip();
            io(p.column(&major))?;
            io(p.column(&minor))?;
        }
        Section::Collectives => {
            let c = &t.collectives;
            p.rows(c.len(), "collective table")?;
            io(p.strs(&c.name))?;
            io(p.strs(&c.group))?;
            io(p.strs(&c.group_desc))?;
            io(p.strs(&c.group_ranks))?;
            io(p.column(&c.group_size))?;
            io(p.u8s(&c.seq, |s| u8::from(s.is_some())))?;
            io(p.column(&c.seq.iter().map(|s| s.unwrap_or(0)).collect::<Vec<u64>>()))?;
        }
        Section::Gpu => {
            let g = &t.gpu;
            p.rows(g.len(), "GPU activity table")?;
            io(p.column(&g.device))?;
            io(p.column(&g.stream))?;
            io(p.starts(&g.start))?;
            io(p.ends(&g.start, &g.end))?;
            io(p.u8s(&g.kind, gpu_kind_tag))?;
            io(p.strs(&g.name))?;
            io(p.ids(&g.correlation))?;
            io(p.ids(&g.external_id))?;
            io(p.column(&g.bytes))?;
            io(p.u8s(&g.copy_kind, copy_kind_tag))?;
            io(p.u8s(&g.src_mem, mem_kind_tag))?;
            io(p.u8s(&g.dst_mem, mem_kind_tag))?;
            for k in 0..3 {
                io(p.column(&g.grid.iter().map(|v| v[k]).collect::<Vec<u32>>()))?;
            }
            for k in 0..3 {
                io(p.column(&g.block.iter().map(|v| v[k]).collect::<Vec<u32>>()))?;
            }
            io(p.column(&g.registers))?;
            io(p.column(&g.shared_mem))?;
            if version >= 2 {
                let occupancy: Vec<u32> = g.occupancy_pct.iter().map(|&v| occupancy_bits(v)).collect();
                io(p.column(&occupancy))?;
            }
            if version >= 3 {
                io(p.collectives(&g.collective))?;
            }
        }
        Section::Runtime => {
            let r = &t.runtime;
            p.rows(r.len(), "runtime call table")?;
            io(p.threads(&r.thread))?;
            io(p.starts(&r.start))?;
            io(p.ends(&r.start, &r.end))?;
            io(p.strs(&r.name))?;
            io(p.u8s(&r.api, api_kind_tag))?;
            io(p.ids(&r.correlation))?;
            io(p.ids(&r.external_id))?;
        }
        Section::CpuOps => {
            // `parent` and `depth` are not stored: the reader recomputes them
            // (docs/capture-format.md, "What is not stored").
            let c = &t.cpu_ops;
            p.rows(c.len(), "CPU op table")?;
            io(p.threads(&c.thread))?;
            io(p.starts(&c.start))?;
            io(p.ends(&c.start, &c.end))?;
            io(p.strs(&c.name))?;
            io(p.u8s(&c.kind, cpu_op_kind_tag))?;
            io(p.ids(&c.external_id))?;
            io(p.column(&delta(c.sequence.iter().copied())))?;
            io(p.strs(&c.shapes))?;
            io(p.strs(&c.source))?;
            if version >= 3 {
                io(p.collectives(&c.collective))?;
            }
        }
        Section::Markers => {
            let m = &t.markers;
            p.rows(m.len(), "marker table")?;
            io(p.u8s(&m.kind, marker_kind_tag))?;
            io(p.opt_ids(m.thread.iter().map(|t| t.map(|t| t.0))))?;
            io(p.opt_ids(m.device.iter().copied()))?;
            io(p.column(&m.stream))?;
            io(p.starts(&m.start))?;
            io(p.ends(&m.start, &m.end))?;
            io(p.strs(&m.name))?;
            io(p.column(&m.value.iter().map(|v| v.to_bits()).collect::<Vec<u64>>()))?;
        }
        Section::Diagnostics => {
            let d = &t.diagnostics;
            p.rows(d.counts.len(), "diagnostics")?;
            for (k, &v) in &d.counts {
                io(p.string(k))?;
                io(p.value(v))?;
            }
            p.rows(d.examples.len(), "diagnostics examples")?;
            for e in &d.examples {
                io(p.string(e))?;
            }
        }
        Section::End => {}
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capture::read;
    use crate::trace::*;

    /// A version-1 file has no occupancy column: it still reads, with every
    /// occupancy unknown and every other column as written.
    #[test]
    fn version_1_files_read_with_occupancy_unknown() {
        let t = Sketch::in_units(1_000)
            .device("GPU", 4)
            .kernel(7, 0, 2, 1)
            .grid([2, 1, 1])
            .occupancy(62.5)
            .kernel(7, 3, 4, 2)
            .finish();
        let read_back = |version| {
            let mut bytes = Vec::new();
            write_version(&t, &mut bytes, 1, version).unwrap();
            read::trace(&bytes, "t.gst").unwrap()
        };
        let v2 = read_back(FORMAT_VERSION);
        assert_eq!(v2.gpu.occupancy_pct, vec![Some(62.5), None]);
        let v1 = read_back(1);
        assert_eq!(v1.gpu.occupancy_pct, vec![None, None]);
        assert_eq!(v1.gpu.grid, v2.gpu.grid);
        assert_eq!(v1.gpu.start, v2.gpu.start);
    }

    /// Versions 1 and 2 have no collectives: they read with none, every
    /// other column as written; version 3 keeps them.
    #[test]
    fn files_before_version_3_read_with_no_collectives() {
        let mut b = TraceBuilder::new();
        let t = b.thread(1, 1);
        let (op, k) = (b.intern("record_param_comms"), b.intern("ncclKernel_AllReduce"));
        let group = b.intern("0");
        let mut c = CpuOp::new(t, 0, 100, op, CpuOpKind::Operator);
        c.collective = Some(b.push_collective(Collective {
            group,
            seq: Some(9),
            ..Collective::unknown()
        }));
        b.push_cpu_op(c);
        b.push_runtime(RuntimeCall::new(t, 10, 20, op, 1));
        b.push_gpu(GpuActivity::kernel(0, 7, 30, 90, k, 1));
        let t = b.finish();
        let read_back = |version| {
            let mut bytes = Vec::new();
            write_version(&t, &mut bytes, 1, version).unwrap();
            read::trace(&bytes, "t.gst").unwrap()
        };
        let v3 = read_back(3);
        assert_eq!(v3.collectives.seq, vec![Some(9)]);
        assert_eq!(v3.gpu.collective, vec![Some(CollectiveRow::new(0))]);
        for v in [1, 2] {
            let old = read_back(v);
            assert!(old.collectives.is_empty(), "version {v}");
            assert_eq!(old.gpu.collective, vec![None]);
            assert_eq!(old.cpu_ops.collective, vec![None]);
            assert_eq!(old.gpu.start, v3.gpu.start);
            assert_eq!(old.cpu_ops.name, v3.cpu_ops.name);
        }
    }
}

//! Capture bytes → Trace, validating everything on the way.
//!
//! Every length is checked against the bytes that are really there before
//! anything is allocated for it: a section's decoded payload grows only as
//! zlib produces data (and stops one byte past what the header promised),
//! and every column is cut from that payload. Rows go through
//! [`TraceBuilder`], which recomputes nesting and links from them.

use super::check;
use super::error::CaptureError;
use super::wire::*;
use crate::trace::*;
use std::borrow::Cow;
use std::io::Read;

/// Walks the sections of one file in order.
pub struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
    file: &'a str,
    /// The file's format version.
    pub version: u32,
}

impl<'a> Reader<'a> {
    /// Checks the magic, the version and the flags.
    pub fn open(bytes: &'a [u8], file: &'a str) -> Result<Self, CaptureError> {
        let r = Reader {
            bytes,
            pos: 0,
            file,
            version: 0,
        };
        let n = bytes.len().min(MAGIC.len());
        if n == 0 || bytes[..n] != MAGIC[..n] {
            return Err(CaptureError::NotACapture { file: file.into() });
        }
        if bytes.len() < FILE_HEADER_LEN {
            return Err(r.truncated("the file header"));
        }
        let version = u32::get(&bytes[8..12]);
        let flags = u32::get(&bytes[12..16]);
        if version > FORMAT_VERSION {
            return Err(CaptureError::TooNew {
                file: file.into(),
                version,
                supported: FORMAT_VERSION,
            });
        }
        if version == 0 {
            return Err(r.corrupt(8, "the file header", "format version 0 does not exist".into()));
        }
        if flags != 0 {
            return Err(r.corrupt(
                12,
                "the file header",
                format!("unknown flags {flags:#x} (version {version} defines none)"),
            ));
        }
        Ok(Reader {
            pos: FILE_HEADER_LEN,
            version,
            ..r
        })
    }

    fn truncated(&self, section: &str) -> CaptureError {
        CaptureError::Truncated {
            file: self.file.into(),
            offset: self.bytes.len() as u64,
            section: section.into(),
        }
    }

    fn corrupt(&self, offset: usize, section: &str, reason: String) -> CaptureError {
        CaptureError::Corrupt {
            file: self.file.into(),
            offset: offset as u64,
            section: section.into(),
            reason,
        }
    }

    /// Reads the next section, which must be `want`, and decodes its
    /// payload with `f`, which must consume all of it.
    pub fn section<T>(
        &mut self,
        want: Section,
        f: impl FnOnce(&mut Cursor<'_>) -> Result<T, String>,
    ) -> Result<T, CaptureError> {
        let at = self.pos;
        let name = want.describe();
        let Some(h) = self.bytes.get(at..at + SECTION_HEADER_LEN) else {
            return Err(self.truncated(&name));
        };
        let mut crc = flate2::Crc::new();
        crc.update(&h[..28]);
        if crc.sum() != u32::get(&h[28..32]) {
            return Err(self.corrupt(at, &name, "the section header's checksum does not match".into()));
        }
        let tag = &h[0..4];
        if tag != want.tag() {
            return Err(self.corrupt(
                at,
                &name,
                format!(
                    "found section tag {:?} where {} belongs",
                    String::from_utf8_lossy(tag),
                    String::from_utf8_lossy(&want.tag())
                ),
            ));
        }
        let codec = h[4];
        if h[5..8] != [0, 0, 0] {
            return Err(self.corrupt(at, &name, "reserved header bytes are not zero".into()));
        }
        let raw_len = u64::get(&h[8..16]);
        let stored_len = u64::get(&h[16..24]);
        let payload_crc = u32::get(&h[24..28]);
        let start = at + SECTION_HEADER_LEN;
        let remaining = (self.bytes.len() - start) as u64;
        if stored_len > remaining {
            return Err(self.truncated(&name));
        }
        let stored = &self.bytes[start..start + stored_len as usize];
        let mut crc = flate2::Crc::new();
        crc.update(stored);
        if crc.sum() != payload_crc {
            return Err(self.corrupt(at, &name, "the payload's checksum does not match".into()));
        }
        let payload = decode(codec, stored, raw_len).map_err(|r| self.corrupt(at, &name, r))?;
        self.pos = start + stored.len();
        let mut c = Cursor { b: &payload, pos: 0 };
        let value = f(&mut c).map_err(|r| self.corrupt(at, &name, r))?;
        c.done().map_err(|r| self.corrupt(at, &name, r))?;
        Ok(value)
    }

    /// After the end marker: nothing may follow.
    pub fn finish(self) -> Result<(), CaptureError> {
        let extra = self.bytes.len() - self.pos;
        if extra > 0 {
            return Err(self.corrupt(
                self.pos,
                "the end of the file",
                format!("{extra} bytes follow the end marker"),
            ));
        }
        Ok(())
    }
}

/// A section payload as stored, or inflated. The output grows with what
/// zlib really produces, never to a size only the header claims.
fn decode(codec: u8, stored: &[u8], raw_len: u64) -> Result<Cow<'_, [u8]>, String> {
    match codec {
        CODEC_STORED => {
            if raw_len != stored.len() as u64 {
                return Err(format!(
                    "a stored payload of {} bytes claims {raw_len} decoded bytes",
                    stored.len()
                ));
            }
            Ok(Cow::Borrowed(stored))
        }
        CODEC_ZLIB => {
            let cap = (stored.len() as u64)
                .saturating_mul(MAX_ZLIB_RATIO)
                .saturating_add(64);
            if raw_len > cap {
                return Err(format!(
                    "{} compressed bytes claim to inflate to {raw_len}, more than zlib can",
                    stored.len()
                ));
            }
            let hint = raw_len.min(stored.len() as u64 * 8 + 4096) as usize;
            let mut out = Vec::with_capacity(hint);
            flate2::read::ZlibDecoder::new(stored)
                .take(raw_len + 1)
                .read_to_end(&mut out)
                .map_err(|e| format!("the zlib data does not inflate ({e})"))?;
            if out.len() as u64 != raw_len {
                return Err(format!(
                    "the zlib data inflates to {}{} bytes, the header says {raw_len}",
                    if out.len() as u64 > raw_len { "over " } else { "" },
                    out.len().min(raw_len as usize)
                ));
            }
            Ok(Cow::Owned(out))
        }
        c => Err(format!(
            "unknown codec {c} (versions 1 to 3 know 0, stored, and 1, zlib)"
        )),
    }
}

/// Reads values from a decoded payload; every read is bounds-checked.
pub struct Cursor<'a> {
    b: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8], String> {
        let left = self.b.len() - self.pos;
        if n > left {
            return Err(format!(
                "{what} needs {n} bytes at payload byte {}, only {left} are left",
                self.pos
            ));
        }
        let s = &self.b[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    /// One fixed-width value.
    pub fn value<T: Fixed>(&mut self, what: &str) -> Result<T, String> {
        Ok(T::get(self.take(T::WIDTH, what)?))
    }

    /// A u32 length, then that many bytes of UTF-8.
    pub fn string(&mut self, what: &str) -> Result<&'a str, String> {
        let n = self.value::<u32>(what)? as usize;
        let b = self.take(n, what)?;
        std::str::from_utf8(b).map_err(|e| format!("{what} is not UTF-8 ({e})"))
    }

    /// A presence byte (0 or 1) and an i64.
    fn opt(&mut self, what: &str) -> Result<Option<i64>, String> {
        let present = self.value::<u8>(what)?;
        let v = self.value::<i64>(what)?;
        match present {
            0 => Ok(None),
            1 => Ok(Some(v)),
            p => Err(format!("{what}: presence byte {p} is neither 0 nor 1")),
        }
    }

    /// A row count.
    fn rows(&mut self, table: &str) -> Result<usize, String> {
        Ok(self.value::<u32>(&format!("the {table} row count"))? as usize)
    }

    /// `n` values, byte-plane split.
    fn column<T: Fixed>(&mut self, n: usize, what: &str) -> Result<Vec<T>, String> {
        let len = n
            .checked_mul(T::WIDTH)
            .ok_or_else(|| format!("{what}: {n} rows overflow"))?;
        Ok(unsplit(self.take(len, what)?, n))
    }

    fn strs(&mut self, n: usize, strings: usize, what: &str) -> Result<Vec<StrId>, String> {
        let v: Vec<StrId> = self.column::<u32>(n, what)?.into_iter().map(StrId).collect();
        check::str_ids(&v, strings, what)?;
        Ok(v)
    }

    fn threads(&mut self, n: usize, threads: usize, what: &str) -> Result<Vec<ThreadId>, String> {
        let v: Vec<ThreadId> = self.column::<u32>(n, what)?.into_iter().map(ThreadId).collect();
        check::thread_ids(&v, threads, what)?;
        Ok(v)
    }

    /// Marker threads: [`NO_ID`] is none.
    fn opt_threads(&mut self, n: usize, threads: usize, what: &str) -> Result<Vec<Option<ThreadId>>, String> {
        let v: Vec<Option<ThreadId>> = self
            .opt_ids(n, what)?
            .into_iter()
            .map(|t| t.map(ThreadId))
            .collect();
        check::opt_thread_ids(&v, threads, what)?;
        Ok(v)
    }

    /// Marker devices and threads: [`NO_ID`] is none.
    fn opt_ids(&mut self, n: usize, what: &str) -> Result<Vec<Option<u32>>, String> {
        Ok(self.column::<u32>(n, what)?.into_iter().map(id_value).collect())
    }

    fn tags<E>(&mut self, n: usize, what: &str, f: fn(u8) -> Option<E>) -> Result<Vec<E>, String> {
        self.take(n, what)?
            .iter()
            .enumerate()
            .map(|(i, &t)| f(t).ok_or_else(|| format!("{what} of row {i} has unknown tag {t}")))
            .collect()
    }

    /// Start and end columns (delta-coded starts, then durations), checked.
    fn times(&mut self, n: usize, table: &str) -> Result<(Vec<i64>, Vec<i64>), String> {
        let start = undelta(&self.column::<u64>(n, &format!("{table} start"))?);
        let dur = self.column::<u64>(n, &format!("{table} end"))?;
        let end: Vec<i64> = start
            .iter()
            .zip(&dur)
            .map(|(&s, &d)| s.wrapping_add(unzigzag(d)))
            .collect();
        check::times(&start, &end, table)?;
        Ok((start, end))
    }

    fn ids(&mut self, n: usize, what: &str) -> Result<Vec<u64>, String> {
        Ok(undelta(&self.column::<u64>(n, what)?)
            .into_iter()
            .map(|v| v as u64)
            .collect())
    }

    fn done(&self) -> Result<(), String> {
        match self.b.len() - self.pos {
            0 => Ok(()),
            n => Err(format!("{n} bytes are left over after the last field")),
        }
    }
}

/// The META section.
pub struct Meta {
    /// Absolute time of the trace's 0.
    pub origin_ns: i64,
    /// Distributed rank.
    pub rank: Option<i64>,
    /// Distributed world size.
    pub world_size: Option<i64>,
    /// What the writer's trace said it came from.
    pub source: String,
    /// What format the writer's trace was read from.
    pub format: String,
    /// The program that wrote the file.
    pub writer: String,
}

/// Decodes the META section.
pub fn meta(c: &mut Cursor<'_>) -> Result<Meta, String> {
    Ok(Meta {
        origin_ns: c.value("origin_ns")?,
        rank: c.opt("rank")?,
        world_size: c.opt("world_size")?,
        source: c.string("source")?.into(),
        format: c.string("format")?.into(),
        writer: c.string("writer")?.into(),
    })
}

/// Reads a whole capture.
pub fn trace(bytes: &[u8], file: &str) -> Result<Trace, CaptureError> {
    let mut r = Reader::open(bytes, file)?;
    let meta = r.section(Section::Meta, meta)?;
    let mut b = TraceBuilder::new();
    // Stored times are already relative to the origin.
    b.set_origin(0);
    r.section(Section::Strings, |c| strings(c, &mut b))?;
    let ns = b.strings().len();
    let nt = r.section(Section::Threads, |c| threads(c, &mut b, ns))?;
    r.section(Section::Devices, |c| devices(c, &mut b, ns))?;
    let version = r.version;
    // Versions 1 and 2 have no collectives: no section, no link columns.
    let nc = match version {
        1 | 2 => None,
        _ => Some(r.section(Section::Collectives, |c| collectives(c, &mut b, ns))?),
    };
    r.section(Section::Gpu, |c| gpu(c, &mut b, ns, version, nc))?;
    r.section(Section::Runtime, |c| runtime(c, &mut b, ns, nt))?;
    r.section(Section::CpuOps, |c| cpu_ops(c, &mut b, ns, nt, nc))?;
    r.section(Section::Markers, |c| markers(c, &mut b, ns, nt))?;
    let diagnostics = r.section(Section::Diagnostics, diagnostics)?;
    r.section(Section::End, |_| Ok(()))?;
    r.finish()?;

    let mut t = b.finish();
    t.meta = TraceMeta {
        origin_ns: meta.origin_ns,
        source: file.to_string(),
        format: super::FORMAT_NAME.to_string(),
        rank: meta.rank,
        world_size: meta.world_size,
    };
    // What `finish` counts from the rows themselves (partial overlaps,
    // reused correlation ids) is counted again; the rest is what the
    // original importer noted.
    let mut recounted = std::mem::replace(&mut t.diagnostics, diagnostics);
    for reason in Diagnostics::RECOUNTED {
        t.diagnostics.counts.remove(*reason);
        if let Some(n) = recounted.counts.remove(*reason) {
            t.diagnostics.counts.insert(reason.to_string(), n);
        }
    }
    Ok(t)
}

fn strings(c: &mut Cursor<'_>, b: &mut TraceBuilder) -> Result<(), String> {
    let n = c.rows("string table")?;
    let lens = c.column::<u32>(n, "string lengths")?;
    if lens.first() != Some(&0) {
        return Err("the first string is not the empty string".into());
    }
    for (i, &len) in lens.iter().enumerate() {
        let bytes = c.take(len as usize, "string bytes")?;
        let s = std::str::from_utf8(bytes).map_err(|e| format!("string {i} is not UTF-8 ({e})"))?;
        let id = b.intern(s);
        if id.0 as usize != i {
            return Err(format!("strings {} and {i} are the same ({s:?})", id.0));
        }
    }
    Ok(())
}

fn threads(c: &mut Cursor<'_>, b: &mut TraceBuilder, ns: usize) -> Result<usize, String> {
    let n = c.rows("thread table")?;
    let pid = c.column::<i64>(n, "thread pid")?;
    let tid = c.column::<i64>(n, "thread tid")?;
    let name = c.strs(n, ns, "thread name")?;
    check::unique(pid.iter().zip(&tid), "thread table")?;
    for i in 0..n {
        let t = b.thread(pid[i], tid[i]);
        debug_assert_eq!(t.0 as usize, i);
        if name[i] != Strings::EMPTY {
            let s = b.strings().get(name[i]).to_string();
            b.set_thread_name(t, &s);
        }
    }
    Ok(n)
}

fn devices(c: &mut Cursor<'_>, b: &mut TraceBuilder, ns: usize) -> Result<(), String> {
    let n = c.rows("device table")?;
    let id = c.column::<u32>(n, "device id")?;
    let name = c.strs(n, ns, "device name")?;
    let sm_count = c.column::<u32>(n, "device SM count")?;
    let memory_bytes = c.column::<u64>(n, "device memory")?;
    let major = c.column::<u32>(n, "device compute capability major")?;
    let minor = c.column::<u32>(n, "device compute capability minor")?;
    check::unique(id.iter(), "device table")?;
    for i in 0..n {
        b.device(Device {
            id: id[i],
            name: name[i],
            sm_count: sm_count[i],
            memory_bytes: memory_bytes[i],
            compute_capability: (major[i], minor[i]),
        });
    }
    Ok(())
}

fn collectives(c: &mut Cursor<'_>, b: &mut TraceBuilder, ns: usize) -> Result<usize, String> {
    let n = c.rows("collective table")?;
    let name = c.strs(n, ns, "collective name")?;
    let group = c.strs(n, ns, "collective group")?;
    let group_desc = c.strs(n, ns, "collective group description")?;
    let group_ranks = c.strs(n, ns, "collective group ranks")?;
    let group_size = c.column::<u32>(n, "collective group size")?;
    let has_seq = c.tags(n, "collective seq presence", |t| match t {
        0 => Some(false),
        1 => Some(true),
        _ => None,
    })?;
    let seq = c.column::<u64>(n, "collective seq")?;
    for i in 0..n {
        b.push_collective(Collective {
            name: name[i],
            group: group[i],
            group_desc: group_desc[i],
            group_ranks: group_ranks[i],
            group_size: group_size[i],
            seq: has_seq[i].then_some(seq[i]),
        });
    }
    Ok(n)
}

impl Cursor<'_> {
    /// Collective links (0: none, else the row plus one), checked against
    /// the `rows` of the collective table; all `None` in a version-1 or -2 file
    /// (`rows` is `None`), which stores no such column.
    fn collectives(
        &mut self,
        n: usize,
        rows: Option<usize>,
        what: &str,
    ) -> Result<Vec<Option<CollectiveRow>>, String> {
        let Some(rows) = rows else {
            return Ok(vec![None; n]);
        };
        let v: Vec<Option<CollectiveRow>> = self
            .column::<u32>(n, what)?
            .into_iter()
            .map(|c| c.checked_sub(1).map(|c| CollectiveRow::new(c as usize)))
            .collect();
        check::collective_ids(&v, rows, what)?;
        Ok(v)
    }
}

fn gpu(
    c: &mut Cursor<'_>,
    b: &mut TraceBuilder,
    ns: usize,
    version: u32,
    nc: Option<usize>,
) -> Result<(), String> {
    let n = c.rows("GPU activity table")?;
    let device = c.column::<u32>(n, "GPU activity device")?;
    let stream = c.column::<i64>(n, "GPU activity stream")?;
    let (start, end) = c.times(n, "GPU activity")?;
    let kind = c.tags(n, "GPU activity kind", gpu_kind)?;
    let name = c.strs(n, ns, "GPU activity name")?;
    let correlation = c.ids(n, "GPU activity correlation")?;
    let external_id = c.ids(n, "GPU activity external id")?;
    let bytes = c.column::<u64>(n, "GPU activity bytes")?;
    let copy_kind = c.tags(n, "GPU activity copy kind", copy_kind)?;
    let src_mem = c.tags(n, "GPU activity source memory", mem_kind)?;
    let dst_mem = c.tags(n, "GPU activity destination memory", mem_kind)?;
    let mut grid = Vec::with_capacity(3);
    for axis in ["x", "y", "z"] {
        grid.push(c.column::<u32>(n, &format!("GPU activity grid {axis}"))?);
    }
    let mut block = Vec::with_capacity(3);
    for axis in ["x", "y", "z"] {
        block.push(c.column::<u32>(n, &format!("GPU activity block {axis}"))?);
    }
    let registers = c.column::<u32>(n, "GPU activity registers")?;
    let shared_mem = c.column::<u32>(n, "GPU activity shared memory")?;
    // Version 1 files predate the column: their occupancy is unknown.
    let occupancy: Vec<Option<f32>> = if version >= 2 {
        let v: Vec<Option<f32>> = c
            .column::<u32>(n, "GPU activity occupancy")?
            .into_iter()
            .map(occupancy_value)
            .collect();
        check::occupancy(&v, "GPU activity occupancy")?;
        v
    } else {
        vec![None; n]
    };
    let collective = c.collectives(n, nc, "GPU activity collective")?;
    for i in 0..n {
        // A struct literal, not a constructor: a new column in the model
        // does not compile until the format stores it.
        b.push_gpu(GpuActivity {
            device: device[i],
            stream: stream[i],
            start: start[i],
            end: end[i],
            kind: kind[i],
            name: name[i],
            correlation: correlation[i],
            external_id: external_id[i],
            bytes: bytes[i],
            copy_kind: copy_kind[i],
            src_mem: src_mem[i],
            dst_mem: dst_mem[i],
            grid: [grid[0][i], grid[1][i], grid[2][i]],
            block: [block[0][i], block[1][i], block[2][i]],
            registers: registers[i],
            shared_mem: shared_mem[i],
            occupancy_pct: occupancy[i],
            collective: collective[i],
        });
    }
    Ok(())
}

fn runtime(c: &mut Cursor<'_>, b: &mut TraceBuilder, ns: usize, nt: usize) -> Result<(), String> {
    let n = c.rows("runtime call table")?;
    let thread = c.threads(n, nt, "runtime call thread")?;
    let (start, end) = c.times(n, "runtime call")?;
    let name = c.strs(n, ns, "runtime call name")?;
    let api = c.tags(n, "runtime call API", api_kind)?;
    let correlation = c.ids(n, "runtime call correlation")?;
    let external_id = c.ids(n, "runtime call external id")?;
    for i in 0..n {
        b.push_runtime(RuntimeCall {
            thread: thread[i],
            start: start[i],
            end: end[i],
            name: name[i],
            api: api[i],
            correlation: correlation[i],
            external_id: external_id[i],
        });
    }
    Ok(())
}

fn cpu_ops(
    c: &mut Cursor<'_>,
    b: &mut TraceBuilder,
    ns: usize,
    nt: usize,
    nc: Option<usize>,
) -> Result<(), String> {
    let n = c.rows("CPU op table")?;
    let thread = c.threads(n, nt, "CPU op thread")?;
    let (start, end) = c.times(n, "CPU op")?;
    let name = c.strs(n, ns, "CPU op name")?;
    let kind = c.tags(n, "CPU op kind", cpu_op_kind)?;
    let external_id = c.ids(n, "CPU op external id")?;
    let sequence = undelta(&c.column::<u64>(n, "CPU op sequence")?);
    let shapes = c.strs(n, ns, "CPU op shapes")?;
    let source = c.strs(n, ns, "CPU op source")?;
    let collective = c.collectives(n, nc, "CPU op collective")?;
    for i in 0..n {
        b.push_cpu_op(CpuOp {
            thread: thread[i],
            start: start[i],
            end: end[i],
            name: name[i],
            kind: kind[i],
            external_id: external_id[i],
            sequence: sequence[i],
            shapes: shapes[i],
            source: source[i],
            collective: collective[i],
            // Recomputed by `finish`.
            parent: None,
            depth: 0,
        });
    }
    Ok(())
}

fn markers(c: &mut Cursor<'_>, b: &mut TraceBuilder, ns: usize, nt: usize) -> Result<(), String> {
    let n = c.rows("marker table")?;
    let kind = c.tags(n, "marker kind", marker_kind)?;
    let thread = c.opt_threads(n, nt, "marker thread")?;
    let device = c.opt_ids(n, "marker device")?;
    let stream = c.column::<i64>(n, "marker stream")?;
    let (start, end) = c.times(n, "marker")?;
    let name = c.strs(n, ns, "marker name")?;
    let value = c.column::<u64>(n, "marker value")?;
    for i in 0..n {
        b.push_marker(Marker {
            kind: kind[i],
            thread: thread[i],
            device: device[i],
            stream: stream[i],
            start: start[i],
            end: end[i],
            name: name[i],
            value: f64::from_bits(value[i]),
        });
    }
    Ok(())
}

fn diagnostics(c: &mut Cursor<'_>) -> Result<Diagnostics, String> {
    let mut d = Diagnostics::default();
    let n = c.rows("diagnostics")?;
    for i in 0..n {
        let k = c.string("diagnostic reason")?;
        let v = c.value::<u64>("diagnostic count")?;
        if d.counts.insert(k.to_string(), v).is_some() {
            return Err(format!("diagnostic reason {k:?} appears twice (entry {i})"));
        }
    }
    let m = c.rows("diagnostic examples")?;
    for _ in 0..m {
        d.examples.push(c.string("diagnostic example")?.to_string());
    }
    Ok(d)
}

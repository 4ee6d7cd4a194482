//! `gapscope export --format parquet`: the [`Trace`] tables as Parquet
//! files, one per table, for pandas / polars / duckdb (docs/parquet.md).
//!
//! Written with the parquet crate's low-level column writers (no arrow):
//! every table is a list of columns, each a name, a Parquet type and a
//! function from row index to value, so the column list is the one place
//! that says what a file holds. Names are resolved to strings, enums to
//! their snake_case names, row links to the `id` of the row they point to
//! (null for none); times stay in ns since the trace origin, which every
//! file carries in its key-value metadata (`gapscope.origin_ns`).

use gapscope_collectors::trace::{
    ApiKind, CallRow, CopyKind, CpuOpKind, GpuKind, MarkerKind, MemKind, OpRow, StrId, Trace,
};
use parquet::basic::{Compression, LogicalType, Repetition, Type as Physical};
use parquet::data_type::{ByteArray, ByteArrayType, DoubleType, Int32Type, Int64Type};
use parquet::file::metadata::KeyValue;
use parquet::file::properties::WriterProperties;
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::types::Type;
use serde::Serialize;
use std::fs::File;
use std::io::{self, BufWriter};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Rows per row group: readers load a row group at a time, so a bound keeps
/// their memory in check on traces with millions of rows.
pub const ROW_GROUP_ROWS: usize = 1 << 20;

/// What was written.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Summary {
    /// `(file name, rows)` per table, in writing order.
    pub tables: Vec<(String, u64)>,
    /// Bytes of all files together.
    pub bytes: u64,
}

/// Export settings.
#[derive(Clone, Debug)]
pub struct Options {
    /// Snappy-compress the column chunks (else uncompressed; dictionary and
    /// run-length encoding apply either way).
    pub compress: bool,
    /// Rows per row group.
    pub row_group_rows: usize,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            compress: true,
            row_group_rows: ROW_GROUP_ROWS,
        }
    }
}

/// A value column: its Parquet type and how to read row `i`.
pub(crate) enum Values<'a> {
    /// INT64, signed.
    I64(Box<dyn Fn(usize) -> i64 + 'a>),
    /// INT64 annotated unsigned (uint64 in arrow).
    U64(Box<dyn Fn(usize) -> u64 + 'a>),
    /// INT32 annotated unsigned 32-bit.
    U32(Box<dyn Fn(usize) -> u32 + 'a>),
    /// INT32 annotated unsigned 16-bit.
    U16(Box<dyn Fn(usize) -> u16 + 'a>),
    /// INT32 annotated unsigned 32-bit, nullable: a row link.
    OptU32(Box<dyn Fn(usize) -> Option<u32> + 'a>),
    /// DOUBLE.
    F64(Box<dyn Fn(usize) -> f64 + 'a>),
    /// DOUBLE, nullable.
    OptF64(Box<dyn Fn(usize) -> Option<f64> + 'a>),
    /// BYTE_ARRAY annotated STRING, from the trace's string pool.
    Str(Box<dyn Fn(usize) -> StrId + 'a>),
    /// BYTE_ARRAY annotated STRING: an enum's name.
    Enum(Box<dyn Fn(usize) -> &'static str + 'a>),
    /// INT64, nullable.
    OptI64(Box<dyn Fn(usize) -> Option<i64> + 'a>),
    /// BYTE_ARRAY annotated STRING, any text.
    Text(Box<dyn Fn(usize) -> &'a str + 'a>),
    /// BYTE_ARRAY annotated STRING, nullable.
    OptText(Box<dyn Fn(usize) -> Option<&'a str> + 'a>),
}

pub(crate) struct Column<'a> {
    name: &'static str,
    values: Values<'a>,
}

pub(crate) fn col<'a>(name: &'static str, values: Values<'a>) -> Column<'a> {
    Column { name, values }
}

/// One file: its name, row count and columns.
pub(crate) struct Table<'a> {
    pub(crate) file: &'static str,
    pub(crate) rows: usize,
    pub(crate) columns: Vec<Column<'a>>,
}

/// The string pool a table of plain text (no trace) writes with.
pub(crate) const NO_POOL: &[ByteArray] = &[];

fn gpu_kind(k: GpuKind) -> &'static str {
    match k {
        GpuKind::Kernel => "kernel",
        GpuKind::Memcpy => "memcpy",
        GpuKind::Memset => "memset",
        GpuKind::Sync => "sync",
    }
}

fn copy_kind(k: CopyKind) -> &'static str {
    match k {
        CopyKind::None => "none",
        CopyKind::HtoD => "htod",
        CopyKind::DtoH => "dtoh",
        CopyKind::DtoD => "dtod",
        CopyKind::HtoH => "htoh",
        CopyKind::PtoP => "ptop",
    }
}

fn mem_kind(k: MemKind) -> &'static str {
    match k {
        MemKind::Unknown => "unknown",
        MemKind::Pageable => "pageable",
        MemKind::Pinned => "pinned",
        MemKind::Device => "device",
        MemKind::Managed => "managed",
        MemKind::Array => "array",
    }
}

fn cpu_op_kind(k: CpuOpKind) -> &'static str {
    match k {
        CpuOpKind::Operator => "operator",
        CpuOpKind::UserAnnotation => "user_annotation",
        CpuOpKind::PythonFunction => "python_function",
        CpuOpKind::ProfilerStep => "profiler_step",
        CpuOpKind::Other => "other",
    }
}

fn api_kind(k: ApiKind) -> &'static str {
    match k {
        ApiKind::Runtime => "runtime",
        ApiKind::Driver => "driver",
    }
}

fn marker_kind(k: MarkerKind) -> &'static str {
    match k {
        MarkerKind::Instant => "instant",
        MarkerKind::Counter => "counter",
        MarkerKind::GpuAnnotation => "gpu_annotation",
        MarkerKind::ProfilerOverhead => "profiler_overhead",
        MarkerKind::CounterRange => "counter_range",
    }
}

/// Component `k` of a launch dimension column.
fn dim(d: &[[u32; 3]], k: usize) -> Values<'_> {
    Values::U32(Box::new(move |i| d[i][k]))
}

/// The six tables of `t`. docs/parquet.md lists the same columns.
fn tables(t: &Trace) -> Vec<Table<'_>> {
    use Values::*;
    let (g, r, c, m) = (&t.gpu, &t.runtime, &t.cpu_ops, &t.markers);
    vec![
        Table {
            file: "threads",
            rows: t.threads.len(),
            columns: vec![
                col("id", U32(Box::new(|i| i as u32))),
                col("pid", I64(Box::new(|i| t.threads.pid[i]))),
                col("tid", I64(Box::new(|i| t.threads.tid[i]))),
                col("name", Str(Box::new(|i| t.threads.name[i]))),
            ],
        },
        Table {
            file: "devices",
            rows: t.devices.len(),
            columns: vec![
                col("id", U32(Box::new(|i| t.devices.id[i]))),
                col("name", Str(Box::new(|i| t.devices.name[i]))),
                col("sm_count", U32(Box::new(|i| t.devices.sm_count[i]))),
                col("memory_bytes", U64(Box::new(|i| t.devices.memory_bytes[i]))),
                col(
                    "compute_capability_major",
                    U32(Box::new(|i| t.devices.compute_capability[i].0)),
                ),
                col(
                    "compute_capability_minor",
                    U32(Box::new(|i| t.devices.compute_capability[i].1)),
                ),
            ],
        },
        Table {
            file: "gpu_activity",
            rows: g.len(),
            columns: vec![
                col("id", U32(Box::new(|i| i as u32))),
                col("device", U32(Box::new(|i| g.device[i]))),
                col("stream", I64(Box::new(|i| g.stream[i]))),
                col("start_ns", I64(Box::new(|i| g.start[i]))),
                col("end_ns", I64(Box::new(|i| g.end[i]))),
                col("kind", Enum(Box::new(|i| gpu_kind(g.kind[i])))),
                col("name", Str(Box::new(|i| g.name[i]))),
                col("correlation", U64(Box::new(|i| g.correlation[i]))),
                col("external_id", U64(Box::new(|i| g.external_id[i]))),
                col("bytes", U64(Box::new(|i| g.bytes[i]))),
                col("copy_kind", Enum(Box::new(|i| copy_kind(g.copy_kind[i])))),
                col("src_mem", Enum(Box::new(|i| mem_kind(g.src_mem[i])))),
                col("dst_mem", Enum(Box::new(|i| mem_kind(g.dst_mem[i])))),
                col("grid_x", dim(&g.grid, 0)),
                col("grid_y", dim(&g.grid, 1)),
                col("grid_z", dim(&g.grid, 2)),
                col("block_x", dim(&g.block, 0)),
                col("block_y", dim(&g.block, 1)),
                col("block_z", dim(&g.block, 2)),
                col("registers", U32(Box::new(|i| g.registers[i]))),
                col("shared_mem", U32(Box::new(|i| g.shared_mem[i]))),
                col(
                    "est_achieved_occupancy_pct",
                    OptF64(Box::new(|i| g.occupancy_pct[i].map(f64::from))),
                ),
                col(
                    "launch_id",
                    OptU32(Box::new(|i| t.links.gpu_launch[i].map(CallRow::get))),
                ),
            ],
        },
        Table {
            file: "runtime_calls",
            rows: r.len(),
            columns: vec![
                col("id", U32(Box::new(|i| i as u32))),
                col("thread", U32(Box::new(|i| r.thread[i].0))),
                col("start_ns", I64(Box::new(|i| r.start[i]))),
                col("end_ns", I64(Box::new(|i| r.end[i]))),
                col("name", Str(Box::new(|i| r.name[i]))),
                col("api", Enum(Box::new(|i| api_kind(r.api[i])))),
                col("correlation", U64(Box::new(|i| r.correlation[i]))),
                col("external_id", U64(Box::new(|i| r.external_id[i]))),
                col(
                    "op_id",
                    OptU32(Box::new(|i| t.links.runtime_op[i].map(OpRow::get))),
                ),
                col("gpu_count", U32(Box::new(|i| t.links.runtime_gpu_count[i]))),
            ],
        },
        Table {
            file: "cpu_ops",
            rows: c.len(),
            columns: vec![
                col("id", U32(Box::new(|i| i as u32))),
                col("thread", U32(Box::new(|i| c.thread[i].0))),
                col("start_ns", I64(Box::new(|i| c.start[i]))),
                col("end_ns", I64(Box::new(|i| c.end[i]))),
                col("name", Str(Box::new(|i| c.name[i]))),
                col("kind", Enum(Box::new(|i| cpu_op_kind(c.kind[i])))),
                col("external_id", U64(Box::new(|i| c.external_id[i]))),
                col("sequence", I64(Box::new(|i| c.sequence[i]))),
                col("shapes", Str(Box::new(|i| c.shapes[i]))),
                col("source", Str(Box::new(|i| c.source[i]))),
                col("parent_id", OptU32(Box::new(|i| c.parent[i].map(OpRow::get)))),
                col("depth", U16(Box::new(|i| c.depth[i]))),
            ],
        },
        Table {
            file: "markers",
            rows: m.len(),
            columns: vec![
                col("kind", Enum(Box::new(|i| marker_kind(m.kind[i])))),
                col("thread", OptU32(Box::new(|i| m.thread[i].map(|t| t.0)))),
                col("device", OptU32(Box::new(|i| m.device[i]))),
                col("stream", I64(Box::new(|i| m.stream[i]))),
                col("start_ns", I64(Box::new(|i| m.start[i]))),
                col("end_ns", I64(Box::new(|i| m.end[i]))),
                col("name", Str(Box::new(|i| m.name[i]))),
                col("value", F64(Box::new(|i| m.value[i]))),
            ],
        },
    ]
}

/// The Parquet schema field of a column.
fn field(c: &Column<'_>) -> parquet::errors::Result<Arc<Type>> {
    use Values::*;
    let (physical, logical, repetition) = match c.values {
        I64(_) => (Physical::INT64, None, Repetition::REQUIRED),
        U64(_) => (
            Physical::INT64,
            Some(LogicalType::integer(64, false)),
            Repetition::REQUIRED,
        ),
        U32(_) => (
            Physical::INT32,
            Some(LogicalType::integer(32, false)),
            Repetition::REQUIRED,
        ),
        U16(_) => (
            Physical::INT32,
            Some(LogicalType::integer(16, false)),
            Repetition::REQUIRED,
        ),
        OptU32(_) => (
            Physical::INT32,
            Some(LogicalType::integer(32, false)),
            Repetition::OPTIONAL,
        ),
        OptI64(_) => (Physical::INT64, None, Repetition::OPTIONAL),
        F64(_) => (Physical::DOUBLE, None, Repetition::REQUIRED),
        OptF64(_) => (Physical::DOUBLE, None, Repetition::OPTIONAL),
        OptText(_) => (
            Physical::BYTE_ARRAY,
            Some(LogicalType::String),
            Repetition::OPTIONAL,
        ),
        Str(_) | Enum(_) | Text(_) => (
            Physical::BYTE_ARRAY,
            Some(LogicalType::String),
            Repetition::REQUIRED,
        ),
    };
    Ok(Arc::new(
        Type::primitive_type_builder(c.name, physical)
            .with_repetition(repetition)
            .with_logical_type(logical)
            .build()?,
    ))
}

/// The key-value metadata every file of `trace` carries.
fn trace_meta(trace: &Trace) -> Vec<KeyValue> {
    let mut meta = vec![
        KeyValue::new("gapscope.origin_ns".into(), trace.meta.origin_ns.to_string()),
        KeyValue::new("gapscope.source".into(), trace.meta.source.clone()),
        KeyValue::new("gapscope.format".into(), trace.meta.format.clone()),
        KeyValue::new("gapscope.version".into(), env!("CARGO_PKG_VERSION").to_string()),
    ];
    if let Some(r) = trace.meta.rank {
        meta.push(KeyValue::new("gapscope.rank".into(), r.to_string()));
    }
    if let Some(w) = trace.meta.world_size {
        meta.push(KeyValue::new("gapscope.world_size".into(), w.to_string()));
    }
    meta
}

/// Writes the trace's tables into `dir` (which must exist) as
/// `<table>.parquet`. Each file is written beside its final name and
/// renamed when complete, so a failed export leaves no truncated table;
/// files of an earlier export are replaced.
pub fn write_dir(trace: &Trace, dir: &Path, opts: &Options) -> io::Result<Summary> {
    // Every pool string converted once; ByteArray clones share the bytes.
    let pool: Vec<ByteArray> = trace.strings.iter().map(|(_, s)| ByteArray::from(s)).collect();
    let meta = trace_meta(trace);
    let mut summary = Summary::default();
    for table in tables(trace) {
        let mut kv = meta.clone();
        kv.push(KeyValue::new("gapscope.table".into(), table.file.to_string()));
        let mut f = TableFile::create(dir, table.file, &table.columns, kv, opts)?;
        let written = f.append(&table, &pool).and_then(|()| f.finish());
        summary.bytes += written?;
        summary
            .tables
            .push((format!("{}.parquet", table.file), table.rows as u64));
    }
    Ok(summary)
}

/// A job's tables: every rank's rows in one file per table, each with a
/// leading `rank` column, and `ranks.parquet` with each rank's clock.
/// Ranks are added one at a time ([`JobTables::add`]), so only one trace
/// is in memory.
pub struct JobTables {
    dir: PathBuf,
    opts: Options,
    files: Vec<TableFile>,
    ranks: Vec<RankRow>,
    rows: Vec<u64>,
}

/// One rank's row of `ranks.parquet`.
#[derive(Clone, Debug)]
pub struct RankRow {
    /// The rank.
    pub rank: i64,
    /// Its trace.
    pub source: String,
    /// Absolute time of its trace's 0 in its own clock, ns.
    pub origin_ns: i64,
    /// Added to its absolute clock to put it on the job's (null when its
    /// clock could not be aligned).
    pub clock_offset_ns: Option<i64>,
    /// Its world size, when the trace says.
    pub world_size: Option<i64>,
}

impl JobTables {
    /// Tables into `dir` (which must exist).
    pub fn new(dir: &Path, opts: &Options) -> Self {
        JobTables {
            dir: dir.to_path_buf(),
            opts: opts.clone(),
            files: Vec::new(),
            ranks: Vec::new(),
            rows: Vec::new(),
        }
    }

    /// Appends `trace`'s rows as rank `rank.rank`.
    pub fn add(&mut self, rank: RankRow, trace: &Trace) -> io::Result<()> {
        let pool: Vec<ByteArray> = trace.strings.iter().map(|(_, s)| ByteArray::from(s)).collect();
        let r = rank.rank;
        for (k, mut table) in tables(trace).into_iter().enumerate() {
            table
                .columns
                .insert(0, col("rank", Values::I64(Box::new(move |_| r))));
            if self.files.len() <= k {
                let kv = vec![
                    KeyValue::new("gapscope.version".into(), env!("CARGO_PKG_VERSION").to_string()),
                    KeyValue::new("gapscope.table".into(), table.file.to_string()),
                    KeyValue::new("gapscope.job".into(), "true".to_string()),
                ];
                self.files.push(TableFile::create(
                    &self.dir,
                    table.file,
                    &table.columns,
                    kv,
                    &self.opts,
                )?);
                self.rows.push(0);
            }
            self.files[k].append(&table, &pool)?;
            self.rows[k] += table.rows as u64;
        }
        self.ranks.push(rank);
        Ok(())
    }

    /// Closes every file and writes `ranks.parquet`.
    pub fn finish(self) -> io::Result<Summary> {
        let mut summary = Summary::default();
        for (f, rows) in self.files.into_iter().zip(self.rows) {
            let name = format!("{}.parquet", f.name);
            summary.bytes += f.finish()?;
            summary.tables.push((name, rows));
        }
        let r = &self.ranks;
        let table = Table {
            file: "ranks",
            rows: r.len(),
            columns: vec![
                col("rank", Values::I64(Box::new(|i| r[i].rank))),
                col("source", Values::Text(Box::new(|i| r[i].source.as_str()))),
                col("origin_ns", Values::I64(Box::new(|i| r[i].origin_ns))),
                col(
                    "clock_offset_ns",
                    Values::OptI64(Box::new(|i| r[i].clock_offset_ns)),
                ),
                col("world_size", Values::OptI64(Box::new(|i| r[i].world_size))),
            ],
        };
        let kv = vec![
            KeyValue::new("gapscope.version".into(), env!("CARGO_PKG_VERSION").to_string()),
            KeyValue::new("gapscope.table".into(), "ranks".to_string()),
            KeyValue::new("gapscope.job".into(), "true".to_string()),
        ];
        let mut f = TableFile::create(&self.dir, "ranks", &table.columns, kv, &self.opts)?;
        f.append(&table, &[])?;
        summary.bytes += f.finish()?;
        summary.tables.push(("ranks.parquet".into(), r.len() as u64));
        Ok(summary)
    }
}

fn pq(e: parquet::errors::ParquetError) -> io::Error {
    match e {
        parquet::errors::ParquetError::External(e) => match e.downcast::<io::Error>() {
            Ok(io) => *io,
            Err(e) => io::Error::other(e),
        },
        e => io::Error::other(e),
    }
}

/// One Parquet file being written: its schema fixed by the first table's
/// columns, rows appended a table at a time (each in row groups of at most
/// `row_group_rows`), renamed to its final name when finished.
pub(crate) struct TableFile {
    name: String,
    writer: Option<SerializedFileWriter<BufWriter<File>>>,
    tmp: PathBuf,
    path: PathBuf,
    step: usize,
}

impl TableFile {
    pub(crate) fn create(
        dir: &Path,
        name: &str,
        columns: &[Column<'_>],
        kv: Vec<KeyValue>,
        opts: &Options,
    ) -> io::Result<TableFile> {
        let path = dir.join(format!("{name}.parquet"));
        let tmp = dir.join(format!("{name}.parquet.partial"));
        let named = |e: io::Error| io::Error::new(e.kind(), format!("{}: {e}", path.display()));
        let fields = columns
            .iter()
            .map(field)
            .collect::<Result<Vec<_>, _>>()
            .map_err(pq)
            .map_err(named)?;
        let schema = Arc::new(
            Type::group_type_builder("schema")
                .with_fields(fields)
                .build()
                .map_err(pq)
                .map_err(named)?,
        );
        let props = WriterProperties::builder()
            .set_compression(if opts.compress {
                Compression::SNAPPY
            } else {
                Compression::UNCOMPRESSED
            })
            .set_key_value_metadata(Some(kv))
            .set_max_row_group_row_count(Some(opts.row_group_rows.max(1)))
            .build();
        let file = BufWriter::with_capacity(1 << 20, File::create(&tmp).map_err(named)?);
        let writer = SerializedFileWriter::new(file, schema, Arc::new(props))
            .map_err(pq)
            .map_err(named)?;
        Ok(TableFile {
            name: name.to_string(),
            writer: Some(writer),
            tmp,
            path,
            step: opts.row_group_rows.max(1),
        })
    }

    /// Appends `table`'s rows (same columns as the schema).
    pub(crate) fn append(&mut self, table: &Table<'_>, pool: &[ByteArray]) -> io::Result<()> {
        let r = self.append_rows(table, pool);
        r.map_err(|e| self.failed(e))
    }

    fn append_rows(&mut self, table: &Table<'_>, pool: &[ByteArray]) -> io::Result<()> {
        let w = self.writer.as_mut().expect("open until finished");
        let mut start = 0;
        while start < table.rows {
            let rows = start..(start + self.step).min(table.rows);
            let mut rg = w.next_row_group().map_err(pq)?;
            for c in &table.columns {
                let mut cw = rg
                    .next_column()
                    .map_err(pq)?
                    .ok_or_else(|| io::Error::other("column count"))?;
                write_column(&mut cw, &c.values, rows.clone(), pool).map_err(pq)?;
                cw.close().map_err(pq)?;
            }
            rg.close().map_err(pq)?;
            start = rows.end;
        }
        Ok(())
    }

    /// Closes the file (a table without rows is a file with its schema and
    /// no row groups), renames it and returns its size.
    pub(crate) fn finish(mut self) -> io::Result<u64> {
        let w = self.writer.take().expect("finished once");
        let closed = w
            .into_inner()
            .map_err(pq)
            .and_then(|file| file.into_inner().map_err(|e| e.into_error()))
            .and_then(|f| f.sync_all())
            .and_then(|()| std::fs::rename(&self.tmp, &self.path));
        closed.map_err(|e| self.failed(e))?;
        Ok(std::fs::metadata(&self.path)?.len())
    }

    /// Removes the partial file and names the final one in `e`.
    fn failed(&self, e: io::Error) -> io::Error {
        let _ = std::fs::remove_file(&self.tmp);
        io::Error::new(e.kind(), format!("{}: {e}", self.path.display()))
    }
}

fn write_column(
    cw: &mut parquet::file::writer::SerializedColumnWriter<'_>,
    values: &Values<'_>,
    r: std::ops::Range<usize>,
    pool: &[ByteArray],
) -> parquet::errors::Result<usize> {
    match values {
        Values::I64(f) => cw
            .typed::<Int64Type>()
            .write_batch(&r.map(f).collect::<Vec<_>>(), None, None),
        // Unsigned 64-bit is stored as its two's-complement bits.
        Values::U64(f) => {
            cw.typed::<Int64Type>()
                .write_batch(&r.map(|i| f(i) as i64).collect::<Vec<_>>(), None, None)
        }
        Values::U32(f) => {
            cw.typed::<Int32Type>()
                .write_batch(&r.map(|i| f(i) as i32).collect::<Vec<_>>(), None, None)
        }
        Values::U16(f) => {
            cw.typed::<Int32Type>()
                .write_batch(&r.map(|i| f(i) as i32).collect::<Vec<_>>(), None, None)
        }
        Values::OptU32(f) => {
            let v: Vec<Option<u32>> = r.map(f).collect();
            let def: Vec<i16> = v.iter().map(|x| x.is_some() as i16).collect();
            let present: Vec<i32> = v.iter().flatten().map(|&x| x as i32).collect();
            cw.typed::<Int32Type>().write_batch(&present, Some(&def), None)
        }
        Values::OptI64(f) => {
            let v: Vec<Option<i64>> = r.map(f).collect();
            let def: Vec<i16> = v.iter().map(|x| x.is_some() as i16).collect();
            let present: Vec<i64> = v.iter().flatten().copied().collect();
            cw.typed::<Int64Type>().write_batch(&present, Some(&def), None)
        }
        Values::F64(f) => cw
            .typed::<DoubleType>()
            .write_batch(&r.map(f).collect::<Vec<_>>(), None, None),
        Values::OptF64(f) => {
            let v: Vec<Option<f64>> = r.map(f).collect();
            let def: Vec<i16> = v.iter().map(|x| x.is_some() as i16).collect();
            let present: Vec<f64> = v.iter().flatten().copied().collect();
            cw.typed::<DoubleType>().write_batch(&present, Some(&def), None)
        }
        Values::Str(f) => cw.typed::<ByteArrayType>().write_batch(
            &r.map(|i| pool[f(i).0 as usize].clone()).collect::<Vec<_>>(),
            None,
            None,
        ),
        Values::Enum(f) => cw.typed::<ByteArrayType>().write_batch(
            &r.map(|i| ByteArray::from(f(i))).collect::<Vec<_>>(),
            None,
            None,
        ),
        Values::Text(f) => cw.typed::<ByteArrayType>().write_batch(
            &r.map(|i| ByteArray::from(f(i))).collect::<Vec<_>>(),
            None,
            None,
        ),
        Values::OptText(f) => {
            let v: Vec<Option<&str>> = r.map(f).collect();
            let def: Vec<i16> = v.iter().map(|x| x.is_some() as i16).collect();
            let present: Vec<ByteArray> = v.iter().flatten().map(|&s| ByteArray::from(s)).collect();
            cw.typed::<ByteArrayType>()
                .write_batch(&present, Some(&def), None)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gapscope_collectors::trace::{CpuOp, GpuActivity, RuntimeCall, TraceBuilder};
    use parquet::file::reader::{FileReader, SerializedFileReader};
    use parquet::record::Field;

    /// Row groups split at `row_group_rows`; every row lands once, in order;
    /// an empty table is a valid file with no rows.
    #[test]
    fn row_groups_split_and_keep_every_row() {
        let mut b = TraceBuilder::new();
        let th = b.thread(1, 2);
        let (k, call) = (b.intern("k"), b.intern("cudaLaunchKernel"));
        for i in 0..10i64 {
            b.push_cpu_op(CpuOp::new(th, i * 100, i * 100 + 50, k, CpuOpKind::Operator));
            b.push_runtime(RuntimeCall::new(th, i * 100 + 1, i * 100 + 2, call, i as u64 + 1));
            b.push_gpu(GpuActivity::kernel(
                0,
                7,
                i * 100 + 5,
                i * 100 + 9,
                k,
                i as u64 + 1,
            ));
        }
        let t = b.finish();
        let dir = std::env::temp_dir().join(format!("gapscope-pq-unit-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let opts = Options {
            compress: true,
            row_group_rows: 4,
        };
        let s = write_dir(&t, &dir, &opts).unwrap();
        let rows: Vec<u64> = s.tables.iter().map(|(_, n)| *n).collect();
        assert_eq!(rows, vec![1, 0, 10, 10, 10, 0]);
        let r = SerializedFileReader::new(File::open(dir.join("gpu_activity.parquet")).unwrap()).unwrap();
        let groups: Vec<i64> = r.metadata().row_groups().iter().map(|g| g.num_rows()).collect();
        assert_eq!(groups, vec![4, 4, 2]);
        let starts: Vec<i64> = r
            .get_row_iter(None)
            .unwrap()
            .map(|row| {
                let row = row.unwrap();
                let (_, v) = row.get_column_iter().find(|(n, _)| *n == "start_ns").unwrap();
                match v {
                    Field::Long(x) => *x,
                    other => panic!("{other:?}"),
                }
            })
            .collect();
        assert_eq!(starts, (0..10).map(|i| i * 100 + 5).collect::<Vec<_>>());
        let empty = SerializedFileReader::new(File::open(dir.join("markers.parquet")).unwrap()).unwrap();
        assert_eq!(empty.metadata().file_metadata().num_rows(), 0);
        assert!(!dir.join("markers.parquet.partial").exists());
        let _ = std::fs::remove_dir_all(&dir);
    }
}

//! The tables users get, as polars DataFrames, read from a [`Session`]:
//! its selected trace, idle segments, launches, blame columns and
//! analysis. Nothing here decides what is idle, why, or who is to blame;
//! it lays out what the session found.
//! Columns are documented in python/README.md.

use crate::columns::{bools, floats, ints, opt_floats, opt_ints, Str, StrPool};
use gapscope_analyzers::causes::Cause;
use gapscope_analyzers::launch_stats::Launch;
use gapscope_analyzers::names::display_source;
use gapscope_analyzers::segments::IdleSegment;
use gapscope_analyzers::Session;
use gapscope_collectors::trace::{CopyKind, CpuOpKind, GpuKind, OpRow, StrId, Strings, Trace};
use polars::prelude::*;

/// The names gapscope adds to string columns.
pub const NAMES: &[&str] = &[
    "profiler",
    "sync",
    "dataloader",
    "cpu_op",
    "framework_overhead",
    "launch_overhead",
    "untraced",
    "queued",
    "graph_capture",
    "kernel",
    "memcpy",
    "memset",
    "sync",
    "HtoD",
    "DtoH",
    "DtoD",
    "HtoH",
    "PtoP",
    "operator",
    "user_annotation",
    "python_function",
    "profiler_step",
    "other",
];

/// What the tables are built from.
pub struct Inputs<'a> {
    /// The analysed trace's session: its trace is the selection, its
    /// devices hold the idle segments, its blame columns say who to name.
    pub session: &'a Session<'a>,
    /// The string pool every string column points into.
    pub pool: &'a StrPool,
}

fn frame(columns: Vec<Column>) -> PolarsResult<DataFrame> {
    DataFrame::new_infer_height(columns)
}

/// A row link as the tables write it: the row's index, or null.
fn row(r: Option<OpRow>) -> Option<u32> {
    r.map(OpRow::get)
}

fn nonempty(strings: &Strings, id: StrId) -> Str<'_> {
    if id == Strings::EMPTY {
        Str::Null
    } else {
        Str::Trace(id, strings.get(id))
    }
}

fn op_name(trace: &Trace, r: Option<OpRow>) -> Str<'_> {
    match r {
        Some(o) => Str::Trace(trace.cpu_ops.name[o.index()], trace.op_name(r).unwrap_or("")),
        None => Str::Null,
    }
}

/// A source frame as the analysis shows it (the user's frame out of a
/// stack), as a view into the stack's string.
fn source(strings: &Strings, id: StrId) -> Str<'_> {
    if id == Strings::EMPTY {
        return Str::Null;
    }
    Str::Trace(id, display_source(strings.get(id)))
}

fn gpu_kind(k: GpuKind) -> &'static str {
    match k {
        GpuKind::Kernel => "kernel",
        GpuKind::Memcpy => "memcpy",
        GpuKind::Memset => "memset",
        GpuKind::Sync => "sync",
    }
}

fn copy_kind(k: CopyKind) -> Option<&'static str> {
    match k {
        CopyKind::None => None,
        CopyKind::HtoD => Some("HtoD"),
        CopyKind::DtoH => Some("DtoH"),
        CopyKind::DtoD => Some("DtoD"),
        CopyKind::HtoH => Some("HtoH"),
        CopyKind::PtoP => Some("PtoP"),
    }
}

fn cpu_kind(k: CpuOpKind) -> &'static str {
    match k {
        CpuOpKind::Operator => "operator",
        CpuOpKind::UserAnnotation => "user_annotation",
        CpuOpKind::PythonFunction => "python_function",
        CpuOpKind::ProfilerStep => "profiler_step",
        CpuOpKind::Other => "other",
    }
}

/// `.gaps`: one row per idle segment of each device (every idle nanosecond
/// of the window, one cause each); `dur_ns` sums to the device's idle time.
pub fn gaps(inp: &Inputs) -> PolarsResult<DataFrame> {
    let t = inp.session.trace();
    let segs: Vec<(u32, &IdleSegment)> = inp
        .session
        .devices()
        .iter()
        .flat_map(|d| d.segments.iter().map(move |s| (d.device, s)))
        .collect();
    let s = &t.strings;
    frame(vec![
        ints::<UInt32Type>("device", segs.iter().map(|(d, _)| *d).collect()),
        ints::<Int64Type>("start_ns", segs.iter().map(|(_, g)| g.start).collect()),
        ints::<Int64Type>("dur_ns", segs.iter().map(|(_, g)| g.dur()).collect()),
        inp.pool
            .column("cause", s, segs.iter().map(|(_, g)| Str::Name(g.cause.name()))),
        inp.pool
            .column("operator", s, segs.iter().map(|(_, g)| op_name(t, g.op))),
        inp.pool.column(
            "annotation",
            s,
            segs.iter().map(|(_, g)| op_name(t, g.annotation)),
        ),
        inp.pool
            .column("source", s, segs.iter().map(|(_, g)| source(s, g.source))),
        opt_ints::<UInt32Type>("op_row", segs.iter().map(|(_, g)| row(g.op))),
    ])
}

/// `.steps`: one row per selected step and device, with its breakdown and
/// its idle time by cause.
pub fn steps(inp: &Inputs) -> PolarsResult<DataFrame> {
    let rows: Vec<_> = inp
        .session
        .analysis()
        .steps
        .iter()
        .flat_map(|s| s.devices.iter().map(move |d| (s, d)))
        .collect();
    let b = |f: fn(&gapscope_analyzers::breakdown::Breakdown) -> i64| -> Vec<i64> {
        rows.iter().map(|(_, d)| f(&d.breakdown)).collect()
    };
    let mut cols = vec![
        ints::<UInt64Type>("step", rows.iter().map(|(s, _)| s.step).collect()),
        ints::<UInt32Type>("device", rows.iter().map(|(_, d)| d.device).collect()),
        ints::<Int64Type>("start_ns", rows.iter().map(|(s, _)| s.start_ns).collect()),
        ints::<Int64Type>(
            "dur_ns",
            rows.iter().map(|(s, _)| s.end_ns - s.start_ns).collect(),
        ),
        ints::<Int64Type>("compute_ns", b(|b| b.compute_ns)),
        ints::<Int64Type>("communication_ns", b(|b| b.communication_ns)),
        ints::<Int64Type>("memcpy_ns", b(|b| b.memcpy_ns)),
        ints::<Int64Type>("memset_ns", b(|b| b.memset_ns)),
        ints::<Int64Type>("idle_ns", b(|b| b.idle_ns)),
    ];
    for cause in Cause::ALL {
        cols.push(ints::<Int64Type>(
            &format!("idle_{}_ns", cause.name()),
            rows.iter().map(|(_, d)| d.idle_by_cause_ns.get(cause)).collect(),
        ));
    }
    frame(cols)
}

/// `.idle_by_cause`: one row per device and cause (every cause, zeros
/// included, in the order of `Cause::ALL`) over the whole window.
pub fn idle_by_cause(inp: &Inputs) -> PolarsResult<DataFrame> {
    let rows: Vec<_> = inp
        .session
        .analysis()
        .devices
        .iter()
        .flat_map(|d| Cause::ALL.into_iter().map(move |c| (d, c)))
        .collect();
    let share = |part: i64, whole: i64| {
        if whole > 0 {
            part as f64 / whole as f64
        } else {
            0.0
        }
    };
    let s = &inp.session.trace().strings;
    frame(vec![
        ints::<UInt32Type>("device", rows.iter().map(|(d, _)| d.device).collect()),
        inp.pool
            .column("cause", s, rows.iter().map(|(_, c)| Str::Name(c.name()))),
        ints::<Int64Type>(
            "idle_ns",
            rows.iter().map(|(d, c)| d.idle_by_cause_ns.get(*c)).collect(),
        ),
        floats(
            "share_of_idle",
            rows.iter()
                .map(|(d, c)| share(d.idle_by_cause_ns.get(*c), d.breakdown.idle_ns))
                .collect(),
        ),
        floats(
            "share_of_window",
            rows.iter()
                .map(|(d, c)| share(d.idle_by_cause_ns.get(*c), d.breakdown.window_ns))
                .collect(),
        ),
    ])
}

/// `.kernels`: one row per kernel, copy and memset in the window (sync
/// records are waits, not work, and are left out), with the operator that
/// launched it.
pub fn kernels(inp: &Inputs) -> PolarsResult<DataFrame> {
    let t = inp.session.trace();
    let g = &t.gpu;
    let s = &t.strings;
    let rows: Vec<usize> = (0..g.len()).filter(|&i| g.is_busy(i)).collect();
    let launch = |i: usize| t.links.gpu_launch[i];
    let op_row = |i: usize| launch(i).and_then(|r| t.links.runtime_op[r.index()]);
    let cx = inp.session.blame();
    let grid = |k: usize| rows.iter().map(|&i| g.grid[i][k]).collect::<Vec<u32>>();
    let block = |k: usize| rows.iter().map(|&i| g.block[i][k]).collect::<Vec<u32>>();
    frame(vec![
        ints::<UInt32Type>("device", rows.iter().map(|&i| g.device[i]).collect()),
        ints::<Int64Type>("stream", rows.iter().map(|&i| g.stream[i]).collect()),
        ints::<Int64Type>("start_ns", rows.iter().map(|&i| g.start[i]).collect()),
        ints::<Int64Type>("dur_ns", rows.iter().map(|&i| g.dur(i)).collect()),
        inp.pool
            .column("kind", s, rows.iter().map(|&i| Str::Name(gpu_kind(g.kind[i])))),
        inp.pool.column(
            "name",
            s,
            rows.iter().map(|&i| Str::Trace(g.name[i], s.get(g.name[i]))),
        ),
        ints::<UInt64Type>("correlation", rows.iter().map(|&i| g.correlation[i]).collect()),
        ints::<UInt64Type>("bytes", rows.iter().map(|&i| g.bytes[i]).collect()),
        inp.pool.column(
            "copy_kind",
            s,
            rows.iter()
                .map(|&i| copy_kind(g.copy_kind[i]).map_or(Str::Null, Str::Name)),
        ),
        ints::<UInt32Type>("grid_x", grid(0)),
        ints::<UInt32Type>("grid_y", grid(1)),
        ints::<UInt32Type>("grid_z", grid(2)),
        ints::<UInt32Type>("block_x", block(0)),
        ints::<UInt32Type>("block_y", block(1)),
        ints::<UInt32Type>("block_z", block(2)),
        ints::<UInt32Type>("registers", rows.iter().map(|&i| g.registers[i]).collect()),
        ints::<UInt32Type>(
            "shared_mem_bytes",
            rows.iter().map(|&i| g.shared_mem[i]).collect(),
        ),
        opt_floats(
            "est_achieved_occupancy_pct",
            rows.iter().map(|&i| g.occupancy_pct[i].map(f64::from)),
        ),
        inp.pool.column(
            "launch",
            s,
            rows.iter().map(|&i| match launch(i) {
                Some(r) => Str::Trace(t.runtime.name[r.index()], s.get(t.runtime.name[r.index()])),
                None => Str::Null,
            }),
        ),
        inp.pool.column(
            "operator",
            s,
            rows.iter()
                .map(|&i| op_row(i).map_or(Str::Null, |r| op_name(t, cx.operator[r.index()]))),
        ),
        inp.pool.column(
            "annotation",
            s,
            rows.iter()
                .map(|&i| op_row(i).map_or(Str::Null, |r| op_name(t, cx.annotation[r.index()]))),
        ),
        inp.pool.column(
            "source",
            s,
            rows.iter()
                .map(|&i| op_row(i).map_or(Str::Null, |r| source(s, cx.source[r.index()]))),
        ),
        opt_ints::<UInt32Type>("op_row", rows.iter().map(|&i| row(op_row(i)))),
    ])
}

/// `.ops`: one row per CPU range in the window (operators, annotations,
/// Python frames, steps); `row` is what `op_row` elsewhere refers to.
pub fn ops(inp: &Inputs) -> PolarsResult<DataFrame> {
    let t = inp.session.trace();
    let o = &t.cpu_ops;
    let s = &t.strings;
    let n = o.len();
    let thread = |i: usize| o.thread[i].0 as usize;
    frame(vec![
        ints::<UInt32Type>("row", (0..n as u32).collect()),
        ints::<Int64Type>("pid", (0..n).map(|i| t.threads.pid[thread(i)]).collect()),
        ints::<Int64Type>("tid", (0..n).map(|i| t.threads.tid[thread(i)]).collect()),
        ints::<Int64Type>("start_ns", o.start.clone()),
        ints::<Int64Type>("dur_ns", (0..n).map(|i| o.end[i] - o.start[i]).collect()),
        inp.pool
            .column("name", s, (0..n).map(|i| Str::Trace(o.name[i], s.get(o.name[i])))),
        inp.pool
            .column("kind", s, (0..n).map(|i| Str::Name(cpu_kind(o.kind[i])))),
        ints::<UInt32Type>("depth", (0..n).map(|i| u32::from(o.depth[i])).collect()),
        opt_ints::<UInt32Type>("parent", (0..n).map(|i| row(o.parent[i]))),
        opt_ints::<UInt64Type>(
            "external_id",
            (0..n).map(|i| (o.external_id[i] != 0).then_some(o.external_id[i])),
        ),
        opt_ints::<Int64Type>(
            "sequence",
            (0..n).map(|i| (o.sequence[i] >= 0).then_some(o.sequence[i])),
        ),
        inp.pool
            .column("shapes", s, (0..n).map(|i| nonempty(s, o.shapes[i]))),
        inp.pool
            .column("source", s, (0..n).map(|i| nonempty(s, o.source[i]))),
    ])
}

/// `.launches`: one row per launch (a runtime or driver call that put work
/// on a GPU; a graph launch is one), with its CPU time, GPU time and the
/// delay between them.
pub fn launches(inp: &Inputs) -> PolarsResult<DataFrame> {
    let t = inp.session.trace();
    let r = &t.runtime;
    let s = &t.strings;
    let l = inp.session.launches();
    let call = |x: &Launch| x.runtime_row.index();
    let thread = |x: &Launch| r.thread[call(x)].0 as usize;
    let op_row = |x: &Launch| t.links.runtime_op[call(x)];
    let cx = inp.session.blame();
    frame(vec![
        ints::<UInt32Type>("device", l.iter().map(|x| x.device).collect()),
        inp.pool.column(
            "api",
            s,
            l.iter()
                .map(|x| Str::Trace(r.name[call(x)], s.get(r.name[call(x)]))),
        ),
        ints::<Int64Type>("pid", l.iter().map(|x| t.threads.pid[thread(x)]).collect()),
        ints::<Int64Type>("tid", l.iter().map(|x| t.threads.tid[thread(x)]).collect()),
        ints::<Int64Type>("start_ns", l.iter().map(|x| r.start[call(x)]).collect()),
        ints::<Int64Type>("cpu_dur_ns", l.iter().map(|x| x.cpu_duration).collect()),
        ints::<Int64Type>("launch_delay_ns", l.iter().map(|x| x.launch_delay).collect()),
        ints::<Int64Type>("gpu_dur_ns", l.iter().map(|x| x.gpu_duration).collect()),
        ints::<UInt32Type>("gpu_rows", l.iter().map(|x| x.gpu_rows).collect()),
        bools("graph", l.iter().map(|x| x.gpu_rows > 1)),
        ints::<UInt64Type>("correlation", l.iter().map(|x| r.correlation[call(x)]).collect()),
        inp.pool.column(
            "operator",
            s,
            l.iter()
                .map(|x| op_row(x).map_or(Str::Null, |o| op_name(t, cx.operator[o.index()]))),
        ),
        opt_ints::<UInt32Type>("op_row", l.iter().map(|x| row(op_row(x)))),
    ])
}

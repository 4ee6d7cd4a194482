//! Name, category and args of each exported slice.
//!
//! Args land in the trace processor's `args` table as `debug.<name>`. Ids
//! are plain ints (not TrackEvent's `correlation_id` field, which shows up as
//! a `tp:#N` string) so they can be joined in SQL.

use super::tracks::Src;
use super::writer::{Arg, ArgValue, Name};
use super::FindingSpan;
use crate::export::idle::IdleGap;
use gapscope_collectors::trace::{ApiKind, CopyKind, CpuOpKind, GpuKind, MemKind, Strings, Trace};

/// Category of a CPU range, named as Kineto names them.
pub fn op_category(k: CpuOpKind) -> &'static str {
    match k {
        CpuOpKind::Operator => "cpu_op",
        CpuOpKind::UserAnnotation => "user_annotation",
        CpuOpKind::PythonFunction => "python_function",
        CpuOpKind::ProfilerStep => "profiler_step",
        CpuOpKind::Other => "cpu_other",
    }
}

/// Category of a GPU row, named as Kineto names them.
pub fn gpu_category(k: GpuKind) -> &'static str {
    match k {
        GpuKind::Kernel => "kernel",
        GpuKind::Memcpy => "gpu_memcpy",
        GpuKind::Memset => "gpu_memset",
        GpuKind::Sync => "cuda_sync",
    }
}

/// Short name of a copy direction.
pub fn copy_kind_name(k: CopyKind) -> &'static str {
    match k {
        CopyKind::None => "",
        CopyKind::HtoD => "HtoD",
        CopyKind::DtoH => "DtoH",
        CopyKind::DtoD => "DtoD",
        CopyKind::HtoH => "HtoH",
        CopyKind::PtoP => "PtoP",
    }
}

fn mem_name(k: MemKind) -> &'static str {
    match k {
        MemKind::Unknown => "",
        MemKind::Pageable => "pageable",
        MemKind::Pinned => "pinned",
        MemKind::Device => "device",
        MemKind::Managed => "managed",
        MemKind::Array => "array",
    }
}

/// Slice name, category and args of `src`.
pub fn describe<'a>(
    trace: &'a Trace,
    idle: &'a [IdleGap<'a>],
    findings: &'a [FindingSpan],
    src: Src,
    args: &mut Vec<Arg<'a>>,
) -> (Name<'a>, &'static str) {
    args.clear();
    let id = |name, v| Arg {
        name,
        value: ArgValue::Id(v),
    };
    let int = |name, v: i64| Arg {
        name,
        value: ArgValue::Int(v),
    };
    let text = |name, v: &'a str| Arg {
        name,
        value: ArgValue::Str(v),
    };
    match src {
        Src::Op(o) => {
            let o = o as usize;
            let ops = &trace.cpu_ops;
            if ops.external_id[o] != 0 {
                args.push(int("external_id", ops.external_id[o] as i64));
            }
            if ops.sequence[o] >= 0 {
                args.push(int("sequence", ops.sequence[o]));
            }
            if ops.shapes[o] != Strings::EMPTY {
                args.push(id("shapes", ops.shapes[o]));
            }
            if ops.source[o] != Strings::EMPTY {
                args.push(id("source", ops.source[o]));
            }
            (Name::Id(ops.name[o]), op_category(ops.kind[o]))
        }
        Src::Call(r) => {
            let r = r as usize;
            let rt = &trace.runtime;
            if rt.correlation[r] != 0 {
                args.push(int("correlation_id", rt.correlation[r] as i64));
            }
            if rt.external_id[r] != 0 {
                args.push(int("external_id", rt.external_id[r] as i64));
            }
            let cat = match rt.api[r] {
                ApiKind::Runtime => "cuda_runtime",
                ApiKind::Driver => "cuda_driver",
            };
            (Name::Id(rt.name[r]), cat)
        }
        Src::Gpu(g) => {
            let g = g as usize;
            let gpu = &trace.gpu;
            if gpu.correlation[g] != 0 {
                args.push(int("correlation_id", gpu.correlation[g] as i64));
            }
            if gpu.external_id[g] != 0 {
                args.push(int("external_id", gpu.external_id[g] as i64));
            }
            launching_op(trace, g, args);
            if gpu.bytes[g] != 0 {
                args.push(int("bytes", gpu.bytes[g] as i64));
                let dur = gpu.dur(g);
                if dur > 0 {
                    // bytes per ns is GB/s.
                    args.push(Arg {
                        name: "bandwidth_gbps",
                        value: ArgValue::Double(gpu.bytes[g] as f64 / dur as f64),
                    });
                }
            }
            let ck = copy_kind_name(gpu.copy_kind[g]);
            if !ck.is_empty() {
                args.push(text("copy_kind", ck));
            }
            for (name, m) in [("src_mem", gpu.src_mem[g]), ("dst_mem", gpu.dst_mem[g])] {
                if m != MemKind::Unknown {
                    args.push(text(name, mem_name(m)));
                }
            }
            for (name, d) in [("grid", gpu.grid[g]), ("block", gpu.block[g])] {
                if d != [0; 3] {
                    args.push(Arg {
                        name,
                        value: ArgValue::Dims(d),
                    });
                }
            }
            if gpu.registers[g] != 0 {
                args.push(int("registers", gpu.registers[g] as i64));
            }
            if gpu.shared_mem[g] != 0 {
                args.push(int("shared_mem", gpu.shared_mem[g] as i64));
            }
            if let Some(pct) = gpu.occupancy_pct[g] {
                args.push(Arg {
                    name: "est_achieved_occupancy_pct",
                    value: ArgValue::Double(f64::from(pct)),
                });
            }
            (Name::Id(gpu.name[g]), gpu_category(gpu.kind[g]))
        }
        Src::Marker(m) => (Name::Id(trace.markers.name[m as usize]), "gpu_user_annotation"),
        Src::Idle(k) => {
            // The names `Session::segment_names` gives: operator and
            // annotation by their rows' names, the source as reports show it.
            let gap = &idle[k as usize];
            let seg = gap.segment;
            for (name, op) in [("op", seg.op), ("annotation", seg.annotation)] {
                if let Some(o) = op {
                    args.push(id(name, trace.cpu_ops.name[o.index()]));
                }
            }
            if let Some(v) = gap.source(trace) {
                args.push(text("source", v));
            }
            (Name::Text(gap.cause()), "gpu_idle")
        }
        Src::Finding(k) => {
            let f = &findings[k as usize];
            for (name, v) in &f.args {
                args.push(text(name, v));
            }
            (Name::Text(&f.title), "finding")
        }
    }
}

/// The operator whose call launched GPU row `g`, its shapes, and the
/// nearest source line up its ancestors.
fn launching_op<'a>(trace: &'a Trace, g: usize, args: &mut Vec<Arg<'a>>) {
    let Some(op) = trace.links.gpu_launch[g].and_then(|c| trace.links.runtime_op[c.index()]) else {
        return;
    };
    let ops = &trace.cpu_ops;
    let o = op.index();
    args.push(Arg {
        name: "op",
        value: ArgValue::Id(ops.name[o]),
    });
    if ops.shapes[o] != Strings::EMPTY {
        args.push(Arg {
            name: "shapes",
            value: ArgValue::Id(ops.shapes[o]),
        });
    }
    if let Some(src) = trace
        .ancestors(Some(op))
        .find(|a| ops.source[a.index()] != Strings::EMPTY)
    {
        args.push(Arg {
            name: "source",
            value: ArgValue::Id(ops.source[src.index()]),
        });
    }
}

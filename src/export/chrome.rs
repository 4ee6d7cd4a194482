//! `--format chrome`: Kineto-compatible Chrome trace JSON, streamed.
//!
//! It is what the PyTorch profiler writes, so our own importer, HTA and the
//! TensorBoard plugin read it back: `X` events with Kineto's categories
//! (`cpu_op`, `user_annotation`, `cuda_runtime`, `kernel`, `gpu_memcpy`,
//! ...), Kineto's arg names (`correlation`, `External id`, `device`,
//! `stream`, `grid`, ...), and `ac2g` flows from each launch to its GPU work.
//! Times are µs with exactly 3 decimals, written from integer ns (never
//! through f64), so a round trip is exact.

use crate::export::perfetto::args::gpu_category;
use gapscope_collectors::trace::{ApiKind, CpuOpKind, MarkerKind, Strings, Trace};
use std::io::{self, Write};

/// What the Chrome writer emitted.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct ChromeCounts {
    /// `X` events.
    pub complete_events: u64,
    /// Flow pairs (`s` + `f`).
    pub flows: u64,
    /// All events, metadata included.
    pub events: u64,
}

/// Formats absolute ns as µs with 3 decimals (`1712195495519689.047`).
fn us(ns: i64) -> String {
    let sign = if ns < 0 { "-" } else { "" };
    let a = ns.unsigned_abs();
    format!("{sign}{}.{:03}", a / 1000, a % 1000)
}

fn json_str(s: &str) -> String {
    serde_json::to_string(s).expect("a str always serializes")
}

/// The Kineto category of a CPU range. ProfilerStep ranges are
/// `user_annotation` in current Kineto.
fn op_category(k: CpuOpKind) -> &'static str {
    match k {
        CpuOpKind::Operator => "cpu_op",
        CpuOpKind::UserAnnotation | CpuOpKind::ProfilerStep => "user_annotation",
        CpuOpKind::PythonFunction => "python_function",
        CpuOpKind::Other => "Trace",
    }
}

struct Out<W: Write> {
    w: W,
    counts: ChromeCounts,
}

impl<W: Write> Out<W> {
    fn event(&mut self, body: std::fmt::Arguments<'_>) -> io::Result<()> {
        if self.counts.events > 0 {
            self.w.write_all(b",\n")?;
        }
        self.counts.events += 1;
        self.w.write_fmt(body)
    }
}

/// Writes `trace` as Kineto-style Chrome JSON to `out` (which should be
/// buffered).
pub fn write<W: Write>(trace: &Trace, out: W) -> io::Result<ChromeCounts> {
    let mut o = Out {
        w: out,
        counts: ChromeCounts::default(),
    };
    let origin = trace.meta.origin_ns;
    let t = |ns: i64| us(origin + ns);
    let s = |id| json_str(trace.strings.get(id));
    o.w.write_all(b"{\"schemaVersion\": 1,\n\"deviceProperties\": [")?;
    for i in 0..trace.devices.len() {
        let d = &trace.devices;
        write!(
            o.w,
            "{}{{\"id\": {}, \"name\": {}, \"totalGlobalMem\": {}, \"computeMajor\": {}, \"computeMinor\": {}, \"numSms\": {}}}",
            if i > 0 { ", " } else { "" },
            d.id[i],
            s(d.name[i]),
            d.memory_bytes[i],
            d.compute_capability[i].0,
            d.compute_capability[i].1,
            d.sm_count[i]
        )?;
    }
    o.w.write_all(b"],\n\"traceEvents\": [\n")?;

    for i in 0..trace.threads.len() {
        let th = &trace.threads;
        if th.name[i] != Strings::EMPTY {
            o.event(format_args!(
                "{{\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": {}, \"tid\": {}, \"args\": {{\"name\": {}}}}}",
                th.pid[i],
                th.tid[i],
                s(th.name[i])
            ))?;
        }
    }
    let thread = |t: gapscope_collectors::trace::ThreadId| {
        (trace.threads.pid[t.0 as usize], trace.threads.tid[t.0 as usize])
    };

    let ops = &trace.cpu_ops;
    for i in 0..ops.len() {
        let (pid, tid) = thread(ops.thread[i]);
        let mut args = Vec::new();
        if ops.external_id[i] != 0 {
            args.push(format!("\"External id\": {}", ops.external_id[i]));
        }
        if ops.sequence[i] >= 0 {
            args.push(format!("\"Sequence number\": {}", ops.sequence[i]));
        }
        if ops.shapes[i] != Strings::EMPTY {
            let sh = trace.strings.get(ops.shapes[i]);
            // Kineto writes shapes as a JSON array; keep other text a string.
            let v = if serde_json::from_str::<serde_json::Value>(sh).is_ok() {
                sh.to_string()
            } else {
                json_str(sh)
            };
            args.push(format!("\"Input Dims\": {v}"));
        }
        if ops.source[i] != Strings::EMPTY {
            args.push(format!("\"Source\": {}", s(ops.source[i])));
        }
        o.counts.complete_events += 1;
        o.event(format_args!(
            "{{\"ph\": \"X\", \"cat\": \"{}\", \"name\": {}, \"pid\": {pid}, \"tid\": {tid}, \"ts\": {}, \"dur\": {}, \"args\": {{{}}}}}",
            op_category(ops.kind[i]),
            s(ops.name[i]),
            t(ops.start[i]),
            us(ops.end[i] - ops.start[i]),
            args.join(", ")
        ))?;
    }

    let rt = &trace.runtime;
    for i in 0..rt.len() {
        let (pid, tid) = thread(rt.thread[i]);
        let cat = match rt.api[i] {
            ApiKind::Runtime => "cuda_runtime",
            ApiKind::Driver => "cuda_driver",
        };
        o.counts.complete_events += 1;
        o.event(format_args!(
            "{{\"ph\": \"X\", \"cat\": \"{cat}\", \"name\": {}, \"pid\": {pid}, \"tid\": {tid}, \"ts\": {}, \"dur\": {}, \"args\": {{\"correlation\": {}, \"External id\": {}}}}}",
            s(rt.name[i]),
            t(rt.start[i]),
            us(rt.end[i] - rt.start[i]),
            rt.correlation[i],
            rt.external_id[i]
        ))?;
        if rt.correlation[i] != 0 && trace.links.runtime_gpu_count[i] > 0 {
            o.event(format_args!(
                "{{\"ph\": \"s\", \"id\": {}, \"pid\": {pid}, \"tid\": {tid}, \"ts\": {}, \"cat\": \"ac2g\", \"name\": \"ac2g\"}}",
                rt.correlation[i],
                t(rt.start[i])
            ))?;
        }
    }

    let g = &trace.gpu;
    let mut flowed = std::collections::HashSet::new();
    for i in 0..g.len() {
        let mut args = vec![
            format!("\"device\": {}", g.device[i]),
            format!("\"stream\": {}", g.stream[i]),
            format!("\"correlation\": {}", g.correlation[i]),
            format!("\"External id\": {}", g.external_id[i]),
        ];
        if g.grid[i] != [0; 3] {
            args.push(format!(
                "\"grid\": [{}, {}, {}]",
                g.grid[i][0], g.grid[i][1], g.grid[i][2]
            ));
        }
        if g.block[i] != [0; 3] {
            args.push(format!(
                "\"block\": [{}, {}, {}]",
                g.block[i][0], g.block[i][1], g.block[i][2]
            ));
        }
        if g.registers[i] != 0 {
            args.push(format!("\"registers per thread\": {}", g.registers[i]));
        }
        if g.shared_mem[i] != 0 {
            args.push(format!("\"shared memory\": {}", g.shared_mem[i]));
        }
        if let Some(pct) = g.occupancy_pct[i] {
            args.push(format!("\"est. achieved occupancy %\": {pct}"));
        }
        if g.bytes[i] != 0 {
            args.push(format!("\"bytes\": {}", g.bytes[i]));
            if g.dur(i) > 0 {
                args.push(format!(
                    "\"memory bandwidth (GB/s)\": {}",
                    g.bytes[i] as f64 / g.dur(i) as f64
                ));
            }
        }
        o.counts.complete_events += 1;
        o.event(format_args!(
            "{{\"ph\": \"X\", \"cat\": \"{}\", \"name\": {}, \"pid\": {}, \"tid\": {}, \"ts\": {}, \"dur\": {}, \"args\": {{{}}}}}",
            gpu_category(g.kind[i]),
            s(g.name[i]),
            g.device[i],
            g.stream[i],
            t(g.start[i]),
            us(g.dur(i)),
            args.join(", ")
        ))?;
        // One "f" per correlation id: Chrome flows bind one start to one end.
        if trace.links.gpu_launch[i].is_some() && g.correlation[i] != 0 && flowed.insert(g.correlation[i]) {
            o.counts.flows += 1;
            o.event(format_args!(
                "{{\"ph\": \"f\", \"id\": {}, \"pid\": {}, \"tid\": {}, \"ts\": {}, \"cat\": \"ac2g\", \"name\": \"ac2g\", \"bp\": \"e\"}}",
                g.correlation[i],
                g.device[i],
                g.stream[i],
                t(g.start[i])
            ))?;
        }
    }

    let m = &trace.markers;
    // A marker with no device is written as device `u32::MAX`, as before
    // the column was an `Option`.
    let device = |i: usize| i64::from(m.device[i].unwrap_or(u32::MAX));
    for i in 0..m.len() {
        let name = s(m.name[i]);
        let (pid, tid) = match m.thread[i] {
            Some(t) => thread(t),
            None => (device(i), m.stream[i]),
        };
        match m.kind[i] {
            MarkerKind::Instant => o.event(format_args!(
                "{{\"ph\": \"i\", \"s\": \"t\", \"cat\": \"cpu_instant_event\", \"name\": {name}, \"pid\": {pid}, \"tid\": {tid}, \"ts\": {}}}",
                t(m.start[i])
            ))?,
            MarkerKind::Counter => o.event(format_args!(
                "{{\"ph\": \"C\", \"name\": {name}, \"pid\": {pid}, \"tid\": {tid}, \"ts\": {}, \"args\": {{{name}: {}}}}}",
                t(m.start[i]),
                m.value[i]
            ))?,
            MarkerKind::GpuAnnotation | MarkerKind::ProfilerOverhead | MarkerKind::CounterRange => {
                let cat = match m.kind[i] {
                    MarkerKind::GpuAnnotation => "gpu_user_annotation",
                    MarkerKind::CounterRange => "cuda_profiler_range",
                    _ => "overhead",
                };
                o.counts.complete_events += 1;
                o.event(format_args!(
                    "{{\"ph\": \"X\", \"cat\": \"{cat}\", \"name\": {name}, \"pid\": {pid}, \"tid\": {tid}, \"ts\": {}, \"dur\": {}, \"args\": {{\"device\": {}, \"stream\": {}}}}}",
                    t(m.start[i]),
                    us(m.end[i] - m.start[i]),
                    device(i),
                    m.stream[i]
                ))?
            }
        }
    }
    o.w.write_all(b"\n],\n\"displayTimeUnit\": \"ms\"}\n")?;
    o.w.flush()?;
    Ok(o.counts)
}

#[cfg(test)]
mod tests {
    use super::us;

    #[test]
    fn microseconds_are_exact_from_ns() {
        assert_eq!(us(1_712_195_495_519_689_047), "1712195495519689.047");
        assert_eq!(us(5), "0.005");
        assert_eq!(us(-1_500), "-1.500");
    }
}

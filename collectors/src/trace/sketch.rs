//! [`Sketch`]: the trace of a timeline drawn by hand, for tests and
//! examples. A test draws its CPU and GPU tracks in a comment, then writes
//! the same rows here, one call per bar of the drawing:
//!
//! ```
//! use gapscope_collectors::trace::*;
//!
//! // µs          0    10   20   30
//! // thread 1    [ProfilerStep#1.....]
//! //             [aten::mm.]
//! //               [L1]
//! // stream 7            [gemm..]
//! let t = Sketch::in_units(1_000)
//!     .op(0, 30, "ProfilerStep#1")
//!     .op(0, 10, "aten::mm")
//!     .call(2, 4, "cudaLaunchKernel", 1)
//!     .named_kernel("gemm", 7, 10, 20, 1)
//!     .finish();
//! assert_eq!(t.gpu.start[0], 10_000);
//! let call = t.links.gpu_launch[0].expect("linked by correlation id 1");
//! assert_eq!(t.op_name(t.links.runtime_op[call.index()]), Some("aten::mm"));
//! ```
//!
//! Times are multiplied by the sketch's unit (1 ns unless made with
//! [`Sketch::in_units`]) and kept as given: the origin is 0, never the
//! first event. Rows go to the current thread (`pid 1, tid 1` until
//! [`Sketch::on_thread`]) and the current device (0 until
//! [`Sketch::on_device`]).

use super::*;

/// A trace under construction, row by row as a timeline is drawn.
pub struct Sketch {
    b: TraceBuilder,
    unit: Ns,
    thread: ThreadId,
    device: u32,
    /// GPU rows wait here until [`Sketch::finish`], so that the last one
    /// can still be given a grid or memory kinds.
    gpu: Vec<GpuActivity>,
}

impl Default for Sketch {
    fn default() -> Self {
        Self::new()
    }
}

impl Sketch {
    /// A sketch in ns, with one CPU thread (pid 1, tid 1) and device 0.
    pub fn new() -> Self {
        Self::in_units(1)
    }

    /// A sketch whose times are in units of `unit` ns (1 000 for a drawing
    /// in µs).
    pub fn in_units(unit: Ns) -> Self {
        let mut b = TraceBuilder::new();
        b.set_origin(0);
        let thread = b.thread(1, 1);
        Sketch {
            b,
            unit,
            thread,
            device: 0,
            gpu: Vec::new(),
        }
    }

    /// Later CPU rows and calls go to thread `tid` of process `pid`.
    pub fn on_thread(&mut self, pid: i64, tid: i64) -> &mut Self {
        self.thread = self.b.thread(pid, tid);
        self
    }

    /// The current thread.
    pub fn thread(&self) -> ThreadId {
        self.thread
    }

    /// Later GPU rows go to device `device`.
    pub fn on_device(&mut self, device: u32) -> &mut Self {
        self.device = device;
        self
    }

    /// The builder underneath, for rows this sketch has no verb for.
    pub fn builder(&mut self) -> &mut TraceBuilder {
        &mut self.b
    }

    /// `t` in ns.
    pub fn ns(&self, t: Ns) -> Ns {
        t * self.unit
    }

    /// A CPU range whose kind its name tells: `ProfilerStep#N` a step,
    /// `file.py(N): fn` a Python frame, `aten::…` an operator, anything else
    /// a user annotation.
    pub fn op(&mut self, start: Ns, end: Ns, name: &str) -> &mut Self {
        let kind = match name {
            n if n.starts_with("ProfilerStep#") => CpuOpKind::ProfilerStep,
            n if n.contains(".py(") => CpuOpKind::PythonFunction,
            n if n.starts_with("aten::") => CpuOpKind::Operator,
            _ => CpuOpKind::UserAnnotation,
        };
        self.op_as(start, end, name, kind)
    }

    /// A CPU range of the given kind (2021-era traces store
    /// `record_function` ranges as [`CpuOpKind::Operator`]).
    pub fn op_as(&mut self, start: Ns, end: Ns, name: &str, kind: CpuOpKind) -> &mut Self {
        let n = self.b.intern(name);
        let (s, e) = (self.ns(start), self.ns(end));
        self.b.push_cpu_op(CpuOp::new(self.thread, s, e, n, kind));
        self
    }

    /// An operator with its input shapes (Kineto's `Input Dims`, as text).
    pub fn op_shaped(&mut self, start: Ns, end: Ns, name: &str, shapes: &str) -> &mut Self {
        let (n, sh) = (self.b.intern(name), self.b.intern(shapes));
        let (s, e) = (self.ns(start), self.ns(end));
        let mut op = CpuOp::new(self.thread, s, e, n, CpuOpKind::Operator);
        op.shapes = sh;
        self.b.push_cpu_op(op);
        self
    }

    /// `ProfilerStep#n`.
    pub fn step(&mut self, n: u64, start: Ns, end: Ns) -> &mut Self {
        self.op_as(start, end, &format!("ProfilerStep#{n}"), CpuOpKind::ProfilerStep)
    }

    /// A runtime call with correlation id `corr` (0: none).
    pub fn call(&mut self, start: Ns, end: Ns, name: &str, corr: u64) -> &mut Self {
        let n = self.b.intern(name);
        let (s, e) = (self.ns(start), self.ns(end));
        self.b.push_runtime(RuntimeCall::new(self.thread, s, e, n, corr));
        self
    }

    /// A GPU row of any kind.
    pub fn gpu(
        &mut self,
        kind: GpuKind,
        stream: i64,
        start: Ns,
        end: Ns,
        name: &str,
        corr: u64,
    ) -> &mut Self {
        let n = self.b.intern(name);
        let (s, e) = (self.ns(start), self.ns(end));
        self.gpu
            .push(GpuActivity::new(kind, self.device, stream, s, e, n, corr));
        self
    }

    /// A kernel named `kernel`.
    pub fn kernel(&mut self, stream: i64, start: Ns, end: Ns, corr: u64) -> &mut Self {
        self.named_kernel("kernel", stream, start, end, corr)
    }

    /// A kernel.
    pub fn named_kernel(&mut self, name: &str, stream: i64, start: Ns, end: Ns, corr: u64) -> &mut Self {
        self.gpu(GpuKind::Kernel, stream, start, end, name, corr)
    }

    /// An NCCL all-reduce kernel (communication).
    pub fn nccl(&mut self, stream: i64, start: Ns, end: Ns) -> &mut Self {
        self.named_kernel("ncclKernel_AllReduce_RING_LL_Sum_float", stream, start, end, 0)
    }

    /// A copy named `Memcpy` in direction `kind`.
    pub fn copy(&mut self, stream: i64, start: Ns, end: Ns, corr: u64, kind: CopyKind) -> &mut Self {
        self.gpu(GpuKind::Memcpy, stream, start, end, "Memcpy", corr);
        self.last_gpu().copy_kind = kind;
        self
    }

    /// A memset of device memory.
    pub fn memset(&mut self, stream: i64, start: Ns, end: Ns) -> &mut Self {
        self.gpu(GpuKind::Memset, stream, start, end, "Memset (Device)", 0)
    }

    /// A Kineto `cuda_sync` record (`Stream Sync`, `Stream Wait Event`,
    /// `Event Sync`): a wait, never busy.
    pub fn sync_record(&mut self, name: &str, stream: i64, start: Ns, end: Ns, corr: u64) -> &mut Self {
        self.gpu(GpuKind::Sync, stream, start, end, name, corr)
    }

    /// The last GPU row's memory kinds and bytes.
    pub fn memory(&mut self, src: MemKind, dst: MemKind, bytes: u64) -> &mut Self {
        let g = self.last_gpu();
        (g.src_mem, g.dst_mem, g.bytes) = (src, dst, bytes);
        self
    }

    /// The last GPU row's grid.
    pub fn grid(&mut self, grid: [u32; 3]) -> &mut Self {
        self.last_gpu().grid = grid;
        self
    }

    /// The last GPU row's estimated achieved occupancy, percent.
    pub fn occupancy(&mut self, pct: f32) -> &mut Self {
        self.last_gpu().occupancy_pct = Some(pct);
        self
    }

    /// A marker of `kind`.
    pub fn marker(&mut self, kind: MarkerKind, start: Ns, end: Ns, name: &str) -> &mut Self {
        let n = self.b.intern(name);
        let (s, e) = (self.ns(start), self.ns(end));
        self.b.push_marker(Marker::new(kind, s, e, n));
        self
    }

    /// A profiler-overhead range (`CUPTI buffer flush`) for every device.
    pub fn profiler_overhead(&mut self, start: Ns, end: Ns) -> &mut Self {
        self.marker(MarkerKind::ProfilerOverhead, start, end, "CUPTI buffer flush")
    }

    /// The current device's properties: `name` with `sm_count` SMs.
    pub fn device(&mut self, name: &str, sm_count: u32) -> &mut Self {
        let name = self.b.intern(name);
        self.b.device(Device {
            id: self.device,
            name,
            sm_count,
            memory_bytes: 0,
            compute_capability: (9, 0),
        });
        self
    }

    /// The finished trace (the sketch is left empty).
    pub fn finish(&mut self) -> Trace {
        let mut b = std::mem::take(&mut self.b);
        for g in self.gpu.drain(..) {
            b.push_gpu(g);
        }
        b.finish()
    }

    fn last_gpu(&mut self) -> &mut GpuActivity {
        self.gpu.last_mut().expect("a GPU row drawn before")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_land_where_drawn() {
        let t = Sketch::in_units(10)
            .step(1, 0, 10)
            .on_thread(1, 2)
            .call(1, 2, "cudaMemcpyAsync", 5)
            .on_device(3)
            .copy(7, 2, 4, 5, CopyKind::HtoD)
            .memory(MemKind::Pageable, MemKind::Device, 64)
            .kernel(7, 5, 6, 0)
            .grid([2, 1, 1])
            .profiler_overhead(8, 9)
            .finish();
        assert_eq!((t.cpu_ops.start[0], t.cpu_ops.end[0]), (0, 100));
        assert_eq!(t.runtime.thread[0], ThreadId(1));
        assert_eq!(t.gpu.device, vec![3, 3]);
        assert_eq!((t.gpu.src_mem[0], t.gpu.bytes[0]), (MemKind::Pageable, 64));
        assert_eq!(t.gpu.grid[1], [2, 1, 1]);
        assert_eq!(t.links.gpu_launch[0], Some(CallRow::new(0)));
        assert_eq!(t.markers.start[0], 80);
    }
}

//! The columnar tables of a [`Trace`](super::Trace): one struct of `Vec`s per
//! kind of thing, plus a row struct to build and read single rows.
//!
//! Every table is declared once with [`columnar_table!`], which writes the
//! column struct, the row struct, `push`, `row`, `len` and `permute`, so the
//! columns of a table can never disagree on length or order.

use super::rows::{CollectiveRow, OpRow};
use super::strings::StrId;
use super::Ns;
use serde::{Deserialize, Serialize};

/// A CPU thread: an index into [`ThreadTable`]. Only valid for its trace.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct ThreadId(pub u32);

/// Keeps the elements of `column` whose `keep` is true, in order, in place.
fn keep_marked<T>(column: &mut Vec<T>, keep: &[bool]) {
    let mut k = keep.iter();
    column.retain(|_| *k.next().expect("a mark per row"));
}

macro_rules! columnar_table {
    (
        $(#[$tmeta:meta])* $table:ident,
        $(#[$rmeta:meta])* $row:ident {
            $( $(#[$fmeta:meta])* $field:ident : $ty:ty ),* $(,)?
        }
    ) => {
        $(#[$rmeta])*
        #[derive(Clone, Debug, PartialEq)]
        pub struct $row {
            $( $(#[$fmeta])* pub $field: $ty, )*
        }

        $(#[$tmeta])*
        #[derive(Clone, Debug, Default)]
        pub struct $table {
            $( $(#[$fmeta])* pub $field: Vec<$ty>, )*
        }

        impl $table {
            /// Appends one row.
            pub fn push(&mut self, row: $row) {
                $( self.$field.push(row.$field); )*
            }

            /// Row `i`, copied out of the columns.
            pub fn row(&self, i: usize) -> $row {
                $row { $( $field: self.$field[i].clone(), )* }
            }

            /// Number of rows.
            pub fn len(&self) -> usize {
                columnar_table!(@first self $( $field )*).len()
            }

            /// True when the table has no rows.
            pub fn is_empty(&self) -> bool {
                self.len() == 0
            }

            /// Reorders every column so that new row `i` is old row
            /// `order[i]` (`order` has an index per row). In place, through
            /// one scratch buffer for all the columns.
            pub fn permute(&mut self, order: &[u32]) {
                let mut scratch = Vec::new();
                $( super::reorder::gather_in_place(&mut self.$field, order, &mut scratch); )*
            }

            /// The rows of `parts`, in order: the first part's columns
            /// grown in place to hold the others' rows (a mapped column
            /// grows without a copy, so joining a small part to a big one
            /// costs the small one), each later part's column freed as
            /// soon as it is moved, so the parts and the result never
            /// stand whole side by side.
            pub fn concat(parts: Vec<Self>) -> Self {
                let rows: usize = parts.iter().map(|p| p.len()).sum();
                let mut parts = parts.into_iter();
                let mut out = parts.next().unwrap_or_default();
                let mut rest: Vec<Self> = parts.collect();
                $(
                    // Amortized: a column joined again and again (a gzip
                    // trace's, a window at a time) is not copied each time.
                    out.$field.reserve(rows - out.$field.len());
                    for p in &mut rest {
                        out.$field.extend(std::mem::take(&mut p.$field));
                    }
                )*
                out
            }

            /// Keeps only the rows for which `keep[i]` is true.
            pub fn retain_rows(&mut self, keep: &[bool]) {
                $( keep_marked(&mut self.$field, keep); )*
            }
        }
    };
    (@first $s:ident $first:ident $( $rest:ident )*) => { $s.$first };
}

/// What a GPU activity row is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GpuKind {
    /// A kernel (compute or collective communication).
    Kernel,
    /// A memory copy.
    Memcpy,
    /// A memory set.
    Memset,
    /// A CUDA synchronization record (stream/event/context sync, stream wait
    /// event). It marks a wait, not work: never counted as busy.
    Sync,
}

/// Direction of a memory copy.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum CopyKind {
    /// Not a copy, or not known.
    None,
    /// Host to device.
    HtoD,
    /// Device to host.
    DtoH,
    /// Device to device (same GPU).
    DtoD,
    /// Host to host.
    HtoH,
    /// Peer to peer (between GPUs).
    PtoP,
}

/// Memory kind at one end of a copy or memset.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MemKind {
    /// Not given.
    Unknown,
    /// Pageable host memory: the copy is staged and synchronous for the host.
    Pageable,
    /// Pinned (page-locked) host memory.
    Pinned,
    /// Device memory.
    Device,
    /// Managed (unified) memory.
    Managed,
    /// A CUDA array.
    Array,
}

/// What a CPU-side range is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CpuOpKind {
    /// A framework operator (`aten::...`, autograd nodes): Kineto's `cpu_op`.
    Operator,
    /// A user range (`record_function`, NVTX push/pop, Optimizer.step#...).
    UserAnnotation,
    /// A Python frame (`with_stack` / python tracer): `file.py(42): fn`.
    PythonFunction,
    /// A `ProfilerStep#N` range: one training step.
    ProfilerStep,
    /// Any other CPU range (e.g. `Trace` spans, unknown categories).
    Other,
}

/// Which API family a runtime call belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApiKind {
    /// CUDA or HIP runtime API (`cudaLaunchKernel`, `hipMemcpyAsync`).
    Runtime,
    /// CUDA driver API (`cuLaunchKernel`).
    Driver,
}

/// What a marker row is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MarkerKind {
    /// A point in time (`ph: i`).
    Instant,
    /// A counter sample (`ph: C`); `value` holds the number.
    Counter,
    /// A range drawn on a GPU stream that is not GPU work (Kineto's
    /// `gpu_user_annotation`: the GPU-side span of a user range).
    GpuAnnotation,
    /// A profiler overhead or buffer-flush range (never the user's fault).
    ProfilerOverhead,
    /// A CUPTI range-profiler record (Kineto's `cuda_profiler_range`): one
    /// kernel's or range's hardware counters. The profiler records these in
    /// place of kernel, copy and memset activity, and their times are the
    /// measurement's, not the run's.
    CounterRange,
}

columnar_table!(
    /// Kernels, copies, memsets and sync records, one row each. Sorted by
    /// `(start, end)` once the trace is finished.
    GpuActivityTable,
    /// One kernel, memcpy, memset or sync record.
    GpuActivity {
        /// GPU index.
        device: u32,
        /// Stream id as the source gave it (`-1` when unknown).
        stream: i64,
        /// Start, ns since the trace origin.
        start: Ns,
        /// End, ns since the trace origin (`end >= start`).
        end: Ns,
        /// Kernel, memcpy, memset or sync.
        kind: GpuKind,
        /// Kernel name, or the copy/memset description.
        name: StrId,
        /// Correlation id shared with the launching runtime call (0: none).
        correlation: u64,
        /// External id (operator link) when the source has one (0: none).
        external_id: u64,
        /// Bytes moved or set (0 for kernels).
        bytes: u64,
        /// Copy direction ([`CopyKind::None`] when not a copy).
        copy_kind: CopyKind,
        /// Source memory kind of a copy, or the memory of a memset.
        src_mem: MemKind,
        /// Destination memory kind of a copy.
        dst_mem: MemKind,
        /// Grid dimensions of a kernel (0s when unknown).
        grid: [u32; 3],
        /// Block dimensions of a kernel (0s when unknown).
        block: [u32; 3],
        /// Registers per thread (0 when unknown).
        registers: u32,
        /// Shared memory per block, static + dynamic, bytes (0 when unknown).
        shared_mem: u32,
        /// A kernel's estimated achieved occupancy, percent (0 to 100): the
        /// share of the SM's warp slots its blocks keep busy, as the source
        /// computed it (Kineto's `est. achieved occupancy %`); `None` when
        /// the source does not say.
        occupancy_pct: Option<f32>,
        /// The collective this kernel runs, when the source says: its own
        /// args, else those of the innermost operator around its launch
        /// that has them (linked by [`TraceBuilder::finish`](super::TraceBuilder::finish)).
        collective: Option<CollectiveRow>,
    }
);

columnar_table!(
    /// CUDA/HIP runtime and driver API calls on CPU threads. Sorted by
    /// `(start, end)` once the trace is finished.
    RuntimeCallTable,
    /// One runtime or driver API call.
    RuntimeCall {
        /// The CPU thread that made the call.
        thread: ThreadId,
        /// Start, ns since the trace origin.
        start: Ns,
        /// End, ns since the trace origin.
        end: Ns,
        /// API function name (`cudaLaunchKernel`, `cudaStreamSynchronize`).
        name: StrId,
        /// Runtime or driver API.
        api: ApiKind,
        /// Correlation id shared with the GPU activity it caused (0: none).
        correlation: u64,
        /// External id of the enclosing operator when the source has one (0: none).
        external_id: u64,
    }
);

columnar_table!(
    /// Operators, user annotations, Python frames and ProfilerSteps. Sorted
    /// by `(thread, start, end descending)` once the trace is finished, so
    /// each thread's rows are contiguous and every parent precedes its
    /// children.
    CpuOpTable,
    /// One CPU-side range.
    CpuOp {
        /// The CPU thread it ran on.
        thread: ThreadId,
        /// Start, ns since the trace origin.
        start: Ns,
        /// End, ns since the trace origin.
        end: Ns,
        /// Operator / annotation / frame name.
        name: StrId,
        /// What kind of range this is.
        kind: CpuOpKind,
        /// Kineto's `External id` (0: none).
        external_id: u64,
        /// Autograd sequence number (-1: none); links forward and backward ops.
        sequence: i64,
        /// Input shapes as the source wrote them (`[[32, 3], []]`), or empty.
        shapes: StrId,
        /// Source location (`train.py(42): step`) when known, or empty.
        source: StrId,
        /// The collective this range issues, when its args say
        /// (`record_param_comms`).
        collective: Option<CollectiveRow>,
        /// Enclosing row on the same thread (`None` at top level). Set by
        /// [`TraceBuilder::finish`](super::TraceBuilder::finish).
        parent: Option<OpRow>,
        /// Nesting depth, 0 at top level. Set by `finish`.
        depth: u16,
    }
);

columnar_table!(
    /// Instants, counters, GPU-side annotations and profiler overhead.
    /// Sorted by `start` once the trace is finished.
    MarkerTable,
    /// One marker.
    Marker {
        /// What the marker is.
        kind: MarkerKind,
        /// CPU thread, for CPU-side markers (`None` for the others).
        thread: Option<ThreadId>,
        /// GPU index, for GPU-side markers (`None` for the others).
        device: Option<u32>,
        /// Stream for GPU-side markers (-1: none).
        stream: i64,
        /// Start, ns since the trace origin.
        start: Ns,
        /// End (equal to `start` for instants and counters).
        end: Ns,
        /// Marker or counter name.
        name: StrId,
        /// Counter value (0 for other kinds).
        value: f64,
    }
);

columnar_table!(
    /// The identity of collectives, as the source gives it: one row per
    /// event whose args name a collective (PyTorch's `record_param_comms`
    /// operator, and the NCCL kernels Kineto copies those args to).
    /// [`GpuActivity::collective`] and [`CpuOp::collective`] point here.
    CollectiveTable,
    /// One collective's identity.
    Collective {
        /// `Collective name` as written (`allreduce`, `_allgather_base`),
        /// or empty.
        name: StrId,
        /// `Process Group Name` (`"0"`, `"3"`): the same on every rank for
        /// the same group; empty when not given.
        group: StrId,
        /// `Process Group Description` (`default_pg`), or empty.
        group_desc: StrId,
        /// `Process Group Ranks` as written (`[0, 1]`), or empty.
        group_ranks: StrId,
        /// `Group size` (0: not given).
        group_size: u32,
        /// `Seq`: the collective's sequence number in its process group
        /// (PyTorch 2.5 and later), the same on every member rank.
        seq: Option<u64>,
    }
);

columnar_table!(
    /// The CPU threads seen in the trace.
    ThreadTable,
    /// One CPU thread.
    Thread {
        /// Process id. String pids of the source are mapped to negative ids.
        pid: i64,
        /// Thread id. String tids of the source are mapped to negative ids.
        tid: i64,
        /// Thread name, or the original string id, or empty.
        name: StrId,
    }
);

columnar_table!(
    /// GPU properties, when the source gives them.
    DeviceTable,
    /// One GPU.
    Device {
        /// GPU index, as used by [`GpuActivity::device`].
        id: u32,
        /// Marketing name (`NVIDIA H100 80GB HBM3`), or empty.
        name: StrId,
        /// Number of SMs (0: unknown).
        sm_count: u32,
        /// Global memory in bytes (0: unknown).
        memory_bytes: u64,
        /// Compute capability major, minor (0, 0: unknown).
        compute_capability: (u32, u32),
    }
);

impl ThreadTable {
    /// The thread with this pid and tid, if present.
    pub fn find(&self, pid: i64, tid: i64) -> Option<ThreadId> {
        (0..self.len())
            .find(|&i| self.pid[i] == pid && self.tid[i] == tid)
            .map(|i| ThreadId(i as u32))
    }
}

impl GpuActivityTable {
    /// Duration of row `i` in ns.
    pub fn dur(&self, i: usize) -> Ns {
        self.end[i] - self.start[i]
    }

    /// True when row `i` is work that occupies the device (kernel, memcpy,
    /// memset), false for sync records.
    pub fn is_busy(&self, i: usize) -> bool {
        self.kind[i] != GpuKind::Sync
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn threads(tids: &[i64]) -> ThreadTable {
        let mut t = ThreadTable::default();
        for &tid in tids {
            t.push(Thread {
                pid: 1,
                tid,
                name: StrId(tid as u32),
            });
        }
        t
    }

    #[test]
    fn concat_keeps_the_parts_rows_in_order_and_grows_the_first_in_place() {
        let joined = ThreadTable::concat(vec![
            threads(&[1, 2]),
            threads(&[]),
            threads(&[3]),
            threads(&[4, 5]),
        ]);
        assert_eq!(joined.tid, [1, 2, 3, 4, 5]);
        assert_eq!(joined.pid, [1; 5]);
        assert_eq!(joined.name, [1, 2, 3, 4, 5].map(StrId));
        // A first part with room: its columns are the result's, not copied
        // (a gzip trace's rows are joined a buffer at a time).
        let mut first = ThreadTable::default();
        first.tid.reserve(8);
        first.pid.reserve(8);
        first.name.reserve(8);
        first.push(threads(&[7]).row(0));
        let at = first.tid.as_ptr();
        let joined = ThreadTable::concat(vec![first, threads(&[8, 9])]);
        assert_eq!((joined.tid.as_ptr(), &joined.tid[..]), (at, &[7, 8, 9][..]));
        // No parts, no rows.
        assert!(ThreadTable::concat(Vec::new()).is_empty());
    }
}

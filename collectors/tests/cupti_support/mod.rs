//! Byte-exact CUPTI activity buffers for the decoder tests and the oracle
//! test. Every offset here is written out by hand from the CUPTI headers
//! (12.9.79 and 13.0.85), independently of the decoder's layout tables, so
//! the tests check the decoder rather than restate it.

#![allow(dead_code)]

use gapscope_collectors::cupti::decode::MapResolver;
use gapscope_collectors::trace::ApiKind;

/// What differs between the two CUPTI families in these buffers.
#[derive(Clone, Copy, Debug)]
pub struct Ver {
    /// `cuptiGetVersion`.
    pub api: u32,
    /// Kernel record size (Kernel9: 208, Kernel10: 216).
    pub kernel_size: usize,
}

/// CUPTI 12.9.
pub const V12: Ver = Ver {
    api: 28,
    kernel_size: 208,
};
/// CUPTI 13.0.
pub const V13: Ver = Ver {
    api: 130001,
    kernel_size: 216,
};

/// One record's bytes, zeroed, written field by field.
#[derive(Clone, Debug)]
pub struct Rec(pub Vec<u8>);

impl Rec {
    pub fn new(kind: u32, size: usize) -> Rec {
        Rec(vec![0; size]).u32(0, kind)
    }
    pub fn u8(mut self, off: usize, v: u8) -> Rec {
        self.0[off] = v;
        self
    }
    pub fn u16(mut self, off: usize, v: u16) -> Rec {
        self.0[off..off + 2].copy_from_slice(&v.to_le_bytes());
        self
    }
    pub fn u32(mut self, off: usize, v: u32) -> Rec {
        self.0[off..off + 4].copy_from_slice(&v.to_le_bytes());
        self
    }
    pub fn u64(mut self, off: usize, v: u64) -> Rec {
        self.0[off..off + 8].copy_from_slice(&v.to_le_bytes());
        self
    }
}

/// Records packed back to back, as CUPTI packs them.
#[derive(Clone, Debug, Default)]
pub struct Buffer {
    pub bytes: Vec<u8>,
    /// Where each record starts.
    pub offsets: Vec<usize>,
}

impl Buffer {
    pub fn push(&mut self, r: Rec) -> &mut Self {
        self.offsets.push(self.bytes.len());
        self.bytes.extend_from_slice(&r.0);
        self
    }

    /// The bytes in 8-byte-aligned storage (CUPTI's buffers are aligned).
    pub fn aligned(&self) -> Vec<u64> {
        let mut v = vec![0u64; self.bytes.len().div_ceil(8)];
        for (i, b) in self.bytes.iter().enumerate() {
            v[i / 8] |= (*b as u64) << (8 * (i % 8));
        }
        v
    }
}

pub const KIND_MEMCPY: u32 = 1;
pub const KIND_MEMSET: u32 = 2;
pub const KIND_DRIVER: u32 = 4;
pub const KIND_RUNTIME: u32 = 5;
pub const KIND_CONCURRENT_KERNEL: u32 = 10;
pub const KIND_MARKER: u32 = 12;
pub const KIND_OVERHEAD: u32 = 17;
pub const KIND_MEMCPY2: u32 = 22;
pub const KIND_STREAM: u32 = 37;
pub const KIND_SYNCHRONIZATION: u32 = 38;
pub const KIND_EXTERNAL_CORRELATION: u32 = 39;

/// `CUpti_ActivityAPI` (40 bytes).
pub fn api(kind: u32, cbid: u32, start: u64, end: u64, pid: u32, tid: u32, corr: u32) -> Rec {
    Rec::new(kind, 40)
        .u32(4, cbid)
        .u64(8, start)
        .u64(16, end)
        .u32(24, pid)
        .u32(28, tid)
        .u32(32, corr)
        .u32(36, 0)
}

/// A kernel's fields.
#[derive(Clone, Debug)]
pub struct Kernel {
    pub start: u64,
    pub end: u64,
    pub device: u32,
    pub context: u32,
    pub stream: u32,
    pub grid: [u32; 3],
    pub block: [u32; 3],
    pub registers: u16,
    pub static_smem: u32,
    pub dynamic_smem: u32,
    pub corr: u32,
    pub name: u64,
    pub graph_node: u64,
    pub graph: u32,
}

/// `CUpti_ActivityKernel9` (12.9) or `Kernel10` (13.0).
pub fn kernel(v: Ver, k: &Kernel) -> Rec {
    let mut r = Rec::new(KIND_CONCURRENT_KERNEL, v.kernel_size)
        .u16(6, k.registers)
        .u64(16, k.start)
        .u64(24, k.end)
        .u64(32, k.end)
        .u32(40, k.device)
        .u32(44, k.context)
        .u32(48, k.stream)
        .u32(52, k.grid[0])
        .u32(56, k.grid[1])
        .u32(60, k.grid[2])
        .u32(64, k.block[0])
        .u32(68, k.block[1])
        .u32(72, k.block[2])
        .u32(76, k.static_smem)
        .u32(80, k.dynamic_smem)
        .u32(92, k.corr)
        .u64(96, 1234)
        .u64(104, k.name)
        .u64(144, k.graph_node)
        .u32(156, k.graph)
        .u32(168, 3)
        .u32(172, 1);
    if v.kernel_size == 216 {
        r = r.u8(208, 0);
    }
    r
}

/// `CUpti_ActivityMemcpy6` (96 bytes).
#[allow(clippy::too_many_arguments)]
pub fn memcpy(
    copy_kind: u8,
    src: u8,
    dst: u8,
    flags: u8,
    bytes: u64,
    start: u64,
    end: u64,
    (device, context, stream): (u32, u32, u32),
    corr: u32,
) -> Rec {
    Rec::new(KIND_MEMCPY, 96)
        .u8(4, copy_kind)
        .u8(5, src)
        .u8(6, dst)
        .u8(7, flags)
        .u64(8, bytes)
        .u64(16, start)
        .u64(24, end)
        .u32(32, device)
        .u32(36, context)
        .u32(40, stream)
        .u32(44, corr)
        .u64(88, 1)
}

/// `CUpti_ActivityMemcpyPtoP4` (96 bytes).
pub fn peer(
    bytes: u64,
    start: u64,
    end: u64,
    (device, context, stream): (u32, u32, u32),
    src_dev: u32,
    dst_dev: u32,
    corr: u32,
) -> Rec {
    Rec::new(KIND_MEMCPY2, 96)
        .u8(4, 10)
        .u8(5, 3)
        .u8(6, 3)
        .u8(7, 1)
        .u64(8, bytes)
        .u64(16, start)
        .u64(24, end)
        .u32(32, device)
        .u32(36, context)
        .u32(40, stream)
        .u32(44, src_dev)
        .u32(48, context)
        .u32(52, dst_dev)
        .u32(56, context + 1)
        .u32(60, corr)
}

/// `CUpti_ActivityMemset4` (88 bytes).
#[allow(clippy::too_many_arguments)]
pub fn memset(
    value: u32,
    bytes: u64,
    start: u64,
    end: u64,
    (device, context, stream): (u32, u32, u32),
    corr: u32,
    flags: u16,
    memory_kind: u16,
) -> Rec {
    Rec::new(KIND_MEMSET, 88)
        .u32(4, value)
        .u64(8, bytes)
        .u64(16, start)
        .u64(24, end)
        .u32(32, device)
        .u32(36, context)
        .u32(40, stream)
        .u32(44, corr)
        .u16(48, flags)
        .u16(50, memory_kind)
}

/// `CUpti_ActivitySynchronization2` (56 bytes).
pub fn sync(sync_type: u32, start: u64, end: u64, corr: u32, context: u32, stream: u32, event: u32) -> Rec {
    Rec::new(KIND_SYNCHRONIZATION, 56)
        .u32(4, sync_type)
        .u64(8, start)
        .u64(16, end)
        .u32(24, corr)
        .u32(28, context)
        .u32(32, stream)
        .u32(36, event)
        .u64(40, 0)
        .u32(48, 0)
}

/// `CUpti_ActivityExternalCorrelation` (24 bytes).
pub fn external(kind: u32, id: u64, corr: u32) -> Rec {
    Rec::new(KIND_EXTERNAL_CORRELATION, 24)
        .u32(4, kind)
        .u64(8, id)
        .u32(16, corr)
}

/// `CUpti_ActivityMarker2` (56 bytes), on a thread.
pub fn marker(flags: u32, ts: u64, id: u32, pid: u32, tid: u32, name: u64) -> Rec {
    Rec::new(KIND_MARKER, 56)
        .u32(4, flags)
        .u64(8, ts)
        .u32(16, id)
        .u32(20, 2)
        .u32(24, pid)
        .u32(28, tid)
        .u64(40, name)
        .u64(48, 0)
}

/// `CUpti_ActivityOverhead3` (56 bytes), on a thread.
pub fn overhead(kind: u32, start: u64, end: u64, pid: u32, tid: u32) -> Rec {
    Rec::new(KIND_OVERHEAD, 56)
        .u32(4, kind)
        .u32(8, 2)
        .u32(12, pid)
        .u32(16, tid)
        .u64(24, start)
        .u64(32, end)
        .u32(40, 0)
        .u64(48, 0)
}

/// Absolute time origin of the sample buffer (ns since the Unix epoch).
pub const T0: u64 = 1_763_900_000_000_000_000;
pub const PID: u32 = 4242;
pub const TID: u32 = 4243;
pub const GEMM: u64 = 0x7f00_0000_1000;
pub const RELU: u64 = 0x7f00_0000_2000;
pub const FORWARD: u64 = 0x7f00_0000_3000;
pub const CHECKPOINT: u64 = 0x7f00_0000_4000;

/// A buffer with one or more records of every decoded kind, plus one of a
/// kind gapscope skips, and the names its addresses and cbids stand for.
pub fn sample(v: Ver) -> (Buffer, MapResolver) {
    let t = |us: u64| T0 + us * 1000;
    let mut b = Buffer::default();
    b.push(marker(2, t(0), 5, PID, TID, FORWARD))
        .push(external(3, 77, 10))
        .push(api(KIND_RUNTIME, 211, t(10), t(15), PID, TID, 10))
        .push(kernel(
            v,
            &Kernel {
                start: t(20),
                end: t(120),
                device: 0,
                context: 1,
                stream: 7,
                grid: [128, 2, 1],
                block: [256, 1, 1],
                registers: 64,
                static_smem: 1024,
                dynamic_smem: 2048,
                corr: 10,
                name: GEMM,
                graph_node: 0,
                graph: 0,
            },
        ))
        .push(api(KIND_RUNTIME, 41, t(16), t(30), PID, TID, 11))
        .push(memcpy(1, 1, 3, 0, 4 << 20, t(121), t(400), (0, 1, 7), 11))
        .push(api(KIND_RUNTIME, 41, t(31), t(33), PID, TID, 12))
        .push(memcpy(1, 2, 3, 1, 1 << 20, t(401), t(450), (0, 1, 7), 12))
        .push(memcpy(2, 3, 2, 1, 8192, t(451), t(455), (0, 1, 7), 12))
        .push(peer(1 << 16, t(460), t(470), (0, 1, 8), 0, 1, 13))
        .push(api(KIND_RUNTIME, 51, t(34), t(36), PID, TID, 14))
        .push(memset(0, 4096, t(471), t(472), (0, 1, 7), 14, 1, 3))
        .push(marker(4, t(500), 5, PID, TID, 0))
        .push(api(KIND_RUNTIME, 131, t(37), t(480), PID, TID, 15))
        .push(sync(3, t(38), t(479), 15, 1, 7, 0xFFFF_FFFF))
        .push(sync(4, t(481), t(490), 16, 1, 0xFFFF_FFFF, 0xFFFF_FFFF))
        .push(api(KIND_DRIVER, 307, t(491), t(495), PID, TID + 1, 17))
        .push(kernel(
            v,
            &Kernel {
                start: t(496),
                end: t(499),
                device: 0,
                context: 1,
                stream: 9,
                grid: [1, 1, 1],
                block: [32, 1, 1],
                registers: 16,
                static_smem: 0,
                dynamic_smem: 0,
                corr: 17,
                name: RELU,
                graph_node: 99,
                graph: 3,
            },
        ))
        .push(marker(1, t(497), 6, PID, TID, CHECKPOINT))
        .push(overhead(0x20000, t(1), t(9), PID, TID))
        .push(Rec::new(KIND_STREAM, 24).u32(4, 1).u32(8, 1).u32(12, 7));
    let mut names = MapResolver::default();
    for (a, s) in [
        (GEMM, "sm90_gemm_kernel"),
        (RELU, "relu_kernel"),
        (FORWARD, "forward"),
        (CHECKPOINT, "checkpoint"),
    ] {
        names.strings.insert(a, s.into());
    }
    for (api, cbid, s) in [
        (ApiKind::Runtime, 211, "cudaLaunchKernel_v7000"),
        (ApiKind::Runtime, 41, "cudaMemcpyAsync_v3020"),
        (ApiKind::Runtime, 51, "cudaMemsetAsync_v3020"),
        (ApiKind::Runtime, 131, "cudaStreamSynchronize_v3020"),
        (ApiKind::Driver, 307, "cuLaunchKernel"),
    ] {
        names.apis.insert((api, cbid), s.into());
    }
    (b, names)
}

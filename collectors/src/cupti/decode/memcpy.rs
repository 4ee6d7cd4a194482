//! Copy records: `CUpti_ActivityMemcpy6` (kind MEMCPY) and
//! `CUpti_ActivityMemcpyPtoP4` (kind MEMCPY2, peer to peer). Both have the
//! same size and offsets in CUPTI 12.9 and 13.0; 13.0's Memcpy6 turns a pad
//! byte into `isDeviceLaunched`.

use super::reader::{Reader, Short};

/// Direction of a copy (`CUpti_ActivityMemcpyKind`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CopyDirection {
    /// 1.
    HtoD,
    /// 2.
    DtoH,
    /// 3.
    HtoA,
    /// 4.
    AtoH,
    /// 5.
    AtoA,
    /// 6.
    AtoD,
    /// 7.
    DtoA,
    /// 8.
    DtoD,
    /// 9.
    HtoH,
    /// 10.
    PtoP,
    /// Any other value, kept.
    Unknown(u8),
}

impl CopyDirection {
    /// From the record's byte.
    pub fn from_raw(v: u8) -> Self {
        use CopyDirection::*;
        match v {
            1 => HtoD,
            2 => DtoH,
            3 => HtoA,
            4 => AtoH,
            5 => AtoA,
            6 => AtoD,
            7 => DtoA,
            8 => DtoD,
            9 => HtoH,
            10 => PtoP,
            n => Unknown(n),
        }
    }
}

/// Where a copy's or memset's memory lives (`CUpti_ActivityMemoryKind`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MemoryKind {
    /// 1: pageable host memory.
    Pageable,
    /// 2: pinned host memory.
    Pinned,
    /// 3: device memory.
    Device,
    /// 4: a CUDA array.
    Array,
    /// 5: managed memory.
    Managed,
    /// 6: static device memory.
    DeviceStatic,
    /// 7: static managed memory.
    ManagedStatic,
    /// 0 or any other value, kept.
    Unknown(u32),
}

impl MemoryKind {
    /// From the record's value.
    pub fn from_raw(v: u32) -> Self {
        use MemoryKind::*;
        match v {
            1 => Pageable,
            2 => Pinned,
            3 => Device,
            4 => Array,
            5 => Managed,
            6 => DeviceStatic,
            7 => ManagedStatic,
            n => Unknown(n),
        }
    }
}

/// Byte offsets of `CUpti_ActivityMemcpy6`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemcpyLayout {
    /// The header's struct name.
    pub struct_name: &'static str,
    /// `sizeof` the struct.
    pub size: usize,
    /// `copyKind` (u8).
    pub copy_kind: usize,
    /// `srcKind` (u8).
    pub src_kind: usize,
    /// `dstKind` (u8).
    pub dst_kind: usize,
    /// `flags` (u8; bit 0: async).
    pub flags: usize,
    /// `bytes` (u64).
    pub bytes: usize,
    /// `start` (u64 ns).
    pub start: usize,
    /// `end` (u64 ns).
    pub end: usize,
    /// `deviceId` (u32).
    pub device_id: usize,
    /// `contextId` (u32).
    pub context_id: usize,
    /// `streamId` (u32).
    pub stream_id: usize,
    /// `correlationId` (u32).
    pub correlation_id: usize,
    /// `graphNodeId` (u64).
    pub graph_node_id: usize,
    /// `graphId` (u32).
    pub graph_id: usize,
    /// `copyCount` (u64).
    pub copy_count: usize,
    /// `isDeviceLaunched` (u8), 13.0 only.
    pub is_device_launched: Option<usize>,
}

/// CUPTI 12.9's Memcpy6.
pub const MEMCPY6_V12: MemcpyLayout = MemcpyLayout {
    struct_name: "CUpti_ActivityMemcpy6",
    size: 96,
    copy_kind: 4,
    src_kind: 5,
    dst_kind: 6,
    flags: 7,
    bytes: 8,
    start: 16,
    end: 24,
    device_id: 32,
    context_id: 36,
    stream_id: 40,
    correlation_id: 44,
    graph_node_id: 64,
    graph_id: 72,
    copy_count: 88,
    is_device_launched: None,
};

/// CUPTI 13.0's Memcpy6.
pub const MEMCPY6_V13: MemcpyLayout = MemcpyLayout {
    is_device_launched: Some(84),
    ..MEMCPY6_V12
};

/// One memory copy on a device.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemcpyRecord {
    /// Direction.
    pub direction: CopyDirection,
    /// Source memory.
    pub src: MemoryKind,
    /// Destination memory.
    pub dst: MemoryKind,
    /// Asynchronous copy (flag bit 0).
    pub is_async: bool,
    /// Bytes copied.
    pub bytes: u64,
    /// Start, ns.
    pub start: u64,
    /// End, ns.
    pub end: u64,
    /// CUPTI device id.
    pub device_id: u32,
    /// CUPTI context id.
    pub context_id: u32,
    /// CUPTI stream id.
    pub stream_id: u32,
    /// Correlation id of the API call.
    pub correlation_id: u32,
    /// Graph node id (0: none).
    pub graph_node_id: u64,
    /// Graph id (0: none).
    pub graph_id: u32,
    /// Copies folded into this record (batched copies).
    pub copy_count: u64,
}

/// Reads a Memcpy6 record.
pub fn parse(rec: &[u8], l: &MemcpyLayout) -> Result<MemcpyRecord, Short> {
    let mut r = Reader::new(rec);
    let v = MemcpyRecord {
        direction: CopyDirection::from_raw(r.u8(l.copy_kind)),
        src: MemoryKind::from_raw(r.u8(l.src_kind) as u32),
        dst: MemoryKind::from_raw(r.u8(l.dst_kind) as u32),
        is_async: r.u8(l.flags) & 1 != 0,
        bytes: r.u64(l.bytes),
        start: r.u64(l.start),
        end: r.u64(l.end),
        device_id: r.u32(l.device_id),
        context_id: r.u32(l.context_id),
        stream_id: r.u32(l.stream_id),
        correlation_id: r.u32(l.correlation_id),
        graph_node_id: r.u64(l.graph_node_id),
        graph_id: r.u32(l.graph_id),
        copy_count: r.u64(l.copy_count),
    };
    r.finish(v)
}

/// Byte offsets of `CUpti_ActivityMemcpyPtoP4` (same in 12.9 and 13.0).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PeerLayout {
    /// The header's struct name.
    pub struct_name: &'static str,
    /// `sizeof` the struct.
    pub size: usize,
    /// `copyKind` (u8).
    pub copy_kind: usize,
    /// `srcKind` (u8).
    pub src_kind: usize,
    /// `dstKind` (u8).
    pub dst_kind: usize,
    /// `flags` (u8).
    pub flags: usize,
    /// `bytes` (u64).
    pub bytes: usize,
    /// `start` (u64 ns).
    pub start: usize,
    /// `end` (u64 ns).
    pub end: usize,
    /// `deviceId` (u32): the device the copy ran on.
    pub device_id: usize,
    /// `contextId` (u32).
    pub context_id: usize,
    /// `streamId` (u32).
    pub stream_id: usize,
    /// `srcDeviceId` (u32).
    pub src_device_id: usize,
    /// `dstDeviceId` (u32).
    pub dst_device_id: usize,
    /// `correlationId` (u32).
    pub correlation_id: usize,
    /// `graphNodeId` (u64).
    pub graph_node_id: usize,
    /// `graphId` (u32).
    pub graph_id: usize,
}

/// `CUpti_ActivityMemcpyPtoP4`, both versions.
pub const PTOP4: PeerLayout = PeerLayout {
    struct_name: "CUpti_ActivityMemcpyPtoP4",
    size: 96,
    copy_kind: 4,
    src_kind: 5,
    dst_kind: 6,
    flags: 7,
    bytes: 8,
    start: 16,
    end: 24,
    device_id: 32,
    context_id: 36,
    stream_id: 40,
    src_device_id: 44,
    dst_device_id: 52,
    correlation_id: 60,
    graph_node_id: 72,
    graph_id: 80,
};

/// One peer-to-peer copy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PeerMemcpyRecord {
    /// Direction (normally [`CopyDirection::PtoP`]).
    pub direction: CopyDirection,
    /// Source memory.
    pub src: MemoryKind,
    /// Destination memory.
    pub dst: MemoryKind,
    /// Asynchronous copy.
    pub is_async: bool,
    /// Bytes copied.
    pub bytes: u64,
    /// Start, ns.
    pub start: u64,
    /// End, ns.
    pub end: u64,
    /// Device the copy ran on.
    pub device_id: u32,
    /// CUPTI context id.
    pub context_id: u32,
    /// CUPTI stream id.
    pub stream_id: u32,
    /// Source device.
    pub src_device_id: u32,
    /// Destination device.
    pub dst_device_id: u32,
    /// Correlation id of the API call.
    pub correlation_id: u32,
    /// Graph node id (0: none).
    pub graph_node_id: u64,
    /// Graph id (0: none).
    pub graph_id: u32,
}

/// Reads a MemcpyPtoP4 record.
pub fn parse_peer(rec: &[u8], l: &PeerLayout) -> Result<PeerMemcpyRecord, Short> {
    let mut r = Reader::new(rec);
    let v = PeerMemcpyRecord {
        direction: CopyDirection::from_raw(r.u8(l.copy_kind)),
        src: MemoryKind::from_raw(r.u8(l.src_kind) as u32),
        dst: MemoryKind::from_raw(r.u8(l.dst_kind) as u32),
        is_async: r.u8(l.flags) & 1 != 0,
        bytes: r.u64(l.bytes),
        start: r.u64(l.start),
        end: r.u64(l.end),
        device_id: r.u32(l.device_id),
        context_id: r.u32(l.context_id),
        stream_id: r.u32(l.stream_id),
        src_device_id: r.u32(l.src_device_id),
        dst_device_id: r.u32(l.dst_device_id),
        correlation_id: r.u32(l.correlation_id),
        graph_node_id: r.u64(l.graph_node_id),
        graph_id: r.u32(l.graph_id),
    };
    r.finish(v)
}

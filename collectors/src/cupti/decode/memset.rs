//! Memset records: `CUpti_ActivityMemset4` (kind MEMSET), 88 bytes in CUPTI
//! 12.9 and 13.0; 13.0 turns a pad byte into `isDeviceLaunched`.

use super::memcpy::MemoryKind;
use super::reader::{Reader, Short};

/// Byte offsets of `CUpti_ActivityMemset4`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemsetLayout {
    /// The header's struct name.
    pub struct_name: &'static str,
    /// `sizeof` the struct.
    pub size: usize,
    /// `value` (u32).
    pub value: usize,
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
    /// `flags` (u16; bit 0: async).
    pub flags: usize,
    /// `memoryKind` (u16).
    pub memory_kind: usize,
    /// `graphNodeId` (u64).
    pub graph_node_id: usize,
    /// `graphId` (u32).
    pub graph_id: usize,
    /// `isDeviceLaunched` (u8), 13.0 only.
    pub is_device_launched: Option<usize>,
}

/// CUPTI 12.9's Memset4.
pub const MEMSET4_V12: MemsetLayout = MemsetLayout {
    struct_name: "CUpti_ActivityMemset4",
    size: 88,
    value: 4,
    bytes: 8,
    start: 16,
    end: 24,
    device_id: 32,
    context_id: 36,
    stream_id: 40,
    correlation_id: 44,
    flags: 48,
    memory_kind: 50,
    graph_node_id: 64,
    graph_id: 72,
    is_device_launched: None,
};

/// CUPTI 13.0's Memset4.
pub const MEMSET4_V13: MemsetLayout = MemsetLayout {
    is_device_launched: Some(84),
    ..MEMSET4_V12
};

/// One memset on a device.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemsetRecord {
    /// The value written.
    pub value: u32,
    /// Bytes set.
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
    /// Asynchronous memset (flag bit 0).
    pub is_async: bool,
    /// The memory set.
    pub memory: MemoryKind,
    /// Graph node id (0: none).
    pub graph_node_id: u64,
    /// Graph id (0: none).
    pub graph_id: u32,
}

/// Reads a Memset4 record.
pub fn parse(rec: &[u8], l: &MemsetLayout) -> Result<MemsetRecord, Short> {
    let mut r = Reader::new(rec);
    let v = MemsetRecord {
        value: r.u32(l.value),
        bytes: r.u64(l.bytes),
        start: r.u64(l.start),
        end: r.u64(l.end),
        device_id: r.u32(l.device_id),
        context_id: r.u32(l.context_id),
        stream_id: r.u32(l.stream_id),
        correlation_id: r.u32(l.correlation_id),
        is_async: r.u16(l.flags) & 1 != 0,
        memory: MemoryKind::from_raw(r.u16(l.memory_kind) as u32),
        graph_node_id: r.u64(l.graph_node_id),
        graph_id: r.u32(l.graph_id),
    };
    r.finish(v)
}

//! Kernel records: `CUpti_ActivityKernel9` (CUPTI 12.9) and
//! `CUpti_ActivityKernel10` (CUPTI 13.0), kinds CONCURRENT_KERNEL and KERNEL.

use super::reader::{Reader, Short};

/// Byte offsets of the kernel fields we read. The two versions share every
/// offset; 13.0 appends `isDeviceLaunched` and grows to 216 bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KernelLayout {
    /// The header's struct name.
    pub struct_name: &'static str,
    /// `sizeof` the struct: how far CUPTI's iterator steps.
    pub size: usize,
    /// `registersPerThread` (u16).
    pub registers_per_thread: usize,
    /// `start` (u64 ns).
    pub start: usize,
    /// `end` (u64 ns).
    pub end: usize,
    /// `completed` (u64 ns).
    pub completed: usize,
    /// `deviceId` (u32).
    pub device_id: usize,
    /// `contextId` (u32).
    pub context_id: usize,
    /// `streamId` (u32).
    pub stream_id: usize,
    /// `gridX`, `gridY`, `gridZ` (i32 each, consecutive).
    pub grid_x: usize,
    /// `blockX`, `blockY`, `blockZ` (i32 each, consecutive).
    pub block_x: usize,
    /// `staticSharedMemory` (i32).
    pub static_shared_memory: usize,
    /// `dynamicSharedMemory` (i32).
    pub dynamic_shared_memory: usize,
    /// `correlationId` (u32).
    pub correlation_id: usize,
    /// `gridId` (i64).
    pub grid_id: usize,
    /// `name` (pointer to a C string owned by CUPTI).
    pub name: usize,
    /// `graphNodeId` (u64).
    pub graph_node_id: usize,
    /// `graphId` (u32).
    pub graph_id: usize,
    /// `channelID` (u32).
    pub channel_id: usize,
    /// `channelType` (u32).
    pub channel_type: usize,
    /// `isDeviceLaunched` (u8), 13.0 only.
    pub is_device_launched: Option<usize>,
}

/// CUPTI 12.9's kernel record.
pub const KERNEL9: KernelLayout = KernelLayout {
    struct_name: "CUpti_ActivityKernel9",
    size: 208,
    registers_per_thread: 6,
    start: 16,
    end: 24,
    completed: 32,
    device_id: 40,
    context_id: 44,
    stream_id: 48,
    grid_x: 52,
    block_x: 64,
    static_shared_memory: 76,
    dynamic_shared_memory: 80,
    correlation_id: 92,
    grid_id: 96,
    name: 104,
    graph_node_id: 144,
    graph_id: 156,
    channel_id: 168,
    channel_type: 172,
    is_device_launched: None,
};

/// CUPTI 13.0's kernel record.
pub const KERNEL10: KernelLayout = KernelLayout {
    struct_name: "CUpti_ActivityKernel10",
    size: 216,
    is_device_launched: Some(208),
    ..KERNEL9
};

/// One kernel execution.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelRecord {
    /// GPU start, ns.
    pub start: u64,
    /// GPU end, ns.
    pub end: u64,
    /// CUPTI device id.
    pub device_id: u32,
    /// CUPTI context id.
    pub context_id: u32,
    /// CUPTI stream id.
    pub stream_id: u32,
    /// Grid dimensions.
    pub grid: [i32; 3],
    /// Block dimensions.
    pub block: [i32; 3],
    /// Registers per thread.
    pub registers_per_thread: u16,
    /// Static shared memory per block, bytes.
    pub static_shared_memory: i32,
    /// Dynamic shared memory per block, bytes.
    pub dynamic_shared_memory: i32,
    /// Correlation id of the launching API call.
    pub correlation_id: u32,
    /// Unique grid id.
    pub grid_id: i64,
    /// Address of the kernel's (mangled) name, 0 when none.
    pub name: u64,
    /// Graph node id (0: not launched from a graph).
    pub graph_node_id: u64,
    /// Graph id (0: not launched from a graph).
    pub graph_id: u32,
    /// Launched from the device (13.0 records; `None` on 12.9).
    pub is_device_launched: Option<bool>,
}

/// Reads a kernel record.
pub fn parse(rec: &[u8], l: &KernelLayout) -> Result<KernelRecord, Short> {
    let mut r = Reader::new(rec);
    let i32_at = |r: &mut Reader, off: usize| r.u32(off) as i32;
    let v = KernelRecord {
        start: r.u64(l.start),
        end: r.u64(l.end),
        device_id: r.u32(l.device_id),
        context_id: r.u32(l.context_id),
        stream_id: r.u32(l.stream_id),
        grid: [
            i32_at(&mut r, l.grid_x),
            i32_at(&mut r, l.grid_x + 4),
            i32_at(&mut r, l.grid_x + 8),
        ],
        block: [
            i32_at(&mut r, l.block_x),
            i32_at(&mut r, l.block_x + 4),
            i32_at(&mut r, l.block_x + 8),
        ],
        registers_per_thread: r.u16(l.registers_per_thread),
        static_shared_memory: i32_at(&mut r, l.static_shared_memory),
        dynamic_shared_memory: i32_at(&mut r, l.dynamic_shared_memory),
        correlation_id: r.u32(l.correlation_id),
        grid_id: r.u64(l.grid_id) as i64,
        name: r.u64(l.name),
        graph_node_id: r.u64(l.graph_node_id),
        graph_id: r.u32(l.graph_id),
        is_device_launched: l.is_device_launched.map(|o| r.u8(o) != 0),
    };
    r.finish(v)
}

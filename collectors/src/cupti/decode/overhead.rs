//! Overhead records: `CUpti_ActivityOverhead3` (kind OVERHEAD), 56 bytes in
//! CUPTI 12.9 and 13.0. Host-side time CUPTI or the driver spent on itself:
//! never GPU work.

use super::reader::{Reader, Short};

/// What the overhead was (`CUpti_ActivityOverheadKind`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OverheadKind {
    /// 1: the driver JIT-compiled code.
    DriverCompiler,
    /// 0x10000: CUPTI flushed a buffer.
    BufferFlush,
    /// 0x20000: CUPTI instrumented a module.
    Instrumentation,
    /// 0x30000: CUPTI allocated resources.
    Resource,
    /// 0x40000: the runtime loaded a module.
    RuntimeTriggeredModuleLoading,
    /// 0x50000: lazy function loading.
    LazyFunctionLoading,
    /// 0x60000: the command buffer was full.
    CommandBufferFull,
    /// 0x70000: CUPTI asked for an activity buffer.
    ActivityBufferRequest,
    /// 0x80000: unified-memory activity set-up.
    UvmActivityInit,
    /// 0 or any other value, kept.
    Unknown(u32),
}

impl OverheadKind {
    /// From the record's value.
    pub fn from_raw(v: u32) -> Self {
        use OverheadKind::*;
        match v {
            1 => DriverCompiler,
            0x10000 => BufferFlush,
            0x20000 => Instrumentation,
            0x30000 => Resource,
            0x40000 => RuntimeTriggeredModuleLoading,
            0x50000 => LazyFunctionLoading,
            0x60000 => CommandBufferFull,
            0x70000 => ActivityBufferRequest,
            0x80000 => UvmActivityInit,
            n => Unknown(n),
        }
    }

    /// The marker name used in traces.
    pub fn label(self) -> &'static str {
        use OverheadKind::*;
        match self {
            DriverCompiler => "CUPTI Overhead: driver compiler",
            BufferFlush => "CUPTI Overhead: buffer flush",
            Instrumentation => "CUPTI Overhead: instrumentation",
            Resource => "CUPTI Overhead: resource",
            RuntimeTriggeredModuleLoading => "CUPTI Overhead: module loading",
            LazyFunctionLoading => "CUPTI Overhead: lazy function loading",
            CommandBufferFull => "CUPTI Overhead: command buffer full",
            ActivityBufferRequest => "CUPTI Overhead: activity buffer request",
            UvmActivityInit => "CUPTI Overhead: UVM activity init",
            Unknown(_) => "CUPTI Overhead",
        }
    }
}

/// Byte offsets of `CUpti_ActivityOverhead3`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OverheadLayout {
    /// The header's struct name.
    pub struct_name: &'static str,
    /// `sizeof` the struct.
    pub size: usize,
    /// `overheadKind` (u32).
    pub overhead_kind: usize,
    /// `objectKind` (u32).
    pub object_kind: usize,
    /// `objectId` (12-byte union; `pt.processId`, `pt.threadId` at +4).
    pub object_id: usize,
    /// `start` (u64 ns).
    pub start: usize,
    /// `end` (u64 ns).
    pub end: usize,
    /// `correlationId` (u32).
    pub correlation_id: usize,
    /// `overheadData` (pointer the client must free for CUPTI's buffers).
    pub overhead_data: usize,
}

/// `CUpti_ActivityOverhead3`, both versions.
pub const OVERHEAD3: OverheadLayout = OverheadLayout {
    struct_name: "CUpti_ActivityOverhead3",
    size: 56,
    overhead_kind: 4,
    object_kind: 8,
    object_id: 12,
    start: 24,
    end: 32,
    correlation_id: 40,
    overhead_data: 48,
};

/// One stretch of profiler or driver overhead.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OverheadRecord {
    /// What it was.
    pub kind: OverheadKind,
    /// What `object_id` names (see [`super::marker::object_kind`]).
    pub object_kind: u32,
    /// The three u32 of the `objectId` union.
    pub object_id: [u32; 3],
    /// Start, ns.
    pub start: u64,
    /// End, ns.
    pub end: u64,
    /// Correlation id of the surrounding API call (may be 0).
    pub correlation_id: u32,
    /// Address of extra data (0: none).
    pub overhead_data: u64,
}

/// Reads an Overhead3 record.
pub fn parse(rec: &[u8], l: &OverheadLayout) -> Result<OverheadRecord, Short> {
    let mut r = Reader::new(rec);
    let v = OverheadRecord {
        kind: OverheadKind::from_raw(r.u32(l.overhead_kind)),
        object_kind: r.u32(l.object_kind),
        object_id: [r.u32(l.object_id), r.u32(l.object_id + 4), r.u32(l.object_id + 8)],
        start: r.u64(l.start),
        end: r.u64(l.end),
        correlation_id: r.u32(l.correlation_id),
        overhead_data: r.u64(l.overhead_data),
    };
    r.finish(v)
}

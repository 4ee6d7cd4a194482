//! Synchronization records: `CUpti_ActivitySynchronization2` (kind
//! SYNCHRONIZATION), 56 bytes in CUPTI 12.9 and 13.0. The interval is the
//! CPU-side wait.

use super::reader::{Reader, Short};

/// "Not applicable" in a sync record's stream or event field
/// (`CUPTI_SYNCHRONIZATION_INVALID_VALUE`).
pub const SYNC_INVALID_VALUE: u32 = 0xFFFF_FFFF;

/// What was waited on (`CUpti_ActivitySynchronizationType`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SyncType {
    /// 1: `cudaEventSynchronize`.
    EventSynchronize,
    /// 2: `cudaStreamWaitEvent`.
    StreamWaitEvent,
    /// 3: `cudaStreamSynchronize`.
    StreamSynchronize,
    /// 4: `cudaDeviceSynchronize` / `cuCtxSynchronize`.
    ContextSynchronize,
    /// 0 or any other value, kept.
    Unknown(u32),
}

impl SyncType {
    /// From the record's value.
    pub fn from_raw(v: u32) -> Self {
        match v {
            1 => SyncType::EventSynchronize,
            2 => SyncType::StreamWaitEvent,
            3 => SyncType::StreamSynchronize,
            4 => SyncType::ContextSynchronize,
            n => SyncType::Unknown(n),
        }
    }

    /// The name Kineto gives such a record (`Stream Sync`, ...).
    pub fn label(self) -> &'static str {
        match self {
            SyncType::EventSynchronize => "Event Sync",
            SyncType::StreamWaitEvent => "Stream Wait Event",
            SyncType::StreamSynchronize => "Stream Sync",
            SyncType::ContextSynchronize => "Context Sync",
            SyncType::Unknown(_) => "Unknown Sync",
        }
    }
}

/// Byte offsets of `CUpti_ActivitySynchronization2`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SyncLayout {
    /// The header's struct name.
    pub struct_name: &'static str,
    /// `sizeof` the struct.
    pub size: usize,
    /// `type` (u32).
    pub sync_type: usize,
    /// `start` (u64 ns).
    pub start: usize,
    /// `end` (u64 ns).
    pub end: usize,
    /// `correlationId` (u32).
    pub correlation_id: usize,
    /// `contextId` (u32).
    pub context_id: usize,
    /// `streamId` (u32).
    pub stream_id: usize,
    /// `cudaEventId` (u32).
    pub cuda_event_id: usize,
    /// `cudaEventSyncId` (u64).
    pub cuda_event_sync_id: usize,
    /// `returnValue` (u32).
    pub return_value: usize,
}

/// `CUpti_ActivitySynchronization2`, both versions.
pub const SYNC2: SyncLayout = SyncLayout {
    struct_name: "CUpti_ActivitySynchronization2",
    size: 56,
    sync_type: 4,
    start: 8,
    end: 16,
    correlation_id: 24,
    context_id: 28,
    stream_id: 32,
    cuda_event_id: 36,
    cuda_event_sync_id: 40,
    return_value: 48,
};

/// One synchronization wait.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SyncRecord {
    /// What was waited on.
    pub sync_type: SyncType,
    /// Wait start (CPU), ns.
    pub start: u64,
    /// Wait end (CPU), ns.
    pub end: u64,
    /// Correlation id of the synchronizing API call.
    pub correlation_id: u32,
    /// CUPTI context id.
    pub context_id: u32,
    /// CUPTI stream id, or [`SYNC_INVALID_VALUE`].
    pub stream_id: u32,
    /// CUDA event id, or [`SYNC_INVALID_VALUE`].
    pub cuda_event_id: u32,
    /// The API call's return code.
    pub return_value: u32,
}

/// Reads a Synchronization2 record.
pub fn parse(rec: &[u8], l: &SyncLayout) -> Result<SyncRecord, Short> {
    let mut r = Reader::new(rec);
    let v = SyncRecord {
        sync_type: SyncType::from_raw(r.u32(l.sync_type)),
        start: r.u64(l.start),
        end: r.u64(l.end),
        correlation_id: r.u32(l.correlation_id),
        context_id: r.u32(l.context_id),
        stream_id: r.u32(l.stream_id),
        cuda_event_id: r.u32(l.cuda_event_id),
        return_value: r.u32(l.return_value),
    };
    r.finish(v)
}

//! API records: `CUpti_ActivityAPI` (kinds RUNTIME, DRIVER and
//! INTERNAL_LAUNCH_API), 40 bytes in CUPTI 12.9 and 13.0.

use super::reader::{Reader, Short};

/// Byte offsets of `CUpti_ActivityAPI`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ApiLayout {
    /// The header's struct name.
    pub struct_name: &'static str,
    /// `sizeof` the struct.
    pub size: usize,
    /// `cbid` (u32).
    pub cbid: usize,
    /// `start` (u64 ns).
    pub start: usize,
    /// `end` (u64 ns).
    pub end: usize,
    /// `processId` (u32).
    pub process_id: usize,
    /// `threadId` (u32).
    pub thread_id: usize,
    /// `correlationId` (u32).
    pub correlation_id: usize,
    /// `returnValue` (u32).
    pub return_value: usize,
}

/// `CUpti_ActivityAPI`, both versions.
pub const API: ApiLayout = ApiLayout {
    struct_name: "CUpti_ActivityAPI",
    size: 40,
    cbid: 4,
    start: 8,
    end: 16,
    process_id: 24,
    thread_id: 28,
    correlation_id: 32,
    return_value: 36,
};

/// One runtime or driver API call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ApiRecord {
    /// Callback id: names the function within its domain.
    pub cbid: u32,
    /// Start, ns.
    pub start: u64,
    /// End, ns.
    pub end: u64,
    /// Process id.
    pub process_id: u32,
    /// Thread id (a Linux tid once `cuptiSetThreadIdType(SYSTEM)` is set).
    pub thread_id: u32,
    /// Correlation id shared with the GPU work it caused.
    pub correlation_id: u32,
    /// Return code of the call.
    pub return_value: u32,
}

/// Reads an API record.
pub fn parse(rec: &[u8], l: &ApiLayout) -> Result<ApiRecord, Short> {
    let mut r = Reader::new(rec);
    let v = ApiRecord {
        cbid: r.u32(l.cbid),
        start: r.u64(l.start),
        end: r.u64(l.end),
        process_id: r.u32(l.process_id),
        thread_id: r.u32(l.thread_id),
        correlation_id: r.u32(l.correlation_id),
        return_value: r.u32(l.return_value),
    };
    r.finish(v)
}

/// The function name for a callback name as `cuptiGetCallbackName` gives it:
/// the version suffix dropped (`cudaLaunchKernel_v7000` → `cudaLaunchKernel`,
/// `__cudaLaunchKernel_v13000` → `__cudaLaunchKernel`), per-thread-stream
/// variants kept (`cudaMemcpyAsync_ptsz`).
pub fn normalize_callback_name(name: &str) -> &str {
    if let Some(i) = name.rfind("_v") {
        let digits = &name[i + 2..];
        if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
            return &name[..i];
        }
    }
    name
}

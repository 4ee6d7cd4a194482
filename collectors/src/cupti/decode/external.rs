//! External correlation records: `CUpti_ActivityExternalCorrelation` (kind
//! EXTERNAL_CORRELATION), 24 bytes in CUPTI 12.9 and 13.0. One precedes each
//! API record made while an id was pushed on the thread's stack.

use super::reader::{Reader, Short};

/// Who pushed the id (`CUpti_ExternalCorrelationKind`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ExternalKind {
    /// 1.
    Unknown,
    /// 2.
    OpenAcc,
    /// 3: Kineto's framework operators.
    Custom0,
    /// 4: Kineto's user annotations.
    Custom1,
    /// 5.
    Custom2,
    /// Any other value, kept.
    Other(u32),
}

impl ExternalKind {
    /// From the record's value.
    pub fn from_raw(v: u32) -> Self {
        match v {
            1 => ExternalKind::Unknown,
            2 => ExternalKind::OpenAcc,
            3 => ExternalKind::Custom0,
            4 => ExternalKind::Custom1,
            5 => ExternalKind::Custom2,
            n => ExternalKind::Other(n),
        }
    }
}

/// Byte offsets of `CUpti_ActivityExternalCorrelation`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExternalLayout {
    /// The header's struct name.
    pub struct_name: &'static str,
    /// `sizeof` the struct.
    pub size: usize,
    /// `externalKind` (u32).
    pub external_kind: usize,
    /// `externalId` (u64).
    pub external_id: usize,
    /// `correlationId` (u32).
    pub correlation_id: usize,
}

/// `CUpti_ActivityExternalCorrelation`, both versions.
pub const EXTERNAL: ExternalLayout = ExternalLayout {
    struct_name: "CUpti_ActivityExternalCorrelation",
    size: 24,
    external_kind: 4,
    external_id: 8,
    correlation_id: 16,
};

/// An external id attached to an API call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExternalRecord {
    /// Who pushed it.
    pub kind: ExternalKind,
    /// The pushed id.
    pub external_id: u64,
    /// The API call's correlation id.
    pub correlation_id: u32,
}

/// Reads an ExternalCorrelation record.
pub fn parse(rec: &[u8], l: &ExternalLayout) -> Result<ExternalRecord, Short> {
    let mut r = Reader::new(rec);
    let v = ExternalRecord {
        kind: ExternalKind::from_raw(r.u32(l.external_kind)),
        external_id: r.u64(l.external_id),
        correlation_id: r.u32(l.correlation_id),
    };
    r.finish(v)
}

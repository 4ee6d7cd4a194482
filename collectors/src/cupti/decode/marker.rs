//! NVTX marker records: `CUpti_ActivityMarker2` (kind MARKER), 56 bytes in
//! CUPTI 12.9 and 13.0. A range gives two records with one `id`: START with
//! the name, END with a null name.

use super::reader::{Reader, Short};

/// `flags` bit: an instant.
pub const FLAG_INSTANTANEOUS: u32 = 1 << 0;
/// `flags` bit: a range start.
pub const FLAG_START: u32 = 1 << 1;
/// `flags` bit: a range end.
pub const FLAG_END: u32 = 1 << 2;

/// `objectKind` values (`CUpti_ActivityObjectKind`).
pub mod object_kind {
    /// The object is a process (`objectId.pt.processId`).
    pub const PROCESS: u32 = 1;
    /// The object is a thread (`objectId.pt`).
    pub const THREAD: u32 = 2;
    /// A device (`objectId.dcs.deviceId`).
    pub const DEVICE: u32 = 3;
    /// A context (`objectId.dcs`).
    pub const CONTEXT: u32 = 4;
    /// A stream (`objectId.dcs`).
    pub const STREAM: u32 = 5;
}

/// Byte offsets of `CUpti_ActivityMarker2`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MarkerLayout {
    /// The header's struct name.
    pub struct_name: &'static str,
    /// `sizeof` the struct.
    pub size: usize,
    /// `flags` (u32).
    pub flags: usize,
    /// `timestamp` (u64 ns).
    pub timestamp: usize,
    /// `id` (u32).
    pub id: usize,
    /// `objectKind` (u32).
    pub object_kind: usize,
    /// `objectId` (12-byte union): `pt.processId` / `dcs.deviceId` here,
    /// `pt.threadId` / `dcs.contextId` at +4, `dcs.streamId` at +8.
    pub object_id: usize,
    /// `name` (pointer; null on END).
    pub name: usize,
    /// `domain` (pointer; null for the default domain).
    pub domain: usize,
}

/// `CUpti_ActivityMarker2`, both versions.
pub const MARKER2: MarkerLayout = MarkerLayout {
    struct_name: "CUpti_ActivityMarker2",
    size: 56,
    flags: 4,
    timestamp: 8,
    id: 16,
    object_kind: 20,
    object_id: 24,
    name: 40,
    domain: 48,
};

/// One NVTX marker event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MarkerRecord {
    /// Flag bits ([`FLAG_START`], [`FLAG_END`], [`FLAG_INSTANTANEOUS`], ...).
    pub flags: u32,
    /// Time, ns.
    pub timestamp: u64,
    /// Pairs a START with its END.
    pub id: u32,
    /// What `object_id` names ([`object_kind`]).
    pub object_kind: u32,
    /// The three u32 of the `objectId` union.
    pub object_id: [u32; 3],
    /// Address of the name, 0 when none.
    pub name: u64,
    /// Address of the domain name, 0 for the default domain.
    pub domain: u64,
}

impl MarkerRecord {
    /// `(pid, tid)` when the marker belongs to a process or thread.
    pub fn process_thread(&self) -> Option<(u32, u32)> {
        match self.object_kind {
            object_kind::THREAD => Some((self.object_id[0], self.object_id[1])),
            object_kind::PROCESS => Some((self.object_id[0], 0)),
            _ => None,
        }
    }
}

/// Reads a Marker2 record.
pub fn parse(rec: &[u8], l: &MarkerLayout) -> Result<MarkerRecord, Short> {
    let mut r = Reader::new(rec);
    let v = MarkerRecord {
        flags: r.u32(l.flags),
        timestamp: r.u64(l.timestamp),
        id: r.u32(l.id),
        object_kind: r.u32(l.object_kind),
        object_id: [r.u32(l.object_id), r.u32(l.object_id + 4), r.u32(l.object_id + 8)],
        name: r.u64(l.name),
        domain: r.u64(l.domain),
    };
    r.finish(v)
}

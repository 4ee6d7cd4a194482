//! The bytes of the format: the file header, section framing, enum tags
//! and the column codec (fixed-width little-endian values, byte-plane split,
//! optionally delta- or duration-coded). `docs/capture-format.md` is the
//! same thing in prose; keep the two in step.

use crate::trace::{ApiKind, CopyKind, CpuOpKind, GpuKind, MarkerKind, MemKind};

/// The first 8 bytes of every capture. Like PNG's: the high-bit byte
/// catches 7-bit transfers and text sniffers, CR LF catches line-ending
/// conversion, ^Z stops `type` on Windows, and no JSON or gzip file can
/// start with it.
pub const MAGIC: [u8; 8] = *b"\x89GST\r\n\x1a\n";

/// The format version this build writes and the newest it reads.
pub const FORMAT_VERSION: u32 = 3;

/// The stored occupancy of a row whose occupancy is unknown: a NaN no
/// writer produces from a percent.
pub const OCCUPANCY_UNKNOWN: u32 = u32::MAX;

/// A row's occupancy as stored: the f32's bits, or [`OCCUPANCY_UNKNOWN`].
pub fn occupancy_bits(v: Option<f32>) -> u32 {
    v.map_or(OCCUPANCY_UNKNOWN, f32::to_bits)
}

/// A stored occupancy back as the column's value.
pub fn occupancy_value(bits: u32) -> Option<f32> {
    (bits != OCCUPANCY_UNKNOWN).then(|| f32::from_bits(bits))
}

/// The stored id of a marker's absent thread or device.
pub const NO_ID: u32 = u32::MAX;

/// A marker's thread or device as stored: the id, or [`NO_ID`].
pub fn id_bits(v: Option<u32>) -> u32 {
    v.unwrap_or(NO_ID)
}

/// A stored marker thread or device back as the column's value.
pub fn id_value(bits: u32) -> Option<u32> {
    (bits != NO_ID).then_some(bits)
}

/// Magic, version, flags.
pub const FILE_HEADER_LEN: usize = 16;

/// Tag, codec, 3 reserved bytes, decoded length, stored length, payload
/// CRC-32, header CRC-32.
pub const SECTION_HEADER_LEN: usize = 32;

/// zlib cannot inflate to more than about 1032 times its input: a section
/// that claims more is damaged, whatever its data says.
pub const MAX_ZLIB_RATIO: u64 = 1032;

/// Section payload codecs.
pub const CODEC_STORED: u8 = 0;
/// zlib (RFC 1950) stream.
pub const CODEC_ZLIB: u8 = 1;

/// The sections of a capture, in file order; each appears once.
/// [`Section::Collectives`] is new in version 3 (a version-1 or -2 file
/// goes from `DEVS` to `GPUA`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Section {
    /// Origin, rank, provenance.
    Meta,
    /// The string pool.
    Strings,
    /// The thread table.
    Threads,
    /// The device table.
    Devices,
    /// Collectives' process groups and sequence numbers (version 3).
    Collectives,
    /// GPU activities.
    Gpu,
    /// Runtime and driver calls.
    Runtime,
    /// CPU operators and ranges.
    CpuOps,
    /// Markers.
    Markers,
    /// Importer diagnostics.
    Diagnostics,
    /// The end marker: nothing may follow it.
    End,
}

impl Section {
    /// Every section, in the order a file holds them.
    pub const ORDER: [Section; 11] = [
        Section::Meta,
        Section::Strings,
        Section::Threads,
        Section::Devices,
        Section::Collectives,
        Section::Gpu,
        Section::Runtime,
        Section::CpuOps,
        Section::Markers,
        Section::Diagnostics,
        Section::End,
    ];

    /// The 4-byte tag on disk.
    pub fn tag(self) -> [u8; 4] {
        *match self {
            Section::Meta => b"META",
            Section::Strings => b"STRS",
            Section::Threads => b"THRD",
            Section::Devices => b"DEVS",
            Section::Collectives => b"COLL",
            Section::Gpu => b"GPUA",
            Section::Runtime => b"RTCL",
            Section::CpuOps => b"CPUO",
            Section::Markers => b"MARK",
            Section::Diagnostics => b"DIAG",
            Section::End => b"ENDS",
        }
    }

    /// How messages name it.
    pub fn describe(self) -> String {
        let what = match self {
            Section::Meta => "the metadata",
            Section::Strings => "the string table",
            Section::Threads => "the thread table",
            Section::Devices => "the device table",
            Section::Collectives => "the collectives",
            Section::Gpu => "the GPU activities",
            Section::Runtime => "the runtime calls",
            Section::CpuOps => "the CPU operators",
            Section::Markers => "the markers",
            Section::Diagnostics => "the diagnostics",
            Section::End => "the end marker",
        };
        format!("section {}, {what}", String::from_utf8_lossy(&self.tag()))
    }
}

/// A value stored as a fixed number of little-endian bytes.
pub trait Fixed: Copy {
    /// Bytes per value.
    const WIDTH: usize;
    /// Appends the value's bytes.
    fn put(self, out: &mut Vec<u8>);
    /// Reads a value from exactly `WIDTH` bytes.
    fn get(b: &[u8]) -> Self;
}

macro_rules! fixed {
    ($($t:ty),*) => {$(
        impl Fixed for $t {
            const WIDTH: usize = std::mem::size_of::<$t>();
            fn put(self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.to_le_bytes());
            }
            fn get(b: &[u8]) -> Self {
                let mut a = [0u8; std::mem::size_of::<$t>()];
                a.copy_from_slice(b);
                <$t>::from_le_bytes(a)
            }
        }
    )*};
}
fixed!(u8, u16, u32, u64, i64);

/// A column of `n` values as byte planes: all first bytes, then all second
/// bytes, and so on. Sorted times, small ids and counts have mostly-zero
/// high bytes, which then form long runs deflate packs to almost nothing.
pub fn split<T: Fixed>(values: &[T]) -> Vec<u8> {
    let n = values.len();
    let mut le = Vec::with_capacity(n * T::WIDTH);
    for v in values {
        v.put(&mut le);
    }
    let mut planes = vec![0u8; n * T::WIDTH];
    for (j, plane) in planes.chunks_exact_mut(n.max(1)).enumerate().take(T::WIDTH) {
        for (i, b) in plane.iter_mut().enumerate() {
            *b = le[i * T::WIDTH + j];
        }
    }
    planes
}

/// The inverse of [`split`]: `planes` holds exactly `n * T::WIDTH` bytes.
pub fn unsplit<T: Fixed>(planes: &[u8], n: usize) -> Vec<T> {
    debug_assert_eq!(planes.len(), n * T::WIDTH);
    let mut le = vec![0u8; n * T::WIDTH];
    for (j, plane) in planes.chunks_exact(n.max(1)).enumerate().take(T::WIDTH) {
        for (i, &b) in plane.iter().enumerate() {
            le[i * T::WIDTH + j] = b;
        }
    }
    le.chunks_exact(T::WIDTH).map(T::get).collect()
}

/// Signed to unsigned with small magnitudes small (0, -1, 1, -2 → 0, 1, 2, 3).
pub fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

/// The inverse of [`zigzag`].
pub fn unzigzag(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

/// Each value minus the one before (the first minus 0), zigzagged: sorted
/// start times and roughly increasing ids become small numbers. Wrapping, so
/// every i64 column round-trips exactly.
pub fn delta(values: impl Iterator<Item = i64>) -> Vec<u64> {
    let mut prev = 0i64;
    values
        .map(|v| {
            let d = v.wrapping_sub(prev);
            prev = v;
            zigzag(d)
        })
        .collect()
}

/// The inverse of [`delta`].
pub fn undelta(coded: &[u64]) -> Vec<i64> {
    let mut prev = 0i64;
    coded
        .iter()
        .map(|&c| {
            prev = prev.wrapping_add(unzigzag(c));
            prev
        })
        .collect()
}

/// Enum tags on disk. The matches are exhaustive on purpose: a new variant
/// in the model does not compile until it has a tag here.
pub fn gpu_kind_tag(k: GpuKind) -> u8 {
    match k {
        GpuKind::Kernel => 0,
        GpuKind::Memcpy => 1,
        GpuKind::Memset => 2,
        GpuKind::Sync => 3,
    }
}

/// See [`gpu_kind_tag`].
pub fn gpu_kind(t: u8) -> Option<GpuKind> {
    Some(match t {
        0 => GpuKind::Kernel,
        1 => GpuKind::Memcpy,
        2 => GpuKind::Memset,
        3 => GpuKind::Sync,
        _ => return None,
    })
}

/// Copy direction tag.
pub fn copy_kind_tag(k: CopyKind) -> u8 {
    match k {
        CopyKind::None => 0,
        CopyKind::HtoD => 1,
        CopyKind::DtoH => 2,
        CopyKind::DtoD => 3,
        CopyKind::HtoH => 4,
        CopyKind::PtoP => 5,
    }
}

/// See [`copy_kind_tag`].
pub fn copy_kind(t: u8) -> Option<CopyKind> {
    Some(match t {
        0 => CopyKind::None,
        1 => CopyKind::HtoD,
        2 => CopyKind::DtoH,
        3 => CopyKind::DtoD,
        4 => CopyKind::HtoH,
        5 => CopyKind::PtoP,
        _ => return None,
    })
}

/// Memory kind tag.
pub fn mem_kind_tag(k: MemKind) -> u8 {
    match k {
        MemKind::Unknown => 0,
        MemKind::Pageable => 1,
        MemKind::Pinned => 2,
        MemKind::Device => 3,
        MemKind::Managed => 4,
        MemKind::Array => 5,
    }
}

/// See [`mem_kind_tag`].
pub fn mem_kind(t: u8) -> Option<MemKind> {
    Some(match t {
        0 => MemKind::Unknown,
        1 => MemKind::Pageable,
        2 => MemKind::Pinned,
        3 => MemKind::Device,
        4 => MemKind::Managed,
        5 => MemKind::Array,
        _ => return None,
    })
}

/// CPU range kind tag.
pub fn cpu_op_kind_tag(k: CpuOpKind) -> u8 {
    match k {
        CpuOpKind::Operator => 0,
        CpuOpKind::UserAnnotation => 1,
        CpuOpKind::PythonFunction => 2,
        CpuOpKind::ProfilerStep => 3,
        CpuOpKind::Other => 4,
    }
}

/// See [`cpu_op_kind_tag`].
pub fn cpu_op_kind(t: u8) -> Option<CpuOpKind> {
    Some(match t {
        0 => CpuOpKind::Operator,
        1 => CpuOpKind::UserAnnotation,
        2 => CpuOpKind::PythonFunction,
        3 => CpuOpKind::ProfilerStep,
        4 => CpuOpKind::Other,
        _ => return None,
    })
}

/// API family tag.
pub fn api_kind_tag(k: ApiKind) -> u8 {
    match k {
        ApiKind::Runtime => 0,
        ApiKind::Driver => 1,
    }
}

/// See [`api_kind_tag`].
pub fn api_kind(t: u8) -> Option<ApiKind> {
    Some(match t {
        0 => ApiKind::Runtime,
        1 => ApiKind::Driver,
        _ => return None,
    })
}

/// Marker kind tag.
pub fn marker_kind_tag(k: MarkerKind) -> u8 {
    match k {
        MarkerKind::Instant => 0,
        MarkerKind::Counter => 1,
        MarkerKind::GpuAnnotation => 2,
        MarkerKind::ProfilerOverhead => 3,
        MarkerKind::CounterRange => 4,
    }
}

/// See [`marker_kind_tag`].
pub fn marker_kind(t: u8) -> Option<MarkerKind> {
    Some(match t {
        0 => MarkerKind::Instant,
        1 => MarkerKind::Counter,
        2 => MarkerKind::GpuAnnotation,
        3 => MarkerKind::ProfilerOverhead,
        4 => MarkerKind::CounterRange,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codecs_round_trip_extremes() {
        let v = [0i64, -1, 1, i64::MIN, i64::MAX, 42, -42];
        for &x in &v {
            assert_eq!(unzigzag(zigzag(x)), x);
        }
        assert_eq!(zigzag(-1), 1);
        assert_eq!(zigzag(1), 2);
        assert_eq!(undelta(&delta(v.iter().copied())), v);
        let s = split(&v);
        assert_eq!(s.len(), v.len() * 8);
        assert_eq!(unsplit::<i64>(&s, v.len()), v);
        // Plane 0 holds every value's low byte.
        assert_eq!(&s[..3], &[0, 0xff, 1]);
    }

    #[test]
    fn tags_round_trip() {
        for t in 0..=255u8 {
            if let Some(k) = gpu_kind(t) {
                assert_eq!(gpu_kind_tag(k), t);
            }
            if let Some(k) = copy_kind(t) {
                assert_eq!(copy_kind_tag(k), t);
            }
            if let Some(k) = mem_kind(t) {
                assert_eq!(mem_kind_tag(k), t);
            }
            if let Some(k) = cpu_op_kind(t) {
                assert_eq!(cpu_op_kind_tag(k), t);
            }
            if let Some(k) = api_kind(t) {
                assert_eq!(api_kind_tag(k), t);
            }
            if let Some(k) = marker_kind(t) {
                assert_eq!(marker_kind_tag(k), t);
            }
        }
        assert!(gpu_kind(4).is_none() && marker_kind(5).is_none() && mem_kind(6).is_none());
    }
}

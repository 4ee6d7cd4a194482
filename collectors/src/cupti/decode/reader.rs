//! Bounds-checked little-endian reads at fixed offsets of one record.

/// Reads fields of one record. An out-of-range read yields 0 and marks the
/// reader short, so a parser reads every field and checks once at the end.
pub(crate) struct Reader<'a> {
    bytes: &'a [u8],
    short: Option<usize>,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(bytes: &'a [u8]) -> Self {
        Reader { bytes, short: None }
    }

    fn take<const N: usize>(&mut self, off: usize) -> [u8; N] {
        match off.checked_add(N).and_then(|end| self.bytes.get(off..end)) {
            Some(s) => s.try_into().unwrap_or([0; N]),
            None => {
                let need = off.saturating_add(N);
                self.short = Some(self.short.map_or(need, |n| n.max(need)));
                [0; N]
            }
        }
    }

    pub(crate) fn u8(&mut self, off: usize) -> u8 {
        self.take::<1>(off)[0]
    }

    pub(crate) fn u16(&mut self, off: usize) -> u16 {
        u16::from_le_bytes(self.take(off))
    }

    pub(crate) fn u32(&mut self, off: usize) -> u32 {
        u32::from_le_bytes(self.take(off))
    }

    pub(crate) fn u64(&mut self, off: usize) -> u64 {
        u64::from_le_bytes(self.take(off))
    }

    /// `Ok(v)` when every read was in range, else how many bytes were needed.
    pub(crate) fn finish<T>(self, v: T) -> Result<T, Short> {
        match self.short {
            None => Ok(v),
            Some(need) => Err(Short {
                need,
                have: self.bytes.len(),
            }),
        }
    }
}

/// A record shorter than the fields its layout reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Short {
    /// Bytes the layout needs.
    pub need: usize,
    /// Bytes the record has.
    pub have: usize,
}

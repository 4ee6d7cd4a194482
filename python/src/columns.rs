//! Polars columns made from the Trace's own columns.
//!
//! String columns are Arrow string views into one buffer that holds every
//! string of the trace once (its string pool), so a column of a million
//! kernel names costs 16 bytes a row and shares that buffer with every
//! other string column: names are never copied per row.

use gapscope_collectors::trace::{StrId, Strings};
use polars::prelude::*;
use polars_arrow::array::{Utf8ViewArray, View};
use polars_arrow::bitmap::MutableBitmap;
use polars_arrow::datatypes::ArrowDataType;
use polars_buffer::Buffer;

/// The trace's strings, plus the few names gapscope itself adds (causes,
/// kinds), in one buffer.
pub struct StrPool {
    buffer: Buffer<u8>,
    /// Where each [`StrId`] starts in `buffer`.
    offsets: Vec<u32>,
    /// The extra names: (name, offset).
    extra: Vec<(&'static str, u32)>,
}

/// One value of a string column.
#[derive(Clone, Copy)]
pub enum Str<'a> {
    /// An interned string of the trace, or a part of one (a source frame
    /// cut out of a stack).
    Trace(StrId, &'a str),
    /// A name of gapscope's own vocabulary.
    Name(&'static str),
    /// Null.
    Null,
}

impl StrPool {
    /// Copies the trace's strings into one buffer, followed by `extra`.
    pub fn new(strings: &Strings, extra: &[&'static str]) -> Self {
        let total: usize = strings.iter().map(|(_, s)| s.len()).sum::<usize>()
            + extra.iter().map(|s| s.len()).sum::<usize>();
        // View offsets are u32: a pool past 4 GiB cannot be addressed.
        assert!(total <= u32::MAX as usize, "the trace's strings exceed 4 GiB");
        let mut bytes = Vec::with_capacity(total);
        let mut offsets = Vec::with_capacity(strings.len());
        for (_, s) in strings.iter() {
            offsets.push(bytes.len() as u32);
            bytes.extend_from_slice(s.as_bytes());
        }
        let extra = extra
            .iter()
            .map(|&s| {
                let at = bytes.len() as u32;
                bytes.extend_from_slice(s.as_bytes());
                (s, at)
            })
            .collect();
        StrPool {
            buffer: Buffer::from(bytes),
            offsets,
            extra,
        }
    }

    fn view(&self, strings: &Strings, v: Str<'_>) -> Option<View> {
        let (bytes, offset) = match v {
            Str::Null => return None,
            Str::Trace(id, part) => {
                let whole = strings.get(id);
                // `part` lies inside `whole` (checked: a bad slice would
                // point a view at the wrong bytes).
                let skip = (part.as_ptr() as usize).wrapping_sub(whole.as_ptr() as usize);
                assert!(
                    skip + part.len() <= whole.len(),
                    "a string part outside its string"
                );
                (part.as_bytes(), self.offsets[id.0 as usize] + skip as u32)
            }
            Str::Name(name) => {
                let at = self
                    .extra
                    .iter()
                    .find(|(s, _)| std::ptr::eq(*s, name) || *s == name)
                    .map(|&(_, at)| at)
                    .expect("every name is in the pool");
                (name.as_bytes(), at)
            }
        };
        Some(View::new_from_bytes(bytes, 0, offset))
    }

    /// A string column of `values`.
    pub fn column<'a>(
        &self,
        name: &str,
        strings: &Strings,
        values: impl ExactSizeIterator<Item = Str<'a>>,
    ) -> Column {
        let n = values.len();
        let mut views = Vec::with_capacity(n);
        let mut valid = MutableBitmap::with_capacity(n);
        let mut nulls = 0usize;
        for v in values {
            match self.view(strings, v) {
                Some(view) => {
                    views.push(view);
                    valid.push(true);
                }
                None => {
                    views.push(View::default());
                    valid.push(false);
                    nulls += 1;
                }
            }
        }
        let validity = (nulls > 0).then(|| valid.into());
        // SAFETY: every view points inside the pool's one buffer (offsets
        // of whole interned strings or checked parts of them), which holds
        // only valid UTF-8 cut at string boundaries.
        let array = unsafe {
            Utf8ViewArray::new_unchecked_unknown_md(
                ArrowDataType::Utf8View,
                Buffer::from(views),
                Buffer::from(vec![self.buffer.clone()]),
                validity,
                Some(self.buffer.len()),
            )
        };
        StringChunked::with_chunk(name.into(), array).into_column()
    }
}

/// A column of `values` (moved, not copied).
pub fn ints<T: PolarsNumericType>(name: &str, values: Vec<T::Native>) -> Column {
    ChunkedArray::<T>::from_vec(name.into(), values).into_column()
}

/// A nullable column of `values`.
pub fn opt_ints<T: PolarsNumericType>(name: &str, values: impl Iterator<Item = Option<T::Native>>) -> Column {
    ChunkedArray::<T>::from_iter_options(name.into(), values).into_column()
}

/// A float column.
pub fn floats(name: &str, values: Vec<f64>) -> Column {
    Float64Chunked::from_vec(name.into(), values).into_column()
}

/// A nullable float column.
pub fn opt_floats(name: &str, values: impl Iterator<Item = Option<f64>>) -> Column {
    Float64Chunked::from_iter_options(name.into(), values).into_column()
}

/// A boolean column.
pub fn bools(name: &str, values: impl Iterator<Item = bool>) -> Column {
    BooleanChunked::from_iter_values(name.into(), values).into_column()
}

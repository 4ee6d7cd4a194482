//! Typed row ids: a link from one table to a row of another is an
//! [`OpRow`], [`CallRow`], [`GpuRow`] or [`MarkerRow`], and "no row" is
//! `None`, never a sentinel number.
//!
//! A row id holds its index plus one in a [`NonZeroU32`], so an
//! `Option<OpRow>` is as small as a `u32` (columns of millions of links stay
//! 4 bytes a row) and two ids compare in row order.
//!
//! ```
//! use gapscope_collectors::trace::OpRow;
//!
//! let r = OpRow::new(7);
//! assert_eq!(r.index(), 7);
//! assert!(OpRow::new(3) < r);
//! assert_eq!(std::mem::size_of::<Option<OpRow>>(), 4);
//! ```

use std::num::NonZeroU32;

macro_rules! row_id {
    ($(#[$meta:meta])* $name:ident) => {
        $(#[$meta])*
        #[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(NonZeroU32);

        impl $name {
            /// The row at `index`. Panics past `u32::MAX - 1` rows, which no
            /// table holds (row counts are `u32` throughout).
            #[inline]
            pub fn new(index: usize) -> Self {
                u32::try_from(index)
                    .ok()
                    .and_then(|i| i.checked_add(1))
                    .and_then(NonZeroU32::new)
                    .map($name)
                    .expect("row index past u32::MAX - 1")
            }

            /// The row's index in its table.
            #[inline]
            pub fn index(self) -> usize {
                (self.0.get() - 1) as usize
            }

            /// The row's index as a `u32` (for JSON and files).
            #[inline]
            pub fn get(self) -> u32 {
                self.0.get() - 1
            }
        }

        impl std::fmt::Debug for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                write!(f, concat!(stringify!($name), "({})"), self.index())
            }
        }
    };
}

row_id!(
    /// A row of [`CpuOpTable`](super::CpuOpTable): an operator, annotation,
    /// Python frame or step.
    OpRow
);
row_id!(
    /// A row of [`RuntimeCallTable`](super::RuntimeCallTable): a runtime or
    /// driver API call.
    CallRow
);
row_id!(
    /// A row of [`GpuActivityTable`](super::GpuActivityTable): a kernel,
    /// copy, memset or sync record.
    GpuRow
);
row_id!(
    /// A row of [`MarkerTable`](super::MarkerTable).
    MarkerRow
);
row_id!(
    /// A row of [`CollectiveTable`](super::CollectiveTable): one
    /// collective's process group and sequence number.
    CollectiveRow
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_round_trip_and_order_like_their_rows() {
        for i in [0usize, 1, 41, (u32::MAX - 1) as usize] {
            assert_eq!(GpuRow::new(i).index(), i);
        }
        assert!(CallRow::new(2) < CallRow::new(10));
        assert!(Some(OpRow::new(0)) > None);
        assert_eq!(format!("{:?}", OpRow::new(5)), "OpRow(5)");
    }

    #[test]
    #[should_panic(expected = "row index")]
    fn too_many_rows_panics() {
        let _ = GpuRow::new(u32::MAX as usize);
    }
}

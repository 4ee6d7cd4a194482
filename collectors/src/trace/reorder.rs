//! Reordering a table's columns through one scratch buffer. Gathering each
//! column into a new one wrote every column of a big table to fresh pages
//! (a page fault per 4 KiB, a quarter of an import's faults); swapping
//! along the permutation's cycles instead chases pointers through it, as
//! slow as the faults it saves. Here each column is gathered into the
//! scratch (its pages touched once, for the first column) and copied back.

use std::mem::{align_of, size_of, MaybeUninit};

/// Reorders `column` so that new position `i` holds what old position
/// `order[i]` held (`order` as long as `column`), gathering through
/// `scratch`, which keeps its size for the next column.
pub(super) fn gather_in_place<T: Copy>(column: &mut [T], order: &[u32], scratch: &mut Vec<u64>) {
    const { assert!(align_of::<T>() <= align_of::<u64>()) };
    assert_eq!(column.len(), order.len(), "an index per row");
    let words = std::mem::size_of_val(column).div_ceil(size_of::<u64>());
    if scratch.len() < words {
        scratch.resize(words, 0);
    }
    // SAFETY: `scratch` holds at least `column.len()` values of `T` (its
    // `words` u64s are as many bytes), its alignment (8) is at least `T`'s
    // (checked above), and `MaybeUninit` makes any bits in it valid.
    let out = unsafe {
        std::slice::from_raw_parts_mut(scratch.as_mut_ptr().cast::<MaybeUninit<T>>(), column.len())
    };
    for (slot, &from) in out.iter_mut().zip(order) {
        slot.write(column[from as usize]);
    }
    // SAFETY: the loop above wrote every one of the `column.len()` slots
    // (`order` is as long as `column`); `T: Copy`, so nothing is dropped or
    // duplicated that owns anything.
    unsafe { std::ptr::copy_nonoverlapping(out.as_ptr().cast::<T>(), column.as_mut_ptr(), column.len()) };
}

#[cfg(test)]
mod tests {
    use super::gather_in_place;
    use crate::trace::OpRow;

    /// Every permutation of 0..5, long scrambled ones, and columns of
    /// several types through one scratch (which starts too small, then
    /// too big): the same as gathering into new columns.
    #[test]
    fn gathering_in_place_is_gathering() {
        let mut scratch = Vec::new();
        let mut check = |order: &[u32]| {
            let n = order.len() as u64;
            let wide: Vec<u64> = (0..n).map(|i| i * 10 + 7).collect();
            let narrow: Vec<u8> = (0..n).map(|i| (i % 251) as u8).collect();
            let odd: Vec<[u32; 3]> = (0..n).map(|i| [i as u32, 1, 2]).collect();
            let opt: Vec<Option<OpRow>> = (0..n as usize)
                .map(|i| (i % 3 != 0).then(|| OpRow::new(i)))
                .collect();
            fn expect<T: Copy + PartialEq + std::fmt::Debug>(
                col: &[T],
                order: &[u32],
                scratch: &mut Vec<u64>,
            ) {
                let gathered: Vec<T> = order.iter().map(|&i| col[i as usize]).collect();
                let mut col = col.to_vec();
                gather_in_place(&mut col, order, scratch);
                assert_eq!(col, gathered, "order {order:?}");
            }
            expect(&narrow, order, &mut scratch);
            expect(&wide, order, &mut scratch);
            expect(&odd, order, &mut scratch);
            expect(&opt, order, &mut scratch);
        };
        fn all(prefix: &mut Vec<u32>, n: u32, check: &mut dyn FnMut(&[u32])) {
            if prefix.len() == n as usize {
                check(prefix);
                return;
            }
            for i in 0..n {
                if !prefix.contains(&i) {
                    prefix.push(i);
                    all(prefix, n, check);
                    prefix.pop();
                }
            }
        }
        for n in 0..=5 {
            all(&mut Vec::new(), n, &mut check);
        }
        let n = 10_007u32;
        check(&(0..n).map(|i| (i * 7919 + 13) % n).collect::<Vec<_>>());
        check(&(0..n).rev().collect::<Vec<_>>());
        check(&[0, 1, 2]);
    }
}

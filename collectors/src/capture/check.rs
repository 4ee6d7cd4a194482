//! The invariants a capture's columns must hold, checked by the reader on
//! every file and by the writer on every trace (so it never writes a file
//! the reader would refuse). Each failure names the column and the row.

use crate::trace::{CollectiveRow, StrId, ThreadId};

/// Times beyond ±2^62 ns (±146 years from the origin) are not a recording:
/// refusing them keeps `end - start` and sums of durations inside i64 for
/// every analyzer.
pub const MAX_ABS_TIME: i64 = 1 << 62;

/// Every id below the string pool's size.
pub fn str_ids(col: &[StrId], strings: usize, what: &str) -> Result<(), String> {
    match col.iter().position(|s| s.0 as usize >= strings) {
        None => Ok(()),
        Some(i) => Err(format!(
            "{what} of row {i} is string id {} but the string table has {strings} strings",
            col[i].0
        )),
    }
}

/// Every thread below the thread table's size.
pub fn thread_ids(col: &[ThreadId], threads: usize, what: &str) -> Result<(), String> {
    match col.iter().position(|t| t.0 as usize >= threads) {
        None => Ok(()),
        Some(i) => Err(bad_thread(what, i, col[i], threads)),
    }
}

/// Every thread that is there below the thread table's size.
pub fn opt_thread_ids(col: &[Option<ThreadId>], threads: usize, what: &str) -> Result<(), String> {
    match col
        .iter()
        .position(|t| t.is_some_and(|t| t.0 as usize >= threads))
    {
        None => Ok(()),
        Some(i) => Err(bad_thread(what, i, col[i].unwrap_or(ThreadId(0)), threads)),
    }
}

fn bad_thread(what: &str, i: usize, t: ThreadId, threads: usize) -> String {
    format!(
        "{what} of row {i} is thread {} but the thread table has {threads} threads",
        t.0
    )
}

/// Every collective link names a row of the collective table.
pub fn collective_ids(col: &[Option<CollectiveRow>], rows: usize, what: &str) -> Result<(), String> {
    match col.iter().position(|c| c.is_some_and(|c| c.index() >= rows)) {
        None => Ok(()),
        Some(i) => Err(format!(
            "{what} of row {i} is collective {} but the collective table has {rows} rows",
            col[i].map_or(0, |c| c.get())
        )),
    }
}

/// Every known occupancy is a percent: finite, 0 to 100.
pub fn occupancy(col: &[Option<f32>], what: &str) -> Result<(), String> {
    match col
        .iter()
        .position(|v| v.is_some_and(|v| !(0.0..=100.0).contains(&v)))
    {
        None => Ok(()),
        Some(i) => Err(format!(
            "{what} of row {i} is {}, not a percent from 0 to 100",
            col[i].unwrap_or_default()
        )),
    }
}

/// Times within ±[`MAX_ABS_TIME`] and no range ending before it starts.
pub fn times(start: &[i64], end: &[i64], table: &str) -> Result<(), String> {
    time_range(start, end, table)?;
    ordered(start, end, table)
}

/// No range ending before it starts.
pub fn ordered(start: &[i64], end: &[i64], table: &str) -> Result<(), String> {
    for (i, (&s, &e)) in start.iter().zip(end).enumerate() {
        if e < s {
            return Err(format!(
                "{table} row {i} ends before it starts (start {s} ns, end {e} ns)"
            ));
        }
    }
    Ok(())
}

/// Times within ±[`MAX_ABS_TIME`].
pub fn time_range(start: &[i64], end: &[i64], table: &str) -> Result<(), String> {
    let inside = |t: i64| (-MAX_ABS_TIME..=MAX_ABS_TIME).contains(&t);
    match start
        .iter()
        .zip(end)
        .position(|(&s, &e)| !inside(s) || !inside(e))
    {
        None => Ok(()),
        Some(i) => Err(format!(
            "{table} row {i} has a time out of range (start {} ns, end {} ns; the limit is ±2^62 ns)",
            start[i], end[i]
        )),
    }
}

/// No two rows with the same key (threads: pid and tid; devices: id).
pub fn unique<K: std::hash::Hash + Eq + std::fmt::Debug>(
    keys: impl Iterator<Item = K>,
    what: &str,
) -> Result<(), String> {
    let mut seen = crate::trace::FxHashMap::default();
    for (i, k) in keys.enumerate() {
        if let Some(&j) = seen.get(&k) {
            return Err(format!("{what} rows {j} and {i} are both {k:?}"));
        }
        seen.insert(k, i);
    }
    Ok(())
}

//! A device's window cut into equal columns, each with its busy time, its
//! idle time by cause and the culprit with the most idle time in it: what a
//! timeline strip draws. The columns bin the same busy spans and idle
//! segments the analysis sums, so a strip's columns add up to the device's
//! breakdown.
//!
//! ```text
//! window     |<------------------------------------------->|
//! busy       [....]      [..........]          [.....]
//! idle            [sync.]            [dataloader]
//! columns    |   c0   |   c1   |   c2   |   c3   |   c4   |
//!            each: busy ns, idle ns by cause, the heaviest culprit
//! ```

use crate::causes::{Cause, CauseTotals};
use crate::intervals::Span;
use crate::names::display_source;
use crate::segments::IdleSegment;
use gapscope_collectors::trace::FxHashMap;
use gapscope_collectors::trace::{Ns, OpRow, StrId, Strings, Trace};

/// Columns of a timeline strip: about one per 2 px of a page-wide strip.
pub const STRIP_COLUMNS: usize = 500;

/// A device's window cut into equal columns.
#[derive(Clone, Debug, Default)]
pub struct Strip {
    /// GPU index.
    pub device: u32,
    /// The analysed window.
    pub window: Span,
    /// `[start, end)` of each column, and what happened in it.
    pub columns: Vec<Column>,
}

/// What one column of a strip holds. `busy_ns + idle.total()` is the
/// column's length.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Column {
    /// Start, ns since the trace origin.
    pub start: Ns,
    /// End, ns.
    pub end: Ns,
    /// Time with some GPU work running.
    pub busy_ns: Ns,
    /// Idle time by cause.
    pub idle: CauseTotals,
    /// The culprit with the most idle time in the column.
    pub culprit: Option<Culprit>,
}

/// Who is blamed for a piece of idle time.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Culprit {
    /// Why.
    pub cause: Cause,
    /// Innermost operator.
    pub operator: Option<String>,
    /// Nearest annotation / module / DataLoader range.
    pub annotation: Option<String>,
    /// Source frame.
    pub source: Option<String>,
    /// Idle ns of this culprit inside the column.
    pub ns: Ns,
}

/// Column `c` of `n` over `window` starts here (integer arithmetic, so
/// columns tile the window exactly).
fn bound((s, e): Span, n: usize, c: usize) -> Ns {
    s + ((e - s) as i128 * c as i128 / n as i128) as Ns
}

/// The column of `n` over `window` that time `t` (inside it) falls in:
/// `(t - start) * n / len`, in `i64` when the product fits (a window of
/// up to 2^63 / n ns: over 200 days at 500 columns), else in `i128`, whose
/// division is several times slower (a strip bins millions of segments).
fn column_of((s, e): Span, n: usize, t: Ns) -> usize {
    let (off, len) = (t - s, e - s);
    match off.checked_mul(n as i64) {
        Some(p) => (p / len) as usize,
        None => (off as i128 * n as i128 / len as i128) as usize,
    }
}

/// Calls `f(column, ns)` for each of `columns` (`window` cut into
/// equal columns by [`empty_columns`]) that `[s, e)` overlaps.
fn spread_over(columns: &[Column], window: Span, (s, e): Span, mut f: impl FnMut(usize, Ns)) {
    let (s, e) = (s.max(window.0), e.min(window.1));
    if s >= e {
        return;
    }
    for (c, col) in columns
        .iter()
        .enumerate()
        .skip(column_of(window, columns.len(), s))
    {
        if col.start >= e {
            break;
        }
        let ns = e.min(col.end) - s.max(col.start);
        if ns > 0 {
            f(c, ns);
        }
    }
}

/// `window` cut into `n` equal columns, nothing in them yet.
fn empty_columns(window: Span, n: usize) -> Vec<Column> {
    (0..n)
        .map(|c| Column {
            start: bound(window, n, c),
            end: bound(window, n, c + 1),
            ..Column::default()
        })
        .collect()
}

/// Bins busy spans and idle segments of one device into `n` columns.
pub fn strip(
    trace: &Trace,
    device: u32,
    window: Span,
    busy: &[Span],
    segs: &[IdleSegment],
    n: usize,
) -> Strip {
    if window.1 <= window.0 || n == 0 {
        return Strip {
            device,
            window,
            columns: Vec::new(),
        };
    }
    let mut columns = empty_columns(window, n);
    let mut busy_ns = vec![0; n];
    for &b in busy {
        spread_over(&columns, window, b, |c, ns| busy_ns[c] += ns);
    }
    // Per column: idle ns per (cause, op name, annotation name, source).
    type Key = (Cause, Option<StrId>, Option<StrId>, StrId);
    let mut blame: Vec<FxHashMap<Key, Ns>> = vec![FxHashMap::default(); n];
    let mut idle: Vec<CauseTotals> = vec![CauseTotals::default(); n];
    let name = |row: Option<OpRow>| row.map(|r| trace.cpu_ops.name[r.index()]);
    // Consecutive segments in one column often share a key: their ns are
    // summed before one map update (sums of integers, so the same totals).
    let mut run: Option<(usize, Key, Ns)> = None;
    for s in segs {
        let key = (s.cause, name(s.op), name(s.annotation), s.source);
        spread_over(&columns, window, (s.start, s.end), |c, ns| {
            idle[c].add(s.cause, ns);
            match &mut run {
                Some((rc, rk, rns)) if *rc == c && *rk == key => *rns += ns,
                _ => {
                    if let Some((rc, rk, rns)) = run.replace((c, key, ns)) {
                        *blame[rc].entry(rk).or_default() += rns;
                    }
                }
            }
        });
    }
    if let Some((rc, rk, rns)) = run {
        *blame[rc].entry(rk).or_default() += rns;
    }
    for ((col, b), i) in columns.iter_mut().zip(busy_ns).zip(idle) {
        col.busy_ns = b;
        col.idle = i;
    }
    for (col, b) in columns.iter_mut().zip(blame) {
        col.culprit = b
            .into_iter()
            .max_by_key(|&(k, ns)| (ns, std::cmp::Reverse(k)))
            .map(|((cause, op, ann, src), ns)| Culprit {
                cause,
                operator: op.map(|s| trace.strings.get(s).to_string()),
                annotation: ann.map(|s| trace.strings.get(s).to_string()),
                source: (src != Strings::EMPTY).then(|| display_source(trace.strings.get(src)).to_string()),
                ns,
            });
    }
    Strip {
        device,
        window,
        columns,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spread_tiles_the_window() {
        let w = (100, 200);
        let mut got = vec![0; 3];
        spread_over(&empty_columns(w, 3), w, (90, 210), |c, ns| got[c] += ns);
        assert_eq!(got, vec![33, 33, 34]);
        let mut got = vec![0; 3];
        spread_over(&empty_columns(w, 3), w, (140, 170), |c, ns| got[c] += ns);
        // Columns: [100,133) [133,166) [166,200).
        assert_eq!(got, vec![0, 26, 4]);
    }

    #[test]
    fn columns_add_up_to_their_length() {
        let t = Trace::default();
        let segs = [IdleSegment::unblamed(10, 40, Cause::Sync)];
        let s = strip(&t, 0, (0, 100), &[(0, 10), (40, 100)], &segs, 7);
        for c in &s.columns {
            assert_eq!(c.busy_ns + c.idle.total(), c.end - c.start);
        }
        assert_eq!(s.columns.iter().map(|c| c.idle.sync).sum::<Ns>(), 30);
        assert_eq!(s.columns[1].culprit.as_ref().unwrap().cause, Cause::Sync);
    }
}

//! Interval arithmetic over half-open `[start, end)` nanosecond ranges: the
//! sweeps every time analysis is built from.
//!
//! ```text
//! input   [0....10)  [5...15)      [20..30)  [30..31)
//! union   [0..........15)          [20.......31)
//! gaps in window [0, 40):  [15..20)  [31..40)
//! ```

use gapscope_collectors::trace::Ns;

/// A half-open time range `[start, end)` in ns.
pub type Span = (Ns, Ns);

/// Merges `spans` (any order, may overlap, may touch) into sorted, disjoint,
/// non-touching spans. Empty spans are dropped.
pub fn union(mut spans: Vec<Span>) -> Vec<Span> {
    spans.retain(|&(s, e)| e > s);
    spans.sort_unstable();
    let mut out: Vec<Span> = Vec::with_capacity(spans.len());
    for (s, e) in spans {
        match out.last_mut() {
            Some(last) if s <= last.1 => last.1 = last.1.max(e),
            _ => out.push((s, e)),
        }
    }
    out
}

/// Total length of disjoint spans.
pub fn total(spans: &[Span]) -> Ns {
    spans.iter().map(|&(s, e)| e - s).sum()
}

/// The parts of disjoint sorted `spans` inside `window`.
pub fn clip(spans: &[Span], window: Span) -> Vec<Span> {
    let first = spans.partition_point(|&(_, e)| e <= window.0);
    spans[first..]
        .iter()
        .take_while(|&&(s, _)| s < window.1)
        .map(|&(s, e)| (s.max(window.0), e.min(window.1)))
        .filter(|&(s, e)| e > s)
        .collect()
}

/// Length of disjoint sorted `spans` inside `window`.
pub fn total_in(spans: &[Span], window: Span) -> Ns {
    total(&clip(spans, window))
}

/// The parts of `window` not covered by disjoint sorted `spans`: the gaps.
pub fn complement(spans: &[Span], window: Span) -> Vec<Span> {
    let mut out = Vec::new();
    let mut at = window.0;
    for (s, e) in clip(spans, window) {
        if s > at {
            out.push((at, s));
        }
        at = e;
    }
    if at < window.1 {
        out.push((at, window.1));
    }
    out
}

/// `a` minus `b`, both disjoint and sorted.
pub fn subtract(a: &[Span], b: &[Span]) -> Vec<Span> {
    let mut out = Vec::new();
    for &(s, e) in a {
        out.extend(complement(b, (s, e)));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn union_merges_overlapping_and_touching() {
        let u = union(vec![(20, 30), (0, 10), (5, 15), (30, 31), (40, 40)]);
        assert_eq!(u, vec![(0, 15), (20, 31)]);
        assert_eq!(total(&u), 26);
    }

    #[test]
    fn complement_finds_gaps_at_edges() {
        let u = vec![(0, 15), (20, 31)];
        assert_eq!(complement(&u, (0, 40)), vec![(15, 20), (31, 40)]);
        assert_eq!(complement(&u, (-5, 12)), vec![(-5, 0)]);
        assert_eq!(complement(&[], (3, 7)), vec![(3, 7)]);
        assert_eq!(total_in(&u, (10, 25)), 10);
    }

    #[test]
    fn subtract_removes_covered_parts() {
        assert_eq!(subtract(&[(0, 10), (20, 30)], &[(5, 22)]), vec![(0, 5), (22, 30)]);
    }
}

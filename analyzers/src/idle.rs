//! The idle report of one device: idle time by cause, the longest gaps and
//! the operators that cause the most idle time, as plain serializable data.
//!
//! ```text
//! segments   [sync 10][fw 5]     [dataloader 30][launch 5]     [sync 10]
//!            \_____ gap 1 _____/ \________ gap 2 ________/     \ gap 3 /
//!
//! idle_by_cause_ns   sync 20, dataloader 30, framework_overhead 5, launch_overhead 5
//! top_gaps           gap 2 (35 ns, cause dataloader), gap 1 (15 ns, sync), gap 3
//!                    (each gap's cause: the one holding most of its time)
//! top_idle_operators grouped by (cause, operator, module class, source,
//!                    first call or steady state)
//! ```

use crate::attribution::module_class;
use crate::causes::{Cause, CauseTotals};
use crate::intervals::Span;
use crate::names::display_source;
use crate::segments::{IdleAnalyzer, IdleSegment};
use gapscope_collectors::trace::FxHashMap;
use gapscope_collectors::trace::{Ns, OpRow, StrId, Strings, Trace};
use serde::{Deserialize, Serialize};
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// How many gaps [`Attribution::top_gaps`] keeps.
pub const TOP_GAPS: usize = 20;
/// How many operators per cause [`Attribution::top_idle_operators`] keeps.
pub const TOP_OPERATORS_PER_CAUSE: usize = 10;

/// Idle time of one device in one window, by cause and by culprit.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Attribution {
    /// GPU index.
    pub device: u32,
    /// The window analyzed, `[start, end)` ns since the trace origin.
    pub window: Span,
    /// Total idle ns in the window (equals the sum of `idle_by_cause_ns`).
    pub idle_ns: Ns,
    /// Idle ns per cause; every cause present.
    pub idle_by_cause_ns: CauseTotals,
    /// The longest gaps, longest first, at most [`TOP_GAPS`].
    pub top_gaps: Vec<TopGap>,
    /// The operators behind the most idle time, per cause, most first.
    pub top_idle_operators: Vec<TopIdleOperator>,
}

/// One of the longest gaps, described by the cause that holds most of its
/// time and that cause's longest segment.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TopGap {
    /// GPU index.
    pub device: u32,
    /// Gap start, ns since the trace origin.
    pub start_ns: Ns,
    /// Gap length, ns.
    pub dur_ns: Ns,
    /// The cause holding most of the gap's time.
    pub cause: Cause,
    /// Operator of that cause's longest segment.
    pub operator: Option<String>,
    /// Annotation / module / DataLoader range of that segment.
    pub annotation: Option<String>,
    /// Source frame of that segment.
    pub source: Option<String>,
}

/// Idle time grouped by cause and culprit.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TopIdleOperator {
    /// Operator name (`aten::item`), if one is blamed.
    pub operator: Option<String>,
    /// Nearest annotation / module / DataLoader range.
    pub annotation: Option<String>,
    /// Source frame (`train.py(42): step`).
    pub source: Option<String>,
    /// The cause.
    pub cause: Cause,
    /// Idle ns.
    pub idle_ns: Ns,
    /// Number of segments.
    pub count: u64,
    /// Number of gaps those segments lie in (a gap splits into a segment
    /// per operator call and cause, so one gap can hold several).
    #[serde(default)]
    pub gaps: u64,
    /// The idle time is inside the operator's first calls, which cost far
    /// more than its later ones (warm-up), kept apart from its steady state.
    #[serde(default)]
    pub first_call: bool,
}

/// Attributes the idle time of `device` inside `window`.
pub fn attribute(trace: &Trace, device: u32, window: Span) -> Attribution {
    let segs = IdleAnalyzer::new(trace).segments(device, window);
    summarize(trace, device, window, &segs)
}

/// Builds the [`Attribution`] of segments already computed for `device`
/// and `window` (e.g. by [`IdleAnalyzer::segments`]).
pub fn summarize(trace: &Trace, device: u32, window: Span, segs: &[IdleSegment]) -> Attribution {
    let idle_by_cause_ns = by_cause(segs);
    Attribution {
        device,
        window,
        idle_ns: idle_by_cause_ns.total(),
        idle_by_cause_ns,
        top_gaps: top_gaps(trace, device, segs),
        top_idle_operators: top_operators(trace, segs),
    }
}

/// Idle ns per cause of `segs`.
pub fn by_cause(segs: &[IdleSegment]) -> CauseTotals {
    let mut t = CauseTotals::default();
    for s in segs {
        t.add(s.cause, s.dur());
    }
    t
}

/// Idle ns per cause of the parts of sorted `segs` inside `span` (a step).
pub fn by_cause_in(segs: &[IdleSegment], (s, e): Span) -> CauseTotals {
    let first = segs.partition_point(|g| g.end <= s);
    let mut t = CauseTotals::default();
    for g in segs[first..].iter().take_while(|g| g.start < e) {
        t.add(g.cause, g.end.min(e) - g.start.max(s));
    }
    t
}

/// Groups sorted segments into gaps: gaps never touch (busy time separates
/// them), so a run of touching segments is one gap.
pub fn gap_runs(segs: &[IdleSegment]) -> impl Iterator<Item = &[IdleSegment]> {
    segs.chunk_by(|a, b| a.end == b.start)
}

fn top_gaps(trace: &Trace, device: u32, segs: &[IdleSegment]) -> Vec<TopGap> {
    let dur = |r: &[IdleSegment]| r[r.len() - 1].end - r[0].start;
    // The longest gaps, then the earliest, kept in a heap of TOP_GAPS as
    // the gaps go by instead of sorting them all (a big trace has a
    // million): each as its key and its segments' place. Equal keys keep
    // their order, as a stable sort would (the place breaks the tie).
    let mut top: BinaryHeap<((Reverse<Ns>, Ns), usize, usize)> = BinaryHeap::with_capacity(TOP_GAPS + 1);
    let mut at = 0;
    for r in gap_runs(segs) {
        top.push(((Reverse(dur(r)), r[0].start), at, r.len()));
        if top.len() > TOP_GAPS {
            top.pop();
        }
        at += r.len();
    }
    top.into_sorted_vec()
        .into_iter()
        .map(|(_, at, len)| {
            let r = &segs[at..at + len];
            // The cause holding most of the gap, then the blame (operator,
            // annotation, source) holding most of that cause's time: fifty
            // short DataLoader pieces outweigh one longer launch, and 47 ms
            // of Python between operators outweigh the longest single
            // operator call (the ResNet-50 sample's 69 ms gaps, where
            // `aten::_cat` holds 2.5 ms).
            let cause = by_cause(r).top().unwrap_or(r[0].cause);
            let name = |row: Option<OpRow>| row.map(|o| trace.cpu_ops.name[o.index()]);
            // Per blame: its time and its first segment (named for it).
            let mut blame: FxHashMap<Blame, (Ns, usize)> = FxHashMap::default();
            for (k, s) in r.iter().enumerate().filter(|(_, s)| s.cause == cause) {
                let b = blame
                    .entry((name(s.op), name(s.annotation), s.source))
                    .or_insert((0, k));
                b.0 += s.dur();
            }
            let top = blame
                .values()
                .max_by_key(|&&(ns, k)| (ns, Reverse(k)))
                .map_or(0, |&(_, k)| k);
            let main = &r[top];
            TopGap {
                device,
                start_ns: r[0].start,
                dur_ns: dur(r),
                cause: main.cause,
                operator: op_name(trace, main.op),
                annotation: op_name(trace, main.annotation),
                source: source_name(trace, main.source),
            }
        })
        .collect()
}

/// Operator name, annotation name, source: what a gap is named by.
type Blame = (Option<StrId>, Option<StrId>, StrId);

/// Cause, operator name, annotation (its module class), source, first call.
type GroupKey<'a> = (Cause, Option<StrId>, Option<&'a str>, StrId, bool);

fn top_operators(trace: &Trace, segs: &[IdleSegment]) -> Vec<TopIdleOperator> {
    // Group by names, not rows: the same operator recurs every step; and
    // by module class, not instance: `nn.Module: FusedMoE_0` .. `_35` are
    // one layer type.
    let name = |row: Option<OpRow>| row.map(|r| trace.cpu_ops.name[r.index()]);
    let class = |row: Option<OpRow>| name(row).map(|s| module_class(trace.strings.get(s)));
    // Per group: idle ns, segments, gaps, and the last gap counted (gaps
    // are numbered in time order, as the segments come).
    let mut groups: FxHashMap<GroupKey, (Ns, u64, u64, usize)> = FxHashMap::default();
    let mut gap = 0usize;
    for (i, s) in segs.iter().enumerate() {
        if i > 0 && segs[i - 1].end != s.start {
            gap += 1;
        }
        let g = groups
            .entry((s.cause, name(s.op), class(s.annotation), s.source, s.first_call))
            .or_insert((0, 0, 0, usize::MAX));
        g.0 += s.dur();
        g.1 += 1;
        if g.3 != gap {
            g.2 += 1;
            g.3 = gap;
        }
    }
    let mut rows: Vec<_> = groups.into_iter().collect();
    rows.sort_by_key(|&((c, op, ann, src, w), (ns, ..))| (c, std::cmp::Reverse(ns), op, ann, src, w));
    let mut out: Vec<TopIdleOperator> = Vec::new();
    for ((cause, op, ann, src, first_call), (idle_ns, count, gaps, _)) in rows {
        if out.iter().filter(|o| o.cause == cause).count() < TOP_OPERATORS_PER_CAUSE {
            out.push(TopIdleOperator {
                operator: op.map(|s| trace.strings.get(s).to_string()),
                annotation: ann.map(str::to_string),
                source: source_name(trace, src),
                cause,
                idle_ns,
                count,
                gaps,
                first_call,
            });
        }
    }
    out.sort_by_key(|o| (std::cmp::Reverse(o.idle_ns), o.cause));
    out
}

fn op_name(trace: &Trace, row: Option<OpRow>) -> Option<String> {
    trace.op_name(row).map(str::to_string)
}

fn source_name(trace: &Trace, id: StrId) -> Option<String> {
    (id != Strings::EMPTY).then(|| display_source(trace.strings.get(id)).to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seg(start: Ns, end: Ns) -> IdleSegment {
        IdleSegment::unblamed(start, end, Cause::CpuOp)
    }

    /// The heap keeps what sorting every gap and keeping the first
    /// TOP_GAPS keeps: longest first, then earliest, equal lengths (many
    /// here) in time order, gaps of one segment and of several alike.
    #[test]
    fn top_gaps_are_the_longest_then_earliest_of_all() {
        let mut segs = Vec::new();
        let mut t: Ns = 0;
        for i in 0..500i64 {
            let len = 1 + (i * 7919) % 37;
            // Every third gap is cut in two segments.
            if i % 3 == 0 && len > 1 {
                segs.push(seg(t, t + 1));
                segs.push(seg(t + 1, t + len));
            } else {
                segs.push(seg(t, t + len));
            }
            t += len + 5;
        }
        let got: Vec<(Ns, Ns)> = top_gaps(&Trace::default(), 0, &segs)
            .iter()
            .map(|g| (g.start_ns, g.dur_ns))
            .collect();
        let mut all: Vec<(Ns, Ns)> = gap_runs(&segs)
            .map(|r| (r[0].start, r[r.len() - 1].end - r[0].start))
            .collect();
        all.sort_by_key(|&(s, d)| (Reverse(d), s));
        all.truncate(TOP_GAPS);
        assert_eq!(got, all);
        assert_eq!(got.len(), TOP_GAPS);
    }
}

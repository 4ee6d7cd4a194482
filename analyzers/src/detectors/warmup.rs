//! D16, warm-up: idle time that first calls pay and steady state does not.
//!
//! ```text
//! thread 1   [aten::addmm (1st, 1.7 ms).........][aten::addmm 80 µs][...]
//!              [Lazy Function Loading][L]
//! stream 7                                   [gemm]        [gemm]
//! pieces     [cpu_op (first call)..........]
//!            -> first_call_warmup, not cpu_bound_operator
//! ```
//!
//! Evidence: CPU-side idle pieces (`cpu_op`, `framework_overhead`, or the
//! launch call) inside an operator's first call that costs far more than
//! its later calls with the same input shapes
//! ([`first_calls`](crate::attribution::first_calls): over 5× their median
//! and 50 µs more, each call's host time counted without the time it was
//! blocked waiting for the GPU, so a first `.item()` behind queued work is
//! no warm-up), and pieces under CUPTI's `Lazy Function Loading`
//! records (the driver loading a kernel's module on its first launch; Kineto
//! files them as overhead, but the program pays them without a profiler
//! too), and the pieces of a slow call that holds such a record
//! ([`Cx::loads_module`]: the kernel's first launch, slow because it loads
//! the module, not a slow or descheduled call, so not D14's), and pieces
//! inside a range the program itself names warm-up
//! ([`is_warmup_name`](crate::names::is_warmup_name): a benchmark's
//! `[...|warmup|forward]` iterations, run before it measures). Library
//! initialization, kernel selection, the caching allocator's growth and
//! lazy loading happen once: they tell nothing about the steady state, so
//! they are claimed before D2, D3 and D14 could read them as a hot loop.
//!
//! Threshold: [`NOISE_NS`](super::NOISE_NS). Attribution: the operator with
//! the most warm-up idle time. Savings: not estimable for the steady state
//! (there the cost is already gone).

use super::{CallClass, Cx, Draft, MAX_EVIDENCE, NOISE_NS};
use crate::attribution::{host_ns, module_class};
use crate::causes::Cause;
use crate::format::duration;
use gapscope_collectors::trace::{CallRow, Ns, OpRow};
use std::collections::BTreeMap;

pub(super) fn detect(cx: &Cx, claims: &mut [bool]) -> Option<Draft> {
    let lazy = &cx.ev.lazy_loading;
    let in_lazy = |s: Ns, e: Ns| {
        let k = lazy.partition_point(|l| l.1 <= s);
        lazy.get(k).is_some_and(|l| l.0 < e)
    };
    let host_side = [Cause::CpuOp, Cause::FrameworkOverhead, Cause::LaunchOverhead];
    let pieces = cx.take_of(claims, &host_side, |p| {
        let copy = matches!(
            p.class,
            Some(CallClass::Pageable | CallClass::TinyHtoD | CallClass::SyncCopy)
        );
        let loading_call = p.call.is_some_and(|c| cx.loads_module(c));
        !copy && (cx.seg(p).first_call || in_lazy(p.start, p.end) || loading_call)
    });
    let idle = cx.total(&pieces);
    if idle < NOISE_NS {
        for &i in &pieces {
            claims[i as usize] = false;
        }
        return None;
    }
    let t = cx.trace;
    let ops = &t.cpu_ops;
    // The first calls behind the pieces, by operator name: the innermost
    // operator whose own first call is the slow one (`aten::addmm`, not
    // the `aten::linear` around it).
    let mut calls: BTreeMap<String, Vec<OpRow>> = BTreeMap::new();
    // Idle time inside ranges the program names warm-up, by range name.
    let mut ranges: BTreeMap<String, Ns> = BTreeMap::new();
    for &i in &pieces {
        let p = &cx.piece(i);
        let seg = cx.seg(p);
        if !seg.first_call {
            continue;
        }
        let row = seg.op.or(seg.annotation);
        if let Some(r) = row.and_then(|r| cx.ops.warmup_range[r.index()]) {
            *ranges
                .entry(t.strings.get(ops.name[r.index()]).to_string())
                .or_default() += p.dur();
        }
        let mut at = row;
        while let Some(r) = at.filter(|r| !cx.ops.first_call_own[r.index()]) {
            at = ops.parent[r.index()];
        }
        let Some(row) = at else {
            continue;
        };
        let v = calls
            .entry(t.strings.get(ops.name[row.index()]).to_string())
            .or_default();
        if !v.contains(&row) {
            v.push(row);
        }
    }
    // An operator whose first call holds another named first call (the
    // `aten::linear` around a slow `aten::addmm`) is not named itself.
    let all: Vec<OpRow> = calls.values().flatten().copied().collect();
    let holds_another = |r: OpRow| {
        all.iter().any(|&o| {
            let mut at = ops.parent[o.index()];
            while let Some(a) = at.filter(|&a| a != r) {
                at = ops.parent[a.index()];
            }
            o != r && at == Some(r)
        })
    };
    for rows in calls.values_mut() {
        rows.retain(|&r| !holds_another(r));
    }
    calls.retain(|_, rows| !rows.is_empty());
    let mut named: Vec<(String, Vec<OpRow>)> = calls.into_iter().collect();
    // Host time, as the first calls were found by: a wait for the GPU
    // inside a call is not its cost.
    let dur = |r: OpRow| host_ns(t, &cx.ops.blocked, r.index());
    named.sort_by_key(|(n, rows)| {
        (
            std::cmp::Reverse(rows.iter().map(|&r| dur(r)).sum::<Ns>()),
            n.clone(),
        )
    });
    let lazy_n = lazy
        .iter()
        .filter(|l| l.0 < cx.window.1 && l.1 > cx.window.0)
        .count();
    let p = cx.platform;
    let mut parts = Vec::new();
    if let Some((name, rows)) = named.first() {
        let (lo, hi) = rows
            .iter()
            .map(|&r| dur(r))
            .fold((Ns::MAX, 0), |(lo, hi), d| (lo.min(d), hi.max(d)));
        let steady = steady_range(cx, rows);
        let shapes = if rows.len() == 1 {
            "its first call takes".to_string()
        } else {
            format!("its first call for each of {} input shapes takes", rows.len())
        };
        let others = if named.len() > 1 {
            let rest: Vec<String> = named[1..].iter().take(3).map(|(n, _)| format!("`{n}`")).collect();
            format!(" (and {} more: {})", named.len() - 1, rest.join(", "))
        } else {
            String::new()
        };
        parts.push(format!(
            "`{name}`{others} is slow the first time: {shapes} {}{} against {steady} afterwards. \
             First calls create the context, library handles and workspaces, pick and \
             compile kernels (autotuning), grow the caching allocator and load each kernel on \
             its first launch (lazy loading; {} loads them at startup); steady-state steps do \
             not pay that again.",
            duration(lo),
            if hi > lo {
                format!("–{}", duration(hi))
            } else {
                String::new()
            },
            p.eager_loading()
        ));
    }
    let mut ranges: Vec<(String, Ns)> = ranges.into_iter().collect();
    ranges.sort_by_key(|(n, ns)| (std::cmp::Reverse(*ns), n.clone()));
    if let Some((name, ns)) = ranges.first() {
        let others = match ranges.len() {
            1 => String::new(),
            n => format!(" and {} more such ranges", n - 1),
        };
        parts.push(format!(
            "{} of it is inside `{name}`{others}, which the program itself names warm-up: the \
             iterations it runs before it measures. Whatever they pay once (allocator growth, \
             library handles, kernel selection) says nothing about the measured steps; judge \
             those by the ranges after it.",
            duration(ranges.iter().map(|r| r.1).sum::<Ns>().max(*ns)),
        ));
    }
    if lazy_n > 0 {
        parts.push(format!(
            "{lazy_n} `Lazy Function Loading` records show the driver loading a kernel's module \
             on its first launch: the profiler records them as overhead, but the program pays \
             them without the profiler too, once per kernel (set {} to load every kernel at \
             startup instead).{}",
            p.eager_loading(),
            loading_calls_text(cx, &pieces)
        ));
    }
    parts.push(
        "To measure the steady state, run the step once before profiling (or profile with \
         `torch.profiler.schedule(wait=1, warmup=1, active=N)`); to shorten the first step itself, \
         warm up with every input shape the run will see."
            .to_string(),
    );
    let what = match (named.first(), ranges.first()) {
        (Some((n, _)), _) => format!("`{n}`"),
        (None, Some((r, _))) => format!("inside `{r}`"),
        (None, None) => "kernel loading".to_string(),
    };
    let title = format!(
        "{} of idle time is first-call warm-up ({what}{}), not steady state",
        duration(idle),
        if lazy_n > 0 {
            format!(
                ", {lazy_n} {} loaded on first launch",
                if lazy_n == 1 { "kernel" } else { "kernels" }
            )
        } else {
            String::new()
        }
    );
    let mut d = Draft::new("D16", "first_call_warmup", title, parts.join(" "));
    d.occurrences = (named.iter().map(|(_, r)| r.len()).sum::<usize>() + lazy_n) as u64;
    d.estimable = false;
    for &r in named.iter().flat_map(|(_, rows)| rows).take(MAX_EVIDENCE / 2) {
        d.evidence.push(cx.op_evidence(r));
    }
    if let Some((_, rows)) = named.first() {
        let r = rows[0].index();
        d.blame = Some((
            cx.name(Some(rows[0])),
            cx.name(cx.ops.annotation[r])
                .map(|a| module_class(&a).to_string()),
            cx.source(cx.ops.source[r]),
        ));
    } else if let Some((name, _)) = ranges.first() {
        d.blame = Some((None, Some(name.clone()), None));
    }
    d.pieces = pieces;
    Some(d)
}

/// " 3 calls to `cudaLaunchKernel` (up to 141.5 µs) hold such a record:
/// ...": the slow calls among `pieces` that hold a lazy-loading record,
/// which D16 claims whole (a first launch, not a slow or descheduled call:
/// D14 skips them); empty when there are none.
fn loading_calls_text(cx: &Cx, pieces: &[u32]) -> String {
    let rt = &cx.trace.runtime;
    let mut calls: Vec<CallRow> = pieces
        .iter()
        .filter_map(|&i| cx.piece(i).call)
        .filter(|&c| cx.loads_module(c))
        .collect();
    calls.sort_unstable();
    calls.dedup();
    let Some(longest) = calls
        .iter()
        .map(|c| rt.end[c.index()] - rt.start[c.index()])
        .max()
    else {
        return String::new();
    };
    let mut apis: Vec<&str> = calls
        .iter()
        .map(|c| cx.trace.strings.get(rt.name[c.index()]))
        .collect();
    apis.sort_unstable();
    apis.dedup();
    let apis: Vec<String> = apis.iter().map(|a| format!("`{a}`")).collect();
    let (n, hold, them) = if calls.len() == 1 {
        ("1 call".to_string(), "holds", "it is a kernel's first launch")
    } else {
        (
            format!("{} calls", calls.len()),
            "hold",
            "each is a kernel's first launch",
        )
    };
    format!(
        " {n} to {} (up to {}) {hold} such a record: {them}, slow because it loads the module, \
         not a slow or descheduled call, and its idle time is counted here.",
        apis.join(" / "),
        duration(longest)
    )
}

/// "42 µs–80 µs": the range of the median later-call host times of the
/// operators (name and shapes) of `rows`.
fn steady_range(cx: &Cx, rows: &[OpRow]) -> String {
    let ops = &cx.trace.cpu_ops;
    let mut medians: Vec<Ns> = Vec::new();
    for &r in rows.iter().take(8) {
        let (name, shapes, start) = (ops.name[r.index()], ops.shapes[r.index()], ops.start[r.index()]);
        let mut later: Vec<Ns> = (0..ops.len())
            .filter(|&i| ops.name[i] == name && ops.shapes[i] == shapes && ops.start[i] > start)
            .map(|i| host_ns(cx.trace, &cx.ops.blocked, i))
            .collect();
        if later.is_empty() {
            continue;
        }
        let k = later.len() / 2;
        medians.push(*later.select_nth_unstable(k).1);
    }
    let (lo, hi) = medians
        .iter()
        .fold((Ns::MAX, 0), |(lo, hi), &m| (lo.min(m), hi.max(m)));
    match medians.len() {
        0 => "much less".to_string(),
        _ if lo == hi => duration(lo),
        _ => format!("{}–{}", duration(lo), duration(hi)),
    }
}

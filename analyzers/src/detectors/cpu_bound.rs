//! D2, CPU-bound launch starvation ("host wait"): the GPU finished its work
//! and the launching thread had not issued the next yet, because it was
//! computing inside an operator or running Python / framework code between
//! operators (docs/detectors.md, D2; HTA's host wait, TraceLens's
//! `cpu_bottleneck`).
//!
//! ```text
//! stream 7    [k1.....]                              [k2...]
//! thread 1    [aten::a][train.py: python.....][aten::nonzero (CPU)...][L2]
//! pieces              [framework_overhead....][cpu_op................]
//!                      -> framework_overhead   -> cpu_bound_operator
//! ```
//!
//! Evidence: the pieces of cause `cpu_op` and `framework_overhead` that no
//! earlier detector claimed, in *stretches*: maximal runs of such pieces with
//! no gap between them (the host's time from the GPU going idle to the next
//! launch, or to a piece another detector claimed).
//!
//! Grouping, so that each idle nanosecond is claimed by one group:
//!
//! - **by user range** (`cpu_bound_range`): a run of a stretch's pieces
//!   whose innermost user range (`record_function`, NVTX, `Optimizer.step#`;
//!   not a ProfilerStep, not an `nn.Module`) is one range instance, and
//!   whose operator pieces name at least two distinct operators. The range
//!   did host work through several operators without launching anything:
//!   the fix is to the range as a whole (a whole function moved to the GPU),
//!   so the finding explains all of the range's idle time in the stretch,
//!   the Python between its operators included. Its `operator` is the
//!   operator name with the most idle time in it (summed over that
//!   operator's calls and sites), at its heaviest site; its `annotation`
//!   the range.
//!   When the Python between the operators holds more than half of the
//!   group's idle time, the advice is the one for Python. With one
//!   operator the operator is the thing to fix, and the pieces stay in
//!   the operator grouping below;
//! - **by operator** (`cpu_bound_operator`): the other `cpu_op` pieces, by
//!   operator name;
//! - **framework overhead** (`framework_overhead`): the other pieces, one
//!   group;
//! - **the other operators** (`cpu_bound_other_operators`): the operator
//!   groups not reported on their own (under the floor, or past
//!   [`MAX_GROUPS`](super::MAX_GROUPS)), together, when there are at least
//!   two and they reach the floor together. A step's host time is often
//!   spread thin over dozens of operators, none a finding of its own; left
//!   out, that time had no finding at all. No operator is named: the hint
//!   lists the three with the most time and their shares, and says which
//!   of them run inside operators that launch GPU work (an allocation
//!   inside a convolution is the convolution's host side).
//!
//! ```text
//! stream 7   [k1.]                                         [k2....]
//! thread 1   [features (record_function)......][L2]
//!              [aten::sort....][py][aten::cumsum]
//! pieces         [cpu_op.......][fw][cpu_op......]
//!                -> one cpu_bound_range `features`, operator aten::sort
//! ```
//!
//! A group is reported when it holds at least [`MIN_SHARE`] of the window
//! (ours: below 1 % a fix cannot move the step time measurably) and at
//! least [`NOISE_NS`](super::NOISE_NS). Attribution: the operator with the
//! most idle time (TraceLens's `dominant_op`), its annotation and source
//! line. Savings: replay without that CPU time (moved off the critical
//! path), capped at the idle time.

use super::{Cx, Draft, NOISE_NS};
use crate::causes::Cause;
use crate::format::{and_list, duration, percent_whole};
use crate::names::{display_source, is_allocation_op};
use gapscope_collectors::trace::parallel::{both, PARALLEL_ROWS};
use gapscope_collectors::trace::{CpuOpKind, FxHashMap, FxHashSet, Ns, OpRow, StrId, Strings};
use std::sync::Mutex;

/// Share of the window a group must explain to be reported (ours).
pub const MIN_SHARE: f64 = 0.01;

/// The key of the group of the operators left out of their own groups
/// (followed by their number).
const REST: &str = "t:";

/// How a piece is grouped: by user range (the range's row), by operator, or
/// as framework overhead.
#[derive(Clone, Copy, PartialEq, Eq)]
enum By {
    Range(OpRow),
    Operator,
    Framework,
}

/// D2's drafts, running `beside` (work that claims nothing) on this thread
/// while the largest group is drafted on another, and what `beside`
/// returned: on a big trace that group's blame and advice walk a million
/// pieces, long after this thread has drafted the other groups.
pub(super) fn detect<T: Send>(
    cx: &Cx,
    claims: &mut [bool],
    beside: impl FnOnce() -> T + Send,
) -> (Vec<Draft>, T) {
    let taken = cx.take_of(claims, &[Cause::CpuOp, Cause::FrameworkOverhead], |_| true);
    let ranges = grouping(cx, &taken);
    let by = |k: usize| match ranges[k] {
        Some(r) => By::Range(r),
        None if cx.piece(taken[k]).cause == Cause::CpuOp => By::Operator,
        None => By::Framework,
    };
    // Keys: `r:` + range name, `o:` + operator name, empty for overhead
    // ([`REST`] + their number for the other operators, below);
    // grouped by interned name first, so the text is made once per group.
    let ops = &cx.trace.cpu_ops;
    let name_of = |row: Option<OpRow>| row.map_or(Strings::EMPTY, |r| ops.name[r.index()]);
    let keyed = taken.iter().enumerate().map(|(k, &i)| {
        let k = match by(k) {
            By::Range(r) => (0u8, name_of(Some(r))),
            By::Operator => (1, name_of(cx.seg(&cx.piece(i)).op)),
            By::Framework => (2, Strings::EMPTY),
        };
        (k, i)
    });
    let groups = cx.groups_by_label(keyed, |&(tag, name)| match tag {
        0 => format!("r:{}", cx.trace.strings.get(name)),
        1 => format!("o:{}", cx.trace.strings.get(name)),
        _ => String::new(),
    });
    let floor = ((MIN_SHARE * cx.window_ns() as f64) as i64).max(NOISE_NS);
    // The largest groups above the floor become findings. The operators
    // left out (under the floor, or past the most groups shown) are one
    // more group when together they reach the floor: a step's host time is
    // often spread thin over dozens of operators, none a finding of its
    // own, and a fix to the host side as a whole (graphs, compiling)
    // removes them together. The other groups' pieces are left unclaimed.
    let mut kept = Vec::new();
    let (mut rest, mut rest_ops) = (Vec::new(), 0usize);
    for (key, pieces) in groups {
        let idle = cx.total(&pieces);
        if idle < floor || kept.len() >= super::MAX_GROUPS {
            if key.starts_with("o:") {
                rest.extend(pieces);
                rest_ops += 1;
            } else {
                for &i in &pieces {
                    claims[i as usize] = false;
                }
            }
            continue;
        }
        kept.push((key, pieces, idle));
    }
    let rest_idle = cx.total(&rest);
    if rest_ops >= 2 && rest_idle >= floor {
        rest.sort_unstable();
        kept.push((format!("{REST}{rest_ops}"), rest, rest_idle));
    } else {
        for &i in &rest {
            claims[i as usize] = false;
        }
    }
    // A range group's instances are counted now, so that the taken pieces
    // and their ranges (a million each on a big trace) are freed before
    // the groups are drafted.
    let kept: Vec<(String, Vec<u32>, Ns, u64)> = kept
        .into_iter()
        .map(|(key, pieces, idle)| {
            let instances = if key.starts_with("r:") {
                let mut rows = range_rows(&taken, &ranges, &pieces);
                rows.sort_unstable();
                rows.dedup();
                rows.len() as u64
            } else {
                0
            };
            (key, pieces, idle, instances)
        })
        .collect();
    drop((taken, ranges));
    // Whether the other operators are other than some with findings of
    // their own.
    let operator_findings = kept
        .iter()
        .any(|(key, ..)| key.starts_with("o:") || key.starts_with("r:"));
    let draft = |(key, pieces, idle, instances): (String, Vec<u32>, Ns, u64)| -> Draft {
        let per_step = duration(idle / cx.n_steps());
        let share = percent_whole(idle, cx.window_ns());
        let mut d = if let Some(range) = key.strip_prefix("r:") {
            // The operator with the most idle time in the range, by name
            // (summed over its call sites: a layer's 36 instances are one
            // operator), named at its heaviest site; the range itself as
            // the annotation.
            let ops: Vec<u32> = pieces
                .iter()
                .copied()
                .filter(|&i| cx.piece(i).cause == Cause::CpuOp)
                .collect();
            let (top, top_idle) = cx.heaviest_operator(&ops).unwrap_or((Strings::EMPTY, 0));
            let top_pieces: Vec<u32> = ops
                .iter()
                .copied()
                .filter(|&i| cx.seg(&cx.piece(i)).op.map(|r| cx.trace.cpu_ops.name[r.index()]) == Some(top))
                .collect();
            let (op, _, src) = cx.blame(&top_pieces);
            let n_ops = {
                let names: FxHashSet<u32> = ops
                    .iter()
                    .filter_map(|&i| cx.seg(&cx.piece(i)).op)
                    .map(|op| cx.trace.cpu_ops.name[op.index()].0)
                    .collect();
                names.len()
            };
            // The source line is the dominant operator's, not the range's.
            let at = src.as_ref().map(|s| format!(" at {s}")).unwrap_or_default();
            let dominant = match op.as_deref() {
                Some(name) if 2 * top_idle >= idle => format!("most of the time in `{name}`{at}"),
                Some(name) => format!(
                    "the most time in `{name}`{at}, {} of it",
                    percent_whole(top_idle, idle)
                ),
                None => "most of the time in its operators".to_string(),
            };
            let per = cx.per_step();
            // Mostly the Python between the operators: that is what to
            // change, not the operators.
            let in_ops = cx.total(&ops);
            let what = if 2 * in_ops < idle {
                format!(
                    "Most of it ({}) is the Python between the operators, not the operators \
                     themselves. {}",
                    percent_whole(idle - in_ops, idle),
                    python_advice(cx, &pieces)
                )
            } else {
                advice(cx, &pieces)
            };
            let mut d = Draft::new(
                "D2",
                "cpu_bound_range",
                format!(
                    "The GPU waits while the `{range}` range works on the CPU ({} idle, {share} of the window)",
                    duration(idle)
                ),
                format!(
                    "The `{range}` range keeps the CPU busy in {n_ops} operators ({dominant}) and the \
                     Python between them for {per_step} {per} while nothing is queued on the \
                     GPU. {what}"
                ),
            );
            d.occurrences = instances;
            d.blame = Some((op, Some(range.to_string()), src));
            d
        } else if let Some(n) = key.strip_prefix(REST) {
            let other = if operator_findings { "other " } else { "" };
            let most: Vec<(StrId, Ns)> = cx.operators_by_time(&pieces).into_iter().take(3).collect();
            let top: Vec<String> = most
                .iter()
                .map(|&(name, t)| format!("`{}`, {}", cx.trace.strings.get(name), percent_whole(t, idle)))
                .collect();
            let inside = launching_parents(cx, &pieces, &most);
            let per = cx.per_step();
            let mut d = Draft::new(
                "D2",
                "cpu_bound_other_operators",
                format!(
                    "The GPU waits while {n} {other}operators work on the CPU ({} idle, {share} of the window)",
                    duration(idle)
                ),
                format!(
                    "{n} {other}operators keep the CPU busy for {per_step} {per} before the next GPU \
                     work is launched (the most: {}).{inside} {}",
                    top.join("; "),
                    advice(cx, &pieces)
                ),
            );
            d.occurrences = cx.distinct(&pieces, |p| cx.seg(p).op);
            // Spread over many operators: naming the largest would blame it
            // for all of them.
            d.blame = Some((None, None, None));
            d
        } else if let Some(op) = key.strip_prefix("o:") {
            let blame = cx.blame(&pieces);
            let place = cx.where_(&Some(op.to_string()), &blame.2);
            let per = cx.per_step();
            let mut d = Draft::new(
                "D2",
                "cpu_bound_operator",
                format!(
                    "The GPU waits while `{op}` works on the CPU ({} idle, {share} of the window)",
                    duration(idle)
                ),
                format!(
                    "{place} keeps the CPU busy for {per_step} {per} before the next GPU work \
                     is launched. {}",
                    advice(cx, &pieces)
                ),
            );
            d.occurrences = cx.distinct(&pieces, |p| cx.seg(p).op);
            d.blame = Some(blame);
            d
        } else {
            let blame = cx.blame(&pieces);
            let inside = blame
                .1
                .as_ref()
                .map(|a| format!(" inside `{a}`"))
                .unwrap_or_default();
            let at = blame.2.as_ref().map(|s| format!(" at {s}")).unwrap_or_default();
            let per = cx.per_step();
            let mut d = Draft::new(
                "D2",
                "framework_overhead",
                format!("The GPU waits for Python / framework code between operators ({} idle, {share} of the window)", duration(idle)),
                format!(
                    "Between operators{inside}{at} the CPU runs Python and framework code for \
                     {per_step} {per} while the GPU has nothing queued. {}",
                    python_advice(cx, &pieces)
                ),
            );
            d.occurrences = pieces.len() as u64;
            d.blame = Some(blame);
            d
        };
        d.pieces = pieces;
        d
    };
    // The largest group is drafted beside the others: on a big trace its
    // blame and advice walk a million pieces. `beside` runs on whichever
    // thread is done first: on a 551 MB DDP trace the other operators'
    // group took the second thread longer than the largest group took
    // the first.
    let parallel = kept.len() > 1 && kept[0].1.len() >= PARALLEL_ROWS;
    let mut kept = kept.into_iter();
    let first = kept.next();
    let beside = Mutex::new(Some(beside));
    let other = Mutex::new(None);
    let then_beside = || {
        let f = beside.lock().expect("beside").take();
        if let Some(f) = f {
            let done = f();
            *other.lock().expect("beside's result") = Some(done);
        }
    };
    let (first, rest) = both(
        parallel,
        || {
            let d = first.map(draft);
            then_beside();
            d
        },
        || {
            let d = kept.map(draft).collect::<Vec<_>>();
            then_beside();
            d
        },
    );
    let other = other.into_inner().expect("beside's result").expect("beside ran");
    (first.into_iter().chain(rest).collect(), other)
}

/// The user range each of `taken` (piece indices, in time order) is
/// grouped by, if any (the others group by their cause: operator or
/// framework overhead); see the module documentation. One `Option<OpRow>`
/// per piece (4 bytes), not a [`By`] (8): a big trace has millions.
fn grouping(cx: &Cx, taken: &[u32]) -> Vec<Option<OpRow>> {
    let mut user_name = NameTest::new(cx.trace.strings.len(), |name| {
        !name.starts_with("ProfilerStep#") && !name.starts_with("nn.Module:")
    });
    let mut ranges: Vec<Option<OpRow>> = taken
        .iter()
        .map(|&i| {
            let seg = cx.seg(&cx.piece(i));
            user_range(cx, seg.op.or(seg.annotation), &mut user_name)
        })
        .collect();
    // Runs: consecutive pieces of one stretch (no gap between them) inside
    // one range instance.
    let op_name = |k: usize| {
        let p = &cx.piece(taken[k]);
        (p.cause == Cause::CpuOp)
            .then(|| cx.seg(p).op)
            .flatten()
            .map(|op| cx.trace.cpu_ops.name[op.index()])
    };
    let mut a = 0;
    while a < taken.len() {
        let mut b = a + 1;
        while b < taken.len()
            && ranges[b] == ranges[a]
            && cx.piece(taken[b]).start == cx.piece(taken[b - 1]).end
        {
            b += 1;
        }
        if ranges[a].is_some() {
            // At least two distinct operator names, or the run is the
            // operator's to fix.
            let mut names = (a..b).filter_map(op_name);
            let two = names.next().is_some_and(|first| names.any(|n| n != first));
            if !two {
                ranges[a..b].fill(None);
            }
        }
        a = b;
    }
    ranges
}

/// The range rows of `pieces` (a group: sorted, all in `taken`), given
/// `ranges`, the range of each of `taken`, in order and a run of one range
/// once (the caller counts the distinct ones): one pass over both lists.
fn range_rows(taken: &[u32], ranges: &[Option<OpRow>], pieces: &[u32]) -> Vec<OpRow> {
    let mut rows: Vec<OpRow> = Vec::new();
    let mut k = 0;
    for &i in pieces {
        while taken[k] < i {
            k += 1;
        }
        if let Some(r) = ranges[k].filter(|&r| rows.last() != Some(&r)) {
            rows.push(r);
        }
    }
    rows
}

/// The innermost user range (`record_function`, NVTX, `Optimizer.step#`)
/// around cpu op row `row` (a piece's operator, else its annotation), if
/// any: ProfilerSteps are the step itself and `nn.Module` ranges are the
/// model's structure, not a region the user marked.
/// `user_name` says whether a range name is a user range's.
fn user_range(cx: &Cx, row: Option<OpRow>, user_name: &mut NameTest<impl Fn(&str) -> bool>) -> Option<OpRow> {
    let ops = &cx.trace.cpu_ops;
    cx.trace.ancestors(row).find(|at| {
        let r = at.index();
        ops.kind[r] == CpuOpKind::UserAnnotation
            && user_name.test(cx.trace.strings.get(ops.name[r]), ops.name[r])
    })
}

/// A test of a name, answered once per distinct string: pieces number in
/// the millions on a big trace, their names in the thousands.
struct NameTest<F> {
    test: F,
    /// Per string id: not asked yet, or the answer.
    known: Vec<Option<bool>>,
}

impl<F: Fn(&str) -> bool> NameTest<F> {
    fn new(strings: usize, test: F) -> Self {
        NameTest {
            test,
            known: vec![None; strings],
        }
    }

    /// The test's answer for `name`, whose id is `id`.
    fn test(&mut self, name: &str, id: StrId) -> bool {
        match self.known.get_mut(id.0 as usize) {
            Some(slot) => *slot.get_or_insert_with(|| (self.test)(name)),
            None => (self.test)(name),
        }
    }
}

/// The sentence on those of `most` (operator names and their idle time in
/// `pieces`) that launch nothing themselves and spend at least half their
/// time inside operators that do (else empty): " `aten::empty` runs inside
/// operators that launch GPU work (`a`, `b` and 12 more), as part of
/// dispatching them." An allocation or a view inside a launching operator is that
/// operator's host side (ResNet-50's `aten::empty` allocates the outputs of
/// `aten::cudnn_batch_norm` and `aten::cudnn_convolution`): named alone, it
/// reads as a host-only operator to remove.
fn launching_parents(cx: &Cx, pieces: &[u32], most: &[(StrId, Ns)]) -> String {
    let ops = &cx.trace.cpu_ops;
    // Idle time of each listed name inside a launching operator, and by
    // that nearest launching ancestor's name.
    let mut inside: Vec<Ns> = vec![0; most.len()];
    let mut by: FxHashMap<(usize, StrId), Ns> = FxHashMap::default();
    for (p, d) in cx.runs(pieces, |p| p.seg) {
        let Some(op) = cx.seg(&p).op else { continue };
        let Some(k) = most.iter().position(|&(name, _)| name == ops.name[op.index()]) else {
            continue;
        };
        if cx.ops.launches[op.index()] {
            continue;
        }
        // Operators only: a step or a module range around the call
        // "launches" too, by what its operators launch.
        let launching = cx
            .operators_up(ops.parent[op.index()])
            .find(|r| cx.ops.launches[r.index()]);
        if let Some(r) = launching {
            inside[k] += d;
            *by.entry((k, ops.name[r.index()])).or_default() += d;
        }
    }
    let listed: Vec<usize> = (0..most.len())
        .filter(|&k| inside[k] > 0 && 2 * inside[k] >= most[k].1)
        .collect();
    if listed.is_empty() {
        return String::new();
    }
    let mut parents: FxHashMap<StrId, Ns> = FxHashMap::default();
    for ((k, name), d) in by {
        if listed.contains(&k) {
            *parents.entry(name).or_default() += d;
        }
    }
    let mut parents: Vec<(StrId, Ns)> = parents.into_iter().collect();
    parents.sort_unstable_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    let quoted = |name: StrId| format!("`{}`", cx.trace.strings.get(name));
    let named: Vec<String> = parents.iter().take(2).map(|&(n, _)| quoted(n)).collect();
    let which = match parents.len() {
        0..=2 => and_list(named),
        n => format!("{} and {} more", named.join(", "), n - 2),
    };
    let subject = and_list(listed.iter().map(|&k| quoted(most[k].0)));
    let verb = if listed.len() == 1 { "runs" } else { "run" };
    let mostly = if listed.iter().all(|&k| inside[k] == most[k].1) {
        ""
    } else {
        "mostly "
    };
    format!(" {subject} {verb} {mostly}inside operators that launch GPU work ({which}), as part of dispatching them.")
}

/// What the host was doing in a group's idle time, by idle-weighted share.
#[derive(Clone, Debug, PartialEq, Eq)]
enum HostWork {
    /// Code `torch.compile` generated: Inductor's Python wrapper.
    Compiled,
    /// An operator that code `torch.compile` generated calls (an extern
    /// kernel such as `aten::mm`), whose own host side holds more of the
    /// time than the wrapper around it: the operator with the most of it.
    CompiledCall(OpRow),
    /// A custom operator's host code (its outermost operator row).
    Custom(OpRow),
    /// Operators that launch GPU work but take longer on the host.
    Dispatch,
    /// Many short operators that launch nothing (views, reshapes, shape
    /// arithmetic): framework overhead.
    Framework,
    /// Operators that launch nothing and run long: CPU compute.
    CpuCompute,
    /// Host-only time mostly inside allocation-only operators
    /// ([`is_allocation_op`]): the allocator, not computation.
    Allocation,
}

/// The host work behind a group's pieces: what decides the advice, and how
/// much of the time is in code `torch.compile` generated.
struct HostTime {
    work: HostWork,
    /// Idle time in compiled code (inside a compiled region, or with a
    /// source frame in Inductor's code), and in all.
    compiled: Ns,
    total: Ns,
    /// The compiled regions (`Torch-Compiled Region`, `## Call
    /// CompiledFxGraph` rows) behind `compiled`, outermost rows.
    regions: Vec<OpRow>,
}

/// Compiled code that does not decide a group's advice gets a sentence of
/// its own when it holds at least this share of the group's time (ours: a
/// tenth is worth naming; less would only lengthen the hint).
pub const COMPILED_PART_MIN_SHARE: f64 = 0.1;

/// Generated code that makes at least this many traced calls per region
/// call ("thousands of ops", ours: the scale at which recording each call
/// adds up to milliseconds)...
pub const PROFILED_CALLS_MIN: u64 = 1_000;

/// ...whose median lasts less than this, may spend much of its host time
/// in the profiler (ours: a few µs of recording per call is then a large
/// part of each call; `assert_size_stride`, `_reinterpret_tensor` and
/// stream lookups run well under 1 µs each on TraceLens' SD3.5 xDiT trace).
pub const TINY_CALL_NS: Ns = 15_000;

/// Host-only operators whose calls hold at least this much idle time each
/// on average compute on the CPU; shorter ones are framework overhead
/// (ours: a view or a reshape costs a few µs under the profiler, real CPU
/// tensor work tens of µs and more; HTA's `runtime_cutoff` scale).
pub const CPU_COMPUTE_MIN_NS: i64 = 50_000;

/// Namespaces of PyTorch's own operators; any other `ns::op` is a custom
/// operator (`vllm::moe_forward`, `_C::rotary_embedding`).
const TORCH_NAMESPACES: [&str; 11] = [
    "aten",
    "prim",
    "prims",
    "autograd",
    "torch",
    "c10d",
    "c10d_functional",
    "_c10d_functional",
    "quantized",
    "profiler",
    "cuda",
];

/// `ns::op` with a namespace that is an identifier and not PyTorch's own
/// (`autograd::engine::evaluate_function: ...` is PyTorch's autograd).
fn is_custom_op(name: &str) -> bool {
    name.split_once("::").is_some_and(|(ns, _)| {
        !ns.is_empty()
            && ns.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
            && !TORCH_NAMESPACES.contains(&ns)
    })
}

/// True for a range `torch.compile` generated or calls.
fn is_compiled_name(name: &str) -> bool {
    name.starts_with("Torch-Compiled Region")
        || name.starts_with("CompiledFunction")
        || name.starts_with("## Call CompiledFxGraph")
}

/// True for a source frame in Inductor's generated or runtime code.
fn is_compiled_source(src: &str) -> bool {
    is_generated_source(src) || src.contains("/_inductor/")
}

/// True for a source frame in the code Inductor generated (its cache, a
/// `torchinductor_<user>` directory under the system's temp dir), not its
/// runtime library.
fn is_generated_source(src: &str) -> bool {
    src.contains("torchinductor")
}

/// Classifies the host work behind `pieces` (see [`HostWork`]): compiled
/// code when at least half the idle time is in compiled code and the
/// operator with the most idle time is, or is inside, a compiled region
/// (or there are no operators), and then an operator the compiled code
/// calls when more of the operator time in the regions is inside such
/// operators (`aten::mm` as an extern kernel) than in the region rows
/// themselves (the wrapper's code). Else the time outside compiled code
/// decides: a custom operator when its operator with the most idle time is
/// one; else dispatch when at least half its operator time is in
/// operators that launch GPU work; else CPU compute when the host-only
/// operators hold [`CPU_COMPUTE_MIN_NS`] per call on average, framework
/// overhead when less. (On TraceLens' SD3.5 xDiT trace the
/// `execute_diffusion` range's heaviest operator is a compiled region, but
/// it holds 19 % of the range's idle time; the rest is the eager text
/// encoders before it.)
fn host_work(cx: &Cx, pieces: &[u32]) -> HostTime {
    let t = cx.trace;
    let ops = &t.cpu_ops;
    // Whether a row is a compiled region (`Torch-Compiled Region`, ...),
    // and the outermost one around a row, if any (one name cache for both).
    let mut compiled_name = NameTest::new(t.strings.len(), is_compiled_name);
    let region_of = |compiled_name: &mut NameTest<_>, row: Option<OpRow>| {
        let mut at = row;
        let mut region = None;
        while let Some(r) = at {
            let name = ops.name[r.index()];
            if compiled_name.test(t.strings.get(name), name) {
                region = Some(r);
            }
            at = ops.parent[r.index()];
        }
        region
    };
    // Whether a source frame, as shown, is in compiled code.
    let mut compiled_source = NameTest::new(t.strings.len(), |s| is_compiled_source(display_source(s)));
    let (mut total, mut compiled) = (0i64, 0i64);
    let mut regions: Vec<OpRow> = Vec::new();
    let (mut op_total, mut launching) = (0i64, 0i64);
    let mut host_only_ops: FxHashSet<OpRow> = FxHashSet::default();
    let mut allocating = 0i64;
    let mut allocation_name = NameTest::new(t.strings.len(), is_allocation_op);
    // Idle time by outermost operator: of all the pieces (the heaviest
    // tells whether compiled code decides), and outside compiled code.
    // Summed by name, as the range's headline operator is, so the advice
    // and the headline name the same operator; each name keeps its first
    // row.
    let mut by_op: FxHashMap<Option<StrId>, (i64, Option<OpRow>)> = FxHashMap::default();
    let mut eager_by_op: FxHashMap<Option<StrId>, (i64, Option<OpRow>)> = FxHashMap::default();
    // Operator time in compiled regions: in the region rows themselves
    // (the wrapper's own code), and in operators the wrapper calls, by
    // operator name.
    let mut wrapper = 0i64;
    let mut called: FxHashMap<StrId, (i64, OpRow)> = FxHashMap::default();
    // Pieces of one segment say the same: each run is weighed once.
    for (p, d) in cx.runs(pieces, |p| p.seg) {
        total += d;
        let seg = cx.seg(&p);
        let region = region_of(&mut compiled_name, seg.op.or(seg.annotation));
        let src = seg.source;
        let src_compiled = src != Strings::EMPTY && compiled_source.test(t.strings.get(src), src);
        let in_compiled = region.is_some() || src_compiled;
        if in_compiled {
            compiled += d;
            if let Some(r) = region.filter(|r| !regions.contains(r)) {
                regions.push(r);
            }
        }
        if let Some(op) = seg.op.filter(|_| p.cause == Cause::CpuOp) {
            if region.is_some() {
                let name = ops.name[op.index()];
                if compiled_name.test(t.strings.get(name), name) {
                    wrapper += d;
                } else {
                    called.entry(name).or_insert((0, op)).0 += d;
                }
            }
            let outer = cx.outer_operator(Some(op));
            let outer_name = outer.map(|o| ops.name[o.index()]);
            by_op.entry(outer_name).or_insert((0, outer)).0 += d;
            // What the rest of the time is, when compiled code does not
            // decide, is the time outside it.
            if in_compiled {
                continue;
            }
            eager_by_op.entry(outer_name).or_insert((0, outer)).0 += d;
            op_total += d;
            let name = ops.name[op.index()];
            if cx.ops.launches[op.index()] {
                launching += d;
            } else if allocation_name.test(t.strings.get(name), name) {
                host_only_ops.insert(op);
                allocating += d;
            } else if outer.is_some_and(|o| cx.ops.launches[o.index()]) {
                // The views and shape checks inside an operator that
                // launches (`aten::_foreach_add_`, DDP's
                // `unflatten_dense_tensors`) are part of dispatching it.
                launching += d;
            } else {
                host_only_ops.insert(op);
            }
        }
    }
    let heaviest = |by: &FxHashMap<Option<StrId>, (i64, Option<OpRow>)>| {
        by.values()
            .max_by(|a, b| a.0.cmp(&b.0).then_with(|| b.1.cmp(&a.1)))
            .copied()
            .unwrap_or((0, None))
    };
    let heaviest_of = |by: &FxHashMap<Option<StrId>, (i64, Option<OpRow>)>| heaviest(by).1;
    // Compiled code decides when it holds most of the time and the
    // operator with the most time is in it: a compiled region that is the
    // heaviest operator but holds a fifth of the time does not make the
    // rest compiled code.
    let top_compiled = match heaviest_of(&by_op) {
        Some(r) => region_of(&mut compiled_name, Some(r)).is_some(),
        None => true,
    };
    let host = |work| HostTime {
        work,
        compiled,
        total,
        regions,
    };
    if total > 0 && 2 * compiled >= total && top_compiled {
        let in_calls: i64 = called.values().map(|c| c.0).sum();
        let heaviest = called
            .iter()
            .max_by(|a, b| a.1 .0.cmp(&b.1 .0).then_with(|| b.0.cmp(a.0)))
            .map(|(_, &(_, op))| op);
        return host(match heaviest {
            Some(op) if in_calls > wrapper => HostWork::CompiledCall(op),
            _ => HostWork::Compiled,
        });
    }
    // A custom operator decides when it holds at least half the operator
    // time: on TraceLens' B200 eager vLLM trace `vllm::moe_forward` is the
    // heaviest operator of the step's range with 24 % of it, and the rest
    // is eager dispatch, which graphs fix, not the operator's own code.
    let (top_time, top) = heaviest(&eager_by_op);
    if let Some(r) =
        top.filter(|r| 2 * top_time >= op_total && is_custom_op(t.strings.get(ops.name[r.index()])))
    {
        return host(HostWork::Custom(r));
    }
    if op_total == 0 || 2 * launching >= op_total {
        return host(HostWork::Dispatch);
    }
    if 2 * allocating >= op_total - launching {
        return host(HostWork::Allocation);
    }
    let per_call = (op_total - launching) / (host_only_ops.len().max(1) as i64);
    host(if per_call >= CPU_COMPUTE_MIN_NS {
        HostWork::CpuCompute
    } else {
        HostWork::Framework
    })
}

/// The sentence on the compiled code in a group whose advice is for the
/// time outside it, when it holds at least [`COMPILED_PART_MIN_SHARE`] of
/// the time (else empty): the advice for compiled code does not fit the
/// rest, and the rest's does not fit compiled code.
fn compiled_part(cx: &Cx, host: &HostTime) -> String {
    let decided = matches!(host.work, HostWork::Compiled | HostWork::CompiledCall(_));
    if decided || host.compiled == 0 || (host.compiled as f64) < COMPILED_PART_MIN_SHARE * host.total as f64 {
        return String::new();
    }
    let mut names: Vec<String> = host.regions.iter().filter_map(|&r| cx.name(Some(r))).collect();
    names.sort_unstable();
    names.dedup();
    let regions = match names.as_slice() {
        [] => String::new(),
        [one] => format!(" (`{one}`)"),
        [first, rest @ ..] => format!(" (`{first}` and {} more)", rest.len()),
    };
    format!(
        " {} of this time ({}) is inside code `torch.compile` generated{regions}, which \
         compiling again does not shorten: replay that part as {} graphs \
         (`torch.compile(mode=\"reduce-overhead\")`) or have Inductor emit a C++ wrapper \
         (`torch._inductor.config.cpp_wrapper = True`).",
        percent_whole(host.compiled, host.total),
        duration(host.compiled),
        cx.platform.name()
    )
}

/// What to change, for Python and framework code between operators (the
/// compiled-code advice when it is code `torch.compile` generated).
fn python_advice(cx: &Cx, pieces: &[u32]) -> String {
    let host = host_work(cx, pieces);
    match host.work {
        HostWork::Compiled | HostWork::CompiledCall(_) => advice_for(cx, host),
        _ if replayed(cx).is_some() => around_graphs(cx, "this time") + &compiled_part(cx, &host),
        _ => format!(
            "Remove per-step Python work from the loop (logging, list building, shape checks), \
             use `torch.compile(model)` to cut interpreter and dispatch overhead, raise the \
             batch size so each launch does more work, or capture the step with {} graphs \
             (`torch.compile(mode=\"reduce-overhead\")`).{}",
            cx.platform.name(),
            compiled_part(cx, &host)
        ),
    }
}

/// The share of the device's kernels that graph launches replayed, when
/// it is at least half ([`Cx::graph_replayed`]): the step already runs as
/// graphs, and advice to capture it does not apply.
fn replayed(cx: &Cx) -> Option<String> {
    let (replayed, all) = cx.graph_replayed();
    (all > 0 && 2 * replayed >= all).then(|| percent_whole(replayed as i64, all as i64))
}

/// The advice for host time around graph replays (`what` names it): graphs
/// cannot capture scheduling and input preparation, so overlap them with
/// the replays. TraceLens' vLLM and SGLang decode traces replay 99 % and
/// 98 % of their kernels from one graph launch each (421 of 425, 544 of
/// 555), and their host time is the engine's Python around it.
fn around_graphs(cx: &Cx, what: &str) -> String {
    let share = replayed(cx).unwrap_or_default();
    format!(
        "Most of this device's kernels ({share}) already run from {} graph replays, so {what} \
         is host work around the replays (scheduling, preparing inputs, reading outputs), \
         which graphs do not capture. Overlap it with the GPU by preparing the next step while \
         the current one replays (vLLM's asynchronous scheduling, the default from v0.14, \
         `--async-scheduling` before it; SGLang's overlap scheduler, on unless \
         `--disable-overlap-schedule`), and cut the per-step Python (logging, list building, \
         shape checks).",
        cx.platform.name()
    )
}

/// What to change, for the host work behind `pieces`.
fn advice(cx: &Cx, pieces: &[u32]) -> String {
    advice_for(cx, host_work(cx, pieces)) + &buffer_broadcast_part(cx, pieces)
}

/// A share of a group's time in DDP's buffer broadcast from which the hint
/// names it (ours: as for compiled code, a tenth is worth a sentence).
pub const BUFFER_BROADCAST_MIN_SHARE: f64 = 0.1;

/// The operators of DDP's per-forward buffer sync: the buffers are
/// flattened, broadcast from rank 0 and copied back
/// (`_sync_buffers` -> `_distributed_broadcast_coalesced`).
fn is_buffer_broadcast_op(name: &str) -> bool {
    matches!(
        name,
        "aten::flatten_dense_tensors" | "aten::unflatten_dense_tensors" | "c10d::broadcast_"
    )
}

/// The sentence on DDP's buffer broadcast, when at least
/// [`BUFFER_BROADCAST_MIN_SHARE`] of the time of `pieces` is in its
/// operators inside a `DistributedDataParallel.forward` range (else
/// empty). With `broadcast_buffers=True`, the default, DDP broadcasts every
/// module buffer from rank 0 at the start of each forward; on HTA's
/// nccl_data trace the flatten / broadcast / unflatten block holds 84 ms of
/// the 239 ms that `DistributedDataParallel.forward` leaves the GPU idle.
fn buffer_broadcast_part(cx: &Cx, pieces: &[u32]) -> String {
    let t = cx.trace;
    let ops = &t.cpu_ops;
    let mut broadcast_op = NameTest::new(t.strings.len(), is_buffer_broadcast_op);
    let mut ddp_forward = NameTest::new(t.strings.len(), |n: &str| {
        n.starts_with("DistributedDataParallel.forward")
    });
    let (mut total, mut broadcast) = (0i64, 0i64);
    for (p, d) in cx.runs(pieces, |p| p.seg) {
        total += d;
        let (mut in_broadcast, mut in_ddp) = (false, false);
        let mut at = cx.seg(&p).op;
        while let Some(r) = at {
            let name = ops.name[r.index()];
            let text = t.strings.get(name);
            in_broadcast |= broadcast_op.test(text, name);
            in_ddp |= ddp_forward.test(text, name);
            at = ops.parent[r.index()];
        }
        if in_broadcast && in_ddp {
            broadcast += d;
        }
    }
    if broadcast == 0 || (broadcast as f64) < BUFFER_BROADCAST_MIN_SHARE * total as f64 {
        return String::new();
    }
    format!(
        " {} of this time ({}) is DDP's buffer broadcast at the start of each forward \
         (`aten::flatten_dense_tensors`, `c10d::broadcast_`, `aten::unflatten_dense_tensors`): \
         with `broadcast_buffers=True`, the default, DDP copies every module buffer \
         (BatchNorm's running statistics, for one) from rank 0 before each forward. If the \
         buffers need not match across ranks every step, \
         `DistributedDataParallel(..., broadcast_buffers=False)` removes it.",
        percent_whole(broadcast, total),
        duration(broadcast)
    )
}

/// What to change, for `host`, the host work behind a group.
fn advice_for(cx: &Cx, host: HostTime) -> String {
    let graphs = cx.platform.name();
    let rest = compiled_part(cx, &host);
    let advice = match host.work {
        HostWork::Compiled => {
            let work = compiled_work(cx, &host.regions);
            let (asserts, launches, calls) = (work.asserts, work.launches, work.calls);
            let per_call = if calls > 0 && (asserts > 0 || launches > 0) {
                format!(
                    " (per call: {} `assert_size_stride` checks and {} kernel launches from Python)",
                    asserts / calls,
                    launches / calls
                )
            } else {
                String::new()
            };
            format!(
                "This is code `torch.compile` already generated: the host time is Inductor's \
                 Python wrapper{per_call}, so compiling again does not help. Replay it as \
                 {graphs} graphs (`torch.compile(mode=\"reduce-overhead\")`), which launch the \
                 whole region at once; or have Inductor emit a C++ wrapper \
                 (`torch._inductor.config.cpp_wrapper = True`); and run it once before \
                 profiling, since first calls also compile and autotune.{}",
                profiler_part(&work)
            )
        }
        HostWork::CompiledCall(r) => {
            let name = cx.name(Some(r)).unwrap_or_default();
            format!(
                "`{name}` is called by code `torch.compile` generated (Inductor calls the \
                 operator instead of generating its kernel), and the time is the operator's own \
                 host side, before its kernels launch (dispatch, argument checks, the \
                 library's setup), not the wrapper's: compiling again does not remove it. \
                 Replay the region as {graphs} graphs (`torch.compile(mode=\"reduce-overhead\")`), \
                 which launch its kernels without the host code."
            )
        }
        HostWork::Custom(r) => {
            let name = cx.name(Some(r)).unwrap_or_default();
            format!(
                "`{name}` is a custom operator: its host side (the Python wrapper, argument \
                 checks, JIT compilation or a Triton launcher) runs before its kernels are \
                 launched. Look at its implementation for work that can be cached across calls, \
                 or replay the region as {graphs} graphs so its kernels launch without the host \
                 code."
            )
        }
        HostWork::Dispatch | HostWork::Framework if replayed(cx).is_some() => {
            around_graphs(cx, "the time in these operators")
        }
        HostWork::Dispatch => {
            // Serving engines' switch is advice for programs that may
            // serve: a trace with a backward pass is training.
            let engines = if cx.workload.may_be_forward_only() {
                "; in vLLM or SGLang, keep graphs on rather than running eager"
            } else {
                ""
            };
            format!(
                "These operators launch GPU work, but their host side (Python, dispatch, the launch \
                 calls) takes longer than their kernels: the GPU waits for the launches. Replay the \
                 step as {graphs} graphs (`torch.cuda.graph`, \
                 `torch.compile(mode=\"reduce-overhead\")`{engines}), fuse operators with \
                 `torch.compile`, or give each launch more work (a larger batch)."
            )
        }
        HostWork::Framework => format!(
            "These are many short operators that launch nothing on the GPU (views, reshapes, \
             slicing, shape arithmetic): framework overhead, not computation. Take shape logic \
             out of the step, let `torch.compile` trace them away, or replay the step as {graphs} \
             graphs so none of it runs per step."
        ),
        HostWork::Allocation => "Most of this time is inside operators that only allocate \
             (`aten::empty` and kin): the allocator at work, not computation. A slow one maps a \
             large host tensor's pages, registers pinned memory, or grows the caching allocator. \
             Allocate such buffers once outside the loop and reuse them (`out=` arguments, a \
             preallocated tensor refilled with `copy_` or `fill_`), and pin host buffers once."
            .to_string(),
        HostWork::CpuCompute => "These operators launch nothing on the GPU: they compute on the \
             CPU. If they work on CPU tensors, move the tensors to the GPU or precompute the \
             result outside the loop (or in DataLoader workers); if they are many small \
             operators, batch them."
            .to_string(),
    };
    advice + &rest
}

/// What happened inside compiled regions, over all their calls.
struct CompiledWork {
    /// Region calls.
    calls: u64,
    /// `assert_size_stride` frames.
    asserts: u64,
    /// Kernel launches.
    launches: u64,
    /// The traced calls (Python frames, operators) that the generated
    /// code's own frames made directly: their durations.
    traced: Vec<Ns>,
    /// The generated code's own time: its frames' time outside the traced
    /// calls they made.
    own: Ns,
}

/// Inside the compiled `regions` rows: `assert_size_stride` frames, kernel
/// launches, and the traced calls of the generated code's frames (Python
/// frames in Inductor's cache, present when the profiler ran with
/// `with_stack=True`) and its own time between them.
fn compiled_work(cx: &Cx, regions: &[OpRow]) -> CompiledWork {
    let t = cx.trace;
    let ops = &t.cpu_ops;
    let rt = &t.runtime;
    let mut work = CompiledWork {
        calls: regions.len() as u64,
        asserts: 0,
        launches: 0,
        traced: Vec::new(),
        own: 0,
    };
    let mut generated_name = NameTest::new(t.strings.len(), is_generated_source);
    // The generated frames met so far (parents precede their children).
    let mut generated: FxHashSet<usize> = FxHashSet::default();
    for &r in regions {
        let r = r.index();
        let (thread, s, e) = (ops.thread[r], ops.start[r], ops.end[r]);
        let range = t.cpu_ops_of(thread);
        let mut i = r + 1;
        while i < range.end && ops.start[i] < e {
            let (name, d) = (ops.name[i], ops.end[i] - ops.start[i]);
            if t.strings.get(name).contains("assert_size_stride") {
                work.asserts += 1;
            }
            if ops.kind[i] == CpuOpKind::PythonFunction && generated_name.test(t.strings.get(name), name) {
                generated.insert(i);
                work.own += d;
            }
            if ops.parent[i].is_some_and(|p| generated.contains(&p.index())) {
                work.traced.push(d);
                work.own -= d;
            }
            i += 1;
        }
        let first = rt.start.partition_point(|&x| x < s);
        work.launches += (first..rt.len())
            .take_while(|&c| rt.start[c] < e)
            .filter(|&c| rt.thread[c] == thread && t.links.runtime_gpu_count[c] > 0)
            .count() as u64;
    }
    work
}

/// The sentence on the profiler's share in compiled code's host time, when
/// its generated code makes at least [`PROFILED_CALLS_MIN`] traced calls
/// per region call and their median is under [`TINY_CALL_NS`] (else
/// empty). The profiler records each call (`with_stack=True` records every
/// Python call): with thousands of tiny ones, what it adds per call may be
/// much of the time, and the trace cannot tell how much. The saving stays
/// as measured: the trace has no unprofiled run to compare with.
fn profiler_part(work: &CompiledWork) -> String {
    let n = work.traced.len() as u64;
    if work.calls == 0 || n < PROFILED_CALLS_MIN * work.calls {
        return String::new();
    }
    let mut traced = work.traced.clone();
    let mid = traced.len() / 2;
    let median = *traced.select_nth_unstable(mid).1;
    if median >= TINY_CALL_NS {
        return String::new();
    }
    format!(
        " Per call its generated code makes {} traced calls ({} each, median) and spends {} \
         of its own between them ({} per call made). The profiler recorded each of these calls \
         (`with_stack=True` records every Python call), so part of this host time may be the \
         profiler's own: compare with a profile without `with_stack` and `record_shapes` (or \
         time the step unprofiled) before acting on it.",
        n / work.calls,
        duration(median),
        duration(work.own / work.calls as Ns),
        duration(work.own / n as Ns)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn range_rows_follow_a_group_through_the_taken_pieces() {
        let r = |i| Some(OpRow::new(i));
        // Pieces 2..=9 were taken; their ranges (None: grouped by cause).
        let taken = [2, 3, 4, 5, 7, 8, 9];
        let ranges = [r(1), r(1), None, r(4), r(4), r(1), r(6)];
        // A group is a sorted subset of `taken`: each piece's range, runs
        // of one range once, pieces without a range left out.
        assert_eq!(
            range_rows(&taken, &ranges, &[2, 3, 4, 7, 8, 9]),
            vec![OpRow::new(1), OpRow::new(4), OpRow::new(1), OpRow::new(6)]
        );
        assert_eq!(range_rows(&taken, &ranges, &[9]), vec![OpRow::new(6)]);
        assert_eq!(range_rows(&taken, &ranges, &[4]), Vec::<OpRow>::new());
        assert_eq!(range_rows(&taken, &ranges, &[]), Vec::<OpRow>::new());
    }
}

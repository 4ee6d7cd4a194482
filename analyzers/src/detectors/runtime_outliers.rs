//! D14, runtime-call and launch-delay outliers (docs/detectors.md, D14):
//! the GPU idles while the launching thread is stuck inside a CUDA runtime
//! call, or after a launch returned while the launched work sat queued.
//!
//! ```text
//! µs          0    10                     40 42  45       80
//! stream 7    [k1..]                              [k2.....]
//! thread 1    [L1]  [aten::empty.............]
//!                   [cudaMalloc............][L2]
//! piece             [......................]        allocator_calls_in_step
//!
//! µs          0    10 12 17 19          219      225
//! stream 7    [k1..]  [k][k]  ...              [k......]
//! thread 1    [L][L][L][L]... [cudaLaunchKernel...]        usually 5 µs
//! piece                       [..................]         slow_runtime_calls
//!
//! µs          0    10 12 14                  214
//! stream 7    [k1..]                         [k2....]      nothing else runs
//! thread 1    [L1]  [L2]                                   L2 returned at 14
//! piece                   [..................]             queued: launch_delay_outliers
//! ```
//!
//! Three findings, claimed in this order from the pieces no earlier
//! detector took (pieces are cut at the edges of allocator calls and of
//! calls over [`SLOW_CALL_NS`]):
//!
//! - `allocator_calls_in_step`: pieces inside a device or pinned-host
//!   allocator call (`cudaMalloc`, `cudaFree`, `cudaHostAlloc`, ...). Any
//!   such call inside a step is the pattern (TraceLens's
//!   `RUNTIME_DOMINATED` names them; the PyTorch tuning guide's
//!   "preallocate memory"), however long.
//! - `slow_runtime_calls`: pieces inside a call that is an outlier *for its
//!   API*: longer than [`RUNTIME_FLOOR_NS`] (HTA's `runtime_cutoff`, 50 µs)
//!   and than median + [`MAD_K`] × 1.4826 × MAD of the durations of the
//!   calls with the same name on the device's launching threads in the
//!   window (the robust outlier rule of Leys et al., "Detecting outliers:
//!   do not use standard deviation around the mean, use absolute deviation
//!   around the median", J. Exp. Soc. Psych. 2013; 1.4826 makes the MAD
//!   estimate σ for normal data). The floor keeps microsecond noise out;
//!   the per-API rule keeps out calls that are always slow (a 1.2 ms
//!   `cudaGraphLaunch` of a big graph, launches under a hardware-counter
//!   profiler), which are a cost, not an outlier. An API with fewer than
//!   [`MIN_SAMPLES`] calls has no usual duration to compare with: the floor
//!   alone decides, as in HTA. Synchronize calls are D5/D6/D9's and copies
//!   D8/D9's: neither is cut as a slow call. A call that holds a `Lazy
//!   Function Loading` record ([`Cx::loads_module`]) is no outlier: it is a
//!   kernel's first launch, whose idle time D16's warm-up claims first.
//!   In a trace with no such records (ROCm's never have them), a group
//!   whose longest launch is its kernel's first in the trace, with no later
//!   launch of it over the outlier line, says so: loading is the likeliest
//!   cause there ([`first_launch`]).
//! - `launch_delay_outliers`: the pieces of cause `queued` (launched work
//!   that did not start within [`QUEUED_AFTER_NS`](crate::segments::QUEUED_AFTER_NS)
//!   on an idle device, HTA's `launch_delay_cutoff`) that no stream wait
//!   explains (D13's `untraced_event_wait` claims those first), one
//!   finding per launching API. Only the *idle* part of a launch delay
//!   counts: delay spent behind busy work is the GPU being busy. In a
//!   trace filtered down to the calls that launched GPU work
//!   ([`only_launches`]) the hint says so first: the waits between streams
//!   that likely held the work were filtered out.
//!
//! Attribution: the operator that made the call (its outermost operator,
//! annotation and source), the one with the most idle time; none for
//! launch delays (nothing in the trace held the work; the hint names where
//! it was launched). Savings: allocator calls are replayed away (a warm
//! allocator does not call the driver), slow calls are replayed at their
//! API's median length; launch delays are not estimable (nothing in the
//! trace says what held the queued work, so the replay has no edge to
//! shorten) and report 0.

use super::shared::blame::{Blame, BlameRows, NameKey};
use super::{CallClass, Cx, Draft, MAX_EVIDENCE, MAX_GROUPS, NOISE_NS, SLOW_CALL_NS};
use crate::causes::Cause;
use crate::format::{duration, short_kernel_name, times};
use crate::names::{api_name, is_graph_launch_api, is_launch_api};
use crate::workload::Workload;
use gapscope_collectors::trace::{CallRow, GpuKind, GpuRow, Ns, StrId, Strings, ThreadId, Trace};
use std::collections::HashMap;

/// No runtime call shorter than this is an outlier (HTA's
/// `runtime_cutoff`, 50 µs).
pub const RUNTIME_FLOOR_NS: Ns = SLOW_CALL_NS;
/// Outlier distance from the median in scaled MADs (Leys et al. 2013
/// recommend 3 as "very conservative").
pub const MAD_K: f64 = 3.0;
/// MAD → σ for normally distributed samples.
const MAD_SCALE: f64 = 1.4826;
/// Fewest calls of one API for its median and MAD to say what "usual" is
/// (ours); with fewer, the floor alone decides.
pub const MIN_SAMPLES: usize = 8;

pub(super) fn detect(cx: &Cx, claims: &mut [bool]) -> Vec<Draft> {
    let mut out = Vec::new();
    out.extend(allocator_calls(cx, claims));
    out.extend(slow_calls(cx, claims));
    out.extend(launch_delays(cx, claims));
    out
}

/// What "usual" is for one API, and where an outlier starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Usual {
    pub median: Ns,
    /// Values above this are outliers.
    pub threshold: Ns,
    pub samples: usize,
}

/// The robust outlier threshold of `sample` (reordered): max(`floor`,
/// median + [`MAD_K`] × 1.4826 × MAD), or `floor` alone with fewer than
/// [`MIN_SAMPLES`] values. The median of an even count is the upper middle
/// value.
pub(crate) fn usual(sample: &mut [Ns], floor: Ns) -> Usual {
    let n = sample.len();
    if n == 0 {
        return Usual {
            median: 0,
            threshold: floor,
            samples: 0,
        };
    }
    let median = *sample.select_nth_unstable(n / 2).1;
    let mut dev: Vec<Ns> = sample.iter().map(|&x| (x - median).abs()).collect();
    let mad = *dev.select_nth_unstable(n / 2).1;
    let threshold = if n < MIN_SAMPLES {
        floor
    } else {
        let robust = median + (MAD_K * MAD_SCALE * mad as f64).ceil() as Ns;
        robust.max(floor)
    };
    Usual {
        median,
        threshold,
        samples: n,
    }
}

/// The `(operator, annotation, source)` of the calls, weighted by idle
/// time: the outermost operator around each call, its annotation and
/// source line; the heaviest wins.
fn call_blame(cx: &Cx, calls: &[(CallRow, Ns)]) -> Blame {
    let mut by: HashMap<NameKey, Ns> = HashMap::new();
    let mut rep: HashMap<NameKey, BlameRows> = HashMap::new();
    for &(c, w) in calls {
        let op = cx.trace.links.runtime_op[c.index()];
        let (outer, ann, src) = match op {
            None => (None, None, Strings::EMPTY),
            Some(o) => (
                cx.outer_operator(op),
                cx.ops.annotation[o.index()],
                cx.ops.source[o.index()],
            ),
        };
        let key = (cx.name_key(outer), cx.name_key(ann), src);
        *by.entry(key).or_default() += w;
        rep.entry(key).or_insert((outer, ann));
    }
    let Some((key, _)) = by
        .into_iter()
        .max_by(|a, b| a.1.cmp(&b.1).then_with(|| b.0.cmp(&a.0)))
    else {
        return (None, None, None);
    };
    let (op, ann) = rep[&key];
    (cx.name(op), cx.name(ann), cx.source(key.2))
}

/// Distinct calls behind pieces, each with the idle time inside it.
fn calls_of(cx: &Cx, pieces: &[u32]) -> Vec<(CallRow, Ns)> {
    let mut by: HashMap<CallRow, Ns> = HashMap::new();
    for &i in pieces {
        let p = &cx.piece(i);
        if let Some(c) = p.call {
            *by.entry(c).or_default() += p.dur();
        }
    }
    let mut v: Vec<(CallRow, Ns)> = by.into_iter().collect();
    v.sort_unstable();
    v
}

fn api<'a>(cx: &Cx<'a>, call: CallRow) -> &'a str {
    cx.trace.strings.get(cx.trace.runtime.name[call.index()])
}

/// The call's span on its thread.
fn call_span(cx: &Cx, c: CallRow) -> (ThreadId, (Ns, Ns)) {
    let rt = &cx.trace.runtime;
    let c = c.index();
    (rt.thread[c], (rt.start[c], rt.end[c]))
}

fn allocator_calls(cx: &Cx, claims: &mut [bool]) -> Option<Draft> {
    let pieces = cx.take_kept(claims, |p| p.class == Some(CallClass::Alloc));
    let idle = cx.total(&pieces);
    if idle < NOISE_NS {
        for &i in &pieces {
            claims[i as usize] = false;
        }
        return None;
    }
    let calls = calls_of(cx, &pieces);
    // Idle per allocator family, to say what the allocator was doing.
    let (mut frees, mut mallocs, mut host) = (0, 0, 0);
    for &(c, w) in &calls {
        let name = api_name(api(cx, c));
        if name.contains("Host") {
            host += w;
        } else if name.contains("Free") {
            frees += w;
        } else {
            mallocs += w;
        }
    }
    let main_api = calls
        .iter()
        .max_by_key(|&&(c, w)| (w, std::cmp::Reverse(c)))
        .map(|&(c, _)| api(cx, c).to_string())
        .unwrap_or_default();
    let blame = call_blame(cx, &calls);
    let place = cx.where_(&blame.0, &blame.2);
    let per_step = duration(idle / cx.n_steps());
    let conf = cx.platform.alloc_conf();
    let mut parts: Vec<(Ns, String)> = vec![
        (
            frees,
            format!(
                "Device frees inside the step mean the caching allocator is giving memory back: \
                 `torch.cuda.empty_cache()` in the loop, or an allocation that failed under memory \
                 pressure made it free its cached blocks and retry (fragmentation; \
                 `torch.cuda.memory_stats()[\"num_alloc_retries\"]` counts these). Remove \
                 `empty_cache()` from the loop and set `{conf}=expandable_segments:True` so \
                 segments grow instead of fragmenting."
            ),
        ),
        (
            mallocs,
            format!(
                "Device allocations inside the step mean the caching allocator is still growing: \
                 run one warm-up step with the largest input shape before profiling, keep input \
                 shapes stable (pad variable lengths to a few buckets), and consider \
                 `{conf}=expandable_segments:True`."
            ),
        ),
        (
            host,
            "Pinned host buffers are allocated per copy (`tensor.pin_memory()` in the loop): \
             allocate them once and reuse them, or let `DataLoader(pin_memory=True)` pin \
             batches in its own thread."
                .to_string(),
        ),
    ];
    parts.retain(|p| p.0 > 0);
    parts.sort_by_key(|p| std::cmp::Reverse(p.0));
    let advice: Vec<&str> = parts.iter().map(|p| p.1.as_str()).collect();
    let inside = if cx.steps.is_empty() {
        "in the window"
    } else {
        "inside the steps"
    };
    let title = format!(
        "{} allocator calls ({main_api}, ...) {inside} leave the GPU idle {}",
        calls.len(),
        duration(idle)
    );
    let per = cx.per_step();
    let hint = format!(
        "{place} calls the {} allocator ({main_api}) while the GPU has nothing to do: {per_step} \
         idle {per}. {}",
        cx.platform.name(),
        advice.join(" ")
    );
    let mut d = Draft::new("D14", "allocator_calls_in_step", title, hint);
    d.occurrences = calls.len() as u64;
    d.remove_piece_cpu = false;
    for &(c, _) in &calls {
        d.edit.remove_cpu.push(call_span(cx, c));
    }
    for &(c, _) in calls.iter().take(MAX_EVIDENCE / 2) {
        d.evidence.push(cx.runtime_evidence(c));
    }
    d.pieces = pieces;
    d.blame = Some(blame);
    Some(d)
}

/// Durations of the calls named in `names` on the device's launching
/// threads inside the window, per name.
fn durations_by_name(cx: &Cx, names: &HashMap<StrId, Vec<Ns>>) -> HashMap<StrId, Vec<Ns>> {
    let rt = &cx.trace.runtime;
    let mut launcher = vec![false; cx.trace.threads.len()];
    for t in &cx.ev.launchers {
        launcher[t.0 as usize] = true;
    }
    let (ws, we) = cx.window;
    let mut out: HashMap<StrId, Vec<Ns>> = names.keys().map(|&k| (k, Vec::new())).collect();
    for r in 0..rt.len() {
        if rt.start[r] >= we || rt.end[r] <= ws {
            continue;
        }
        if !launcher.get(rt.thread[r].0 as usize).copied().unwrap_or(false) {
            continue;
        }
        if let Some(v) = out.get_mut(&rt.name[r]) {
            v.push(rt.end[r] - rt.start[r]);
        }
    }
    out
}

/// Who may share the launching thread's cores: DataLoader workers beside
/// a training thread only where the trace may show training.
fn oversubscribers(workload: Workload) -> &'static str {
    if workload.may_train() {
        "DataLoader workers and OpenMP/MKL threads on the training thread's cores"
    } else {
        "other processes and OpenMP/MKL threads on the launching thread's cores"
    }
}

fn slow_calls(cx: &Cx, claims: &mut [bool]) -> Vec<Draft> {
    let rt = &cx.trace.runtime;
    let mut names: HashMap<StrId, Vec<Ns>> = HashMap::new();
    // Slow calls hold pieces of their own, kept whole.
    for (i, p) in cx.pieces.kept() {
        if let Some(c) = p.call.filter(|_| !claims[i] && p.class == Some(CallClass::Slow)) {
            names.entry(rt.name[c.index()]).or_default();
        }
    }
    if names.is_empty() {
        return Vec::new();
    }
    let usual_of: HashMap<StrId, Usual> = durations_by_name(cx, &names)
        .into_iter()
        .map(|(k, mut v)| (k, usual(&mut v, RUNTIME_FLOOR_NS)))
        .collect();
    let dur = |c: usize| rt.end[c] - rt.start[c];
    // A call that loaded a kernel's module is that kernel's first launch
    // (D16's warm-up), slow for a reason the trace shows: no outlier.
    let taken = cx.take_kept(claims, |p| {
        p.class == Some(CallClass::Slow)
            && p.call.is_some_and(|c| {
                !cx.loads_module(c)
                    && usual_of
                        .get(&rt.name[c.index()])
                        .is_some_and(|u| dur(c.index()) > u.threshold)
            })
    });
    let mut by: HashMap<StrId, Vec<u32>> = HashMap::new();
    for i in taken {
        if let Some(c) = cx.piece(i).call {
            by.entry(rt.name[c.index()]).or_default().push(i);
        }
    }
    let mut groups: Vec<(StrId, Vec<u32>)> = by.into_iter().collect();
    groups.sort_by_key(|(k, v)| (std::cmp::Reverse(cx.total(v)), *k));
    let mut out = Vec::new();
    for (name, pieces) in groups {
        let idle = cx.total(&pieces);
        if idle < NOISE_NS || out.len() >= MAX_GROUPS {
            if idle < NOISE_NS {
                for &i in &pieces {
                    claims[i as usize] = false;
                }
            }
            continue;
        }
        let u = usual_of[&name];
        let api = cx.trace.strings.get(name).to_string();
        let calls = calls_of(cx, &pieces);
        // The longest call (the earliest of equals): its length, and its
        // kernels for a HIP graph launch (below).
        let (longest_call, _) = calls
            .iter()
            .max_by_key(|&&(c, _)| (dur(c.index()), std::cmp::Reverse(c)))
            .copied()
            .expect("a group has calls");
        let longest = dur(longest_call.index());
        let blame = call_blame(cx, &calls);
        let place = cx.where_(&blame.0, &blame.2);
        let per_step = duration(idle / cx.n_steps());
        let usual_text = if u.samples >= MIN_SAMPLES {
            format!("usually {}", duration(u.median))
        } else {
            format!("over {}", duration(RUNTIME_FLOOR_NS))
        };
        let title = format!(
            "{} `{api}` {} up to {} ({usual_text}) and {} the GPU idle {}",
            calls.len(),
            if calls.len() == 1 {
                "call takes"
            } else {
                "calls take"
            },
            duration(longest),
            if calls.len() == 1 { "leaves" } else { "leave" },
            duration(idle)
        );
        let bare = api_name(&api);
        let launched = cx.trace.links.runtime_gpu_count[longest_call.index()] as i64;
        let advice = if bare.starts_with("hip") && bare.contains("GraphLaunch") && launched > 1 {
            // ROCm enqueues a graph's nodes from the host inside the call
            // (segments module docs): a long call is that submission, and
            // the GPU, running the nodes faster, waits inside it.
            format!(
                "`{bare}` enqueues the graph's nodes from the host one by one inside the call: the \
                 longest call launched {launched} kernels, {} of host time each, and the GPU ran \
                 them faster than the call submitted them. A graph with fewer, larger nodes \
                 (fused kernels) is submitted sooner; the first replay of a graph also uploads \
                 it, so replay it once (or call `graph.upload()`) before the loop.",
                duration(longest / launched)
            )
        } else if let Some(first) = (is_launch_api(bare) && !is_graph_launch_api(bare))
            .then(|| first_launch(cx, longest_call, u.threshold))
            .flatten()
        {
            // The trace records no module loading, and the longest call is
            // its kernel's first launch: loading is the likeliest reason.
            format!(
                "The longest call is the first launch of `{}` in the trace ({}). A kernel's \
                 first launch also loads its code when module loading is lazy, and this trace \
                 does not record loading, so that is the likeliest cause: warm up before \
                 profiling (run the step once), or set {}. Otherwise the launching thread was \
                 slowed or descheduled: check for CPU oversubscription ({}: set \
                 `OMP_NUM_THREADS`, pin the process with `taskset` or `numactl`) and profiler \
                 overhead (`with_stack=True` and `record_shapes=True` slow every call).",
                first.kernel,
                match first.later {
                    0 => "its only launch there".to_string(),
                    1 => format!("its one later launch takes {}", duration(first.later_longest)),
                    n => format!(
                        "its {n} later launches take at most {}",
                        duration(first.later_longest)
                    ),
                },
                cx.platform.eager_loading(),
                oversubscribers(cx.workload)
            )
        } else if is_launch_api(bare) {
            let graph = if bare.contains("GraphLaunch") {
                format!(
                    " The first replay of a {} graph also uploads it: replay it once (or call \
                     `graph.upload()`) before the loop.",
                    cx.platform.name()
                )
            } else {
                String::new()
            };
            format!(
                "A launch is normally 5–20 µs of CPU work; a long one means the launching \
                 thread was slowed or descheduled. Check for CPU oversubscription ({}: set \
                 `OMP_NUM_THREADS`, pin the process with `taskset` or `numactl`), profiler \
                 overhead (`with_stack=True` and `record_shapes=True` slow every call: compare \
                 with an unprofiled step), and first launches under lazy module loading (warm \
                 up before profiling, or set {}).{graph}",
                oversubscribers(cx.workload),
                cx.platform.eager_loading()
            )
        } else {
            format!(
                "Creating streams or events, querying device properties or kernel attributes, \
                 and the first {0} call of a process (context creation) are slow: create {0} \
                 objects once outside the loop, move queries out of the step, and run a warm-up \
                 step before profiling.",
                cx.platform.name()
            )
        };
        let per = cx.per_step();
        let hint = format!(
            "{place} makes `{api}` calls that take up to {} ({usual_text}) while the GPU waits, \
             {per_step} idle {per}. {advice}",
            duration(longest)
        );
        let mut d = Draft::new("D14", "slow_runtime_calls", title, hint);
        d.occurrences = calls.len() as u64;
        // The fix brings each call back to its API's usual length.
        d.remove_piece_cpu = false;
        for &(c, _) in &calls {
            let (t, (s, e)) = call_span(cx, c);
            let keep = if u.samples >= MIN_SAMPLES { u.median } else { 0 };
            if s + keep < e {
                d.edit.remove_cpu.push((t, (s + keep, e)));
            }
        }
        for &(c, _) in calls.iter().take(MAX_EVIDENCE / 2) {
            d.evidence.push(cx.runtime_evidence(c));
        }
        d.pieces = pieces;
        d.blame = Some(blame);
        out.push(d);
    }
    out
}

/// A slow launch that is its kernel's first launch in the trace.
struct FirstLaunch {
    /// The kernel, shortened for prose.
    kernel: String,
    /// Launches of the same kernel on the device after it.
    later: usize,
    /// The longest of their launch calls.
    later_longest: Ns,
}

/// `call`, when it launched a kernel that no earlier row of the device
/// ran and no later launch of it took longer than `threshold` (its API's
/// outlier line), in a trace that records no module loading: a call that
/// did load would hold a `Lazy Function Loading` record where the trace
/// has them ([`Cx::loads_module`]), so the first launch says nothing there.
fn first_launch(cx: &Cx, call: CallRow, threshold: Ns) -> Option<FirstLaunch> {
    if !cx.ev.lazy_loading.is_empty() {
        return None;
    }
    let g = &cx.trace.gpu;
    let row = cx.call_gpu[call.index()]?.index();
    if g.kind[row] != GpuKind::Kernel {
        return None;
    }
    let (name, start) = (g.name[row], g.start[row]);
    let rt = &cx.trace.runtime;
    let (mut later, mut later_longest) = (0, 0);
    for i in (0..g.len()).filter(|&i| i != row && g.device[i] == cx.device && g.name[i] == name) {
        if g.start[i] <= start {
            return None;
        }
        later += 1;
        if let Some(c) = cx.trace.links.gpu_launch[i] {
            later_longest = later_longest.max(rt.end[c.index()] - rt.start[c.index()]);
        }
    }
    (later_longest <= threshold).then(|| FirstLaunch {
        kernel: short_kernel_name(cx.trace.strings.get(name)),
        later,
        later_longest,
    })
}

/// Fewest runtime calls for their all launching GPU work to say the trace
/// was filtered (ours: a PyTorch program makes calls that launch nothing,
/// such as `cudaEventRecord` or `cudaStreamIsCapturing`, every step; every
/// unfiltered shared trace with over 100 calls has hundreds of them).
pub const FILTERED_MIN_CALLS: usize = 100;

/// The number of runtime calls when the trace looks filtered down to the
/// calls with GPU work: at least [`FILTERED_MIN_CALLS`] calls, every one of
/// which launched GPU work, in a trace with CPU operators (a PyTorch
/// program's) and work on two or more streams of `device` (where waits
/// between streams would be). HTA's sampled traces: 1,204 and 1,154 calls,
/// all launches, copies and memsets, on 5 streams. `None` otherwise; a
/// real trace's first call that launches nothing ends the scan.
fn only_launches(t: &Trace, device: u32) -> Option<usize> {
    let n = t.runtime.len();
    if n < FILTERED_MIN_CALLS || t.cpu_ops.is_empty() || t.links.runtime_gpu_count.contains(&0) {
        return None;
    }
    let g = &t.gpu;
    let mut streams = (0..g.len())
        .filter(|&i| g.device[i] == device)
        .map(|i| g.stream[i]);
    let first = streams.next()?;
    streams.any(|s| s != first).then_some(n)
}

/// One launch whose work waited in the queue on an idle device.
struct Held {
    row: GpuRow,
    call: CallRow,
    /// Its `queued` pieces.
    pieces: Vec<u32>,
}

/// The `queued` pieces no earlier detector claimed, per GPU row they held
/// back (the row that starts when each piece ends), in time order.
pub(super) fn held_rows(cx: &Cx, claims: &[bool]) -> Vec<(GpuRow, Vec<u32>)> {
    let mut out: Vec<(GpuRow, Vec<u32>)> = Vec::new();
    for (i, &cause) in cx.pieces.causes().iter().enumerate() {
        if claims[i] || cause != Cause::Queued {
            continue;
        }
        let p = cx.piece(i);
        let Some(row) = cx.next_row(p.end) else {
            continue;
        };
        match out.last_mut() {
            Some((r, v)) if *r == row => v.push(i as u32),
            _ => out.push((row, vec![i as u32])),
        }
    }
    out
}

fn launch_delays(cx: &Cx, claims: &mut [bool]) -> Vec<Draft> {
    let t = cx.trace;
    let rt = &t.runtime;
    let filtered = only_launches(t, cx.device);
    let found: Vec<Held> = held_rows(cx, claims)
        .into_iter()
        .filter_map(|(row, pieces)| t.links.gpu_launch[row.index()].map(|call| Held { row, call, pieces }))
        .collect();
    let mut by: HashMap<StrId, Vec<&Held>> = HashMap::new();
    for d in &found {
        by.entry(rt.name[d.call.index()]).or_default().push(d);
    }
    let weight = |ds: &Vec<&Held>| -> Ns { ds.iter().map(|d| cx.total(&d.pieces)).sum() };
    let mut groups: Vec<(StrId, Vec<&Held>)> = by.into_iter().collect();
    groups.sort_by_key(|(k, ds)| (std::cmp::Reverse(weight(ds)), *k));
    let mut out = Vec::new();
    for (name, ds) in groups.into_iter().take(MAX_GROUPS) {
        let mut pieces: Vec<u32> = ds.iter().flat_map(|d| d.pieces.iter().copied()).collect();
        pieces.sort_unstable();
        for &i in &pieces {
            claims[i as usize] = true;
        }
        let idle = cx.total(&pieces);
        let longest = ds.iter().map(|d| cx.total(&d.pieces)).max().unwrap_or(0);
        let api = t.strings.get(name).to_string();
        let first = ds
            .iter()
            .max_by_key(|d| (cx.total(&d.pieces), std::cmp::Reverse(d.row)))
            .expect("a group has rows");
        let what: String = t
            .strings
            .get(t.gpu.name[first.row.index()])
            .chars()
            .take(80)
            .collect();
        let (op, _, src) = cx.launch_blame(first.row);
        let launched_by = match (op, src) {
            (Some(o), Some(s)) => format!(" (launched by `{o}` at {s})"),
            (Some(o), None) => format!(" (launched by `{o}`)"),
            (None, Some(s)) => format!(" (launched at {s})"),
            (None, None) => String::new(),
        };
        let p = cx.platform;
        let title = format!(
            "Work launched with `{api}` sat queued on an idle GPU {} ({} in total, up to {}), held by \
             nothing in the trace",
            times(ds.len()),
            duration(idle),
            duration(longest)
        );
        // Kineto drops GPU work that began before its capture did, so a
        // device that looks idle before its first recorded row may still
        // be running work launched earlier (the previous step's kernels or
        // graph): the likeliest hold of the trace's first work.
        let first_on_device = cx
            .busy
            .first()
            .is_some_and(|&r| t.gpu.start[r.index()] == t.gpu.start[first.row.index()]);
        let lead = if let Some(calls) = filtered {
            format!(
                "outside the trace. Every one of its {calls} runtime calls launched GPU work: it \
                 holds no synchronize, event-record or stream-wait call, which a PyTorch program \
                 makes every step (it records an event and makes a stream wait around each \
                 collective), so the trace was filtered, keeping only the calls with GPU work. \
                 The likeliest hold is a wait between streams that the filter removed: analyse \
                 the unfiltered trace. Other holds outside the trace:"
            )
        } else if first_on_device {
            "outside the trace. It is the first work the trace records on this GPU, so the \
             likeliest hold is GPU work launched before the profiler started (the previous \
             step's kernels or graph, for one): the profiler does not record GPU work that began \
             before its capture did. Call `torch.cuda.synchronize()` before the profiler starts \
             recording to see the step's own start. Other holds outside the trace:"
                .to_string()
        } else {
            "outside the trace:".to_string()
        };
        let hint = format!(
            "`{what}`{launched_by} was queued when `{api}` returned, the GPU had nothing else to \
             run, yet it started {} later; launched work normally starts within a few \
             microseconds. Nothing the host did held it, so the cause is {lead} a \
             stream waiting on an event of another process, device or stream that is not \
             recorded, another process or container running on this GPU (check {}), a host \
             callback (`{}`) on the stream, or GPU work missing from the trace (a sampled or \
             truncated trace, events dropped when the profiler's buffers filled). Profile again \
             with the GPU to yourself and with every stream and process recorded.",
            duration(longest),
            p.process_list(),
            p.api("cudaLaunchHostFunc"),
        );
        let mut d = Draft::new("D14", "launch_delay_outliers", title, hint);
        d.occurrences = ds.len() as u64;
        d.estimable = false;
        // Nothing in the trace held the work: no operator is to blame.
        d.blame = Some((None, None, None));
        for x in ds.iter().take(MAX_EVIDENCE / 2) {
            d.evidence.push(cx.runtime_evidence(x.call));
            d.evidence.push(cx.gpu_evidence(x.row));
        }
        d.pieces = pieces;
        out.push(d);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usual_is_median_and_scaled_mad() {
        // Median 10, MAD 1: threshold 10 + ceil(3 × 1.4826) = 15.
        let mut v = vec![9, 10, 11, 10, 9, 11, 10, 400];
        let u = usual(&mut v, 0);
        assert_eq!((u.median, u.threshold, u.samples), (10, 15, 8));
        // The floor wins over a tight distribution.
        assert_eq!(usual(&mut v, 50).threshold, 50);
        // Too few samples: the floor alone.
        let mut few = vec![1000, 1000, 1000];
        assert_eq!(usual(&mut few, 50).threshold, 50);
        // Always slow: nothing stands out.
        let mut slow = vec![1_200_000; 12];
        assert_eq!(usual(&mut slow, 50).threshold, 1_200_000);
    }
}

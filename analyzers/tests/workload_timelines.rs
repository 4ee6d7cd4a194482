//! The mechanisms behind inference, graph, ROCm, collective and compiled
//! workloads, on hand-built timelines: each test draws its CPU and GPU
//! tracks, builds exactly that trace, and checks the causes, findings,
//! hints and savings; near misses check what must not fire. Times in the
//! drawings are µs (the builder multiplies by 1000).

use gapscope_analyzers::analysis::AnalyzeOptions;
use gapscope_analyzers::analyze;
use gapscope_analyzers::causes::Cause;
use gapscope_analyzers::detectors::{detect, Finding};
use gapscope_analyzers::idle::attribute;
use gapscope_analyzers::segments::idle_segments;
use gapscope_analyzers::window::window;
use gapscope_collectors::trace::*;

const US: Ns = 1000;

/// The drawing verbs these timelines need beyond [`Sketch`]'s own.
trait Draw {
    /// A CPU range whose kind its name tells, custom operators
    /// (`vllm::moe_forward`), compiled regions and built-in Python
    /// functions included.
    fn o(&mut self, start: Ns, end: Ns, name: &str) -> &mut Self;
}

impl Draw for Sketch {
    fn o(&mut self, start: Ns, end: Ns, name: &str) -> &mut Self {
        let kind = match name {
            n if n.starts_with("ProfilerStep#") => CpuOpKind::ProfilerStep,
            n if n.contains(".py(") || n.starts_with("<built-in") => CpuOpKind::PythonFunction,
            n if n.contains("::") || n.starts_with("Torch-Compiled Region") => CpuOpKind::Operator,
            _ => CpuOpKind::UserAnnotation,
        };
        self.op_as(start, end, name, kind)
    }
}

/// Runs of touching segments with one cause, `(start µs, end µs, cause)`.
fn by_cause_runs(t: &Trace) -> Vec<(Ns, Ns, Cause)> {
    let mut out: Vec<(Ns, Ns, Cause)> = Vec::new();
    for (s, e, c, _) in segments(t) {
        match out.last_mut() {
            Some(l) if l.1 == s && l.2 == c => l.1 = e,
            _ => out.push((s, e, c)),
        }
    }
    out
}

/// `(start µs, end µs, cause, operator)` of every idle segment.
fn segments(t: &Trace) -> Vec<(Ns, Ns, Cause, String)> {
    let w = window(t);
    idle_segments(t, 0, w.span)
        .iter()
        .map(|s| {
            (
                s.start / US,
                s.end / US,
                s.cause,
                t.op_name(s.op).unwrap_or("-").to_string(),
            )
        })
        .collect()
}

fn findings(t: &Trace) -> Vec<Finding> {
    let f = detect(t, &window(t));
    for x in &f {
        eprintln!(
            "{} {} idle {} explained {} saves {} op {:?}: {}\n    {}",
            x.detector, x.id, x.idle_ns, x.explained_ns, x.est_savings_ns, x.operator, x.title, x.hint
        );
    }
    f
}

fn find<'a>(f: &'a [Finding], id: &str) -> Option<&'a Finding> {
    f.iter().find(|x| x.id == id)
}

/// Work queued while the host waits: L2 returns at 14, the GPU is idle,
/// yet k2 starts only at `k2` (a stream waiting on another process, say).
/// The host is in a sync from 20, but the sync is not what the GPU waits
/// for: the work was already queued.
///
/// ```text
/// µs          0    10 11 12 14  20                                k2
/// stream 7    [k1..]                                             [k2....]
/// thread 1    [L1]      [aten::relu]
///                          [L2]   [cudaStreamSynchronize..................]
/// segments         [fw][cpu][L2][queued.............................]
///                  10  11   12 14                                 k2
/// ```
fn queued_trace(k2: Ns, api: &str) -> Trace {
    let launch = format!("{api}LaunchKernel");
    let sync = format!("{api}StreamSynchronize");
    let mut t = Sketch::in_units(US);
    t.o(0, k2 + 20, "ProfilerStep#1").call(0, 2, &launch, 1);
    t.o(11, 14, "aten::relu").call(12, 14, &launch, 2);
    t.call(20, k2 + 20, &sync, 0);
    t.named_kernel("k", 7, 0, 10, 1)
        .named_kernel("k", 7, k2, k2 + 20, 2);
    t.finish()
}

#[test]
fn queued_work_is_held_outside_the_trace() {
    let t = queued_trace(414, "cuda");
    assert_eq!(
        segments(&t),
        vec![
            (10, 11, Cause::FrameworkOverhead, "-".into()),
            (11, 12, Cause::CpuOp, "aten::relu".into()),
            (12, 14, Cause::LaunchOverhead, "aten::relu".into()),
            (14, 414, Cause::Queued, "-".into()),
        ]
    );
    let w = window(&t);
    let a = attribute(&t, 0, w.span);
    assert_eq!(a.top_gaps[0].cause, Cause::Queued);
    assert_eq!(a.top_gaps[0].operator, None);
    assert_eq!(a.idle_by_cause_ns.total(), a.idle_ns);
    let an = analyze(&t, &AnalyzeOptions::default());
    let b = &an.devices[0].bounds;
    assert_eq!(b.excluded_idle_ns, 400 * US);
    // 434 µs window, 30 µs busy, 400 µs queued: at most 434 / 430,
    // where counting the queued time as removable would say 434 / 30.
    assert_eq!(b.max_speedup, 1.009);
    let f = findings(&t);
    let d = find(&f, "launch_delay_outliers").expect("D14");
    assert_eq!(
        (d.idle_ns, d.operator.clone(), d.estimable),
        (400 * US, None, false)
    );
    assert!(
        d.hint.contains("nvidia-smi") && d.hint.contains("cudaLaunchHostFunc"),
        "{}",
        d.hint
    );
    assert!(
        find(&f, "explicit_sync").is_none(),
        "the sync explains nothing here"
    );
}

#[test]
fn near_miss_queued_work_that_starts_within_a_launch_latency() {
    // k2 starts 60 µs after L2 returned: launch latency, under the 100 µs
    // limit, and still not the sync's: the work was queued.
    let t = queued_trace(74, "cuda");
    assert_eq!(
        segments(&t).last().unwrap(),
        &(12, 74, Cause::LaunchOverhead, "aten::relu".into())
    );
    let an = analyze(&t, &AnalyzeOptions::default());
    assert_eq!(an.devices[0].bounds.excluded_idle_ns, 0);
    assert!(find(&findings(&t), "launch_delay_outliers").is_none());
}

/// The same timeline recorded on ROCm: the hint speaks HIP.
#[test]
fn rocm_traces_get_rocm_advice() {
    let t = queued_trace(414, "hip");
    let f = findings(&t);
    let d = find(&f, "launch_delay_outliers").expect("D14");
    assert!(
        d.hint.contains("rocm-smi") && d.hint.contains("hipLaunchHostFunc"),
        "{}",
        d.hint
    );
    for x in &f {
        for cuda in [
            "nvidia-smi",
            "MPS",
            "CUDA_MODULE_LOADING",
            "Nsight",
            "cudaLaunchHostFunc",
        ] {
            assert!(!x.hint.contains(cuda), "{cuda}: {}", x.hint);
        }
    }
}

/// Kernels launched before the capture began (their correlation ids are
/// below every call's) drain while the host sits in one long
/// `cudaDeviceSynchronize`: the microsecond gaps between them are launch
/// latency of queued work; only the end of the drain is the sync's.
///
/// ```text
/// µs          0  5  10   20 21   30 31   40   45   50 52 54   60
/// stream 7           [k c=1][k c=2][k c=3]                [k4..]
/// thread 1       [cudaDeviceSynchronize c=10...]   [L4 c=11]
/// segments                 [lo]   [lo]  [sync][fw][launch.]
/// ```
#[test]
fn gaps_between_kernels_queued_before_a_long_sync_are_not_sync() {
    let mut t = Sketch::in_units(US);
    t.o(0, 60, "ProfilerStep#1");
    t.call(5, 45, "cudaDeviceSynchronize", 10)
        .call(50, 52, "cudaLaunchKernel", 11);
    t.named_kernel("k", 7, 10, 20, 1)
        .named_kernel("k", 7, 21, 30, 2)
        .named_kernel("k", 7, 31, 40, 3)
        .named_kernel("k", 7, 54, 60, 11);
    let tr = t.finish();
    let got: Vec<(Ns, Ns, Cause)> = segments(&tr)
        .into_iter()
        .filter(|s| s.0 >= 10)
        .map(|s| (s.0, s.1, s.2))
        .collect();
    assert_eq!(
        got,
        vec![
            (20, 21, Cause::LaunchOverhead),
            (30, 31, Cause::LaunchOverhead),
            (40, 45, Cause::Sync),
            (45, 50, Cause::FrameworkOverhead),
            (50, 54, Cause::LaunchOverhead),
        ]
    );
}

/// A graph launch whose kernels already started is submitted whole: the
/// gaps between its kernels, while the long `cudaGraphLaunch` call still
/// runs, are launch latency of queued work, not a slow call.
///
/// ```text
/// µs          0    10  20  30  40  50  60  70   ...    290    300 301
/// stream 7    [k1]     [g1.]   [g2.]   [g3.]   ...    [g14.........]
/// thread 1         [cudaGraphLaunch c=5...........................]
/// ```
#[test]
fn gaps_inside_a_running_graph_are_no_slow_call() {
    let mut t = Sketch::in_units(US);
    t.o(0, 301, "ProfilerStep#1").call(0, 2, "cudaLaunchKernel", 1);
    t.call(10, 300, "cudaGraphLaunch", 5);
    t.named_kernel("k", 7, 0, 8, 1);
    for i in 0..13 {
        t.named_kernel("g", 7, 20 + 20 * i, 30 + 20 * i, 5);
    }
    t.named_kernel("g", 7, 290, 301, 5);
    let tr = t.finish();
    let inner: Vec<Cause> = segments(&tr)
        .into_iter()
        .filter(|s| s.0 >= 30)
        .map(|s| s.2)
        .collect();
    assert_eq!(inner, vec![Cause::LaunchOverhead; 13]);
    // Only the 10 µs before the graph's first kernel started is the
    // call's; 13 gaps of 10 µs after it are not.
    let f = findings(&tr);
    let slow: Ns = f
        .iter()
        .filter(|x| x.id == "slow_runtime_calls")
        .map(|x| x.idle_ns)
        .sum();
    assert_eq!(slow, 10 * US, "{f:?}");
}

/// The same replay through `hipGraphLaunch`: ROCm enqueues a graph's nodes
/// from the host inside the call, so while the call runs the next kernel
/// is not known to be queued. A 150 µs gap inside it is the call's (the
/// host still submitting), not work held by something outside the trace;
/// through `cudaGraphLaunch` the same gap is queued work held that long.
///
/// ```text
/// µs          0    10  20  30   40 ... 190  200  210      300 301
/// stream 7    [k1]     [g1.]   [g2.]      [g3.]   [g4...]
/// thread 1         [hipGraphLaunch c=5....................]
/// ```
#[test]
fn gaps_inside_a_running_hip_graph_launch_are_the_calls() {
    let replay = |api: &str| {
        let mut t = Sketch::in_units(US);
        t.o(0, 301, "ProfilerStep#1").call(0, 2, "hipLaunchKernel", 1);
        t.call(10, 300, api, 5);
        t.named_kernel("k", 7, 0, 8, 1);
        t.named_kernel("g", 7, 20, 30, 5).named_kernel("g", 7, 40, 50, 5);
        t.named_kernel("g", 7, 200, 210, 5)
            .named_kernel("g", 7, 290, 301, 5);
        t.finish()
    };
    let hip = replay("hipGraphLaunch");
    let gap: Vec<Cause> = segments(&hip)
        .into_iter()
        .filter(|s| s.0 >= 50 && s.1 <= 200)
        .map(|s| s.2)
        .collect();
    assert_eq!(gap, [Cause::LaunchOverhead]);
    let f = findings(&hip);
    assert!(find(&f, "launch_delay_outliers").is_none());
    // The call's own finding says what the call was doing: 4 kernels in
    // 290 µs.
    let slow = find(&f, "slow_runtime_calls").expect("the call's D14");
    assert!(
        slow.hint
            .contains("launched 4 kernels, 72.5 µs of host time each"),
        "{}",
        slow.hint
    );
    assert!(find(&findings(&replay("cudaGraphLaunch")), "launch_delay_outliers").is_some());
    let cuda = replay("cudaGraphLaunch");
    let gap: Vec<Cause> = segments(&cuda)
        .into_iter()
        .filter(|s| s.0 >= 50 && s.1 <= 200)
        .map(|s| s.2)
        .collect();
    assert_eq!(gap, [Cause::Queued]);
}

/// Stream 3 is told to wait on an event nothing in the trace records;
/// the kernel launched after the wait starts 468 µs after its launch.
///
/// ```text
/// µs          0    10   20  25 30 32                        500  510
/// stream 2    [k1..]
/// stream 3                                                  [k2...]
/// thread 1    [L1]      [WaitEvent][L2]
/// segments                          [queued.................]
/// ```
fn wait_trace(with_wait: bool) -> Trace {
    let mut t = Sketch::in_units(US);
    t.o(0, 600, "ProfilerStep#1").call(0, 2, "hipLaunchKernel", 1);
    t.o(18, 27, "scheduler.py(12): wait_for_previous");
    if with_wait {
        t.call(20, 25, "hipStreamWaitEvent", 2);
    }
    t.call(30, 32, "hipLaunchKernel", 3);
    t.named_kernel("k1", 2, 0, 10, 1)
        .named_kernel("resolve", 3, 500, 510, 3);
    t.finish()
}

#[test]
fn a_wait_on_an_untraced_event_holds_the_queued_work() {
    let t = wait_trace(true);
    let f = findings(&t);
    let w = find(&f, "untraced_event_wait").expect("D13");
    assert_eq!(
        (w.detector.as_str(), w.primary, w.idle_ns),
        ("D13", true, 468 * US)
    );
    assert!(
        w.hint.contains("hipStreamWaitEvent") && w.hint.contains("resolve"),
        "{}",
        w.hint
    );
    assert_eq!(w.source.as_deref(), Some("scheduler.py(12): wait_for_previous"));
    assert!(find(&f, "launch_delay_outliers").is_none(), "claimed once");
    // Ranked by the idle it explains, though no saving is estimable.
    assert_eq!(f[0].id, "untraced_event_wait");
}

#[test]
fn near_miss_queued_work_without_a_wait_is_a_launch_delay() {
    let f = findings(&wait_trace(false));
    assert!(find(&f, "untraced_event_wait").is_none());
    assert!(find(&f, "launch_delay_outliers").is_some());
}

/// A CUDA graph capture: launches between `BeginCapture` and
/// `EndCapture` are recorded, not run, and instantiating takes host time.
///
/// ```text
/// µs        0  50  100 101      400  500 505 510      800    900 902 905
/// stream 7  [k0]                                                    [k1]
/// thread 1  [L0]   [Begin]  [aten::mm (launches captured)] [End]
///                                              [Instantiate...]  [L1]
/// segments     [fw][graph_capture..............][fw][graph_capture][fw][launch]
/// ```
fn capture_trace(capture: bool) -> Trace {
    let mut t = Sketch::in_units(US);
    t.o(0, 950, "ProfilerStep#1").call(0, 2, "cudaLaunchKernel", 1);
    if capture {
        t.call(100, 101, "cudaStreamBeginCapture", 2);
    }
    t.o(110, 400, "aten::mm").call(390, 392, "cudaLaunchKernel", 3);
    if capture {
        t.call(500, 505, "cudaStreamEndCapture", 4)
            .call(510, 800, "cudaGraphInstantiateWithFlags", 5);
    }
    t.call(900, 902, "cudaLaunchKernel", 6);
    t.named_kernel("k0", 7, 0, 50, 1);
    if !capture {
        t.named_kernel("mm", 7, 394, 398, 3);
    }
    t.named_kernel("k1", 7, 905, 950, 6);
    t.finish()
}

#[test]
fn graph_capture_is_setup_with_no_saving() {
    let t = capture_trace(true);
    let got = by_cause_runs(&t);
    assert_eq!(
        got,
        vec![
            (50, 100, Cause::FrameworkOverhead),
            (100, 505, Cause::GraphCapture),
            (505, 510, Cause::FrameworkOverhead),
            (510, 800, Cause::GraphCapture),
            (800, 900, Cause::FrameworkOverhead),
            (900, 905, Cause::LaunchOverhead),
        ]
    );
    let f = findings(&t);
    let c = find(&f, "cuda_graph_capture").expect("D16");
    assert_eq!((c.idle_ns, c.est_savings_ns, c.estimable), (695 * US, 0, false));
    assert!(c.title.contains("one-off setup"), "{}", c.title);
    assert!(
        f.iter().all(|x| x.detector != "D2" || x.idle_ns < 300 * US),
        "{f:?}"
    );
    assert!(f.iter().all(|x| x.id != "slow_runtime_calls"), "{f:?}");
    let an = analyze(&t, &AnalyzeOptions::default());
    assert_eq!(an.devices[0].bounds.excluded_idle_ns, 695 * US);
}

#[test]
fn near_miss_the_same_host_work_without_capture_is_cpu_bound() {
    let f = findings(&capture_trace(false));
    assert!(find(&f, "cuda_graph_capture").is_none());
    assert!(
        f.iter()
            .any(|x| x.detector == "D2" && x.operator.as_deref() == Some("aten::mm")),
        "{f:?}"
    );
}

/// The user range around a capture (vLLM's `capture_32_FULL`) is setup
/// too: its warm-up run and allocator calls prepare the capture.
#[test]
fn the_range_around_a_capture_is_setup() {
    let mut t = Sketch::in_units(US);
    t.o(0, 1000, "ProfilerStep#1").call(0, 2, "cudaLaunchKernel", 1);
    t.o(60, 600, "capture_32_FULL");
    t.o(70, 90, "aten::zero_").call(95, 99, "cudaFree", 0);
    t.call(100, 101, "cudaStreamBeginCapture", 2)
        .call(500, 505, "cudaStreamEndCapture", 4);
    t.call(900, 902, "cudaLaunchKernel", 6);
    t.named_kernel("k0", 7, 0, 50, 1)
        .named_kernel("k1", 7, 905, 950, 6);
    let tr = t.finish();
    let capture: Ns = segments(&tr)
        .iter()
        .filter(|s| s.2 == Cause::GraphCapture)
        .map(|s| s.1 - s.0)
        .sum();
    assert_eq!(capture, 540);
    let f = findings(&tr);
    assert!(find(&f, "allocator_calls_in_step").is_none(), "{f:?}");
}

/// One operator keeps the CPU busy 490 µs before it launches; what it is
/// decides the advice.
///
/// ```text
/// µs          0   10                              500 502  510
/// stream 7    [k0]                                        [k1]
/// thread 1    [L0][op ............................][L1]
/// ```
fn busy_op(name: &str, launches: bool, frames: &[&str]) -> Vec<Finding> {
    let mut t = Sketch::in_units(US);
    t.o(0, 700, "ProfilerStep#1").call(0, 2, "cudaLaunchKernel", 1);
    t.o(10, 504, name);
    for (i, f) in frames.iter().enumerate() {
        let s = 20 + 10 * i as Ns;
        t.o(s, s + 5, f);
    }
    if launches {
        t.call(500, 502, "cudaLaunchKernel", 2);
    } else {
        t.o(505, 509, "aten::relu").call(506, 508, "cudaLaunchKernel", 2);
    }
    t.named_kernel("k0", 7, 0, 8, 1)
        .named_kernel("k1", 7, 510, 520, 2);
    findings(&t.finish())
}

fn cpu_bound_hint(f: &[Finding]) -> String {
    f.iter()
        .find(|x| x.detector == "D2")
        .map(|x| x.hint.clone())
        .unwrap_or_else(|| panic!("no D2 finding: {f:?}"))
}

#[test]
fn a_compiled_region_gets_compiled_code_advice() {
    let h = cpu_bound_hint(&busy_op(
        "Torch-Compiled Region: 0/0",
        true,
        &[
            "<built-in function assert_size_stride>",
            "<built-in function assert_size_stride>",
            "<built-in function assert_size_stride>",
        ],
    ));
    assert!(h.contains("reduce-overhead") && h.contains("cpp_wrapper"), "{h}");
    assert!(
        h.contains("3 `assert_size_stride` checks and 1 kernel launches"),
        "{h}"
    );
    assert!(!h.contains("compile the region"), "{h}");
}

/// A compiled region whose generated code (a Python frame in Inductor's
/// cache, traced with `with_stack=True`) makes `n` traced calls of
/// `call_us` each, 2 µs apart, and launches at the end (TraceLens' SD3.5
/// xDiT trace: 4679 calls per region call, 1.3 µs median, 43 µs of the
/// generated code's own time per call made).
///
/// ```text
/// µs        0  10                              12+(call_us+2)n  +2
/// stream 7  [k0]                                                  [k1]
/// thread 1     [Torch-Compiled Region: 0/0..................][L]
///              [cab.py(10): call.............................]
///                [assert][assert][assert] ... × n
/// ```
fn traced_generated_code(n: Ns, call_us: Ns) -> String {
    let mut t = Sketch::in_units(US);
    let step = call_us + 2;
    let end = 12 + step * n + 2;
    t.o(0, end + 20, "ProfilerStep#1")
        .call(0, 2, "cudaLaunchKernel", 1);
    t.o(10, end, "Torch-Compiled Region: 0/0")
        .o(11, end - 2, "torchinductor_u/ab/cab.py(10): call");
    for i in 0..n {
        let s = 12 + step * i;
        t.o(s, s + call_us, "<built-in function assert_size_stride>");
    }
    t.call(end - 2, end, "cudaLaunchKernel", 2);
    t.named_kernel("k0", 7, 0, 8, 1)
        .named_kernel("k1", 7, end + 1, end + 20, 2);
    cpu_bound_hint(&findings(&t.finish()))
}

#[test]
fn thousands_of_tiny_traced_calls_in_compiled_code_may_be_profiler_time() {
    let h = traced_generated_code(1000, 1);
    assert!(
        h.contains("This is code `torch.compile` already generated"),
        "{h}"
    );
    assert!(
        h.contains(
            "Per call its generated code makes 1000 traced calls (1.0 µs each, median) and \
             spends 2.00 ms of its own between them (2.0 µs per call made)"
        ),
        "{h}"
    );
    assert!(h.contains("without `with_stack` and `record_shapes`"), "{h}");
}

#[test]
fn fewer_or_longer_traced_calls_in_compiled_code_are_not_called_profiler_time() {
    for h in [traced_generated_code(999, 1), traced_generated_code(1000, 15)] {
        assert!(
            h.contains("This is code `torch.compile` already generated"),
            "{h}"
        );
        assert!(!h.contains("with_stack"), "{h}");
    }
}

/// A user range whose heaviest operator is a compiled region, but whose
/// time is mostly eager operators that launch nothing: the compiled region
/// does not make the rest compiled code (TraceLens' SD3.5 xDiT
/// `execute_diffusion` range: the region holds 19 % of it, the eager text
/// encoders before it the rest).
///
/// ```text
/// µs        0  10         10+r        +e      +e      +e      +e  +2
/// stream 7  [k0]                                                     [k1]
/// thread 1     [features (record_function)..........................]
///              [Compiled Region][linear][addmm ][mm    ][bmm    ][L]
/// ```
fn compiled_region_among_eager(region_us: Ns, eager_us: Ns) -> Finding {
    range_of_calls(&[
        ("Torch-Compiled Region: 0/0", region_us),
        ("aten::linear", eager_us),
        ("aten::addmm", eager_us),
        ("aten::mm", eager_us),
        ("aten::bmm", eager_us),
    ])
}

#[test]
fn a_compiled_region_with_a_minority_of_the_time_gets_the_rests_advice() {
    // 200 of the 925 µs idle (22 %) in the region, each eager operator 180.
    let x = compiled_region_among_eager(200, 180);
    assert_eq!(x.operator.as_deref(), Some("Torch-Compiled Region: 0/0"));
    let h = &x.hint;
    assert!(
        !h.contains("This is code `torch.compile` already generated"),
        "{h}"
    );
    assert!(h.contains("compute on the CPU"), "{h}");
    assert!(
        h.contains(
            "22 % of this time (200.0 µs) is inside code `torch.compile` generated \
             (`Torch-Compiled Region: 0/0`)"
        ),
        "{h}"
    );
    assert!(h.contains("cpp_wrapper"), "{h}");
}

#[test]
fn a_compiled_region_with_most_of_the_time_gets_compiled_code_advice() {
    // 600 of the 925 µs in the region, each eager operator 80.
    let h = compiled_region_among_eager(600, 80).hint;
    assert!(
        h.contains("This is code `torch.compile` already generated"),
        "{h}"
    );
    assert!(!h.contains("of this time"), "{h}");
}

/// An optimizer's `aten::_foreach_add_` spends most of its host time in
/// short views before it launches (HTA's nccl_data `Optimizer.step#SGD.step`:
/// `_foreach_mul_` and `_foreach_add_`, 9 launches): that is the operator's
/// dispatch, not "operators that launch nothing".
#[test]
fn views_inside_a_launching_operator_are_its_dispatch() {
    let mut t = Sketch::in_units(US);
    t.o(0, 700, "ProfilerStep#1").call(0, 2, "cudaLaunchKernel", 1);
    t.o(10, 504, "aten::_foreach_add_");
    for i in 0..48 {
        let s = 12 + 10 * i as Ns;
        t.o(s, s + 9, "aten::view");
    }
    t.call(500, 502, "cudaLaunchKernel", 2);
    t.named_kernel("k0", 7, 0, 8, 1)
        .named_kernel("k1", 7, 510, 520, 2);
    let h = cpu_bound_hint(&findings(&t.finish()));
    assert!(h.contains("These operators launch GPU work"), "{h}");
    assert!(!h.contains("launch nothing"), "{h}");
}

#[test]
fn a_custom_operator_gets_custom_operator_advice() {
    let h = cpu_bound_hint(&busy_op("vllm::moe_forward", true, &[]));
    assert!(h.contains("`vllm::moe_forward` is a custom operator"), "{h}");
}

/// A `features` range whose operators, in order, hold the host time
/// `calls` (name, µs) before one launch at its end.
fn range_of_calls(calls: &[(&str, Ns)]) -> Finding {
    let mut t = Sketch::in_units(US);
    let launch = 10 + calls.iter().map(|c| c.1).sum::<Ns>();
    t.o(0, launch + 20, "ProfilerStep#1")
        .call(0, 2, "cudaLaunchKernel", 1);
    t.o(10, launch + 2, "features");
    let mut s = 10;
    for &(name, us) in calls {
        t.o(s, s + us, name);
        s += us;
    }
    t.call(launch, launch + 2, "cudaLaunchKernel", 2);
    t.named_kernel("k0", 7, 0, 8, 1)
        .named_kernel("k1", 7, launch + 3, launch + 20, 2);
    let f = findings(&t.finish());
    find(&f, "cpu_bound_range")
        .cloned()
        .unwrap_or_else(|| panic!("{f:?}"))
}

/// The advice follows the operator the headline names, summed over its
/// calls: two calls of a custom operator (400 µs of 700) outweigh the one
/// longest call, `aten::addmm`'s 300 µs.
#[test]
fn a_custom_operator_over_its_calls_gets_custom_operator_advice() {
    let x = range_of_calls(&[
        ("vllm::moe_forward", 200),
        ("aten::addmm", 300),
        ("vllm::moe_forward", 200),
    ]);
    assert_eq!(x.operator.as_deref(), Some("vllm::moe_forward"));
    assert!(
        x.hint.contains("most of the time in `vllm::moe_forward`"),
        "{}",
        x.hint
    );
    assert!(
        x.hint.contains("`vllm::moe_forward` is a custom operator"),
        "{}",
        x.hint
    );
}

/// Near miss: the custom operator is the heaviest (200 µs of 650) but holds
/// under half the operator time (TraceLens' B200 eager vLLM trace:
/// `vllm::moe_forward`, 24 % of the step's range): the rest's advice.
#[test]
fn a_custom_operator_with_a_minority_of_the_time_gets_the_rests_advice() {
    let x = range_of_calls(&[
        ("vllm::moe_forward", 100),
        ("aten::addmm", 150),
        ("aten::mm", 150),
        ("aten::bmm", 150),
        ("vllm::moe_forward", 100),
    ]);
    assert_eq!(x.operator.as_deref(), Some("vllm::moe_forward"));
    assert!(!x.hint.contains("is a custom operator"), "{}", x.hint);
    assert!(x.hint.contains("compute on the CPU"), "{}", x.hint);
}

/// Two replays of 10 kernels each, launched by `launch` (µs), with 190 µs
/// of the engine's Python between them (the host preparing the next step).
///
/// ```text
/// µs        0  8 10        210            400 408 410       610
/// stream 7       [10 kernels]                     [10 kernels]
/// thread    [L1]  [engine.py(10): step......][L2]
/// ```
fn python_between_launches(launch: &str) -> String {
    let mut t = Sketch::in_units(US);
    t.o(0, 700, "ProfilerStep#1").call(0, 8, launch, 1);
    t.op_as(10, 400, "engine.py(10): step", CpuOpKind::PythonFunction);
    t.call(400, 408, launch, 2);
    for (corr, at) in [(1, 10), (2, 410)] {
        for i in 0..10 {
            t.named_kernel("k", 7, at + 20 * i, at + 20 * i + 20, corr);
        }
    }
    let f = findings(&t.finish());
    f.iter()
        .find(|x| x.id == "framework_overhead")
        .map(|x| x.hint.clone())
        .unwrap_or_else(|| panic!("no framework_overhead finding: {f:?}"))
}

/// The kernels run from graph replays: the host time around them is the
/// engine's, which graphs do not capture (TraceLens' vLLM graph decode:
/// 421 of its 425 kernels from one `hipGraphLaunch`).
#[test]
fn host_time_around_graph_replays_gets_overlap_advice() {
    let h = python_between_launches("cudaGraphLaunch");
    assert!(
        h.contains("Most of this device's kernels (100 %) already run from CUDA graph replays"),
        "{h}"
    );
    assert!(h.contains("`--async-scheduling`"), "{h}");
    assert!(!h.contains("capture the step with"), "{h}");
}

/// Near miss: the same kernels launched eagerly: graphs are the advice.
#[test]
fn host_time_between_eager_launches_gets_graph_advice() {
    let h = python_between_launches("cudaLaunchKernel");
    assert!(h.contains("capture the step with CUDA graphs"), "{h}");
    assert!(!h.contains("graph replays"), "{h}");
}

#[test]
fn an_operator_that_launches_gets_dispatch_advice() {
    let h = cpu_bound_hint(&busy_op("aten::linear", true, &[]));
    assert!(h.contains("launch GPU work") && h.contains("graphs"), "{h}");
    assert!(
        !h.contains("CPU tensors") && !h.contains("DataLoader workers"),
        "{h}"
    );
}

#[test]
fn an_operator_computing_on_the_cpu_gets_cpu_advice() {
    let h = cpu_bound_hint(&busy_op("aten::nonzero", false, &[]));
    assert!(
        h.contains("compute on the CPU") && h.contains("CPU tensors"),
        "{h}"
    );
}

/// Four instances of one module class, each with 100 µs of host time
/// before its launch: one culprit, `nn.Module: Layer`, not four.
#[test]
fn culprits_group_by_module_class() {
    let mut t = Sketch::in_units(US);
    t.o(0, 1000, "ProfilerStep#1").call(0, 2, "cudaLaunchKernel", 1);
    t.named_kernel("k0", 7, 0, 10, 1);
    for i in 0..4 {
        let s = 10 + 200 * i;
        t.o(s, s + 110, &format!("nn.Module: Layer_{i}"))
            .o(s, s + 105, "aten::linear")
            .call(s + 100, s + 102, "cudaLaunchKernel", 2 + i as u64)
            .named_kernel("k", 7, s + 104, s + 200, 2 + i as u64);
    }
    let tr = t.finish();
    let a = attribute(&tr, 0, window(&tr).span);
    let rows: Vec<_> = a
        .top_idle_operators
        .iter()
        .filter(|o| o.cause == Cause::CpuOp)
        .collect();
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0].annotation.as_deref(), Some("nn.Module: Layer"));
    assert_eq!((rows[0].count, rows[0].idle_ns), (4, 400 * US));
}

/// `aten::addmm` of one shape: the first call takes `first` µs, the three
/// later ones 50 µs each; each launches its kernel at its end.
fn first_call_trace(first: Ns) -> Trace {
    first_call_waiting(first, 0)
}

/// [`first_call_trace`], with the first call blocked `blocked` µs in a
/// `cudaStreamSynchronize` from 1 µs after its start (0: no sync).
///
/// ```text
/// µs        10                                 10+first
/// thread 1  [aten::addmm (1st)..................][aten::addmm 50][..]
///             [cudaStreamSynchronize (blocked)]  [L]
/// stream 7                                         [gemm]
/// ```
fn first_call_waiting(first: Ns, blocked: Ns) -> Trace {
    first_call_steps(first, blocked, 0, [50, 50, 50])
}

/// [`first_call_waiting`] in `ProfilerStep#step` (the profiler numbers the
/// steps it sees from 0, so #0 is the first step it saw), the later calls
/// taking `later` µs.
fn first_call_steps(first: Ns, blocked: Ns, step: u64, later: [Ns; 3]) -> Trace {
    let mut t = Sketch::in_units(US);
    t.o(0, 10_000, &format!("ProfilerStep#{step}"))
        .call(0, 2, "cudaLaunchKernel", 1);
    t.named_kernel("k0", 7, 0, 10, 1);
    let mut at = 10;
    let [a, b, c] = later;
    for (i, d) in [first, a, b, c].into_iter().enumerate() {
        let c = 2 + i as u64;
        t.op_shaped(at, at + d, "aten::addmm", "[[8, 16], [16, 4]]");
        if i == 0 && blocked > 0 {
            t.call(at + 1, at + 1 + blocked, "cudaStreamSynchronize", 100);
        }
        t.call(at + d - 3, at + d - 1, "cudaLaunchKernel", c)
            .named_kernel("gemm", 7, at + d, at + d + 10, c);
        at += d + 10;
    }
    t.finish()
}

/// A first call that is slow only because it waited for the GPU is no
/// warm-up: its host time is what it did, not what it waited for.
#[test]
fn a_first_call_slow_only_from_waiting_is_no_warm_up() {
    // 2000 µs, 1990 of them in the sync: 10 µs of host time against 50.
    let f = findings(&first_call_waiting(2000, 1990));
    assert!(find(&f, "first_call_warmup").is_none(), "{f:#?}");
    // 2000 µs, 1000 of them in the sync: 1000 µs of host time is still
    // 20x the later calls', and the hint says so.
    let f = findings(&first_call_waiting(2000, 1000));
    let w = find(&f, "first_call_warmup").expect("D16");
    assert!(w.hint.contains("1.00 ms against 50.0 µs"), "{}", w.hint);
}

#[test]
fn a_slow_first_call_is_warm_up_not_steady_state() {
    let t = first_call_trace(2000);
    let f = findings(&t);
    let w = find(&f, "first_call_warmup").expect("D16");
    // The first call's host time up to its launch's end (10–2009); the
    // 1 µs after it is the queued launch's.
    assert_eq!((w.idle_ns, w.estimable), (1999 * US, false));
    assert!(
        w.hint.contains("`aten::addmm`") && w.hint.contains("2.00 ms against 50.0 µs"),
        "{}",
        w.hint
    );
    assert!(w.hint.contains("CUDA_MODULE_LOADING=EAGER"), "{}", w.hint);
    // The steady-state calls stay the CPU-bound operator's, apart.
    let a = attribute(&t, 0, window(&t).span);
    let first: Vec<_> = a
        .top_idle_operators
        .iter()
        .filter(|o| o.first_call && o.cause == Cause::CpuOp)
        .collect();
    assert_eq!((first.len(), first[0].idle_ns), (1, 1997 * US));
    let steady: Ns = a
        .top_idle_operators
        .iter()
        .filter(|o| !o.first_call && o.cause == Cause::CpuOp)
        .map(|o| o.idle_ns)
        .sum();
    // Each later call's 47 µs before its launch (the launch itself is
    // launch overhead).
    assert_eq!(steady, 3 * 47 * US);
}

/// A trace that begins at `ProfilerStep#5` comes after five steps that
/// made the first calls: its first `aten::addmm` is slow for another
/// reason (the ResNet-50 sample's first `MeanBackward1` of step #5, 561
/// µs against 82), not warm-up.
#[test]
fn a_trace_after_earlier_steps_has_no_first_call_warm_up() {
    let f = findings(&first_call_steps(2000, 0, 5, [50, 50, 50]));
    assert!(find(&f, "first_call_warmup").is_none(), "{f:#?}");
    // The same trace from the profiler's first step, #0, is warm-up.
    let f = findings(&first_call_steps(2000, 0, 0, [50, 50, 50]));
    assert!(find(&f, "first_call_warmup").is_some(), "{f:#?}");
}

/// A slowness a later call repeats is no warm-up: control's first
/// `MulBackward0` takes 2.41 ms against a 37 µs median, and 2.14 ms again a
/// step later.
#[test]
fn a_slow_first_call_that_recurs_is_no_warm_up() {
    let f = findings(&first_call_steps(2000, 0, 0, [50, 1500, 50]));
    assert!(find(&f, "first_call_warmup").is_none(), "{f:#?}");
    // Near miss: a later call at just under half the first's time.
    let f = findings(&first_call_steps(2000, 0, 0, [50, 990, 50]));
    assert!(find(&f, "first_call_warmup").is_some(), "{f:#?}");
}

#[test]
fn near_miss_a_first_call_three_times_slower_is_no_warm_up() {
    // 140 µs against 50 µs: 2.8x, under the 5x factor.
    let f = findings(&first_call_trace(140));
    assert!(find(&f, "first_call_warmup").is_none());
}

/// A benchmark's warm-up range and its measured range, each a convolution
/// that calls `cudaMalloc` (250 µs) before its launch; nothing queued on
/// the GPU meanwhile, no profiled steps.
///
/// ```text
/// µs          0   10          270 275  300       500   510         770 775  800
/// stream 7    [k0]                [k1]                                [k2]
/// thread 1        [`first` range ...........]  [## measure ## ..............]
///                 [aten::conv2d .........]       [aten::conv2d .........]
///                  [cudaMalloc 250][L]            [cudaMalloc 250][L]
/// ```
fn warmup_range_trace(first: &str) -> Trace {
    let mut t = Sketch::in_units(US);
    t.call(0, 2, "cudaLaunchKernel", 1)
        .named_kernel("k0", 7, 0, 10, 1);
    for (i, (range, at)) in [(first, 10), ("## measure ##", 500)].into_iter().enumerate() {
        let c = 2 + i as u64;
        t.o(at, at + 290, range)
            .o(at, at + 268, "aten::conv2d")
            .call(at + 5, at + 255, "cudaMalloc", 0)
            .call(at + 260, at + 265, "cudaLaunchKernel", c)
            .named_kernel("conv", 7, at + 265, at + 280, c);
    }
    t.finish()
}

#[test]
fn a_range_the_program_names_warm_up_is_warm_up() {
    let f = findings(&warmup_range_trace("## warmup ##"));
    let w = find(&f, "first_call_warmup").expect("D16");
    assert!(
        w.hint
            .contains("`## warmup ##`, which the program itself names warm-up"),
        "{}",
        w.hint
    );
    assert_eq!(w.annotation.as_deref(), Some("## warmup ##"));
    // The measured range's allocation stays D14's, with nothing of the
    // warm-up's: 250 µs of malloc (5–255 after its start) plus the 5 µs
    // before it and the 5 µs to the launch are the operator's, not the
    // allocator's.
    let a = find(&f, "allocator_calls_in_step").expect("D14");
    assert_eq!(a.occurrences, 1);
    assert_eq!(a.idle_ns, 250 * US);
    assert_eq!(a.annotation.as_deref(), Some("## measure ##"));
    assert!(a.hint.contains("idle in the window"), "{}", a.hint);
    assert!(f.iter().all(|x| !x.hint.contains("per step")), "{f:?}");
}

#[test]
fn near_miss_a_range_not_named_warm_up_is_steady_state() {
    let f = findings(&warmup_range_trace("## prepare ##"));
    assert!(find(&f, "first_call_warmup").is_none(), "{f:?}");
    let a = find(&f, "allocator_calls_in_step").expect("D14");
    assert_eq!((a.occurrences, a.idle_ns), (2, 500 * US));
}

/// CUPTI's `Lazy Function Loading` record inside a first launch: the
/// driver loading the kernel, not profiler overhead.
///
/// ```text
/// µs          0    10 12                  90 100  105 110
/// stream 7    [k0]                                [k1]
/// thread 1         [cudaLaunchKernel.............]
/// overhead           [Lazy Function Loading]
/// ```
fn overhead_in_launch(marker: &str) -> Trace {
    let mut t = Sketch::in_units(US);
    t.o(0, 200, "ProfilerStep#1").call(0, 2, "cudaLaunchKernel", 1);
    t.o(8, 102, "aten::relu").call(10, 100, "cudaLaunchKernel", 2);
    t.marker(MarkerKind::ProfilerOverhead, 12, 90, marker);
    t.named_kernel("k0", 7, 0, 5, 1)
        .named_kernel("k1", 7, 105, 110, 2);
    t.finish()
}

#[test]
fn lazy_function_loading_is_not_profiler_overhead() {
    let t = overhead_in_launch("Lazy Function Loading");
    assert!(segments(&t).iter().all(|s| s.2 != Cause::Profiler));
    let f = findings(&t);
    let w = find(&f, "first_call_warmup").expect("D16 warm-up");
    assert!(
        w.hint.contains("Lazy Function Loading") && w.hint.contains("CUDA_MODULE_LOADING=EAGER"),
        "{}",
        w.hint
    );
    // The whole launch call (10–100) that holds the record, not only the
    // 78 µs under it: the call is the kernel's first launch, and D14 does
    // not call it slow.
    assert_eq!(w.idle_ns, 90 * US);
    assert!(w.title.contains("1 kernel loaded on first launch"), "{}", w.title);
    assert!(find(&f, "slow_runtime_calls").is_none(), "{f:?}");
    assert!(find(&f, "profiler_overhead").is_none());
}

#[test]
fn near_miss_a_buffer_request_is_profiler_overhead() {
    let t = overhead_in_launch("Activity Buffer Request");
    let prof: Ns = segments(&t)
        .iter()
        .filter(|s| s.2 == Cause::Profiler)
        .map(|s| s.1 - s.0)
        .sum();
    assert_eq!(prof, 78);
    assert!(find(&findings(&t), "first_call_warmup").is_none());
}

/// Collectives by kernel name and by launching operator.
///
/// ```text
/// µs          0    10        100  110       200
/// stream 7    [gemm.]
/// stream 20        [multimem_all_reduce..]
/// stream 20                       [kernel launched in c10d::allreduce_]
/// ```
#[test]
fn collectives_are_communication_by_name_and_by_operator() {
    let mut t = Sketch::in_units(US);
    t.o(0, 300, "ProfilerStep#1").call(0, 2, "cudaLaunchKernel", 1);
    t.o(3, 9, "vllm::all_reduce").call(4, 6, "cudaLaunchKernel", 2);
    t.o(90, 99, "c10d::allreduce_")
        .call(92, 94, "cudaLaunchKernel", 3);
    t.named_kernel("gemm", 7, 0, 10, 1)
        .named_kernel(
            "void multimem_all_reduce_kernel<c10::BFloat16, 16>",
            20,
            10,
            100,
            2,
        )
        .named_kernel("reduce_body", 20, 110, 200, 3);
    let tr = t.finish();
    let an = analyze(&tr, &AnalyzeOptions::default());
    let b = &an.devices[0].breakdown;
    assert_eq!((b.compute_ns, b.communication_ns), (10 * US, 180 * US));
    let e = an
        .findings
        .iter()
        .find(|f| f.id == "exposed_communication")
        .expect("D15");
    assert_eq!(
        (e.detector.as_str(), e.primary, e.explained_ns),
        ("D15", false, 180 * US)
    );
    assert!(e.hint.contains("multimem_all_reduce"), "{}", e.hint);
}

#[test]
fn near_miss_communication_hidden_by_compute_is_not_exposed() {
    let mut t = Sketch::in_units(US);
    t.o(0, 300, "ProfilerStep#1").call(0, 2, "cudaLaunchKernel", 1);
    t.o(3, 9, "vllm::all_reduce").call(4, 6, "cudaLaunchKernel", 2);
    t.named_kernel("gemm", 7, 0, 200, 1).named_kernel(
        "void multimem_all_reduce_kernel<c10::BFloat16, 16>",
        20,
        10,
        100,
        2,
    );
    let an = analyze(&t.finish(), &AnalyzeOptions::default());
    assert!(an.findings.iter().all(|f| f.id != "exposed_communication"));
}

/// D12 weighs a kernel by the SMs it leaves idle: 120 blocks on 132 SMs
/// use 91 % of them; 8 blocks leave most idle.
fn underfilled(blocks: u32) -> Vec<Finding> {
    let mut t = Sketch::in_units(US);
    t.device("H100", 132);
    t.o(0, 1000, "ProfilerStep#1");
    for i in 0..10 {
        let s = 100 * i;
        t.call(s, s + 2, "cudaLaunchKernel", 1 + i as u64)
            .named_kernel("gemm", 7, s + 3, s + 98, 1 + i as u64)
            .grid([blocks, 1, 1]);
    }
    findings(&t.finish())
}

#[test]
fn kernels_that_leave_most_sms_idle_are_underfilled() {
    let f = underfilled(8);
    let u = find(&f, "underfilled_kernels").expect("D12");
    assert!(
        u.hint.contains("124 SMs") && u.hint.contains("most SMs"),
        "{}",
        u.hint
    );
}

#[test]
fn near_miss_kernels_using_nine_in_ten_sms_are_not_underfilled() {
    assert!(find(&underfilled(120), "underfilled_kernels").is_none());
}

/// A blocking read with nothing after it (the pipeline's final result)
/// saves nothing; the same read before more GPU work does.
///
/// ```text
/// µs          0              50 51    60               100
/// stream 7    [k1.............][DtoH]          ([k2...])
/// thread 1       [aten::item.......]
///                  [MemcpyAsync][cudaStreamSynchronize]
/// ```
fn final_read(more_work: bool) -> Vec<Finding> {
    let mut t = Sketch::in_units(US);
    t.o(0, 200, "ProfilerStep#1").call(0, 2, "cudaLaunchKernel", 1);
    t.o(10, 60, "aten::item");
    t.call(11, 13, "cudaMemcpyAsync", 2)
        .call(14, 60, "cudaStreamSynchronize", 0);
    t.named_kernel("k1", 7, 0, 50, 1)
        .copy(7, 50, 51, 2, CopyKind::DtoH)
        .memory(MemKind::Device, MemKind::Pinned, 4);
    if more_work {
        t.o(150, 160, "aten::add").call(152, 154, "cudaLaunchKernel", 3);
        t.named_kernel("k2", 7, 156, 190, 3);
    }
    findings(&t.finish())
}

#[test]
fn a_final_read_saves_nothing() {
    let f = final_read(false);
    let r = find(&f, "blocking_device_to_host_read").expect("D5");
    assert_eq!((r.est_savings_ns, r.estimable), (0, false));
    assert!(r.hint.contains("no GPU work follows"), "{}", r.hint);
}

#[test]
fn near_miss_a_read_before_more_work_saves() {
    let f = final_read(true);
    let r = find(&f, "blocking_device_to_host_read").expect("D5");
    assert!(r.estimable && r.est_savings_ns > 0, "{r:?}");
}

/// A pageable 1 MB copy takes 100 µs; a pinned 1 MB copy in the same trace
/// takes 20 µs: pinning saves 80 µs of the copy, not all of it.
///
/// ```text
/// µs          0   10   20 22  30   40      140  150 160
/// stream 7    [k0]     [pinned]    [pageable......][k1]
/// thread 1    [L0]  [L p][ ][aten::to: cudaMemcpy (staging)...][L1]
/// ```
#[test]
fn a_pinned_copy_still_moves_its_bytes() {
    let mut t = Sketch::in_units(US);
    t.o(0, 300, "ProfilerStep#1").call(0, 2, "cudaLaunchKernel", 1);
    t.call(12, 14, "cudaMemcpyAsync", 2);
    t.o(30, 142, "aten::to").call(32, 141, "cudaMemcpyAsync", 3);
    t.call(145, 147, "cudaLaunchKernel", 4);
    t.named_kernel("k0", 7, 0, 10, 1)
        .copy(7, 20, 40, 2, CopyKind::HtoD)
        .memory(MemKind::Pinned, MemKind::Device, 1_000_000)
        .copy(7, 40, 140, 3, CopyKind::HtoD)
        .memory(MemKind::Pageable, MemKind::Device, 1_000_000)
        .named_kernel("k1", 7, 150, 160, 4);
    let f = findings(&t.finish());
    let p = find(&f, "pageable_copies").expect("D8");
    assert_eq!(p.explained_ns - p.idle_ns, 80 * US, "{p:?}");
    assert!(p.est_savings_ns <= p.explained_ns);
    assert!(p.hint.contains("about 20.0 µs instead of 100.0 µs"), "{}", p.hint);
}

/// Two streams wait on one producer at once: the device idle under both
/// waits (100–118) counts once; counted per wait it came to 36 µs, more
/// than the 20 µs the device was idle in all.
///
/// ```text
/// µs          0  5 10                   100       118 119 130
/// stream 20   [producer....................]
/// stream 7                                        [c1....]
/// stream 9                                            [c2....]
/// thread 1    [L p][wait 7][wait 9][L c1][L c2]
/// ```
#[test]
fn overlapping_waits_count_the_idle_once() {
    let mut t = Sketch::in_units(US);
    t.o(0, 131, "ProfilerStep#1").call(0, 2, "cudaLaunchKernel", 1);
    t.call(3, 4, "cudaStreamWaitEvent", 2)
        .call(5, 6, "cudaStreamWaitEvent", 3);
    t.call(7, 9, "cudaLaunchKernel", 4)
        .call(9, 10, "cudaLaunchKernel", 5);
    t.named_kernel("producer", 20, 2, 100, 1)
        .sync_record("Stream Wait Event", 7, 3, 4, 2)
        .sync_record("Stream Wait Event", 9, 5, 6, 3)
        .named_kernel("c1", 7, 118, 130, 4)
        .named_kernel("c2", 9, 119, 131, 5);
    let tr = t.finish();
    let idle = attribute(&tr, 0, window(&tr).span).idle_ns;
    let f = findings(&tr);
    let w = find(&f, "cross_stream_wait").expect("D13");
    assert_eq!(w.occurrences, 2);
    assert!(w.idle_ns <= idle, "{} > device idle {idle}", w.idle_ns);
    assert_eq!((idle, w.idle_ns), (20 * US, 18 * US));
}

/// A gap of ten 5 µs DataLoader pieces with Python between them, then a
/// 20 µs launch: DataLoader holds most of it, though the launch is the
/// longest single piece.
#[test]
fn a_gap_is_labelled_by_the_cause_holding_most_of_it() {
    let mut t = Sketch::in_units(US);
    t.o(0, 100, "ProfilerStep#1").call(0, 2, "cudaLaunchKernel", 1);
    for i in 0..10 {
        let s = 10 + 6 * i;
        t.o(
            s,
            s + 5,
            "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__",
        );
    }
    t.call(70, 90, "cudaLaunchKernel", 2);
    t.named_kernel("k0", 7, 0, 10, 1)
        .named_kernel("k1", 7, 90, 100, 2);
    let tr = t.finish();
    let a = attribute(&tr, 0, window(&tr).span);
    assert_eq!(a.top_gaps[0].cause, Cause::Dataloader);
    assert_eq!(
        a.top_gaps[0].annotation.as_deref(),
        Some("enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__")
    );
}

/// Without steps the window runs from the first to the last event of the
/// workload: Kineto's `Record Window End` instant, written when the
/// profiler stops, is not one.
#[test]
fn the_window_ends_at_the_last_workload_event() {
    let mut t = Sketch::in_units(US);
    t.marker(MarkerKind::Instant, 0, 0, "Iteration Start: PyTorch Profiler");
    t.o(0, 50, "aten::relu").call(2, 4, "cudaLaunchKernel", 1);
    t.named_kernel("k", 7, 6, 60, 1);
    t.marker(MarkerKind::Instant, 5000, 5000, "Record Window End");
    let tr = t.finish();
    assert_eq!(window(&tr).span, (0, 60 * US));
}

/// Forty 10 µs views between two launches: framework overhead, not CPU
/// computation.
#[test]
fn many_short_host_only_operators_get_framework_advice() {
    let mut t = Sketch::in_units(US);
    t.o(0, 600, "ProfilerStep#1").call(0, 2, "cudaLaunchKernel", 1);
    for i in 0..40 {
        t.o(10 + 12 * i, 20 + 12 * i, "aten::view");
    }
    t.o(500, 504, "aten::relu").call(501, 503, "cudaLaunchKernel", 2);
    t.named_kernel("k0", 7, 0, 8, 1)
        .named_kernel("k1", 7, 505, 600, 2);
    let f = findings(&t.finish());
    let h = cpu_bound_hint(&f);
    assert!(h.contains("framework overhead, not computation"), "{h}");
    assert!(!h.contains("CPU tensors"), "{h}");
}

//! Idle-time causes on hand-built timelines. Each test draws its CPU and GPU
//! tracks, builds exactly that trace with a [`Sketch`] (times in ns as
//! drawn), and checks every segment in ns.

use gapscope_analyzers::causes::Cause::{
    self, Dataloader, FrameworkOverhead, LaunchOverhead, Profiler, Sync, Untraced,
};
use gapscope_analyzers::idle::attribute;
use gapscope_analyzers::segments::idle_segments;
use gapscope_collectors::trace::*;

/// `Cause::CpuOp`, renamed: the trace model has a `CpuOp` row type.
const CPU: Cause = Cause::CpuOp;

/// `(start, end, cause, operator, annotation)` of every segment.
type Row = (Ns, Ns, Cause, &'static str, &'static str);

fn segments(t: &Trace, window: (Ns, Ns)) -> Vec<(Ns, Ns, Cause, String, String)> {
    let name = |r: Option<OpRow>| t.op_name(r).unwrap_or("-").to_string();
    idle_segments(t, 0, window)
        .iter()
        .map(|s| (s.start, s.end, s.cause, name(s.op), name(s.annotation)))
        .collect()
}

fn check(t: &Trace, window: (Ns, Ns), want: &[Row]) {
    let want: Vec<_> = want
        .iter()
        .map(|&(s, e, c, o, a)| (s, e, c, o.to_string(), a.to_string()))
        .collect();
    assert_eq!(segments(t, window), want);
    let a = attribute(t, 0, window);
    let listed: Ns = want.iter().map(|w| w.1 - w.0).sum();
    assert_eq!(a.idle_by_cause_ns.total(), listed);
    assert_eq!(a.idle_ns, listed);
}

/// 2021-era traces store this `record_function` range as an operator.
const DL: &str = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__";

/// CPU work inside an operator, then the launch.
///
/// ```text
/// ns          0    5   10   15   20   25   30   35   40   45   50   60   70
/// stream 7    [k1.................]                          [k2.........]
/// thread 1    [ProfilerStep#1..........................................]
///             [a..]                 [aten::b.............]
///               [L1]                          [L2.]
/// gap                             20[fw][cpu_op...][launch........]50
/// ```
#[test]
fn cpu_inside_an_operator_then_launch_overhead() {
    let mut t = Sketch::new();
    t.op(0, 100, "ProfilerStep#1")
        .op(0, 8, "aten::a")
        .op(25, 45, "aten::b");
    t.call(1, 5, "cudaLaunchKernel", 1)
        .call(35, 40, "cudaLaunchKernel", 2);
    t.kernel(7, 0, 20, 1).kernel(7, 50, 70, 2);
    let tr = t.finish();
    check(
        &tr,
        (0, 70),
        &[
            (20, 25, FrameworkOverhead, "-", "-"),
            (25, 35, CPU, "aten::b", "-"),
            (35, 50, LaunchOverhead, "aten::b", "-"),
        ],
    );
}

/// A blocking `.item()` drains the GPU; then the next batch is loaded, then
/// Python runs, then the next operator computes and launches.
///
/// ```text
/// ns          0    5   10   20   25   35   40   50   70   75   80   85   90  100
/// stream 7    [k1......................]                                  [k2....]
/// thread 1    [ProfilerStep#1....................................................]
///             [train.py(12): train............................................]
///             [add][aten::item.............]
///                   [_local_scalar_dense...]
///                       [cudaStreamSynchronize]
///                                            [DataLoader#__next__.....]
///                                                 [aten::stack.]
///                                                                  [aten::conv.....]
///                                                                       [L2..]
/// gap                              25[sync..][fw][dataloader.......][fw][cpu][launch]90
/// ```
/// The timeline above, with `inside` the DataLoader range's operators.
fn sync_then_dataloader(inside: &[(Ns, Ns, &str)]) -> Trace {
    let mut t = Sketch::new();
    t.op(0, 100, "ProfilerStep#1").op(0, 99, "train.py(12): train");
    t.op(0, 4, "aten::add").call(1, 3, "cudaLaunchKernel", 1);
    t.op(5, 35, "aten::item").op(6, 35, "aten::_local_scalar_dense");
    t.call(10, 35, "cudaStreamSynchronize", 0);
    t.op_as(40, 75, DL, CpuOpKind::Operator);
    for &(s, e, name) in inside {
        t.op(s, e, name);
    }
    t.op(80, 92, "aten::conv").call(85, 90, "cudaLaunchKernel", 2);
    t.kernel(7, 0, 25, 1).kernel(7, 90, 100, 2);
    t.finish()
}

#[test]
fn sync_drain_then_dataloader_then_python() {
    let tr = sync_then_dataloader(&[(50, 70, "aten::stack")]);
    check(
        &tr,
        (0, 100),
        &[
            (25, 35, Sync, "aten::_local_scalar_dense", "-"),
            (35, 40, FrameworkOverhead, "-", "-"),
            (40, 50, Dataloader, "-", DL),
            (50, 70, Dataloader, "aten::stack", DL),
            (70, 75, Dataloader, "-", DL),
            (75, 80, FrameworkOverhead, "-", "-"),
            (80, 85, CPU, "aten::conv", "-"),
            (85, 90, LaunchOverhead, "aten::conv", "-"),
        ],
    );
    let segs = idle_segments(&tr, 0, (0, 100));
    assert_eq!(tr.strings.get(segs[0].source), "train.py(12): train");
    let a = attribute(&tr, 0, (0, 100));
    let c = a.idle_by_cause_ns;
    assert_eq!(
        (c.sync, c.dataloader, c.framework_overhead, c.cpu_op),
        (10, 35, 10, 5)
    );
    assert_eq!(c.launch_overhead, 5);
    assert_eq!(a.top_gaps.len(), 1);
    assert_eq!((a.top_gaps[0].start_ns, a.top_gaps[0].dur_ns), (25, 65));
    assert_eq!(a.top_gaps[0].cause, Dataloader);
    assert_eq!(a.top_gaps[0].operator.as_deref(), Some("aten::stack"));
    assert_eq!(a.top_gaps[0].annotation.as_deref(), Some(DL));
    let top = &a.top_idle_operators[0];
    assert_eq!((top.cause, top.idle_ns, top.count), (Dataloader, 20, 1));
}

/// [`sync_drain_then_dataloader_then_python`] with the DataLoader's
/// `aten::stack` at 44-56 and two 1-unit views: its longest piece (12)
/// is shorter than the DataLoader's time between operators (4 + 2 + 7 + 8
/// = 21), so the gap names no operator, only the DataLoader range.
#[test]
fn a_gap_is_named_by_the_blame_with_the_most_time_not_the_longest_piece() {
    let tr = sync_then_dataloader(&[
        (44, 56, "aten::stack"),
        (58, 59, "aten::view"),
        (66, 67, "aten::view"),
    ]);
    let a = attribute(&tr, 0, (0, 100));
    let longest = idle_segments(&tr, 0, (0, 100))
        .into_iter()
        .filter(|s| s.cause == Dataloader)
        .max_by_key(|s| s.dur())
        .unwrap();
    assert_eq!((longest.start, longest.end), (44, 56));
    let g = &a.top_gaps[0];
    assert_eq!((g.cause, g.operator.as_deref()), (Dataloader, None));
    assert_eq!(g.annotation.as_deref(), Some(DL));
}

/// Two calls of one operator in one gap: two segments, one gap.
///
/// ```text
/// time      0   10          50  60          95 98 100
/// stream 7  [k1]                                  [k2]
/// thread 1      [aten::linear][..][aten::linear....]
///                                           [L]
/// ```
#[test]
fn an_operators_gaps_are_counted_apart_from_its_segments() {
    let mut t = Sketch::new();
    t.op(0, 110, "ProfilerStep#1").call(0, 2, "cudaLaunchKernel", 1);
    t.op(10, 50, "aten::linear");
    t.op(60, 99, "aten::linear").call(95, 98, "cudaLaunchKernel", 2);
    t.kernel(7, 0, 10, 1).kernel(7, 100, 110, 2);
    let tr = t.finish();
    let a = attribute(&tr, 0, (0, 110));
    let linear = a
        .top_idle_operators
        .iter()
        .find(|o| o.cause == CPU && o.operator.as_deref() == Some("aten::linear"))
        .expect("the CPU-bound linear");
    assert_eq!((linear.idle_ns, linear.count, linear.gaps), (40 + 35, 2, 1));
}

/// A device is idle only when every stream is: stream 9 keeps it busy
/// while stream 7 waits.
///
/// ```text
/// ns          0   10   20   30   40  42  44  46   50   60
/// stream 7    [k1......]                          [k3.....]
/// stream 9         [k2................]
/// thread 1    [ProfilerStep#1..............................]
///             [L1][L2]                [aten::c]
///                                         [L3]
/// idle                                40[fw][cpu][launch]50   (not 20..40)
/// ```
#[test]
fn another_busy_stream_means_not_idle() {
    let mut t = Sketch::new();
    t.op(0, 60, "ProfilerStep#1").op(42, 48, "aten::c");
    t.call(0, 2, "cudaLaunchKernel", 1)
        .call(3, 5, "cudaLaunchKernel", 2);
    t.call(44, 46, "cudaLaunchKernel", 3);
    t.kernel(7, 0, 20, 1).kernel(9, 10, 40, 2).kernel(7, 50, 60, 3);
    let tr = t.finish();
    check(
        &tr,
        (0, 60),
        &[
            (40, 42, FrameworkOverhead, "-", "-"),
            (42, 44, CPU, "aten::c", "-"),
            (44, 50, LaunchOverhead, "aten::c", "-"),
        ],
    );
}

/// Work launched before the gap began is queued: however busy the CPU is
/// meanwhile, the GPU is not waiting for it.
///
/// ```text
/// ns          0    4    8   10        30        40        50
/// stream 7    [k1.............................]  [k2......]
/// thread 1    [L1] [aten::b]  [aten::busy_cpu...................]
///                    [L2]
/// gap                                         30[launch...]40
/// ```
#[test]
fn queued_kernel_is_launch_overhead() {
    let mut t = Sketch::new();
    t.op(4, 8, "aten::b").op(10, 50, "aten::busy_cpu");
    t.call(0, 2, "cudaLaunchKernel", 1)
        .call(5, 7, "cudaLaunchKernel", 2);
    t.kernel(7, 0, 30, 1).kernel(7, 40, 50, 2);
    let tr = t.finish();
    check(&tr, (0, 50), &[(30, 40, LaunchOverhead, "aten::b", "-")]);
}

/// The kernels of one CUDA graph replay share the `cudaGraphLaunch`
/// correlation: one launch, so the gaps between them are launch overhead.
///
/// ```text
/// ns          0    3    5   10  12   15
/// stream 7              [g1..]  [g2.]
/// thread 1    [aten::graph_replay]
///             [cudaGraphLaunch]
/// gap                       10[]12
/// ```
#[test]
fn cuda_graph_replay_is_one_launch() {
    let mut t = Sketch::new();
    t.op(0, 4, "aten::graph_replay").call(0, 3, "cudaGraphLaunch", 5);
    t.kernel(7, 5, 10, 5).kernel(7, 12, 15, 5);
    let tr = t.finish();
    check(
        &tr,
        (5, 15),
        &[(10, 12, LaunchOverhead, "aten::graph_replay", "-")],
    );
}

/// Gaps at the window's edges keep their CPU cause. Before the first kernel
/// the thread loads data; after the last one it reads a value back, runs
/// Python, and leaves the step: no CPU evidence after 90.
///
/// ```text
/// ns          0        15  18  20   30  35  40        60        90  100
/// window      |<----------------------------------------------------->|
/// stream 7                     [k1....]
/// thread 1    [ProfilerStep#1......................................]
///             [DataLoader#.]   [L1]        [aten::item........]
///                                               [cudaStreamSync.]
/// gaps        [dataloader][fw][launch]  [fw][cpu][sync....][fw.....][untraced]
/// ```
#[test]
fn window_edges_keep_their_cpu_cause() {
    let mut t = Sketch::new();
    t.op(0, 90, "ProfilerStep#1")
        .op_as(0, 15, DL, CpuOpKind::Operator);
    t.op(18, 21, "aten::conv").call(18, 20, "cudaLaunchKernel", 1);
    t.op(35, 60, "aten::item")
        .call(40, 60, "cudaStreamSynchronize", 0);
    t.kernel(7, 20, 30, 1);
    let tr = t.finish();
    check(
        &tr,
        (0, 100),
        &[
            (0, 15, Dataloader, "-", DL),
            (15, 18, FrameworkOverhead, "-", "-"),
            (18, 20, LaunchOverhead, "aten::conv", "-"),
            (30, 35, FrameworkOverhead, "-", "-"),
            (35, 40, CPU, "aten::item", "-"),
            (40, 60, Sync, "aten::item", "-"),
            (60, 90, FrameworkOverhead, "-", "-"),
            (90, 100, Untraced, "-", "-"),
        ],
    );
}

/// No CPU ranges at all: untraced until the launch call starts.
///
/// ```text
/// ns          0    10   20   25   30   40
/// stream 7    [k1......]          [k2.....]
/// thread 1    [L1]           [L2.]
/// gap                20[untr.][l]30
/// ```
#[test]
fn no_cpu_ranges_is_untraced() {
    let mut t = Sketch::new();
    t.call(0, 2, "cudaLaunchKernel", 1)
        .call(25, 28, "cudaLaunchKernel", 2);
    t.kernel(7, 0, 20, 1).kernel(7, 30, 40, 2);
    let tr = t.finish();
    check(
        &tr,
        (0, 40),
        &[(20, 25, Untraced, "-", "-"), (25, 30, LaunchOverhead, "-", "-")],
    );
}

/// Profiler overhead wins over everything, even a sync in progress; the
/// profiler's own Python code counts too.
///
/// ```text
/// ns          0    10   15   20   30   35   40   45   50   60
/// stream 7    [k1.........]                          [k2.....]
/// marker                    [overhead]
/// thread 1    [L1]     [cudaStreamSynchronize..]
///                                          [torch/profiler/profiler.py(1): step]
///                                                  [L2]
/// gap                    15[sync][prof.][sync][fw][prof..][launch]50
/// ```
#[test]
fn profiler_overhead_wins() {
    let mut t = Sketch::new();
    t.op(0, 60, "ProfilerStep#1");
    t.op(40, 45, "/x/site-packages/torch/profiler/profiler.py(1): step");
    t.call(0, 2, "cudaLaunchKernel", 1)
        .call(10, 35, "cudaStreamSynchronize", 0);
    t.call(45, 48, "cudaLaunchKernel", 2);
    t.kernel(7, 0, 15, 1).kernel(7, 50, 60, 2);
    t.marker(
        MarkerKind::ProfilerOverhead,
        20,
        30,
        "CUDA profiling data flush overhead",
    );
    let tr = t.finish();
    check(
        &tr,
        (0, 60),
        &[
            (15, 20, Sync, "-", "-"),
            (20, 30, Profiler, "-", "-"),
            (30, 35, Sync, "-", "-"),
            (35, 40, FrameworkOverhead, "-", "-"),
            (40, 45, Profiler, "-", "-"),
            (45, 50, LaunchOverhead, "-", "-"),
        ],
    );
}

/// Per step: the window's segments clipped to each step add up to the
/// step's idle time.
///
/// ```text
/// ns          0    10   20   30   40   50   60
/// steps       [step 1.......][step 2..........]
/// stream 7    [k1...]                  [k2....]
/// thread 1    [L1]                [L2]
/// idle             10[untraced....][l]45          (step 1: 20, step 2: 15)
/// ```
#[test]
fn steps_split_the_window_exactly() {
    use gapscope_analyzers::idle::by_cause_in;
    let mut t = Sketch::new();
    t.call(0, 2, "cudaLaunchKernel", 1)
        .call(38, 40, "cudaLaunchKernel", 2);
    t.kernel(7, 0, 10, 1).kernel(7, 45, 60, 2);
    let tr = t.finish();
    let segs = idle_segments(&tr, 0, (0, 60));
    let s1 = by_cause_in(&segs, (0, 30));
    let s2 = by_cause_in(&segs, (30, 60));
    assert_eq!((s1.untraced, s1.launch_overhead, s1.total()), (20, 0, 20));
    assert_eq!((s2.untraced, s2.launch_overhead, s2.total()), (8, 7, 15));
}

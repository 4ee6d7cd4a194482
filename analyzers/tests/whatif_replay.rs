//! The what-if replay: with no edit it gives back every recorded time of
//! every shared trace; on a drawn timeline, removing a sync's drain moves
//! the following work by exactly the drain.

mod shared_traces;
use gapscope_analyzers::evidence::DeviceEvidence;
use gapscope_analyzers::whatif::{Edit, Replay};
use gapscope_analyzers::window::window;
use gapscope_collectors::kineto::{import_file, ImportOptions};
use gapscope_collectors::trace::*;
use shared_traces::{shared, trace_files};

#[test]
fn replay_without_edit_reproduces_every_shared_trace_exactly() {
    let dir = shared();
    let mut files = Vec::new();
    trace_files(&dir, &mut files);
    files.sort();
    let mut devices = 0;
    for path in &files {
        let Ok(t) = import_file(path, &ImportOptions::default()) else {
            continue;
        };
        let w = window(&t);
        for d in t.active_devices() {
            let ev = DeviceEvidence::new(&t, d);
            let r = Replay::new(&t, d, w.span, &ev);
            let o = r.run(&Edit::default());
            let g = &t.gpu;
            for i in 0..g.len() {
                if let Some(span) = o.gpu_span(GpuRow::new(i)) {
                    assert_eq!(span, (g.start[i], g.end[i]), "{} gpu row {i}", path.display());
                }
            }
            let rt = &t.runtime;
            for i in 0..rt.len() {
                if let Some(span) = o.call_span(CallRow::new(i)) {
                    assert_eq!(span, (rt.start[i], rt.end[i]), "{} call {i}", path.display());
                }
            }
            // The baseline Replay::new kept without a second pass is what a
            // pass from scratch gives.
            assert_eq!(o.makespan, r.baseline(), "{} device {d}", path.display());
            assert_eq!(r.savings(&Edit::default()), 0);
            devices += 1;
        }
    }
    if files.is_empty() {
        eprintln!("no shared traces: skipped");
    } else {
        assert!(devices >= 10, "only {devices} devices");
    }
}

/// The drawing of the `whatif` module docs:
///
/// ```text
/// ns          0    10   15  30 40      100  105  120 125 130       150     180
/// stream 7    [k1 c=1.......................]            [k2 c=2..............]
/// thread 1    [L1]  [cudaStreamSynchronize.......]  [L2 c=2]
///                   ^10                      105^   120  125
/// gap                                       [100......130]
/// ```
///
/// The sync waits for k1 (ends 100) and returns 5 ns later (105). With its
/// wait removed it lasts those 5 ns (10..15); the 15 ns of CPU work after it
/// follow (L2 at 30); k2 is ready 10 ns after its launch (40) but waits for
/// k1 on its stream: 100..150. Everything after the drain moves by the
/// 30 ns gap, no more, no less.
#[test]
fn removing_a_sync_drain_moves_the_following_work_by_the_gap() {
    let t = Sketch::new()
        .step(1, 0, 180)
        .call(0, 5, "cudaLaunchKernel", 1)
        .call(10, 105, "cudaStreamSynchronize", 0)
        .call(120, 125, "cudaLaunchKernel", 2)
        .kernel(7, 0, 100, 1)
        .kernel(7, 130, 180, 2)
        .finish();
    let ev = DeviceEvidence::new(&t, 0);
    assert_eq!(ev.blocking.len(), 1);
    let r = Replay::new(&t, 0, (0, 180), &ev);
    assert_eq!(r.baseline(), 180);
    let edit = Edit {
        no_wait: vec![CallRow::new(1)],
        ..Edit::default()
    };
    let o = r.run(&edit);
    assert_eq!(o.call_span(CallRow::new(1)), Some((10, 15)));
    assert_eq!(o.call_span(CallRow::new(2)), Some((30, 35)));
    assert_eq!(o.gpu_span(GpuRow::new(0)), Some((0, 100)));
    assert_eq!(o.gpu_span(GpuRow::new(1)), Some((100, 150)));
    assert_eq!(r.savings(&edit), 30);
}

/// k1 on stream 7 (0..20) launched at 0..5, k2 on stream 7 launched at
/// 50..55 and running `k2` (and, with `other`, a kernel on stream 9 that no
/// call of the trace launched); the replay of the whole, and the edit that
/// removes the thread's CPU time 20..40 (the Python before k2's launch).
fn python_before_a_launch(k2: (Ns, Ns), other: Option<(Ns, Ns)>) -> (Trace, Edit) {
    let mut sketch = Sketch::new();
    let th = sketch.thread();
    sketch
        .call(0, 5, "cudaLaunchKernel", 1)
        .call(50, 55, "cudaLaunchKernel", 2)
        .kernel(7, 0, 20, 1);
    if let Some((s, e)) = other {
        sketch.kernel(9, s, e, 3);
    }
    let t = sketch.kernel(7, k2.0, k2.1, 2).finish();
    let edit = Edit {
        remove_cpu: vec![(th, (20, 40))],
        ..Edit::default()
    };
    (t, edit)
}

/// The replay of device 0 of `t` up to its last GPU row's end.
fn replay_of(t: &Trace) -> Replay<'_> {
    let end = t.gpu.end.iter().copied().max().unwrap_or(0);
    Replay::new(t, 0, (0, end), &DeviceEvidence::new(t, 0))
}

/// Removing CPU time before a launch moves the launch and, when the kernel
/// waited for it, the kernel; the stream still orders work.
///
/// ```text
/// ns          0    10   20   30   40   50   60   70   80
/// stream 7    [k1.......]                  [k2.......]
/// thread 1    [L1]      [python.......][L2]
///                       20           45 50
/// edit: remove python 20..40 (20 ns): L2 starts at 30, and k2 (its stream
///       free since 20) starts 5 ns after L2 did, its recorded delay: 35..55
/// ```
#[test]
fn removing_cpu_time_moves_a_waiting_launch() {
    let (t, edit) = python_before_a_launch((55, 75), None);
    let r = replay_of(&t);
    let o = r.run(&edit);
    assert_eq!(o.call_span(CallRow::new(1)), Some((30, 35)));
    assert_eq!(o.gpu_span(GpuRow::new(1)), Some((35, 55)));
    assert_eq!(r.savings(&edit), 20);
}

/// [`removing_cpu_time_moves_a_waiting_launch`] with k2 held: launched at
/// 50..55, it starts 500 µs after its call returned, on an idle device
/// with its stream free. Nothing in the trace held it (the vLLM HIP-graph
/// trace's first copy, launched at 0.53 ms, starts at 8.37 ms), so no edit
/// of the trace makes it start earlier: removing the Python before its
/// launch saves nothing.
///
/// ```text
/// ns          0    20             50 55           500_055     500_075
/// stream 7    [k1..]                               [k2.........]
/// thread 1    [L1]  [python......][L2]
/// ```
#[test]
fn work_held_outside_the_trace_does_not_move_earlier() {
    let (t, edit) = python_before_a_launch((500_055, 500_075), None);
    let r = replay_of(&t);
    let o = r.run(&edit);
    assert_eq!(o.call_span(CallRow::new(1)), Some((30, 35)));
    assert_eq!(o.gpu_span(GpuRow::new(1)), Some((500_055, 500_075)));
    assert_eq!(r.savings(&edit), 0);
    // Near miss: held 90 µs (under the 100 µs of QUEUED_AFTER_NS) it is
    // launch latency, and moves with its launch.
    let (t, edit) = python_before_a_launch((90_055, 90_075), None);
    assert_eq!(replay_of(&t).savings(&edit), 20);
    // Near miss: held as long, but while stream 9 ran until 15 µs before
    // it started (a stream waiting on an event of the other stream, which
    // the trace shows): not held by something outside the trace, and it
    // moves with its launch.
    let (t, edit) = python_before_a_launch((500_055, 500_075), Some((60, 500_040)));
    assert_eq!(replay_of(&t).savings(&edit), 20);
}

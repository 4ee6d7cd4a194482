//! The breakdown, window selection, temporal block and launch statistics on
//! small hand-drawn timelines with exact nanosecond expectations.
//!
//! Each test draws its timeline in its doc comment (one character is 10 ns
//! unless the drawing says otherwise) and builds it with a [`Sketch`]; times
//! are absolute (origin fixed at 0).

use gapscope_analyzers::analysis::{Analysis, AnalyzeOptions};
use gapscope_analyzers::analyze;
use gapscope_analyzers::breakdown::{Breakdown, MemcpyByKind};
use gapscope_analyzers::launch_stats::{launches, LaunchOptions, LaunchStats};
use gapscope_analyzers::temporal::{temporal, Temporal};
use gapscope_analyzers::window::{select, steps, window, WindowOptions};
use gapscope_collectors::trace::*;

fn run(trace: &Trace, window: WindowOptions) -> Analysis {
    analyze(
        trace,
        &AnalyzeOptions {
            window,
            ..Default::default()
        },
    )
}

fn all(trace: &Trace) -> Analysis {
    run(trace, WindowOptions::default())
}

/// A breakdown with the given parts; memcpy is all HtoD unless overridden.
fn bd(window: Ns, compute: Ns, comm: Ns, memcpy: Ns, memset: Ns) -> Breakdown {
    Breakdown {
        window_ns: window,
        compute_ns: compute,
        communication_ns: comm,
        memcpy_ns: memcpy,
        memset_ns: memset,
        idle_ns: window - compute - comm - memcpy - memset,
        memcpy_by_kind_ns: MemcpyByKind {
            htod: memcpy,
            ..Default::default()
        },
    }
}

fn assert_adds_up(b: &Breakdown) {
    let k = b.memcpy_by_kind_ns;
    assert_eq!(k.htod + k.dtoh + k.dtod + k.other, b.memcpy_ns);
    assert_eq!(
        b.compute_ns + b.communication_ns + b.memcpy_ns + b.memset_ns + b.idle_ns,
        b.window_ns
    );
    assert!(b.idle_ns >= 0);
}

/// ```text
/// t (×10ns) 0    5    10   15   20   25   30
/// step 1    [.............................]        0..300
/// stream 7       [kernel...]                       50..150
/// stream 8           [kernel.......]               90..190
/// stream 9                          [k]            240..260
/// compute: union 50..190 + 240..260 = 160; idle 140
/// ```
#[test]
fn overlapping_streams_count_once() {
    let tr = Sketch::new()
        .step(1, 0, 300)
        .kernel(7, 50, 150, 0)
        .kernel(8, 90, 190, 0)
        .kernel(9, 240, 260, 0)
        .finish();
    let a = all(&tr);
    assert_eq!(a.devices.len(), 1);
    assert_eq!(a.devices[0].breakdown, bd(300, 160, 0, 0, 0));
    assert_eq!(a.devices[0].name, "GPU 0");
    assert_eq!(a.window.basis, "steps");
}

/// ```text
/// t (×10ns) 0    5    10   15   20
/// step 1    [...................]           0..200
/// stream 7    [kernel.....]                 20..120
/// stream 13         [Memcpy HtoD....]       80..160   (80..120 under the kernel)
/// stream 14                  [DtoH]         140..180  (140..160 under HtoD)
/// compute 100, memcpy htod 40 (120..160), dtoh 20 (160..180), idle 40
/// ```
#[test]
fn memcpy_under_a_kernel_counts_as_compute() {
    let tr = Sketch::new()
        .step(1, 0, 200)
        .kernel(7, 20, 120, 0)
        .copy(13, 80, 160, 0, CopyKind::HtoD)
        .copy(14, 140, 180, 0, CopyKind::DtoH)
        .finish();
    let b = all(&tr).devices[0].breakdown;
    assert_adds_up(&b);
    assert_eq!(b.compute_ns, 100);
    assert_eq!(b.memcpy_ns, 60);
    assert_eq!(
        b.memcpy_by_kind_ns,
        MemcpyByKind {
            htod: 40,
            dtoh: 20,
            dtod: 0,
            other: 0
        }
    );
    assert_eq!(b.idle_ns, 40);
}

/// ```text
/// t (×10ns) 0    5    10   15   20
/// step 1    [...................]           0..200
/// stream 7  [kernel....]                    0..100
/// stream 20      [ncclKernel_AllReduce...]  50..180   (50..100 under compute)
/// stream 7                 [memset]         110..140  (under the collective)
/// compute 100, communication 80, memset 0, idle 20
/// ```
#[test]
fn nccl_overlapping_compute_is_compute_first() {
    let tr = Sketch::new()
        .step(1, 0, 200)
        .kernel(7, 0, 100, 0)
        .nccl(20, 50, 180)
        .memset(7, 110, 140)
        .finish();
    let a = all(&tr);
    assert_eq!(a.devices[0].breakdown, bd(200, 100, 80, 0, 0));
    // HTA's temporal: everything non-compute that is busy is non_compute.
    assert_eq!(
        a.devices[0].temporal,
        Temporal {
            span_ns: 180,
            idle_ns: 0,
            compute_ns: 100,
            non_compute_ns: 80
        }
    );
}

/// ```text
/// t (×10ns) 0    5    10
/// step 1    [.........]               0..100
/// stream 7    [memset]  [memcpy DtoD]   20..60, 70..90 (DtoD: dtod bucket)
/// stream 8      [memset]              40..80 (60..70 memset, 70..80 under copy)
/// memcpy 20 (dtod), memset 50 (20..70), idle 30
/// ```
#[test]
fn memset_is_last_before_idle() {
    let tr = Sketch::new()
        .step(1, 0, 100)
        .memset(7, 20, 60)
        .copy(7, 70, 90, 0, CopyKind::DtoD)
        .memset(8, 40, 80)
        .finish();
    let b = all(&tr).devices[0].breakdown;
    assert_adds_up(&b);
    assert_eq!(
        (b.memcpy_ns, b.memcpy_by_kind_ns.dtod, b.memset_ns, b.idle_ns),
        (20, 20, 50, 30)
    );
}

/// ```text
/// t (×10ns)  0    5    10   15   20   25   30
/// cpu                  [launch]                       100..120 (no steps)
/// marker                                      ^       290
/// stream 7   [k.]                                     0..30   (first event)
/// stream 7                      [k.....]              150..210
/// window = first..last event = 0..290 (the marker), idle = 290 − 90 = 200
/// temporal span = 0..210 (GPU only): idle 120
/// ```
#[test]
fn gaps_at_the_window_edges_are_idle() {
    let tr = Sketch::new()
        .call(100, 120, "cudaLaunchKernel", 5)
        .kernel(7, 0, 30, 0)
        .kernel(7, 150, 210, 5)
        .marker(MarkerKind::Instant, 290, 290, "tick")
        .finish();
    let a = all(&tr);
    assert_eq!(a.window.basis, "trace");
    assert_eq!((a.window.start_ns, a.window.end_ns), (0, 290));
    assert_eq!(a.devices[0].breakdown, bd(290, 90, 0, 0, 0));
    assert_eq!(
        a.devices[0].temporal,
        Temporal {
            span_ns: 210,
            idle_ns: 120,
            compute_ns: 90,
            non_compute_ns: 0
        }
    );
    assert!(a.steps.is_empty());
}

/// ```text
/// t (×10ns) 0    5    10
/// step 1    [.........]            0..100
/// stream 7    [k.]                 20..50
/// stream 7         [Stream Sync..] 60..150  (a wait, never busy)
/// device 1     only sync records   → not listed
/// ```
#[test]
fn sync_records_are_never_busy() {
    let mut t = Sketch::new();
    t.step(1, 0, 100)
        .kernel(7, 20, 50, 0)
        .sync_record("Stream Sync", 7, 60, 150, 0);
    t.on_device(1).sync_record("Context Sync", 3, 10, 90, 0);
    let tr = t.finish();
    let a = all(&tr);
    assert_eq!(a.devices.len(), 1);
    assert_eq!(a.devices[0].breakdown, bd(100, 30, 0, 0, 0));
    assert_eq!(a.devices[0].temporal.span_ns, 30);
    assert_eq!(a.diagnostics.sync_records, 2);
}

/// ```text
/// t (×10ns) 0    5    10   15   20   25   30
/// step 4    [.........]                        0..100
/// step 5               [.........]             110..210 (100..110: between steps)
/// step 6                          [........]   220..300
/// stream 7      [kernel.....]                  40..160: 60 in step 4, 50 in 5
/// stream 7                  [k...........]     180..260: 30 in step 5, 40 in 6
/// window 0..300: compute 200, idle 100
/// ```
#[test]
fn per_step_split() {
    let tr = Sketch::new()
        .step(4, 0, 100)
        .step(5, 110, 210)
        .step(6, 220, 300)
        .kernel(7, 40, 160, 0)
        .kernel(7, 180, 260, 0)
        .finish();
    let a = all(&tr);
    assert_eq!(a.devices[0].breakdown, bd(300, 200, 0, 0, 0));
    let per_step: Vec<(u64, Ns, Ns, Breakdown)> = a
        .steps
        .iter()
        .map(|s| (s.step, s.start_ns, s.end_ns, s.devices[0].breakdown))
        .collect();
    assert_eq!(
        per_step,
        vec![
            (4, 0, 100, bd(100, 60, 0, 0, 0)),
            (5, 110, 210, bd(100, 80, 0, 0, 0)),
            (6, 220, 300, bd(80, 40, 0, 0, 0)),
        ]
    );
    assert_eq!(a.window.steps_selected, vec![4, 5, 6]);
}

/// Three steps; the last one is dropped HTA's way.
///
/// ```text
/// t (×10ns) 0    5    10   15   20   25   30
/// step 1    [.........]                         0..100
/// step 2              [.........]               100..200
/// step 3                         [.........]    210..300
/// cpu         [L1]      [L2]  [L3]   [L4]       launches c=1 @20, c=2 @120, c=3 @180, c=4 @240
/// stream 7       [k1]      [k2]   [k3......]    k3 (c=3) 190..260 runs into step 3: kept
///                                  [k4]         c=4 250..270: its launch is in step 3: dropped
///                    [orphan]                   no correlation: dropped (as HTA)
/// kept: window 0..200 (steps 1..2); compute inside it = k1 + k2 + k3∩[..200]
/// temporal covers k1..k3 whole: span 50..260
/// ```
#[test]
fn exclude_last_step_drops_its_cpu_rows_and_their_gpu_work() {
    let tr = Sketch::new()
        .step(1, 0, 100)
        .step(2, 100, 200)
        .step(3, 210, 300)
        .call(20, 30, "cudaLaunchKernel", 1)
        .call(120, 130, "cudaLaunchKernel", 2)
        .call(180, 185, "cudaLaunchKernel", 3)
        .call(240, 245, "cudaLaunchKernel", 4)
        .kernel(7, 50, 70, 1)
        .kernel(7, 140, 160, 2)
        .kernel(7, 190, 260, 3)
        .kernel(7, 250, 270, 4)
        .kernel(8, 60, 90, 0)
        .finish();
    let opts = WindowOptions {
        steps: None,
        exclude_last_step: true,
    };
    let sel = select(&tr, &opts);
    assert_eq!(sel.runtime.len(), 3);
    assert_eq!(sel.gpu.len(), 3);
    assert_eq!(sel.cpu_ops.len(), 2);
    let call = |i| Some(CallRow::new(i));
    assert_eq!(sel.links.gpu_launch, vec![call(0), call(1), call(2)]);
    assert_eq!(sel.links.runtime_gpu_count, vec![1, 1, 1]);
    assert_eq!(window(&sel).span, (0, 200));

    let a = run(&tr, opts);
    assert_eq!(a.devices[0].breakdown, bd(200, 50, 0, 0, 0));
    assert_eq!(a.window.steps_selected, vec![1, 2]);
    assert_eq!(a.window.steps_in_trace, 3);
    assert_eq!(
        a.devices[0].temporal,
        Temporal {
            span_ns: 210,
            idle_ns: 100,
            compute_ns: 110,
            non_compute_ns: 0
        }
    );
    assert_eq!(a.devices[0].launch_stats.count, 3);

    // With a single step nothing is dropped, orphans included.
    let one = Sketch::new().step(1, 0, 100).kernel(8, 60, 90, 0).finish();
    assert_eq!(select(&one, &opts).gpu.len(), 1);
}

/// Steps A..B select those steps' CPU rows and what they launched; CPU work
/// between two steps stays with the earlier one, work before the first
/// step goes with it when it is selected.
///
/// ```text
/// t (×10ns) 0    5    10   15   20   25   30   35
/// step 1        [....]                            50..100
/// step 2                [....]                    150..200
/// step 3                          [.....]         250..310
/// cpu       [L1]     [L2]    [L3]       [L4]      c=1 @0, c=2 @110 (between 1 and 2), c=3 @210, c=4 @320
/// stream 7     [k1]     [k2]    [k3]       [k4]   30..45, 120..140, 215..240, 330..340
/// --steps 2..3: cpu range [150, ∞): L3, L4 kept, window 150..310
/// --steps 1..1: cpu range (−∞, 150): L1, L2 kept, window 50..100
/// ```
/// A GPU that runs behind the host: step 1's kernels run through step 2's
/// time. `--steps 2..2` keeps them where they run inside step 2 (without
/// their launches): the step's GPU was busy, not idle with its own kernel
/// queued behind nothing.
///
/// ```text
/// t         0    10   20   90      110 150     200   230   290  320
/// step          [1.............][2..............][3..............]
/// cpu           [L1] [L2]          [L3]              [L4]
/// stream 7                  [k1..........][k2..........][k3....][k4]
///                           90          150          230    290  320
/// --steps 2..2: L3 and k3 kept; k1 and k2 too (they run in 100..200)
/// ```
#[test]
fn steps_keep_earlier_work_that_runs_inside_them() {
    let mut t = Sketch::new();
    t.step(1, 0, 100).step(2, 100, 200).step(3, 200, 300);
    for (c, ls, ks, ke) in [
        (1, 10, 90, 150),
        (2, 20, 150, 230),
        (3, 110, 230, 290),
        (4, 210, 290, 320),
    ] {
        t.call(ls, ls + 5, "cudaLaunchKernel", c).kernel(7, ks, ke, c);
    }
    let tr = t.finish();
    let opts = WindowOptions {
        steps: Some((2, 2)),
        exclude_last_step: false,
    };
    let picked = select(&tr, &opts);
    assert_eq!(picked.runtime.len(), 1);
    assert_eq!(picked.gpu.len(), 3);
    // k1 and k2 have no launch in the selection; k3 has L3.
    let launched: Vec<bool> = picked.links.gpu_launch.iter().map(Option::is_some).collect();
    assert_eq!(launched, vec![false, false, true]);
    let a = run(&tr, opts);
    assert_eq!((a.window.start_ns, a.window.end_ns), (100, 200));
    assert_eq!(a.devices[0].breakdown, bd(100, 100, 0, 0, 0));
    assert_eq!(a.devices[0].launch_stats.count, 1);
}

#[test]
fn steps_a_to_b_select_their_rows() {
    let mut t = Sketch::new();
    t.step(1, 50, 100).step(2, 150, 200).step(3, 250, 310);
    for (c, ls, ks, ke) in [
        (1, 0, 30, 45),
        (2, 110, 120, 140),
        (3, 210, 215, 240),
        (4, 320, 330, 340),
    ] {
        t.call(ls, ls + 5, "cudaLaunchKernel", c).kernel(7, ks, ke, c);
    }
    let tr = t.finish();
    let pick = |a, b| WindowOptions {
        steps: Some((a, b)),
        exclude_last_step: false,
    };

    let late = run(&tr, pick(2, 3));
    assert_eq!((late.window.start_ns, late.window.end_ns), (150, 310));
    assert_eq!(late.window.steps_selected, vec![2, 3]);
    assert_eq!(late.devices[0].breakdown, bd(160, 25, 0, 0, 0));
    assert_eq!(late.devices[0].launch_stats.count, 2);
    assert_eq!(late.steps.len(), 2);

    let early = select(&tr, &pick(1, 1));
    assert_eq!(early.runtime.len(), 2);
    assert_eq!(early.gpu.len(), 2);
    assert_eq!(window(&early).span, (50, 100));
    assert_eq!(steps(&early).len(), 1);

    // --steps 2..3 --exclude-last-step: step 3 is gone first.
    let both = run(
        &tr,
        WindowOptions {
            steps: Some((2, 3)),
            exclude_last_step: true,
        },
    );
    assert_eq!(both.window.steps_selected, vec![2]);
    assert_eq!(both.devices[0].breakdown, bd(50, 0, 0, 0, 0));

    // A range with no step selects nothing.
    let none = run(&tr, pick(8, 9));
    assert!(none.devices.is_empty());
    assert_eq!(none.window.basis, "empty");
}

/// ```text
/// t (×10ns) 0    5    10   15   20
/// cpu       [cudaGraphLaunch c=9....]               0..60
///           [cudaLaunchKernel c=3]                  70..80
/// stream 7          [g1] [g2]  [g3]                  70..90, 100..120, 130..140 (c=9)
/// stream 7                          [k]              150..200 (c=3)
/// one graph launch: gpu 70..140 = 70 ns, delay 70 − 60 = 10; kernel: delay 70
/// ```
#[test]
fn a_graph_launch_counts_once() {
    let tr = Sketch::new()
        .call(0, 60, "cudaGraphLaunch", 9)
        .call(70, 80, "cudaLaunchKernel", 3)
        .kernel(7, 70, 90, 9)
        .kernel(7, 100, 120, 9)
        .kernel(7, 130, 140, 9)
        .kernel(7, 150, 200, 3)
        .finish();
    let l: Vec<(u32, Ns, Ns, Ns)> = launches(&tr)
        .iter()
        .map(|l| (l.gpu_rows, l.cpu_duration, l.gpu_duration, l.launch_delay))
        .collect();
    assert_eq!(l, vec![(3, 60, 70, 10), (1, 10, 50, 70)]);
    let s = &all(&tr).devices[0].launch_stats;
    assert_eq!((s.count, s.graph_launches, s.short_kernels), (2, 1, 0));
}

/// ```text
/// cpu  [cuLaunchKernel 40µs]  [hipLaunchKernel 60µs]    [cudaStreamSynchronize]
/// gpu   1µs kernel, 200µs late   2µs kernel right away   (sync record: no launch)
/// ```
#[test]
fn any_api_that_launches_counts_and_cutoffs_apply() {
    const US: Ns = 1_000;
    let tr = Sketch::new()
        .call(0, 40 * US, "cuLaunchKernel", 1)
        .kernel(7, 240 * US, 241 * US, 1)
        .call(300 * US, 360 * US, "hipLaunchKernel", 2)
        .kernel(7, 360 * US, 362 * US, 2)
        .call(400 * US, 500 * US, "cudaStreamSynchronize", 3)
        .sync_record("Stream Sync", 7, 400 * US, 500 * US, 3)
        .finish();
    let s = LaunchStats::of(&launches(&tr), &LaunchOptions::default());
    assert_eq!(s.count, 2);
    assert_eq!(
        (s.short_kernels, s.runtime_outliers, s.launch_delay_outliers),
        (1, 1, 1)
    );
    assert_eq!((s.launch_delay_ns.p50, s.launch_delay_ns.max), (0, 200 * US));
    assert_eq!((s.cpu_duration_ns.p50, s.cpu_duration_ns.max), (40 * US, 60 * US));
}

/// ```text
/// device 0  stream 7  [k]          0..10
/// device 2  stream 1     [k....]   5..40  named in the device table
/// ```
#[test]
fn devices_are_reported_separately_and_named() {
    let mut t = Sketch::new();
    t.kernel(7, 0, 10, 0);
    t.on_device(2)
        .named_kernel("gemm", 1, 5, 40, 0)
        .device("NVIDIA H100", 132);
    let tr = t.finish();
    let a = all(&tr);
    let d: Vec<(u32, &str, Ns, Ns)> = a
        .devices
        .iter()
        .map(|d| {
            (
                d.device,
                d.name.as_str(),
                d.breakdown.window_ns,
                d.breakdown.compute_ns,
            )
        })
        .collect();
    assert_eq!(d, vec![(0, "GPU 0", 40, 10), (2, "NVIDIA H100", 40, 35)]);
    let temporal: Vec<Ns> = temporal(&tr).iter().map(|(_, t)| t.span_ns).collect();
    assert_eq!(temporal, vec![10, 35]);
}

#[test]
fn a_cpu_only_trace_has_no_devices_and_round_trips_as_json() {
    let tr = Sketch::new()
        .step(1, 0, 100)
        .call(10, 20, "cudaMalloc", 0)
        .finish();
    let a = all(&tr);
    assert!(a.devices.is_empty());
    assert_eq!(a.steps.len(), 1);
    assert!(a.steps[0].devices.is_empty());
    let json = serde_json::to_string(&a).unwrap();
    let back: Analysis = serde_json::from_str(&json).unwrap();
    assert_eq!(back, a);
    assert_eq!(back.schema_version, 1);
}

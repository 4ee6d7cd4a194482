//! The counters of the JSON (`devices[].counters`: utilization and launch
//! queue binned over the window) on hand-drawn timelines, bin by bin.

use gapscope_analyzers::analysis::AnalyzeOptions;
use gapscope_analyzers::counters::Counters;
use gapscope_analyzers::session::Session;
use gapscope_collectors::trace::*;

const MS: Ns = 1_000_000;

fn counters(trace: &Trace) -> Counters {
    let s = Session::new(trace, &AnalyzeOptions::default());
    let from_session = s.counters(0).unwrap();
    assert_eq!(s.analysis().devices[0].counters, from_session);
    from_session
}

/// ```text
/// t (ms)        0       1       2       3       4       5
/// step 1        [.......................................]
/// launch calls  [L1]        [L2]    [L3]
/// stream 7          [k1........]            [k2][k3....]
/// queue         1   0       1       2       1   0
/// 1 ms bins     |       |       |       |       |       |
/// utilization %  50      100     0       50      100
/// queue mean     0.5     0.5     1.5     1.5     0
/// queue max      1       1       2       2       0
/// ```
/// (One character is 125 µs; the sketch counts in half milliseconds.) Over
/// the window the queue's mean is 0.8 (4 item-ms over 5 ms), its max 2.
#[test]
fn one_ms_bins_of_busy_time_and_the_launch_queue() {
    let t = Sketch::in_units(MS / 2)
        .step(1, 0, 10)
        .call(0, 1, "cudaLaunchKernel", 1)
        .call(3, 4, "cudaLaunchKernel", 2)
        .call(5, 6, "cudaLaunchKernel", 3)
        .kernel(7, 1, 4, 1)
        .kernel(7, 7, 8, 2)
        .kernel(7, 8, 10, 3)
        .finish();
    let c = counters(&t);
    assert_eq!(
        c,
        Counters {
            start_ns: 0,
            bin_ns: MS,
            utilization_pct: vec![50.0, 100.0, 0.0, 50.0, 100.0],
            launch_queue_mean: vec![0.5, 0.5, 1.5, 1.5, 0.0],
            launch_queue_max: vec![1, 1, 2, 2, 0],
            launch_queue_window_mean: 0.8,
            launch_queue_window_max: 2,
        }
    );
}

/// A window of 4 001 ms: 1 ms bins would make 4 001 of them, so the bin
/// widens to 5 ms (801 bins, the last one 1 ms long).
///
/// ```text
/// t (ms)    0   1   2   ...   4000  4001
/// step 1    [.........................]
/// thread 1  [L1]              [L2]
/// stream 7      [k1]              [k2]
/// ```
#[test]
fn a_long_window_widens_the_bin() {
    let t = Sketch::in_units(MS)
        .step(1, 0, 4_001)
        .call(0, 1, "cudaLaunchKernel", 1)
        .call(3_999, 4_000, "cudaLaunchKernel", 2)
        .kernel(7, 1, 2, 1)
        .kernel(7, 4_000, 4_001, 2)
        .finish();
    let c = counters(&t);
    assert_eq!((c.start_ns, c.bin_ns), (0, 5 * MS));
    assert_eq!(c.utilization_pct.len(), 801);
    assert_eq!(c.utilization_pct[0], 20.0);
    assert!(c.utilization_pct[1..800].iter().all(|&u| u == 0.0));
    assert_eq!(c.utilization_pct[800], 100.0);
    // L2 queued [3999, 4000) ms: in bin [3995, 4000) ms, one ms of five.
    assert_eq!(c.launch_queue_mean[799], 0.2);
    assert_eq!(c.launch_queue_max[799], 1);
    assert_eq!(c.launch_queue_window_max, 1);
    assert_eq!(c.launch_queue_window_mean, 2.0 / 4_001.0);
}

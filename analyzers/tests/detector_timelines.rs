//! Every detector on hand-built timelines: one drawn trace that must
//! trigger it and a near miss that must not. Times in the drawings are µs
//! (the thresholds are µs-scale): each trace is a `Sketch::in_units(US)`.

use gapscope_analyzers::detectors::{detect, Finding};
use gapscope_analyzers::window::window;
use gapscope_collectors::trace::*;

/// One µs of the drawings, in ns.
const US: Ns = 1000;

/// The detectors' view of a drawn timeline.
trait Findings {
    /// Runs the detectors and checks the invariants every finding keeps.
    fn findings(&mut self) -> Vec<Finding>;
}

impl Findings for Sketch {
    fn findings(&mut self) -> Vec<Finding> {
        let t = self.finish();
        let w = window(&t);
        let f = detect(&t, &w);
        let idle: Ns = gapscope_analyzers::idle::attribute(&t, 0, w.span).idle_ns;
        let mut claimed = 0;
        for x in &f {
            assert!(
                x.est_savings_ns >= 0 && x.est_savings_ns <= x.explained_ns,
                "{x:?}"
            );
            assert!(x.idle_ns <= idle, "{x:?}");
            if x.primary {
                claimed += x.idle_ns;
            }
        }
        assert!(claimed <= idle, "claimed {claimed} of {idle}");
        for x in &f {
            eprintln!(
                "{} {} idle {} saves {}: {}",
                x.detector, x.id, x.idle_ns, x.est_savings_ns, x.title
            );
        }
        f
    }
}

fn find<'a>(f: &'a [Finding], id: &str) -> Option<&'a Finding> {
    f.iter().find(|x| x.id == id)
}

/// D2: the CPU computes inside `aten::nonzero` while the GPU waits.
///
/// ```text
/// µs          0    10                        60 62 65            100
/// stream 7    [k1..]                               [k2............]
/// thread 1    [ProfilerStep#1.....................................]
///             [L1]  [aten::nonzero (CPU)......][L2]
/// idle             [cpu_op....................][launch]
/// ```
fn cpu_bound(cpu_us: Ns) -> Vec<Finding> {
    let mut t = Sketch::in_units(US);
    t.op(0, 100, "ProfilerStep#1").call(0, 2, "cudaLaunchKernel", 1);
    t.op(10, 10 + cpu_us, "aten::nonzero");
    let l = 10 + cpu_us;
    t.call(l, l + 2, "cudaLaunchKernel", 2);
    t.kernel(7, 0, 10, 1).kernel(7, l + 5, 100, 2);
    t.findings()
}

#[test]
fn d2_cpu_bound_operator() {
    let f = cpu_bound(50);
    let x = find(&f, "cpu_bound_operator").expect("D2");
    assert_eq!(x.detector, "D2");
    assert_eq!(x.operator.as_deref(), Some("aten::nonzero"));
    assert_eq!(x.idle_ns, 50 * US);
    // Removing the 50 µs of CPU work closes the 50 µs it kept the GPU idle.
    assert_eq!(x.est_savings_ns, 50 * US);
    assert!(x.hint.contains("aten::nonzero"));
}

/// A finding's idle evidence is its longest pieces, longest first and the
/// earliest first among equals: 20 stretches of CPU work of 10-50 µs,
/// each lengths several times over.
///
/// ```text
/// stream 7    [k0]      [k1]          [k2]    ...
/// thread 1    [ProfilerStep#1...........................]
///                 [nonzero][L]  [nonzero....][L]  ...
/// ```
#[test]
fn d2_evidence_is_the_longest_pieces_earliest_first_among_equals() {
    let mut t = Sketch::in_units(US);
    let cpu: Vec<Ns> = (0..20).map(|i| 10 + (i * 7 % 5) * 10).collect();
    let end = 20 * 80;
    t.op(0, end, "ProfilerStep#1").call(0, 2, "cudaLaunchKernel", 100);
    t.kernel(7, 0, 10, 100);
    let mut at = 10;
    let mut expect: Vec<(Ns, Ns)> = Vec::new();
    for (i, &c) in cpu.iter().enumerate() {
        t.op(at, at + c, "aten::nonzero");
        t.call(at + c, at + c + 2, "cudaLaunchKernel", i as u64);
        t.kernel(7, at + c + 5, at + c + 15, i as u64);
        expect.push((at * US, (at + c) * US));
        at += c + 15;
    }
    let f = t.findings();
    let x = find(&f, "cpu_bound_operator").expect("D2");
    let idle: Vec<(Ns, Ns)> = x
        .evidence
        .iter()
        .filter(|e| e.kind == "idle")
        .map(|e| (e.start_ns, e.end_ns))
        .collect();
    assert!(idle.len() >= 5, "{:?}", x.evidence);
    expect.sort_by_key(|&(s, e)| (std::cmp::Reverse(e - s), s));
    assert_eq!(idle, expect[..idle.len()]);
}

#[test]
fn d2_near_miss_below_the_noise_floor() {
    assert!(find(&cpu_bound(3), "cpu_bound_operator").is_none());
}

/// D3: `n` kernels of 2 µs, each launched 5 µs before it starts, 8 µs
/// apart: the GPU is busy a quarter of the stretch.
///
/// ```text
/// µs        5  9 10 12    13 17 18 20
/// thread    [L0]          [L1]
/// stream 7       [k0]           [k1]      ... × n
/// idle              [fw][launch..]
/// ```
fn small_kernels(n: i64) -> Vec<Finding> {
    let mut t = Sketch::in_units(US);
    let end = 10 + 8 * n + 10;
    t.op(0, end, "ProfilerStep#1").op(1, end - 1, "nn.Module: Block");
    for i in 0..n {
        let a = 10 + 8 * i;
        t.call(a - 5, a - 1, "cudaLaunchKernel", 1 + i as u64);
        t.kernel(7, a, a + 2, 1 + i as u64);
    }
    t.findings()
}

#[test]
fn d3_small_kernel_launches() {
    let f = small_kernels(40);
    let x = find(&f, "small_kernel_launches").expect("D3");
    assert_eq!((x.detector.as_str(), x.occurrences), ("D3", 40));
    assert_eq!(x.annotation.as_deref(), Some("nn.Module: Block"));
    // 39 gaps of 6 µs between the first and last kernel.
    assert_eq!(x.idle_ns, 39 * 6 * US);
    assert!(x.est_savings_ns > 0);
    assert!(x.hint.contains("torch.compile"));
}

#[test]
fn d3_near_miss_short_run() {
    assert!(find(&small_kernels(20), "small_kernel_launches").is_none());
}

/// D4: `zero_grad` zeroes `n` gradients one `aten::zero_` (one 1 µs fill
/// kernel) at a time, 5 µs apart.
///
/// ```text
/// thread 1  [Optimizer.zero_grad#SGD.zero_grad.................................]
///             [aten::zero_ [L]]  [aten::zero_ [L]]  ...  × n
/// stream 7                 [f]                [f]
/// ```
fn zero_grad(n: i64) -> Vec<Finding> {
    let mut t = Sketch::in_units(US);
    let end = 10 + 6 * n + 10;
    t.op(0, end, "ProfilerStep#1")
        .call(0, 1, "cudaLaunchKernel", 1000);
    t.kernel(7, 1, 10, 1000);
    t.op(10, end - 5, "Optimizer.zero_grad#SGD.zero_grad");
    for i in 0..n {
        let a = 10 + 6 * i;
        t.op(a, a + 4, "aten::zero_")
            .call(a + 1, a + 3, "cudaLaunchKernel", 1 + i as u64);
        t.kernel(7, a + 4, a + 5, 1 + i as u64);
    }
    t.findings()
}

#[test]
fn d4_per_parameter_zero_grad() {
    let f = zero_grad(20);
    let x = find(&f, "per_parameter_loop").expect("D4");
    assert_eq!(x.detector, "D4");
    assert_eq!(x.annotation.as_deref(), Some("Optimizer.zero_grad#SGD.zero_grad"));
    assert_eq!(x.operator.as_deref(), Some("aten::zero_"));
    assert!(x.hint.contains("set_to_none=True"));
    // set_to_none removes the 20 fill kernels too.
    assert_eq!(x.explained_ns, x.idle_ns + 20 * US);
    assert!(x.est_savings_ns > x.idle_ns / 2);
}

#[test]
fn d4_near_miss_few_parameters() {
    assert!(find(&zero_grad(10), "per_parameter_loop").is_none());
}

/// D4 near miss: an optimizer step loops over 20 parameters, but its
/// launches run ahead of a long kernel, so its tiny kernels run back to
/// back and the GPU never waits for the loop: no finding (one said "the
/// GPU idles 0 ns per step" on the ResNet-50 sample).
///
/// ```text
/// µs        0  10        130                 1000   1020
/// stream 7  [k0...........................................][a][a]..[a]
/// thread 1     [Optimizer.step#SGD.step]
///                [add_ [L]] × 20
/// ```
#[test]
fn d4_near_miss_a_loop_the_gpu_never_waits_for() {
    let mut t = Sketch::in_units(US);
    t.op(0, 1100, "ProfilerStep#1")
        .call(0, 1, "cudaLaunchKernel", 1000);
    t.kernel(7, 1, 1000, 1000);
    t.op(10, 130, "Optimizer.step#SGD.step");
    for i in 0..20 {
        let a = 10 + 6 * i;
        t.op(a, a + 4, "aten::add_")
            .call(a + 1, a + 3, "cudaLaunchKernel", 1 + i as u64);
        t.kernel(7, 1000 + i, 1001 + i, 1 + i as u64);
    }
    let f = t.findings();
    assert!(find(&f, "per_parameter_loop").is_none(), "{f:#?}");
}

/// D5: `.item()` copies 8 bytes to the host and synchronizes; the GPU
/// drains at 51 and waits until the host launches k2.
///
/// ```text
/// µs          0            50 51      R  62 64 66        80
/// stream 7    [k1.............][DtoH]           [k2.......]
/// thread 1    [L1]  [aten::item.........]
///                     [MemcpyAsync][cudaStreamSynchronize..R]
///                                         [L2]
/// ```
fn item_read(ret_us: Ns) -> Vec<Finding> {
    item_read_then_launch(ret_us, 62, 66)
}

/// [`item_read`] with L2 at `launch_us`..+2 and k2 from `k2_us`.
fn item_read_then_launch(ret_us: Ns, launch_us: Ns, k2_us: Ns) -> Vec<Finding> {
    item_read_sketch(ret_us, launch_us, k2_us).findings()
}

/// The timeline of [`item_read_then_launch`], to draw more on.
fn item_read_sketch(ret_us: Ns, launch_us: Ns, k2_us: Ns) -> Sketch {
    let mut t = Sketch::in_units(US);
    t.op(0, 100, "ProfilerStep#1").call(0, 2, "cudaLaunchKernel", 1);
    t.op(10, ret_us, "aten::item")
        .op(10, ret_us, "aten::_local_scalar_dense");
    t.call(11, 13, "cudaMemcpyAsync", 2)
        .call(14, ret_us, "cudaStreamSynchronize", 0);
    t.call(launch_us, launch_us + 2, "cudaLaunchKernel", 3);
    t.kernel(7, 0, 50, 1)
        .copy(7, 50, 51, 2, CopyKind::DtoH)
        .memory(MemKind::Device, MemKind::Pinned, 8)
        .kernel(7, k2_us, 80, 3);
    t
}

#[test]
fn d5_blocking_item() {
    let f = item_read(60);
    let x = find(&f, "blocking_device_to_host_read").expect("D5");
    assert_eq!(x.operator.as_deref(), Some("aten::item"));
    assert_eq!((x.idle_ns, x.occurrences), (9 * US, 1));
    assert!(x.hint.contains(".item()"));
}

/// D5 where the read is a size: boolean-mask indexing (`x[mask]`) runs
/// `aten::index`, which calls `aten::nonzero`, which copies the count of
/// true elements to the host before it allocates the result.
///
/// ```text
/// µs          0            50 51      60  62 64 66        80
/// stream 7    [k1.............][DtoH]           [k2.......]
/// thread 1    [L1]  [aten::index..........]
///                    [aten::nonzero.......]
///                     [MemcpyAsync][cudaStreamSynchronize]
/// ```
fn mask_index(inner: &str) -> Vec<Finding> {
    let mut t = Sketch::in_units(US);
    t.op(0, 100, "ProfilerStep#1").call(0, 2, "cudaLaunchKernel", 1);
    t.op(10, 60, "aten::index").op(10, 60, inner);
    t.call(11, 13, "cudaMemcpyAsync", 2)
        .call(14, 60, "cudaStreamSynchronize", 0);
    t.call(62, 64, "cudaLaunchKernel", 3);
    t.kernel(7, 0, 50, 1)
        .copy(7, 50, 51, 2, CopyKind::DtoH)
        .memory(MemKind::Device, MemKind::Pinned, 8)
        .kernel(7, 66, 80, 3);
    t.findings()
}

#[test]
fn d5_a_data_dependent_size_says_so() {
    let f = mask_index("aten::nonzero");
    let x = find(&f, "blocking_device_to_host_read").expect("D5");
    assert!(
        x.title
            .contains("reads the size of a data-dependent result to the host"),
        "{}",
        x.title
    );
    assert!(
        x.hint
            .contains("`aten::nonzero` cannot allocate its result before it knows how many elements")
            && x.hint.contains("torch.nonzero_static"),
        "{}",
        x.hint
    );
    assert!(!x.hint.contains(".item()"), "{}", x.hint);
    // The same read under an operator of fixed result size is a scalar.
    let f = mask_index("aten::_local_scalar_dense");
    let x = find(&f, "blocking_device_to_host_read").expect("D5");
    assert!(x.title.contains("reads a scalar"), "{}", x.title);
    assert!(!x.hint.contains("nonzero_static"), "{}", x.hint);
}

#[test]
fn d5_near_miss_short_drain() {
    // The wait (51–53) and the drain after it (53–55, the launch of k2)
    // come to 4 µs, under the 5 µs floor.
    assert!(find(&item_read_then_launch(53, 53, 55), "blocking_device_to_host_read").is_none());
}

#[test]
fn d5_short_wait_long_drain() {
    // The wait is 2 µs (51–53) but the GPU stays empty until k2 at 66:
    // the read is what emptied it, so D5 reports it.
    let f = item_read(53);
    let x = find(&f, "blocking_device_to_host_read").expect("D5");
    assert_eq!(x.idle_ns, 2 * US);
    assert!(x.explained_ns > 10 * US, "{x:?}");
    // The hint says both: the wait, and the drain after the call returns.
    assert!(
        x.hint.contains(
            "the GPU idles 2.0 µs per step until the call returns, and 13.0 µs more while the \
             CPU launches the next work."
        ),
        "{}",
        x.hint
    );
}

/// D6: `torch.cuda.synchronize()` waits for k1, then the host launches k2.
///
/// ```text
/// µs          0             50   R    70 72 75      90
/// stream 7    [k1.............]             [k2......]
/// thread 1    [L1] [cudaDeviceSynchronize..R] [L2]
/// idle                          [sync][fw..][launch]
/// ```
fn device_sync(ret_us: Ns) -> Vec<Finding> {
    let mut t = Sketch::in_units(US);
    t.op(0, 100, "ProfilerStep#1").call(0, 2, "cudaLaunchKernel", 1);
    t.op(5, ret_us, "train.py(7): step")
        .call(5, ret_us, "cudaDeviceSynchronize", 0);
    t.call(70, 72, "cudaLaunchKernel", 2);
    t.kernel(7, 0, 50, 1).kernel(7, 75, 90, 2);
    t.findings()
}

#[test]
fn d6_explicit_sync() {
    let f = device_sync(60);
    let x = find(&f, "explicit_sync").expect("D6");
    assert_eq!(x.idle_ns, 10 * US);
    assert_eq!(x.source.as_deref(), Some("train.py(7): step"));
    // Not waiting, the host reaches L2 10 µs earlier: the whole drain.
    assert_eq!(x.est_savings_ns, 10 * US);
    assert!(x.hint.contains("wait_event"));
}

#[test]
fn d6_near_miss_short_drain() {
    assert!(find(&device_sync(53), "explicit_sync").is_none());
}

/// D6 over an event: timing code records events around k1, waits for the
/// second (`event.synchronize()`), reads `elapsed_time`, and later
/// synchronizes the device at the same source line.
///
/// ```text
/// µs          0             50   60       100             150  160
/// stream 7    [k1.............]             [k2.............]
/// thread 1    [L1][rec]  [cudaEventSynchronize]  [L2]  [cudaDeviceSynchronize]  [L3]
///                                  [elapsed|then]     (`then` launches or reads)
/// ```
fn event_timing(then: &str) -> Vec<Finding> {
    let mut t = Sketch::in_units(US);
    t.op(0, 200, "ProfilerStep#1").call(0, 2, "cudaLaunchKernel", 1);
    t.call(3, 4, "cudaEventRecord", 0);
    t.op(5, 61, "train.py(9): step")
        .call(5, 60, "cudaEventSynchronize", 0);
    t.call(62, 63, then, if then == "cudaLaunchKernel" { 4 } else { 0 });
    t.call(64, 65, "cudaEventElapsedTime", 0);
    t.call(70, 72, "cudaLaunchKernel", 2);
    t.op(90, 161, "train.py(9): step")
        .call(90, 160, "cudaDeviceSynchronize", 0);
    t.call(170, 172, "cudaLaunchKernel", 3);
    t.kernel(7, 0, 50, 1)
        .kernel(7, 62, 63, 4)
        .kernel(7, 100, 150, 2)
        .kernel(7, 175, 190, 3);
    t.findings()
}

#[test]
fn d6_names_every_api_and_what_each_waits_for() {
    let f = event_timing("cudaEventQuery");
    let x = find(&f, "explicit_sync").expect("D6");
    assert_eq!(x.occurrences, 2, "{x:?}");
    assert!(
        x.title.contains(
            "synchronizes 2 times (cudaDeviceSynchronize once, cudaEventSynchronize once) and the GPU drains"
        ),
        "{}",
        x.title
    );
    assert!(
        x.hint.contains("all queued GPU work (cudaDeviceSynchronize) and the work queued before a recorded event (cudaEventSynchronize)"),
        "{}",
        x.hint
    );
    // The event wait is read as a timer: the advice is to read it later;
    // the device synchronize gets its own sentence.
    assert!(
        x.hint.contains("reads `cudaEventElapsedTime`: timing code"),
        "{}",
        x.hint
    );
    assert!(
        x.hint
            .contains("The other synchronization (cudaDeviceSynchronize): remove it"),
        "{}",
        x.hint
    );
    assert!(!x.hint.contains("DistributedDataParallel"), "{}", x.hint);
}

#[test]
fn d6_event_timers_inside_ddp_forward_are_ddps_own() {
    // The same waits inside `DistributedDataParallel.forward`: DDP's
    // runtime statistics of its first iterations, not the program's.
    let mut t = Sketch::in_units(US);
    t.op(0, 200, "ProfilerStep#1").call(0, 2, "cudaLaunchKernel", 1);
    t.op_as(
        5,
        80,
        "DistributedDataParallel.forward",
        CpuOpKind::UserAnnotation,
    )
    .call(5, 60, "cudaEventSynchronize", 0)
    .call(62, 63, "cudaEventElapsedTime", 0)
    .call(70, 72, "cudaLaunchKernel", 2);
    t.kernel(7, 0, 50, 1).kernel(7, 75, 90, 2);
    let f = t.findings();
    let x = find(&f, "explicit_sync").expect("D6");
    assert!(x.title.contains("calls cudaEventSynchronize once"), "{}", x.title);
    assert!(x.hint.contains("DDP's own runtime statistics"), "{}", x.hint);
    assert!(
        x.hint.contains("_set_ddp_runtime_logging_sample_rate"),
        "{}",
        x.hint
    );
    assert!(!x.hint.contains("The other"), "{}", x.hint);
}

#[test]
fn d6_near_miss_launch_before_elapsed_read() {
    // A launch comes between the wait and the read: not (only) a timer.
    let f = event_timing("cudaLaunchKernel");
    let x = find(&f, "explicit_sync").expect("D6");
    assert!(!x.hint.contains("cudaEventElapsedTime"), "{}", x.hint);
    assert!(x.hint.contains("wait_event"), "{}", x.hint);
}

/// D7 and D9: `torch.tensor(x, device="cuda")`-style copy of `bytes` from
/// pageable memory, then a stream sync; the GPU drains meanwhile.
///
/// ```text
/// µs          0          30 31        S   62 64 66      80
/// stream 7    [k1..........][HtoD]            [k2.......]
/// thread 1    [L1] [aten::to.................]
///                   [MemcpyAsync][StreamSync.S]
///                                     [L2]
/// ```
fn host_copy(bytes: u64, sync: bool) -> Vec<Finding> {
    let mut t = Sketch::in_units(US);
    t.op(0, 100, "ProfilerStep#1").call(0, 2, "cudaLaunchKernel", 1);
    t.op(10, 60, "aten::to").call(11, 13, "cudaMemcpyAsync", 2);
    if sync {
        t.call(14, 60, "cudaStreamSynchronize", 0);
    }
    t.call(62, 64, "cudaLaunchKernel", 3);
    t.kernel(7, 0, 30, 1)
        .copy(7, 30, 31, 2, CopyKind::HtoD)
        .memory(MemKind::Pageable, MemKind::Device, bytes)
        .kernel(7, 66, 80, 3);
    t.findings()
}

#[test]
fn d7_scalar_host_to_device_copy() {
    let f = host_copy(8, true);
    let x = find(&f, "scalar_host_to_device_copy").expect("D7");
    assert_eq!((x.detector.as_str(), x.idle_ns), ("D7", 29 * US));
    assert!(x.hint.contains("math.sqrt"));
    assert!(find(&f, "synchronous_copy").is_none());
}

/// D7 without a sync: an 8-byte copy from pinned memory issued while the
/// GPU is idle (the B200 vLLM trace's attention metadata). The host never
/// waits for the GPU, and the hint does not say it does.
///
/// ```text
/// µs          0    10 12 14           28 29 30 31 33 35      45
/// stream 7    [k1....]                   [HtoD]       [k2......]
/// thread 1    [L1]     [aten::copy_.........]
///                         [MemcpyAsync...]       [L2]
/// ```
#[test]
fn d7_an_asynchronous_tiny_copy_does_not_wait() {
    let mut t = Sketch::in_units(US);
    t.op(0, 100, "ProfilerStep#1").call(0, 2, "cudaLaunchKernel", 1);
    t.op(12, 30, "aten::copy_").call(14, 28, "cudaMemcpyAsync", 2);
    t.call(31, 33, "cudaLaunchKernel", 3);
    t.kernel(7, 0, 10, 1)
        .copy(7, 29, 30, 2, CopyKind::HtoD)
        .memory(MemKind::Pinned, MemKind::Device, 8)
        .kernel(7, 35, 45, 3);
    let f = t.findings();
    let x = find(&f, "scalar_host_to_device_copy").expect("D7");
    assert!(x.title.contains("copies an 8-byte value"), "{}", x.title);
    assert!(x.hint.contains("do not wait for the GPU"), "{}", x.hint);
    assert!(!x.hint.contains("waits for the GPU every call"), "{}", x.hint);
    // With the sync, the copy does wait.
    let f = host_copy(8, true);
    let x = find(&f, "scalar_host_to_device_copy").expect("D7");
    assert!(x.hint.contains("waits for the GPU every call"), "{}", x.hint);
}

#[test]
fn d7_near_miss_a_real_tensor_is_d9() {
    let f = host_copy(4096, true);
    assert!(find(&f, "scalar_host_to_device_copy").is_none());
    let x = find(&f, "synchronous_copy").expect("D9");
    assert_eq!((x.detector.as_str(), x.idle_ns), ("D9", 29 * US));
    assert!(x.hint.contains("non_blocking=True"));
}

#[test]
fn d9_near_miss_without_sync() {
    let f = host_copy(4096, false);
    assert!(find(&f, "synchronous_copy").is_none());
}

/// D9, a blocking `.to()` of 19 MB from pageable memory: the copy call is
/// staged for 2 ms, and the sync starts 1 µs after it returns (ResNet-50's
/// input batch in the tb-plugin trace). The pair is measured from the copy
/// call's end, not its start.
///
/// ```text
/// µs          0    30  40     1990     2041 2042  2050  2060 62 64 66   2080
/// stream 7    [k1...]                 [HtoD 19 MB....]              [k2...]
/// thread 1    [L1] [aten::to.......................................]
///                   [MemcpyAsync.............][StreamSync......]
///                                                        [L2]
/// ```
fn long_blocking_copy() -> Vec<Finding> {
    let mut t = Sketch::in_units(US);
    t.op(0, 2100, "ProfilerStep#1").call(0, 2, "cudaLaunchKernel", 1);
    t.op(40, 2060, "aten::to").op(40, 2060, "aten::copy_");
    t.call(40, 2041, "cudaMemcpyAsync", 2)
        .call(2042, 2060, "cudaStreamSynchronize", 0);
    t.call(2062, 2064, "cudaLaunchKernel", 3);
    t.kernel(7, 0, 30, 1)
        .copy(7, 1990, 2050, 2, CopyKind::HtoD)
        .memory(MemKind::Pageable, MemKind::Device, 19_000_000)
        .kernel(7, 2066, 2080, 3);
    t.findings()
}

#[test]
fn d9_blocking_copy_whose_call_outlasts_the_pair_window() {
    let f = long_blocking_copy();
    assert!(find(&f, "explicit_sync").is_none(), "{f:?}");
    let x = find(&f, "synchronous_copy").expect("D9");
    // The sync's wait, from the copy's end (2050) to its return (2060).
    assert_eq!((x.idle_ns, x.occurrences), (10 * US, 1));
    assert_eq!(x.operator.as_deref(), Some("aten::to"));
}

/// D8: a 4 MB copy from (`src`) host memory is staged inside its call while
/// the GPU waits.
///
/// ```text
/// µs          0     10                 40    45   50
/// stream 7    [k1....]                 [HtoD.][k2..]
/// thread 1    [L1]   [cudaMemcpyAsync.....][L2]
/// ```
fn big_copy(src: MemKind) -> Vec<Finding> {
    let mut t = Sketch::in_units(US);
    t.op(0, 60, "ProfilerStep#1").call(0, 2, "cudaLaunchKernel", 1);
    t.op(10, 42, "aten::copy_").call(10, 40, "cudaMemcpyAsync", 2);
    t.call(41, 42, "cudaLaunchKernel", 3);
    t.kernel(7, 0, 10, 1)
        .copy(7, 40, 45, 2, CopyKind::HtoD)
        .memory(src, MemKind::Device, 4 << 20)
        .kernel(7, 45, 50, 3);
    t.findings()
}

#[test]
fn d8_pageable_copies() {
    let f = big_copy(MemKind::Pageable);
    let x = find(&f, "pageable_copies").expect("D8");
    assert_eq!(
        (x.detector.as_str(), x.occurrences, x.idle_ns),
        ("D8", 1, 30 * US)
    );
    assert!(x.hint.contains("pin_memory=True"));
}

#[test]
fn d8_near_miss_pinned() {
    assert!(find(&big_copy(MemKind::Pinned), "pageable_copies").is_none());
}

/// Where a pageable copy comes from, for D8's advice.
#[derive(Clone, Copy)]
enum CopyFrom {
    /// `for x in loader: x.to(dev)`: the copy right after `__next__`.
    AfterDataLoader,
    /// A DataLoader range, then another operator, then the copy: the copy
    /// is not the batch.
    AfterOtherWork,
    /// The copy inside a TorchRec-style range, no DataLoader at all.
    Range,
}

const KJT_WAIT: &str = "## KJTAllToAllTensorsAwaitable wait() ##";

/// D8: [`big_copy`]'s pageable 4 MB copy, with a DataLoader range or an
/// annotation before or around it.
///
/// ```text
/// µs          0  2  3   5  6  8 10                 40    45   50
/// stream 7    [k1....................]             [HtoD.][k2..]
/// thread 1    [L1]  [DataLoader#__next__]
///                         (AfterOtherWork: [aten::mul])
///                               [aten::to [cudaMemcpyAsync....]][L2]
/// ```
fn pageable_copy_from(from: CopyFrom) -> Vec<Finding> {
    let mut t = Sketch::in_units(US);
    t.op(0, 60, "ProfilerStep#1").call(0, 2, "cudaLaunchKernel", 1);
    match from {
        CopyFrom::AfterDataLoader | CopyFrom::AfterOtherWork => {
            t.op(
                3,
                5,
                "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__",
            );
        }
        CopyFrom::Range => {
            t.op(9, 43, KJT_WAIT);
        }
    }
    if let CopyFrom::AfterOtherWork = from {
        t.op(6, 8, "aten::mul");
    }
    t.op(10, 42, "aten::to").call(10, 40, "cudaMemcpyAsync", 2);
    t.call(42, 43, "cudaLaunchKernel", 3);
    t.kernel(7, 0, 10, 1)
        .copy(7, 40, 45, 2, CopyKind::HtoD)
        .memory(MemKind::Pageable, MemKind::Device, 4 << 20)
        .kernel(7, 45, 50, 3);
    t.findings()
}

#[test]
fn d8_copy_of_the_batch_gets_dataloader_advice() {
    let f = pageable_copy_from(CopyFrom::AfterDataLoader);
    let x = find(&f, "pageable_copies").expect("D8");
    assert!(x.hint.contains("Use `DataLoader(pin_memory=True)`"), "{}", x.hint);
    assert!(!x.hint.contains("not the DataLoader's batch"), "{}", x.hint);
}

#[test]
fn d8_copy_outside_the_batch_gets_advice_for_its_own_tensor() {
    for from in [CopyFrom::AfterOtherWork, CopyFrom::Range] {
        let f = pageable_copy_from(from);
        let x = find(&f, "pageable_copies").expect("D8");
        assert!(
            !x.hint.contains("Use `DataLoader(pin_memory=True)`"),
            "{}",
            x.hint
        );
        assert!(
            x.hint.contains("They are not the DataLoader's batch"),
            "{}",
            x.hint
        );
        assert!(x.hint.contains("`tensor.pin_memory()`"), "{}", x.hint);
        assert!(x.hint.contains("keep the data on the device"), "{}", x.hint);
    }
    // The range that issued them is named.
    let f = pageable_copy_from(CopyFrom::Range);
    let x = find(&f, "pageable_copies").expect("D8");
    assert!(
        x.hint
            .starts_with(&format!("`aten::to` (in `{KJT_WAIT}`) copies")),
        "{}",
        x.hint
    );
}

/// D8: the batch's copy right after `__next__`, then a copy of another
/// tensor under a range after the model ran: advice for each.
///
/// ```text
/// µs          0  2 3  5 6             40  45  50  60 61            95  100 105
/// stream 7    [k1.............]        [HtoD][k2..]                    [HtoD][k3]
/// thread 1    [L1][__next__][aten::to [memcpy]][L2][aten::mul] [range [aten::to [memcpy]]][L3]
/// ```
fn batch_and_other_copies() -> Vec<Finding> {
    let mut t = Sketch::in_units(US);
    t.op(0, 120, "ProfilerStep#1").call(0, 2, "cudaLaunchKernel", 1);
    t.op(
        3,
        5,
        "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__",
    );
    t.op(6, 42, "aten::to").call(6, 40, "cudaMemcpyAsync", 2);
    t.call(42, 43, "cudaLaunchKernel", 3);
    t.op(50, 55, "aten::mul");
    t.op(60, 97, KJT_WAIT);
    t.op(61, 96, "aten::to").call(61, 95, "cudaMemcpyAsync", 4);
    t.call(97, 98, "cudaLaunchKernel", 5);
    t.kernel(7, 0, 10, 1)
        .copy(7, 40, 45, 2, CopyKind::HtoD)
        .memory(MemKind::Pageable, MemKind::Device, 4 << 20)
        .kernel(7, 45, 50, 3)
        .copy(7, 95, 100, 4, CopyKind::HtoD)
        .memory(MemKind::Pageable, MemKind::Device, 1 << 20)
        .kernel(7, 100, 105, 5);
    t.findings()
}

#[test]
fn d8_batch_and_other_copies_get_advice_each() {
    let f = batch_and_other_copies();
    let x = find(&f, "pageable_copies").expect("D8");
    assert_eq!(x.occurrences, 2);
    assert!(
        x.hint.contains(
            "1 of the 2 copies move the batch the DataLoader returned: Use `DataLoader(pin_memory=True)`"
        ),
        "{}",
        x.hint
    );
    assert!(
        x.hint.contains(&format!(
            "The other 1 (the largest from `aten::to` (in `{KJT_WAIT}`)): they are not the DataLoader's batch"
        )),
        "{}",
        x.hint
    );
}

/// D10: a 2 MB buffer goes to the CPU and back `trips` times in one step,
/// 20 µs per copy, with a kernel between; the hook waits for each DtoH
/// (`.to("cpu")` is blocking).
///
/// ```text
/// µs        0 1     21   31     51 52       70 71 ...
/// stream 7    [HtoD..][k..][DtoH..]           [HtoD..][k..][DtoH..]
/// thread 1  [L][L][L][StreamSync...]          [L][L][L][StreamSync...]
/// ```
fn ping_pong(trips: i64) -> Vec<Finding> {
    let mut t = Sketch::in_units(US);
    let end = 70 * trips + 10;
    t.op(0, end, "ProfilerStep#1").op(0, end, "offload_hook");
    for i in 0..trips {
        let a = 70 * i;
        let c = 10 * i as u64;
        t.call(a, a + 1, "cudaMemcpyAsync", c + 1)
            .call(a + 2, a + 3, "cudaLaunchKernel", c + 2)
            .call(a + 4, a + 5, "cudaMemcpyAsync", c + 3)
            .call(a + 6, a + 52, "cudaStreamSynchronize", 0);
        t.copy(7, a + 1, a + 21, c + 1, CopyKind::HtoD)
            .memory(MemKind::Pinned, MemKind::Device, 2 << 20)
            .kernel(7, a + 21, a + 31, c + 2)
            .copy(7, a + 31, a + 51, c + 3, CopyKind::DtoH)
            .memory(MemKind::Device, MemKind::Pinned, 2 << 20);
    }
    t.findings()
}

#[test]
fn d10_offload_ping_pong() {
    let f = ping_pong(2);
    let x = find(&f, "offload_ping_pong").expect("D10");
    assert_eq!((x.detector.as_str(), x.occurrences), ("D10", 2));
    // The copies' busy time is what keeping the buffer resident removes.
    assert_eq!(x.explained_ns - x.idle_ns, 4 * 20 * US);
    assert!(x.est_savings_ns > 0);
    assert_eq!(x.annotation.as_deref(), Some("offload_hook"));
}

#[test]
fn d10_near_miss_one_round_trip() {
    assert!(find(&ping_pong(1), "offload_ping_pong").is_none());
}

/// D11: the training thread loads the batch while the GPU waits.
///
/// ```text
/// µs          0    10              10+d   +5      100
/// stream 7    [k1..]                         [k2....]
/// thread 1    [L1]  [DataLoader#__next__.][L2]
/// ```
fn dataloader(d: Ns) -> Vec<Finding> {
    dataloader_sketch(d, &[]).findings()
}

/// [`dataloader`] with operators `inside` the DataLoader range, one µs
/// each from its start.
fn dataloader_running(d: Ns, inside: &[&str]) -> Vec<Finding> {
    dataloader_sketch(d, inside).findings()
}

/// The timeline of [`dataloader_running`], to draw more on.
fn dataloader_sketch(d: Ns, inside: &[&str]) -> Sketch {
    let mut t = Sketch::in_units(US);
    t.op(0, 100, "ProfilerStep#1").call(0, 2, "cudaLaunchKernel", 1);
    t.op(
        10,
        10 + d,
        "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__",
    );
    for (i, name) in (0..).zip(inside) {
        t.op(11 + i, 12 + i, name);
    }
    t.call(10 + d, 12 + d, "cudaLaunchKernel", 2);
    t.kernel(7, 0, 10, 1).kernel(7, 15 + d, 100, 2);
    t
}

#[test]
fn d11_dataloader_stall() {
    let f = dataloader(50);
    let x = &f[0];
    assert_eq!((x.detector.as_str(), x.id.as_str()), ("D11", "dataloader_stall"));
    assert_eq!(x.idle_ns, 50 * US);
    assert_eq!(x.est_savings_ns, 50 * US);
    assert!(x.hint.contains("num_workers"));
}

/// A loader that pins its batches itself (the DLRM ranks' `__next__` runs
/// `aten::pin_memory`) is not told to set `pin_memory=True`.
#[test]
fn d11_a_loader_that_pins_is_not_told_to_pin() {
    let f = dataloader_running(50, &["aten::pin_memory"]);
    let x = find(&f, "dataloader_stall").expect("D11");
    assert!(x.hint.contains("num_workers"), "{}", x.hint);
    assert!(!x.hint.contains("`pin_memory=True` and"), "{}", x.hint);
    assert!(
        x.hint
            .contains("the loader already pins its batches: `aten::pin_memory` runs inside `__next__`"),
        "{}",
        x.hint
    );
    let f = dataloader_running(50, &["aten::mul"]);
    let x = find(&f, "dataloader_stall").expect("D11");
    assert!(
        x.hint.contains("`pin_memory=True` and `persistent_workers=True`"),
        "{}",
        x.hint
    );
    assert!(!x.hint.contains("already pins"), "{}", x.hint);
}

#[test]
fn d11_near_miss_under_five_percent() {
    assert!(find(&dataloader(3), "dataloader_stall").is_none());
}

/// D12: kernels with `blocks` blocks on an 80-SM GPU, 40 µs of them in a
/// 50 µs step.
fn grids(blocks: u32) -> Vec<Finding> {
    grids_in_step(blocks, 50)
}

/// [`grids`] in a step of `step_us`.
fn grids_in_step(blocks: u32, step_us: Ns) -> Vec<Finding> {
    let mut t = Sketch::in_units(US);
    t.device("GPU", 80).op(0, step_us, "ProfilerStep#1");
    t.call(0, 1, "cudaLaunchKernel", 1)
        .call(2, 3, "cudaLaunchKernel", 2);
    t.named_kernel("small_grid_kernel", 7, 5, 20, 1)
        .grid([blocks, 1, 1])
        .named_kernel("small_grid_kernel", 7, 20, 45, 2)
        .grid([blocks, 1, 1]);
    t.findings()
}

#[test]
fn d12_underfilled_kernels() {
    let f = grids(8);
    let x = find(&f, "underfilled_kernels").expect("D12");
    assert!(!x.primary);
    assert_eq!((x.occurrences, x.idle_ns, x.est_savings_ns), (2, 0, 0));
    assert!(x.hint.contains("80 SMs"));
}

#[test]
fn d12_near_miss_full_grid() {
    assert!(find(&grids(160), "underfilled_kernels").is_none());
}

/// Near miss: the same kernels in a 5 ms step leave 36 µs of SM time
/// unused, under 1 % of it (50 µs): the GPU's idle time, not its shape,
/// is what the step is made of.
#[test]
fn d12_near_miss_kernels_a_sliver_of_the_window() {
    assert!(find(&grids_in_step(8, 5000), "underfilled_kernels").is_none());
    assert!(find(&grids_in_step(8, 3000), "underfilled_kernels").is_some());
}

/// How stream 9 learns to wait for stream 7 in [`stream_wait`].
#[derive(Clone, Copy, PartialEq)]
enum WaitBy {
    /// `cudaStreamWaitEvent` and its Kineto `Stream Wait Event` record.
    Record,
    /// The runtime call alone (no `cuda_sync` records in the trace).
    Call,
    /// A host-side `cudaEventSynchronize` with its `Event Sync` record:
    /// the host waits, not a stream.
    HostEventSync,
}

/// D13: stream 9 waits on an event recorded after the producer on stream
/// 7; its consumer was launched at 14 and starts when the producer ends at
/// `p` (plus `slack`).
///
/// ```text
/// µs          0 1 2       10 11 12 13 14 15     p  p+slack   +10
/// stream 7      [producer...............................]
/// stream 9        [k1.....]                        [consumer.....]
/// thread 1    [L][L]   [record][wait][L consumer]
///                                        ^ ready 15
/// ```
fn stream_wait(producer: &str, p: Ns, slack: Ns, by: WaitBy, consumer_launch: Ns) -> Vec<Finding> {
    stream_wait_sketch(producer, p, slack, by, consumer_launch).findings()
}

/// The timeline of [`stream_wait`], to draw more on.
fn stream_wait_sketch(producer: &str, p: Ns, slack: Ns, by: WaitBy, consumer_launch: Ns) -> Sketch {
    let mut t = Sketch::in_units(US);
    let c = p + slack;
    t.op(0, c + 20, "ProfilerStep#1");
    t.call(0, 1, "cudaLaunchKernel", 1)
        .call(1, 2, "cudaLaunchKernel", 2)
        .call(11, 12, "cudaEventRecord", 40);
    match by {
        WaitBy::Record => {
            t.call(12, 13, "cudaStreamWaitEvent", 41)
                .sync_record("Stream Wait Event", 9, 12, 13, 41);
        }
        WaitBy::Call => {
            t.call(12, 13, "cudaStreamWaitEvent", 41);
        }
        WaitBy::HostEventSync => {
            t.call(12, 13, "cudaEventSynchronize", 41)
                .sync_record("Event Sync", -1, 12, 13, 41);
        }
    }
    let l = consumer_launch;
    t.call(l, l + 1, "cudaLaunchKernel", 3);
    t.named_kernel(producer, 7, 2, p, 1)
        .kernel(9, 2, 10, 2)
        .kernel(9, c.max(l + 2), c.max(l + 2) + 10, 3);
    t
}

const GEMM: &str = "ampere_sgemm_128x64_nn";
const ALL_REDUCE: &str = "ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)";

#[test]
fn d13_cross_stream_wait_from_its_sync_record() {
    let f = stream_wait(GEMM, 100, 0, WaitBy::Record, 14);
    let x = find(&f, "cross_stream_wait").expect("D13");
    assert!(!x.primary);
    // Stream 9 is ready at 15 (its launch returned) and waits until the
    // producer ends at 100; stream 7 is busy all along, so the device is
    // never idle.
    assert_eq!(
        (x.occurrences, x.explained_ns, x.idle_ns, x.est_savings_ns),
        (1, 85 * US, 0, 0)
    );
    assert!(
        x.title.contains("Stream 9") && x.title.contains("stream 7"),
        "{}",
        x.title
    );
    assert!(x.hint.contains(GEMM), "{}", x.hint);
    let wait = x.evidence.iter().find(|e| e.kind == "stream_wait").unwrap();
    assert_eq!((wait.start_ns, wait.end_ns), (15 * US, 100 * US));
    assert!(wait.row.is_some(), "points at the sync record");
}

#[test]
fn d13_cross_stream_wait_from_the_runtime_call_alone() {
    let f = stream_wait(GEMM, 100, 3, WaitBy::Call, 14);
    let x = find(&f, "cross_stream_wait").expect("D13");
    // The consumer starts 3 µs after the producer (within the slack).
    assert_eq!((x.occurrences, x.explained_ns), (1, 88 * US));
    let wait = x.evidence.iter().find(|e| e.kind == "stream_wait").unwrap();
    assert_eq!(wait.row, None, "no sync record to point at");
}

#[test]
fn d13_compute_waiting_for_nccl_is_exposed_communication() {
    let f = stream_wait(ALL_REDUCE, 100, 0, WaitBy::Record, 14);
    assert!(find(&f, "cross_stream_wait").is_none());
    let x = find(&f, "communication_wait").expect("D13");
    assert_eq!((x.detector.as_str(), x.explained_ns), ("D13", 85 * US));
    assert!(
        x.hint.contains("no_sync()") && x.hint.contains("ncclKernel_AllReduce"),
        "{}",
        x.hint
    );
}

#[test]
fn d13_near_miss_short_wait() {
    assert!(find(&stream_wait(GEMM, 18, 0, WaitBy::Record, 14), "cross_stream_wait").is_none());
}

#[test]
fn d13_near_miss_consumer_launched_after_the_producer_ended() {
    // The CPU launches the consumer at 110, after the producer ended at
    // 100: the stream waited for the host, not for stream 7.
    let f = stream_wait(GEMM, 100, 0, WaitBy::Record, 110);
    assert!(find(&f, "cross_stream_wait").is_none());
}

#[test]
fn d13_near_miss_nothing_ends_when_the_consumer_starts() {
    // The consumer starts 60 µs after the producer ended: whatever held it,
    // it was not that producer.
    let f = stream_wait(GEMM, 100, 60, WaitBy::Call, 14);
    assert!(find(&f, "cross_stream_wait").is_none());
}

/// D13 with a row queued on stream 7 after the wait: `aten::addmm`'s GEMM
/// was launched before the wait call and ends at 100; `aten::mul`'s kernel
/// was launched at 20, after the wait, and runs behind it until 110. The
/// consumer starts at `c`. The event stream 9 waits on was recorded before
/// the wait call, so it cannot be behind the late kernel, however close
/// its end is to the consumer's start (trace_diff's NCCL waits named a
/// memset launched 0.5 ms after the wait).
///
/// ```text
/// µs          0 1 2       11 12 13 14 15 20 21      100   110   c
/// stream 7      [GEMM (addmm)..........................][late]
/// stream 9        [k1.....]                                     [consumer]
/// thread 1    [L]  [L]  [record][wait][L consumer][L late]
/// ```
fn wait_with_a_later_launch(c: Ns) -> Vec<Finding> {
    let mut t = Sketch::in_units(US);
    t.op(0, c + 20, "ProfilerStep#1");
    t.op(0, 1, "aten::addmm").call(0, 1, "cudaLaunchKernel", 1);
    t.call(1, 2, "cudaLaunchKernel", 2)
        .call(11, 12, "cudaEventRecord", 40)
        .call(12, 13, "cudaStreamWaitEvent", 41)
        .call(14, 15, "cudaLaunchKernel", 3);
    t.op(20, 21, "aten::mul").call(20, 21, "cudaLaunchKernel", 4);
    t.named_kernel(GEMM, 7, 2, 100, 1)
        .kernel(9, 2, 10, 2)
        .named_kernel("late_mul_kernel", 7, 100, 110, 4)
        .kernel(9, c, c + 10, 3);
    t.findings()
}

#[test]
fn d13_producer_was_launched_before_the_wait() {
    // The consumer starts 2 µs after the late kernel, 12 µs after the GEMM:
    // both within the slack; the GEMM is the producer.
    let f = wait_with_a_later_launch(112);
    let x = find(&f, "cross_stream_wait").expect("D13");
    assert!(x.hint.contains(GEMM), "{}", x.hint);
    assert!(!x.hint.contains("late_mul_kernel"), "{}", x.hint);
    assert_eq!(x.operator.as_deref(), Some("aten::addmm"));
    assert_eq!(x.explained_ns, 97 * US);
}

#[test]
fn d13_near_miss_only_work_queued_after_the_wait_ends_in_time() {
    // The consumer starts 15 µs after the late kernel but 25 µs after the
    // GEMM: nothing it can wait on ended within the slack.
    let f = wait_with_a_later_launch(125);
    assert!(f.iter().all(|x| x.detector != "D13"), "{f:?}");
}

/// D13 over two waiting streams: stream 9 waits twice on a GEMM of stream
/// 7 (launched by `aten::addmm`, 56 and 55 µs), stream 11 once on a copy of
/// stream 8 (launched by `aten::to`, 80 µs). The finding names its
/// heaviest (waiting stream, producer) pair, stream 9 on the GEMM, so the
/// operator it names must be the GEMM's, though the copy is the single
/// producer waited on longest.
///
/// ```text
/// µs          0  5           65  70      95 100    125 130
/// stream 7       [GEMM........][GEMM...............]
/// stream 9                     [c1]                [c2]
/// stream 8       [copy (to)..............]
/// stream 11                              [c3]
/// thread 1    [L][L][copy] [wait][L c1][wait][L c2][wait][L c3]
/// ```
fn waits_of_two_streams() -> Vec<Finding> {
    let mut t = Sketch::in_units(US);
    t.op(0, 300, "ProfilerStep#1");
    t.op(0, 5, "aten::addmm")
        .call(0, 1, "cudaLaunchKernel", 1)
        .call(1, 2, "cudaLaunchKernel", 2);
    t.op(5, 6, "aten::to").call(5, 6, "cudaMemcpyAsync", 3);
    // Stream 9: wait, consumer; twice.
    t.call(7, 8, "cudaStreamWaitEvent", 40)
        .call(8, 9, "cudaLaunchKernel", 4)
        .call(10, 11, "cudaStreamWaitEvent", 41)
        .call(11, 12, "cudaLaunchKernel", 5);
    // Stream 11: wait, consumer.
    t.call(13, 14, "cudaStreamWaitEvent", 42)
        .call(14, 15, "cudaLaunchKernel", 6);
    t.named_kernel(GEMM, 7, 5, 65, 1)
        .named_kernel(GEMM, 7, 65, 125, 2)
        .kernel(9, 65, 70, 4)
        .kernel(9, 125, 130, 5)
        .copy(8, 5, 95, 3, CopyKind::HtoD)
        .memory(MemKind::Pinned, MemKind::Device, 1 << 20)
        .kernel(11, 95, 100, 6);
    t.findings()
}

/// The title counts the waits of the pair it names (stream 9 on stream 7:
/// 56 + 55 µs), and says apart that stream 11 waited once more (80 µs on
/// the copy); the hint's total is the named producer's.
#[test]
fn d13_title_counts_the_pair_it_names() {
    let f = waits_of_two_streams();
    let x = find(&f, "cross_stream_wait").expect("D13");
    assert_eq!(x.occurrences, 3);
    assert_eq!(
        x.title,
        "Stream 9 waits 2 times on work of stream 7 (111.0 µs in total; 1 more wait between \
         other streams, 80.0 µs)"
    );
    assert!(
        x.hint.contains("(launched by `aten::addmm`), 111.0 µs in total"),
        "{}",
        x.hint
    );
}

#[test]
fn d13_names_the_operator_of_the_producer_it_names() {
    let f = waits_of_two_streams();
    let x = find(&f, "cross_stream_wait").expect("D13");
    assert!(x.hint.contains(GEMM), "{}", x.hint);
    assert_eq!(x.operator.as_deref(), Some("aten::addmm"), "{}", x.hint);
    assert!(x.hint.contains("(launched by `aten::addmm`)"), "{}", x.hint);
}

#[test]
fn d13_near_miss_host_event_sync_is_not_a_stream_wait() {
    let f = stream_wait(GEMM, 100, 0, WaitBy::HostEventSync, 14);
    assert!(f.iter().all(|x| x.detector != "D13"), "{f:?}");
}

/// D14: `cudaMalloc` (or `api`) runs inside `aten::empty` while the GPU
/// waits.
///
/// ```text
/// µs          0    10               10+m  +2  +5     80
/// stream 7    [k1..]                           [k2....]
/// thread 1    [L1]  [aten::empty............]
///                   [cudaMalloc......]  [L2]
/// ```
fn malloc(api: &str, m: Ns) -> Vec<Finding> {
    let mut t = Sketch::in_units(US);
    t.op(0, 80, "ProfilerStep#1").call(0, 2, "cudaLaunchKernel", 1);
    t.op(10, 12 + m, "aten::empty").call(10, 10 + m, api, 0);
    t.call(10 + m, 12 + m, "cudaLaunchKernel", 2);
    t.kernel(7, 0, 10, 1).kernel(7, 15 + m, 80, 2);
    t.findings()
}

#[test]
fn d14_allocator_in_step() {
    let f = malloc("cudaMalloc", 30);
    let x = find(&f, "allocator_calls_in_step").expect("D14");
    assert_eq!(
        (x.detector.as_str(), x.idle_ns, x.occurrences),
        ("D14", 30 * US, 1)
    );
    assert_eq!(x.operator.as_deref(), Some("aten::empty"));
    // A warm allocator does not call the driver: the 30 µs go.
    assert_eq!(x.est_savings_ns, 30 * US);
    assert!(x.hint.contains("warm-up step"), "{}", x.hint);
}

#[test]
fn d14_allocator_frees_point_at_empty_cache_and_fragmentation() {
    let f = malloc("cudaFree", 30);
    let x = find(&f, "allocator_calls_in_step").expect("D14");
    assert!(x.hint.contains("empty_cache()"), "{}", x.hint);
    assert!(x.hint.contains("expandable_segments:True"), "{}", x.hint);
}

#[test]
fn d14_near_miss_quick_malloc() {
    assert!(find(&malloc("cudaMalloc", 3), "allocator_calls_in_step").is_none());
}

/// D14: ten launches of `usual` µs, each followed by a 2 µs kernel, then
/// `aten::add` whose launch takes `slow` µs while the GPU waits.
///
/// ```text
/// µs          0   u+1 u+3  u+5 ...      t-2 t            t+slow  +2  +10
/// stream 7        [k]       [k]   ×10    ]                         [k.....]
/// thread 1    [L u][ ][L u]      ...        [aten::add..................]
///                                           [cudaLaunchKernel slow]
/// idle                                   [fw][slow_runtime_calls..][lo]
/// ```
fn launches(usual: Ns, slow: Ns) -> Vec<Finding> {
    launches_sketch(usual, slow).findings()
}

/// The timeline of [`launches`], to draw more on; the slow call is at
/// 10 × (`usual` + 5) µs.
fn launches_sketch(usual: Ns, slow: Ns) -> Sketch {
    let mut t = Sketch::in_units(US);
    let mut at = 0;
    for i in 0..10 {
        t.call(at, at + usual, "cudaLaunchKernel", 1 + i)
            .kernel(7, at + usual + 1, at + usual + 3, 1 + i);
        at += usual + 5;
    }
    t.op(at, at + slow + 3, "aten::add")
        .call(at, at + slow, "cudaLaunchKernel", 100)
        .kernel(7, at + slow + 2, at + slow + 10, 100);
    t.op(0, at + slow + 10, "ProfilerStep#1");
    t
}

#[test]
fn d14_slow_launch_is_an_outlier_for_its_api() {
    let f = launches(5, 200);
    let x = find(&f, "slow_runtime_calls").expect("D14");
    assert_eq!(
        (x.detector.as_str(), x.occurrences, x.idle_ns),
        ("D14", 1, 200 * US)
    );
    assert_eq!(x.operator.as_deref(), Some("aten::add"));
    // The fix brings the call back to the usual 5 µs: the kernel launched
    // by it starts 195 µs earlier, and so does everything after.
    assert_eq!(x.est_savings_ns, 195 * US);
    assert!(x.title.contains("usually 5.0 µs"), "{}", x.title);
    assert!(x.hint.contains("OMP_NUM_THREADS"), "{}", x.hint);
    assert!(!x.hint.contains("cudaStreamSynchronize"));
}

/// D14: the slow launch of [`launches`] is the first of its kernel,
/// `add_kernel`, which a usual 5 µs launch runs again at 320; the trace
/// records no module loading (ROCm's traces never do).
///
/// ```text
/// µs          100                   300 302  310   320 325 326 328
/// stream 7                              [add_kernel]        [add_kernel]
/// thread 1    [cudaLaunchKernel.........]            [L 5 µs]
/// ```
fn first_launch_sketch() -> Sketch {
    let mut t = Sketch::in_units(US);
    let mut at = 0;
    for i in 0..10 {
        t.call(at, at + 5, "cudaLaunchKernel", 1 + i)
            .kernel(7, at + 6, at + 8, 1 + i);
        at += 10;
    }
    t.op(at, at + 203, "aten::add")
        .call(at, at + 200, "cudaLaunchKernel", 100)
        .named_kernel("add_kernel", 7, at + 202, at + 210, 100);
    t.call(320, 325, "cudaLaunchKernel", 101)
        .named_kernel("add_kernel", 7, 326, 328, 101);
    t.op(0, 330, "ProfilerStep#1");
    t
}

#[test]
fn d14_a_kernels_first_launch_says_so() {
    let f = first_launch_sketch().findings();
    let x = find(&f, "slow_runtime_calls").expect("D14");
    assert!(
        x.hint.contains(
            "The longest call is the first launch of `add_kernel` in the trace (its one later launch takes 5.0 µs)"
        ),
        "{}",
        x.hint
    );
    assert!(x.hint.contains("CUDA_MODULE_LOADING=EAGER"), "{}", x.hint);
    assert!(!x.hint.contains("normally 5–20 µs"), "{}", x.hint);
    // Kernels launched before it (every kernel of `launches` is `kernel`).
    let f = launches(5, 200);
    let x = find(&f, "slow_runtime_calls").expect("D14");
    assert!(!x.hint.contains("first launch of"), "{}", x.hint);
}

#[test]
fn d14_near_miss_first_launch_where_loading_is_recorded() {
    // The trace records module loading, and not inside this call: the
    // first launch is no reason for its length.
    let mut t = first_launch_sketch();
    t.marker(MarkerKind::ProfilerOverhead, 2, 3, "Lazy Function Loading");
    let f = t.findings();
    let x = find(&f, "slow_runtime_calls").expect("D14");
    assert!(!x.hint.contains("first launch of"), "{}", x.hint);
    // A later launch as slow: not the first launch's cost.
    let mut t = first_launch_sketch();
    t.call(340, 540, "cudaLaunchKernel", 102)
        .named_kernel("add_kernel", 7, 541, 543, 102);
    let f = t.findings();
    let x = find(&f, "slow_runtime_calls").expect("D14");
    assert!(!x.hint.contains("first launch of"), "{}", x.hint);
}

#[test]
fn d14_near_miss_always_slow_is_a_cost_not_an_outlier() {
    // Every launch of this API takes 200 µs: nothing stands out.
    assert!(find(&launches(200, 200), "slow_runtime_calls").is_none());
}

#[test]
fn d14_near_miss_under_the_floor() {
    // 45 µs is nine times the usual 5 µs, but under HTA's 50 µs floor.
    assert!(find(&launches(5, 45), "slow_runtime_calls").is_none());
}

/// D14: k2 is launched at 12–14 and starts `d` µs after its launch
/// returned; with `busy`, a long kernel on stream 8 covers the wait.
///
/// ```text
/// µs          0    10 12 14               14+d    +20
/// stream 7    [k1..]                      [k2......]
/// stream 8    (busy: [long kernel.........])
/// thread 1    [L1]    [L2]
/// idle             [fw][launch_delay_outliers]
/// ```
fn queued(d: Ns, busy: bool) -> Vec<Finding> {
    let mut t = Sketch::in_units(US);
    t.op(0, 14 + d + 20, "ProfilerStep#1")
        .call(0, 2, "cudaLaunchKernel", 1)
        .op(12, 14, "aten::relu")
        .call(12, 14, "cudaLaunchKernel", 2);
    t.kernel(7, 0, 10, 1).kernel(7, 14 + d, 14 + d + 20, 2);
    if busy {
        t.call(2, 3, "cudaLaunchKernel", 3).kernel(8, 3, 14 + d, 3);
    }
    t.findings()
}

/// D14 on a filtered trace: 120 launches on streams 7 and 9, every runtime
/// call a launch with its kernel (no synchronize, event or stream-wait
/// call), then k on stream 9 queued 300 µs on an idle device; with
/// `record`, one `cudaEventRecord` is left in.
///
/// ```text
/// µs          0  5  10  ...  1195 1200      1500
/// stream 7/9  [k][k] ...  [k]                [k (stream 9)]
/// thread 1    [L][L] ...  [L] [L ............]   (record: [cudaEventRecord])
/// ```
fn filtered_trace(record: bool) -> Vec<Finding> {
    let mut t = Sketch::in_units(US);
    t.op(0, 1600, "ProfilerStep#1");
    for i in 0..120 {
        let at = i * 10;
        t.call(at, at + 2, "cudaLaunchKernel", 1 + i as u64).kernel(
            if i % 2 == 0 { 7 } else { 9 },
            at + 3,
            at + 8,
            1 + i as u64,
        );
    }
    t.op(1198, 1200, "aten::add")
        .call(1198, 1200, "cudaLaunchKernel", 500)
        .kernel(9, 1500, 1550, 500);
    if record {
        t.call(1202, 1203, "cudaEventRecord", 0);
    }
    t.findings()
}

#[test]
fn d14_queued_work_in_a_filtered_trace_names_the_filter() {
    let f = filtered_trace(false);
    let x = find(&f, "launch_delay_outliers").expect("D14");
    assert!(
        x.hint
            .contains("Every one of its 121 runtime calls launched GPU work")
            && x.hint.contains("so the trace was filtered"),
        "{}",
        x.hint
    );
    // One call that launches nothing: a trace as recorded.
    let f = filtered_trace(true);
    let x = find(&f, "launch_delay_outliers").expect("D14");
    assert!(!x.hint.contains("filtered"), "{}", x.hint);
}

#[test]
fn d14_launch_delay_on_an_idle_gpu() {
    let f = queued(200, false);
    let x = find(&f, "launch_delay_outliers").expect("D14");
    // The claimed piece is the `queued` one, from the launch call's end
    // (14) to k2; the call itself (12–14) is launch overhead.
    assert_eq!(
        (x.occurrences, x.idle_ns, x.explained_ns),
        (1, 200 * US, 200 * US)
    );
    assert_eq!(x.est_savings_ns, 0, "nothing in the trace to remove");
    assert!(!x.estimable);
    assert_eq!(x.operator, None, "nothing in the trace held the work");
    assert!(x.hint.contains("aten::relu"), "{}", x.hint);
    assert!(
        x.title.contains("once") && x.title.contains("200.0 µs"),
        "{}",
        x.title
    );
    assert!(x.hint.contains("nvidia-smi"), "{}", x.hint);
    assert!(x.evidence.iter().any(|e| e.kind == "gpu"));
}

/// D14: the trace's first work on the device waits 300 µs on a GPU that
/// looks idle, with nothing before it that could hold it. The profiler
/// drops GPU work that began before its capture, so the hint puts that
/// first; a held row after recorded work (`queued`) does not say it.
///
/// ```text
/// µs          0  2                  302    322
/// stream 7       (queued)           [k1....]
/// thread 1    [L1]
/// ```
#[test]
fn d14_first_recorded_work_may_wait_for_work_before_the_capture() {
    let mut t = Sketch::in_units(US);
    t.op(0, 330, "ProfilerStep#1")
        .op(0, 2, "aten::copy_")
        .call(0, 2, "cudaLaunchKernel", 1);
    t.kernel(7, 302, 322, 1);
    let f = t.findings();
    let x = find(&f, "launch_delay_outliers").expect("D14");
    assert_eq!(x.idle_ns, 300 * US);
    assert!(
        x.hint.contains("first work the trace records on this GPU")
            && x.hint.contains("before the profiler started"),
        "{}",
        x.hint
    );
    let later = queued(200, false);
    let y = find(&later, "launch_delay_outliers").expect("D14");
    assert!(!y.hint.contains("before the profiler started"), "{}", y.hint);
}

#[test]
fn d14_near_miss_short_launch_delay() {
    assert!(find(&queued(60, false), "launch_delay_outliers").is_none());
}

#[test]
fn d14_near_miss_queued_behind_busy_work() {
    // Queued 200 µs, but the GPU was busy: not idle time.
    assert!(find(&queued(200, true), "launch_delay_outliers").is_none());
}

/// D16: a CUPTI flush marker covers part of a gap.
///
/// ```text
/// µs          0    10   20        40   50     60
/// stream 7    [k1..]                   [k2....]
/// marker           (or inside k1)
/// thread 1    [L1]                 [L2]
/// ```
fn profiler(marker: (Ns, Ns)) -> Vec<Finding> {
    profiler_sketch(marker).findings()
}

/// The timeline of [`profiler`], to draw more on.
fn profiler_sketch(marker: (Ns, Ns)) -> Sketch {
    let mut t = Sketch::in_units(US);
    t.op(0, 60, "ProfilerStep#1").call(0, 2, "cudaLaunchKernel", 1);
    t.call(40, 42, "cudaLaunchKernel", 2)
        .profiler_overhead(marker.0, marker.1);
    t.kernel(7, 0, 10, 1).kernel(7, 50, 60, 2);
    t
}

#[test]
fn d16_profiler_overhead() {
    let f = profiler((20, 40));
    let x = find(&f, "profiler_overhead").expect("D16");
    assert_eq!((x.idle_ns, x.est_savings_ns), (20 * US, 0));
}

#[test]
fn d16_near_miss_marker_while_busy() {
    assert!(find(&profiler((2, 8)), "profiler_overhead").is_none());
}

/// D16: two full steps of 4 kernels, then a last step with `last` kernels
/// that the capture stopped inside.
///
/// ```text
/// µs     0                 100                 200            260
/// steps  [ProfilerStep#1....][ProfilerStep#2....][#3 ...........]
/// k         [k] [k] [k] [k]     [k] [k] [k] [k]     [k]
///        each kernel i at 5+20i .. 15+20i of its step, launched at 20i
/// idle                                          [5]  [45 ..........]
/// ```
fn cut_short(last: i64) -> Vec<Finding> {
    let mut t = Sketch::in_units(US);
    let mut corr = 0;
    for (step, (b, e, n)) in [(0, 100, 4), (100, 200, 4), (200, 260, last)]
        .into_iter()
        .enumerate()
    {
        t.op(b, e, &format!("ProfilerStep#{}", step + 1));
        for i in 0..n {
            corr += 1;
            t.call(b + 20 * i, b + 20 * i + 2, "cudaLaunchKernel", corr)
                .kernel(7, b + 20 * i + 5, b + 20 * i + 15, corr);
        }
    }
    t.findings()
}

#[test]
fn d16_partial_last_step() {
    let f = cut_short(1);
    let x = find(&f, "partial_last_step").expect("D16");
    assert_eq!((x.detector.as_str(), x.primary), ("D16", true));
    // Step 3's idle: 200..205 before its kernel and 215..260 after it.
    assert_eq!((x.idle_ns, x.est_savings_ns), (50 * US, 0));
    assert!(
        x.title.contains("ProfilerStep#3") && x.title.contains("1 GPU rows against 4"),
        "{}",
        x.title
    );
    assert!(x.hint.contains("--exclude-last-step"), "{}", x.hint);
    assert!(x
        .evidence
        .iter()
        .any(|e| e.kind == "cpu_op" && e.start_ns == 200 * US));
    // Nothing else claims step 3's idle time.
    for y in f.iter().filter(|y| y.primary && y.id != "partial_last_step") {
        assert!(
            y.evidence
                .iter()
                .all(|e| e.kind != "idle" || e.end_ns <= 200 * US),
            "{y:?}"
        );
    }
}

#[test]
fn d16_near_miss_complete_last_step() {
    let f = cut_short(4);
    assert!(find(&f, "partial_last_step").is_none());
}

/// D2 by user range: a `record_function("features")` range computes on the
/// CPU through two operators and the Python between them, then the next
/// kernel is launched. The fix is to the range (the whole function moved to
/// the GPU), so one finding explains the range's idle time, the operators
/// and the Python between them together.
///
/// ```text
/// µs          0    10        40 42          65    70 72 75       100
/// stream 7    [k1..]                                   [k2.........]
/// thread 1    [ProfilerStep#1..................................... ]
///             [L1]  [features.........................]
///                   [aten::sort...]  [aten::cumsum]      [L2]
/// idle             [cpu_op.......][fw][cpu_op.......][fw ][fw][launch]
///                  [cpu_bound_range `features`.......]
/// ```
fn cpu_bound_range(launch_between: bool) -> Vec<Finding> {
    let mut t = Sketch::in_units(US);
    t.op(0, 100, "ProfilerStep#1").call(0, 2, "cudaLaunchKernel", 1);
    t.op(10, 70, "features");
    t.op(10, 40, "aten::sort");
    t.op(42, 65, "aten::cumsum");
    t.kernel(7, 0, 10, 1);
    if launch_between {
        // The range launches a short kernel between its operators: each
        // stretch of CPU time holds one operator.
        t.call(40, 41, "cudaLaunchKernel", 3).kernel(7, 41, 42, 3);
    }
    t.call(72, 74, "cudaLaunchKernel", 2).kernel(7, 75, 100, 2);
    t.findings()
}

#[test]
fn d2_cpu_bound_range() {
    let f = cpu_bound_range(false);
    let x = find(&f, "cpu_bound_range").expect("D2 by range");
    assert_eq!(x.detector, "D2");
    assert_eq!(x.operator.as_deref(), Some("aten::sort"), "the dominant op");
    assert_eq!(x.annotation.as_deref(), Some("features"));
    // 10..70: both operators and the 2 + 5 µs of Python inside the range;
    // 70..72 is outside the range (2 µs, under the noise floor).
    assert_eq!(x.idle_ns, 60 * US);
    assert_eq!(x.est_savings_ns, 60 * US);
    assert_eq!(x.occurrences, 1, "one range instance");
    assert!(
        x.hint.contains("`features`") && x.hint.contains("aten::sort"),
        "{}",
        x.hint
    );
    // Each idle ns once: no per-operator finding for the same time.
    assert!(find(&f, "cpu_bound_operator").is_none());
}

/// D2 and DDP's buffer broadcast: inside `DistributedDataParallel.forward`
/// the buffers are flattened, broadcast from rank 0 and unflattened
/// (30 µs of the range's 60 µs), then the model's own operator runs. The
/// hint names the share and `broadcast_buffers=False`; the same operators
/// outside a DDP forward (`ddp = false`) are not DDP's buffer sync.
///
/// ```text
/// µs          0    10       25 27 30   40 42          70 72 75      100
/// stream 7    [k1..]                                        [k2........]
/// thread 1    [DistributedDataParallel.forward (or `features`)..]
///                  [flatten][bc][unflatten]  [aten::sort....]  [L2]
/// ```
fn ddp_forward(ddp: bool) -> Vec<Finding> {
    let mut t = Sketch::in_units(US);
    t.op(0, 100, "ProfilerStep#1").call(0, 2, "cudaLaunchKernel", 1);
    let range = if ddp {
        "DistributedDataParallel.forward"
    } else {
        "features"
    };
    t.op_as(10, 70, range, CpuOpKind::UserAnnotation);
    t.op(10, 25, "aten::flatten_dense_tensors");
    t.op(27, 30, "c10d::broadcast_");
    t.op(30, 40, "aten::unflatten_dense_tensors");
    t.op(42, 70, "aten::sort");
    t.kernel(7, 0, 10, 1);
    t.call(72, 74, "cudaLaunchKernel", 2).kernel(7, 75, 100, 2);
    t.findings()
}

#[test]
fn d2_names_ddp_buffer_broadcast_inside_a_ddp_forward() {
    let f = ddp_forward(true);
    let x = f
        .iter()
        .find(|x| x.detector == "D2" && x.hint.contains("DistributedDataParallel.forward"))
        .expect("D2 on the DDP forward");
    assert!(x.hint.contains("broadcast_buffers=False"), "{}", x.hint);
    // The range keeps the unflatten's 10 µs of its 40 (the flatten, 15
    // µs, is a finding of its own, all of it the broadcast's; the 3 µs of
    // `c10d::broadcast_`, a collective, are not CPU-bound time).
    assert!(
        x.hint.contains("(10.0 µs) is DDP's buffer broadcast"),
        "{}",
        x.hint
    );
    let flatten = find(&f, "cpu_bound_operator").expect("flatten on its own");
    assert_eq!(flatten.operator.as_deref(), Some("aten::flatten_dense_tensors"));
    assert!(flatten.hint.contains("100 % of this time"), "{}", flatten.hint);
}

#[test]
fn d2_near_miss_the_same_operators_outside_ddp_are_no_buffer_sync() {
    let f = ddp_forward(false);
    assert!(f.iter().any(|x| x.detector == "D2"), "{f:?}");
    assert!(f.iter().all(|x| !x.hint.contains("broadcast_buffers")), "{f:?}");
}

/// D2 by user range names the operator with the most idle time by name,
/// summed over its call sites: `aten::cumsum` in three modules (3 × 10 µs)
/// outweighs `aten::sort` (25 µs), though each of its sites holds less.
///
/// ```text
/// µs          0    10        35 37   47 49   59 61   71   79 80 82 83    100
/// stream 7    [k1..]                                            [k2.......]
/// thread 1    [features.........................................]
///                  [aten::sort][A [cumsum]][B [cumsum]][C [cumsum]]  [L2]
/// idle             [cpu_bound_range `features`: 69 µs............]
/// ```
#[test]
fn d2_range_names_the_heaviest_operator_over_its_sites() {
    let mut t = Sketch::in_units(US);
    t.op(0, 100, "ProfilerStep#1").call(0, 2, "cudaLaunchKernel", 1);
    t.kernel(7, 0, 10, 1);
    t.op(10, 79, "features");
    t.op(10, 35, "aten::sort");
    for (m, at) in [("A", 36), ("B", 48), ("C", 60)] {
        t.op(at, at + 12, &format!("nn.Module: {m}"));
        t.op(at + 1, at + 11, "aten::cumsum");
    }
    t.call(80, 82, "cudaLaunchKernel", 2).kernel(7, 83, 100, 2);
    let f = t.findings();
    let x = find(&f, "cpu_bound_range").expect("D2 by range");
    assert_eq!(x.idle_ns, 69 * US);
    assert_eq!(x.operator.as_deref(), Some("aten::cumsum"), "{}", x.hint);
    assert!(
        x.hint.contains("the most time in `aten::cumsum`, 43 % of it"),
        "{}",
        x.hint
    );
}

/// A range whose idle time is mostly the Python between its operators
/// gets the advice for Python, not for its operators.
///
/// ```text
/// µs          0    10   20            50   60   70 72 75       100
/// stream 7    [k1..]                                  [k2.........]
/// thread 1    [ProfilerStep#1....................................]
///             [L1]  [features.....................]
///                   [sort]  (python)  [cumsum](py)  [L2]
/// idle             [cpu_bound_range `features`: 40 of 60 µs Python]
/// ```
#[test]
fn d2_range_mostly_python_gets_python_advice() {
    let mut t = Sketch::in_units(US);
    t.op(0, 100, "ProfilerStep#1").call(0, 2, "cudaLaunchKernel", 1);
    t.kernel(7, 0, 10, 1);
    t.op(10, 70, "features");
    t.op(10, 20, "aten::sort");
    t.op(50, 60, "aten::cumsum");
    t.call(72, 74, "cudaLaunchKernel", 2).kernel(7, 75, 100, 2);
    let f = t.findings();
    let x = find(&f, "cpu_bound_range").expect("D2 by range");
    assert_eq!(x.idle_ns, 60 * US);
    assert!(
        x.hint
            .contains("Most of it (67 %) is the Python between the operators"),
        "{}",
        x.hint
    );
    assert!(x.hint.contains("Remove per-step Python work"), "{}", x.hint);
    assert!(!x.hint.contains("compute on the CPU"), "{}", x.hint);
}

#[test]
fn d2_near_miss_one_operator_per_stretch_stays_per_operator() {
    // A launch between the two operators splits the range's CPU time into
    // two stretches of one operator each: grouped by operator, as before.
    let f = cpu_bound_range(true);
    assert!(find(&f, "cpu_bound_range").is_none());
    let sort = f
        .iter()
        .find(|x| x.operator.as_deref() == Some("aten::sort"))
        .expect("aten::sort");
    assert_eq!(sort.id, "cpu_bound_operator");
    assert_eq!(sort.idle_ns, 30 * US);
    assert!(f
        .iter()
        .any(|x| x.id == "cpu_bound_operator" && x.operator.as_deref() == Some("aten::cumsum")));
}

/// D17: `n` kernels of 20 µs, 2 µs apart, every one launched by
/// `aten::mm` before the step in which it runs: the GPU is busy 91 % of
/// the step and idles only to start each next kernel, already queued.
///
/// ```text
/// µs        2  5  8 ...  F  F+20 F+22 F+42 F+44     (F = 100 + 3 n)
/// thread    [L0][L1][L2] ...
/// step                   [ProfilerStep#1..................]
/// stream 7               [k0...]  [k1...]  [k2...] ...
/// idle                          ^2       ^2            (queued: launch_overhead)
/// ```
fn queued_kernels(n: i64, kernel_us: Ns) -> Vec<Finding> {
    let mut t = Sketch::in_units(US);
    let first = 100 + 3 * n;
    let end = first + n * (kernel_us + 2) + 10;
    t.op(first, end, "ProfilerStep#1");
    for i in 0..n {
        let a = first + i * (kernel_us + 2);
        t.op(2 + 3 * i, 4 + 3 * i, "aten::mm");
        t.call(2 + 3 * i, 4 + 3 * i, "cudaLaunchKernel", 1 + i as u64);
        t.kernel(7, a, a + kernel_us, 1 + i as u64);
    }
    t.findings()
}

#[test]
fn d17_gaps_between_queued_kernels() {
    let f = queued_kernels(50, 20);
    let x = find(&f, "kernel_launch_gaps").expect("D17");
    assert_eq!((x.detector.as_str(), x.occurrences), ("D17", 49));
    assert_eq!(x.idle_ns, 49 * 2 * US);
    // How much fusion or a graph removes is not in the trace: the bound is
    // the idle time.
    assert!(!x.estimable);
    assert_eq!(x.savings_bound_ns, Some(x.idle_ns));
    // Named in the hint, not as the finding's operator: the finding is
    // about the device's gaps, one subject whatever launched them.
    assert_eq!(x.operator, None);
    assert!(
        x.hint.contains(
            "Nearly all of it is between kernels already queued on the GPU (49 gaps, 2.0 µs each on average"
        ),
        "{}",
        x.hint
    );
    assert!(x
        .hint
        .contains("Most of it (100 %) is before kernels that `aten::mm` launched."));
    assert!(x.title.contains("49 times (98.0 µs idle"), "{}", x.title);
    // The kernels are not small: this is not D3's launch-bound run.
    assert!(find(&f, "small_kernel_launches").is_none());
}

#[test]
fn d17_near_miss_gaps_under_one_percent_of_the_step() {
    // 9 gaps of 2 µs between 500 µs kernels: 0.4 % of the step.
    assert!(find(&queued_kernels(10, 500), "kernel_launch_gaps").is_none());
}

/// D17: each launch call runs 4 µs after the previous kernel ends, and its
/// kernel starts 1 µs after the call returns; three operators take turns.
///
/// ```text
/// µs        0     20    24 25    45    49 50
/// stream 7  [k0...]        [k1...]        [k2...]
/// thread    [L0]   [L1..]        [L2..]
/// idle             [launch][q]   [launch][q]
/// ```
#[test]
fn d17_gaps_while_the_launch_call_runs_spread_over_operators() {
    let mut t = Sketch::in_units(US);
    let n = 30;
    let end = n * 25 + 10;
    t.op(0, end, "ProfilerStep#1");
    let names = ["aten::mm", "aten::add", "aten::mul"];
    for i in 0..n {
        let a = i * 25;
        let (ls, le) = if i == 0 { (0, 0) } else { (a - 5, a - 1) };
        t.op(ls, le, names[i as usize % 3]);
        t.call(ls, le, "cudaLaunchKernel", 1 + i as u64);
        t.kernel(7, a, a + 20, 1 + i as u64);
    }
    let f = t.findings();
    let x = find(&f, "kernel_launch_gaps").expect("D17");
    assert_eq!((x.occurrences, x.idle_ns), (29, 29 * 5 * US));
    assert!(
        x.hint
            .contains("20 % of it is between kernels already queued on the GPU (29 gaps, 1.0 µs each"),
        "{}",
        x.hint
    );
    assert!(x
        .hint
        .contains("80 % while the next kernel's launch call was still running on the CPU"));
    // No operator holds half of it: none is blamed for all of it.
    assert_eq!(x.operator, None);
    assert!(x
        .hint
        .contains("It is spread over the operators that launch kernels; the most"));
}

/// D2's other operators: each of `names` keeps the CPU busy 4 µs before it
/// launches a kernel of `kernel_us`, under the 1 % floor one by one.
///
/// ```text
/// µs        0     K+7 K+11 K+13 K+14      (K = kernel_us)
/// stream 7  [k0.....]               [k1.....]
/// thread    [L0]     [aten::a.......]
///                         [L1]
/// idle               [cpu_op][launch]
/// ```
fn thin_host_time(names: &[&str], kernel_us: Ns) -> Vec<Finding> {
    thin_host_time_allocating(names, kernel_us, Allocation::None)
}

/// Whether each operator of [`thin_host_time_allocating`] first allocates
/// (`aten::empty`, 2 µs): inside itself, or before it, directly in the step.
#[derive(Clone, Copy, PartialEq)]
enum Allocation {
    None,
    Inside,
    Before,
}

/// [`thin_host_time`], each operator allocating as `allocation` says.
fn thin_host_time_allocating(names: &[&str], kernel_us: Ns, allocation: Allocation) -> Vec<Finding> {
    let mut t = Sketch::in_units(US);
    let n = names.len() as i64;
    let every = kernel_us + 7;
    let end = 7 + (n + 1) * every;
    t.op(0, end, "ProfilerStep#1");
    t.call(0, 2, "cudaLaunchKernel", 1).kernel(7, 7, every, 1);
    for (i, name) in names.iter().enumerate() {
        let at = every * (i as i64 + 1);
        let op_start = if allocation == Allocation::Before {
            at + 2
        } else {
            at
        };
        t.op(op_start, at + 6, name);
        if allocation != Allocation::None {
            t.op(at, at + 2, "aten::empty");
        }
        t.call(at + 4, at + 6, "cudaLaunchKernel", 2 + i as u64);
        t.kernel(7, at + 7, at + every, 2 + i as u64);
    }
    t.findings()
}

#[test]
fn d2_other_operators_together() {
    // A step of 1.1 ms: the floor is 11 µs, each operator's time 4 µs.
    let names = ["aten::a", "aten::b", "aten::c", "aten::d", "aten::e", "aten::f"];
    let f = thin_host_time(&names, 150);
    assert!(find(&f, "cpu_bound_operator").is_none(), "{f:?}");
    let x = find(&f, "cpu_bound_other_operators").expect("D2's other operators");
    assert_eq!(
        (x.detector.as_str(), x.idle_ns, x.occurrences),
        ("D2", 24 * US, 6)
    );
    assert!(
        x.title
            .starts_with("The GPU waits while 6 operators work on the CPU (24.0 µs idle"),
        "{}",
        x.title
    );
    // Spread evenly: none is blamed for all of it.
    assert_eq!(x.operator, None);
    assert!(
        x.hint
            .contains("(the most: `aten::a`, 17 %; `aten::b`, 17 %; `aten::c`, 17 %)"),
        "{}",
        x.hint
    );
    // They launch the kernels the GPU waits for.
    assert!(x.hint.contains("These operators launch GPU work"), "{}", x.hint);
    assert!(x.est_savings_ns > 0);
}

/// Five operators, each under the floor, that allocate (`aten::empty`, 2
/// µs) before they launch a kernel of 200 µs: inside them, or (the near
/// miss) before them, directly in the step.
///
/// ```text
/// µs        0     at   +2   +4 +6 +7        (at = 207 i)
/// stream 7  [k0.....]                [k1.....]
/// thread    [L0]     [aten::a..........]
///                    [empty]    [L1]
/// ```
fn allocations_before_launches(inside: bool) -> Finding {
    let names = ["aten::a", "aten::b", "aten::c", "aten::d", "aten::e"];
    let allocation = if inside {
        Allocation::Inside
    } else {
        Allocation::Before
    };
    let f = thin_host_time_allocating(&names, 200, allocation);
    find(&f, "cpu_bound_other_operators")
        .cloned()
        .unwrap_or_else(|| panic!("{f:?}"))
}

/// ResNet-50's `aten::empty` allocates the outputs of the batch norms and
/// convolutions: the hint says it runs inside them.
#[test]
fn d2_other_operators_say_an_allocation_runs_inside_launching_operators() {
    let x = allocations_before_launches(true);
    assert!(
        x.hint
            .contains("(the most: `aten::empty`, 50 %; `aten::a`, 10 %; `aten::b`, 10 %)."),
        "{}",
        x.hint
    );
    assert!(
        x.hint.contains(
            "`aten::empty` runs inside operators that launch GPU work (`aten::a`, `aten::b` \
             and 3 more), as part of dispatching them."
        ),
        "{}",
        x.hint
    );
}

/// Near miss: the same allocations directly in the step, whose range
/// holds the launches but is no operator.
#[test]
fn d2_near_miss_an_allocation_outside_any_operator() {
    let x = allocations_before_launches(false);
    assert!(x.hint.contains("`aten::empty`, 50 %"), "{}", x.hint);
    assert!(!x.hint.contains("runs inside"), "{}", x.hint);
}

#[test]
fn d2_near_miss_other_operators_under_the_floor_together() {
    // A step of 3 ms: 8 µs of the two operators is under its 30 µs floor.
    let f = thin_host_time(&["aten::a", "aten::b"], 1000);
    assert!(find(&f, "cpu_bound_other_operators").is_none(), "{f:?}");
}

/// D17 inside a graph replay: one `cudaGraphLaunch` replays 40 kernels of
/// 20 µs, 2 µs apart, in a step that starts with the first. The graph
/// already launches them at once: the advice is fewer, larger kernels,
/// not graphs.
#[test]
fn d17_gaps_inside_a_graph_replay() {
    let mut t = Sketch::in_units(US);
    t.op(10, 900, "ProfilerStep#1");
    t.op(1, 8, "aten::forward").call(2, 8, "cudaGraphLaunch", 1);
    for i in 0..40 {
        let at = 10 + 22 * i;
        t.kernel(7, at, at + 20, 1);
    }
    let f = t.findings();
    let x = find(&f, "kernel_launch_gaps").expect("D17");
    assert_eq!((x.occurrences, x.idle_ns), (39, 39 * 2 * US));
    assert!(
        x.hint
            .contains("Most of these gaps are inside CUDA graph replays (100 %)"),
        "{}",
        x.hint
    );
    assert!(!x.hint.contains("replay the step as CUDA graphs"), "{}", x.hint);
}

// Hints speak to the workload the trace shows (docs/detectors.md,
// Workload): training advice where a backward node or optimizer range is
// in the trace, none where CPU operators are recorded and none of them is
// one, both where no CPU operator is recorded.

/// A CPU row that shows training, drawn at 3–8 µs (or `at`) where the
/// timelines below keep the GPU busy and the thread free.
const BACKWARD: &str = "autograd::engine::evaluate_function: AddmmBackward0";

#[test]
fn d5_scalar_read_advice_follows_the_workload() {
    // `aten::item` is a CPU operator and nothing is a backward node.
    let f = item_read(60);
    let x = find(&f, "blocking_device_to_host_read").expect("D5");
    assert!(!x.hint.contains("losses"), "{}", x.hint);
    assert!(x.hint.contains("as a CUDA tensor"), "{}", x.hint);
    let mut t = item_read_sketch(60, 62, 66);
    t.op(3, 8, "Optimizer.zero_grad#SGD.zero_grad");
    let f = t.findings();
    let x = find(&f, "blocking_device_to_host_read").expect("D5");
    assert!(x.hint.contains("accumulate losses"), "{}", x.hint);
}

#[test]
fn d13_communication_wait_advice_follows_the_workload() {
    // No CPU operator at all: the trace cannot tell, both as before.
    let f = stream_wait(ALL_REDUCE, 100, 0, WaitBy::Record, 14);
    let x = find(&f, "communication_wait").expect("D13");
    assert!(x.hint.contains("bucket_cap_mb"), "{}", x.hint);
    // An operator and no backward: no DDP/FSDP gradient advice.
    let mut t = stream_wait_sketch(ALL_REDUCE, 100, 0, WaitBy::Record, 14);
    t.op(3, 8, "aten::add");
    let f = t.findings();
    let x = find(&f, "communication_wait").expect("D13");
    assert!(!x.hint.contains("bucket_cap_mb"), "{}", x.hint);
    assert!(
        x.hint.contains("no backward pass or optimizer step"),
        "{}",
        x.hint
    );
    assert!(x.hint.contains("async_op=True"), "{}", x.hint);
    let mut t = stream_wait_sketch(ALL_REDUCE, 100, 0, WaitBy::Record, 14);
    t.op_as(3, 8, BACKWARD, CpuOpKind::Operator);
    let f = t.findings();
    let x = find(&f, "communication_wait").expect("D13");
    assert!(x.hint.contains("bucket_cap_mb"), "{}", x.hint);
}

#[test]
fn d14_slow_launch_advice_follows_the_workload() {
    // `aten::add` and no backward: no DataLoader workers on a training
    // thread.
    let f = launches(5, 200);
    let x = find(&f, "slow_runtime_calls").expect("D14");
    assert!(!x.hint.contains("training thread"), "{}", x.hint);
    assert!(x.hint.contains("launching thread's cores"), "{}", x.hint);
    let mut t = launches_sketch(5, 200);
    t.op_as(6, 7, "AddmmBackward0", CpuOpKind::Operator);
    let f = t.findings();
    let x = find(&f, "slow_runtime_calls").expect("D14");
    assert!(x.hint.contains("DataLoader workers"), "{}", x.hint);
    assert!(x.hint.contains("training thread's cores"), "{}", x.hint);
}

/// D15: an all-reduce runs 10–100 with no compute beside it.
///
/// ```text
/// µs          0    10                         100
/// stream 7    [gemm]
/// stream 20        [ncclKernel_AllReduce.........]
/// thread 1    [L] [c10d::allreduce_ [L]]  [extra 12–20]
/// ```
fn exposed(collective_kind: CpuOpKind, extra: Option<(&str, CpuOpKind)>) -> Finding {
    let mut t = Sketch::in_units(US);
    t.op(0, 300, "ProfilerStep#1").call(0, 2, "cudaLaunchKernel", 1);
    t.op_as(3, 9, "c10d::allreduce_", collective_kind)
        .call(4, 6, "cudaLaunchKernel", 2);
    if let Some((name, kind)) = extra {
        t.op_as(12, 20, name, kind);
    }
    t.named_kernel(GEMM, 7, 0, 10, 1)
        .named_kernel(ALL_REDUCE, 20, 10, 100, 2);
    let f = t.findings();
    find(&f, "exposed_communication").expect("D15").clone()
}

#[test]
fn d15_advice_follows_the_workload() {
    let op = CpuOpKind::Operator;
    let forward = exposed(op, None);
    assert!(
        forward.hint.contains("no backward pass or optimizer step"),
        "{}",
        forward.hint
    );
    assert!(
        forward.hint.contains("tensor-parallel forward pass"),
        "{}",
        forward.hint
    );
    assert!(!forward.hint.contains("bucket_cap_mb"), "{}", forward.hint);
    let training = exposed(op, Some(("Optimizer.step#SGD.step", CpuOpKind::UserAnnotation)));
    assert!(training.hint.contains("bucket_cap_mb"), "{}", training.hint);
    assert!(!training.hint.contains("tensor-parallel"), "{}", training.hint);
    let training = exposed(op, Some(("NativeLayerNormBackward0", op)));
    assert!(training
        .hint
        .contains("In training, let communication overlap backward"));
    // Only user ranges, no CPU operator: the trace cannot tell, both.
    let unknown = exposed(CpuOpKind::UserAnnotation, None);
    assert!(
        unknown.hint.contains("bucket_cap_mb") && unknown.hint.contains("tensor-parallel inference"),
        "{}",
        unknown.hint
    );
}

#[test]
fn d16_profiler_overhead_names_training_code_only_in_training() {
    let f = profiler((20, 40));
    let x = find(&f, "profiler_overhead").expect("D16");
    assert!(x.hint.contains("not from the program's own code"), "{}", x.hint);
    let mut t = profiler_sketch((20, 40));
    t.op_as(3, 8, BACKWARD, CpuOpKind::Operator);
    let f = t.findings();
    let x = find(&f, "profiler_overhead").expect("D16");
    assert!(x.hint.contains("not from the training code"), "{}", x.hint);
}

/// D14 and D16: the slow launch of [`launches`] (100–300 µs) holds a
/// `Lazy Function Loading` record at 120–250: the driver loaded the
/// kernel's module inside it, so it is a first launch, not a slow or
/// descheduled call.
///
/// ```text
/// µs          100                                300 302
/// stream 7                                           [k...]
/// thread 1    [cudaLaunchKernel......................]
/// overhead         [Lazy Function Loading.....]
/// pieces      [first_call_warmup, the whole call.....]
/// ```
#[test]
fn d14_a_launch_that_loads_its_module_is_warm_up_not_an_outlier() {
    let mut t = launches_sketch(5, 200);
    t.marker(MarkerKind::ProfilerOverhead, 120, 250, "Lazy Function Loading");
    let f = t.findings();
    assert!(find(&f, "slow_runtime_calls").is_none(), "{f:?}");
    let w = find(&f, "first_call_warmup").expect("D16");
    // The whole call, not only the 130 µs under the record: one claim.
    assert_eq!(w.idle_ns, 200 * US);
    assert!(
        w.hint
            .contains("1 call to `cudaLaunchKernel` (up to 200.0 µs) holds such a record"),
        "{}",
        w.hint
    );
}

#[test]
fn d14_near_miss_a_load_outside_the_call_leaves_it_an_outlier() {
    // The record lies at 6–7, while the first kernels run: not inside the
    // slow call, which stays D14's.
    let mut t = launches_sketch(5, 200);
    t.marker(MarkerKind::ProfilerOverhead, 6, 7, "Lazy Function Loading");
    let f = t.findings();
    let x = find(&f, "slow_runtime_calls").expect("D14");
    assert_eq!(x.idle_ns, 200 * US);
    assert!(find(&f, "first_call_warmup").is_none(), "{f:?}");
}

#[test]
fn d11_names_the_training_thread_only_where_training_may_run() {
    // No CPU operator: the trace cannot tell, "training thread" as before.
    let f = dataloader(50);
    let x = find(&f, "dataloader_stall").expect("D11");
    assert!(x.hint.contains("on the training thread"), "{}", x.hint);
    let mut t = dataloader_sketch(50, &[]);
    t.op(3, 8, "aten::add");
    let f = t.findings();
    let x = find(&f, "dataloader_stall").expect("D11");
    assert!(
        x.hint.contains("on the thread that launches the GPU work"),
        "{}",
        x.hint
    );
}

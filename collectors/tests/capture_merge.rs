//! `capture::merge`: captures of several processes become one trace with
//! every row at its absolute time and links that never cross processes.

use gapscope_collectors::capture;
use gapscope_collectors::trace::*;

/// One process: a thread, an operator holding a launch, the kernel it
/// launched, with correlation id 5 and external id 1 in every process.
///
/// ```text
/// thread (pid, 1): [op 0..100...................]
///                      [launch 10..20 corr=5]
/// gpu 0, stream 7:                 [kernel 30..60 corr=5]
/// ```
fn process(pid: i64, origin: i64, op_name: &str, kernel: &str) -> Trace {
    let mut b = TraceBuilder::new();
    let t = b.thread(pid, 1);
    b.set_thread_name(t, &format!("pid {pid} main"));
    let op = b.intern(op_name);
    let launch = b.intern("cudaLaunchKernel");
    let k = b.intern(kernel);
    let mut o = CpuOp::new(t, origin, origin + 100, op, CpuOpKind::Operator);
    o.external_id = 1;
    b.push_cpu_op(o);
    let mut r = RuntimeCall::new(t, origin + 10, origin + 20, launch, 5);
    r.external_id = 1;
    b.push_runtime(r);
    let mut g = GpuActivity::kernel(0, 7, origin + 30, origin + 60, k, 5);
    g.external_id = 1;
    b.push_gpu(g);
    b.push_marker(Marker::new(MarkerKind::Instant, origin + 1, origin + 1, op));
    b.meta.format = "gapscope-capture".into();
    b.diagnostics.note("bad_timestamp", || format!("pid {pid}"));
    let trace = b.finish();
    assert_eq!(trace.meta.origin_ns, origin);
    trace
}

fn name(t: &Trace, id: StrId) -> &str {
    t.strings.get(id)
}

#[test]
fn two_processes_with_colliding_ids_merge_by_absolute_time() {
    // The worker's origin is 50 ns after the parent's; given first on
    // purpose, so placement cannot come from the order of the parts.
    let worker = process(200, 1_000_050, "worker_op", "worker_kernel");
    let parent = process(100, 1_000_000, "aten::mm", "gemm");
    let m = capture::merge(vec![worker, parent], "run.gst + worker");

    assert_eq!(m.meta.origin_ns, 1_000_000);
    assert_eq!(m.meta.source, "run.gst + worker");
    assert_eq!(m.meta.format, "gapscope-capture");
    assert_eq!(m.threads.len(), 2);
    assert_eq!(m.diagnostics.counts["bad_timestamp"], 2);

    // Every row at its absolute time minus the merged origin.
    let gpu: Vec<(&str, i64, i64)> = (0..m.gpu.len())
        .map(|i| (name(&m, m.gpu.name[i]), m.gpu.start[i], m.gpu.end[i]))
        .collect();
    assert_eq!(gpu, vec![("gemm", 30, 60), ("worker_kernel", 80, 110)]);
    let ops: Vec<(&str, i64, i64)> = (0..m.cpu_ops.len())
        .map(|i| (name(&m, m.cpu_ops.name[i]), m.cpu_ops.start[i], m.cpu_ops.end[i]))
        .collect();
    assert!(
        ops.contains(&("aten::mm", 0, 100)) && ops.contains(&("worker_op", 50, 150)),
        "{ops:?}"
    );
    let marks: Vec<i64> = m.markers.start.clone();
    assert_eq!(marks, vec![1, 51]);

    // Correlation ids no longer collide: the first part keeps 5, the
    // second is shifted past it; external ids likewise.
    let corr: Vec<u64> = m.gpu.correlation.clone();
    assert_eq!(corr.len(), 2);
    assert_ne!(corr[0], corr[1], "{corr:?}");
    let mut ids = m.runtime.correlation.clone();
    ids.sort_unstable();
    let mut gids = corr.clone();
    gids.sort_unstable();
    assert_eq!(ids, gids);

    // Each kernel links to the launch of its own process, and that launch
    // to its own process's operator.
    for i in 0..m.gpu.len() {
        let call = m.links.gpu_launch[i].unwrap_or_else(|| panic!("kernel {i} lost its launch"));
        let call = call.index();
        let thread = m.runtime.thread[call].0 as usize;
        let pid = m.threads.pid[thread];
        let (kernel, op) = if pid == 100 {
            ("gemm", "aten::mm")
        } else {
            ("worker_kernel", "worker_op")
        };
        assert_eq!(name(&m, m.gpu.name[i]), kernel);
        assert_eq!(m.op_name(m.links.runtime_op[call]), Some(op));
        assert_eq!(m.runtime.correlation[call], m.gpu.correlation[i]);
    }
    assert_eq!(m.links.runtime_gpu_count, vec![1, 1]);
    let thread_names: Vec<&str> = m.threads.name.iter().map(|&n| name(&m, n)).collect();
    assert_eq!(thread_names, vec!["pid 200 main", "pid 100 main"]);

    // The merged trace is a trace like any other: it round-trips.
    let mut bytes = Vec::new();
    capture::write(&m, &mut bytes).unwrap();
    let back = capture::read_bytes(&bytes, "merged.gst").unwrap();
    assert_eq!(format!("{:?}", back.gpu), format!("{:?}", m.gpu));
    assert_eq!(format!("{:?}", back.links), format!("{:?}", m.links));
}

#[test]
fn merging_parts_read_from_files_keeps_each_process_apart() {
    let dir = std::env::temp_dir().join(format!("gapscope-capture-merge-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let a = dir.join("parent.gst");
    let b = dir.join("worker.gst");
    capture::write_file(&process(100, 5_000, "aten::mm", "gemm"), &a).unwrap();
    capture::write_file(&process(200, 4_000, "worker_op", "worker_kernel"), &b).unwrap();
    assert!(
        !dir.join("parent.gst.tmp").exists(),
        "the temporary file is renamed away"
    );
    let parts = vec![capture::read_file(&a).unwrap(), capture::read_file(&b).unwrap()];
    let m = capture::merge(parts, "both");
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(m.meta.origin_ns, 4_000);
    // The parent's kernel (absolute 5_030) is 1_030 ns after the origin.
    let gemm = (0..m.gpu.len())
        .find(|&i| name(&m, m.gpu.name[i]) == "gemm")
        .unwrap();
    assert_eq!((m.gpu.start[gemm], m.gpu.end[gemm]), (1_030, 1_060));
    assert!(m.links.gpu_launch.iter().all(Option::is_some));
}

#[test]
fn one_part_merges_to_itself_and_an_empty_part_does_not_move_the_origin() {
    let p = process(100, 7_000_000, "aten::mm", "gemm");
    let mut empty = TraceBuilder::new().finish();
    empty.meta.format = "gapscope-capture".into();
    assert_eq!(empty.meta.origin_ns, 0);
    let m = capture::merge(vec![empty, p.clone()], "x");
    assert_eq!(m.meta.origin_ns, 7_000_000);
    for (a, b) in [
        (format!("{:?}", m.gpu), format!("{:?}", p.gpu)),
        (format!("{:?}", m.runtime), format!("{:?}", p.runtime)),
        (format!("{:?}", m.cpu_ops), format!("{:?}", p.cpu_ops)),
        (format!("{:?}", m.markers), format!("{:?}", p.markers)),
        (format!("{:?}", m.links), format!("{:?}", p.links)),
    ] {
        assert_eq!(a, b);
    }
    assert_eq!(capture::merge(Vec::new(), "none").meta.origin_ns, 0);
}

#[test]
fn rank_is_kept_only_when_the_parts_agree() {
    let mut a = process(1, 0, "a", "k");
    let mut b = process(2, 10, "b", "k");
    a.meta.rank = Some(1);
    b.meta.rank = Some(1);
    b.meta.world_size = Some(8);
    let m = capture::merge(vec![a.clone(), b.clone()], "x");
    assert_eq!((m.meta.rank, m.meta.world_size), (Some(1), Some(8)));
    b.meta.rank = Some(2);
    b.meta.format = "kineto-json".into();
    let m = capture::merge(vec![a, b], "x");
    assert_eq!(m.meta.rank, None);
    assert_eq!(m.meta.format, "merged");
}

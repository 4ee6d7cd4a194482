//! The CUPTI decoder on byte-exact buffers: exact rows out, both CUPTI
//! families, joins across records and buffers, and malformed input (cut-off
//! records, unknown kinds, random bytes) counted without a panic.

mod cupti_support;

use cupti_support::*;
use gapscope_collectors::cupti::decode::external::ExternalKind;
use gapscope_collectors::cupti::decode::memcpy::{CopyDirection, MemoryKind};
use gapscope_collectors::cupti::decode::overhead::OverheadKind;
use gapscope_collectors::cupti::decode::sync::SyncType;
use gapscope_collectors::cupti::decode::{
    decode_record, DecodeError, Decoder, Layouts, MapResolver, Record, RecordIter, WalkError, CUPTI_12_9,
    CUPTI_13_0,
};
use gapscope_collectors::trace::{CallRow, OpRow, Trace};

fn layouts(v: Ver) -> Layouts {
    Layouts::for_api_version(v.api).unwrap()
}

fn decode(
    v: Ver,
    buffers: &[&[u8]],
    names: MapResolver,
) -> (Trace, gapscope_collectors::cupti::decode::DecodeStats) {
    let mut d = Decoder::new(layouts(v), names);
    for b in buffers {
        d.decode_buffer(b);
    }
    let (mut b, stats) = d.finish();
    b.set_origin(T0 as i64);
    (b.finish(), stats)
}

fn gpu_rows(t: &Trace) -> Vec<String> {
    (0..t.gpu.len())
        .map(|i| {
            let r = t.gpu.row(i);
            format!(
                "{:?} {} d{} s{} {}..{} corr{} ext{} bytes{} {:?} {:?}->{:?} grid{:?} block{:?} regs{} smem{}",
                r.kind,
                t.strings.get(r.name),
                r.device,
                r.stream,
                r.start,
                r.end,
                r.correlation,
                r.external_id,
                r.bytes,
                r.copy_kind,
                r.src_mem,
                r.dst_mem,
                r.grid,
                r.block,
                r.registers,
                r.shared_mem
            )
        })
        .collect()
}

fn runtime_rows(t: &Trace) -> Vec<String> {
    (0..t.runtime.len())
        .map(|i| {
            let r = t.runtime.row(i);
            let th = r.thread.0 as usize;
            format!(
                "{:?} {} {}/{} {}..{} corr{} ext{}",
                r.api,
                t.strings.get(r.name),
                t.threads.pid[th],
                t.threads.tid[th],
                r.start,
                r.end,
                r.correlation,
                r.external_id
            )
        })
        .collect()
}

fn expected_gpu() -> Vec<&'static str> {
    vec![
        "Kernel sm90_gemm_kernel d0 s7 20000..120000 corr10 ext77 bytes0 None Unknown->Unknown grid[128, 2, 1] block[256, 1, 1] regs64 smem3072",
        "Sync Stream Sync d0 s7 38000..479000 corr15 ext0 bytes0 None Unknown->Unknown grid[0, 0, 0] block[0, 0, 0] regs0 smem0",
        "Memcpy Memcpy HtoD (Pageable -> Device) d0 s7 121000..400000 corr11 ext0 bytes4194304 HtoD Pageable->Device grid[0, 0, 0] block[0, 0, 0] regs0 smem0",
        "Memcpy Memcpy HtoD (Pinned -> Device) d0 s7 401000..450000 corr12 ext0 bytes1048576 HtoD Pinned->Device grid[0, 0, 0] block[0, 0, 0] regs0 smem0",
        "Memcpy Memcpy DtoH (Device -> Pinned) d0 s7 451000..455000 corr12 ext0 bytes8192 DtoH Device->Pinned grid[0, 0, 0] block[0, 0, 0] regs0 smem0",
        "Memcpy Memcpy PtoP (Device -> Device) d0 s8 460000..470000 corr13 ext0 bytes65536 PtoP Device->Device grid[0, 0, 0] block[0, 0, 0] regs0 smem0",
        "Memset Memset (Device) d0 s7 471000..472000 corr14 ext0 bytes4096 None Device->Device grid[0, 0, 0] block[0, 0, 0] regs0 smem0",
        "Sync Context Sync d0 s-1 481000..490000 corr16 ext0 bytes0 None Unknown->Unknown grid[0, 0, 0] block[0, 0, 0] regs0 smem0",
        "Kernel relu_kernel d0 s9 496000..499000 corr17 ext0 bytes0 None Unknown->Unknown grid[1, 1, 1] block[32, 1, 1] regs16 smem0",
    ]
}

fn expected_runtime() -> Vec<&'static str> {
    vec![
        "Runtime cudaLaunchKernel 4242/4243 10000..15000 corr10 ext77",
        "Runtime cudaMemcpyAsync 4242/4243 16000..30000 corr11 ext0",
        "Runtime cudaMemcpyAsync 4242/4243 31000..33000 corr12 ext0",
        "Runtime cudaMemsetAsync 4242/4243 34000..36000 corr14 ext0",
        "Runtime cudaStreamSynchronize 4242/4243 37000..480000 corr15 ext0",
        "Driver cuLaunchKernel 4242/4244 491000..495000 corr17 ext0",
    ]
}

fn check_sample(v: Ver) {
    let (buf, names) = sample(v);
    let (t, stats) = decode(v, &[&buf.bytes], names);
    assert_eq!(gpu_rows(&t), expected_gpu());
    assert_eq!(runtime_rows(&t), expected_runtime());

    // The NVTX range, on its thread, holds the launch.
    assert_eq!(t.cpu_ops.len(), 1);
    let op = t.cpu_ops.row(0);
    assert_eq!(t.strings.get(op.name), "forward");
    assert_eq!((op.start, op.end), (0, 500_000));
    assert_eq!(format!("{:?}", op.kind), "UserAnnotation");
    assert_eq!(
        (
            t.threads.pid[op.thread.0 as usize],
            t.threads.tid[op.thread.0 as usize]
        ),
        (4242, 4243)
    );

    let markers: Vec<String> = (0..t.markers.len())
        .map(|i| {
            let m = t.markers.row(i);
            format!(
                "{:?} {} {}..{} thread {:?}",
                m.kind,
                t.strings.get(m.name),
                m.start,
                m.end,
                m.thread.map(|t| t.0)
            )
        })
        .collect();
    assert_eq!(
        markers,
        vec![
            format!(
                "ProfilerOverhead CUPTI Overhead: instrumentation 1000..9000 thread {:?}",
                Some(op.thread.0)
            ),
            format!("Instant checkpoint 497000..497000 thread {:?}", Some(op.thread.0)),
        ]
    );

    // Links: the kernel to its launch, the launch to the NVTX range.
    let gemm_launch = t.links.gpu_launch[0].expect("the kernel's launch");
    assert_eq!(
        t.strings.get(t.runtime.name[gemm_launch.index()]),
        "cudaLaunchKernel"
    );
    assert_eq!(t.links.runtime_op[gemm_launch.index()], Some(OpRow::new(0)));
    assert_eq!(t.links.gpu_launch[5], None, "the peer copy has no API record");

    let by_kind: Vec<(&str, u64)> = stats.records.iter().map(|(k, n)| (*k, *n)).collect();
    assert_eq!(
        by_kind,
        vec![
            ("driver", 1),
            ("external_correlation", 1),
            ("kernel", 2),
            ("marker", 3),
            ("memcpy", 3),
            ("memcpy2", 1),
            ("memset", 1),
            ("overhead", 1),
            ("runtime", 5),
            ("stream", 1),
            ("synchronization", 2),
        ]
    );
    assert_eq!(stats.skipped, 1);
    assert_eq!(stats.gpu_without_api, 1);
    assert_eq!(
        stats.unknown_kind + stats.truncated + stats.zero_timestamp + stats.end_before_start,
        0
    );
    assert_eq!(t.diagnostics.counts.get("cupti_skipped_kind"), Some(&1));
    assert_eq!(t.diagnostics.counts.get("cupti_gpu_without_api"), Some(&1));
    assert_eq!(t.meta.format, "cupti");
    assert_eq!(t.meta.origin_ns, T0 as i64);
}

#[test]
fn cupti_12_9_buffer_decodes_to_exact_rows() {
    check_sample(V12);
}

#[test]
fn cupti_13_0_buffer_decodes_to_exact_rows() {
    check_sample(V13);
}

#[test]
fn kernel_records_differ_in_size_between_versions_but_decode_alike() {
    let (b12, _) = sample(V12);
    let (b13, _) = sample(V13);
    assert_eq!(
        b13.bytes.len() - b12.bytes.len(),
        2 * 8,
        "two kernels, 8 bytes longer each"
    );
    let o12: Vec<usize> = RecordIter::new(&b12.bytes, &CUPTI_12_9)
        .map(|r| r.unwrap().0)
        .collect();
    let o13: Vec<usize> = RecordIter::new(&b13.bytes, &CUPTI_13_0)
        .map(|r| r.unwrap().0)
        .collect();
    assert_eq!(o12, b12.offsets);
    assert_eq!(o13, b13.offsets);
    // A 13.0 buffer walked with 12.9's sizes goes wrong at the first kernel:
    // the version must come from the library that wrote it.
    let wrong: Vec<_> = RecordIter::new(&b13.bytes, &CUPTI_12_9).collect();
    assert!(wrong.iter().any(|r| r.is_err()) || wrong.len() != o13.len());
    let (_, names) = sample(V12);
    let r12: Vec<Record> = RecordIter::new(&b12.bytes, &CUPTI_12_9)
        .map(|r| decode_record(r.unwrap().1, &CUPTI_12_9).unwrap())
        .collect();
    let r13: Vec<Record> = RecordIter::new(&b13.bytes, &CUPTI_13_0)
        .map(|r| decode_record(r.unwrap().1, &CUPTI_13_0).unwrap())
        .collect();
    // Identical but for the 13.0-only isDeviceLaunched field.
    assert_eq!(r12.len(), r13.len());
    for (a, b) in r12.iter().zip(&r13) {
        match (a, b) {
            (Record::Kernel(a), Record::Kernel(b)) => {
                assert_eq!(a.is_device_launched, None);
                assert_eq!(b.is_device_launched, Some(false));
                let mut b = b.clone();
                b.is_device_launched = None;
                assert_eq!(a, &b);
            }
            _ => assert_eq!(a, b),
        }
    }
    drop(names);
}

#[test]
fn records_split_across_buffers_are_joined_at_finish() {
    // The kernel comes first, in its own buffer; the external id, the API
    // record and the range's END arrive in a later buffer.
    let mut first = Buffer::default();
    first
        .push(marker(2, T0 + 1, 9, PID, TID, FORWARD))
        .push(kernel(
            V13,
            &Kernel {
                start: T0 + 100,
                end: T0 + 200,
                device: 1,
                context: 4,
                stream: 13,
                grid: [1, 1, 1],
                block: [1, 1, 1],
                registers: 1,
                static_smem: 0,
                dynamic_smem: 0,
                corr: 500,
                name: GEMM,
                graph_node: 1,
                graph: 2,
            },
        ))
        // A second graph node replayed under the same launch.
        .push(kernel(
            V13,
            &Kernel {
                start: T0 + 210,
                end: T0 + 220,
                device: 1,
                context: 4,
                stream: 13,
                grid: [1, 1, 1],
                block: [1, 1, 1],
                registers: 1,
                static_smem: 0,
                dynamic_smem: 0,
                corr: 500,
                name: RELU,
                graph_node: 2,
                graph: 2,
            },
        ));
    let mut second = Buffer::default();
    second
        .push(sync(1, T0 + 60, T0 + 230, 501, 4, 0xFFFF_FFFF, 3))
        .push(external(4, 8, 500))
        .push(external(3, 31, 500))
        .push(api(KIND_DRIVER, 514, T0 + 50, T0 + 55, PID, TID, 500))
        .push(marker(4, T0 + 300, 9, PID, TID, 0));
    let (_, names) = sample(V13);
    let (t, stats) = decode(V13, &[&first.bytes, &second.bytes], names);
    assert_eq!(t.gpu.len(), 3);
    assert_eq!(t.runtime.len(), 1);
    for i in 0..t.gpu.len() {
        assert_eq!(
            t.gpu.device[i], 1,
            "the sync record takes the device of context 4"
        );
    }
    let kernels: Vec<usize> = (0..t.gpu.len()).filter(|&i| t.gpu.is_busy(i)).collect();
    assert_eq!(kernels.len(), 2);
    for &k in &kernels {
        assert_eq!(
            t.links.gpu_launch[k],
            Some(CallRow::new(0)),
            "both graph kernels link to the one launch"
        );
        assert_eq!(t.gpu.external_id[k], 31, "CUSTOM0 wins over CUSTOM1");
    }
    assert_eq!(t.links.runtime_gpu_count[0], 2);
    assert_eq!(t.runtime.external_id[0], 31);
    assert_eq!(
        t.strings.get(t.runtime.name[0]),
        "cuda_driver_cbid_514",
        "unnamed cbids keep their number"
    );
    assert_eq!(
        t.links.runtime_op[0],
        Some(OpRow::new(0)),
        "the launch sits in the NVTX range"
    );
    assert_eq!(t.cpu_ops.len(), 1);
    assert_eq!(stats.gpu_without_api, 0);
    assert_eq!(stats.sync_unknown_device, 0);
}

#[test]
fn bad_timestamps_and_unpaired_markers_are_counted_and_left_out() {
    let mut b = Buffer::default();
    let k = |start, end, corr| Kernel {
        start,
        end,
        device: 0,
        context: 1,
        stream: 7,
        grid: [1, 1, 1],
        block: [1, 1, 1],
        registers: 0,
        static_smem: 0,
        dynamic_smem: 0,
        corr,
        name: GEMM,
        graph_node: 0,
        graph: 0,
    };
    b.push(kernel(V12, &k(0, 0, 1)))
        .push(kernel(V12, &k(T0 + 50, T0 + 10, 2)))
        .push(kernel(V12, &k(T0 + 10, T0 + 50, 3)))
        .push(api(KIND_RUNTIME, 211, 0, T0, PID, TID, 3))
        .push(marker(4, T0 + 5, 77, PID, TID, 0))
        .push(marker(2, T0 + 6, 78, PID, TID, FORWARD))
        .push(memcpy(1, 1, 3, 0, 10, T0 + 60, T0 + 70, (0, 1, 7), 4))
        // Two devices, and a sync on a context neither has: device unknown.
        .push(memcpy(1, 1, 3, 0, 10, T0 + 60, T0 + 70, (1, 2, 7), 5))
        .push(sync(3, T0 + 1, T0 + 2, 6, 99, 7, 0xFFFF_FFFF));
    let (_, names) = sample(V12);
    let (t, stats) = decode(V12, &[&b.bytes], names);
    assert_eq!(t.gpu.len(), 3, "one good kernel, two copies");
    assert_eq!(t.runtime.len(), 0);
    assert_eq!(stats.zero_timestamp, 2);
    assert_eq!(stats.end_before_start, 1);
    assert_eq!(stats.marker_end_without_start, 1);
    assert_eq!(stats.marker_unclosed, 1);
    assert_eq!(stats.sync_unknown_device, 1);
    assert_eq!(stats.gpu_without_api, 3);
    for (k, n) in [
        ("cupti_zero_timestamp", 2),
        ("cupti_end_before_start", 1),
        ("cupti_marker_end_without_start", 1),
        ("cupti_marker_unclosed", 1),
        ("cupti_sync_unknown_device", 1),
    ] {
        assert_eq!(t.diagnostics.counts.get(k), Some(&n), "{k}");
    }
}

#[test]
fn unknown_enum_values_are_kept_as_unknown() {
    let l = CUPTI_13_0;
    let m = decode_record(&memcpy(77, 42, 5, 0, 1, 1, 2, (0, 0, 0), 1).0, &l).unwrap();
    let Record::Memcpy(m) = m else { panic!("{m:?}") };
    assert_eq!(
        (m.direction, m.src, m.dst),
        (
            CopyDirection::Unknown(77),
            MemoryKind::Unknown(42),
            MemoryKind::Managed
        )
    );
    let s = decode_record(&sync(9, 1, 2, 1, 1, 1, 1).0, &l).unwrap();
    assert!(
        matches!(s, Record::Sync(ref s) if s.sync_type == SyncType::Unknown(9)),
        "{s:?}"
    );
    let o = decode_record(&overhead(0x90000, 1, 2, 1, 1).0, &l).unwrap();
    assert!(
        matches!(o, Record::Overhead(ref o) if o.kind == OverheadKind::Unknown(0x90000)),
        "{o:?}"
    );
    let e = decode_record(&external(17, 1, 1).0, &l).unwrap();
    assert!(
        matches!(e, Record::External(ref e) if e.kind == ExternalKind::Other(17)),
        "{e:?}"
    );
    let z = decode_record(&memset(0, 1, 1, 2, (0, 0, 0), 1, 0, 9).0, &l).unwrap();
    assert!(
        matches!(z, Record::Memset(ref z) if z.memory == MemoryKind::Unknown(9) && !z.is_async),
        "{z:?}"
    );
    // A marker whose flags combine bits is neither START nor END: an instant.
    let mut b = Buffer::default();
    b.push(marker(1 | 8, T0, 3, PID, TID, CHECKPOINT));
    let (t, _) = decode(V13, &[&b.bytes], sample(V13).1);
    assert_eq!(t.markers.len(), 1);
}

#[test]
fn truncated_and_unknown_records_stop_the_walk_and_are_counted() {
    let (buf, names) = sample(V13);
    // Cut inside the fourth record: three records survive.
    let cut = buf.offsets[3] + 100;
    let items: Vec<_> = RecordIter::new(&buf.bytes[..cut], &CUPTI_13_0).collect();
    assert_eq!(items.len(), 4);
    assert_eq!(
        items[3],
        Err(WalkError::Truncated {
            offset: buf.offsets[3],
            kind: 10,
            need: 216,
            have: 100
        })
    );
    let mut d = Decoder::new(CUPTI_13_0, names.clone());
    d.decode_buffer(&buf.bytes[..cut]);
    assert_eq!(d.stats().truncated, 1);
    assert_eq!(d.stats().records.values().sum::<u64>(), 3);

    // An unknown kind in the middle: what follows cannot be found.
    let mut b = Buffer::default();
    b.push(external(3, 1, 1))
        .push(Rec::new(9999, 24))
        .push(external(3, 2, 2));
    let items: Vec<_> = RecordIter::new(&b.bytes, &CUPTI_13_0).collect();
    assert_eq!(items.len(), 2);
    assert_eq!(
        items[1],
        Err(WalkError::UnknownKind {
            offset: 24,
            kind: 9999
        })
    );
    let mut d = Decoder::new(CUPTI_13_0, names.clone());
    d.decode_buffer(&b.bytes);
    assert_eq!(d.stats().unknown_kind, 1);
    // Kind 0 (what a zeroed buffer holds) is unknown too.
    assert_eq!(
        RecordIter::new(&[0u8; 64], &CUPTI_13_0).next(),
        Some(Err(WalkError::UnknownKind { offset: 0, kind: 0 }))
    );
    // Fewer than 4 bytes left.
    let mut tail = external(3, 1, 1).0;
    tail.extend_from_slice(&[1, 2]);
    let items: Vec<_> = RecordIter::new(&tail, &CUPTI_13_0).collect();
    assert!(matches!(
        items[1],
        Err(WalkError::Truncated {
            kind: 0,
            need: 4,
            have: 2,
            ..
        })
    ));

    // Single records (as CUPTI's iterator delimits them) shorter than their
    // layout are refused, whatever the cut.
    for off in &buf.offsets {
        let end = buf
            .offsets
            .iter()
            .find(|&&o| o > *off)
            .copied()
            .unwrap_or(buf.bytes.len());
        let rec = &buf.bytes[*off..end];
        assert!(decode_record(rec, &CUPTI_13_0).is_ok());
        for cut in 0..rec.len() {
            match decode_record(&rec[..cut], &CUPTI_13_0) {
                Err(DecodeError::NoKind(_)) => assert!(cut < 4),
                Err(DecodeError::Truncated { need, have, .. }) => assert!(need > have && have == cut),
                // Skipped kinds read nothing past the kind; decoded kinds
                // whose last read field ends before the cut are fine too.
                Ok(_) => {}
                Err(e) => panic!("{e}"),
            }
        }
    }
}

/// xorshift64*: deterministic noise without a dependency.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

#[test]
fn random_and_corrupted_buffers_never_panic() {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let (b12, n12) = sample(V12);
    let (b13, n13) = sample(V13);
    let kinds = [
        1u32, 2, 3, 4, 5, 9, 10, 11, 12, 13, 17, 22, 36, 37, 38, 39, 48, 51, 0, 7, 9999,
    ];
    for round in 0..3000 {
        let (v, base, names) = if round % 2 == 0 {
            (V12, &b12, &n12)
        } else {
            (V13, &b13, &n13)
        };
        let mut bytes = base.bytes.clone();
        match round % 3 {
            // Flip random bytes.
            0 => {
                for _ in 0..rng.below(16) + 1 {
                    let i = rng.below(bytes.len() as u64) as usize;
                    bytes[i] = rng.next() as u8;
                }
            }
            // Pure noise with plausible kinds at 8-byte slots.
            1 => {
                bytes = (0..rng.below(2048)).map(|_| rng.next() as u8).collect();
                let mut i = 0;
                while i + 4 <= bytes.len() {
                    if rng.below(3) == 0 {
                        let k = kinds[rng.below(kinds.len() as u64) as usize];
                        bytes[i..i + 4].copy_from_slice(&k.to_le_bytes());
                    }
                    i += 8;
                }
            }
            // Random truncation.
            _ => bytes.truncate(rng.below(bytes.len() as u64 + 1) as usize),
        }
        let mut d = Decoder::new(layouts(v), names.clone());
        d.decode_buffer(&bytes);
        // And as CUPTI-delimited records of random lengths.
        let mut pos = 0;
        while pos < bytes.len() {
            let len = (rng.below(240) as usize + 1).min(bytes.len() - pos);
            d.decode_one(&bytes[pos..pos + len]);
            pos += len;
        }
        let (b, _) = d.finish();
        let t = b.finish();
        for i in 0..t.gpu.len() {
            assert!(t.gpu.end[i] >= t.gpu.start[i]);
        }
    }
}

/// Decode speed (run with `--ignored --nocapture`, ideally `--release`):
/// ~64 MB of the sample records, as a collector's buffers would hold them.
#[test]
#[ignore = "a measurement, not a check"]
fn decode_speed() {
    let (buf, names) = sample(V13);
    let copies = (64 << 20) / buf.bytes.len();
    let records = copies * buf.offsets.len();
    let big: Vec<u8> = buf.bytes.repeat(copies);
    let t = std::time::Instant::now();
    let mut d = Decoder::new(CUPTI_13_0, names);
    for chunk in big.chunks(buf.bytes.len() * 1000) {
        d.decode_buffer(chunk);
    }
    let decode = t.elapsed();
    let (b, _) = d.finish();
    let joined = t.elapsed();
    let trace = b.finish();
    let total = t.elapsed();
    println!(
        "{} MB, {records} records: decode {:.0} ms ({:.1} M records/s), +finish {:.0} ms, +trace {:.0} ms; {} GPU rows",
        big.len() >> 20,
        decode.as_secs_f64() * 1e3,
        records as f64 / decode.as_secs_f64() / 1e6,
        (joined - decode).as_secs_f64() * 1e3,
        (total - joined).as_secs_f64() * 1e3,
        trace.gpu.len()
    );
}

#[test]
fn emit_nvtx_ranges_become_steps_and_operators_named_as_in_pytorch_profiler_traces() {
    // PyTorch under `emit_nvtx()` with a user's ProfilerStep range around
    // the step: the kernel's launch sits in the operator's range, which sits
    // in the step's.
    const STEP: u64 = 0x7f00_0000_5000;
    const LINEAR: u64 = 0x7f00_0000_6000;
    const LOADER: u64 = 0x7f00_0000_7000;
    let mut b = Buffer::default();
    b.push(marker(2, T0, 1, PID, TID, STEP))
        .push(marker(2, T0 + 5, 2, PID, TID, LOADER))
        .push(marker(4, T0 + 8, 2, PID, TID, 0))
        .push(marker(2, T0 + 10, 3, PID, TID, LINEAR))
        .push(api(KIND_RUNTIME, 211, T0 + 50, T0 + 55, PID, TID, 700))
        .push(kernel(
            V13,
            &Kernel {
                start: T0 + 100,
                end: T0 + 200,
                device: 0,
                context: 1,
                stream: 7,
                grid: [1, 1, 1],
                block: [1, 1, 1],
                registers: 1,
                static_smem: 0,
                dynamic_smem: 0,
                corr: 700,
                name: GEMM,
                graph_node: 0,
                graph: 0,
            },
        ))
        .push(marker(4, T0 + 500, 3, PID, TID, 0))
        .push(marker(4, T0 + 1000, 1, PID, TID, 0));
    let (_, mut names) = sample(V13);
    names.strings.insert(STEP, "ProfilerStep#4".to_string());
    names.strings.insert(
        LINEAR,
        "aten::linear, seq = 3, op_id = 9, sizes = [[8, 16], [4, 16], [4]]".to_string(),
    );
    names.strings.insert(
        LOADER,
        "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__, op_id = 2".to_string(),
    );
    let (t, _) = decode(V13, &[&b.bytes], names);
    let ops: Vec<(String, String)> = (0..t.cpu_ops.len())
        .map(|i| {
            let op = t.cpu_ops.row(i);
            (t.strings.get(op.name).to_string(), format!("{:?}", op.kind))
        })
        .collect();
    for want in [
        ("ProfilerStep#4", "ProfilerStep"),
        ("aten::linear", "Operator"),
        (
            "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__",
            "UserAnnotation",
        ),
    ] {
        assert!(
            ops.contains(&(want.0.to_string(), want.1.to_string())),
            "{want:?} not in {ops:?}"
        );
    }
    assert_eq!(ops.len(), 3);
    let linear = (0..t.cpu_ops.len())
        .find(|&i| t.strings.get(t.cpu_ops.name[i]) == "aten::linear")
        .unwrap();
    assert_eq!(
        t.links.runtime_op[0],
        Some(OpRow::new(linear)),
        "the launch belongs to the innermost range around it, the operator"
    );
}

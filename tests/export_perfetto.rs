//! `gapscope export` on every shared trace, checked by the real Perfetto
//! trace processor: what it loads must be exactly what the exporter says it
//! wrote (`--stats-json`). The default output is compressed chunks of
//! packets; each chunk must inflate to exactly the packets of the plain
//! (`--no-compress`) file. Counts are the only signal for flows dropped by a
//! packed field, for dropped packets and for a truncated file; the full
//! `stats` table is the only signal for interning mistakes.

mod common;
use common::*;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// Every Kineto trace under `../shared/traces`, sorted.
fn shared_traces() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(dir).expect("read shared traces") {
            let p = e.expect("dir entry").path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.to_string_lossy().ends_with(".json") || p.to_string_lossy().ends_with(".json.gz") {
                out.push(p);
            }
        }
    }
    let root = shared_trace("");
    let mut out = Vec::new();
    walk(&root, &mut out);
    out.sort();
    out
}

/// Stats that must stay zero; the trace processor reports these as `info`,
/// `error` or `data_loss`. Only timing stats and the clock cache miss are
/// fine.
const BAD_STATS: &str = "select name, idx, severity, value from stats where value > 0 \
     and name not like '%duration_ns' and name != 'clock_sync_cache_miss'";

const QUERIES: &[&str] = &[
    "select count(*) as n from slice",
    "select count(*) as n from flow",
    "select count(*) as n from counter",
    "select count(*) as n from track",
    "select count(distinct track_id) as n from slice",
    "select count(distinct track_id) as n from counter",
    "select count(*) as n from slice where dur < 0",
    "select count(*) as n from slice where name is null",
    BAD_STATS,
    // Every flow runs from a CPU runtime call to the GPU row it caused (work,
    // or the sync record of a synchronizing call) and no earlier than it.
    "select count(*) as n from flow f join slice so on f.slice_out = so.id \
     join slice si on f.slice_in = si.id \
     where so.category not in ('cuda_runtime', 'cuda_driver') \
     or si.category not in ('kernel', 'gpu_memcpy', 'gpu_memset', 'cuda_sync') or si.ts < so.ts",
    // A child never outlives its parent: overlaps were not reshaped.
    "select count(*) as n from slice s join slice p on s.parent_id = p.id \
     where s.ts < p.ts or s.ts + s.dur > p.ts + p.dur",
];

fn n(rows: &[Value]) -> u64 {
    rows[0]["n"].as_u64().expect("a count")
}

fn check_trace(trace: &Path, dir: &TempDir, k: usize) {
    let out = dir.path().join(format!("{k}.pftrace"));
    let stats = dir.path().join(format!("{k}.stats.json"));
    gapscope([
        "export".as_ref(),
        trace.as_os_str(),
        "-q".as_ref(),
        "-o".as_ref(),
        out.as_os_str(),
        "--stats-json".as_ref(),
        stats.as_os_str(),
    ])
    .expect_code(0);
    let wrote: Value =
        serde_json::from_slice(&std::fs::read(&stats).expect("stats written")).expect("stats JSON");
    let w = |k: &str| {
        wrote[k]
            .as_u64()
            .unwrap_or_else(|| panic!("{k} missing in {wrote}"))
    };
    assert_eq!(
        std::fs::metadata(&out).unwrap().len(),
        w("bytes"),
        "{}",
        trace.display()
    );
    assert!(w("slices") > 0, "{}: nothing exported", trace.display());
    assert!(w("compressed_chunks") >= 1, "{}: not compressed", trace.display());
    assert!(w("bytes") < w("packet_bytes"), "{}: {wrote}", trace.display());

    let r = perfetto_query(&out, QUERIES);
    let t = trace.display();
    assert_eq!(n(&r[0]), w("slices"), "{t}: slices");
    assert_eq!(n(&r[1]), w("flows"), "{t}: flows");
    assert_eq!(n(&r[2]), w("counter_samples"), "{t}: counter samples");
    assert_eq!(n(&r[3]), w("tracks"), "{t}: tracks");
    assert_eq!(n(&r[4]), w("slice_tracks"), "{t}: tracks with slices");
    assert_eq!(n(&r[5]), w("counter_tracks"), "{t}: counter tracks with samples");
    assert_eq!(n(&r[6]), 0, "{t}: slices with dur < 0");
    assert_eq!(n(&r[7]), 0, "{t}: slices without a name (interning failure)");
    assert!(r[8].is_empty(), "{t}: stats {:?}", r[8]);
    assert_eq!(n(&r[9]), 0, "{t}: flows not launch -> GPU work");
    assert_eq!(n(&r[10]), 0, "{t}: children outside their parents");
}

/// The packets of a `.pftrace`, framed as in a plain file, with each
/// `compressed_packets` chunk (TracePacket field 50, zlib) inflated in its
/// place. Panics on a chunk of 512 KiB or more (Perfetto's limit) or a
/// chunk packet with other fields.
fn inflated_packets(mut file: &[u8]) -> (Vec<u8>, usize) {
    use std::io::Read;
    fn varint(b: &mut &[u8]) -> usize {
        let (mut v, mut shift) = (0usize, 0);
        loop {
            let byte = b[0];
            *b = &b[1..];
            v |= ((byte & 0x7F) as usize) << shift;
            if byte < 0x80 {
                return v;
            }
            shift += 7;
        }
    }
    let (mut out, mut chunks) = (Vec::new(), 0);
    while !file.is_empty() {
        let whole = file;
        assert_eq!(file[0], 0x0A, "a Trace.packet field");
        file = &file[1..];
        let len = varint(&mut file);
        let framed = &whole[..whole.len() - file.len() + len];
        let mut body = &file[..len];
        file = &file[len..];
        if body.starts_with(&[0x92, 0x03]) {
            body = &body[2..];
            let n = varint(&mut body);
            assert_eq!(n, body.len(), "the chunk is the packet's only field");
            assert!(framed.len() < 512 << 10, "chunk of {} bytes", framed.len());
            flate2::read::ZlibDecoder::new(body)
                .read_to_end(&mut out)
                .expect("chunk inflates");
            chunks += 1;
        } else {
            out.extend_from_slice(framed);
        }
    }
    (out, chunks)
}

/// Compressed and plain exports of every shared trace carry the same
/// packets, byte for byte: the trace processor checks above, made on the
/// compressed files, hold for the plain ones too.
#[test]
fn compressed_export_inflates_to_the_plain_one() {
    let dir = TempDir::new("export-compressed-vs-plain");
    for (k, trace) in shared_traces().iter().enumerate() {
        let out = |name: &str, plain: bool| {
            let p = dir.path().join(format!("{k}.{name}"));
            let mut a: Vec<&std::ffi::OsStr> = vec!["export".as_ref(), trace.as_os_str(), "-q".as_ref()];
            if plain {
                a.push("--no-compress".as_ref());
            }
            a.extend(["-o".as_ref(), p.as_os_str()]);
            gapscope(a).expect_code(0);
            std::fs::read(&p).unwrap()
        };
        let (z, plain) = (out("z.pftrace", false), out("plain.pftrace", true));
        let (inflated, chunks) = inflated_packets(&z);
        assert!(chunks >= 1, "{}: no chunk", trace.display());
        assert!(
            inflated == plain,
            "{}: inflated {} bytes, plain {}",
            trace.display(),
            inflated.len(),
            plain.len()
        );
        assert!(z.len() < plain.len(), "{}", trace.display());
    }
}

#[test]
fn every_shared_trace_loads_exactly_as_written() {
    let traces = shared_traces();
    assert!(traces.len() >= 18, "shared traces found: {traces:?}");
    let dir = TempDir::new("export-shared");
    // Two workers: each trace processor run is single-threaded and CI has
    // two cores.
    let next = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| loop {
                let k = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some(t) = traces.get(k) else { break };
                check_trace(t, &dir, k);
            });
        }
    });
}

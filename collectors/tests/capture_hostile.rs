//! Hostile captures, table-driven: each damaged file with the message the
//! reader must give. Never a panic, never a huge allocation from a length
//! field, and every single-bit flip of a capture is caught.
//!
//! The files are made by taking a real capture apart with a framing reader
//! written here from docs/capture-format.md (not the crate's own), changing
//! one thing, and putting it back together with valid checksums, so each
//! case reaches the check it is meant for.

use flate2::Crc;
use gapscope_collectors::capture::{self, CaptureError};
use gapscope_collectors::kineto::{import_bytes, ImportOptions};
use gapscope_collectors::trace::*;
use std::io::Read;
use std::time::{Duration, Instant};

const DEMO: &[u8] = include_bytes!("../../fixtures/demo/demo.pt.trace.json.gz");

/// One section: its tag and decoded payload.
#[derive(Clone)]
struct Sec {
    tag: [u8; 4],
    payload: Vec<u8>,
}

/// The file header and the sections, and where each section starts.
fn parse(bytes: &[u8]) -> ([u8; 16], Vec<Sec>, Vec<usize>) {
    let mut head = [0u8; 16];
    head.copy_from_slice(&bytes[..16]);
    let (mut secs, mut starts) = (Vec::new(), Vec::new());
    let mut pos = 16;
    while pos < bytes.len() {
        starts.push(pos);
        let h = &bytes[pos..pos + 32];
        let stored_len = u64::from_le_bytes(h[16..24].try_into().unwrap()) as usize;
        let stored = &bytes[pos + 32..pos + 32 + stored_len];
        let payload = match h[4] {
            0 => stored.to_vec(),
            1 => {
                let mut out = Vec::new();
                flate2::read::ZlibDecoder::new(stored)
                    .read_to_end(&mut out)
                    .unwrap();
                out
            }
            c => panic!("codec {c}"),
        };
        secs.push(Sec {
            tag: h[0..4].try_into().unwrap(),
            payload,
        });
        pos += 32 + stored_len;
    }
    (head, secs, starts)
}

/// Section header fields, each overridable, with both checksums computed.
#[derive(Clone, Copy, Default)]
struct Frame {
    codec: u8,
    reserved: u8,
    raw_len: Option<u64>,
    stored_len: Option<u64>,
}

fn frame(tag: [u8; 4], payload: &[u8], f: Frame) -> Vec<u8> {
    let mut h = Vec::new();
    h.extend_from_slice(&tag);
    h.extend_from_slice(&[f.codec, f.reserved, 0, 0]);
    h.extend_from_slice(&f.raw_len.unwrap_or(payload.len() as u64).to_le_bytes());
    h.extend_from_slice(&f.stored_len.unwrap_or(payload.len() as u64).to_le_bytes());
    let mut c = Crc::new();
    c.update(payload);
    h.extend_from_slice(&c.sum().to_le_bytes());
    let mut c = Crc::new();
    c.update(&h);
    h.extend_from_slice(&c.sum().to_le_bytes());
    h.extend_from_slice(payload);
    h
}

/// A file from a header and sections, all stored (codec 0).
fn assemble(head: &[u8; 16], secs: &[Sec]) -> Vec<u8> {
    let mut out = head.to_vec();
    for s in secs {
        out.extend(frame(s.tag, &s.payload, Frame::default()));
    }
    out
}

fn demo() -> Vec<u8> {
    let t = import_bytes(DEMO, "demo", &ImportOptions::default()).unwrap();
    let mut bytes = Vec::new();
    capture::write(&t, &mut bytes).unwrap();
    bytes
}

/// A small trace: two threads, one kernel, one launch, one op, one marker.
fn small() -> Vec<u8> {
    let mut b = TraceBuilder::new();
    let t = b.thread(1, 1);
    b.thread(1, 2);
    let op = b.intern("aten::mm");
    let launch = b.intern("cudaLaunchKernel");
    let k = b.intern("gemm");
    b.push_cpu_op(CpuOp::new(t, 100, 900, op, CpuOpKind::Operator));
    b.push_runtime(RuntimeCall::new(t, 200, 300, launch, 7));
    b.push_gpu(GpuActivity::kernel(0, 7, 400, 600, k, 7));
    b.push_marker(Marker::new(MarkerKind::Instant, 150, 150, op));
    let mut bytes = Vec::new();
    capture::write(&b.finish(), &mut bytes).unwrap();
    bytes
}

fn index(secs: &[Sec], tag: &[u8; 4]) -> usize {
    secs.iter().position(|s| &s.tag == tag).unwrap()
}

/// The small capture with one section's decoded payload changed by `f`.
fn edit(tag: &[u8; 4], f: impl FnOnce(&mut Vec<u8>)) -> Vec<u8> {
    let (head, mut secs, _) = parse(&small());
    let i = index(&secs, tag);
    f(&mut secs[i].payload);
    assemble(&head, &secs)
}

/// The small capture with one section's frame replaced.
fn reframe(tag: &[u8; 4], f: Frame) -> Vec<u8> {
    let (head, secs, _) = parse(&small());
    let mut out = head.to_vec();
    for s in &secs {
        let fr = if &s.tag == tag { f } else { Frame::default() };
        out.extend(frame(s.tag, &s.payload, fr));
    }
    out
}

/// Reads `bytes` as `x.gst` under `catch_unwind` and a deadline.
fn read(bytes: &[u8]) -> Result<Trace, CaptureError> {
    let start = Instant::now();
    let r = std::panic::catch_unwind(|| capture::read_bytes(bytes, "x.gst"))
        .unwrap_or_else(|_| panic!("the reader panicked on {} bytes", bytes.len()));
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "the reader took {:?}",
        start.elapsed()
    );
    r
}

fn expect_err(case: &str, bytes: &[u8], want: &str) {
    match read(bytes) {
        Ok(_) => panic!("{case}: read without an error"),
        Err(e) => {
            let msg = e.to_string();
            assert!(msg.starts_with("x.gst: "), "{case}: {msg}");
            assert!(!msg.contains('\n'), "{case}: more than one line: {msg}");
            assert!(msg.contains(want), "{case}: wanted {want:?} in:\n  {msg}");
        }
    }
}

/// Payload offsets in the small capture's GPUA section (1 row): the row
/// count, then device u32, stream i64, start u64, end u64, kind u8, name u32.
const GPU_KIND: usize = 4 + 4 + 8 + 8 + 8;
const GPU_NAME: usize = GPU_KIND + 1;

#[test]
fn damaged_captures_give_one_clear_line() {
    let good = small();
    assert!(read(&good).is_ok());
    let (head, secs, _) = parse(&good);
    let mut v4 = good.clone();
    v4[8] = 4;
    let mut v0 = good.clone();
    v0[8] = 0;
    let mut flags = good.clone();
    flags[12] = 1;
    let mut swapped = secs.clone();
    swapped.swap(index(&secs, b"THRD"), index(&secs, b"DEVS"));
    let mut unknown = secs.clone();
    unknown[index(&secs, b"DIAG")].tag = *b"XTRA";
    let mut trailing = good.clone();
    trailing.extend_from_slice(b"junk");
    let mut no_end = secs.clone();
    no_end.pop();
    let dup_string = |p: &mut Vec<u8>| {
        // Strings are "", "aten::mm", ...: make the second empty too, by
        // giving it length 0 and dropping its bytes.
        let n = u32::from_le_bytes(p[0..4].try_into().unwrap()) as usize;
        let lens_at = 4;
        let len1 = p[lens_at + 1] as usize; // plane 0 of length 1
        p[lens_at + 1] = 0;
        let bytes_at = 4 + 4 * n;
        p.drain(bytes_at..bytes_at + len1);
    };

    #[rustfmt::skip]
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        ("empty", Vec::new(), "not a gapscope capture"),
        ("json", b"{\"traceEvents\": []}".to_vec(), "not a gapscope capture"),
        ("bad magic", [b"\x89GSX".as_slice(), &good[4..]].concat(), "not a gapscope capture"),
        ("cut in the magic", good[..3].to_vec(), "truncated at byte 3, in the file header (the recording process was probably killed); re-record"),
        ("cut in the version", good[..10].to_vec(), "truncated at byte 10, in the file header"),
        ("newer version", v4, "capture format version 4 is newer than this gapscope reads (3); upgrade gapscope"),
        ("version 0", v0, "format version 0 does not exist"),
        ("flags", flags, "unknown flags 0x1"),
        ("sections swapped", assemble(&head, &swapped), "found section tag \"DEVS\" where THRD belongs"),
        ("unknown section", assemble(&head, &unknown), "found section tag \"XTRA\" where DIAG belongs"),
        ("no end marker", assemble(&head, &no_end), "truncated at byte"),
        ("data after the end", trailing, "4 bytes follow the end marker"),
        ("string id out of range", edit(b"GPUA", |p| p[GPU_NAME + 3] = 0x7f), "GPU activity name of row 0 is string id 2130706435 but the string table has 4 strings"),
        ("thread out of range", edit(b"RTCL", |p| p[4] = 9), "runtime call thread of row 0 is thread 9 but the thread table has 2 threads"),
        ("unknown enum tag", edit(b"GPUA", |p| p[GPU_KIND] = 9), "GPU activity kind of row 0 has unknown tag 9"),
        // GPUA ends with the row's occupancy (u32) and collective link (u32).
        ("occupancy not a percent", edit(b"GPUA", |p| { let at = p.len() - 8; p[at..at + 4].copy_from_slice(&150f32.to_bits().to_le_bytes()) }), "GPU activity occupancy of row 0 is 150, not a percent from 0 to 100"),
        ("occupancy NaN", edit(b"GPUA", |p| { let at = p.len() - 8; p[at..at + 4].copy_from_slice(&f32::NAN.to_bits().to_le_bytes()) }), "GPU activity occupancy of row 0 is NaN, not a percent"),
        ("unknown marker kind", edit(b"MARK", |p| p[4] = 200), "marker kind of row 0 has unknown tag 200"),
        // MARK: row count, kind u8, then the thread u32 (`u32::MAX`: none).
        ("marker thread out of range", edit(b"MARK", |p| p[5..9].copy_from_slice(&9u32.to_le_bytes())), "marker thread of row 0 is thread 9 but the thread table has 2 threads"),
        // The GPU row's collective link (the last column, one row) points
        // past the empty collective table.
        ("collective out of range", edit(b"GPUA", |p| { let at = p.len() - 4; p[at] = 5; }), "GPU activity collective of row 0 is collective 4 but the collective table has 0 rows"),
        ("unknown seq presence", edit(b"COLL", |p| { p[0] = 1; p.extend([0u8; 4 * 5 + 1 + 8]); p[4 + 4 * 5] = 2; }), "collective seq presence of row 0 has unknown tag 2"),
        // Row 0's duration, zigzagged: 9 is -5.
        ("end before start", edit(b"RTCL", |p| { for j in 0..8 { p[4 + 4 + 8 + j] = [9, 0, 0, 0, 0, 0, 0, 0][j]; } }), "runtime call row 0 ends before it starts"),
        ("time out of range", edit(b"CPUO", |p| p[4 + 4 + 7] = 0xff), "CPU op row 0 has a time out of range"),
        ("huge row count", edit(b"GPUA", |p| p[0..4].copy_from_slice(&u32::MAX.to_le_bytes())), "GPU activity device needs 17179869180 bytes at payload byte 4, only"),
        ("huge string count", edit(b"STRS", |p| p[0..4].copy_from_slice(&u32::MAX.to_le_bytes())), "string lengths needs 17179869180 bytes"),
        ("huge string length", edit(b"META", |p| { let at = 8 + 9 + 9; p[at..at + 4].copy_from_slice(&u32::MAX.to_le_bytes()); }), "source needs 4294967295 bytes"),
        ("duplicate string", edit(b"STRS", dup_string), "strings 0 and 1 are the same (\"\")"),
        ("first string not empty", edit(b"STRS", |p| { let n = u32::from_le_bytes(p[0..4].try_into().unwrap()) as usize; p[4] = 1; p.insert(4 + 4 * n, b'x'); }), "the first string is not the empty string"),
        ("bad UTF-8", edit(b"STRS", |p| { let n = u32::from_le_bytes(p[0..4].try_into().unwrap()) as usize; p[4 + 4 * n] = 0xff; }), "string 1 is not UTF-8"),
        ("duplicate thread", edit(b"THRD", |p| { p[4 + 16 + 1] = 1; }), "thread table rows 0 and 1 are both"),
        ("bad presence byte", edit(b"META", |p| p[8] = 2), "rank: presence byte 2 is neither 0 nor 1"),
        ("left over bytes", edit(b"DEVS", |p| p.push(0)), "1 bytes are left over after the last field"),
        ("short payload", edit(b"MARK", |p| { p.pop(); }), "marker value needs 8 bytes"),
        ("huge raw length", reframe(b"GPUA", Frame { codec: 1, raw_len: Some(u64::MAX), ..Frame::default() }), "claim to inflate to 18446744073709551615, more than zlib can"),
        ("stored length over the file", reframe(b"CPUO", Frame { stored_len: Some(1 << 40), ..Frame::default() }), "truncated at byte"),
        ("stored length disagrees", reframe(b"CPUO", Frame { raw_len: Some(3), ..Frame::default() }), "claims 3 decoded bytes"),
        ("not zlib", reframe(b"CPUO", Frame { codec: 1, raw_len: Some(10), ..Frame::default() }), "the zlib data does not inflate"),
        ("unknown codec", reframe(b"CPUO", Frame { codec: 7, ..Frame::default() }), "unknown codec 7"),
        ("reserved byte", reframe(b"CPUO", Frame { reserved: 1, ..Frame::default() }), "reserved header bytes are not zero"),
    ];
    for (case, bytes, want) in &cases {
        expect_err(case, bytes, want);
    }
    assert_eq!(cases.len(), 39);
}

/// A marker's absent thread and device are `u32::MAX` on disk
/// (docs/capture-format.md) and `None` in memory; a thread the thread table
/// lacks is refused by the writer, `u32::MAX` included (it would read back
/// as no thread).
#[test]
fn marker_thread_and_device_none_is_u32_max_on_disk() {
    let (_, secs, _) = parse(&small());
    let p = &secs[index(&secs, b"MARK")].payload;
    // Row count 1, kind, thread u32, device u32.
    assert_eq!(&p[0..4], &1u32.to_le_bytes());
    assert_eq!(&p[5..9], &u32::MAX.to_le_bytes());
    assert_eq!(&p[9..13], &u32::MAX.to_le_bytes());
    let t = read(&small()).unwrap();
    assert_eq!((t.markers.thread[0], t.markers.device[0]), (None, None));

    for bad in [2, u32::MAX] {
        let mut b = TraceBuilder::new();
        b.thread(1, 1);
        b.thread(1, 2);
        let mut m = Marker::new(MarkerKind::Instant, 0, 0, Strings::EMPTY);
        m.thread = Some(ThreadId(bad));
        b.push_marker(m);
        let e = capture::write(&b.finish(), &mut Vec::new())
            .unwrap_err()
            .to_string();
        let want = format!("marker thread of row 0 is thread {bad} but the thread table has 2 threads");
        assert!(e.contains(&want), "{e}");
    }
}

#[test]
fn a_capture_cut_at_any_section_boundary_or_inside_a_section_says_truncated() {
    let good = demo();
    let (_, secs, starts) = parse(&good);
    assert_eq!(secs.len(), 11);
    let names = [
        "META", "STRS", "THRD", "DEVS", "COLL", "GPUA", "RTCL", "CPUO", "MARK", "DIAG", "ENDS",
    ];
    for (i, &at) in starts.iter().enumerate() {
        // At the boundary, inside the header, and inside the payload.
        let next = starts.get(i + 1).copied().unwrap_or(good.len());
        for cut in [at, at + 7, at + 32 + (next - at - 32) / 2] {
            if cut >= next && cut != at {
                continue;
            }
            let want = format!("x.gst: truncated at byte {cut}, in section {}, the ", names[i]);
            expect_err(&format!("cut at {cut} in {}", names[i]), &good[..cut], &want);
        }
    }
    assert!(read(&good).is_ok());
}

#[test]
fn every_single_bit_flip_is_caught() {
    let good = small();
    let mut caught = 0;
    for byte in 0..good.len() {
        for bit in 0..8 {
            let mut b = good.clone();
            b[byte] ^= 1 << bit;
            assert!(
                read(&b).is_err(),
                "flipping bit {bit} of byte {byte} went unnoticed"
            );
            caught += 1;
        }
    }
    assert_eq!(caught, good.len() * 8);
}

#[test]
fn random_damage_never_panics() {
    // xorshift: reproducible.
    let mut s = 0x2545_F491_4F6C_DD1Du64;
    let mut next = move || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        s
    };
    let base = demo();
    let (head, secs, _) = parse(&base);
    for _ in 0..300 {
        // Damage inside a decoded payload, re-framed with valid checksums,
        // so the damage reaches the column checks.
        let mut secs = secs.clone();
        let i = (next() % secs.len() as u64) as usize;
        let p = &mut secs[i].payload;
        for _ in 0..1 + next() % 4 {
            if p.is_empty() {
                break;
            }
            let at = (next() % p.len() as u64) as usize;
            match next() % 3 {
                0 => p[at] ^= 1 << (next() % 8),
                1 => p[at] = [0, 0xff, 0x7f, 0x80][(next() % 4) as usize],
                _ => p.truncate(at),
            }
        }
        let _ = read(&assemble(&head, &secs));
    }
}

#[test]
fn read_file_names_the_file_and_a_missing_file_is_an_io_error() {
    let dir = std::env::temp_dir().join(format!("gapscope-capture-hostile-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join("cut.gst");
    std::fs::write(&p, &small()[..40]).unwrap();
    let e = capture::read_file(&p).unwrap_err().to_string();
    assert!(
        e.starts_with(&format!("{}: truncated at byte 40, in section META", p.display())),
        "{e}"
    );
    let e = capture::read_file(&dir.join("missing.gst"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("missing.gst: cannot read the file"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}

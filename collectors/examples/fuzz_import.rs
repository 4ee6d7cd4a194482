//! A mutation fuzzer on the stable toolchain (no cargo-fuzz, no libFuzzer):
//! the Kineto importer (`kineto::import_bytes_partial`, plain and gzip), the
//! CUPTI record decoder (`RecordIter` and `Decoder::decode_buffer`) and the
//! capture reader (`capture::read_bytes`).
//!
//! ```text
//! cargo run --release -p gapscope-collectors --example fuzz_import -- \
//!     --seconds 60 --target kineto --seeds ../shared/traces --seeds fixtures --crashes fuzz/crashes
//! ```
//!
//! Seeds are small traces cut from every `.json`/`.json.gz` under the seed
//! folders (a header and a few consecutive events). Each input is a seed with
//! 1-8 mutations: bit flips, interesting bytes, deletions, duplications,
//! splices from other seeds, truncations, number and string swaps, deep
//! nesting, gzip of the result (sometimes then corrupted). Every input runs
//! under `catch_unwind`; one that panics, or takes over a second, is saved in
//! the crash folder and counted. `bench/fuzz.sh` runs this for a set time.
//!
//! The `capture` target's seeds are those small traces imported and written
//! as captures. Half its inputs are a seed with byte mutations (which the
//! checksums mostly catch); the other half have one section's decoded
//! payload mutated, or its header's lengths changed, and are framed again
//! with valid checksums, so the damage reaches the column checks. A capture
//! that reads must also write and read back the same.

use gapscope_collectors::capture;
use gapscope_collectors::cupti::decode::{decode_record, Decoder, Layouts, MapResolver, RecordIter};
use gapscope_collectors::kineto::{import_bytes_partial, ImportOptions, ReadLimits};
use gapscope_collectors::trace::OpRow;
use std::io::{Read, Write};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// xorshift64*: small, seedable, good enough to pick mutations.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }
    fn pick<'a, T>(&mut self, v: &'a [T]) -> &'a T {
        &v[self.below(v.len())]
    }
}

const NUMBERS: &[&str] = &[
    "0",
    "-0",
    "-1",
    "1e309",
    "-1e309",
    "1e-400",
    "9223372036854775807",
    "-9223372036854775808",
    "18446744073709551616",
    "99999999999999999999999999999",
    "1.5e-7",
    "0.0000001",
    "123456789.123456789",
    "NaN",
    "Infinity",
    "1.",
    "-",
    "1e",
    "\"12\"",
    "null",
    "true",
    "[]",
    "{}",
];

const STRINGS: &[&str] = &[
    "\"\"",
    "\"X\"",
    "\"B\"",
    "\"E\"",
    "\"M\"",
    "\"i\"",
    "\"C\"",
    "\"s\"",
    "\"f\"",
    "\"kernel\"",
    "\"cuda_runtime\"",
    "\"gpu_memcpy\"",
    "\"gpu_memset\"",
    "\"cpu_op\"",
    "\"user_annotation\"",
    "\"ProfilerStep#1\"",
    "\"ac2g\"",
    "\"thread_name\"",
    "\"\\ud800\"",
    "\"\\u0000\"",
    "\"\\\"\"",
    "\"\u{e9}\"",
    "\"\\/\"",
];

const BYTES: &[u8] = b"{}[],:\"\\ 0123456789-.eEnNtf\n\xff\x00\x80";

fn mutate(input: &mut Vec<u8>, seeds: &[Vec<u8>], rng: &mut Rng) {
    for _ in 0..1 + rng.below(8) {
        let len = input.len();
        match rng.below(11) {
            0 if len > 0 => {
                let i = rng.below(len);
                input[i] ^= 1 << rng.below(8);
            }
            1 if len > 0 => {
                let i = rng.below(len);
                input[i] = *rng.pick(BYTES);
            }
            2 if len > 0 => {
                let a = rng.below(len);
                let b = (a + 1 + rng.below(64)).min(len);
                input.drain(a..b);
            }
            3 if len > 0 => {
                let a = rng.below(len);
                let b = (a + 1 + rng.below(256)).min(len);
                let piece = input[a..b].to_vec();
                let at = rng.below(len);
                input.splice(at..at, piece);
            }
            4 if !seeds.is_empty() => {
                let other = rng.pick(seeds);
                if !other.is_empty() {
                    let a = rng.below(other.len());
                    let b = (a + 1 + rng.below(512)).min(other.len());
                    let at = rng.below(len + 1);
                    input.splice(at..at, other[a..b].iter().copied());
                }
            }
            5 if len > 0 => input.truncate(rng.below(len)),
            6 => swap_token(input, rng, true),
            7 => swap_token(input, rng, false),
            8 => {
                let at = rng.below(len + 1);
                let depth = 1 + rng.below(300);
                let open = if rng.below(2) == 0 { b'[' } else { b'{' };
                input.splice(at..at, std::iter::repeat_n(open, depth));
            }
            9 if len > 0 => {
                // A structural byte: where cuts and splices do the most harm.
                let i = rng.below(len);
                if let Some(j) = input[i..].iter().position(|b| b"{}[],:\"".contains(b)) {
                    input[i + j] = *rng.pick(b"{}[],:\" ");
                }
            }
            _ => {
                let at = rng.below(len + 1);
                let s = rng.pick(NUMBERS);
                input.splice(at..at, s.bytes());
            }
        }
    }
}

/// Replaces one number (or one string) in `input` by an interesting one.
fn swap_token(input: &mut Vec<u8>, rng: &mut Rng, number: bool) {
    if input.is_empty() {
        return;
    }
    let from = rng.below(input.len());
    if number {
        let Some(s) = input[from..]
            .iter()
            .position(|b| b.is_ascii_digit())
            .map(|i| i + from)
        else {
            return;
        };
        let e = input[s..]
            .iter()
            .position(|b| !matches!(b, b'0'..=b'9' | b'.' | b'e' | b'E' | b'-' | b'+'))
            .map_or(input.len(), |i| i + s);
        input.splice(s..e, rng.pick(NUMBERS).bytes());
    } else {
        let Some(s) = input[from..].iter().position(|&b| b == b'"').map(|i| i + from) else {
            return;
        };
        let Some(e) = input[s + 1..].iter().position(|&b| b == b'"').map(|i| i + s + 2) else {
            return;
        };
        let with: Vec<u8> = if rng.below(8) == 0 {
            format!("\"{}\"", "x".repeat(rng.below(1 << 16))).into_bytes()
        } else {
            rng.pick(STRINGS).bytes().collect()
        };
        input.splice(s..e, with);
    }
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(bytes).unwrap();
    e.finish().unwrap()
}

fn gunzip(bytes: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    flate2::read::MultiGzDecoder::new(bytes)
        .read_to_end(&mut out)
        .ok()?;
    Some(out)
}

/// Small traces cut from every trace under `dirs`: the header keys and
/// windows of a few consecutive events each.
fn kineto_seeds(dirs: &[PathBuf], rng: &mut Rng) -> Vec<Vec<u8>> {
    let mut files = Vec::new();
    for d in dirs {
        walk(d, &mut files);
    }
    files.sort();
    let mut seeds = Vec::new();
    for f in files {
        let name = f.to_string_lossy();
        if !(name.ends_with(".json") || name.ends_with(".json.gz")) {
            continue;
        }
        let Ok(raw) = std::fs::read(&f) else { continue };
        let json = if raw.starts_with(&[0x1f, 0x8b]) {
            match gunzip(&raw) {
                Some(j) => j,
                None => continue,
            }
        } else {
            raw
        };
        let Ok(serde_json::Value::Object(mut doc)) = serde_json::from_slice::<serde_json::Value>(&json)
        else {
            continue;
        };
        let Some(serde_json::Value::Array(events)) = doc.remove("traceEvents") else {
            continue;
        };
        for _ in 0..8 {
            let n = 1 + rng.below(24);
            let a = rng.below(events.len().saturating_sub(n) + 1);
            let window: Vec<_> = events.iter().skip(a).take(n).cloned().collect();
            let mut small = doc.clone();
            small.insert("traceEvents".into(), serde_json::Value::Array(window));
            seeds.push(serde_json::to_vec_pretty(&small).unwrap());
        }
    }
    seeds
}

fn walk(p: &Path, out: &mut Vec<PathBuf>) {
    if p.is_dir() {
        if let Ok(rd) = std::fs::read_dir(p) {
            for e in rd.flatten() {
                walk(&e.path(), out);
            }
        }
    } else if p.is_file() {
        out.push(p.to_path_buf());
    }
}

/// CUPTI buffers: records of known kinds with random fields, back to back.
fn cupti_input(layouts: &Layouts, rng: &mut Rng) -> Vec<u8> {
    let kinds: Vec<u32> = (0..64).filter(|&k| layouts.record_size(k).is_some()).collect();
    let mut buf = Vec::new();
    for _ in 0..1 + rng.below(12) {
        let k = if kinds.is_empty() || rng.below(10) == 0 {
            rng.below(80) as u32
        } else {
            *rng.pick(&kinds)
        };
        let size = layouts.record_size(k).unwrap_or(8 + rng.below(64));
        let start = buf.len();
        buf.resize(start + size, 0);
        buf[start..start + 4].copy_from_slice(&k.to_le_bytes());
        for b in &mut buf[start + 4..] {
            *b = match rng.below(4) {
                0 => 0,
                1 => 0xff,
                _ => rng.next() as u8,
            };
        }
    }
    buf
}

/// Small captures: each small Kineto seed imported and written.
fn capture_seeds(kineto: &[Vec<u8>]) -> Vec<Vec<u8>> {
    kineto
        .iter()
        .filter_map(|json| {
            let t =
                import_bytes_partial(json, "seed", &ImportOptions::default(), &ReadLimits::default()).ok()?;
            let mut out = Vec::new();
            capture::write(&t.trace, &mut out).ok()?;
            Some(out)
        })
        .collect()
}

/// A capture's sections: (tag, codec, decoded payload), or `None` when the
/// framing does not parse (then only byte mutations apply).
fn capture_sections(bytes: &[u8]) -> Option<Vec<([u8; 4], Vec<u8>)>> {
    let mut pos = 16;
    let mut out = Vec::new();
    while pos < bytes.len() {
        let h = bytes.get(pos..pos + 32)?;
        let stored_len = usize::try_from(u64::from_le_bytes(h[16..24].try_into().ok()?)).ok()?;
        let stored = bytes.get(pos + 32..(pos + 32).checked_add(stored_len)?)?;
        let payload = match h[4] {
            0 => stored.to_vec(),
            _ => {
                let mut p = Vec::new();
                flate2::read::ZlibDecoder::new(stored).read_to_end(&mut p).ok()?;
                p
            }
        };
        out.push((h[0..4].try_into().ok()?, payload));
        pos += 32 + stored_len;
    }
    Some(out)
}

/// One section, stored or zlib, with `raw_len`/`stored_len` as given (the
/// real ones by default) and both checksums valid.
fn capture_frame(tag: [u8; 4], payload: &[u8], zlib: bool, lens: Option<(u64, u64)>) -> Vec<u8> {
    let stored = if zlib {
        let mut e = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
        e.write_all(payload).unwrap();
        e.finish().unwrap()
    } else {
        payload.to_vec()
    };
    let (raw, st) = lens.unwrap_or((payload.len() as u64, stored.len() as u64));
    let mut h = Vec::new();
    h.extend_from_slice(&tag);
    h.extend_from_slice(&[u8::from(zlib), 0, 0, 0]);
    h.extend_from_slice(&raw.to_le_bytes());
    h.extend_from_slice(&st.to_le_bytes());
    let mut c = flate2::Crc::new();
    c.update(&stored);
    h.extend_from_slice(&c.sum().to_le_bytes());
    let mut c = flate2::Crc::new();
    c.update(&h);
    h.extend_from_slice(&c.sum().to_le_bytes());
    h.extend_from_slice(&stored);
    h
}

const CAPTURE_LENS: &[u64] = &[
    0,
    1,
    3,
    4,
    7,
    8,
    255,
    256,
    65_535,
    1 << 32,
    u64::MAX / 2,
    u64::MAX,
];

fn capture_input(seeds: &[Vec<u8>], rng: &mut Rng) -> Vec<u8> {
    let seed = if seeds.is_empty() {
        capture::MAGIC.to_vec()
    } else {
        rng.pick(seeds).clone()
    };
    let sections = match capture_sections(&seed) {
        Some(s) if rng.below(2) == 0 && !s.is_empty() => s,
        _ => {
            let mut input = seed;
            mutate(&mut input, &[], rng);
            return input;
        }
    };
    let mut out = seed[..16].to_vec();
    let target = rng.below(sections.len());
    for (i, (tag, payload)) in sections.into_iter().enumerate() {
        let zlib = rng.below(2) == 0;
        if i != target {
            out.extend(capture_frame(tag, &payload, zlib, None));
            continue;
        }
        if rng.below(5) == 0 {
            // Lengths that disagree with the data, under a valid header.
            let raw = *rng.pick(CAPTURE_LENS);
            let stored = *rng.pick(CAPTURE_LENS);
            out.extend(capture_frame(tag, &payload, zlib, Some((raw, stored))));
            continue;
        }
        let mut p = payload;
        for _ in 0..1 + rng.below(4) {
            let len = p.len();
            match rng.below(6) {
                0 if len > 0 => {
                    let i = rng.below(len);
                    p[i] ^= 1 << rng.below(8);
                }
                1 if len > 0 => {
                    let i = rng.below(len);
                    p[i] = *rng.pick(&[0u8, 1, 2, 3, 4, 5, 6, 9, 0x7f, 0x80, 0xfe, 0xff]);
                }
                2 if len > 0 => p.truncate(rng.below(len)),
                3 if len > 0 => {
                    let a = rng.below(len);
                    let b = (a + 1 + rng.below(16)).min(len);
                    p.drain(a..b);
                }
                4 if len > 0 => {
                    let a = rng.below(len);
                    let b = (a + 1 + rng.below(64)).min(len);
                    let piece = p[a..b].to_vec();
                    let at = rng.below(len);
                    p.splice(at..at, piece);
                }
                _ if len >= 4 => {
                    // A row count or string length: the first u32, or one
                    // somewhere else.
                    let at = if rng.below(2) == 0 { 0 } else { rng.below(len - 3) };
                    let v = *rng.pick(&[0u32, 1, 2, 255, 65_536, u32::MAX / 2, u32::MAX]);
                    p[at..at + 4].copy_from_slice(&v.to_le_bytes());
                }
                _ => {}
            }
        }
        out.extend(capture_frame(tag, &p, zlib, None));
    }
    out
}

/// Capture inputs that read without an error: how many get past the
/// checks (reported with the target's line).
static CAPTURE_READ: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

fn run_capture(input: &[u8]) {
    let Ok(t) = capture::read_bytes(input, "fuzz") else {
        return;
    };
    CAPTURE_READ.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    // What the analyzers rely on: every parent chain ends, every link is a
    // row. And a trace that reads writes and reads back the same.
    for op in 0..t.cpu_ops.len() {
        assert!(t.ancestors(Some(OpRow::new(op))).count() <= t.cpu_ops.len());
    }
    let n_calls = t.runtime.len();
    assert!(t.links.gpu_launch.iter().flatten().all(|l| l.index() < n_calls));
    let n_ops = t.cpu_ops.len();
    assert!(t.links.runtime_op.iter().flatten().all(|l| l.index() < n_ops));
    let mut out = Vec::new();
    capture::write(&t, &mut out).expect("a trace that was read writes");
    let back = capture::read_bytes(&out, "fuzz").expect("a written capture reads");
    assert_eq!(format!("{:?}", back.gpu), format!("{:?}", t.gpu));
    assert_eq!(format!("{:?}", back.cpu_ops), format!("{:?}", t.cpu_ops));
    assert_eq!(format!("{:?}", back.links), format!("{:?}", t.links));
}

fn run_kineto(input: &[u8]) {
    let limits = ReadLimits::default();
    if let Ok(imported) = import_bytes_partial(input, "fuzz", &ImportOptions::default(), &limits) {
        // What the CLI does with it next: the warning text, the row counts.
        let _ = imported.warnings("fuzz");
        let t = &imported.trace;
        std::hint::black_box(t.gpu.len() + t.runtime.len() + t.cpu_ops.len() + t.markers.len());
    }
}

fn run_cupti(input: &[u8]) {
    for api in [28u32, 130001] {
        let Ok(layouts) = Layouts::for_api_version(api) else {
            continue;
        };
        for (_, rec) in RecordIter::new(input, &layouts).map_while(Result::ok) {
            std::hint::black_box(decode_record(rec, &layouts).is_ok());
        }
        let mut d = Decoder::new(layouts, MapResolver::default());
        d.decode_buffer(input);
        std::hint::black_box(d.finish().0.finish());
    }
}

struct Args {
    seconds: u64,
    targets: Vec<String>,
    seeds: Vec<PathBuf>,
    crashes: PathBuf,
    seed: u64,
    replay: Vec<PathBuf>,
}

fn args() -> Args {
    let mut a = Args {
        seconds: 10,
        targets: Vec::new(),
        seeds: Vec::new(),
        crashes: PathBuf::from("fuzz/crashes"),
        seed: 0x9E37_79B9_7F4A_7C15,
        replay: Vec::new(),
    };
    let mut it = std::env::args().skip(1);
    while let Some(k) = it.next() {
        let mut v = || it.next().unwrap_or_else(|| panic!("{k} needs a value"));
        match k.as_str() {
            "--seconds" => a.seconds = v().parse().expect("--seconds N"),
            "--target" => a.targets.push(v()),
            "--seeds" => a.seeds.push(v().into()),
            "--crashes" => a.crashes = v().into(),
            "--seed" => a.seed = v().parse().expect("--seed N"),
            "--replay" => a.replay.push(v().into()),
            _ => panic!("unknown argument {k}"),
        }
    }
    if a.targets.is_empty() {
        a.targets = vec![
            "kineto".into(),
            "kineto-gz".into(),
            "cupti".into(),
            "capture".into(),
        ];
    }
    a
}

fn main() {
    let a = args();
    // Panics are caught and counted; their messages go to one line each.
    std::panic::set_hook(Box::new(|info| {
        eprintln!("panic: {info}");
    }));
    if !a.replay.is_empty() {
        for p in &a.replay {
            let bytes = std::fs::read(p).expect("read the input");
            let target = p
                .file_name()
                .unwrap()
                .to_string_lossy()
                .split('-')
                .next()
                .unwrap_or("")
                .to_string();
            let f = match target.as_str() {
                "cupti" => run_cupti,
                "capture" => run_capture,
                _ => run_kineto,
            };
            let ok = catch_unwind(AssertUnwindSafe(|| f(&bytes))).is_ok();
            println!("{}: {}", p.display(), if ok { "ok" } else { "PANIC" });
        }
        return;
    }
    let mut rng = Rng(a.seed | 1);
    let seeds = kineto_seeds(&a.seeds, &mut rng);
    let cap_seeds = if a.targets.iter().any(|t| t == "capture") {
        capture_seeds(&seeds)
    } else {
        Vec::new()
    };
    let layouts = Layouts::for_api_version(28).expect("12.9 layouts");
    std::fs::create_dir_all(&a.crashes).expect("crash folder");
    let per_target = Duration::from_secs(a.seconds) / a.targets.len().max(1) as u32;
    let mut total_crashes = 0;
    for target in &a.targets {
        let start = Instant::now();
        let (mut runs, mut crashes, mut slow) = (0u64, 0u64, 0u64);
        while start.elapsed() < per_target {
            let (input, f): (Vec<u8>, fn(&[u8])) = match target.as_str() {
                "cupti" => {
                    let mut buf = cupti_input(&layouts, &mut rng);
                    if rng.below(2) == 0 {
                        mutate(&mut buf, &[], &mut rng);
                    }
                    (buf, run_cupti)
                }
                "capture" => (capture_input(&cap_seeds, &mut rng), run_capture),
                t => {
                    let mut input = if seeds.is_empty() {
                        b"{\"traceEvents\": []}".to_vec()
                    } else {
                        rng.pick(&seeds).clone()
                    };
                    mutate(&mut input, &seeds, &mut rng);
                    if t == "kineto-gz" {
                        input = gzip(&input);
                        if rng.below(4) == 0 {
                            mutate(&mut input, &[], &mut rng);
                        }
                    }
                    (input, run_kineto)
                }
            };
            let t0 = Instant::now();
            let ok = catch_unwind(AssertUnwindSafe(|| f(&input))).is_ok();
            let took = t0.elapsed();
            runs += 1;
            let bad = if !ok {
                crashes += 1;
                Some("crash")
            } else if took > Duration::from_secs(1) {
                slow += 1;
                Some("slow")
            } else {
                None
            };
            if let Some(kind) = bad {
                let hash = input.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
                    (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
                });
                let p = a.crashes.join(format!("{target}-{kind}-{hash:016x}.bin"));
                std::fs::write(&p, &input).expect("save the input");
                eprintln!("{kind} ({took:?}): saved {}", p.display());
            }
        }
        total_crashes += crashes;
        let n_seeds = if target == "capture" {
            cap_seeds.len()
        } else {
            seeds.len()
        };
        let read = if target == "capture" {
            format!(
                ", {} read whole",
                CAPTURE_READ.load(std::sync::atomic::Ordering::Relaxed)
            )
        } else {
            String::new()
        };
        println!(
            "{target}: {runs} inputs in {:.1} s ({:.0}/s), {crashes} crashes, {slow} slow (>1 s), {n_seeds} seeds{read}",
            start.elapsed().as_secs_f64(),
            runs as f64 / start.elapsed().as_secs_f64(),
        );
    }
    if total_crashes > 0 {
        std::process::exit(1);
    }
}

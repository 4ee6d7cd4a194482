//! The committed demo trace is exactly what its generator writes, so the
//! trace embedded in the binary is reproducible from the repo alone.

mod common;
use common::*;
use std::io::Read;
use std::process::Command;

fn gunzip(gz: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(gz)
        .read_to_end(&mut out)
        .expect("inflates");
    out
}

#[test]
fn committed_demo_trace_equals_generator_output() {
    let dir = TempDir::new("demo-gen");
    let fresh = dir.path().join("demo.pt.trace.json.gz");
    let status = Command::new("python3")
        .arg(repo().join("fixtures/demo/generate.py"))
        .arg(&fresh)
        .status()
        .expect("python3 runs (.ci/run needs python3)");
    assert!(status.success());
    let fresh = std::fs::read(&fresh).unwrap();
    let committed = std::fs::read(repo().join("fixtures/demo/demo.pt.trace.json.gz")).unwrap();
    // The gzip header carries no mtime and no file name, so nothing in it
    // varies between runs.
    assert_eq!(&committed[4..8], &[0, 0, 0, 0], "gzip mtime must be 0");
    assert_eq!(committed[3] & 0x08, 0, "gzip header must not hold a file name");
    // Compare the trace itself byte for byte. The deflate stream is not
    // compared: its bytes depend on the zlib build Python links against,
    // which is not ours to pin.
    let (fresh, committed) = (gunzip(&fresh), gunzip(&committed));
    assert!(
        fresh == committed,
        "fixtures/demo/demo.pt.trace.json.gz is stale: run `python3 fixtures/demo/generate.py` and commit the result"
    );
}

#[test]
fn demo_trace_stays_small() {
    let len = std::fs::metadata(repo().join("fixtures/demo/demo.pt.trace.json.gz"))
        .unwrap()
        .len();
    assert!(
        len < 300 * 1024,
        "the embedded demo trace is {len} bytes; keep it under 300 KB"
    );
}

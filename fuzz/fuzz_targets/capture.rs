//! The capture reader (`capture::read_bytes`, docs/capture-format.md).
//! First byte below 0x80: the rest is a capture as it is; what reads must
//! have finite parent chains and in-range links, and write and read back
//! equal. From 0x80: the rest is Kineto JSON, imported and written as a
//! capture, which must read back equal; with bit 0x40 also set, one byte of
//! the written capture (picked from the input) is then changed and the
//! damaged capture read, so mutations reach the reader past the checksums'
//! framing of a valid file.
#![no_main]

use gapscope_collectors::capture;
use gapscope_collectors::kineto::{import_bytes_partial, ImportOptions, ReadLimits};
use gapscope_collectors::trace::{OpRow, Trace};
use libfuzzer_sys::fuzz_target;

fn check(t: &Trace) {
    for op in 0..t.cpu_ops.len() {
        assert!(t.ancestors(Some(OpRow::new(op))).count() <= t.cpu_ops.len());
    }
    let n_calls = t.runtime.len();
    assert!(t.links.gpu_launch.iter().flatten().all(|l| l.index() < n_calls));
    let n_ops = t.cpu_ops.len();
    assert!(t.links.runtime_op.iter().flatten().all(|l| l.index() < n_ops));
}

/// Writes `t` and reads it back equal; `None` when the write refuses a
/// time too far from the first event (an imported trace may hold one: a
/// damaged timestamp), the one refusal a trace can earn.
fn round_trip(t: &Trace) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    match capture::write(t, &mut out) {
        Ok(_) => {}
        Err(capture::CaptureError::TimeOutOfRange { .. }) => return None,
        Err(e) => panic!("a trace writes: {e:?}"),
    }
    let back = capture::read_bytes(&out, "fuzz").expect("a written capture reads");
    assert_eq!(format!("{:?}", back.gpu), format!("{:?}", t.gpu));
    assert_eq!(format!("{:?}", back.runtime), format!("{:?}", t.runtime));
    assert_eq!(format!("{:?}", back.cpu_ops), format!("{:?}", t.cpu_ops));
    assert_eq!(format!("{:?}", back.markers), format!("{:?}", t.markers));
    assert_eq!(format!("{:?}", back.links), format!("{:?}", t.links));
    Some(out)
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    if mode < 0x80 {
        if let Ok(t) = capture::read_bytes(rest, "fuzz") {
            check(&t);
            // A capture that reads holds its times within the limit.
            round_trip(&t).expect("a capture that reads writes again");
        }
        return;
    }
    if rest.starts_with(&[0x1f, 0x8b]) {
        return;
    }
    let Ok(imported) = import_bytes_partial(rest, "fuzz", &ImportOptions::default(), &ReadLimits::default())
    else {
        return;
    };
    let Some(mut bytes) = round_trip(&imported.trace) else {
        return;
    };
    if mode & 0x40 != 0 && !bytes.is_empty() {
        let h = rest.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
            (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
        });
        let at = (h % bytes.len() as u64) as usize;
        bytes[at] ^= (h >> 32) as u8 | 1;
        if let Ok(t) = capture::read_bytes(&bytes, "fuzz") {
            check(&t);
        }
    }
});

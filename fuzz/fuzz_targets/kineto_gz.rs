//! The Kineto importer on gzip files. The first byte picks the mode: even,
//! the rest is JSON that is compressed here (so libFuzzer's mutations stay
//! meaningful JSON edits through the gzip path); odd, the rest is the
//! compressed file itself (bad CRCs, cut or broken deflate streams).
#![no_main]

use gapscope_collectors::kineto::{import_bytes_partial, ImportOptions, ReadLimits};
use libfuzzer_sys::fuzz_target;
use std::io::Write;

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let gz;
    let input = if mode % 2 == 0 {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        e.write_all(rest).expect("writing to a Vec");
        gz = e.finish().expect("writing to a Vec");
        &gz[..]
    } else {
        rest
    };
    if let Ok(imported) = import_bytes_partial(
        input,
        "fuzz.gz",
        &ImportOptions::default(),
        &ReadLimits::default(),
    ) {
        let _ = imported.warnings("fuzz.gz");
        let t = &imported.trace;
        std::hint::black_box(t.gpu.len() + t.runtime.len() + t.cpu_ops.len() + t.markers.len());
    }
});

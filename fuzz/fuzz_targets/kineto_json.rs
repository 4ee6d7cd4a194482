//! The Kineto importer on plain JSON: whatever the bytes, an import either
//! gives a trace or a `KinetoError`, never a panic or a hang.
#![no_main]

use gapscope_collectors::kineto::{import_bytes_partial, ImportOptions, ReadLimits};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // Gzip has its own target; here the bytes are the JSON itself.
    if data.starts_with(&[0x1f, 0x8b]) {
        return;
    }
    if let Ok(imported) =
        import_bytes_partial(data, "fuzz", &ImportOptions::default(), &ReadLimits::default())
    {
        // What the CLI does next: the warning lines and the row counts.
        let _ = imported.warnings("fuzz");
        let t = &imported.trace;
        std::hint::black_box(t.gpu.len() + t.runtime.len() + t.cpu_ops.len() + t.markers.len());
    }
});

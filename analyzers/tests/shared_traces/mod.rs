//! Where the tests find `../shared/traces`, and every trace file in it.

use std::path::{Path, PathBuf};

/// `../shared/traces` beside the checkout.
pub fn shared() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/traces")
}

/// Every `.json` / `.json.gz` under `dir`, recursively, appended to `out`.
pub fn trace_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        let name = p.file_name().unwrap().to_string_lossy().to_string();
        if p.is_dir() {
            trace_files(&p, out);
        } else if name.ends_with(".json") || name.ends_with(".json.gz") {
            out.push(p);
        }
    }
}

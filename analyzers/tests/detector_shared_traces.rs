//! Detectors on the real traces in `../shared/traces`: on every device of
//! every trace, no finding saves more than it explains, no finding explains
//! more idle time than the device had, and the primary findings together
//! claim at most the device's idle time; the ResNet-50 trace with a
//! 0-worker DataLoader ranks the DataLoader stall first.

mod shared_traces;
use gapscope_analyzers::detectors::{detect, Finding};
use gapscope_analyzers::intervals::{complement, total, union, Span};
use gapscope_analyzers::window::window;
use gapscope_collectors::kineto::{import_file, ImportOptions};
use gapscope_collectors::trace::Trace;
use shared_traces::{shared, trace_files};
use std::collections::BTreeMap;
use std::path::Path;

/// Device idle time computed here from interval unions, independently of
/// the segments the detectors start from.
fn idle_of(t: &Trace, device: u32, span: Span) -> i64 {
    let g = &t.gpu;
    let busy = (0..g.len())
        .filter(|&i| g.device[i] == device && g.is_busy(i))
        .map(|i| (g.start[i], g.end[i]))
        .collect();
    total(&complement(&union(busy), span))
}

fn check(path: &Path, t: &Trace, findings: &[Finding], span: Span) {
    let mut primary: BTreeMap<u32, i64> = BTreeMap::new();
    for f in findings {
        let idle = idle_of(t, f.device, span);
        let what = format!("{} {} {}", path.display(), f.detector, f.id);
        assert!(f.est_savings_ns >= 0, "{what}: negative savings");
        assert!(
            f.est_savings_ns <= f.explained_ns,
            "{what}: saves {} > explains {}",
            f.est_savings_ns,
            f.explained_ns
        );
        assert!(
            f.idle_ns >= 0 && f.idle_ns <= idle,
            "{what}: idle {} > device idle {idle}",
            f.idle_ns
        );
        assert!(f.explained_ns >= f.idle_ns, "{what}");
        assert!(!f.hint.is_empty() && !f.title.is_empty(), "{what}");
        assert!(
            f.id.chars().all(|c| c.is_ascii_lowercase() || c == '_'),
            "{what}: id"
        );
        if f.primary {
            *primary.entry(f.device).or_default() += f.idle_ns;
        }
    }
    for (d, claimed) in primary {
        let idle = idle_of(t, d, span);
        assert!(
            claimed <= idle,
            "{} device {d}: primary findings claim {claimed} > idle {idle}",
            path.display()
        );
    }
    for w in findings.windows(2) {
        assert!(w[0].est_savings_ns >= w[1].est_savings_ns, "not ranked");
    }
}

#[test]
fn findings_stay_within_idle_time_on_every_shared_trace() {
    let mut files = Vec::new();
    trace_files(&shared(), &mut files);
    files.sort();
    if files.is_empty() {
        eprintln!("no shared traces at {}: skipped", shared().display());
        return;
    }
    let mut checked = 0;
    for path in &files {
        let Ok(t) = import_file(path, &ImportOptions::default()) else {
            eprintln!("{}: not a trace, skipped", path.display());
            continue;
        };
        let win = window(&t);
        let started = std::time::Instant::now();
        let findings = detect(&t, &win);
        let took = started.elapsed();
        check(path, &t, &findings, win.span);
        eprintln!("{} ({} findings, {took:?}):", path.display(), findings.len());
        for f in findings.iter().take(4) {
            eprintln!(
                "  {} {} dev {} idle {} explained {} saves {} x{} | {}",
                f.detector,
                f.id,
                f.device,
                f.idle_ns,
                f.explained_ns,
                f.est_savings_ns,
                f.occurrences,
                f.title
            );
        }
        checked += 1;
    }
    assert!(checked >= 10, "only {checked} traces checked");
}

#[test]
fn resnet50_without_workers_ranks_the_dataloader_first() {
    let dir = shared().join("kineto-tb-plugin");
    let Some(path) = std::fs::read_dir(&dir).ok().and_then(|d| {
        d.flatten()
            .map(|e| e.path())
            .find(|p| p.to_string_lossy().contains("resnet50_num_workers_0"))
    }) else {
        eprintln!("no resnet50 trace in {}: skipped", dir.display());
        return;
    };
    let t = import_file(&path, &ImportOptions::default()).unwrap();
    let win = window(&t);
    let findings = detect(&t, &win);
    for f in &findings {
        eprintln!(
            "{} {} saves {} of {}: {}",
            f.detector, f.id, f.est_savings_ns, f.explained_ns, f.title
        );
    }
    let top = &findings[0];
    assert_eq!(
        (top.detector.as_str(), top.id.as_str()),
        ("D11", "dataloader_stall")
    );
    assert!(top.hint.contains("num_workers"), "{}", top.hint);
    assert!(top.est_savings_ns > 0);
    assert_eq!(
        top.annotation.as_deref(),
        Some("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__")
    );
}

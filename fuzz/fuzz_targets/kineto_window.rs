//! The time window, differentially: dropping rows while reading
//! (`ReadLimits::time_window`, a probe pass when the window has a start)
//! must give the same analysis as importing everything and letting the
//! analysis cut, and the same verdict on the file (error or not, where it
//! is cut). The first 5 bytes choose the window, the rest is the JSON:
//! byte 0 bit 0 = has a start, bit 1 = has an end, bit 2 =
//! `--exclude-last-step`; bytes 1-2 and 3-4 (LE) are the start and the
//! length in µs after the trace's first event.
#![no_main]

use gapscope_analyzers::analysis::{AnalyzeOptions};
use gapscope_analyzers::analyze;
use gapscope_analyzers::window::{TimeRange, WindowOptions};
use gapscope_collectors::kineto::{import_bytes_partial, ImportOptions, ReadLimits};
use libfuzzer_sys::fuzz_target;

fn comparable(a: &gapscope_analyzers::analysis::Analysis) -> serde_json::Value {
    let mut j = serde_json::to_value(a).expect("an analysis serializes");
    // What depends on the rows read, not on the window's content.
    j["diagnostics"]["rows"] = serde_json::Value::Null;
    j["diagnostics"]["importer"] = serde_json::Value::Null;
    j
}

fuzz_target!(|data: &[u8]| {
    if data.len() < 5 || data[5..].starts_with(&[0x1f, 0x8b]) {
        return;
    }
    let (flags, json) = (data[0], &data[5..]);
    let at = u64::from(u16::from_le_bytes([data[1], data[2]])) as i64 * 1000;
    let len = (u64::from(u16::from_le_bytes([data[3], data[4]])) as i64 + 1) * 1000;
    let start = (flags & 1 != 0).then_some(at);
    let end = (flags & 2 != 0).then_some(at + len);
    if start.is_none() && end.is_none() {
        return;
    }
    let opts = AnalyzeOptions {
        window: WindowOptions {
            steps: None,
            exclude_last_step: flags & 4 != 0,
        },
        time_window: Some(TimeRange {
            start_ns: start,
            end_ns: end,
        }),
        ..AnalyzeOptions::default()
    };
    let none = ImportOptions::default();
    let whole = import_bytes_partial(json, "fuzz", &none, &ReadLimits::default());
    let limits = ReadLimits {
        time_window: Some(TimeRange {
            start_ns: start,
            end_ns: end,
        }),
        ..ReadLimits::default()
    };
    let cut = import_bytes_partial(json, "fuzz", &none, &limits);
    match (whole, cut) {
        (Ok(w), Ok(c)) => {
            assert_eq!(w.trace.meta.origin_ns, c.trace.meta.origin_ns, "origin");
            assert_eq!(w.truncated, c.truncated, "truncation");
            assert_eq!(w.events, c.events, "events read");
            assert_eq!(
                comparable(&analyze(&w.trace, &opts)),
                comparable(&analyze(&c.trace, &opts))
            );
        }
        (Err(w), Err(c)) => assert_eq!(w.to_string(), c.to_string()),
        (w, c) => panic!(
            "whole: {:?}\nwindowed: {:?}",
            w.map(|i| i.events),
            c.map(|i| i.events)
        ),
    }
});

//! A bare serde_json parse of a Kineto trace, on one thread: the floor that
//! bench/run.sh compares `gapscope analyze` against (bench/README.md).
//!
//! ```text
//! cargo run --release -p gapscope-collectors --example parse_floor -- typed|ignored TRACE.json
//! ```
//!
//! `ignored` checks the JSON and keeps nothing (`IgnoredAny`); `typed` reads
//! every event into a small borrowed struct (phase, category, name, pid, tid,
//! ts, dur; args skipped). The file is read whole into memory first, as the
//! importer does (plain `.json` only).

use serde::de::IgnoredAny;
use serde::Deserialize;
use std::borrow::Cow;
use std::time::Instant;

#[derive(Deserialize)]
struct Doc<'a> {
    #[serde(borrow, rename = "traceEvents")]
    trace_events: Vec<Event<'a>>,
}

#[derive(Deserialize)]
#[allow(dead_code)] // the fields are read, not used: it is the reading we time
struct Event<'a> {
    #[serde(borrow)]
    ph: Option<Cow<'a, str>>,
    #[serde(borrow)]
    cat: Option<Cow<'a, str>>,
    #[serde(borrow)]
    name: Option<Cow<'a, str>>,
    pid: Option<IdOrLabel<'a>>,
    tid: Option<IdOrLabel<'a>>,
    ts: Option<f64>,
    dur: Option<f64>,
    args: Option<IgnoredAny>,
}

#[derive(Deserialize)]
#[serde(untagged)]
#[allow(dead_code)]
enum IdOrLabel<'a> {
    Id(i64),
    #[serde(borrow)]
    Label(Cow<'a, str>),
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (mode, path) = match args.as_slice() {
        [m, p] if m == "typed" || m == "ignored" => (m.as_str(), p),
        _ => {
            eprintln!("usage: parse_floor typed|ignored TRACE.json");
            std::process::exit(2);
        }
    };
    let t = Instant::now();
    let bytes = std::fs::read(path).unwrap_or_else(|e| {
        eprintln!("{path}: {e}");
        std::process::exit(1);
    });
    let read = t.elapsed().as_secs_f64();
    let events = if mode == "typed" {
        match serde_json::from_slice::<Doc<'_>>(&bytes) {
            Ok(doc) => doc.trace_events.len(),
            Err(e) => fail(path, e),
        }
    } else {
        match serde_json::from_slice::<IgnoredAny>(&bytes) {
            Ok(_) => 0,
            Err(e) => fail(path, e),
        }
    };
    let total = t.elapsed().as_secs_f64();
    let mb = bytes.len() as f64 / 1e6;
    println!(
        "{mode}: read {read:.3} s + parse {:.3} s = {total:.3} s, {mb:.1} MB ({:.0} MB/s parse), {events} events",
        total - read,
        mb / (total - read)
    );
}

fn fail(path: &str, e: serde_json::Error) -> ! {
    eprintln!("{path}: {e}");
    std::process::exit(1)
}

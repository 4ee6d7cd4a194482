//! `gapscope report`: the Markdown says what `analyze --format json` says,
//! the HTML is self-contained, a trace of 8 GPUs and 100 steps stays
//! readable, and bad input gets one error line and exit status 2.

mod common;
use common::*;
use serde_json::Value;

const RESNET: &str = "kineto-tb-plugin/resnet50_num_workers_0.worker0.1623143089861.pt.trace.json.gz";

/// `ns` the way the report prints milliseconds.
fn ms(ns: &Value) -> String {
    format!("{:.2}", ns.as_i64().expect("an integer ns") as f64 / 1e6)
}

fn pct(part: &Value, whole: &Value) -> String {
    let (p, w) = (part.as_i64().unwrap(), whole.as_i64().unwrap());
    format!("{:.1}%", p as f64 * 100.0 / w as f64)
}

/// The cells of the Markdown table row whose first cell is `first`, under
/// the heading `heading`.
fn md_row(md: &str, heading: &str, first: &str) -> Vec<String> {
    let section = md
        .split(heading)
        .nth(1)
        .unwrap_or_else(|| panic!("no `{heading}` in:\n{md}"));
    section
        .lines()
        .take_while(|l| !l.starts_with("## "))
        .filter(|l| l.starts_with('|'))
        .map(|l| {
            l.trim_matches('|')
                .split(" | ")
                .map(|c| c.trim().to_string())
                .collect::<Vec<_>>()
        })
        .find(|cells| cells[0] == first)
        .unwrap_or_else(|| panic!("no row `{first}` under `{heading}` in:\n{section}"))
}

fn device_label(d: &Value) -> String {
    let plain = format!("GPU {}", d["device"]);
    if d["name"] == plain.as_str() {
        plain
    } else {
        format!("{plain} ({})", d["name"].as_str().unwrap())
    }
}

/// Every per-device number of the breakdown and of idle by cause, as
/// `analyze --format json` has it, is in the Markdown report.
fn markdown_matches_json(name: &str, trace_args: &[&str]) {
    let dir = TempDir::new(name);
    let md_path = dir.path().join("r.md");
    let mut args = vec!["report", "-q", "-o", md_path.to_str().unwrap()];
    args.extend(trace_args);
    gapscope(&args).expect_code(0);
    let md = std::fs::read_to_string(&md_path).unwrap();
    let mut args = vec!["analyze", "--format", "json", "-q"];
    args.extend(trace_args);
    let j = gapscope(&args).expect_code(0).json();

    let devices = j["devices"].as_array().unwrap();
    assert!(!devices.is_empty());
    let (mut idle, mut window) = (0, 0);
    for d in devices {
        let b = &d["breakdown"];
        let label = device_label(d);
        let row = md_row(&md, "## Where the time went", &label);
        let data = b["memcpy_ns"].as_i64().unwrap() + b["memset_ns"].as_i64().unwrap();
        let data = Value::from(data);
        let want = [
            ms(&b["window_ns"]),
            ms(&b["compute_ns"]),
            pct(&b["compute_ns"], &b["window_ns"]),
            ms(&b["communication_ns"]),
            pct(&b["communication_ns"], &b["window_ns"]),
            ms(&data),
            pct(&data, &b["window_ns"]),
            ms(&b["idle_ns"]),
            pct(&b["idle_ns"], &b["window_ns"]),
        ];
        assert_eq!(row[1..], want, "device {label}");
        idle += b["idle_ns"].as_i64().unwrap();
        window += b["window_ns"].as_i64().unwrap();

        // Idle by cause: every non-zero cause, with its ms and share.
        let section = md.split("### Idle by cause").nth(1).unwrap();
        for (cause, ns) in d["idle_by_cause_ns"].as_object().unwrap() {
            if ns.as_i64().unwrap() == 0 {
                continue;
            }
            let cell = format!("| {} | {} |", ms(ns), pct(ns, &b["idle_ns"]));
            let hit = section
                .lines()
                .filter(|l| l.starts_with(&format!("| {label} |")))
                .any(|l| l.contains(&cell));
            assert!(hit, "cause {cause} ({cell}) of {label} not in:\n{section}");
        }
    }
    let headline = format!("**GPU idle: {}**", pct(&Value::from(idle), &Value::from(window)));
    assert!(md.contains(&headline), "`{headline}` not in:\n{md}");
    assert!(md.contains(&format!("{} ms.", ms(&j["window"]["duration_ns"]))));

    // Per step: the step's length and idle share.
    let d0 = device_label(&devices[0]);
    for s in j["steps"].as_array().unwrap().iter().take(20) {
        let b = &s["devices"][0]["breakdown"];
        let row = md_row(&md, &format!("### {d0}"), &format!("#{}", s["step"]));
        assert_eq!(row[1], ms(&b["window_ns"]));
        assert_eq!(row[5], pct(&b["idle_ns"], &b["window_ns"]));
    }
}

#[test]
fn markdown_has_the_numbers_of_analyze_json_on_the_demo() {
    markdown_matches_json("md-demo", &["--demo"]);
}

#[test]
fn markdown_has_the_numbers_of_analyze_json_on_a_shared_trace() {
    let t = shared_trace(RESNET);
    markdown_matches_json("md-resnet", &[t.to_str().unwrap()]);
}

#[test]
fn markdown_follows_the_step_selection() {
    let t = shared_trace(RESNET);
    markdown_matches_json("md-resnet-excl", &[t.to_str().unwrap(), "--exclude-last-step"]);
}

/// Attribute values that would make the browser fetch something.
fn external_references(html: &str) -> Vec<String> {
    let mut out = Vec::new();
    for attr in ["src=", "href=", "url(", "@import", "xlink:href="] {
        for (i, _) in html.match_indices(attr) {
            let rest = &html[i + attr.len()..];
            let v: String = rest
                .trim_start_matches(['"', '\''])
                .chars()
                .take_while(|c| !matches!(c, '"' | '\'' | ')' | ' ' | '>'))
                .collect();
            if !v.starts_with('#') {
                out.push(format!("{attr}{v}"));
            }
        }
    }
    out
}

#[test]
fn html_is_one_self_contained_page() {
    let dir = TempDir::new("html-self-contained");
    let out = dir.path().join("report.html");
    let t = shared_trace(RESNET);
    let r = gapscope(["report", t.to_str().unwrap(), "-o", out.to_str().unwrap()]).expect_code(0);
    assert!(r.stdout.is_empty(), "{}", r.stdout);
    assert!(r.stderr.contains("wrote"), "{}", r.stderr);
    let html = std::fs::read_to_string(&out).unwrap();
    assert!(
        html.starts_with("<!doctype html>"),
        "{}",
        &html[..200.min(html.len())]
    );
    assert!(html.trim_end().ends_with("</html>"));
    assert_eq!(external_references(&html), Vec::<String>::new());
    for banned in ["<script", "<link", "<img", "<iframe", "@font-face"] {
        assert!(!html.contains(banned), "{banned} in the page");
    }
    // The page forbids any load at all, so a future template slip shows
    // up as a console error in the browser test instead of a fetch.
    assert!(html.contains("Content-Security-Policy\" content=\"default-src 'none'"));
    for id in [
        "headline",
        "time",
        "timeline",
        "steps",
        "findings",
        "operators",
        "kernels",
        "launches",
        "bounds",
        "perfetto",
    ] {
        assert!(html.contains(&format!("id=\"{id}\"")), "section {id} missing");
    }
    assert!(html.contains("gapscope export"));
    assert!(!out.with_file_name("report.html.partial").exists());
}

#[test]
fn format_follows_the_file_name_unless_given() {
    let dir = TempDir::new("format-by-name");
    let md = dir.path().join("r.md");
    gapscope(["report", "--demo", "-q", "-o", md.to_str().unwrap()]).expect_code(0);
    assert!(std::fs::read_to_string(&md)
        .unwrap()
        .starts_with("# Why the GPU sat idle"));
    let html = dir.path().join("r.txt");
    gapscope(["report", "--demo", "-q", "-o", html.to_str().unwrap()]).expect_code(0);
    assert!(std::fs::read_to_string(&html)
        .unwrap()
        .starts_with("<!doctype html>"));
    let r = gapscope(["report", "--demo", "--format", "md", "-o", "-"]).expect_code(0);
    assert!(r.stdout.starts_with("# Why the GPU sat idle"));
    assert!(r.stderr.is_empty(), "{}", r.stderr);
}

#[test]
fn eight_gpus_and_a_hundred_steps_stay_readable() {
    let dir = TempDir::new("scale");
    let trace = dir.file("big.json", synthetic_trace(8, 100).as_bytes());
    let out = dir.path().join("big.html");
    gapscope([
        "report",
        "-q",
        trace.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ])
    .expect_code(0);
    let html = std::fs::read_to_string(&out).unwrap();
    assert!(html.len() < 3_000_000, "page of {} bytes", html.len());
    assert!(html.contains("8 GPUs"));
    assert_eq!(html.matches("class=\"strip\"").count(), 8);
    assert_eq!(html.matches("class=\"steps\"").count(), 8);

    let md = gapscope([
        "report",
        "-q",
        trace.to_str().unwrap(),
        "--format",
        "md",
        "-o",
        "-",
    ])
    .expect_code(0)
    .stdout;
    // Per GPU, 20 step rows and a note for the other 80.
    assert_eq!(md.matches("_and 80 more steps_").count(), 8, "{md}");
    assert!(md.lines().count() < 600, "{} lines", md.lines().count());
    assert!(md.contains("(Tensor Core)"));
    assert!(md.contains("(collective)"));

    let ctx: Value = serde_json::from_str(
        &gapscope([
            "report",
            "-q",
            trace.to_str().unwrap(),
            "--debug-context",
            "-o",
            "-",
        ])
        .expect_code(0)
        .stdout,
    )
    .unwrap();
    assert_eq!(ctx["devices"]["items"].as_array().unwrap().len(), 8);
    for d in ctx["devices"]["items"].as_array().unwrap() {
        assert_eq!(d["steps"]["columns"].as_array().unwrap().len(), 100);
        let runs = d["timeline"]["runs"].as_array().unwrap();
        let width: u64 = runs.iter().map(|r| r["w"].as_u64().unwrap()).sum();
        assert_eq!(width, d["timeline"]["width"].as_u64().unwrap());
    }
}

#[test]
fn a_cpu_only_trace_gets_a_page_that_says_so() {
    let t = shared_trace("hta/cpu_only/rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz");
    let md = gapscope(["report", "-q", t.to_str().unwrap(), "--format", "md", "-o", "-"])
        .expect_code(0)
        .stdout;
    assert!(md.contains("No GPU activity was found"), "{md}");
}

#[test]
fn a_missing_trace_is_one_line_and_exit_2() {
    let dir = TempDir::new("missing");
    let out = dir.path().join("r.html");
    let r = gapscope(["report", "no/such/trace.json", "-o", out.to_str().unwrap()]).expect_code(2);
    assert_eq!(r.stderr.lines().count(), 1, "{}", r.stderr);
    assert!(r.stderr.starts_with("gapscope: "), "{}", r.stderr);
    assert!(r.stderr.contains("no/such/trace.json"), "{}", r.stderr);
    assert!(!out.exists());
}

#[test]
fn an_unwritable_output_is_one_line_and_exit_2() {
    let dir = TempDir::new("unwritable");
    let r = gapscope(["report", "--demo", "-o", dir.path().to_str().unwrap()]).expect_code(2);
    assert_eq!(r.stderr.lines().count(), 1, "{}", r.stderr);
    assert!(r.stderr.contains("is a directory"), "{}", r.stderr);
    let r = gapscope(["report", "--demo", "-o", "/no/such/dir/r.html"]).expect_code(2);
    assert_eq!(r.stderr.lines().count(), 1, "{}", r.stderr);
    assert!(r.stderr.contains("cannot write"), "{}", r.stderr);
}

#[test]
fn output_is_required() {
    let r = gapscope(["report", "--demo"]).expect_code(2);
    assert!(r.stderr.contains("--output"), "{}", r.stderr);
}

/// `-o` naming a pipe (or a device such as /dev/null) writes into it; a
/// rename over it would replace it with a regular file.
#[test]
fn output_to_a_pipe_stays_a_pipe() {
    use std::os::unix::fs::FileTypeExt;
    let dir = TempDir::new("fifo");
    let fifo = dir.path().join("out.md");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo runs");
    assert!(made.success());
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::read_to_string(fifo).unwrap())
    };
    gapscope(["report", "--demo", "-q", "-o", fifo.to_str().unwrap()]).expect_code(0);
    let md = reader.join().unwrap();
    assert!(md.starts_with("# Why the GPU sat idle"), "{md}");
    assert!(std::fs::metadata(&fifo).unwrap().file_type().is_fifo());
}

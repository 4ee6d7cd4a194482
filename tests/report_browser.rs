//! The HTML report in a real browser: headless Chromium (Debian's
//! `chromium` package; `.ci/run` installs it) loads the page with no
//! console message at all (the page has no scripts, and its CSP turns any
//! attempted load into a console error), the SVG charts are in the DOM, and
//! a screenshot of the expected size shows the charts' colours.
//!
//! Screenshots are kept under cargo's target tmp dir
//! (`report-browser/*.png`) for a person to look at.

mod common;
use common::*;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const WIDTH: u32 = 1280;
const HEIGHT: u32 = 2000;

/// Busy time in the timeline and compute in the bars (`palette::BUSY`).
const BLUE: [u8; 3] = [0x4c, 0x78, 0xa8];
/// The DataLoader cause.
const YELLOW: [u8; 3] = [0xee, 0xca, 0x3b];

fn chromium() -> PathBuf {
    if let Some(p) = std::env::var_os("GAPSCOPE_CHROMIUM") {
        return PathBuf::from(p);
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    for name in [
        "chromium",
        "chromium-browser",
        "google-chrome",
        "google-chrome-stable",
    ] {
        for dir in std::env::split_paths(&path) {
            let p = dir.join(name);
            if p.is_file() {
                return p;
            }
        }
    }
    panic!(
        "no Chromium found: install it (Debian: apt-get install -y chromium, as .ci/run does) \
         or point GAPSCOPE_CHROMIUM at a Chromium or Chrome binary"
    );
}

/// What one headless run printed.
struct Browser {
    stdout: String,
    stderr: String,
}

impl Browser {
    /// Console messages (Chromium logs each as `...:CONSOLE...] "text",
    /// source: ...` with `--enable-logging=stderr`).
    fn console(&self) -> Vec<&str> {
        self.stderr.lines().filter(|l| l.contains(":CONSOLE")).collect()
    }
}

/// Runs headless Chromium on `page` with `extra` flags, in its own profile
/// directory, killed after 90 s. Output goes to files beside the profile
/// (a pipe nobody reads while waiting would fill up and stall Chromium).
fn headless(page: &Path, profile: &Path, extra: &[String]) -> Browser {
    let url = format!("file://{}", page.canonicalize().unwrap().display());
    std::fs::create_dir_all(profile).unwrap();
    let (out_path, err_path) = (profile.join("stdout.txt"), profile.join("stderr.txt"));
    let mut child = Command::new(chromium())
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-extensions",
            "--hide-scrollbars",
            "--enable-logging=stderr",
            "--v=0",
            &format!("--user-data-dir={}", profile.display()),
            &format!("--window-size={WIDTH},{HEIGHT}"),
        ])
        .args(extra)
        .arg(&url)
        .stdout(std::fs::File::create(&out_path).unwrap())
        .stderr(std::fs::File::create(&err_path).unwrap())
        .stdin(Stdio::null())
        .spawn()
        .expect("Chromium starts");
    let deadline = Instant::now() + Duration::from_secs(90);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("Chromium did not finish on {url} in 90 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let read = |p: &Path| String::from_utf8_lossy(&std::fs::read(p).unwrap()).into_owned();
    let b = Browser {
        stdout: read(&out_path),
        stderr: read(&err_path),
    };
    assert!(status.success(), "Chromium failed on {url}:\n{}", b.stderr);
    b
}

/// Decoded RGB(A) pixels of a PNG.
struct Image {
    width: u32,
    height: u32,
    rgb: Vec<[u8; 3]>,
}

fn decode(path: &Path) -> Image {
    let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(path).unwrap()));
    let mut reader = decoder.read_info().expect("a PNG");
    let mut buf = vec![0; reader.output_buffer_size().expect("PNG size")];
    let info = reader.next_frame(&mut buf).expect("PNG frame");
    let channels = match info.color_type {
        png::ColorType::Rgb => 3,
        png::ColorType::Rgba => 4,
        other => panic!("unexpected PNG colour type {other:?}"),
    };
    assert_eq!(info.bit_depth, png::BitDepth::Eight);
    let rgb = buf[..info.buffer_size()]
        .chunks_exact(channels)
        .map(|p| [p[0], p[1], p[2]])
        .collect();
    Image {
        width: info.width,
        height: info.height,
        rgb,
    }
}

impl Image {
    fn count(&self, c: [u8; 3]) -> usize {
        self.rgb.iter().filter(|&&p| p == c).count()
    }

    fn distinct(&self) -> usize {
        let mut v: Vec<[u8; 3]> = self.rgb.clone();
        v.sort_unstable();
        v.dedup();
        v.len()
    }
}

/// Where screenshots are kept for people.
fn keep_dir() -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("report-browser");
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Writes the report of `args`, loads it in Chromium and checks it.
/// Returns the screenshot's pixels.
fn check_report(name: &str, args: &[&str]) -> Image {
    let dir = TempDir::new(&format!("browser-{name}"));
    let page = dir.path().join(format!("{name}.html"));
    let mut all = vec!["report", "-q", "-o", page.to_str().unwrap()];
    all.extend(args);
    gapscope(&all).expect_code(0);

    let dom = headless(
        &page,
        &dir.path().join("profile-dom"),
        &["--dump-dom".to_string()],
    );
    assert_eq!(dom.console(), Vec::<&str>::new(), "console messages on {name}");
    let html = &dom.stdout;
    for chart in [
        "<svg class=\"bar\"",
        "<svg class=\"strip\"",
        "<svg class=\"steps\"",
    ] {
        assert!(html.contains(chart), "{chart} not in the DOM of {name}");
    }
    assert!(
        html.matches("<rect").count() > 50,
        "too few SVG rectangles in {name}"
    );
    assert!(
        html.matches("<title>").count() > 20,
        "too few hover texts in {name}"
    );
    assert!(html.contains("GPU idle"), "no headline in {name}");

    let shot = keep_dir().join(format!("{name}.png"));
    let _ = std::fs::remove_file(&shot);
    let run = headless(
        &page,
        &dir.path().join("profile-shot"),
        &[format!("--screenshot={}", shot.display())],
    );
    assert_eq!(run.console(), Vec::<&str>::new(), "console messages on {name}");
    let img = decode(&shot);
    assert_eq!(
        (img.width, img.height),
        (WIDTH, HEIGHT),
        "screenshot size of {name}"
    );
    let white = img.count([255, 255, 255]);
    let inked = img.rgb.len() - white;
    assert!(
        inked * 20 > img.rgb.len(),
        "screenshot of {name} is nearly blank: {inked} non-white pixels"
    );
    assert!(
        img.distinct() > 30,
        "screenshot of {name} has {} colours",
        img.distinct()
    );
    assert!(
        img.count(BLUE) > 2_000,
        "little busy/compute blue in {name}: {}",
        img.count(BLUE)
    );
    eprintln!("screenshot of {name}: {}", shot.display());
    img
}

#[test]
fn shared_trace_report_renders_in_chromium() {
    let t = shared_trace("kineto-tb-plugin/resnet50_num_workers_0.worker0.1623143089861.pt.trace.json.gz");
    let img = check_report("resnet50", &[t.to_str().unwrap()]);
    // DataLoader is this trace's top cause: its colour is in the headline
    // swatch, the cause bar, the timeline and the step columns.
    assert!(
        img.count(YELLOW) > 2_000,
        "little DataLoader yellow: {}",
        img.count(YELLOW)
    );
}

#[test]
fn eight_gpu_report_renders_in_chromium() {
    let dir = TempDir::new("browser-8gpu-trace");
    let trace = dir.file("big.json", synthetic_trace(8, 100).as_bytes());
    check_report("8gpu-100steps", &[trace.to_str().unwrap()]);
}

/// The console check is not vacuous: a page that tries to load something
/// or throws is caught.
#[test]
fn console_errors_are_detected() {
    let dir = TempDir::new("browser-bad-page");
    let page = dir.file(
        "bad.html",
        br#"<!doctype html><html><head><meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; img-src data:"></head>
<body><p>x</p><img src="https://example.invalid/x.png"></body></html>"#,
    );
    let run = headless(&page, &dir.path().join("profile"), &["--dump-dom".to_string()]);
    let console = run.console();
    assert!(
        console.iter().any(|l| l.contains("example.invalid")),
        "the blocked load was not reported: {}",
        run.stderr
    );
}

/// A job's report in Chromium: no console message, the heat map's cells
/// (ranks x steps) in the DOM with their hover texts, the late rank's cell
/// outlined, and the screenshot shows the waits' reds.
#[test]
fn job_report_renders_in_chromium() {
    let dir = TempDir::new("browser-job");
    let ranks = dir.path().join("ranks");
    std::fs::create_dir_all(&ranks).unwrap();
    plant_job(
        &ranks,
        &["--ranks", "8", "--steps", "3", "--plant", "3:11:1:12:dataloader"],
    );
    let page = dir.path().join("job.html");
    gapscope([
        "report",
        "-q",
        "-o",
        page.to_str().unwrap(),
        ranks.to_str().unwrap(),
    ])
    .expect_code(0);
    let dom = headless(
        &page,
        &dir.path().join("profile-dom"),
        &["--dump-dom".to_string()],
    );
    assert_eq!(
        dom.console(),
        Vec::<&str>::new(),
        "console messages on the job report"
    );
    let html = &dom.stdout;
    assert!(html.contains("<svg class=\"heat\""), "no heat map");
    let cells = html.matches("<rect").count();
    assert_eq!(cells, 8 * 3, "one cell per rank and step");
    assert_eq!(
        html.matches("stroke=\"#1f2328\"").count(),
        1,
        "the one late rank's cell is outlined"
    );
    assert!(
        html.contains("rank 3, step 11: waited 0.00 ms for other ranks")
            && html.contains("late at 1 collective: the others waited 84.0"),
        "hover text of the culprit's cell"
    );
    assert!(html.contains("step 11: ranks 0-2, 4-7 waited 12.0 ms in all_to_all #1 for rank 3"));
    let shot = keep_dir().join("job.png");
    let _ = std::fs::remove_file(&shot);
    let run = headless(
        &page,
        &dir.path().join("profile-shot"),
        &[format!("--screenshot={}", shot.display())],
    );
    assert_eq!(run.console(), Vec::<&str>::new());
    let img = decode(&shot);
    assert_eq!((img.width, img.height), (WIDTH, HEIGHT));
    // Step 11's waiting ranks waited about half their step: the two darkest
    // reds fill 7 cells of 35 x 17 px.
    let reds = img.count([0xde, 0x2d, 0x26]) + img.count([0xa5, 0x0f, 0x15]);
    assert!(reds > 7 * 300, "little red in the heat map: {reds}");
    eprintln!("screenshot of the job report: {}", shot.display());
}

/// The findings table fits a 1,400 px window with long kernel and operator
/// names (the "what to do" column on screen, no sideways scrolling), and
/// names quoted in titles and hints show as code, not raw Markdown
/// backticks. The page's width is measured by Chromium's own layout: a copy
/// of the report, without its CSP, writes `scrollWidth` into the DOM.
#[test]
fn findings_table_fits_the_window_and_shows_no_backticks() {
    for (name, rel) in [
        ("b200", "tracelens/b200/eager_trace.json.gz"),
        (
            "xdit",
            "tracelens/inference/xdit_sd_3.5/profile_trace_rank_0.json.gz",
        ),
    ] {
        let dir = TempDir::new(&format!("browser-width-{name}"));
        let page = dir.path().join("report.html");
        let trace = shared_trace(rel);
        gapscope([
            "report",
            "-q",
            "-o",
            page.to_str().unwrap(),
            trace.to_str().unwrap(),
        ])
        .expect_code(0);
        let html = std::fs::read_to_string(&page).unwrap();
        let findings = html
            .split("<table class=\"findings\">")
            .nth(1)
            .and_then(|s| s.split("</table>").next())
            .unwrap_or_else(|| panic!("no findings table in the report of {name}"));
        assert!(findings.contains("<code>"), "no code spans in {name}'s findings");
        assert!(!findings.contains('`'), "raw backticks in {name}'s findings");
        let csp = html.find("<meta http-equiv=\"Content-Security-Policy\"").unwrap();
        let csp_end = csp + html[csp..].find('>').unwrap() + 1;
        // Third: the findings cells whose text runs past their edge (a
        // "not estimated (at most …)" once ran into the next column).
        let probe = "<script>document.body.setAttribute('data-width', \
                     document.documentElement.scrollWidth + ' ' + \
                     Math.round(document.querySelector('table.findings').getBoundingClientRect().right) + ' ' + \
                     [...document.querySelectorAll('table.findings td')].filter(c => c.scrollWidth > c.clientWidth + 1).length);</script>";
        let measured = format!(
            "{}{}",
            &html[..csp],
            html[csp_end..].replace("</body>", &format!("{probe}</body>"))
        );
        let copy = dir.file("measured.html", measured.as_bytes());
        let dom = headless(
            &copy,
            &dir.path().join("profile"),
            &["--dump-dom".to_string(), "--window-size=1400,1000".to_string()],
        );
        let width = dom
            .stdout
            .split("data-width=\"")
            .nth(1)
            .and_then(|s| s.split('"').next())
            .unwrap_or_else(|| panic!("the probe did not run on {name}: {}", dom.stderr));
        let numbers: Vec<u32> = width.split(' ').map(|n| n.parse().unwrap()).collect();
        let [page_w, table_right, overflowing] = numbers[..] else {
            panic!("{width}")
        };
        assert_eq!(
            overflowing, 0,
            "{name}: findings cells whose text runs past their edge"
        );
        assert!(
            page_w <= 1400,
            "{name}: the page is {page_w} px wide in a 1400 px window"
        );
        assert!(
            table_right <= 1400,
            "{name}: the findings table ends at {table_right} px"
        );
    }
}

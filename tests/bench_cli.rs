//! `gapscope bench` end to end on the real binary. Without the `torch`
//! feature the subcommand says how to build it; with it (CPU, tiny sizes,
//! OMP_NUM_THREADS=1): the JSON lines follow docs/bench-results.md and
//! `gapscope diff` reads them, `--profile` writes a trace (or a `.gst`
//! capture) that `analyze` and `export` read, a TorchScript file runs, and
//! a bad model or flag is one line with exit status 2.

mod common;

use common::Run;
use std::process::Command;

/// Runs `gapscope ARGS...` with libtorch's lib dir (from `LIBTORCH` at build
/// time) on the loader path and one OpenMP thread.
fn gapscope(args: &[&str]) -> Run {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_gapscope"));
    cmd.args(args).env("OMP_NUM_THREADS", "1");
    if let Some(lib) = option_env!("LIBTORCH") {
        let old = std::env::var("LD_LIBRARY_PATH").unwrap_or_default();
        cmd.env("LD_LIBRARY_PATH", format!("{lib}/lib:{old}"));
    }
    let out = cmd.output().expect("the gapscope binary runs");
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

fn one_line_error(r: &Run, contains: &str) {
    assert_eq!(r.code, 2, "stdout {} stderr {}", r.stdout, r.stderr);
    assert!(r.stdout.is_empty(), "{}", r.stdout);
    assert_eq!(r.stderr.trim_end().lines().count(), 1, "{}", r.stderr);
    assert!(r.stderr.contains(contains), "{}", r.stderr);
}

#[test]
fn bad_flag_value_is_one_line() {
    one_line_error(&gapscope(&["bench", "resnet18", "--precision", "fp8"]), "fp8");
    one_line_error(
        &gapscope(&["bench", "resnet18", "--no-such-flag"]),
        "--no-such-flag",
    );
    one_line_error(&gapscope(&["bench", "resnet18", "--iters", "0"]), "--iters");
}

#[cfg(not(feature = "torch"))]
#[test]
fn without_the_feature_it_says_how_to_build() {
    one_line_error(&gapscope(&["bench", "resnet18"]), "--features torch");
}

#[cfg(feature = "torch")]
mod with_torch {
    use super::common::{repo, TempDir};
    use super::*;

    const FAST: &[&str] = &["--small", "--bs", "2", "--iters", "3", "--warmup", "1", "-q"];

    fn bench(extra: &[&str]) -> Run {
        let mut args = vec!["bench"];
        args.extend_from_slice(extra);
        args.extend_from_slice(FAST);
        gapscope(&args)
    }

    #[test]
    fn until_oom_needs_a_sweep() {
        one_line_error(
            &bench(&["resnet18", "--until-oom"]),
            "the following required arguments were not provided: --bs-sweep",
        );
    }

    #[test]
    fn nvtx_on_the_cpu_is_one_line() {
        one_line_error(&bench(&["resnet18", "--nvtx"]), "--nvtx needs --device cuda");
    }

    #[test]
    fn unknown_model_is_one_line() {
        one_line_error(&gapscope(&["bench", "resnet19"]), "unknown model `resnet19`");
        one_line_error(
            &gapscope(&["bench", "--torchscript", "no/such.pt", "--input-shape", "1,2"]),
            "no/such.pt",
        );
    }

    #[test]
    fn results_follow_the_documented_format_and_diff_reads_them() {
        let dir = TempDir::new("bench-cli");
        let out = dir.path().join("r.jsonl");
        let out_s = out.to_str().unwrap();
        bench(&["resnet18", "--mode", "eval", "-o", out_s]).expect_code(0);
        let text = std::fs::read_to_string(&out).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 1, "{text}");
        let v: serde_json::Value = serde_json::from_str(lines[0]).unwrap();
        assert_eq!(v["schema"], "gapscope-bench/1");
        assert_eq!(v["model"], "resnet18");
        assert_eq!(v["status"], "ok");
        let c = &v["config"];
        assert_eq!(
            (c["mode"].as_str(), c["device"].as_str()),
            (Some("eval"), Some("cpu"))
        );
        assert_eq!(
            (c["batch_size"].as_i64(), c["precision"].as_str()),
            (Some(2), Some("fp32"))
        );
        let times = v["times_ns"].as_array().unwrap();
        assert_eq!(times.len(), 3);
        assert!(times.iter().all(|t| t.as_u64().is_some_and(|t| t > 0)));
        assert!(v["peak_cpu_memory_bytes"].as_u64().unwrap() > 0);
        assert!(v["throughput_per_s"].as_f64().unwrap() > 0.0);

        // `gapscope diff` takes it as bench results: same file, no regression.
        let d = gapscope(&["diff", "--format", "json", out_s, out_s]).expect_code(0);
        let j = d.json();
        assert_eq!(j["kind"], "bench");
        assert_eq!(j["regression"], false);
    }

    #[test]
    fn train_records_a_final_loss_and_stdout_is_json_lines() {
        let r = bench(&["gpt"]).expect_code(0);
        let v: serde_json::Value = serde_json::from_str(r.stdout.trim()).unwrap();
        assert_eq!(v["config"]["mode"], "train");
        assert!(v["final_loss"].as_f64().unwrap().is_finite());
    }

    #[test]
    fn profile_writes_a_trace_that_analyze_and_export_read() {
        let dir = TempDir::new("bench-profile");
        let trace = dir.path().join("run.json");
        let t = trace.to_str().unwrap();
        bench(&["resnet18", "--profile", t]).expect_code(0);
        let text = std::fs::read_to_string(&trace).unwrap();
        assert!(text.contains("\"aten::conv2d\""));
        assert!(text.contains("ProfilerStep#2"));
        let a = gapscope(&["analyze", "--format", "json", t])
            .expect_code(0)
            .json();
        assert!(a.is_object(), "{a}");
        let chrome = dir.path().join("out.json");
        gapscope(&["export", "--format", "chrome", "-o", chrome.to_str().unwrap(), t]).expect_code(0);
        assert!(std::fs::read_to_string(&chrome).unwrap().contains("aten::addmm"));
    }

    #[test]
    fn profile_gst_writes_a_capture_that_analyze_and_export_read() {
        let dir = TempDir::new("bench-profile-gst");
        let cap = dir.path().join("run.gst");
        let c = cap.to_str().unwrap();
        bench(&["resnet18", "--profile", c]).expect_code(0);
        assert!(std::fs::read(&cap).unwrap().starts_with(b"\x89GST\r\n\x1a\n"));
        assert!(!dir.path().join("run.gst.tmp").exists());
        let a = gapscope(&["analyze", "--format", "json", c])
            .expect_code(0)
            .json();
        assert_eq!(a["source"]["format"], "gapscope-capture", "{a}");
        let chrome = dir.path().join("out.json");
        gapscope(&["export", "--format", "chrome", "-o", chrome.to_str().unwrap(), c]).expect_code(0);
        let text = std::fs::read_to_string(&chrome).unwrap();
        assert!(text.contains("aten::addmm") && text.contains("ProfilerStep#2"));
    }

    #[test]
    fn torchscript_file_runs() {
        let pt = repo().join("fixtures/torchscript/mlp.pt");
        let r = bench(&[
            "--torchscript",
            pt.to_str().unwrap(),
            "--input-shape",
            "4,16",
            "--mode",
            "eval",
        ])
        .expect_code(0);
        let v: serde_json::Value = serde_json::from_str(r.stdout.trim()).unwrap();
        assert_eq!(v["model"], "torchscript:mlp.pt");
        assert_eq!(v["status"], "ok");
    }

    #[test]
    fn cuda_without_a_gpu_is_an_error_not_a_crash() {
        // On a machine with a GPU and the full PyTorch install this runs
        // instead; either way nothing panics.
        let r = bench(&["resnet18", "--device", "cuda", "--mode", "eval"]);
        assert!(r.code == 0 || r.code == 2, "{} {}", r.code, r.stderr);
        if r.code == 2 {
            assert!(r.stderr.contains("--device cuda"), "{}", r.stderr);
        }
    }
}

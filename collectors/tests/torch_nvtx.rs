//! `RunConfig::nvtx` on real libtorch: libtorch's NVTX profiler state
//! around real training steps (forward, backward, optimizer), with the
//! operator observer recording at the same time. Needs libtorch_cuda.so
//! and the CUDA libraries it links (scripts/test.sh installs them into the
//! torch venv before running this), and `cc`; no GPU and no driver.
//!
//! The ranges are caught as a profiler would catch them: NVTX loads the
//! library `NVTX_INJECTION64_PATH` names at its first call and asks it to
//! fill in its function table (`InitializeInjectionNvtx2`); the one compiled
//! here puts its own `nvtxRangePushA` and `nvtxRangePop` there and writes each
//! call to a file. Its own test binary, because loading libtorch_cuda and
//! NVTX's one-time initialisation change the process for every test after it.

#![cfg(feature = "torch")]

use gapscope_collectors::torch::models;
use gapscope_collectors::torch::runner::{self, Mode, RunConfig, Source};
use gapscope_collectors::torch::{tch::Device, Precision};
use std::path::Path;
use std::process::Command;

/// An NVTX injection library: core function table slots 9 (nvtxRangePushA)
/// and 11 (nvtxRangePop), as NVTX's `NVTX_CBID_CORE_*` numbers them.
const INJECTION: &str = r#"
#include <stdio.h>
#include <stdlib.h>
#include <stddef.h>
typedef void (*fn_t)(void);
typedef fn_t** table_t;
typedef struct { size_t struct_size; int (*GetModuleFunctionTable)(int, table_t*, unsigned int*); } callbacks_t;
typedef const void* (*get_export_table_t)(unsigned int);
static FILE* out;
static int push(const char* m) { fprintf(out, "push %s\n", m); return 0; }
static int pop(void) { fprintf(out, "pop\n"); return 0; }
int InitializeInjectionNvtx2(get_export_table_t get) {
  const callbacks_t* cb = (const callbacks_t*)get(1); /* NVTX_ETID_CALLBACKS */
  table_t t; unsigned int n = 0;
  if (!cb || !cb->GetModuleFunctionTable(1 /* CORE */, &t, &n) || n <= 11) return 0;
  out = fopen(getenv("GAPSCOPE_TEST_NVTX_LOG"), "w");
  if (!out) return 0;
  setvbuf(out, NULL, _IOLBF, 0);
  *t[9] = (fn_t)push;
  *t[11] = (fn_t)pop;
  return 1;
}
"#;

fn build_injection(dir: &Path) -> std::path::PathBuf {
    let src = dir.join("inject.c");
    let lib = dir.join("libtestnvtx.so");
    std::fs::write(&src, INJECTION).unwrap();
    let st = Command::new("cc")
        .args(["-shared", "-fPIC", "-O1", "-o"])
        .arg(&lib)
        .arg(&src)
        .status()
        .expect("cc runs");
    assert!(st.success(), "cc failed to build the NVTX injection library");
    lib
}

#[test]
fn a_training_run_under_nvtx_ranges_names_its_steps_and_operators() {
    let dir = std::env::temp_dir().join(format!("gapscope-nvtx-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let log = dir.join("ranges.log");
    // Before anything in the process calls NVTX: it reads these once.
    std::env::set_var("NVTX_INJECTION64_PATH", build_injection(&dir));
    std::env::set_var("GAPSCOPE_TEST_NVTX_LOG", &log);
    // SAFETY: dlopen of a library name, kept loaded for the process.
    let h = unsafe { libc::dlopen(c"libtorch_cuda.so".as_ptr(), libc::RTLD_NOW | libc::RTLD_GLOBAL) };
    assert!(
        !h.is_null(),
        "libtorch_cuda.so does not load: put the torch venv's torch/lib on LD_LIBRARY_PATH and install the CUDA libraries it links (scripts/test.sh)"
    );
    let cfg = RunConfig {
        mode: Mode::Train,
        device: Device::Cpu,
        batch_size: Some(2),
        precision: Precision::Fp32,
        iters: 3,
        warmup: 1,
        small: true,
        profile: true,
        nvtx: true,
    };
    let model = Source::Builtin(models::find("resnet18").unwrap());
    let with = runner::run(&model, &cfg);
    assert_eq!(with.record.status, "ok", "{:?}", with.record.error);
    assert_eq!(with.record.times_ns.len(), 3);
    // The observer saw forward and backward under the NVTX state.
    assert!(with.ops.iter().any(|o| o.name == "aten::convolution"));
    assert!(with.ops.iter().any(|o| o.name.contains("ConvolutionBackward")));
    let without = runner::run(
        &model,
        &RunConfig {
            nvtx: false,
            ..cfg.clone()
        },
    );
    assert_eq!(without.record.status, "ok");
    // Seeded the same: the same losses, the same operators.
    assert_eq!(with.record.final_loss, without.record.final_loss);
    let names = |ops: &[gapscope_collectors::torch::observer::OpEvent]| {
        let mut v: Vec<&str> = ops.iter().map(|o| o.name.as_str()).collect();
        v.sort_unstable();
        v.dedup();
        v.len()
    };
    assert_eq!(names(&with.ops), names(&without.ops));

    // What NVTX saw: one ProfilerStep#N per timed iteration, in order, and
    // inside them the operators named as emit_nvtx() names them, forward and
    // backward; every push popped; nothing from the run without ranges
    // (or its warm-up) and nothing after the state was turned off.
    let text = std::fs::read_to_string(&log).expect("the injection library wrote its log");
    let pushes: Vec<&str> = text.lines().filter_map(|l| l.strip_prefix("push ")).collect();
    let pops = text.lines().filter(|l| *l == "pop").count();
    assert_eq!(pushes.len(), pops, "every range popped");
    let steps: Vec<&str> = pushes
        .iter()
        .copied()
        .filter(|p| p.starts_with("ProfilerStep#"))
        .collect();
    assert_eq!(steps, ["ProfilerStep#0", "ProfilerStep#1", "ProfilerStep#2"]);
    let conv = pushes
        .iter()
        .filter(|p| p.starts_with("aten::convolution, seq = ") && p.contains(", op_id = "))
        .count();
    let conv_per_step = with.ops.iter().filter(|o| o.name == "aten::convolution").count() / 3;
    assert_eq!(conv, 3 * conv_per_step, "one range per aten::convolution call");
    assert!(
        pushes.iter().any(|p| p.contains("ConvolutionBackward0")),
        "backward nodes too"
    );
    assert!(
        text.lines().next() == Some("push ProfilerStep#0"),
        "nothing before the first timed step"
    );
    std::fs::remove_dir_all(&dir).ok();
}

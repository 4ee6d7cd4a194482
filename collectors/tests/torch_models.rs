//! Feature `torch`, on the CPU with tiny sizes: every built-in model trains
//! (finite loss that changes after a step) and evaluates; the operator
//! observer sees a resnet18 step's ops, nested, with threads and sequence
//! numbers; the TorchScript fixture loads and runs; the runner's record has
//! the bench-results fields.
//!
//! Run with `OMP_NUM_THREADS=1` (libgomp spin-waits on a busy machine).

#![cfg(feature = "torch")]

use gapscope_collectors::torch::models::{self, ModelConfig, TorchScript, Workload, MODELS};
use gapscope_collectors::torch::observer::{self, Recording, Scope};
use gapscope_collectors::torch::runner::{self, Mode, RunConfig, Source};
use gapscope_collectors::torch::tch::{self, Device, Kind, Tensor};
use gapscope_collectors::torch::Precision;
use std::path::PathBuf;
use std::sync::Mutex;

/// The observer is process-wide: tests that run libtorch take turns so a
/// recording sees only its own ops.
static TORCH: Mutex<()> = Mutex::new(());

fn lock() -> std::sync::MutexGuard<'static, ()> {
    TORCH.lock().unwrap_or_else(|e| e.into_inner())
}

fn small(batch_size: i64) -> ModelConfig {
    ModelConfig {
        device: Device::Cpu,
        batch_size,
        precision: Precision::Fp32,
        small: true,
    }
}

fn scalar(t: &Tensor) -> f64 {
    f64::try_from(t.to_kind(Kind::Float)).expect("a scalar loss")
}

fn all_finite(t: &Tensor) -> bool {
    bool::try_from(t.to_kind(Kind::Float).isfinite().all()).unwrap()
}

fn check_model(w: &mut dyn Workload, name: &str) {
    let first = scalar(&w.train_step());
    let second = scalar(&w.train_step());
    assert!(
        first.is_finite() && second.is_finite(),
        "{name}: losses {first} {second}"
    );
    assert_ne!(
        first, second,
        "{name}: the loss did not change after an optimizer step"
    );
    let out = w.eval_step();
    assert!(
        out.numel() > 0 && all_finite(&out),
        "{name}: eval output not finite"
    );
    assert!(!out.requires_grad(), "{name}: eval kept autograd");
}

#[test]
fn every_builtin_model_trains_and_evaluates() {
    let _g = lock();
    tch::manual_seed(0);
    for m in MODELS {
        // Names the model in the output if libtorch panics inside it.
        eprintln!("model {}", m.name);
        let mut w = m.build(&small(2));
        check_model(w.as_mut(), m.name);
    }
}

#[test]
fn registry_names_are_unique_and_found() {
    for m in MODELS {
        assert_eq!(models::find(m.name).map(|f| f.name), Some(m.name));
    }
    assert!(models::find("no_such_model").is_none());
    for want in ["resnet18", "gpt", "lstm", "dlrm", "actor_critic", "dcgan"] {
        assert!(models::find(want).is_some(), "{want}");
    }
}

fn fixture() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../fixtures/torchscript/mlp.pt")
}

#[test]
fn torchscript_fixture_loads_and_runs() {
    let _g = lock();
    let cfg = small(4);
    let mut eval = TorchScript::load(&fixture(), &[4, 16], &cfg, false).expect("mlp.pt loads");
    let out = eval.eval_step();
    assert_eq!(out.size(), [4, 4]);
    let rows = out.sum_dim_intlist(-1, false, Kind::Float);
    assert!(bool::try_from(
        rows.isclose(&Tensor::ones([4], (Kind::Float, Device::Cpu)), 1e-5, 1e-5, false)
            .all()
    )
    .unwrap());
    // The plain CModule API runs it too.
    let m = tch::CModule::load(fixture()).unwrap();
    assert_eq!(
        m.forward_ts(&[Tensor::randn([2, 16], (Kind::Float, Device::Cpu))])
            .unwrap()
            .size(),
        [2, 4]
    );
    // Trainable: the mean-of-output loss is finite and the step runs.
    let mut train = TorchScript::load(&fixture(), &[4, 16], &cfg, true).unwrap();
    let l = scalar(&train.train_step());
    assert!(l.is_finite());
}

#[test]
fn observer_records_a_resnet18_step() {
    let _g = lock();
    tch::manual_seed(0);
    let mut w = models::find("resnet18").unwrap().build(&small(2));
    let _ = w.train_step(); // warm-up: first-call allocations stay out
    let rec = Recording::start(true).unwrap();
    assert!(
        Recording::start(true).is_err(),
        "a second recording must be refused"
    );
    let _ = w.train_step();
    let ops = rec.stop();
    assert!(ops.len() > 500, "{} events", ops.len());
    let count = |n: &str| ops.iter().filter(|e| e.name == n).count();
    // tch's resnet18: the stem, 16 in the basic blocks (its 1x1 shortcuts are
    // plain convolutions too, counted under aten::conv2d or not by version).
    assert!(
        count("aten::conv2d") >= 17,
        "{} convolutions",
        count("aten::conv2d")
    );
    assert!(count("aten::addmm") >= 1, "the final linear layer");
    assert!(count("aten::zero_") + count("aten::fill_") >= 1, "zero_grad");
    // SGD with momentum: add_/mul_ (or the fused _foreach ops) per parameter.
    let optim = ops
        .iter()
        .filter(|e| e.name.starts_with("aten::_foreach_") || e.name == "aten::add_")
        .count();
    assert!(optim >= 62, "{optim} optimizer updates for 62 parameters");
    // Backward nodes, paired with their forward op by sequence number.
    let conv = ops
        .iter()
        .find(|e| e.name == "aten::conv2d" && e.seq >= 0)
        .expect("conv2d with a seq");
    assert!(ops.iter().any(|e| e.scope == Scope::Backward
        && e.name.starts_with("ConvolutionBackward")
        && e.seq == conv.seq));
    // Nesting: conv2d contains convolution, parents enclose children.
    for (i, e) in ops.iter().enumerate() {
        assert!(e.end_ns >= e.start_ns, "{e:?}");
        if let Some(p) = e.parent {
            let p = &ops[p];
            assert!(
                p.start_ns <= e.start_ns && e.end_ns <= p.end_ns,
                "{i}: {e:?} outside {p:?}"
            );
            assert_eq!(p.os_tid, e.os_tid);
            assert_eq!(p.depth + 1, e.depth);
        } else {
            assert_eq!(e.depth, 0);
        }
    }
    let conv_child = ops
        .iter()
        .find(|e| e.name == "aten::convolution" && e.parent.is_some())
        .unwrap();
    assert_eq!(ops[conv_child.parent.unwrap()].name, "aten::conv2d");
    assert!(ops.iter().all(|e| e.os_tid > 0 && e.thread > 0));
    assert!(
        conv.shapes.starts_with("[[2, 3, 64, 64], [64, 3, 7, 7]"),
        "{}",
        conv.shapes
    );

    // Into our Trace: one op row per event, nested the same way.
    let steps = [observer::Step {
        number: 0,
        start_ns: ops[0].start_ns - 1,
        end_ns: observer::now_ns(),
    }];
    let trace = observer::to_trace(&ops, &steps, "test");
    assert_eq!(trace.cpu_ops.len(), ops.len() + 1);
    let names: Vec<&str> = (0..trace.cpu_ops.len())
        .map(|i| trace.strings.get(trace.cpu_ops.name[i]))
        .collect();
    assert!(names.contains(&"ProfilerStep#0"));
    let max_depth = trace.cpu_ops.depth.iter().copied().max().unwrap();
    assert!(max_depth >= 4, "depth {max_depth}");

    // Off again: nothing is recorded after stop.
    let _ = w.eval_step();
    let rec = Recording::start(false).unwrap();
    let none = rec.stop();
    assert!(none.is_empty(), "{} events recorded while idle", none.len());
}

#[test]
fn runner_record_has_the_bench_fields() {
    let _g = lock();
    let cfg = small_eval(2, 3);
    let r = runner::run(&Source::Builtin(models::find("mobilenet_v2").unwrap()), &cfg);
    let v = serde_json::to_value(&r.record).unwrap();
    assert_eq!(v["schema"], "gapscope-bench/1");
    assert_eq!(v["status"], "ok", "{v}");
    assert_eq!(v["times_ns"].as_array().unwrap().len(), 3);
    assert!(v["times_ns"]
        .as_array()
        .unwrap()
        .iter()
        .all(|t| t.as_u64().unwrap() > 0));
    assert!(
        v["min_ns"].as_u64() <= v["median_ns"].as_u64() && v["median_ns"].as_u64() <= v["max_ns"].as_u64()
    );
    assert!(v["peak_cpu_memory_bytes"].as_u64().unwrap() > 10 << 20);
    assert!(v.get("peak_gpu_memory_bytes").is_none());
    assert_eq!(v["config"]["batch_size"], 2);
    assert!(r.ops.is_empty());
}

#[test]
fn nvtx_ranges_without_libtorch_cuda_fail_the_run_with_the_reason() {
    // Without libtorch_cuda's profiler stubs every operator would throw
    // inside libtorch's NVTX callback; the shim refuses before that.
    let _g = lock();
    let cfg = RunConfig {
        nvtx: true,
        ..small_eval(2, 2)
    };
    let r = runner::run(&Source::Builtin(models::find("resnet18").unwrap()), &cfg);
    let v = serde_json::to_value(&r.record).unwrap();
    assert_eq!(v["status"], "error", "{v}");
    let why = v["error"].as_str().unwrap_or_default();
    assert!(
        why.contains("libtorch could not emit NVTX ranges: libtorch_cuda is not loaded"),
        "{why}"
    );
    // The state was never turned on, so a plain run afterwards works.
    let plain = runner::run(
        &Source::Builtin(models::find("resnet18").unwrap()),
        &RunConfig { nvtx: false, ..cfg },
    );
    assert_eq!(plain.record.status, "ok");
}

#[test]
fn the_batch_sweep_doubles_until_its_rule_says_stop() {
    let _g = lock();
    let cfg = small_eval(1, 2);
    let model = Source::Builtin(models::find("mobilenet_v2").unwrap());
    let batches = |runs: &[runner::RunOutput]| -> Vec<i64> {
        runs.iter()
            .map(|r| {
                serde_json::to_value(&r.record).unwrap()["config"]["batch_size"]
                    .as_i64()
                    .unwrap()
            })
            .collect()
    };
    // Until a failure: every doubling up to the largest allowed, whatever
    // the throughput did.
    let all = runner::sweep(&model, &cfg, 8, runner::SweepUntil::Failure);
    assert_eq!(batches(&all), [1, 2, 4, 8]);
    assert!(all.iter().all(|r| r.record.status == "ok"));
    // TorchBench's rule stops at the first run without 1% more throughput
    // than the best before it (or at the largest batch): a prefix of the
    // same doublings, each run but the last one gaining.
    let gain = runner::sweep(&model, &cfg, 8, runner::SweepUntil::NoGain);
    let b = batches(&gain);
    assert!(!b.is_empty() && b == [1, 2, 4, 8][..b.len()], "{b:?}");
    let tput: Vec<f64> = gain.iter().map(|r| r.record.throughput_per_s.unwrap()).collect();
    for i in 1..tput.len() - 1 {
        let best = tput[..i].iter().cloned().fold(0.0, f64::max);
        assert!(
            tput[i] >= best * 1.01,
            "run {i} gained less than 1% yet the sweep went on: {tput:?}"
        );
    }
    if b.len() < 4 {
        let best = tput[..tput.len() - 1].iter().cloned().fold(0.0, f64::max);
        assert!(
            *tput.last().unwrap() < best * 1.01,
            "stopped early without a reason: {tput:?}"
        );
    }
}

/// A tiny eval run on the CPU: batch `batch`, `iters` timed iterations after
/// one warm-up, nothing recorded.
fn small_eval(batch: i64, iters: usize) -> RunConfig {
    RunConfig {
        mode: Mode::Eval,
        device: Device::Cpu,
        batch_size: Some(batch),
        precision: Precision::Fp32,
        iters,
        warmup: 1,
        small: true,
        profile: false,
        nvtx: false,
    }
}

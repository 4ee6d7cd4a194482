//! ROCm's tracer records some copies with the wrong direction: a
//! `hipMemcpyWithStream` from device to host (the call's `kind` arg 2,
//! `hipMemcpyDeviceToHost`) as `Memcpy DtoD (Device -> Device)`, as in the
//! MI300X Qwen trace of `../shared/traces/tracelens`. The copy takes the
//! direction its launching call asked for; `hipMemcpyDefault` (4) and CUDA
//! calls leave the record's own direction. Older tracers (ROCm 6.2, the
//! MI250 trace of `../shared/traces/hta/amd_trace`) give a copy's size only
//! on its call (`size`): the copy takes it.

use gapscope_collectors::kineto::{import_bytes, ImportOptions};
use gapscope_collectors::trace::{CopyKind, GpuKind, MemKind};

fn trace(call: &str, kind: &str) -> gapscope_collectors::trace::Trace {
    let json = format!(
        r#"{{"traceEvents": [
        {{"ph": "X", "cat": "cuda_runtime", "name": "{call}", "pid": 1, "tid": 1, "ts": 10, "dur": 30,
          "args": {{"correlation": 7, "kind": "{kind}", "bytes": "1"}}}},
        {{"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy DtoD (Device -> Device)", "pid": 2, "tid": 0,
          "ts": 35, "dur": 1, "args": {{"device": 2, "stream": 0, "correlation": 7, "kind": "DtoD", "bytes": 1}}}}
    ]}}"#
    );
    import_bytes(json.as_bytes(), "hip.json", &ImportOptions::default()).unwrap()
}

fn copy(t: &gapscope_collectors::trace::Trace) -> (CopyKind, MemKind, MemKind) {
    let g = &t.gpu;
    let i = (0..g.len()).find(|&i| g.kind[i] == GpuKind::Memcpy).unwrap();
    (g.copy_kind[i], g.src_mem[i], g.dst_mem[i])
}

#[test]
fn a_hip_copy_takes_the_direction_its_call_asked_for() {
    assert_eq!(
        copy(&trace("hipMemcpyWithStream", "2")),
        (CopyKind::DtoH, MemKind::Device, MemKind::Unknown)
    );
    assert_eq!(
        copy(&trace("hipMemcpyAsync", "1")),
        (CopyKind::HtoD, MemKind::Unknown, MemKind::Device)
    );
}

#[test]
fn default_kind_and_cuda_calls_keep_the_record() {
    let dtod = (CopyKind::DtoD, MemKind::Device, MemKind::Device);
    assert_eq!(copy(&trace("hipMemcpyWithStream", "4")), dtod);
    assert_eq!(copy(&trace("cudaMemcpyAsync", "2")), dtod);
}

/// The copy's record without `bytes`, its call with `size` (a string, as
/// ROCm 6.2 writes it): the copy moves the call's bytes. A record with its
/// own bytes keeps them.
#[test]
fn a_copy_without_bytes_takes_its_calls_size() {
    let json = |gpu_bytes: &str| {
        format!(
            r#"{{"traceEvents": [
            {{"ph": "X", "cat": "cuda_runtime", "name": "hipMemcpyWithStream", "pid": 1, "tid": 1, "ts": 10, "dur": 30,
              "args": {{"correlation": 117, "src": "0x55674ecd4180", "size": "2560", "kind": "1"}}}},
            {{"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD (Host -> Device)", "pid": 2, "tid": 0,
              "ts": 35, "dur": 1, "args": {{"device": 2, "stream": 0, "correlation": 117, "kind": "HtoD"{gpu_bytes}}}}}
        ]}}"#
        )
    };
    let bytes = |json: String| {
        let t = import_bytes(json.as_bytes(), "hip.json", &ImportOptions::default()).unwrap();
        let i = (0..t.gpu.len())
            .find(|&i| t.gpu.kind[i] == GpuKind::Memcpy)
            .unwrap();
        t.gpu.bytes[i]
    };
    assert_eq!(bytes(json("")), 2560);
    assert_eq!(bytes(json(r#", "bytes": 4096"#)), 4096);
}

/// `size` is read for copies, and stays a counter's value when it is the
/// counter's first argument, as any other key would.
#[test]
fn a_counter_named_size_keeps_its_value() {
    let json = r#"{"traceEvents": [
        {"ph": "C", "name": "queue", "pid": 1, "tid": 1, "ts": 10, "args": {"size": 3}},
        {"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 1, "ts": 10, "dur": 5}
    ]}"#;
    let t = import_bytes(json.as_bytes(), "counter.json", &ImportOptions::default()).unwrap();
    assert_eq!(t.markers.value, vec![3.0]);
}

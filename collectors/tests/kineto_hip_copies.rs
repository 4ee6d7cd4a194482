//! ROCm's tracer records some copies with the wrong direction: a
//! `hipMemcpyWithStream` from device to host (the call's `kind` arg 2,
//! `hipMemcpyDeviceToHost`) as `Memcpy DtoD (Device -> Device)`, as in the
//! MI300X Qwen trace of `../shared/traces/tracelens`. The copy takes the
//! direction its launching call asked for; `hipMemcpyDefault` (4) and CUDA
//! calls leave the record's own direction.

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

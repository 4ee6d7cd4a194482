//! Feature `torch`: a TorchBench-style model runner on tch (libtorch) and an
//! operator observer.
//!
//! - [`models`]: the built-in models and TorchScript files, each with a train
//!   and an eval step.
//! - [`runner`]: warm-up, timed iterations, peak memory; one
//!   [`runner::BenchRecord`] per model and configuration (the JSON-lines
//!   format of docs/bench-results.md).
//! - [`observer`]: a C++ RecordFunction callback (csrc/observer.cpp) that
//!   records every aten op, converted into a [`crate::trace::Trace`].
//!
//! libtorch comes from PyTorch 2.11.0's pip wheel (docs/torch.md).

pub mod models;
pub mod observer;
pub mod runner;

pub use tch;

use std::fmt;

/// Numeric precision of a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Precision {
    /// float32, TF32 off.
    Fp32,
    /// float32 storage, TF32 matmuls and convolutions on CUDA.
    Tf32,
    /// Weights and inputs in float16.
    Fp16,
    /// Weights and inputs in bfloat16.
    Bf16,
    /// float32 weights, autocast (float16) on CUDA; plain float32 on CPU.
    Amp,
}

impl Precision {
    /// Every precision, as named on the command line.
    pub const ALL: [Precision; 5] = [Self::Fp32, Self::Tf32, Self::Fp16, Self::Bf16, Self::Amp];

    /// The name used on the command line and in results.
    pub fn name(self) -> &'static str {
        match self {
            Self::Fp32 => "fp32",
            Self::Tf32 => "tf32",
            Self::Fp16 => "fp16",
            Self::Bf16 => "bf16",
            Self::Amp => "amp",
        }
    }

    /// The precision called `s`.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|p| p.name() == s)
    }
}

impl fmt::Display for Precision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

extern "C" {
    fn gs_set_allow_tf32(allow: i32) -> i32;
    fn gs_device_peak_allocated(device_type: i32, index: i32) -> i64;
    fn gs_device_reset_peak(device_type: i32, index: i32) -> i32;
    fn gs_device_empty_cache(device_type: i32) -> i32;
}

/// c10::DeviceType::CUDA.
const CUDA_DEVICE_TYPE: i32 = 1;

/// Makes libtorch's CUDA backend available. The linker drops
/// `libtorch_cuda.so` (nothing references it by name), so it is loaded here
/// at run time; on a machine with only the CPU parts of libtorch this fails
/// cleanly. Returns why CUDA cannot be used, if it cannot.
pub fn load_cuda() -> Result<(), String> {
    // SAFETY: dlopen with a constant name; the handle is kept for the life
    // of the process on purpose.
    let handle = unsafe { libc::dlopen(c"libtorch_cuda.so".as_ptr(), libc::RTLD_NOW | libc::RTLD_GLOBAL) };
    if handle.is_null() {
        // SAFETY: dlerror returns a message owned by libc or null.
        let why = unsafe {
            let e = libc::dlerror();
            if e.is_null() {
                "unknown error".to_string()
            } else {
                std::ffi::CStr::from_ptr(e).to_string_lossy().into_owned()
            }
        };
        return Err(format!(
            "cannot load libtorch_cuda.so ({why}); put PyTorch's torch/lib on LD_LIBRARY_PATH"
        ));
    }
    if !tch::Cuda::is_available() {
        return Err("libtorch's CUDA backend loaded but found no GPU".to_string());
    }
    Ok(())
}

/// Allows or forbids TF32 in cuBLAS and cuDNN.
pub fn set_allow_tf32(allow: bool) {
    // SAFETY: the shim catches every C++ exception.
    unsafe { gs_set_allow_tf32(i32::from(allow)) };
}

/// Peak bytes allocated on CUDA device `index` since the last
/// [`reset_cuda_peak`]; `None` when CUDA is not loaded.
pub fn cuda_peak_allocated(index: usize) -> Option<u64> {
    // SAFETY: the shim catches every C++ exception.
    let v = unsafe { gs_device_peak_allocated(CUDA_DEVICE_TYPE, index as i32) };
    u64::try_from(v).ok()
}

/// Hands the CUDA caching allocator's free blocks back to the driver (as
/// `torch.cuda.empty_cache()`), so a run starts with none of the previous
/// run's cache, and a run that ran out of memory leaves no fragments behind.
/// Does nothing when CUDA is not loaded.
pub fn release_cuda_cache() {
    // SAFETY: the shim catches every C++ exception.
    unsafe { gs_device_empty_cache(CUDA_DEVICE_TYPE) };
}

/// Resets the peak of [`cuda_peak_allocated`].
pub fn reset_cuda_peak(index: usize) {
    // SAFETY: the shim catches every C++ exception.
    unsafe { gs_device_reset_peak(CUDA_DEVICE_TYPE, index as i32) };
}

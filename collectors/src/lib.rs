//! gapscope's collectors and the Trace model they fill.
//!
//! - [`trace`]: the columnar, nanosecond, interned data model ([`trace::Trace`])
//!   and the [`trace::TraceBuilder`] every source goes through.
//! - [`kineto`]: PyTorch profiler (Kineto) Chrome-trace JSON import.
//! - [`capture`]: gapscope's own capture format (`.gst`): write, read, merge.
//! - `torch` (feature `torch`): the tch model runner and operator observer.
//!
//! Collectors only record what happened; deciding what is a problem is the
//! analyzers' job.

#![deny(missing_docs)]

pub mod capture;
pub mod cupti;
pub mod kineto;
#[cfg(feature = "torch")]
pub mod torch;
pub mod trace;

//! gapscope's collectors and the Trace model they fill.
//!
//! - [`trace`]: the columnar, nanosecond, interned data model ([`trace::Trace`])
//!   and the [`trace::TraceBuilder`] every source goes through.
//! - [`kineto`]: PyTorch profiler (Kineto) Chrome-trace JSON import.
//! - [`capture`]: gapscope's own capture format (`.gst`): write, read, merge.
//! - [`open`]: the one loader every command reads files with (Kineto JSON,
//!   gzip, captures, pipes; told by their first bytes).
//! - [`record`]: the machinery of `gapscope record` (which libcupti, the
//!   injection's environment, signal forwarding, merging the captures).
//! - [`bench_record`]: one line of a bench-results file, as the runner
//!   writes it and `gapscope diff` reads it.
//! - `torch` (feature `torch`): the tch model runner and operator observer.
//!
//! Collectors only record what happened; deciding what is a problem is the
//! analyzers' job.

#![deny(missing_docs)]

pub mod bench_record;
pub mod capture;
pub mod cupti;
pub mod kineto;
pub mod open;
#[cfg(unix)]
pub mod record;
#[cfg(feature = "torch")]
pub mod torch;
pub mod trace;

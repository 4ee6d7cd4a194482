//! gapscope's analyses: pure functions of a [`Trace`](gapscope_collectors::trace::Trace)
//! that return plain serializable data. A [`Session`] holds the analysis of
//! one trace, built once; [`Analysis`] is its serializable view.

#![deny(missing_docs)]

pub mod analysis;
mod assemble;
pub mod attribution;
pub mod bounds;
pub mod breakdown;
pub mod causes;
pub mod collectives;
pub mod counters;
pub mod detectors;
pub mod diff;
pub mod evidence;
pub mod format;
mod free;
pub mod gaps;
pub mod gpu_metrics;
pub mod idle;
pub mod intervals;
pub mod job;
pub mod kernels;
pub mod kinds;
pub mod launch_stats;
pub mod names;
pub mod platform;
pub mod segments;
pub mod session;
pub mod strip;
pub mod temporal;
pub mod whatif;
pub mod window;
pub mod workload;

pub use analysis::{Analysis, AnalyzeOptions};
pub use assemble::analyze;
pub use session::Session;

//! gapscope's analyses: pure functions of a [`Trace`](gapscope_collectors::trace::Trace)
//! that return plain serializable data.

#![deny(missing_docs)]

pub mod intervals;

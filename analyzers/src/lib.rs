//! gapscope's analyses: pure functions of a [`Trace`](gapscope_collectors::trace::Trace)
//! that return plain serializable data.

#![deny(missing_docs)]

pub mod attribution;
pub mod causes;
pub mod evidence;
pub mod gaps;
pub mod idle;
pub mod intervals;
pub mod segments;

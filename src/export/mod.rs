//! Timeline exports of a [`Trace`](gapscope_collectors::trace::Trace):
//! native Perfetto protobuf ([`perfetto`]) and Kineto-compatible Chrome JSON
//! ([`chrome`]). Both read only the Trace (plus the analyzers' idle
//! segments), so the output is the same whatever the trace was imported from.

pub mod chrome;
pub mod idle;
pub mod perfetto;

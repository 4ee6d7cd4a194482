//! Timeline exports of a [`Trace`](gapscope_collectors::trace::Trace):
//! native Perfetto protobuf ([`perfetto`]) and Kineto-compatible Chrome JSON
//! ([`chrome`]). Both read only the Trace (plus the analyzers' idle
//! segments), so the output is the same whatever the trace was imported from.
//! With the `parquet` feature, `parquet` writes the Trace's tables
//! themselves.

pub mod chrome;
pub mod idle;
pub mod job;
#[cfg(feature = "parquet")]
pub mod parquet;
pub mod perfetto;
#[cfg(feature = "parquet")]
pub mod summaries;

//! Writers of [`Analysis`](gapscope_analyzers::analysis::Analysis) results:
//! they format, they never compute metrics. Numbers read as
//! [`gapscope_analyzers::format`] writes them.

pub mod job;
pub mod json;
pub mod table;
pub mod text;

//! The report's views: one self-contained HTML page (or the same content as
//! Markdown) that explains why the GPUs of one trace sat idle, or what held
//! one job back.
//!
//! The flow is one-way: `gapscope report` (`crate::commands`) reads the
//! trace and analyses it once, as a [`Session`], as for `gapscope analyze`;
//! nothing here reads a file. [`view::build`] turns the
//! session (its analysis, the devices' timeline strips and the kernel
//! table) into a serializable [`view::ReportView`] with every number
//! already formatted, and [`render`] fills the templates of
//! `report-templates/` from it. The view model is what the tests snapshot
//! (`--debug-context` writes it).
//!
//! [`Session`]: gapscope_analyzers::Session

pub mod charts;
pub mod findings;
pub mod job;
pub mod palette;
pub mod render;
pub mod tables;
pub mod view;

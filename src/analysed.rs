//! What the commands hand the terminal and JSON views: analyses with the
//! names the user knows their traces by.

use gapscope_analyzers::analysis::Analysis;
use gapscope_analyzers::job::{JobAnalysis, JobTimeline, RankSummary};

/// One analysed trace, with the name the user knows it by.
pub struct Analysed {
    /// The path as given, or the demo's name.
    pub name: String,
    /// The result.
    pub analysis: Analysis,
}

/// A job, analysed.
pub struct AnalysedJob {
    /// Its ranks' summaries, by rank.
    pub ranks: Vec<RankSummary>,
    /// The job analysis.
    pub analysis: JobAnalysis,
    /// What timeline views need besides.
    pub timeline: JobTimeline,
}

/// One thing to print.
pub enum Output {
    /// A trace on its own.
    Single(Box<Analysed>),
    /// A job.
    Job(Box<AnalysedJob>),
}

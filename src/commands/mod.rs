//! One module per subcommand, each with `run(&Args) -> Result<Exit>`: read
//! the inputs ([`crate::inputs`]), analyse them (a `Session`, or a job),
//! hand the result to a view, write the output. Only these modules and
//! [`crate::inputs`] touch files.

mod analyze;
mod bench;
mod diff;
mod export;
mod record;
mod report;
mod summarize;

use crate::cli::Command;
use anyhow::Result;

/// A command's exit status (ripgrep's convention: 0 ok, 2 an error; 1 and
/// the others mean something for the command that returns them).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Exit(pub u8);

impl Exit {
    /// Done.
    pub const OK: Exit = Exit(0);
    /// A meaningful negative result: `diff` found a regression, `bench` a
    /// model that failed.
    pub const NEGATIVE: Exit = Exit(1);
    /// An error (an unreadable trace, a bad flag): printed by `main`.
    pub const ERROR: Exit = Exit(2);
}

/// Runs the subcommand `command`.
pub fn run(command: &Command) -> Result<Exit> {
    match command {
        Command::Analyze(args) => analyze::run(args),
        Command::Export(args) => export::run(args),
        Command::Report(args) => report::run(args),
        Command::Summarize(args) => summarize::run(args),
        Command::Diff(args) => diff::run(args),
        Command::Bench(args) => bench::run(args),
        Command::Record(args) => record::run(args),
    }
}

//! `gapscope`: why your GPU sits idle.
//!
//! The binary is thin glue: [`cli`] parses flags, one module per subcommand
//! runs the library crates, [`render`] prints. Errors travel as `anyhow`
//! values up to [`main`], which is the only place that decides what the
//! user sees and the exit status (ripgrep's convention: 0 ok, 2 error,
//! 1 kept for a meaningful negative result; a closed pipe is not an error).

mod analyze;
mod cli;
mod diff_cmd;
mod export;
mod export_cmd;
mod render;
mod report;

use clap::Parser;
use std::io::{self, Write};
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    let result = match &cli.command {
        cli::Command::Analyze(args) => analyze::run(args),
        cli::Command::Export(args) => export_cmd::run(args),
        cli::Command::Report(args) => report::run(args),
        // 1 means "regression" here, so diff decides its own exit status.
        cli::Command::Diff(args) => return diff_cmd::main(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        // `gapscope analyze x | head` closes stdout early: the user got what
        // they wanted, so exit quietly and successfully (as ripgrep does).
        Err(e) if is_broken_pipe(&e) => ExitCode::SUCCESS,
        Err(e) => {
            report_error(&e);
            ExitCode::from(2)
        }
    }
}

/// Prints `gapscope: <chain>` on one line: the chain is `file: problem;
/// what to do` by construction (see `analyze::load`).
fn report_error(e: &anyhow::Error) {
    let msg = format!("{e:#}").replace('\n', " ");
    // Nothing sensible is left to do if stderr itself is gone.
    let _ = writeln!(io::stderr().lock(), "gapscope: {msg}");
}

fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<io::Error>()
            .is_some_and(|io| io.kind() == io::ErrorKind::BrokenPipe)
    })
}

//! `gapscope`: why your GPU sits idle.
//!
//! The binary is thin glue: [`cli`] parses flags, one module per subcommand
//! runs the library crates, [`render`] prints. Errors travel as `anyhow`
//! values up to [`main`], which is the only place that decides what the
//! user sees and the exit status (ripgrep's convention: 0 ok, 2 error,
//! 1 kept for a meaningful negative result; a closed pipe is not an error).

mod analyze;
mod batch;
mod bench_cmd;
mod cli;
mod diff_cmd;
mod export;
mod export_cmd;
mod inputs;
mod record_cmd;
mod render;
mod report;
mod summarize_cmd;

use clap::Parser;
use std::io::{self, Write};
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = match cli::Cli::try_parse() {
        Ok(cli) => cli,
        // `gapscope bench` reports a bad flag in one line (clap's first).
        Err(e) if is_bench_usage_error(&e) => {
            let text = e.render().to_string();
            let first = text.lines().next().unwrap_or("bad arguments");
            let first = first.strip_prefix("error: ").unwrap_or(first);
            let _ = writeln!(
                io::stderr().lock(),
                "gapscope bench: {first} (see gapscope bench --help)"
            );
            return ExitCode::from(2);
        }
        Err(e) => e.exit(),
    };
    let result = match &cli.command {
        cli::Command::Analyze(args) => analyze::run(args),
        cli::Command::Export(args) => export_cmd::run(args),
        cli::Command::Report(args) => report::run(args),
        cli::Command::Summarize(args) => summarize_cmd::run(args),
        // 1 means "regression" here, so diff decides its own exit status.
        cli::Command::Diff(args) => return diff_cmd::main(args),
        // 1 means "a model failed" here.
        cli::Command::Bench(args) => match bench_cmd::run(args) {
            Ok(code) => return ExitCode::from(code),
            Err(e) => Err(e),
        },
        // The recorded program's status is record's own.
        cli::Command::Record(args) => match record_cmd::run(args) {
            Ok(code) => return ExitCode::from(code),
            Err(e) => Err(e),
        },
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

/// A usage error (not --help/--version) on the `bench` subcommand.
fn is_bench_usage_error(e: &clap::Error) -> bool {
    use clap::error::ErrorKind;
    e.use_stderr()
        && !matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion)
        && std::env::args().nth(1).as_deref() == Some("bench")
}

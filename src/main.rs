//! `gapscope`: why your GPU sits idle.
//!
//! The binary is thin glue, one way: [`cli`] parses flags; [`commands`]
//! runs one subcommand each (`run(&Args) -> Result<Exit>`): it reads its
//! inputs through [`inputs`] (the collectors' loader), builds a `Session`
//! (analyzers) and hands it to a view: [`render`] (terminal text, JSON),
//! [`report`] (HTML, Markdown) or [`export`] (Perfetto, Chrome, Parquet,
//! capture). Views never read files. Errors travel as `anyhow` values up
//! to [`main`], the only place that decides what the user sees and the exit
//! status (ripgrep's convention: 0 ok, 2 error, 1 kept for a meaningful
//! negative result; a closed pipe is not an error).

mod analysed;
mod cli;
mod commands;
mod export;
mod inputs;
mod render;
mod report;

use clap::Parser;
use commands::Exit;
use std::io::{self, Write};
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = match cli::Cli::try_parse() {
        Ok(cli) => cli,
        // `gapscope bench` reports a bad flag in one line: clap's first
        // paragraph, its lines joined (a missing flag is named on the line
        // after "the following required arguments were not provided:").
        Err(e) if cli::is_bench_usage_error(&e) => {
            let text = e.render().to_string();
            let para: Vec<&str> = text
                .lines()
                .take_while(|l| !l.trim().is_empty())
                .map(str::trim)
                .collect();
            let first = if para.is_empty() {
                "bad arguments".to_string()
            } else {
                para.join(" ")
            };
            let first = first.strip_prefix("error: ").unwrap_or(&first);
            let _ = writeln!(
                io::stderr().lock(),
                "gapscope bench: {first} (see gapscope bench --help)"
            );
            return ExitCode::from(Exit::ERROR.0);
        }
        Err(e) => e.exit(),
    };
    match commands::run(&cli.command) {
        Ok(exit) => ExitCode::from(exit.0),
        // `gapscope analyze x | head` closes stdout early: the user got what
        // they wanted, so exit quietly and successfully (as ripgrep does).
        Err(e) if is_broken_pipe(&e) => ExitCode::SUCCESS,
        Err(e) => {
            report_error(&e);
            ExitCode::from(Exit::ERROR.0)
        }
    }
}

/// Prints `gapscope: <chain>` on one line: the chain is `file: problem;
/// what to do` by construction (see [`inputs::load`]).
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

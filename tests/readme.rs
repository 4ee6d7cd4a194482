//! The README's commands are the ones that work: its test command is the
//! one .ci/run runs.

mod common;
use common::repo;

#[test]
fn readme_test_command_is_what_ci_runs() {
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    let ci = std::fs::read_to_string(repo().join(".ci/run")).unwrap();
    let cmd = readme
        .lines()
        .find(|l| l.starts_with("cargo test"))
        .expect("README shows the test command");
    assert!(
        ci.lines().any(|l| l.trim() == cmd.trim()),
        "README's `{cmd}` is not a line of .ci/run"
    );
    assert!(readme.contains("cargo run --release -- analyze --demo"));
}

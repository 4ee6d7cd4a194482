//! The README's commands are the ones that work: its test command is the
//! one .ci/run runs, and that command runs every test.

mod common;
use common::repo;

#[test]
fn readme_test_command_is_what_ci_runs() {
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    let ci = std::fs::read_to_string(repo().join(".ci/run")).unwrap();
    let section = readme
        .split("\n## Test\n")
        .nth(1)
        .expect("README has a Test section");
    let cmd = section
        .lines()
        .skip_while(|l| !l.starts_with("```"))
        .nth(1)
        .expect("the Test section shows its command in a code block")
        .trim();
    assert_eq!(cmd, "scripts/test.sh", "one command, a script in the repo");
    assert!(
        ci.lines().any(|l| l.trim() == format!("exec {cmd}")),
        ".ci/run does not run exactly README's `{cmd}`"
    );
    let script = std::fs::read_to_string(repo().join(cmd)).unwrap();
    for run in [
        "cargo build -p gapscope-inject --locked",
        "cargo test --workspace --locked",
        "--features parquet",
        "--features torch",
        "--features cupti",
        "recipes/dask/test_recipe.py",
        "pytest",
    ] {
        assert!(script.contains(run), "{cmd} does not run `{run}`");
    }
    assert!(readme.contains("cargo run --release -- analyze --demo"));
}

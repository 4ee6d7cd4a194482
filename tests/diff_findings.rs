//! `gapscope diff` on the H100 recordings of a planted problem and its fix
//! (fixtures/scenarios/recorded): the DataLoader finding disappears with
//! the fix, and comes back as a regression the other way round.

mod common;
use common::*;
use std::path::PathBuf;

fn recorded(name: &str) -> PathBuf {
    repo()
        .join("fixtures/scenarios/recorded")
        .join(format!("{name}.pt.trace.json.gz"))
}

/// The diff as JSON; exit status 0 or 1 (a regression) are both answers.
fn diff(base: &str, new: &str) -> serde_json::Value {
    let (b, n) = (recorded(base), recorded(new));
    let r = gapscope([
        "diff".as_ref(),
        "--format".as_ref(),
        "json".as_ref(),
        b.as_os_str(),
        n.as_os_str(),
    ]);
    assert!(r.code == 0 || r.code == 1, "exit {}: {}", r.code, r.stderr);
    let j = r.json();
    assert_eq!(
        j["regression"].as_bool(),
        Some(r.code == 1),
        "exit status follows `regression`"
    );
    j
}

fn ids(list: &serde_json::Value) -> Vec<String> {
    list.as_array()
        .unwrap()
        .iter()
        .map(|f| f["id"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn fixing_the_dataloader_removes_its_finding() {
    let j = diff("dataloader", "dataloader.fixed");
    assert!(
        ids(&j["findings"]["disappeared"]).contains(&"D11".to_string()),
        "{}",
        j["findings"]
    );
    assert!(!ids(&j["findings"]["appeared"]).contains(&"D11".to_string()));
    // Steps got faster; whatever else is flagged, it is not the step time
    // (the fix's workers do add Python overhead between operators: D2).
    assert!(
        j["step_time"]["change"].as_f64().unwrap() < -0.5,
        "{}",
        j["step_time"]
    );
    let regressions = j["regressions"].as_array().unwrap();
    assert!(
        regressions.iter().all(|r| r["metric"] != "step_time"),
        "{regressions:?}"
    );
}

#[test]
fn losing_the_workers_is_a_finding_regression() {
    let j = diff("dataloader.fixed", "dataloader");
    assert_eq!(j["regression"], true);
    assert!(
        ids(&j["findings"]["appeared"]).contains(&"D11".to_string()),
        "{}",
        j["findings"]
    );
    let regressions = j["regressions"].as_array().unwrap();
    assert!(
        regressions
            .iter()
            .any(|r| r["metric"] == "finding" && r["subject"].as_str().unwrap().starts_with("D11")),
        "{regressions:?}"
    );
}

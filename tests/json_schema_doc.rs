//! docs/json-schema.md documents every field `analyze --format json` writes:
//! a field added to the output without a line in the doc fails here.

mod common;
use common::*;
use std::collections::BTreeSet;

fn keys(v: &serde_json::Value, out: &mut BTreeSet<String>) {
    match v {
        serde_json::Value::Object(m) => {
            for (k, x) in m {
                out.insert(k.clone());
                keys(x, out);
            }
        }
        serde_json::Value::Array(a) => a.iter().for_each(|x| keys(x, out)),
        _ => {}
    }
}

#[test]
fn every_json_field_is_documented() {
    let j = gapscope(["analyze", "--format", "json"]).expect_code(0).json();
    let mut all = BTreeSet::new();
    keys(&j, &mut all);
    let doc = std::fs::read_to_string(repo().join("docs/json-schema.md")).unwrap();
    let missing: Vec<&String> = all.iter().filter(|k| !doc.contains(&format!("`{k}`"))).collect();
    assert!(missing.is_empty(), "not in docs/json-schema.md: {missing:?}");
    assert!(all.len() > 40, "only {} fields seen", all.len());
}

/// docs/job-schema.md documents every field of a job's JSON (each rank's
/// own `analysis` is the single-trace schema, checked above).
#[test]
fn every_job_json_field_is_documented() {
    let tmp = TempDir::new("job-schema");
    plant_job(
        tmp.path(),
        &["--ranks", "3", "--steps", "2", "--plant", "1:11:1:2:dataloader"],
    );
    let args: Vec<std::ffi::OsString> = vec![
        "analyze".into(),
        "--format".into(),
        "json".into(),
        tmp.path().into(),
    ];
    let mut j = gapscope(&args).expect_code(0).json();
    assert_eq!(j["kind"], "job");
    for r in j["ranks"].as_array_mut().unwrap() {
        assert!(r.as_object_mut().unwrap().remove("analysis").is_some());
    }
    // Keys that are rank numbers or cause names are data, not fields.
    for k in ["wait_ns", "wait_share", "wait_by_cause_ns"] {
        j["summary"][k] = serde_json::json!({});
    }
    for f in j["findings"].as_array_mut().unwrap() {
        f["wait_ns"] = serde_json::json!({});
    }
    let mut all = BTreeSet::new();
    keys(&j, &mut all);
    let doc = std::fs::read_to_string(repo().join("docs/job-schema.md")).unwrap();
    let missing: Vec<&String> = all.iter().filter(|k| !doc.contains(&format!("`{k}`"))).collect();
    assert!(missing.is_empty(), "not in docs/job-schema.md: {missing:?}");
    assert!(all.len() > 60, "only {} fields seen", all.len());
}

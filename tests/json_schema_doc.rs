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

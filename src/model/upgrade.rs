//! Reading older result files: a document of schema 1 or 2 is rewritten into the current
//! schema's shape before it is parsed, so readers see one set of types.
//!
//! - Schemas 1 and 2 named every figure with `_ns` (`samples_ns`, `summary.median_ns`, …),
//!   also in rows whose values were bytes: such rows said so with `params.unit = "bytes"`.
//!   Each row gets `unit` (`"bytes"` from that parameter, which is then removed, else
//!   `"ns"`) and its figures lose the suffix. A sweep's `fit` keeps its names, which were
//!   always true (only timed rows are fitted).
//! - Schema 1 had the flag `drift` (the two halves of the samples disagreed), since replaced
//!   by `unstable`, which means something else: it becomes a note.

use serde_json::{Map, Value};

/// Fields of a row renamed from schemas 1 and 2.
const ROW_RENAMES: [(&str, &str); 3] =
    [("samples_ns", "samples"), ("batch_check_ns", "batch_check"), ("single_op_ns", "single_op")];

/// The document in the current schema's shape; `Err` says what is missing.
pub fn to_current(mut doc: Value) -> Result<Value, String> {
    let schema = doc.get("schema").and_then(Value::as_u64).ok_or("no schema")?;
    if schema >= 3 {
        return Ok(doc);
    }
    let results = doc.get_mut("results").and_then(Value::as_array_mut).ok_or("no \"results\" list")?;
    for row in results {
        let row = row.as_object_mut().ok_or("a result that is not an object")?;
        upgrade_row(row, schema);
    }
    doc["schema"] = Value::from(super::SCHEMA);
    Ok(doc)
}

fn upgrade_row(row: &mut Map<String, Value>, schema: u64) {
    let bytes = row
        .get_mut("params")
        .and_then(Value::as_object_mut)
        .and_then(|p| match p.get("unit") {
            Some(Value::String(u)) if u == "bytes" => p.remove("unit"),
            _ => None,
        })
        .is_some();
    row.insert("unit".into(), Value::from(if bytes { "bytes" } else { "ns" }));
    for (old, new) in ROW_RENAMES {
        if let Some(v) = row.remove(old) {
            row.insert(new.into(), v);
        }
    }
    if let Some(tail) = row.get_mut("tail") {
        strip_ns(tail);
    }
    if let Some(summary) = row.get_mut("summary") {
        strip_summary(summary);
    }
    if let Some(Value::Array(stages)) = row.get_mut("breakdown") {
        for stage in stages {
            if let Some(summary) = stage.get_mut("summary") {
                strip_summary(summary);
            }
        }
    }
    if schema == 1
        && let Some(Value::Array(flags)) = row.get_mut("flags")
    {
        let before = flags.len();
        flags.retain(|f| f.as_str() != Some("drift"));
        if flags.len() < before
            && let Some(Value::Array(notes)) = row.get_mut("notes")
        {
            notes.push(Value::from(
                "flagged drift when written (schema 1): the first and second halves of the samples disagreed",
            ));
        }
    }
}

/// A summary's figures, its rounds' and its levels', without `_ns`.
fn strip_summary(summary: &mut Value) {
    strip_ns(summary);
    if let Some(structure) = summary.get_mut("structure").filter(|s| s.is_object()) {
        for list in ["rounds", "levels"] {
            if let Some(Value::Array(items)) = structure.get_mut(list) {
                items.iter_mut().for_each(strip_ns);
            }
        }
    }
}

/// Renames an object's keys `x_ns` to `x` and `x_ci95_ns` to `x_ci95`.
fn strip_ns(v: &mut Value) {
    let Some(obj) = v.as_object_mut() else { return };
    let keys: Vec<String> = obj.keys().filter(|k| k.ends_with("_ns")).cloned().collect();
    for k in keys {
        if let Some(val) = obj.remove(&k) {
            obj.insert(k.trim_end_matches("_ns").to_string(), val);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_schema_2_bytes_row_gets_its_unit_and_loses_the_suffixes() {
        let doc = json!({"schema": 2, "results": [{
            "params": {"unit": "bytes", "objects": 10},
            "samples_ns": [1.0], "batch_check_ns": [], "single_op_ns": [],
            "tail": {"n": 2, "p50_ns": 1.0},
            "summary": {"median_ns": 1.0, "median_ci95_ns": [0.5, 1.5],
                "structure": {"rounds": [{"median_ns": 1.0, "median_ci95_ns": [0.5, 1.5]}], "levels": [{"median_ns": 2.0, "share": 0.5}]}},
            "breakdown": [{"name": "trap", "summary": {"p99_ns": 3.0}}],
            "fit": {"line": {"intercept_ns": 1.0}},
            "flags": ["drift"], "notes": []
        }]});
        let up = to_current(doc).unwrap();
        let row = &up["results"][0];
        assert_eq!(up["schema"], 3);
        assert_eq!(row["unit"], "bytes");
        assert_eq!(row["params"], json!({"objects": 10}));
        assert_eq!(row["samples"], json!([1.0]));
        assert_eq!(row["tail"]["p50"], 1.0);
        assert_eq!(row["summary"]["median_ci95"], json!([0.5, 1.5]));
        assert_eq!(row["summary"]["structure"]["rounds"][0]["median"], 1.0);
        assert_eq!(row["summary"]["structure"]["levels"][0]["median"], 2.0);
        assert_eq!(row["breakdown"][0]["summary"]["p99"], 3.0);
        assert_eq!(row["fit"]["line"]["intercept_ns"], 1.0, "fit fields keep their true names");
        assert_eq!(row["flags"], json!(["drift"]), "drift was a flag of schema 1 only");
    }

    #[test]
    fn a_schema_1_drift_flag_becomes_a_note() {
        let doc =
            json!({"schema": 1, "results": [{"params": {}, "flags": ["drift", "ci_target_missed"], "notes": []}]});
        let row = &to_current(doc).unwrap()["results"][0];
        assert_eq!(row["unit"], "ns");
        assert_eq!(row["flags"], json!(["ci_target_missed"]));
        assert!(row["notes"][0].as_str().unwrap().contains("drift"));
    }
}

//! Reading older result files: a document of schema 1, 2 or 3 is rewritten into the current
//! schema's shape before it is parsed, so readers see one set of types.
//!
//! - Schemas 1 and 2 named every figure with `_ns` (`samples_ns`, `summary.median_ns`, …),
//!   also in rows whose values were bytes: such rows said so with `params.unit = "bytes"`.
//!   Each row gets `unit` (`"bytes"` from that parameter, which is then removed, else
//!   `"ns"`) and its figures lose the suffix. A sweep's `fit` keeps its names, which were
//!   always true (only timed rows are fitted).
//! - Schema 1 had the flag `drift` (the two halves of the samples disagreed), since replaced
//!   by `unstable`, which means something else: it becomes a note.
//! - Schemas 1 to 3 wrote flags in snake case (`ci_target_missed`, `many_outliers`, …), read
//!   through serde aliases of [`Flag`]'s one name each (`ci-wide`, `outliers`, …), and had
//!   one status `flagged` for any flag. A `flagged` row gets its flags' worst tier
//!   ([`Status::of_flags`]): `advisory` or `untrustworthy`. A `ci_target_missed` row whose
//!   interval reaches over [`super::USABLE_CI_REL`] from its median is `ci-unusable`, as this
//!   build would have flagged it; a `failed` row cut off by Ctrl-C before enough samples
//!   (`reason` "interrupted before enough samples …") is `interrupted`.

use super::{Flag, Status};
use serde_json::{Map, Value};

/// Fields of a row renamed from schemas 1 and 2.
const ROW_RENAMES: [(&str, &str); 3] =
    [("samples_ns", "samples"), ("batch_check_ns", "batch_check"), ("single_op_ns", "single_op")];

/// The document in the current schema's shape; `Err` says what is missing.
pub fn to_current(mut doc: Value) -> Result<Value, String> {
    let schema = doc.get("schema").and_then(Value::as_u64).ok_or("no schema")?;
    if schema >= u64::from(super::SCHEMA) {
        return Ok(doc);
    }
    let results = doc.get_mut("results").and_then(Value::as_array_mut).ok_or("no \"results\" list")?;
    for row in results {
        let row = row.as_object_mut().ok_or("a result that is not an object")?;
        if schema < 3 {
            upgrade_row(row, schema);
        }
        upgrade_flags(row);
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

/// Schema 3 → 4: the status of a flagged row is its flags' worst tier; a target missed by
/// over [`super::USABLE_CI_REL`] is `ci-unusable`; a row cut off before its samples is
/// `interrupted`. Flag names are read by their aliases.
fn upgrade_flags(row: &mut Map<String, Value>) {
    let status = row.get("status").and_then(Value::as_str).unwrap_or_default().to_string();
    if status == "failed"
        && row.get("reason").and_then(Value::as_str).is_some_and(|r| r.starts_with("interrupted before enough samples"))
    {
        row.insert("status".into(), Value::from("interrupted"));
        return;
    }
    let Some(Value::Array(names)) = row.get("flags") else { return };
    // A name this build does not know stays as it was: reading the row then fails, as before.
    let mut names: Vec<Result<Flag, Value>> =
        names.iter().map(|f| serde_json::from_value(f.clone()).map_err(|_| f.clone())).collect();
    let unusable = row
        .get("summary")
        .and_then(|s| Some((s.get("median")?.as_f64()?, s.get("median_ci95")?.as_array()?.clone())))
        .and_then(|(m, ci)| Some(super::ci_reach_rel(m, [ci.first()?.as_f64()?, ci.get(1)?.as_f64()?])))
        .is_some_and(|reach| reach > super::USABLE_CI_REL);
    if unusable && let Some(f) = names.iter_mut().find(|f| **f == Ok(Flag::CiTargetMissed)) {
        *f = Ok(Flag::CiUnusable);
    }
    let flags: Vec<Flag> = names.iter().filter_map(|f| f.as_ref().ok().copied()).collect();
    let written: Vec<Value> = names.into_iter().map(|f| f.map_or_else(|v| v, |f| Value::from(f.label()))).collect();
    row.insert("flags".into(), Value::Array(written));
    if status == "flagged" {
        row.insert("status".into(), serde_json::to_value(Status::of_flags(&flags)).unwrap_or(Value::from("advisory")));
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
        assert_eq!(up["schema"], super::super::SCHEMA);
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
        assert_eq!(row["flags"], json!(["ci-wide"]));
        assert!(row["notes"][0].as_str().unwrap().contains("drift"));
    }

    #[test]
    fn schema_3_flags_read_by_their_one_name_and_a_flagged_row_gets_its_tier() {
        let row = |flags: Value, ci: [f64; 2], status: &str, reason: Value| json!({"status": status, "reason": reason, "flags": flags, "summary": {"median": 100.0, "median_ci95": ci}});
        let doc = json!({"schema": 3, "results": [
            row(json!(["ci_target_missed", "many_outliers"]), [99.0, 101.1], "flagged", Value::Null),
            row(json!(["ci_target_missed"]), [99.0, 132.0], "flagged", Value::Null),
            row(json!(["busy_cpu"]), [99.9, 100.1], "flagged", Value::Null),
            row(json!([]), [99.9, 100.1], "ok", Value::Null),
            row(json!([]), [0.0, 0.0], "failed", json!("interrupted before enough samples (too few)")),
        ]});
        let up = to_current(doc).unwrap();
        let r = &up["results"];
        assert_eq!(up["schema"], super::super::SCHEMA);
        assert_eq!((&r[0]["flags"], &r[0]["status"]), (&json!(["ci-wide", "outliers"]), &json!("advisory")));
        assert_eq!((&r[1]["flags"], &r[1]["status"]), (&json!(["ci-unusable"]), &json!("untrustworthy")));
        assert_eq!((&r[2]["flags"], &r[2]["status"]), (&json!(["busy-cpu"]), &json!("untrustworthy")));
        assert_eq!(r[3]["status"], "ok");
        assert_eq!(r[4]["status"], "interrupted");
        let old: Flag = serde_json::from_value(json!("negative_fixed_cost")).unwrap();
        assert_eq!(old, Flag::NegativeFixedCost);
    }
}

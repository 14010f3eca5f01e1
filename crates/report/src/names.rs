//! Compact names for rows: parameters shared by a whole group of rows are said once, in the
//! group's heading, and the rows carry only what tells them apart (`thread cross`, `warm
//! shared`, `objects 1000`) instead of `[peer=thread placement=cross_cpu cpus=[1,0]]`.

use super::fmt_size;
use model::{Params, Row, SIZE_PARAM};
use serde_json::Value;

/// Parameters that describe where or how a row ran rather than which result it is: a row's
/// one-line summary leaves them out (the table says them in the family heading).
pub const CONTEXT: [&str; 9] =
    ["cpus", "device", "fs", "filesystem", "segment_bytes", "tmpfs", "uffd_flags", "objects", "sizes"];

/// A parameter's value, short: `cross` for `cross_cpu`, `4 KiB` for a size, `1,0` for a list.
pub fn value(key: &str, v: &Value) -> String {
    match v {
        Value::String(s) if key == "placement" => s.strip_suffix("_cpu").unwrap_or(s).to_string(),
        Value::String(s) => s.clone(),
        Value::Number(n) if key == SIZE_PARAM || key.ends_with("_bytes") => match n.as_u64() {
            Some(b) => fmt_size(b),
            None => n.to_string(),
        },
        Value::Number(n) => n.to_string(),
        Value::Bool(b) => (if *b { "yes" } else { "no" }).into(),
        Value::Null => "-".into(),
        Value::Array(items) => items.iter().map(|i| value(key, i)).collect::<Vec<_>>().join(","),
        Value::Object(_) => v.to_string(),
    }
}

/// A parameter as a row shows it: a word alone (`thread`, `warm`), a size alone (`4 KiB`),
/// anything else with its name (`objects 1000`).
pub fn on_row(key: &str, v: &Value) -> String {
    match v {
        Value::String(_) => value(key, v),
        Value::Number(_) if key == SIZE_PARAM => value(key, v),
        _ => format!("{key} {}", value(key, v)),
    }
}

/// A parameter as a heading says it: with its name (`device /dev/vda`), the placement as
/// `same CPU` / `cross CPU`.
pub fn in_heading(key: &str, v: &Value) -> String {
    match key {
        "placement" => format!("{} CPU", value(key, v)),
        _ => format!("{key} {}", value(key, v)),
    }
}

/// The parameters of `p` as a row shows them, leaving out `skip`.
pub fn row_params(p: &Params, skip: &[&str]) -> String {
    p.iter().filter(|(k, _)| !skip.contains(&k.as_str())).map(|(k, v)| on_row(k, v)).collect::<Vec<_>>().join(" ")
}

/// `id` and the parameters that tell the row apart, e.g. `fault.file.read cold shared`.
pub fn label(row: &Row, shared: &[String], skip: &[&str]) -> String {
    let p: Params =
        row.params.iter().filter(|(k, _)| !shared.contains(k)).map(|(k, v)| (k.clone(), v.clone())).collect();
    let params = row_params(&p, skip);
    if params.is_empty() { row.id.clone() } else { format!("{} {params}", row.id) }
}

/// The family of an id: `ipc` of `ipc.pipe`.
pub fn family(id: &str) -> &str {
    id.split('.').next().unwrap_or(id)
}

/// Keys with one value on every row of `rows` that has them, held by two rows or more, in key
/// order (a key of one row only, and every key of a single row, is said on the row itself).
pub fn shared_keys(rows: &[&Row], skip: &[&str]) -> Vec<String> {
    if rows.len() < 2 {
        return Vec::new();
    }
    let mut keys: Vec<&String> = rows.iter().flat_map(|r| r.params.keys()).collect();
    keys.sort();
    keys.dedup();
    keys.into_iter()
        .filter(|k| !skip.contains(&k.as_str()))
        .filter(|k| {
            let values: Vec<&serde_json::Value> = rows.iter().filter_map(|r| r.params.get(*k)).collect();
            values.len() >= 2 && values.iter().all(|v| *v == values[0])
        })
        .cloned()
        .collect()
}

/// What `keys` (shared by `rows`) say, once: `device /dev/vda, fs ext4 (cold); uffd_flags …
/// (fault.user.uffd)`, each with the rows it is given for when not all have it.
pub fn shared_text(rows: &[&Row], keys: &[String]) -> String {
    let mut groups: Vec<(Option<String>, Vec<String>)> = Vec::new();
    for k in keys {
        let Some(v) = rows.iter().find_map(|r| r.params.get(k)) else { continue };
        let said = in_heading(k, v);
        let scope = given_for(rows, k);
        match groups.iter_mut().find(|(s, _)| *s == scope) {
            Some((_, said_here)) => said_here.push(said),
            None => groups.push((scope, vec![said])),
        }
    }
    let text = |(scope, said): &(Option<String>, Vec<String>)| match scope {
        None => said.join(", "),
        Some(s) => format!("{} ({s})", said.join(", ")),
    };
    groups.iter().map(text).collect::<Vec<_>>().join("; ")
}

/// Which of `rows` have `key`, when not all: a parameter value that picks exactly them
/// (`cold`), or their ids.
fn given_for(rows: &[&Row], key: &str) -> Option<String> {
    let has = |r: &Row| r.params.contains_key(key);
    if rows.iter().all(|r| has(r)) {
        return None;
    }
    let having: Vec<&&Row> = rows.iter().filter(|r| has(r)).collect();
    for (k2, v2) in having.first().map(|r| r.params.iter()).into_iter().flatten() {
        // Only a key the other rows have too (with another value) tells the rows apart.
        let others_have_it = rows.iter().any(|r| !has(r) && r.params.contains_key(k2));
        if k2 != key && others_have_it && rows.iter().all(|r| has(r) == (r.params.get(k2) == Some(v2))) {
            return Some(value(k2, v2));
        }
    }
    let with = distinct_ids(rows.iter().copied().filter(|r| has(r)));
    let without = distinct_ids(rows.iter().copied().filter(|r| !has(r)));
    let whole = !with.iter().any(|id| without.contains(id));
    Some(match (with.len(), without.len()) {
        (n, _) if whole && n <= 4 => with.join(", "),
        (_, n) if whole && n <= 4 => format!("all but {}", without.join(", ")),
        _ => "where given".into(),
    })
}

/// The ids of `rows`, each once, in order.
fn distinct_ids<'a>(rows: impl Iterator<Item = &'a Row>) -> Vec<&'a str> {
    let mut ids: Vec<&str> = Vec::new();
    for r in rows {
        if !ids.contains(&r.id.as_str()) {
            ids.push(&r.id);
        }
    }
    ids
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn row(id: &str, p: Value) -> Row {
        let params: Params = serde_json::from_value(p).expect("params");
        analysis::analyse::empty_row(id, "", params, model::Method::Adaptive)
    }

    #[test]
    fn values_are_short() {
        assert_eq!(value("placement", &json!("cross_cpu")), "cross");
        assert_eq!(value(SIZE_PARAM, &json!(4096)), "4 KiB");
        assert_eq!(value("segment_bytes", &json!(65536)), "64 KiB");
        assert_eq!(value("cpus", &json!([1, 0])), "1,0");
        assert_eq!(on_row("objects", &json!(1000)), "objects 1000");
        assert_eq!(on_row("cache", &json!("warm")), "warm");
        assert_eq!(in_heading("placement", &json!("same_cpu")), "same CPU");
    }

    #[test]
    fn shared_parameters_are_said_once_with_the_rows_they_belong_to() {
        let rows = [
            row("fault.file.read", json!({"cache": "warm", "map": "shared"})),
            row("fault.file.read", json!({"cache": "cold", "map": "private", "device": "/dev/vda", "fs": "ext4"})),
            row("fault.file.read", json!({"cache": "cold", "map": "shared", "device": "/dev/vda", "fs": "ext4"})),
            row("fault.user.uffd", json!({"access": "read", "uffd_flags": "O_CLOEXEC"})),
            row("fault.user.uffd", json!({"access": "write", "uffd_flags": "O_CLOEXEC"})),
        ];
        let refs: Vec<&Row> = rows.iter().collect();
        let keys = shared_keys(&refs, &[]);
        assert_eq!(keys, ["device", "fs", "uffd_flags"]);
        assert_eq!(
            shared_text(&refs, &keys),
            "device /dev/vda, fs ext4 (cold); uffd_flags O_CLOEXEC (fault.user.uffd)"
        );
        assert_eq!(label(&rows[1], &keys, &[]), "fault.file.read cold private");
        assert_eq!(label(&rows[4], &keys, &[]), "fault.user.uffd write");
        assert!(shared_keys(&refs[..1], &[]).is_empty());
        // A key only one row has is said on that row.
        let one = [row("syscall.null", json!({})), row("syscall.enosys", json!({"nr": 400}))];
        let refs: Vec<&Row> = one.iter().collect();
        assert!(shared_keys(&refs, &[]).is_empty());
    }
}

//! `docs/result.schema.json` (JSON Schema, draft 2020-12) describes the result file as serde
//! writes it: the real default run (`tests/fixtures/default-run.json`), the hand-made run of
//! the report tests (their JSON snapshots, `crates/report/src/snapshots/*json*.snap`, which the
//! `report::tests::json*` tests keep equal to the run serialized) and the fixture with a
//! two-segment sweep fit and a tail added here all validate against it. Every object of the
//! schema forbids properties it does not list (`additionalProperties: false`), so a field added
//! to the model and missing from the schema fails here; and every property the schema lists
//! must occur in one of these documents, so a field removed from the model fails too.
//!
//! The validator is small and covers the keywords the schema uses (`$ref`, `type`,
//! `properties`, `required`, `additionalProperties`, `items`, `minItems`, `maxItems`, `enum`,
//! `const`, `anyOf`, `minimum`); the schema may use no other. (The `jsonschema` crate was
//! weighed and not taken: fifty more crates for a test.)

use model::{RunFile, Tail};
use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::path::Path;

const KEYWORDS: [&str; 16] = [
    "$schema",
    "title",
    "description",
    "type",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "minItems",
    "maxItems",
    "enum",
    "const",
    "anyOf",
    "$ref",
    "$defs",
    "minimum",
];

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn schema() -> Value {
    let text = std::fs::read_to_string(root().join("docs/result.schema.json")).expect("docs/result.schema.json");
    serde_json::from_str(&text).expect("the schema is JSON")
}

/// Checks documents against the schema and remembers which properties it met.
struct Validator<'a> {
    root: &'a Value,
    /// `Def.property` (`.property` at the top) of every property met.
    seen: BTreeSet<String>,
}

impl Validator<'_> {
    /// The errors of `v` against `schema` (of the definition `def`), each with its path.
    fn check(&mut self, schema: &Value, def: &str, v: &Value, path: &str) -> Vec<String> {
        let mut errors = Vec::new();
        let Some(s) = schema.as_object() else {
            return vec![format!("{path}: the schema here is not an object")];
        };
        if let Some(r) = s.get("$ref").and_then(Value::as_str) {
            let name = r.strip_prefix("#/$defs/").unwrap_or_else(|| panic!("unsupported $ref {r}"));
            let target = self.root["$defs"].get(name).unwrap_or_else(|| panic!("no $defs/{name}"));
            errors.extend(self.check(target, name, v, path));
        }
        if let Some(branches) = s.get("anyOf").and_then(Value::as_array) {
            let mut all = Vec::new();
            let mut matched = false;
            for b in branches {
                let e = self.check(b, def, v, path);
                matched |= e.is_empty();
                all.extend(e);
            }
            if !matched {
                errors.push(format!("{path}: matches no branch of anyOf ({})", all.join("; ")));
            }
        }
        if let Some(t) = s.get("type") {
            let types: Vec<&str> = match t {
                Value::String(t) => vec![t.as_str()],
                Value::Array(ts) => ts.iter().filter_map(Value::as_str).collect(),
                _ => panic!("bad type {t}"),
            };
            let ok = types.iter().any(|t| match *t {
                "null" => v.is_null(),
                "boolean" => v.is_boolean(),
                "integer" => v.is_i64() || v.is_u64(),
                "number" => v.is_number(),
                "string" => v.is_string(),
                "array" => v.is_array(),
                "object" => v.is_object(),
                other => panic!("unknown type {other}"),
            });
            if !ok {
                errors.push(format!("{path}: {v} is not of type {t}"));
                return errors;
            }
        }
        if let Some(c) = s.get("const")
            && c != v
        {
            errors.push(format!("{path}: {v} is not {c}"));
        }
        if let Some(e) = s.get("enum").and_then(Value::as_array)
            && !e.contains(v)
        {
            errors.push(format!("{path}: {v} is not one of {}", Value::Array(e.clone())));
        }
        if let (Some(min), Some(x)) = (s.get("minimum").and_then(Value::as_f64), v.as_f64())
            && x < min
        {
            errors.push(format!("{path}: {x} < {min}"));
        }
        if let Some(obj) = v.as_object() {
            let props = s.get("properties").and_then(Value::as_object);
            for key in s.get("required").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str) {
                if !obj.contains_key(key) {
                    errors.push(format!("{path}: required property {key} is missing"));
                }
            }
            for (key, value) in obj {
                let at = format!("{path}/{key}");
                match (props.and_then(|p| p.get(key)), s.get("additionalProperties")) {
                    (Some(p), _) => {
                        self.seen.insert(format!("{def}.{key}"));
                        errors.extend(self.check(p, def, value, &at));
                    }
                    (None, Some(Value::Bool(false))) => errors.push(format!("{at}: not in the schema")),
                    (None, Some(extra @ Value::Object(_))) => errors.extend(self.check(extra, def, value, &at)),
                    (None, _) => {}
                }
            }
        }
        if let Some(items) = v.as_array() {
            let n = items.len() as u64;
            if s.get("minItems").and_then(Value::as_u64).is_some_and(|m| n < m) {
                errors.push(format!("{path}: {n} items, fewer than minItems"));
            }
            if s.get("maxItems").and_then(Value::as_u64).is_some_and(|m| n > m) {
                errors.push(format!("{path}: {n} items, more than maxItems"));
            }
            if let Some(item) = s.get("items") {
                for (i, x) in items.iter().enumerate() {
                    errors.extend(self.check(item, def, x, &format!("{path}/{i}")));
                }
            }
        }
        errors
    }
}

fn validate(schema: &Value, doc: &Value) -> (Vec<String>, BTreeSet<String>) {
    let mut v = Validator { root: schema, seen: BTreeSet::new() };
    let errors = v.check(schema, "", doc, "");
    (errors, v.seen)
}

/// The JSON body of an insta snapshot.
fn snapshot(name: &str) -> Value {
    let path = root().join("crates/report/src/snapshots").join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let body = text.splitn(3, "---\n").nth(2).expect("an insta snapshot: header, then body");
    serde_json::from_str(body).expect("the snapshot is JSON")
}

fn fixture() -> RunFile {
    model::read_result_file(&root().join("tests/fixtures/default-run.json")).expect("the fixture reads")
}

/// The fixture with what it lacks: a row with single-operation percentiles and a declared
/// sampling override and hardware counters, a sweep's fitted row with two segments, an availability probe, and the
/// worker processes of its rounds (one killed, one round measured in osprim's own process).
fn fixture_with_a_fit_and_a_tail() -> RunFile {
    let mut run = fixture();
    let mut tail = run.results[0].clone();
    tail.single_op = vec![210.0, 220.0, 900.0];
    tail.tail = Some(Tail { n: 3, p50: 220.0, p99: 886.0, p999: 898.6, max: 900.0, resolution: 0.41 });
    // Every field of a declared sampling override (no benchmark declares all three).
    tail.sampling = Some(model::SamplingOverride { budget_factor: Some(0.5), batch: Some(1), warmup_share: Some(0.1) });
    // Hardware counters (`--counters`): two counted, one missing.
    use model::counters::{Availability, CounterSummary, Counters, MissingEvent};
    let no_ll =
        MissingEvent { event: "llc_misses".into(), reason: "perf_event_open: No such file or directory".into() };
    let cycles = CounterSummary { event: "cycles".into(), per_op: 312.5, ci95: [310.0, 315.0], samples: 30 };
    let instr = CounterSummary { event: "instructions".into(), per_op: 45.0, ci95: [45.0, 45.0], samples: 30 };
    tail.counters =
        Some(Counters { events: vec![cycles, instr], missing: vec![no_ll.clone()], running_share_min: 1.0 });
    run.counters = Some(Availability { counted: vec!["cycles".into(), "instructions".into()], missing: vec![no_ll] });
    run.config.counters = true;
    // The sweep's last point stands alone above the breakpoint: all leverage, no residual.
    let mut fit = crate::common::fitted_row(&run);
    for p in &mut fit.fit.as_mut().expect("a fit").points {
        if p.size_bytes == 1048576 {
            (p.leverage, p.std_residual, p.flagged) = (1.0, None, true);
        }
    }
    run.results.push(tail);
    run.results.push(fit);
    run.run_id = Some("0123456789abcdef0123456789abcdef".into());
    // A fleet's name for the machine (`--host`).
    run.host = Some("host-a".into());
    if run.timer.overhead_by_round.is_empty() {
        run.timer.overhead_by_round.push(model::RoundOverhead {
            round: 0,
            loop_ticks: 49.0,
            loop_mean_ticks: 50.2,
            region_ticks: 47.0,
            region_mean_ticks: 48.1,
            subtracted_loop_ns: 20.04,
            subtracted_region_ns: 19.22,
        });
    }
    if run.availability.is_empty() {
        run.availability.push(model::Probe {
            before_round: 0,
            cpu: 1,
            window_ns: 25e6,
            lost_ns: 12e3,
            gaps: 4,
            longest_gap_ns: 4e3,
        });
    }
    if run.executions.is_empty() {
        use model::Execution;
        let worker = Execution {
            round: 0,
            pid: 4242,
            env_pad_bytes: 3523,
            heap_offset_bytes: 25998,
            heap_blocks: 31,
            randomize_va_space: Some(2),
            overhead_ticks: Some(39.0),
            overhead_ns: Some(16.9),
            outcomes: 12,
            ended: "exit 0".into(),
            reference: Some(model::Reference {
                start: Some(model::MachineLevel { user_loop_ns: 0.79, null_syscall_ns: 112.4 }),
                end: Some(model::MachineLevel { user_loop_ns: 0.81, null_syscall_ns: 118.0 }),
            }),
            ..Execution::default()
        };
        let killed = Execution {
            round: 1,
            pid: 4250,
            ended: "killed by signal 9 (SIGKILL)".into(),
            note: Some("the worker process ended before its round did: killed by signal 9 (SIGKILL)".into()),
            ..worker.clone()
        };
        let here = Execution {
            round: 2,
            pid: 4200,
            in_process: true,
            ended: "in osprim's own process".into(),
            note: Some("measured in osprim's own process, without a varied layout".into()),
            ..Execution::default()
        };
        run.executions.extend([worker, killed, here]);
    }
    run
}

/// A stability run's file: a stress run that failed (every field of a run filled) beside an
/// error test that ran clean.
fn fixture_with_stability_runs() -> RunFile {
    use model::stability::{Invariant, Outcome, StabilityRun, StabilityTest, Tally, TrendPoint};
    let tally = |kind: &str, count| Tally { kind: kind.into(), count };
    let run = |test, outcome| StabilityRun {
        test,
        seed: 7,
        mode: "mprotect".into(),
        settings: vec!["timer_hz=1000".into()],
        requested_s: 60.0,
        ran_s: 12.5,
        clean_s: 12.5,
        outcome,
        operations: vec![tally("fcall", 10)],
        results: vec![tally("EPERM", 3)],
        invariants: vec![Invariant { name: "every call reaches its domain".into(), checked: 10, violated: 1 }],
        trend: vec![TrendPoint { at_s: 1.0, rss_bytes: 4096, fds: 5, threads: 2, gauges: vec![tally("domains", 4)] }],
        notes: vec!["mprotect mode: the CPU has no memory protection keys".into()],
        short: false,
    };
    let mut f = fixture();
    f.results.clear();
    f.stability = vec![
        run(
            StabilityTest::Stress,
            Outcome::Failed { at_s: 12.5, what: "rights".into(), replay: "osprim stress --seed 7".into() },
        ),
        run(StabilityTest::ErrorTest, Outcome::Clean),
    ];
    // The seed suite's short test is marked so.
    f.stability[1].short = true;
    f
}

fn documents() -> Vec<(&'static str, Value)> {
    vec![
        ("a stability run", serde_json::to_value(fixture_with_stability_runs()).expect("JSON")),
        ("tests/fixtures/default-run.json", serde_json::to_value(fixture()).expect("JSON")),
        ("the fixture with a fit and a tail", serde_json::to_value(fixture_with_a_fit_and_a_tail()).expect("JSON")),
        ("the hand-made run", snapshot("osprim_report__tests__json.snap")),
        ("the hand-made partial run", snapshot("osprim_report__tests__json_reads_back_and_partial_json.snap")),
    ]
}

#[test]
fn the_result_files_validate_against_the_schema() {
    let schema = schema();
    let raw: Value = serde_json::from_str(
        &std::fs::read_to_string(root().join("tests/fixtures/default-run.json")).expect("the fixture"),
    )
    .expect("JSON");
    let mut docs = documents();
    docs.push(("tests/fixtures/default-run.json as stored", raw));
    let mut seen = BTreeSet::new();
    for (name, doc) in &docs {
        let (errors, s) = validate(&schema, doc);
        assert!(errors.is_empty(), "{name} does not validate:\n{}", errors.join("\n"));
        seen.extend(s);
    }
    // Every property the schema lists occurs in a document: none is stale.
    let mut listed = BTreeSet::new();
    let props = |def: &str, obj: &Value, listed: &mut BTreeSet<String>| {
        for key in obj.get("properties").and_then(Value::as_object).into_iter().flat_map(|p| p.keys()) {
            listed.insert(format!("{def}.{key}"));
        }
    };
    props("", &schema, &mut listed);
    for (name, def) in schema["$defs"].as_object().expect("$defs") {
        props(name, def, &mut listed);
    }
    let unseen: Vec<&String> = listed.difference(&seen).collect();
    assert!(unseen.is_empty(), "the schema lists properties no document has: {unseen:?}");
}

#[test]
fn the_schema_is_draft_2020_12_and_uses_only_the_keywords_checked() {
    let schema = schema();
    assert_eq!(schema["$schema"], "https://json-schema.org/draft/2020-12/schema");
    assert_eq!(schema["properties"]["schema"]["const"], json!(model::SCHEMA));
    fn walk(v: &Value, path: &str, defs: &Value, used: &mut BTreeSet<String>) {
        let Some(obj) = v.as_object() else { return };
        for (k, x) in obj {
            assert!(KEYWORDS.contains(&k.as_str()), "{path}: keyword {k} is not checked by this test");
            match k.as_str() {
                "properties" | "$defs" => {
                    for (name, sub) in x.as_object().expect("an object") {
                        walk(sub, &format!("{path}/{k}/{name}"), defs, used);
                    }
                }
                "anyOf" => {
                    for (i, sub) in x.as_array().expect("an array").iter().enumerate() {
                        walk(sub, &format!("{path}/anyOf/{i}"), defs, used);
                    }
                }
                "items" | "additionalProperties" => walk(x, &format!("{path}/{k}"), defs, used),
                "$ref" => {
                    let name = x.as_str().and_then(|r| r.strip_prefix("#/$defs/")).expect("a local $ref");
                    assert!(defs.get(name).is_some(), "{path}: $ref to a missing {name}");
                    used.insert(name.to_string());
                }
                _ => {}
            }
        }
        if obj.get("type") == Some(&json!("object")) && obj.contains_key("properties") {
            assert_eq!(obj.get("additionalProperties"), Some(&json!(false)), "{path}: closed objects only");
            let props = obj["properties"].as_object().expect("properties");
            for r in obj.get("required").and_then(Value::as_array).into_iter().flatten() {
                assert!(props.contains_key(r.as_str().expect("a name")), "{path}: required {r} not listed");
            }
            for (name, p) in props {
                assert!(p.get("description").is_some_and(Value::is_string), "{path}/{name}: no description");
            }
        }
    }
    let mut used = BTreeSet::new();
    walk(&schema, "", &schema["$defs"], &mut used);
    for name in schema["$defs"].as_object().expect("$defs").keys() {
        assert!(used.contains(name), "$defs/{name} is never referenced");
    }
}

#[test]
fn the_validator_catches_a_new_field_a_missing_one_and_a_wrong_name() {
    let schema = schema();
    let (_, doc) = documents().swap_remove(2);
    let bad = |f: &dyn Fn(&mut Value)| {
        let mut d = doc.clone();
        f(&mut d);
        validate(&schema, &d).0
    };
    assert!(validate(&schema, &doc).0.is_empty());
    let e = bad(&|d| d["results"][0]["summary"]["new_statistic"] = json!(1.0));
    assert!(e.iter().any(|e| e.contains("/results/0/summary/new_statistic: not in the schema")), "{e:?}");
    let e = bad(&|d| {
        d["results"][1].as_object_mut().unwrap().remove("unit");
    });
    assert!(e.iter().any(|e| e.contains("required property unit")), "{e:?}");
    let e = bad(&|d| d["results"][2]["validation"]["verdict"] = json!("notvalidated"));
    assert!(e.iter().any(|e| e.contains("not one of")), "{e:?}");
    let e = bad(&|d| d["results"][0]["summary"]["n"] = json!(1.5));
    assert!(e.iter().any(|e| e.contains("not of type")), "{e:?}");
    let e = bad(&|d| d["results"][0]["breakdown"] = json!([{"name": "x"}]));
    assert!(e.iter().any(|e| e.contains("anyOf") || e.contains("required property summary")), "{e:?}");
    let e = bad(&|d| d["schema"] = json!(model::SCHEMA + 1));
    assert!(!e.is_empty());
}

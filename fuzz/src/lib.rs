//! Every reader of outside input, called on arbitrary bytes: the one place both the fuzz
//! targets (`fuzz/fuzz_targets/*.rs`, cargo-fuzz) and the stable replay of the corpus
//! (`tests/fuzz_corpus.rs`, CI) call them, so that what CI replays is what was fuzzed.
//! docs/fuzzing.md says how to run them.
//!
//! Each function must return, whatever the bytes: a reader may refuse them with an error (the
//! functions drop it), never panic, hang or take memory without bound.
//!
//! [`mutate`] is the structure-aware half: it changes one value of a JSON document (a number
//! to ±1e308, NaN's stand-ins, a huge or negative count; a string to a long or hostile one;
//! a key dropped, duplicated or nested deep), so that mutants of a valid result file get past
//! the JSON parser and reach the schema checks and the reporters.
#![forbid(unsafe_code)]
#![allow(dead_code)]

use std::path::Path;

/// The name errors give to fuzzed bytes that came from no file.
const NAME: &str = "fuzz.json";

/// A result file of any schema ([`model::parse_result`], under `read_result_file`).
pub fn result_file(data: &[u8]) -> Option<model::RunFile> {
    let text = std::str::from_utf8(data).ok()?;
    let run = model::parse_result(Path::new(NAME), text).ok()?;
    // What was read can be written again (`osprim finish`, `--import` do).
    let _ = serde_json::to_vec(&run);
    Some(run)
}

/// A journal ([`store::journal::parse`], under `journal::read` and `osprim finish`).
pub fn journal(data: &[u8]) {
    let _ = store::journal::parse(Path::new("fuzz.json.journal"), data);
}

/// `osprim finish` on a journal read from the bytes: its rounds analysed into rows
/// ([`osprim::runner::assemble`], few bootstrap replicates), and the result file written as
/// text and read again.
pub fn finish(data: &[u8]) {
    let Ok(contents) = store::journal::parse(Path::new("fuzz.json.journal"), data) else { return };
    let mut run = contents.run;
    osprim::runner::assemble(&mut run, &contents.rows, 20);
    if let Ok(text) = serde_json::to_string(&run) {
        let _ = model::parse_result(Path::new(NAME), &text);
    }
}

/// Every reporter over a result file read from the bytes: each format of `osprim show`
/// (narrow and wide, with details and every seed row), the seed papers' view, the closing
/// verdict and the HTML report.
pub fn render(data: &[u8]) {
    let Some(run) = result_file(data) else { return };
    render_run(&run);
}

/// Every reporter over a parsed run ([`render`]).
pub fn render_run(run: &model::RunFile) {
    use report::{Format, View};
    let views = [View::default(), View { width: 40, wide: true, detail: true, color: true, all_rows: true }];
    for format in [Format::Table, Format::Json, Format::Csv, Format::Markdown, Format::Latex] {
        for view in &views {
            let _ = report::render(run, format, view);
            let _ = report::render_papers(run, format, view);
        }
    }
    let _ = report::verdict(run, 1.0);
    let _ = report::any_failed(run);
    let _ = report::html::render(run, NAME, None);
}

/// The separator between files in a `history_import` input.
pub const FILE_SEPARATOR: &[u8] = b"\n--osprim-fuzz-file--\n";

/// `osprim history --import DIR` ([`store::history::import`]) on a fresh SQLite history:
/// the bytes, cut at [`FILE_SEPARATOR`], become the result files of a directory (the first
/// twice, to be found known the second time), beside a journal and a directory named like a
/// result file; then the history is read back and shown as `osprim history` and
/// `osprim history --changes` show it, in every format.
pub fn history_import(data: &[u8]) {
    use store::history::{History, Location, import};
    // In memory where it can be: SQLite syncs each commit, and a disk makes that slow.
    let shm = Path::new("/dev/shm");
    let scratch = if shm.is_dir() { shm.to_path_buf() } else { std::env::temp_dir() };
    let Ok(dir) = tempfile::Builder::new().prefix("fuzz-history-").tempdir_in(scratch) else { return };
    let files = dir.path().join("in");
    if std::fs::create_dir(&files).is_err() {
        return;
    }
    let mut parts = split(data, FILE_SEPARATOR);
    if let Some(first) = parts.first().copied() {
        parts.push(first);
    }
    for (i, part) in parts.iter().enumerate() {
        if std::fs::write(files.join(format!("{i:03}.json")), part).is_err() {
            return;
        }
    }
    let _ = std::fs::write(files.join("000.json.journal"), data);
    let _ = std::fs::create_dir(files.join("dir.json"));
    let Ok(mut h) = History::open(&Location::Sqlite(dir.path().join("history.db"))) else { return };
    if import(&mut h, &files, None).is_err() {
        return;
    }
    let _ = h.runs();
    let Ok(points) = h.points(&[]) else { return };
    if let Some(run) = parts.first().and_then(|p| result_file(p)) {
        let _ = h.earlier(&run);
    }
    let found = analysis::history::changes::find(&points);
    let view = report::View::default();
    for format in [report::Format::Table, report::Format::Json, report::Format::Csv, report::Format::Markdown] {
        let w = report::writer(format);
        let _ = w.history(&points, &view);
        let _ = w.changes(&found, &view);
    }
}

/// Every reader above, on the same bytes (the replay of reproducers: a crash found by one
/// target is tried on all).
pub fn all_readers(data: &[u8]) {
    result_file(data);
    journal(data);
    finish(data);
    history_import(data);
}

/// `data` cut at each `sep`.
fn split<'a>(data: &'a [u8], sep: &[u8]) -> Vec<&'a [u8]> {
    let mut parts = Vec::new();
    let mut rest = data;
    while let Some(at) = rest.windows(sep.len()).position(|w| w == sep) {
        parts.push(&rest[..at]);
        rest = &rest[at + sep.len()..];
    }
    parts.push(rest);
    parts
}

/// A fuzz target (`fuzz/fuzz_targets/*.rs`) of the reader `$read`: libFuzzer calls it on each
/// input, and mutates inputs half the time with [`mutate_in_place`], half its own way.
#[macro_export]
macro_rules! fuzz_reader {
    ($read:path) => {
        libfuzzer_sys::fuzz_target!(|data: &[u8]| {
            let _ = $read(data);
        });

        libfuzzer_sys::fuzz_mutator!(|data: &mut [u8], size: usize, max_size: usize, seed: u32| {
            $crate::mutate_in_place(data, size, max_size, seed)
                .unwrap_or_else(|| libfuzzer_sys::fuzzer_mutate(data, size, max_size))
        });
    };
}

/// For libFuzzer: on even seeds, [`mutate`] of the input's first `size` bytes written over
/// them and its length, when it fits in `max_size`; else `None` (libFuzzer mutates).
pub fn mutate_in_place(data: &mut [u8], size: usize, max_size: usize, seed: u32) -> Option<usize> {
    if !seed.is_multiple_of(2) {
        return None;
    }
    let m = mutate(&data[..size], u64::from(seed))?;
    if m.len() > max_size.min(data.len()) {
        return None;
    }
    data[..m.len()].copy_from_slice(&m);
    Some(m.len())
}

/// A small deterministic generator (xorshift), so that a mutation is replayed from its seed.
pub struct Rng(u64);

impl Rng {
    /// From `seed` (any value).
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    /// The next value.
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// A value below `n` (0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 { 0 } else { (self.next() % n as u64) as usize }
    }
}

/// Numbers a reader must survive: the ends of f64, tiny and negative values, counts that do
/// not fit, values just beyond u64 and i64.
pub const HOSTILE_NUMBERS: &[&str] = &[
    "1e308",
    "-1e308",
    "1.7976931348623157e308",
    "-1.7976931348623157e308",
    "5e-324",
    "-5e-324",
    "0",
    "-0",
    "-1",
    "1e300",
    "-1e300",
    "18446744073709551615",
    "18446744073709551616",
    "-9223372036854775808",
    "9223372036854775807",
    "4294967296",
    "1e19",
    "123456789012345678901234567890",
    "0.5",
    "-2.5",
];

/// Strings a reader must survive (NaN and infinities are strings or nulls in JSON).
pub const HOSTILE_STRINGS: &[&str] = &[
    "",
    "NaN",
    "inf",
    "-inf",
    "\u{1b}[31mred\u{1b}[0m",
    "<script>alert(1)</script>",
    "a|b\\c&d%e_f{g}$h",
    "x.y",
    "*",
    "\u{0}",
    "é\u{202e}ü",
];

/// One structured change to the JSON document in `data`, or to one line of JSON lines (a
/// journal), chosen by `seed`; `None` when `data` is neither (the caller then mutates bytes).
pub fn mutate(data: &[u8], seed: u64) -> Option<Vec<u8>> {
    if let Some(m) = mutate_document(data, seed) {
        return Some(m);
    }
    let mut lines = split(data, b"\n");
    let mut rng = Rng::new(seed);
    // The first line from a random one on that is a JSON document (not the torn last one).
    let start = rng.below(lines.len());
    let (at, changed) = (0..lines.len())
        .map(|i| (start + i) % lines.len())
        .find_map(|at| mutate_document(lines[at], rng.next()).map(|m| (at, m)))?;
    lines[at] = &changed;
    Some(lines.join(&b'\n'))
}

/// [`mutate`] of one JSON document.
fn mutate_document(data: &[u8], seed: u64) -> Option<Vec<u8>> {
    let mut doc: serde_json::Value = serde_json::from_slice(data).ok()?;
    let mut rng = Rng::new(seed);
    let rounds = 1 + rng.below(4);
    for _ in 0..rounds {
        let count = count_nodes(&doc);
        let target = rng.below(count);
        let mut seen = 0;
        mutate_node(&mut doc, target, &mut seen, &mut rng);
    }
    let mut text = serde_json::to_vec(&doc).ok()?;
    // A key written twice: serde_json keeps one, so the text is edited.
    if rng.below(8) == 0 {
        duplicate_a_key(&mut text, &mut rng);
    }
    Some(text)
}

/// The count of values in `v`, itself included.
fn count_nodes(v: &serde_json::Value) -> usize {
    use serde_json::Value;
    1 + match v {
        Value::Array(a) => a.iter().map(count_nodes).sum(),
        Value::Object(m) => m.values().map(count_nodes).sum(),
        _ => 0,
    }
}

/// Changes the `target`-th value of `v` (depth first, `seen` counts the values passed).
fn mutate_node(v: &mut serde_json::Value, target: usize, seen: &mut usize, rng: &mut Rng) -> bool {
    use serde_json::Value;
    if *seen == target {
        change(v, rng);
        return true;
    }
    *seen += 1;
    match v {
        Value::Array(a) => a.iter_mut().any(|x| mutate_node(x, target, seen, rng)),
        Value::Object(m) => m.values_mut().any(|x| mutate_node(x, target, seen, rng)),
        _ => false,
    }
}

/// One change to one value.
fn change(v: &mut serde_json::Value, rng: &mut Rng) {
    use serde_json::Value;
    let number = |rng: &mut Rng| -> Value {
        serde_json::from_str(HOSTILE_NUMBERS[rng.below(HOSTILE_NUMBERS.len())]).unwrap_or(Value::Null)
    };
    match (rng.below(10), &mut *v) {
        // Numbers and lists of numbers (samples) to hostile ones.
        (0..=3, Value::Number(_)) => *v = number(rng),
        (0..=3, Value::Array(a)) if !a.is_empty() => {
            let n = a.len();
            for _ in 0..=rng.below(n) {
                let i = rng.below(n);
                a[i] = number(rng);
            }
        }
        (0..=3, Value::String(s)) => {
            *s = match rng.below(3) {
                0 => HOSTILE_STRINGS[rng.below(HOSTILE_STRINGS.len())].to_string(),
                1 => "x".repeat(1 << (8 + rng.below(8))),
                _ => format!("{s}{s}"),
            }
        }
        // A field dropped, or an element.
        (4..=5, Value::Object(m)) if !m.is_empty() => {
            let k = m.keys().nth(rng.below(m.len())).cloned().unwrap_or_default();
            m.remove(&k);
        }
        (4..=5, Value::Array(a)) if !a.is_empty() => {
            let i = rng.below(a.len());
            if rng.below(2) == 0 {
                a.remove(i);
            } else {
                let x = a[i].clone();
                a.insert(i, x);
            }
        }
        // The wrong type.
        (6, _) => {
            *v = match rng.below(5) {
                0 => Value::Null,
                1 => Value::Bool(true),
                2 => Value::String("1".into()),
                3 => Value::Array(vec![]),
                _ => Value::Object(Default::default()),
            }
        }
        // Deep nesting (serde_json refuses more than 128 levels; a reader may recurse).
        (7, _) => {
            let depth = 1 + rng.below(200);
            let mut x = std::mem::take(v);
            for _ in 0..depth {
                x = if rng.below(2) == 0 { Value::Array(vec![x]) } else { serde_json::json!({ "x": x }) };
            }
            *v = x;
        }
        _ => *v = number(rng),
    }
}

/// Writes one `"key":` of `text` a second time, with another value, right after the first.
fn duplicate_a_key(text: &mut Vec<u8>, rng: &mut Rng) {
    let keys: Vec<usize> = text.windows(2).enumerate().filter(|(_, w)| w == b"\":").map(|(i, _)| i).collect();
    if keys.is_empty() {
        return;
    }
    let end = keys[rng.below(keys.len())];
    let Some(start) = text[..end].iter().rposition(|&b| b == b'"') else { return };
    if start == 0 || !matches!(text[start - 1], b'{' | b',') {
        return;
    }
    let mut extra = text[start..end + 2].to_vec();
    extra.extend_from_slice(HOSTILE_NUMBERS[rng.below(HOSTILE_NUMBERS.len())].as_bytes());
    extra.push(b',');
    text.splice(start..start, extra);
}

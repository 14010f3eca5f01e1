//! What the compiler cannot check about osprim's layout (`docs/architecture.md`). The
//! direction between layers is the workspace's: each layer is a crate, and a crate can name only
//! the crates it depends on. Left to check here:
//! - `unsafe` appears only in its homes: `sys`, and the insides of `rvm` and `domain`;
//! - inside a crate, no two files import each other (directly or around a circle), except the
//!   circles listed here, each with why;
//! - only the command line knows clap.
//!
//! Test code (an item under `#[cfg(test)]`, a `tests.rs` file) is exempt from the circles: a
//! test may borrow a helper from anywhere.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The only places `unsafe` may appear: the system interface, and the insides of the two
/// libraries whose safe APIs stand on it. The probe programs are separate artefacts (built with
/// rustc alone by `crates/bench/build.rs`, loaded or executed by benchmarks), not part of a crate.
const UNSAFE_HOMES: &[&str] = &["crates/sys/src", "crates/rvm/src", "crates/domain/src", "crates/bench/probe"];

/// Circles between the files of one crate that are there by design, each as its sorted members.
const KNOWN_CIRCLES: &[(&str, &[&str], &str)] = &[];

fn workspace() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Every crate's source directory: the binary's `src/` (its `main.rs`) and each `crates/*/src`.
fn crate_sources() -> Vec<(String, PathBuf)> {
    let mut out = vec![("osprim".to_string(), workspace().join("src"))];
    let mut members: Vec<PathBuf> = std::fs::read_dir(workspace().join("crates"))
        .expect("crates/")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.join("src").is_dir())
        .collect();
    members.sort();
    for m in members {
        out.push((m.file_name().unwrap().to_string_lossy().into_owned(), m.join("src")));
    }
    out
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("readable source directory") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// `src/bench/ipc.rs` → `bench`; `src/lib.rs` → `lib`.
fn module_of(src: &Path, file: &Path) -> String {
    let rel = file.strip_prefix(src).expect("under src");
    let first = rel.components().next().expect("a component").as_os_str().to_string_lossy().into_owned();
    first.trim_end_matches(".rs").to_string()
}

fn relative(file: &Path) -> String {
    file.strip_prefix(workspace()).unwrap_or(file).display().to_string()
}

/// The text with comments, string and character literals blanked (newlines kept, so line
/// numbers hold).
fn code_only(text: &str) -> String {
    let b: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let blank = |c: char| if c == '\n' { '\n' } else { ' ' };
    while i < b.len() {
        let c = b[i];
        let next = b.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < b.len() && b[i] != '\n' {
                out.push(' ');
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < b.len() {
                if b[i] == '/' && b.get(i + 1) == Some(&'*') {
                    depth += 1;
                    out.push_str("  ");
                    i += 2;
                } else if b[i] == '*' && b.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    out.push_str("  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    out.push(blank(b[i]));
                    i += 1;
                }
            }
        } else if c == 'r' && (next == Some('"') || (next == Some('#') && !prev_ident(&b, i))) && !prev_ident(&b, i) {
            // Raw string r"…" or r#"…"#.
            let mut j = i + 1;
            let mut hashes = 0;
            while b.get(j) == Some(&'#') {
                hashes += 1;
                j += 1;
            }
            if b.get(j) != Some(&'"') {
                out.push(c);
                i += 1;
                continue;
            }
            j += 1;
            while j < b.len() {
                if b[j] == '"' && (0..hashes).all(|k| b.get(j + 1 + k) == Some(&'#')) {
                    j += 1 + hashes;
                    break;
                }
                j += 1;
            }
            for &ch in &b[i..j.min(b.len())] {
                out.push(blank(ch));
            }
            i = j;
        } else if c == '"' {
            out.push(' ');
            i += 1;
            while i < b.len() && b[i] != '"' {
                if b[i] == '\\' {
                    out.push(' ');
                    i += 1;
                }
                if i < b.len() {
                    out.push(blank(b[i]));
                    i += 1;
                }
            }
            out.push(' ');
            i += 1;
        } else if c == '\'' && is_char_literal(&b, i) {
            let end = if next == Some('\\') {
                (i + 2..b.len()).find(|&k| b[k] == '\'').unwrap_or(b.len() - 1)
            } else {
                i + 2
            };
            for _ in i..=end {
                out.push(' ');
            }
            i = end + 1;
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

fn prev_ident(b: &[char], i: usize) -> bool {
    i > 0 && (b[i - 1].is_alphanumeric() || b[i - 1] == '_')
}

/// `'x'` or `'\n'`, not a lifetime `'a`.
fn is_char_literal(b: &[char], i: usize) -> bool {
    match b.get(i + 1) {
        Some('\\') => true,
        Some(_) => b.get(i + 2) == Some(&'\''),
        None => false,
    }
}

/// The code with every item under `#[cfg(test)]` blanked.
fn without_tests(code: &str) -> String {
    let mut out = String::with_capacity(code.len());
    let mut lines = code.split_inclusive('\n').peekable();
    while let Some(line) = lines.next() {
        if line.trim() != "#[cfg(test)]" {
            out.push_str(line);
            continue;
        }
        out.push('\n');
        // Skip the item: up to its `;` at depth 0, or to the `}` closing its first `{`.
        let mut depth = 0i32;
        let mut opened = false;
        for l in lines.by_ref() {
            out.push('\n');
            let mut done = false;
            for ch in l.chars() {
                match ch {
                    '{' => {
                        depth += 1;
                        opened = true;
                    }
                    '}' => depth -= 1,
                    ';' if !opened && depth == 0 => done = true,
                    _ => {}
                }
            }
            if done || (opened && depth <= 0) {
                break;
            }
        }
    }
    out
}

/// The top-level modules a line of code names through `crate::`: `crate::x::…`,
/// `crate::x`, and each first segment of `crate::{x, y::z}`.
fn crate_modules(line: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut rest = line;
    while let Some(at) = rest.find("crate::") {
        let before = rest[..at].chars().last();
        rest = &rest[at + "crate::".len()..];
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue; // e.g. `my_crate::`
        }
        if let Some(group) = rest.strip_prefix('{') {
            let end = group.find('}').unwrap_or(group.len());
            for part in group[..end].split(',') {
                let name: String = part.trim().chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
                if !name.is_empty() && name != "self" {
                    found.push(name);
                }
            }
        } else {
            let name: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
            if !name.is_empty() {
                found.push(name);
            }
        }
    }
    found
}

/// The sibling modules a top-level file names through `super::` (a file directly in `src/`
/// whose parent is the crate root): `super::x::…` and `super::{x, y}`.
fn super_modules(line: &str) -> Vec<String> {
    crate_modules(&line.replace("super::", "crate::"))
}

#[test]
fn unsafe_lives_only_in_its_homes() {
    let mut files = Vec::new();
    rust_files(&workspace().join("src"), &mut files);
    rust_files(&workspace().join("crates"), &mut files);
    files.sort();
    let mut problems = Vec::new();
    for file in &files {
        let rel = relative(file);
        if UNSAFE_HOMES.iter().any(|home| rel.starts_with(home)) {
            continue;
        }
        let code = code_only(&std::fs::read_to_string(file).expect("readable source"));
        for (n, line) in code.lines().enumerate() {
            let words = line.split(|c: char| !(c.is_alphanumeric() || c == '_'));
            if words.clone().any(|w| w == "unsafe") && !line.contains("unsafe_code") {
                problems.push(format!("{rel}:{}: {}", n + 1, line.trim()));
            }
        }
    }
    assert!(problems.is_empty(), "`unsafe` outside its homes ({UNSAFE_HOMES:?}):\n{}", problems.join("\n"));
}

#[test]
fn every_crate_outside_the_homes_forbids_unsafe() {
    for (name, src) in crate_sources() {
        let rel = relative(&src);
        if UNSAFE_HOMES.iter().any(|home| *home == rel) {
            continue;
        }
        let root = if src.join("lib.rs").exists() { src.join("lib.rs") } else { src.join("main.rs") };
        let text = std::fs::read_to_string(&root).expect("crate root");
        assert!(
            text.contains("#![forbid(unsafe_code)]") || text.contains("#![deny(unsafe_code)]"),
            "crate {name} ({}) does not forbid unsafe code",
            relative(&root)
        );
    }
}

/// The circles (strongly connected sets of two or more files) among the top-level modules of
/// each crate, as `crate: [modules]`, sorted.
fn circles() -> Vec<(String, Vec<String>)> {
    let mut found = Vec::new();
    for (name, src) in crate_sources() {
        let mut files = Vec::new();
        rust_files(&src, &mut files);
        let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        let modules: BTreeSet<String> = files.iter().map(|f| module_of(&src, f)).collect();
        for file in &files {
            if file.file_name().is_some_and(|n| n == "tests.rs" || n == "fixtures.rs") {
                continue;
            }
            let module = module_of(&src, file);
            let top_level = file.parent() == Some(src.as_path());
            let code = without_tests(&code_only(&std::fs::read_to_string(file).expect("readable source")));
            for line in code.lines() {
                let mut named = crate_modules(line);
                if top_level {
                    named.extend(super_modules(line));
                }
                for target in named {
                    if target != module && modules.contains(&target) && module != "lib" && module != "main" {
                        edges.entry(module.clone()).or_default().insert(target);
                    }
                }
            }
        }
        for set in strongly_connected(&modules, &edges) {
            if set.len() > 1 {
                found.push((name.clone(), set));
            }
        }
    }
    found
}

/// Tarjan's strongly connected components, each sorted.
fn strongly_connected(nodes: &BTreeSet<String>, edges: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct State<'a> {
        edges: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        out: Vec<Vec<String>>,
    }
    fn visit<'a>(s: &mut State<'a>, v: &'a str) {
        let i = s.index.len();
        s.index.insert(v, i);
        s.low.insert(v, i);
        s.stack.push(v);
        s.on_stack.insert(v);
        if let Some(targets) = s.edges.get(v) {
            for w in targets {
                let w = w.as_str();
                if !s.index.contains_key(w) {
                    visit(s, w);
                    let lw = s.low[w];
                    let lv = s.low.get_mut(v).unwrap();
                    *lv = (*lv).min(lw);
                } else if s.on_stack.contains(w) {
                    let iw = s.index[w];
                    let lv = s.low.get_mut(v).unwrap();
                    *lv = (*lv).min(iw);
                }
            }
        }
        if s.low[v] == s.index[v] {
            let mut set = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack.remove(w);
                set.push(w.to_string());
                if w == v {
                    break;
                }
            }
            set.sort();
            s.out.push(set);
        }
    }
    let mut s = State {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        out: Vec::new(),
    };
    for v in nodes {
        if !s.index.contains_key(v.as_str()) {
            visit(&mut s, v);
        }
    }
    s.out
}

#[test]
fn the_files_of_a_crate_import_one_another_in_one_direction_except_the_known_circles() {
    let found = circles();
    let known: Vec<(String, Vec<String>)> =
        KNOWN_CIRCLES.iter().map(|(c, m, _)| (c.to_string(), m.iter().map(|s| s.to_string()).collect())).collect();
    let new: Vec<_> = found.iter().filter(|c| !known.contains(c)).collect();
    let gone: Vec<_> = known.iter().filter(|c| !found.contains(c)).collect();
    assert!(new.is_empty(), "files that import one another around a circle: {new:?}");
    assert!(gone.is_empty(), "circles listed in tests/cli/architecture.rs that are gone (take them off): {gone:?}");
}

#[test]
fn the_checker_sees_imports_and_circles() {
    assert_eq!(crate_modules("use crate::{env, output::parent, self};"), ["env", "output"]);
    assert_eq!(crate_modules("let x = crate::stats::median(&v); my_crate::y"), ["stats"]);
    let code = code_only("let s = \"crate::report\"; // crate::cli\nlet c = '{'; crate::model::X");
    assert_eq!(crate_modules(&code), ["model"]);
    assert!(!without_tests("#[cfg(test)]\nmod tests {\n use crate::cli;\n}\nuse crate::model;\n").contains("cli"));
    assert_eq!(super_modules("use super::{a, b::c};"), ["a", "b"]);
    let nodes: BTreeSet<String> = ["a", "b", "c", "d"].iter().map(|s| s.to_string()).collect();
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (from, to) in [("a", "b"), ("b", "c"), ("c", "a"), ("c", "d")] {
        edges.entry(from.into()).or_default().insert(to.into());
    }
    let mut sets = strongly_connected(&nodes, &edges);
    sets.sort();
    assert_eq!(sets, [vec!["a", "b", "c"], vec!["d"]]);
}

#[test]
fn only_the_command_line_knows_clap() {
    let mut files = Vec::new();
    rust_files(&workspace().join("src"), &mut files);
    rust_files(&workspace().join("crates"), &mut files);
    let mut problems = Vec::new();
    for file in &files {
        let rel = relative(file);
        if rel == "crates/cli/src/cli.rs" || rel == "src/main.rs" {
            continue;
        }
        let code = code_only(&std::fs::read_to_string(file).expect("readable source"));
        for (n, line) in code.lines().enumerate() {
            if line.contains("clap::") || line.contains("use clap") {
                problems.push(format!("{}:{}: {}", file.display(), n + 1, line.trim()));
            }
        }
    }
    assert!(problems.is_empty(), "clap below cli.rs:\n{}", problems.join("\n"));
}

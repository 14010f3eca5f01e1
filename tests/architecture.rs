//! The layers of `docs/architecture.md`, checked: every `crate::…` path in `src/**/*.rs` (in
//! `use` declarations and in code) names a module of the same layer as the file's own, only
//! when that layer allows it, or of a lower layer. Test code (an item under `#[cfg(test)]`
//! and `tests.rs` files) is exempt: tests may borrow helpers from anywhere.

use std::path::{Path, PathBuf};

/// The layers, lowest first; `true` when the modules of a layer may import one another.
const LAYERS: &[(&str, &[&str], bool)] = &[
    ("vocabulary", &["model"], false),
    ("leaf libraries", &["stats", "seeds"], false),
    ("machine access", &["sys", "timer"], true),
    (
        "platform services",
        &["availability", "env", "interrupt", "output", "placement", "scratch", "panics", "terminal"],
        false,
    ),
    ("storage", &["rvm", "store", "domain"], false),
    ("sampling", &["sampler"], false),
    ("benchmarks", &["bench"], false),
    ("journal", &["journal"], false),
    ("registry", &["registry"], false),
    ("execution", &["execution"], false),
    ("analysis", &["analyse"], false),
    ("derivation", &["derive"], false),
    ("comparison", &["compare", "history"], false),
    ("reporting", &["report"], false),
    ("configuration", &["config"], false),
    ("progress", &["progress"], false),
    ("running", &["runner"], false),
    ("cross-checking", &["crosscheck"], false),
    ("command line", &["cli"], false),
    ("crate root", &["lib"], false),
];

fn layer_of(module: &str) -> Option<usize> {
    LAYERS.iter().position(|(_, mods, _)| mods.contains(&module))
}

/// `src/bench/ipc.rs` → `bench`; `src/lib.rs` → `lib`.
fn module_of(src: &Path, file: &Path) -> String {
    let rel = file.strip_prefix(src).expect("under src");
    let first = rel.components().next().expect("a component").as_os_str().to_string_lossy().into_owned();
    first.trim_end_matches(".rs").to_string()
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("readable src") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
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

#[test]
fn every_module_imports_only_from_its_own_or_lower_layers() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files.sort();
    let mut problems = Vec::new();
    for file in &files {
        if file.file_name().is_some_and(|n| n == "tests.rs") {
            continue;
        }
        let module = module_of(&src, file);
        if module == "main" {
            continue; // the binary reaches the library as `osprim::`
        }
        let Some(own) = layer_of(&module) else {
            problems.push(format!("{}: module `{module}` is in no layer of tests/architecture.rs", file.display()));
            continue;
        };
        let text = std::fs::read_to_string(file).expect("readable source");
        let code = without_tests(&code_only(&text));
        for (n, line) in code.lines().enumerate() {
            for target in crate_modules(line) {
                if target == module {
                    continue;
                }
                let Some(theirs) = layer_of(&target) else {
                    problems.push(format!("{}:{}: `crate::{target}` is in no layer", file.display(), n + 1));
                    continue;
                };
                let allowed = theirs < own || (theirs == own && LAYERS[own].2);
                if !allowed {
                    problems.push(format!(
                        "{}:{}: `{module}` ({}) imports `crate::{target}` ({}): {}",
                        file.display(),
                        n + 1,
                        LAYERS[own].0,
                        LAYERS[theirs].0,
                        text.lines().nth(n).unwrap_or("").trim()
                    ));
                }
            }
        }
    }
    assert!(problems.is_empty(), "layering violations (docs/architecture.md):\n{}", problems.join("\n"));
}

#[test]
fn every_layer_module_exists_and_the_checker_sees_imports() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    for (_, mods, _) in LAYERS {
        for m in *mods {
            assert!(src.join(format!("{m}.rs")).exists() || src.join(m).join("mod.rs").exists(), "src/{m}");
        }
    }
    assert_eq!(crate_modules("use crate::{env, output::parent, self};"), ["env", "output"]);
    assert_eq!(crate_modules("let x = crate::stats::median(&v); my_crate::y"), ["stats"]);
    let code = code_only("let s = \"crate::report\"; // crate::cli\nlet c = '{'; crate::model::X");
    assert_eq!(crate_modules(&code), ["model"]);
    assert!(!without_tests("#[cfg(test)]\nmod tests {\n use crate::cli;\n}\nuse crate::model;\n").contains("cli"));
}

#[test]
fn only_the_command_line_knows_clap() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut problems = Vec::new();
    for file in &files {
        let module = module_of(&src, file);
        if module == "cli" || module == "main" {
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

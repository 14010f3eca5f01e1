//! README and docs against the code: the flags table is one table (README = docs/cli.md) and
//! names exactly the flags the command line has, each with the commands that take it; every
//! README example line is at most 100 columns; every README example command parses (run with
//! `--help` appended) and the ones that measure nothing run for real.

use clap::CommandFactory;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

fn read(path: &str) -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(path)).expect("readable")
}

/// The text between `<!-- flags` and `<!-- /flags -->`.
fn flags_table(text: &str) -> String {
    let a = text.find("<!-- flags").expect("a flags table");
    let b = text.find("<!-- /flags -->").expect("the table's end");
    text[a..b].to_string()
}

/// flag name (without dashes) → the commands the table says take it.
fn table_flags(table: &str) -> BTreeMap<String, BTreeSet<String>> {
    let mut out = BTreeMap::new();
    for line in table.lines().filter(|l| l.starts_with("| `-")) {
        let cells: Vec<&str> = line.split(" | ").collect();
        let flag = cells[0].trim_start_matches("| `--").split([' ', '`']).next().unwrap().to_string();
        let commands = cells[1].split(", ").map(|c| c.trim().to_string()).collect();
        out.insert(flag, commands);
    }
    out
}

/// flag name → the commands (`osprim` for the root) that take it, from the clap definition.
fn code_flags() -> BTreeMap<String, BTreeSet<String>> {
    let mut root = osprim::cli::Cli::command();
    root.build();
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut add = |cmd: &clap::Command, name: &str| {
        for arg in cmd.get_arguments() {
            if let Some(long) = arg.get_long() {
                out.entry(long.to_string()).or_default().insert(name.to_string());
            }
        }
    };
    add(&root, "osprim");
    for sub in root.get_subcommands().filter(|s| s.get_name() != "help") {
        add(sub, sub.get_name());
    }
    out
}

#[test]
fn the_flags_table_is_one_table_and_names_every_flag_with_its_commands() {
    let readme = flags_table(&read("README.md"));
    let docs = flags_table(&read("docs/cli.md"));
    assert_eq!(readme, docs, "README's flags table and docs/cli.md's differ");
    let table = table_flags(&readme);
    let code = code_flags();
    assert_eq!(
        table.keys().collect::<Vec<_>>(),
        code.keys().collect::<Vec<_>>(),
        "flag names in the table and in the code differ"
    );
    let all: BTreeSet<String> = osprim::cli::Cli::command()
        .get_subcommands()
        .map(|s| s.get_name().to_string())
        .chain(["osprim".to_string()])
        .collect();
    for (flag, commands) in &table {
        let said: BTreeSet<String> =
            if commands.contains("all") { all.clone() } else { commands.iter().cloned().collect() };
        let mut taken = code[flag].clone();
        if commands.contains("all") {
            taken.extend(all.iter().cloned());
        }
        assert_eq!(said, taken, "--{flag}: the table says {commands:?}");
    }
}

/// The example commands of README (lines of sh blocks that start with `osprim`), without
/// comments and redirections, split into words.
fn readme_examples() -> Vec<Vec<String>> {
    let readme = read("README.md");
    let mut out = Vec::new();
    let mut in_sh = false;
    for line in readme.lines() {
        if line.starts_with("```") {
            in_sh = line == "```sh";
            continue;
        }
        if !in_sh || !line.starts_with("osprim") {
            continue;
        }
        let command = line.split("  #").next().unwrap().split(" > ").next().unwrap().split(" | ").next().unwrap();
        let words: Vec<String> = command.split_whitespace().skip(1).map(|w| w.trim_matches('\'').to_string()).collect();
        out.push(words);
    }
    out
}

#[test]
fn readme_code_blocks_fit_100_columns() {
    let readme = read("README.md");
    let mut in_block = false;
    for (n, line) in readme.lines().enumerate() {
        if line.starts_with("```") {
            in_block = !in_block;
            continue;
        }
        if in_block {
            assert!(line.chars().count() <= 100, "README line {} is {} columns: {line}", n + 1, line.chars().count());
        }
    }
}

#[test]
fn every_readme_example_parses_and_the_ones_that_measure_nothing_run() {
    let examples = readme_examples();
    assert!(examples.len() > 20, "README has its examples: {examples:?}");
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/default-run.json");
    let dir = tempfile::tempdir().unwrap();
    for words in examples {
        let mut with_help = words.clone();
        with_help.push("--help".into());
        let out = assert_cmd::Command::cargo_bin("osprim").unwrap().args(&with_help).output().unwrap();
        assert!(out.status.success(), "osprim {}: {}", with_help.join(" "), String::from_utf8_lossy(&out.stderr));
        let first = words.first().map(String::as_str);
        if !matches!(first, Some("list" | "env" | "show" | "papers" | "completions" | "man")) {
            continue;
        }
        // Result files named in examples stand for the fixture; the newest saved result is
        // looked for in a directory that has the fixture.
        let args: Vec<String> = words
            .iter()
            .map(|w| if w.ends_with(".json") { fixture.display().to_string() } else { w.clone() })
            .collect();
        let results = dir.path().join("osprim-results");
        std::fs::create_dir_all(&results).unwrap();
        std::fs::copy(&fixture, results.join("2026-11-25T03-15-30.586Z-1b46.json")).unwrap();
        let mut args = args;
        if first == Some("man") && args.iter().any(|a| a == "--dir") {
            let at = args.iter().position(|a| a == "--dir").unwrap();
            args[at + 1] = dir.path().join("man").display().to_string();
        }
        let out =
            assert_cmd::Command::cargo_bin("osprim").unwrap().current_dir(dir.path()).args(&args).output().unwrap();
        assert!(out.status.success(), "osprim {}: {}", args.join(" "), String::from_utf8_lossy(&out.stderr));
        assert!(!out.stdout.is_empty() || first == Some("man"), "osprim {} printed nothing", args.join(" "));
    }
}

/// The count README writes between `<!-- count:NAME -->` and `<!-- /count -->`.
fn readme_count(readme: &str, name: &str) -> usize {
    let open = format!("<!-- count:{name} -->");
    let at = readme.find(&open).unwrap_or_else(|| panic!("README counts {name}")) + open.len();
    let end = readme[at..].find("<!-- /count -->").expect("the count's end");
    readme[at..at + end].trim().parse().unwrap_or_else(|_| panic!("{name}: {:?}", &readme[at..at + end]))
}

/// README's counts of the catalogue come from the catalogue: each is marked
/// (`<!-- count:NAME -->N<!-- /count -->`) and checked here. What depends on the machine
/// (results, seconds) is written as a range with the machine named; the numbers of old runs
/// quoted as samples are not counts of the catalogue.
#[test]
fn the_counts_readme_gives_are_the_catalogues() {
    let readme = read("README.md");
    let all = bench::registry::all();
    let families: BTreeSet<&str> = all.iter().map(|b| b.id().split('.').next().unwrap()).collect();
    assert_eq!(readme_count(&readme, "benchmarks"), all.len(), "benchmarks in the catalogue");
    assert_eq!(readme_count(&readme, "families"), families.len(), "families: {families:?}");
    assert_eq!(readme_count(&readme, "derived"), bench::registry::DERIVED.len(), "derived results");
    // The seed suite: the benchmarks the bare osprim measures.
    let cli = <osprim::cli::Cli as clap::Parser>::try_parse_from(["osprim"]).expect("parses");
    let osprim::config::Command::Run { run, .. } = cli.into_command() else { panic!("the bare osprim runs") };
    let seed: BTreeSet<String> = run.only.expect("a restricted run").into_iter().map(|o| o.id).collect();
    assert_eq!(readme_count(&readme, "seed-benchmarks"), seed.len(), "the seed suite's benchmarks: {seed:?}");
    // The bound the plan states is the one README states.
    assert_eq!(run.bound_s, Some(50.0));
    assert!(readme.contains("its plan bounds measuring at 50 s"), "README states the seed suite's bound");
    // `--help` and README agree: under a minute.
    let help = osprim::cli::Cli::command().render_long_help().to_string();
    assert!(help.contains("under a minute") && readme.contains("It finishes in under a minute"), "{help}");
}

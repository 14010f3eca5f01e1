//! What osprim gives the shell and `man`: completions that offer benchmark ids and families
//! (driven in bash, fish and zsh as each shell drives them), and man pages with EXIT STATUS, FILES,
//! ENVIRONMENT and SEE ALSO.

use std::process::Command;

fn osprim() -> Command {
    Command::new(assert_cmd::cargo::cargo_bin("osprim"))
}

/// What bash's completion offers for the words `line` (the last one being completed), with the
/// script of `osprim completions bash` sourced and the binary on PATH as `osprim`.
fn complete(line: &[&str]) -> Vec<String> {
    let bin = assert_cmd::cargo::cargo_bin("osprim");
    let dir = bin.parent().expect("a directory").to_path_buf();
    let words: Vec<String> = line.iter().map(|w| format!("'{w}'")).collect();
    let script = format!(
        "source <(osprim completions bash) || exit 9\n\
         COMP_WORDS=({}); COMP_CWORD={}\n\
         complete -p osprim | grep -q _osprim_with_ids || exit 8\n\
         _osprim_with_ids osprim \"${{COMP_WORDS[COMP_CWORD]}}\" \"${{COMP_WORDS[COMP_CWORD-1]}}\"\n\
         printf '%s\\n' \"${{COMPREPLY[@]}}\"",
        words.join(" "),
        line.len() - 1
    );
    let path = format!("{}:{}", dir.display(), std::env::var("PATH").unwrap_or_default());
    let out = Command::new("bash").arg("-c").arg(&script).env("PATH", path).output().expect("bash runs");
    assert!(out.status.success(), "{line:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).lines().filter(|l| !l.is_empty()).map(String::from).collect()
}

#[test]
fn bash_completes_benchmark_ids_and_families_after_run_list_and_history() {
    if Command::new("bash").arg("--version").output().is_err() {
        eprintln!("skipped: bash is not installed");
        return;
    }
    let run = complete(&["osprim", "run", "sysc"]);
    assert!(run.iter().any(|w| w == "syscall.null") && run.iter().any(|w| w == "syscall"), "{run:?}");
    assert!(run.iter().all(|w| w.starts_with("sysc")), "{run:?}");
    let list = complete(&["osprim", "list", "ipc.p"]);
    assert!(list.iter().any(|w| w == "ipc.pipe"), "{list:?}");
    let history = complete(&["osprim", "history", "--db", "h.db", "fau"]);
    assert!(history.iter().any(|w| w == "fault"), "{history:?}");
    // After the global --color and its value, and after other patterns.
    let after = complete(&["osprim", "--color", "never", "run", "--quick", "syscall", "ctx.t"]);
    assert!(after.iter().any(|w| w == "ctx.thread"), "{after:?}");
    // Options still complete as options; an option's value is not a benchmark.
    let options = complete(&["osprim", "run", "--qu"]);
    assert!(options.iter().any(|w| w == "--quick") && !options.iter().any(|w| w.contains('.')), "{options:?}");
    let value = complete(&["osprim", "run", "--method", "s"]);
    assert_eq!(value, ["seed"]);
    // Not after a command that takes no benchmark.
    assert!(!complete(&["osprim", "show", "sysc"]).iter().any(|w| w == "syscall.null"));
}

#[test]
fn the_catalogue_the_completions_ask_for_is_every_id_and_family() {
    let out = osprim().arg("__complete-ids").output().unwrap();
    assert!(out.status.success());
    let words: Vec<String> = String::from_utf8_lossy(&out.stdout).lines().map(String::from).collect();
    let json = osprim().args(["list", "--format", "json"]).output().unwrap();
    let listed: serde_json::Value = serde_json::from_slice(&json.stdout).expect("JSON");
    let ids: Vec<&str> = listed.as_array().expect("a list").iter().filter_map(|e| e["id"].as_str()).collect();
    assert!(ids.len() > 50, "{ids:?}");
    for id in &ids {
        assert!(words.iter().any(|w| w == id), "{id} offered");
        let family = id.split('.').next().unwrap();
        assert!(words.iter().any(|w| w == family), "{family} offered");
    }
    // A hidden helper: not in the help, nor among the commands a completion offers (clap
    // would offer a hidden subcommand; the helper is none).
    let help = osprim().arg("--help").output().unwrap();
    assert!(!String::from_utf8_lossy(&help.stdout).contains("__complete"));
    for shell in ["bash", "zsh", "fish"] {
        let script = osprim().args(["completions", shell]).output().unwrap();
        let script = String::from_utf8_lossy(&script.stdout);
        let offered = script.lines().filter(|l| l.contains("__complete-ids")).count();
        assert_eq!(offered, if shell == "bash" { 2 } else { 1 }, "{shell}: only where it is called\n{script}");
    }
}

/// The binary's directory first on PATH, so that the shells find it as `osprim`.
fn path_with_osprim() -> String {
    let bin = assert_cmd::cargo::cargo_bin("osprim");
    let dir = bin.parent().expect("a directory").to_path_buf();
    format!("{}:{}", dir.display(), std::env::var("PATH").unwrap_or_default())
}

fn installed(shell: &str) -> bool {
    Command::new(shell).arg("-c").arg("exit 0").output().is_ok_and(|o| o.status.success())
}

#[test]
fn fish_completes_benchmark_ids_and_not_the_hidden_helper() {
    if !installed("fish") {
        eprintln!("skipped: fish is not installed");
        return;
    }
    let complete = |line: &str| -> Vec<String> {
        let script = format!("osprim completions fish | source; or exit 9; complete -C '{line}'");
        let out = Command::new("fish").arg("-c").arg(&script).env("PATH", path_with_osprim()).output().unwrap();
        assert!(out.status.success(), "{line}: {}", String::from_utf8_lossy(&out.stderr));
        // A candidate, then a tab and its description.
        let text = String::from_utf8_lossy(&out.stdout);
        text.lines().map(|l| l.split('\t').next().unwrap_or("").to_string()).collect()
    };
    let run = complete("osprim run ipc.p");
    assert!(run.iter().any(|w| w == "ipc.pipe"), "{run:?}");
    let history = complete("osprim history sysc");
    assert!(history.iter().any(|w| w == "syscall") && history.iter().any(|w| w == "syscall.null"), "{history:?}");
    let commands = complete("osprim ");
    assert!(commands.iter().any(|w| w == "run") && commands.iter().any(|w| w == "compare"), "{commands:?}");
    assert!(!commands.iter().any(|w| w.starts_with("__")), "{commands:?}");
    let cache = complete("osprim run --cache ");
    assert_eq!(cache, ["both", "cold", "hot"]);
}

#[test]
fn zsh_completes_benchmark_ids_in_an_interactive_shell() {
    if !installed("zsh") {
        eprintln!("skipped: zsh is not installed");
        return;
    }
    // zsh completes only at an interactive prompt: drive one in a pseudo-terminal (zsh/zpty),
    // type a line and a tab, and read until the completed word comes back, for 10 s at most.
    let dir = tempfile::tempdir().unwrap();
    let script = osprim().args(["completions", "zsh"]).output().unwrap();
    std::fs::write(dir.path().join("_osprim"), &script.stdout).unwrap();
    let driver = format!(
        r#"zmodload zsh/zpty || exit 9
zpty z 'zsh -f -i'
zpty -w z 'fpath=({dir} $fpath); autoload -U compinit; compinit -u -d {dir}/.zcompdump; PS1="> "'
zpty -w -n z $'osprim run ipc.pi	'
all=""
for i in {{1..100}}; do
  if zpty -r -t z chunk; then all+=$chunk; else sleep 0.1; fi
  [[ $all == *"osprim run ipc.pipe"* ]] && break
done
zpty -d z
[[ $all == *"osprim run ipc.pipe"* ]] && print completed
"#,
        dir = dir.path().display()
    );
    let out = Command::new("zsh").arg("-f").arg("-c").arg(&driver).env("PATH", path_with_osprim()).output().unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        said.contains("completed"),
        "zsh did not complete ipc.pi to ipc.pipe: {said:?} {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn zsh_and_fish_completions_ask_for_the_ids_too() {
    let zsh = osprim().args(["completions", "zsh"]).output().unwrap();
    let zsh = String::from_utf8_lossy(&zsh.stdout);
    assert_eq!(zsh.matches(":_osprim_benchmark_ids'").count(), 4, "run, ab, list, history");
    assert!(zsh.contains("_osprim_benchmark_ids() {"), "{zsh}");
    let fish = osprim().args(["completions", "fish"]).output().unwrap();
    let fish = String::from_utf8_lossy(&fish.stdout);
    assert!(fish.contains("__fish_seen_subcommand_from run ab list history") && fish.contains("__complete-ids"));
}

#[test]
fn man_pages_have_exit_status_files_environment_and_see_also() {
    let main = osprim().arg("man").output().unwrap();
    assert!(main.status.success());
    let main = String::from_utf8_lossy(&main.stdout);
    for section in ["EXIT STATUS", "FILES", "ENVIRONMENT", "SEE ALSO"] {
        assert!(main.contains(&format!(".SH \"{section}\"")), "osprim.1 has {section}");
    }
    for text in ["osprim\\-results/history.db", "RESULT.journal", "NO_COLOR", "128 + n", "osprim\\-run\\fR(1)"] {
        assert!(main.contains(text), "osprim.1 says {text}");
    }
    let dir = tempfile::tempdir().unwrap();
    let out = osprim().args(["man", "--dir"]).arg(dir.path()).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let run = std::fs::read_to_string(dir.path().join("osprim-run.1")).unwrap();
    for section in ["EXIT STATUS", "FILES", "ENVIRONMENT", "SEE ALSO"] {
        assert!(run.contains(&format!(".SH \"{section}\"")), "osprim-run.1 has {section}");
    }
    for page in std::fs::read_dir(dir.path()).unwrap() {
        let page = page.unwrap();
        let text = std::fs::read_to_string(page.path()).unwrap();
        for section in ["EXIT STATUS", "ENVIRONMENT", "SEE ALSO"] {
            assert!(text.contains(&format!(".SH \"{section}\"")), "{:?} has {section}", page.file_name());
        }
    }
    assert!(!dir.path().join("osprim-__complete-ids.1").exists(), "no page for the hidden helper");
    // Where man is installed, the page reads (no roff warnings about unknown requests).
    if let Ok(out) = Command::new("sh").arg("-c").arg("command -v groff").output()
        && out.status.success()
    {
        let rendered = Command::new("sh")
            .arg("-c")
            .arg(format!("groff -k -man -Tutf8 -ww {} 2>&1 >/dev/null", dir.path().join("osprim.1").display()))
            .output()
            .unwrap();
        let warnings = String::from_utf8_lossy(&rendered.stdout);
        assert!(warnings.trim().is_empty(), "{warnings}");
    }
}

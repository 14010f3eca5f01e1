//! The fleet playbook (`fleet/osprim.yml`, docs/fleet.md) run for real by `ansible-playbook`
//! on two inventory hosts on this machine (local connection, each with its own work
//! directory): each host's run is fetched to the controller and recorded in one history, where
//! `osprim history` finds every host's results and `osprim compare` names both hosts. Run
//! again with the same run name, the playbook changes nothing. Skipped, saying why, where
//! `ansible-playbook` is missing (`.ci/run` installs Debian's ansible-core).

use crate::common;
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The longest one playbook run may take before it is killed and the test fails.
const DEADLINE: Duration = Duration::from_secs(600);

fn ansible_playbook() -> Option<String> {
    let out = Command::new("ansible-playbook").arg("--version").stdout(Stdio::piped()).stderr(Stdio::null()).output();
    match out {
        Ok(o) if o.status.success() => Some(String::from_utf8_lossy(&o.stdout).lines().next().unwrap_or("").into()),
        _ => None,
    }
}

/// `ansible-playbook` on the fleet playbook with `vars`, in its own process group, killed
/// with all its workers past [`DEADLINE`]; its exit status and its output.
fn play(tmp: &Path, inventory: &Path, vars: &Path) -> (bool, String, Duration) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let log = tmp.join("play.log");
    let file = std::fs::File::create(&log).unwrap();
    let began = Instant::now();
    let mut child = Command::new("ansible-playbook")
        .args(["-i", inventory.to_str().unwrap(), "-f", "1"])
        .arg(root.join("fleet/osprim.yml"))
        .arg("-e")
        .arg(format!("@{}", vars.display()))
        .env("ANSIBLE_NOCOLOR", "1")
        .env("ANSIBLE_RETRY_FILES_ENABLED", "0")
        .env("ANSIBLE_LOCAL_TEMP", tmp.join("ansible-local"))
        .env("ANSIBLE_REMOTE_TEMP", tmp.join("ansible-remote"))
        .env("ANSIBLE_ASYNC_DIR", tmp.join("ansible-async"))
        .env("ANSIBLE_PYTHON_INTERPRETER", "auto_silent")
        .stdin(Stdio::null())
        .stdout(file.try_clone().unwrap())
        .stderr(file)
        .process_group(0)
        .spawn()
        .expect("ansible-playbook starts");
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if began.elapsed() > DEADLINE {
            let _ = nix::sys::signal::killpg(nix::unistd::Pid::from_raw(child.id() as i32), nix::sys::signal::SIGKILL);
            let _ = child.wait();
            let mut out = String::new();
            let _ = std::fs::File::open(&log).and_then(|mut f| f.read_to_string(&mut out));
            panic!("the playbook ran past {} s and was killed:\n{out}", DEADLINE.as_secs());
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    let elapsed = began.elapsed();
    (status.success(), std::fs::read_to_string(&log).unwrap_or_default(), elapsed)
}

/// The one result file fetched for `host`.
fn fetched(results: &Path, host: &str) -> PathBuf {
    let files: Vec<PathBuf> = std::fs::read_dir(results.join(host))
        .unwrap_or_else(|e| panic!("no directory fetched for {host}: {e}"))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    assert_eq!(files.len(), 1, "{host}: {files:?}");
    files.into_iter().next().unwrap()
}

#[test]
fn the_playbook_runs_osprim_on_two_hosts_and_records_both_in_one_history() {
    let Some(version) = ansible_playbook() else {
        eprintln!("skipped: ansible-playbook is not installed (Debian package ansible-core; .ci/run installs it)");
        return;
    };
    eprintln!("{version}");
    let tmp = tempfile::tempdir().unwrap();
    let (results, db) = (tmp.path().join("results"), tmp.path().join("history.db"));
    let inventory = tmp.path().join("inventory.ini");
    std::fs::write(
        &inventory,
        format!(
            "[osprim]\nhost-a osprim_workdir={dir}/host-a\nhost-b osprim_workdir={dir}/host-b\n\n\
             [osprim:vars]\nansible_connection=local\n",
            dir = tmp.path().display()
        ),
    )
    .unwrap();
    let vars = tmp.path().join("vars.json");
    let binary = assert_cmd::cargo::cargo_bin("osprim");
    std::fs::write(
        &vars,
        serde_json::json!({
            "osprim_binary": binary,
            "osprim_args": "run --quick syscall.null syscall.getpid",
            "osprim_run_name": "ci",
            "osprim_results_dir": results,
            "osprim_db": db,
        })
        .to_string(),
    )
    .unwrap();

    let (ok, log, took) = play(tmp.path(), &inventory, &vars);
    assert!(ok, "the playbook failed:\n{log}");
    eprintln!("the playbook took {:.1} s", took.as_secs_f64());

    // Each host's file, fetched to its own directory, names the host as the inventory does.
    let files: Vec<PathBuf> = ["host-a", "host-b"].iter().map(|h| fetched(&results, h)).collect();
    for (file, host) in files.iter().zip(["host-a", "host-b"]) {
        let run = model::read_result_file(file).unwrap();
        assert_eq!(run.host.as_deref(), Some(host), "{}", file.display());
        assert!(!run.partial && run.results.len() >= 2, "{}", file.display());
    }

    // One history holds every host's results.
    let history = common::osprim().args(["history", "--db"]).arg(&db).args(["--format", "csv"]).output().unwrap();
    assert!(history.status.success(), "{}", String::from_utf8_lossy(&history.stderr));
    let mut rows = csv::Reader::from_reader(&history.stdout[..]);
    let head = rows.headers().unwrap().clone();
    let col = |name: &str| head.iter().position(|h| h == name).unwrap();
    let (host, id) = (col("host"), col("id"));
    let mut seen: Vec<(String, String)> =
        rows.records().map(|r| r.unwrap()).map(|r| (r[host].to_string(), r[id].to_string())).collect();
    seen.sort();
    let want: Vec<(String, String)> = ["host-a", "host-b"]
        .iter()
        .flat_map(|h| ["syscall.getpid", "syscall.null"].map(|i| (h.to_string(), i.to_string())))
        .collect();
    assert_eq!(seen, want, "every host's results, once");
    let table = common::osprim().args(["history", "--db"]).arg(&db).output().unwrap();
    eprintln!("{}", String::from_utf8_lossy(&table.stdout));

    // compare names each run by its host.
    let compared = common::osprim().arg("compare").args(&files).output().unwrap();
    let text = String::from_utf8_lossy(&compared.stdout);
    assert!(compared.status.success(), "{text}{}", String::from_utf8_lossy(&compared.stderr));
    assert!(text.lines().any(|l| l.starts_with("base ") && l.contains(", host-a")), "{text}");
    assert!(text.lines().any(|l| l.starts_with("new ") && l.contains(", host-b")), "{text}");
    assert!(text.contains("host: host-a → host-b"), "{text}");

    // The same run again: nothing measured, fetched or recorded anew.
    let (ok, again, _) = play(tmp.path(), &inventory, &vars);
    assert!(ok, "the second playbook run failed:\n{again}");
    for h in ["host-a", "host-b"] {
        let recap = again.lines().find(|l| l.starts_with(h) && l.contains("changed=")).expect("a recap line");
        assert!(recap.contains("changed=0 ") && recap.contains("failed=0 "), "{recap}\n{again}");
    }
    let history = common::osprim().args(["history", "--db"]).arg(&db).args(["--format", "csv"]).output().unwrap();
    assert_eq!(csv::Reader::from_reader(&history.stdout[..]).records().count(), 4, "nothing recorded twice");
}

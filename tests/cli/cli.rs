//! Command-line behaviour from the outside: error paths, interruption, output formats.
//! No test asserts a duration.

use assert_cmd::Command;
use std::path::Path;

fn osprim() -> Command {
    let mut c = Command::cargo_bin("osprim").expect("binary built");
    c.env("RUST_BACKTRACE", "1");
    c
}

/// Exactly one non-empty stderr line, no panic.
fn one_error_line(stderr: &[u8]) -> String {
    let text = String::from_utf8_lossy(stderr).into_owned();
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "expected one stderr line, got: {text}");
    assert!(!text.contains("panicked"), "{text}");
    assert!(!text.contains("stack backtrace"), "{text}");
    lines[0].to_string()
}

#[test]
fn unknown_benchmark_is_a_usage_error() {
    let out = osprim().args(["run", "nosuchthing", "--no-save"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let line = one_error_line(&out.stderr);
    assert!(line.contains("error: no benchmark matches 'nosuchthing' (see osprim list)"), "{line}");
    assert!(out.stdout.is_empty());
}

#[test]
fn near_miss_suggests_the_id() {
    let out = osprim().args(["run", "syscall.getpdi", "--no-save"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(one_error_line(&out.stderr).contains("did you mean 'syscall.getpid'"));
}

/// A short block (clap's error with its possible values or a similar name, and the usage
/// line), no panic, no backtrace.
fn short_error_block(stderr: &[u8]) -> String {
    let text = String::from_utf8_lossy(stderr).into_owned();
    let lines: Vec<&str> = text.lines().collect();
    assert!((1..=5).contains(&lines.len()), "expected a short block, got: {text}");
    assert!(lines.iter().all(|l| !l.trim().is_empty()), "no blank lines: {text}");
    assert!(!text.contains("panicked") && !text.contains("stack backtrace"), "{text}");
    text
}

#[test]
fn bad_flag_values_are_a_short_block_exit_2() {
    for args in [
        vec!["run", "--cpu", "abc"],
        vec!["run", "--budget", "-1"],
        vec!["run", "--ci-target", "7"],
        vec!["run", "--cpus", "1"],
        vec!["run", "--format", "xml"],
        vec!["run", "--method", "fastest"],
        vec!["run", "--nosuchflag"],
        vec!["run", "--sizes", "4X"],
        vec!["run", "--sizes", "100M"],
        vec!["run", "--sweep", "--sizes", "8"],
        vec!["env", "--format", "yaml"],
    ] {
        let out = osprim().args(&args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let block = short_error_block(&out.stderr);
        assert!(block.starts_with("error:"), "{args:?}: {block}");
    }
    // clap's help survives: the possible values, and a similar name.
    let out = osprim().args(["run", "--format", "xml"]).output().unwrap();
    assert!(short_error_block(&out.stderr).contains("[possible values: table, json, csv, markdown, latex]"));
    let out = osprim().args(["run", "--quik"]).output().unwrap();
    assert!(short_error_block(&out.stderr).contains("a similar argument exists: '--quick'"));
    let out = osprim().args(["lsit"]).output().unwrap();
    assert!(short_error_block(&out.stderr).contains("a similar subcommand exists: 'list'"));
}

#[test]
fn cpu_outside_allowed_set_is_refused() {
    let out = osprim().args(["run", "harness", "--cpu", "100000", "--no-save"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "a bad flag value is a usage error");
    assert!(one_error_line(&out.stderr).contains("CPU 100000 is not in this process's allowed CPU set"));
}

#[test]
fn unwritable_output_fails_before_measuring() {
    let dir = tempfile::tempdir().unwrap();
    let blocker = dir.path().join("a-file");
    std::fs::write(&blocker, b"x").unwrap();
    let target = blocker.join("results.json"); // parent is a regular file
    let out = osprim().args(["run", "--quick", "harness"]).arg("--output").arg(&target).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let line = one_error_line(&out.stderr);
    assert!(line.contains("cannot write results to"), "{line}");
    assert!(out.stdout.is_empty(), "nothing may be measured");
}

#[test]
fn output_that_is_a_directory_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let out = osprim().args(["run", "--quick", "harness", "--output"]).arg(dir.path()).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(one_error_line(&out.stderr).contains("is a directory"));
}

fn seeds_error(content: Option<&[u8]>) -> String {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.json");
    if let Some(c) = content {
        std::fs::write(&path, c).unwrap();
    }
    let out = osprim().arg("seeds").arg(&path).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let line = one_error_line(&out.stderr);
    assert!(line.contains("r.json"), "names the file: {line}");
    line
}

#[test]
fn seeds_rejects_bad_result_files() {
    assert!(seeds_error(None).contains("cannot read result file"));
    assert!(seeds_error(Some(b"{\"schema\": 2, \"osprim\": {")).contains("truncated"));
    assert!(seeds_error(Some(b"{\"hello\": 1}")).contains("not an osprim result file"));
    assert!(seeds_error(Some(b"not json at all")).contains("not an osprim result file"));
    assert!(seeds_error(Some(b"{\"schema\": 99}")).contains("schema 99"));
    assert!(seeds_error(Some(b"{\"schema\": 2}")).contains("not an osprim result file"));
    assert!(seeds_error(Some(b"{\"schema\": \"1\"}")).contains("is \"1\", not a whole number"));
}

fn quick_json(args: &[&str]) -> serde_json::Value {
    let out = osprim()
        .args(["run", "--quick", "--budget", "0.05", "--no-save", "--format", "json"])
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("stdout is one JSON document")
}

#[test]
fn json_output_has_schema_samples_and_checks() {
    let v = quick_json(&["harness.empty", "syscall.getpid", "id.sched_getcpu"]);
    assert_eq!(v["schema"], 4);
    assert_eq!(v["partial"], false);
    assert_eq!((v["config"]["rounds"].as_u64(), v["config"]["rounds_max"].as_u64()), (Some(3), Some(3)));
    let rows = v["results"].as_array().unwrap();
    assert_eq!(rows.len(), 3);
    for r in rows {
        let n = r["summary"]["n"].as_u64().unwrap();
        let dropped = r["summary"]["structure"]["dropped"].as_u64().unwrap();
        assert!(n >= 30, "at least 30 samples");
        assert_eq!(r["unit"], "ns");
        assert_eq!(r["samples"].as_array().unwrap().len() as u64, n + dropped, "every sample kept");
        let per_round: u64 = r["samples_per_round"].as_array().unwrap().iter().map(|v| v.as_u64().unwrap()).sum();
        assert_eq!(per_round, n + dropped, "rounds account for every sample");
        // --quick makes exactly 3 rounds (no extra ones: it stays quick); the harness's
        // self-test takes one.
        let rounds = r["samples_per_round"].as_array().unwrap().len();
        let expected = if r["id"] == "harness.empty" { 1..=1 } else { 3..=3 };
        assert!(expected.contains(&rounds), "{}: {rounds} rounds", r["id"]);
        let s = &r["summary"];
        let (lo, med, hi) = (
            s["median_ci95"][0].as_f64().unwrap(),
            s["median"].as_f64().unwrap(),
            s["median_ci95"][1].as_f64().unwrap(),
        );
        assert!(lo <= med && med <= hi, "CI contains the median");
        assert!(!r["validation"]["checks"].as_array().unwrap().is_empty(), "{} makes checks", r["id"]);
    }
    // sched_getcpu's answer is checked against the CPU it was pinned to.
    let cpu = v["placement"]["cpu"].as_u64().unwrap();
    let getcpu = rows.iter().find(|r| r["id"] == "id.sched_getcpu").unwrap();
    assert!(getcpu["validation"]["checks"][0]["expected"].as_str().unwrap().contains(&format!("cpu {cpu}")));
    assert!(v["timer"]["overhead_ns"].as_f64().unwrap() >= 0.0);
}

#[test]
fn seed_method_keeps_10000_runs() {
    // Through the sampler (harness.empty takes its own fixed samples).
    let v = quick_json(&["--method", "seed", "syscall.null"]);
    let r = &v["results"][0];
    assert_eq!(r["summary"]["n"], 10_000);
    assert_eq!(r["samples"].as_array().unwrap().len(), 10_000);
    assert_eq!(r["warmup_iterations"], 300, "100 discarded in each of 3 rounds");
    assert_eq!(r["iterations_per_sample"], 1);
}

#[test]
fn explicit_cpu_is_recorded_and_honoured() {
    let v = quick_json(&["--cpu", "0", "id.sched_getcpu"]);
    assert_eq!(v["placement"]["cpu"], 0);
    assert_eq!(v["placement"]["chosen_by"], "--cpu");
    assert_eq!(v["results"][0]["validation"]["verdict"], "validated");
}

#[test]
fn csv_output_has_a_header_and_a_row_per_result() {
    let out = osprim()
        .args(["run", "--quick", "--budget", "0.05", "--no-save", "--format", "csv", "syscall"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines[0].starts_with("row,id,stage,unit,status,verdict,flags,method,stop,n,iterations_per_sample,median,"),
        "{}",
        lines[0]
    );
    assert!(lines[1..].iter().all(|l| l.contains(",ns,")), "{text}");
    // syscall.io_uring_nop: a row and its null_syscall stage per batch size and the fit over
    // the batch sizes, or one skipped row where io_uring is absent.
    let nop_lines = if sys::uring::unavailable().is_none() { 4 * 2 + 1 } else { 1 };
    assert_eq!(lines.len(), 1 + 8 + nop_lines, "{text}");
}

#[test]
fn saved_result_reads_back_into_the_seed_view() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.json");
    let out = osprim()
        .args(["run", "--quick", "--budget", "0.05", "syscall.getpid", "lib.dlopen", "--output"])
        .arg(&path)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("results saved to"));
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(left.len(), 1, "only the result file remains: {left:?}");
    let seeds = osprim().arg("seeds").arg(&path).output().unwrap();
    assert!(seeds.status.success());
    let text = String::from_utf8(seeds.stdout).unwrap();
    // Headings name the system and cite the paper, never a seed file's prefix.
    for paper in ["RightSpeed — ", "L4Ka::Pistachio — ", "VMMC — ", "Go! component OS — ", "Rhino — "] {
        assert!(text.contains(paper), "{paper}");
    }
    assert!(!text.contains("000 RightSpeed"));
    assert!(text.contains("lib.dlopen"));
    assert!(text.contains("not in this result —") && text.contains("(ctx.address_space [placement=same_cpu])"));
    assert!(text.contains("not applicable"));
    assert!(text.contains("(syscall.null)"));
}

#[test]
fn list_and_env_describe_themselves() {
    let out = osprim().args(["list", "syscall"]).output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("syscall.null") && text.contains("empty system call") && !text.contains("fs.stat"));
    let out = osprim().args(["env", "--format", "json"]).output().unwrap();
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v["kernel"]["release"].is_string());
    // The timer a run measures with, as the help promises.
    assert!(v["timer"]["kind"].is_string() && v["timer"]["freq_hz"].as_f64().is_some_and(|f| f > 0.0), "{v}");
    assert!(v["timer"]["resolution_ns"].is_number() && v["timer"]["overhead_ns"].is_number(), "{v}");
    let out = osprim().arg("env").output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("kernel.release"));
    for key in ["timer ", "timer.frequency", "timer.invariant", "timer.step", "timer.overhead"] {
        assert!(text.lines().any(|l| l.starts_with(key)), "{key}: {text}");
    }
}

#[test]
fn every_subcommand_has_help_with_examples() {
    for sub in
        [vec!["--help"], vec!["run", "--help"], vec!["list", "--help"], vec!["env", "--help"], vec!["seeds", "--help"]]
    {
        let out = osprim().args(&sub).output().unwrap();
        assert!(out.status.success(), "{sub:?}");
        assert!(String::from_utf8(out.stdout).unwrap().contains("Examples:"), "{sub:?}");
    }
}

fn tmp_entries(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect()
}

/// Starts a run, waits until its result file holds a row, sends `signal`, and checks the exit
/// status, the partial result and that nothing temporary is left.
fn signal_keeps_partial_results_and_cleans_up(signal: nix::sys::signal::Signal, status: i32) {
    let work = tempfile::tempdir().unwrap();
    let private_tmp = tempfile::tempdir().unwrap();
    let result = work.path().join("partial.json");
    let bin = assert_cmd::cargo::cargo_bin("osprim");
    let child = std::process::Command::new(bin)
        .args(["run", "--budget", "1", "--output"])
        .arg(&result)
        .env("TMPDIR", private_tmp.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until the journal holds a measurement, then interrupt.
    let journal = work.path().join("partial.json.journal");
    let measured = || std::fs::read_to_string(&journal).is_ok_and(|j| j.contains("\"kind\":\"outcome\""));
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !measured() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(measured(), "measurements are journaled while the run goes on");
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), signal).unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(status), "{signal}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&result).unwrap()).unwrap();
    assert_eq!(v["partial"], true);
    assert!(v["finished_utc"].is_null(), "an interrupted run has no end time");
    let seeds = osprim().arg("seeds").arg(&result).output().unwrap();
    assert!(
        String::from_utf8_lossy(&seeds.stdout).contains("PARTIAL RUN"),
        "the seed view says so: {} {}",
        seeds.status,
        String::from_utf8_lossy(&seeds.stderr)
    );
    let ids: std::collections::HashSet<&str> =
        v["results"].as_array().unwrap().iter().filter_map(|r| r["id"].as_str()).collect();
    assert!(!ids.is_empty() && ids.len() < bench::registry::all().len(), "some but not all benchmarks: {ids:?}");
    assert_eq!(tmp_entries(work.path()), vec!["partial.json".to_string()], "no temporary file or journal left");
    assert!(
        tmp_entries(private_tmp.path()).is_empty(),
        "scratch directory removed: {:?}",
        tmp_entries(private_tmp.path())
    );
}

#[test]
fn sigint_keeps_partial_results_and_cleans_up() {
    signal_keeps_partial_results_and_cleans_up(nix::sys::signal::Signal::SIGINT, 130);
}

#[test]
fn sigterm_sighup_sigquit_and_sigusr1_end_a_run_like_ctrl_c() {
    use nix::sys::signal::Signal;
    for (signal, status) in
        [(Signal::SIGTERM, 143), (Signal::SIGHUP, 129), (Signal::SIGQUIT, 131), (Signal::SIGUSR1, 138)]
    {
        signal_keeps_partial_results_and_cleans_up(signal, status);
    }
}

#[test]
fn output_never_replaces_what_is_not_a_regular_file() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
    let link = dir.path().join("link");
    let target = dir.path().join("someone-else.txt");
    std::fs::write(&target, b"keep me").unwrap();
    std::os::unix::fs::symlink(&target, &link).unwrap();
    for (path, what) in
        [(fifo.clone(), "a FIFO"), (link.clone(), "a symbolic link"), ("/dev/null".into(), "a character device")]
    {
        let out = osprim().args(["run", "--quick", "syscall.null", "--output"]).arg(&path).output().unwrap();
        assert_eq!(out.status.code(), Some(1));
        let line = one_error_line(&out.stderr);
        assert!(line.contains(what) && line.contains("replaces only regular files"), "{line}");
        assert!(out.stdout.is_empty(), "nothing may be measured");
    }
    use std::os::unix::fs::FileTypeExt;
    assert!(std::fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo(), "the FIFO is still a FIFO");
    assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
    assert_eq!(std::fs::read(&target).unwrap(), b"keep me");
    for bad in [format!("{}/newdir/", dir.path().display()), format!("{}/{}", dir.path().display(), "n".repeat(300))] {
        let out = osprim().args(["run", "--quick", "syscall.null", "--output", &bad]).output().unwrap();
        assert_eq!(out.status.code(), Some(1), "{bad}");
        assert!(one_error_line(&out.stderr).contains("cannot write results to"));
        assert!(out.stdout.is_empty());
    }
}

#[test]
fn runs_started_together_never_share_a_default_file() {
    let dir = tempfile::tempdir().unwrap();
    let children: Vec<std::process::Child> = (0..3)
        .map(|_| {
            std::process::Command::new(assert_cmd::cargo::cargo_bin("osprim"))
                .args(["run", "--quick", "--budget", "0.01", "vdso.clock_gettime", "--format", "csv"])
                .current_dir(dir.path())
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    for mut c in children {
        assert!(c.wait().unwrap().success());
    }
    let files = tmp_entries(&dir.path().join("osprim-results"));
    let results: Vec<&String> = files.iter().filter(|f| f.ends_with(".json")).collect();
    assert_eq!(results.len(), 3, "{files:?}");
    // All three were recorded in the one history database, none lost to the others.
    let out = osprim().args(["history", "--format", "json"]).current_dir(dir.path()).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let points: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(points.as_array().unwrap().len(), 3, "{points}");
}

#[test]
fn help_that_cannot_be_written_fails_and_a_family_typo_gets_a_suggestion() {
    let full = std::fs::OpenOptions::new().write(true).open("/dev/full").unwrap();
    let out = std::process::Command::new(assert_cmd::cargo::cargo_bin("osprim"))
        .arg("--help")
        .stdout(full)
        .stderr(std::process::Stdio::piped())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(one_error_line(&out.stderr).contains("cannot write to stdout"));
    let out = osprim().args(["run", "--no-save", "sycall"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(one_error_line(&out.stderr).contains("did you mean 'syscall'?"));
}

#[test]
fn seeds_refuses_what_is_not_a_regular_file_and_shows_no_impossible_ratio() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
    for p in [fifo.as_path(), Path::new("/dev/zero")] {
        let out = osprim().arg("seeds").arg(p).timeout(std::time::Duration::from_secs(20)).output().unwrap();
        assert_eq!(out.status.code(), Some(1), "{}", p.display());
        assert!(one_error_line(&out.stderr).contains("not a regular file"));
    }
    // A result whose median is negative and whose clock frequency is 0 gives no ratio.
    let mut v = quick_json(&["syscall.null", "syscall.getpid"]);
    v["results"][0]["summary"]["median"] = serde_json::json!(-5.0);
    v["results"][0]["summary"]["mean"] = serde_json::json!(-5.0);
    v["timer"]["freq_hz"] = serde_json::json!(0.0);
    let edited = dir.path().join("edited.json");
    std::fs::write(&edited, serde_json::to_vec(&v).unwrap()).unwrap();
    let out = osprim().arg("seeds").arg(&edited).output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!text.contains("inf×") && !text.contains("NaN") && !text.contains("at 0.0 MHz"), "{text}");
    assert!(!text.lines().any(|l| l.contains("-")
        && l.contains("×")
        && l.split_whitespace().any(|w| w.starts_with('-') && w.ends_with('×'))));
}

#[test]
fn a_second_signal_exits_at_once_and_leaves_nothing_temporary() {
    let work = tempfile::tempdir().unwrap();
    let private_tmp = tempfile::tempdir().unwrap();
    let result = work.path().join("r.json");
    let child = std::process::Command::new(assert_cmd::cargo::cargo_bin("osprim"))
        .args(["run", "--budget", "20", "fault.file", "--output"])
        .arg(&result)
        .env("TMPDIR", private_tmp.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until the scratch directory holds the benchmark's files, then interrupt twice.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let busy = || {
        std::fs::read_dir(private_tmp.path())
            .map(|d| d.flatten().any(|e| std::fs::read_dir(e.path()).is_ok_and(|mut f| f.next().is_some())))
            .unwrap_or(false)
    };
    while !busy() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert!(busy(), "the benchmark fills its scratch directory");
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT).unwrap();
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT).unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130));
    assert!(tmp_entries(private_tmp.path()).is_empty(), "scratch left: {:?}", tmp_entries(private_tmp.path()));
    assert_eq!(tmp_entries(work.path()), vec!["r.json".to_string()], "no temporary result file left");
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&result).unwrap()).unwrap();
    assert_eq!(v["partial"], true, "the file saved last is a valid, partial result");
}

#[test]
fn a_file_size_limit_loses_no_measurement() {
    let work = tempfile::tempdir().unwrap();
    let bin = assert_cmd::cargo::cargo_bin("osprim");
    let out = std::process::Command::new("bash")
        .arg("-c")
        .arg(format!("ulimit -f 8; exec '{}' run --quick syscall id --output r.json", bin.display()))
        .current_dir(work.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "a result that cannot be saved is an error");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("syscall.null") && stdout.contains("id.comm"), "every row is still shown: {stdout}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.lines().last().unwrap_or("").contains("cannot save results to"), "{stderr}");
    assert!(!stderr.contains("panicked"));
    let mut left = tmp_entries(work.path());
    left.sort();
    assert_eq!(left, ["r.json", "r.json.journal"], "no temporary file left; the journal keeps what it could");
}

#[test]
fn empty_patterns_name_nothing() {
    for p in ["", "."] {
        let out = osprim().args(["run", "--no-save", p]).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "'{p}'");
        assert!(one_error_line(&out.stderr).contains("no benchmark matches"));
    }
}

#[test]
fn result_files_of_schemas_1_and_2_still_read() {
    for (file, schema) in [("schema1.json", 1), ("schema2.json", 2)] {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(file);
        let run = model::read_result_file(&path).unwrap_or_else(|e| panic!("{file}: {e}"));
        assert_eq!(run.schema, 4, "{file} is read as the current schema");
        let space = run.results.iter().find(|r| r.id == "space.eventfd").unwrap();
        assert_eq!(space.unit, model::Unit::Bytes, "{file}: params.unit = bytes became the row's unit");
        assert!(!space.params.contains_key("unit"), "{file}");
        assert!(space.summary.as_ref().is_some_and(|s| s.median > 0.0 && s.median < 10_000.0), "{file}");
        let null = run.results.iter().find(|r| r.id == "syscall.null").unwrap();
        assert_eq!(null.unit, model::Unit::Ns);
        assert!(!null.samples.is_empty());
        if schema == 1 {
            assert!(null.flags.is_empty() && null.notes.iter().any(|n| n.contains("drift")), "{:?}", null.notes);
        }
        let out = osprim().arg("seeds").arg(&path).output().unwrap();
        assert!(out.status.success(), "{file}: {}", String::from_utf8_lossy(&out.stderr));
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("↳ syscall.null"), "{file}");
        // A row in bytes is shown as a size.
        let out = osprim().arg("show").arg(&path).output().unwrap();
        assert!(out.status.success(), "{file}: {}", String::from_utf8_lossy(&out.stderr));
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.lines().any(|l| l.starts_with("space.eventfd") && l.contains(" B ")), "{file}: {text}");
    }
}

fn fixture() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/default-run.json")
}

#[test]
fn show_renders_a_saved_file_in_every_format() {
    for format in ["table", "json", "csv", "markdown", "latex"] {
        let out = osprim().args(["show", "--format", format]).arg(fixture()).output().unwrap();
        assert!(out.status.success(), "{format}: {}", String::from_utf8_lossy(&out.stderr));
        let text = String::from_utf8(out.stdout).unwrap();
        assert!(text.contains("syscall.null") || text.contains("syscall"), "{format}: {text}");
    }
    let out = osprim().args(["show", "--format", "json"]).arg(fixture()).output().unwrap();
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["schema"], 4);
}

#[test]
fn papers_reads_the_newest_saved_result_and_measures_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let out = osprim().current_dir(dir.path()).arg("papers").output().unwrap();
    assert_eq!(out.status.code(), Some(2), "no saved result is a usage error");
    assert!(one_error_line(&out.stderr).contains("no saved result in osprim-results/"));
    let results = dir.path().join("osprim-results");
    std::fs::create_dir(&results).unwrap();
    std::fs::write(results.join("old.json"), b"{}").unwrap();
    std::thread::sleep(std::time::Duration::from_millis(20));
    std::fs::copy(fixture(), results.join("new.json")).unwrap();
    let out = osprim().current_dir(dir.path()).arg("papers").output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("new.json"));
    assert!(String::from_utf8_lossy(&out.stdout).contains("L4Ka::Pistachio"));
    let names: Vec<_> = std::fs::read_dir(&results).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(names.len(), 2, "papers saved nothing: {names:?}");
}

#[test]
fn completions_and_man_pages_come_from_the_cli_definition() {
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let out = osprim().args(["completions", shell]).output().unwrap();
        assert!(out.status.success(), "{shell}");
        let text = String::from_utf8(out.stdout).unwrap();
        assert!(text.contains("papers") && text.contains("--thorough"), "{shell}");
    }
    let out = osprim().arg("man").output().unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains(".TH osprim 1"));
    let dir = tempfile::tempdir().unwrap();
    let out = osprim().args(["man", "--dir"]).arg(dir.path()).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    for page in ["osprim.1", "osprim-run.1", "osprim-papers.1", "osprim-show.1"] {
        let text = std::fs::read_to_string(dir.path().join(page)).unwrap();
        assert!(text.contains(".TH"), "{page}");
    }
    // A page name that is not a regular file is left as it is.
    std::fs::remove_file(dir.path().join("osprim-run.1")).unwrap();
    std::fs::create_dir(dir.path().join("osprim-run.1")).unwrap();
    let out = osprim().args(["man", "--dir"]).arg(dir.path()).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(dir.path().join("osprim-run.1").is_dir());
}

#[test]
fn a_run_streams_its_plan_and_results_on_stderr_unless_quiet() {
    let out = osprim().args(["run", "--quick", "--budget", "0.05", "--no-save", "syscall"]).output().unwrap();
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = err.lines().collect();
    // syscall.io_uring_nop is a result per batch size, or one skipped where io_uring is absent.
    let results = 8 + if sys::uring::unavailable().is_none() { 4 } else { 1 };
    assert!(lines[0].starts_with(&format!("plan: {results} results from 9 benchmarks")), "{err}");
    // A progress line, stamp and row together, keeps to the 100 columns of a non-terminal.
    assert!(lines.iter().all(|l| l.chars().count() <= 100), "{err}");
    for id in [
        "syscall.null",
        "syscall.enosys",
        "syscall.reject",
        "syscall.getpid",
        "syscall.ioctl",
        "syscall.getfd",
        "syscall.io_uring_nop",
        "syscall.futex_wait",
    ] {
        assert!(lines.iter().any(|l| l.contains("results") && l.contains(id)), "{id} streamed: {err}");
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    // The verdict line, then (when some rows are untrustworthy) its cause and next step.
    // After the run, the fit over io_uring's batch sizes is one derived result more.
    let derived = if sys::uring::unavailable().is_none() { " (+1 derived)" } else { "" };
    assert!(stdout.lines().any(|l| l.starts_with(&format!("osprim: {results} results{derived} in "))), "{stdout}");
    let out =
        osprim().args(["run", "--quick", "--budget", "0.05", "--no-save", "--quiet", "syscall.null"]).output().unwrap();
    assert!(out.status.success());
    assert!(out.stderr.is_empty(), "{}", String::from_utf8_lossy(&out.stderr));
}

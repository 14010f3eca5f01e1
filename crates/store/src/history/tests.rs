//! The same history tests on SQLite (in memory and in a file) and on a real PostgreSQL
//! server started from Debian's packages in a private directory (skipped, saying why, where
//! it cannot start).

use super::*;
use analysis::history::level_shift;
use model::fixtures::run_file;

/// Recording, re-recording, querying by pattern, and the schema version: on any backend.
fn check(h: &mut History) {
    assert_eq!(h.version().unwrap(), schema_version());
    let before = h.runs().unwrap();
    let mut a = run_file(false);
    a.started_utc = "2026-11-01T00:00:00Z".into();
    let mut b = run_file(false);
    b.started_utc = "2026-11-02T00:00:00Z".into();
    b.machine.hostname = "other".into();
    b.machine.kernel.release = "6.19.0".into();
    assert!(h.record(&a, Some(Path::new("a.json"))).unwrap());
    assert!(h.record(&b, None).unwrap());
    assert!(!h.record(&a, None).unwrap(), "a run is recorded once");
    assert_eq!(h.runs().unwrap(), before + 2);

    let all = h.points(&[]).unwrap();
    assert_eq!(all.len(), a.results.len() + b.results.len());
    let id = a.results.iter().find(|r| r.summary.is_some()).unwrap().id.clone();
    let one = h.points(std::slice::from_ref(&id)).unwrap();
    assert!(one.iter().all(|p| p.id == id));
    // Oldest first, across machines, with the figures as recorded.
    let hosts: Vec<&str> = one.iter().map(|p| p.host.as_str()).collect();
    assert_eq!(hosts.first(), Some(&"fixture"));
    assert_eq!(hosts.last(), Some(&"other"));
    let row = a.results.iter().find(|r| r.id == id).unwrap();
    let s = row.summary.as_ref().unwrap();
    assert_eq!(one[0].median, Some(s.median));
    assert_eq!(one[0].ci95, Some(s.median_ci95));
    assert_eq!(one[0].n, Some(s.n as i64));
    assert_eq!(one.last().unwrap().kernel, "6.19.0");
    // A skipped row has no figures, and says so.
    if let Some(skipped) = all.iter().find(|p| p.status == "skipped") {
        assert_eq!(skipped.median, None);
    }
    // Family patterns and globs select as `osprim run` does.
    let family = id.split('.').next().unwrap().to_string();
    assert!(h.points(&[family]).unwrap().iter().any(|p| p.id == id));
    assert!(h.points(&["nosuchbenchmark".into()]).unwrap().is_empty());

    // The earlier measurements of each result on the same host and build by the same method:
    // a's, not b's (run later, but on another host); none before the first run.
    let mut c = run_file(false);
    c.started_utc = "2026-11-03T00:00:00Z".into();
    let earlier = h.earlier(&c).unwrap();
    assert_eq!(earlier.len(), c.results.len());
    let measured = c.results.iter().filter(|r| r.summary.is_some()).count();
    assert!(measured > 0);
    for (r, e) in c.results.iter().zip(&earlier) {
        if r.summary.is_some() {
            assert_eq!(e.len(), 1, "{}: a's only", r.id);
            let p = &e[0];
            assert_eq!((p.host.as_str(), p.started_utc.as_str()), ("fixture", "2026-11-01T00:00:00Z"));
            assert_eq!((p.method.as_str(), p.run_key.as_str()), ("adaptive", run_key(&a).as_str()));
            assert_eq!(p.file.as_deref(), Some("a.json"));
            assert_eq!((p.id.as_str(), level_shift(e, r)), (r.id.as_str(), None), "one earlier run is too few");
        } else {
            assert!(e.is_empty(), "{}: nothing to compare", r.id);
        }
    }
    // A seed-method run is never judged against the adaptive ones.
    let mut seed = c.clone();
    seed.results.iter_mut().for_each(|r| r.method = model::Method::Seed);
    assert!(h.earlier(&seed).unwrap().iter().all(Vec::is_empty));
    let mut z = run_file(false);
    z.started_utc = "2026-10-01T00:00:00Z".into();
    assert!(h.earlier(&z).unwrap().iter().all(Vec::is_empty), "nothing before the first run");

    cold_counts_and_stability(h);
}

/// A cold row's cold/hot ratio, a row's counts and a stability run come back as recorded.
fn cold_counts_and_stability(h: &mut History) {
    use model::counters::{CounterSummary, Counters};
    use model::stability::{Invariant, Outcome, StabilityRun, StabilityTest, Tally};
    let mut d = run_file(false);
    d.started_utc = "2026-11-04T00:00:00Z".into();
    let at = d.results.iter().position(|r| r.summary.is_some()).unwrap();
    model::fixtures::make_cold(&mut d.results[at], 7.5, [6.0, 9.0], 100.0);
    d.results[at].counters = Some(Counters {
        events: vec![CounterSummary {
            event: "instructions".into(),
            per_op: 1234.5,
            ci95: [1200.0, 1300.0],
            samples: 9,
        }],
        missing: Vec::new(),
        running_share_min: 1.0,
    });
    let clean = |test, clean_s: f64| StabilityRun {
        test,
        seed: u64::MAX,
        mode: "mprotect".into(),
        settings: vec!["timer_hz=1000".into()],
        requested_s: 60.0,
        ran_s: 60.0,
        clean_s,
        outcome: Outcome::Clean,
        operations: vec![Tally { kind: "fcall".into(), count: 10 }],
        results: Vec::new(),
        invariants: vec![Invariant { name: "every call reaches its domain".into(), checked: 10, violated: 0 }],
        trend: Vec::new(),
        notes: Vec::new(),
        short: false,
    };
    d.stability = vec![clean(StabilityTest::Stress, 60.0), clean(StabilityTest::ErrorTest, 30.0)];
    assert!(h.record(&d, None).unwrap());
    let id = d.results[at].id.clone();
    let back: Vec<Point> =
        h.points(std::slice::from_ref(&id)).unwrap().into_iter().filter(|p| p.run_key == run_key(&d)).collect();
    let cold = back.iter().find(|p| p.cold_hot.is_some()).expect("the cold row's ratio");
    assert_eq!(cold.cold_hot, Some(model::Estimate { point: 7.5, ci95: [6.0, 9.0] }));
    assert_eq!(cold.counts, vec![("instructions".to_string(), 1234.5)]);
    let stability = h.stability().unwrap();
    let mine: Vec<_> = stability.iter().filter(|s| s.started_utc == d.started_utc).collect();
    assert_eq!(mine.len(), 2);
    assert_eq!(mine[0].run, d.stability[0], "the whole run, seed above i64::MAX included");
    let as_points = h.points(&["stability".into()]).unwrap();
    let stress = as_points.iter().find(|p| p.run_key == run_key(&d) && p.id == "stability.stress").unwrap();
    assert_eq!(
        (stress.median, stress.status.as_str(), stress.params.as_str()),
        (Some(60e9), "clean", r#"{"mode":"mprotect"}"#)
    );
    let longest = analysis::history::longest_clean(&stability, StabilityTest::ErrorTest, "fixture").unwrap();
    assert_eq!(longest.run.clean_s, 30.0);
}

/// An earlier run at `hour` with median `m` and a ±`half` interval, by `method`.
fn earlier_point(hour: usize, m: f64, half: f64, method: &str) -> Point {
    Point {
        id: "syscall.getpid".into(),
        params: "{}".into(),
        unit: "ns".into(),
        status: "ok".into(),
        started_utc: format!("2026-11-25T{hour:02}:00:00Z"),
        host: "fixture".into(),
        kernel: String::new(),
        commit: String::new(),
        median: Some(m),
        ci95: Some([m - half, m + half]),
        mean: None,
        n: None,
        cpu_model: String::new(),
        method: method.into(),
        run_key: format!("run {hour}"),
        file: None,
        cold_hot: None,
        counts: Vec::new(),
    }
}

/// The fixture's getpid row with median `m` and a ±`half` interval.
fn row_at(m: f64, half: f64) -> Row {
    let run = run_file(false);
    let mut row = run.results.into_iter().find(|r| r.id == "syscall.getpid").unwrap();
    let s = row.summary.as_mut().unwrap();
    s.median = m;
    s.median_ci95 = [m - half, m + half];
    row
}

/// ±1 % around `m`, a different wobble for each `i`.
fn wobbly(i: usize, m: f64) -> f64 {
    m * (1.0 + [0.0, 0.6, -0.5, 0.9, -0.8, 0.3, -0.2, 0.7][i % 8] / 100.0)
}

#[test]
fn a_level_shift_is_an_interval_apart_from_every_run_of_the_current_level() {
    let level = |n: usize, m: f64| (0..n).map(|i| earlier_point(i, wobbly(i, m), 1.0, "adaptive")).collect::<Vec<_>>();
    let six = level(6, 100.0);
    assert_eq!(level_shift(&six, &row_at(100.5, 1.0)), None, "within the level");
    assert_eq!(level_shift(&six, &row_at(102.5, 1.0)), None, "touching the highest interval");
    let note = level_shift(&six, &row_at(130.0, 1.0)).expect("above every interval");
    assert!(
        note.starts_with("level shift: this run's interval [129.0 ns, 131.0 ns] lies above every interval of the 6"),
        "{note}"
    );
    assert!(note.contains("2026-11-25T00:00:00Z to 2026-11-25T05:00:00Z"), "{note}");
    assert!(level_shift(&six, &row_at(80.0, 1.0)).unwrap().contains("lies below"));
    // Too few runs to judge: one run, or four.
    assert_eq!(level_shift(&six[5..], &row_at(130.0, 1.0)), None);
    assert_eq!(level_shift(&six[..4], &row_at(130.0, 1.0)), None);
    // Never a zero-width interval: not the row's, not the earlier runs'.
    assert_eq!(level_shift(&six, &row_at(130.0, 0.0)), None);
    let flat: Vec<Point> = (0..8).map(|i| earlier_point(i, wobbly(i, 100.0), 0.0, "adaptive")).collect();
    assert_eq!(level_shift(&flat, &row_at(130.0, 1.0)), None);
    // Never the seed method: not as the row, not as the earlier runs.
    let mut seed_row = row_at(130.0, 1.0);
    seed_row.method = model::Method::Seed;
    assert_eq!(level_shift(&six, &seed_row), None);
    let seeds: Vec<Point> = (0..8).map(|i| earlier_point(i, wobbly(i, 100.0), 1.0, "seed")).collect();
    assert_eq!(level_shift(&seeds, &row_at(130.0, 1.0)), None);
    // Nor runs recorded before the method was (schema 2).
    let unknown: Vec<Point> = (0..8).map(|i| earlier_point(i, wobbly(i, 100.0), 1.0, "")).collect();
    assert_eq!(level_shift(&unknown, &row_at(130.0, 1.0)), None);
    // The current level is the one after the last change point: twelve runs at 200, then
    // twelve at 100; a run at 130 is a shift from 100 (though below the older level).
    let mut two: Vec<Point> = (0..12).map(|i| earlier_point(i, wobbly(i, 200.0), 1.0, "adaptive")).collect();
    two.extend((12..24).map(|i| earlier_point(i, wobbly(i, 100.0), 1.0, "adaptive")));
    let note = level_shift(&two, &row_at(130.0, 1.0)).expect("a shift from the current level");
    assert!(
        note.contains("every interval of the 12 earlier runs") && note.contains("2026-11-25T12:00:00Z to"),
        "{note}"
    );
    assert_eq!(level_shift(&two, &row_at(100.0, 1.0)), None);
    let mut unmeasured = row_at(130.0, 1.0);
    unmeasured.summary = None;
    assert_eq!(level_shift(&six, &unmeasured), None);
}

#[test]
fn sqlite_in_memory() {
    let mut h = History::with_backend(
        Box::new(sqlite::Sqlite::in_memory().unwrap()),
        Location::Sqlite(":memory:".into()),
        MIGRATIONS.len(),
    )
    .unwrap();
    check(&mut h);
}

#[test]
fn sqlite_file_upgrades_from_schema_1_and_keeps_its_runs() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("history.db");
    let loc = Location::Sqlite(path.clone());
    {
        let mut old = History::with_backend(Box::new(sqlite::Sqlite::open(&path).unwrap()), loc.clone(), 1).unwrap();
        assert_eq!(old.version().unwrap(), 1);
        old.db
            .execute(
                "INSERT INTO runs (run_key, started_utc, partial, host, arch, cpu_model, kernel, hypervisor, \
                 osprim_version, osprim_commit) VALUES ('old', '2026-01-01T00:00:00Z', 0, 'h', 'x86_64', 'c', 'k', \
                 'KVM', '0.1.0', 'abc')",
                &[],
            )
            .unwrap();
    }
    let mut h = History::open(&loc).unwrap();
    assert_eq!(h.version().unwrap(), schema_version());
    assert_eq!(h.runs().unwrap(), 1, "the run recorded under schema 1 is still there");
    check(&mut h);
    drop(h);
    // Opened again: nothing to migrate, nothing lost.
    let mut again = History::open(&loc).unwrap();
    assert_eq!(again.runs().unwrap(), 4, "the old run and check's three");
}

#[test]
fn a_newer_schema_or_a_file_that_is_not_a_database_is_refused_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("history.db");
    let loc = Location::Sqlite(path.clone());
    let mut h = History::open(&loc).unwrap();
    h.db.execute("INSERT INTO osprim_schema (version) VALUES (?)", &[Value::Int(Some(99))]).unwrap();
    drop(h);
    assert!(matches!(History::open(&loc), Err(HistoryError::TooNew { found: 99, .. })));

    let notes = dir.path().join("notes.txt");
    std::fs::write(&notes, "someone's notes, not a database\n".repeat(200)).unwrap();
    let before = std::fs::read(&notes).unwrap();
    assert!(matches!(History::open(&Location::Sqlite(notes.clone())), Err(HistoryError::Open { .. })));
    assert_eq!(std::fs::read(&notes).unwrap(), before);
    assert!(matches!(History::open(&Location::Sqlite("/dev/null".into())), Err(HistoryError::Open { .. })));
}

#[test]
fn locations_and_placeholders() {
    assert_eq!(Location::parse("postgres://u@h/db"), Location::Postgres("postgres://u@h/db".into()));
    assert_eq!(Location::parse("postgresql://u@h/db"), Location::Postgres("postgresql://u@h/db".into()));
    assert_eq!(Location::parse("runs/h.db"), Location::Sqlite("runs/h.db".into()));
    assert_eq!(Location::parse("postgres://u:secret@h/db").describe(), "postgres://u:…@h/db");
}

#[cfg(feature = "postgres")]
#[test]
fn placeholders_are_numbered_for_postgres() {
    assert_eq!(postgres::numbered("INSERT INTO t VALUES (?, ?, ?)"), "INSERT INTO t VALUES ($1, $2, $3)");
}

/// A PostgreSQL server of its own: `initdb` into a temporary directory, started on a free
/// loopback port with trust authentication, stopped (and the directory removed) on drop.
#[cfg(feature = "postgres")]
pub(crate) struct Server {
    dir: tempfile::TempDir,
    bin: PathBuf,
    as_user: Option<&'static str>,
    /// `postgres://…` of its `postgres` database.
    pub url: String,
}

#[cfg(feature = "postgres")]
impl Server {
    /// Starts one, or says why it cannot.
    pub(crate) fn start() -> Result<Server, String> {
        let bin = std::fs::read_dir("/usr/lib/postgresql")
            .map_err(|_| "PostgreSQL's server is not installed (Debian package postgresql)".to_string())?
            .filter_map(|e| e.ok().map(|e| e.path().join("bin")))
            .find(|b| b.join("initdb").exists())
            .ok_or("no initdb under /usr/lib/postgresql (Debian package postgresql)")?;
        // The server refuses to run as root; Debian's package makes a `postgres` user.
        let as_user = (running_as_root()).then_some("postgres");
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        let data = dir.path().join("data");
        if let Some(u) = as_user {
            let ok = std::process::Command::new("chown")
                .args([&format!("{u}:{u}"), &dir.path().display().to_string()])
                .status()
                .map_err(|e| e.to_string())?
                .success();
            if !ok {
                return Err(format!("cannot hand the data directory to user {u} (is there one?)"));
            }
        }
        let port = free_port()?;
        let run = |tool: &str, args: &[String]| -> Result<(), String> {
            let mut c = match as_user {
                Some(u) => {
                    let mut c = std::process::Command::new("runuser");
                    c.args(["-u", u, "--"]).arg(bin.join(tool));
                    c
                }
                None => std::process::Command::new(bin.join(tool)),
            };
            let out = c.args(args).output().map_err(|e| format!("{tool}: {e}"))?;
            if out.status.success() {
                Ok(())
            } else {
                Err(format!("{tool} failed: {}", String::from_utf8_lossy(&out.stderr).lines().last().unwrap_or("")))
            }
        };
        let d = data.display().to_string();
        run("initdb", &["-D".into(), d.clone(), "-A".into(), "trust".into(), "-U".into(), "postgres".into()])?;
        let opts = format!("-p {port} -c listen_addresses=127.0.0.1 -k {}", dir.path().display());
        let log = dir.path().join("log").display().to_string();
        run(
            "pg_ctl",
            &[
                "-D".into(),
                d,
                "-o".into(),
                opts,
                "-l".into(),
                log,
                "-w".into(),
                "-t".into(),
                "30".into(),
                "start".into(),
            ],
        )?;
        let url = format!("postgres://postgres@127.0.0.1:{port}/postgres");
        Ok(Server { dir, bin, as_user, url })
    }
}

#[cfg(feature = "postgres")]
fn running_as_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| s.lines().find(|l| l.starts_with("Uid:")).map(|l| l.split_whitespace().nth(2) == Some("0")))
        .unwrap_or(false)
}

#[cfg(feature = "postgres")]
fn free_port() -> Result<u16, String> {
    let l = std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    l.local_addr().map(|a| a.port()).map_err(|e| e.to_string())
}

#[cfg(feature = "postgres")]
impl Drop for Server {
    fn drop(&mut self) {
        let data = self.dir.path().join("data").display().to_string();
        let mut c = match self.as_user {
            Some(u) => {
                let mut c = std::process::Command::new("runuser");
                c.args(["-u", u, "--"]).arg(self.bin.join("pg_ctl"));
                c
            }
            None => std::process::Command::new(self.bin.join("pg_ctl")),
        };
        let _ = c.args(["-D", &data, "-m", "immediate", "-w", "-t", "30", "stop"]).output();
    }
}

#[cfg(feature = "postgres")]
#[test]
fn postgres_when_a_server_can_start() {
    let server = match Server::start() {
        Ok(s) => s,
        Err(why) => {
            eprintln!("skipped: cannot start PostgreSQL here: {why}");
            return;
        }
    };
    let loc = Location::parse(&server.url);
    let mut h = History::open(&loc).expect("connect to the private server");
    check(&mut h);
    drop(h);
    // A second connection finds the schema in place and the runs kept.
    let mut again = History::open(&loc).unwrap();
    assert_eq!(again.version().unwrap(), schema_version());
    assert_eq!(again.runs().unwrap(), 3, "check's three");
}

#[test]
fn passwords_are_redacted_in_every_form() {
    assert_eq!(redact("postgres://u:secret@h:5432/db"), "postgres://u:…@h:5432/db");
    // A password holding '@', '/' and ':' is cut at the last '@' before the query, not the first.
    assert_eq!(redact("postgresql://u:p@ss/w:rd@h/db?x=1"), "postgresql://u:…@h/db?x=1");
    assert_eq!(redact("postgres://u@h/db"), "postgres://u@h/db");
    assert_eq!(redact("postgres://u@h/db?password=hunter2&x=1"), "postgres://u@h/db?password=…&x=1");
    assert_eq!(redact("--db=postgres://u:s@h/db"), "--db=postgres://u:…@h/db");
    assert_eq!(redact("host=/run/pg user=u PASSWORD='a b c' dbname=d"), "host=/run/pg user=u PASSWORD=… dbname=d");
    assert_eq!(redact("sslpassword=x"), "sslpassword=…");
    assert_eq!(redact("osprim-results/history.db"), "osprim-results/history.db");
    let args = redact_args(&["osprim", "run", "--db", "postgres://u:s3cret@h/db", "-o", "x.json"]);
    assert!(!args.join(" ").contains("s3cret"), "{args:?}");
    assert_eq!(Location::parse("postgres://u:a@b@h/db?password=c").describe(), "postgres://u:…@h/db?password=…");
}

#[test]
fn two_runs_in_the_same_second_with_equal_results_are_both_recorded() {
    let mut h = in_memory();
    let mut a = run_file(false);
    a.run_id = Some("a".repeat(32));
    let mut b = a.clone();
    b.run_id = Some("b".repeat(32));
    assert!(h.record(&a, None).unwrap());
    assert!(h.record(&b, None).unwrap(), "the second run is dropped");
    // The same run recorded again adds nothing, and says so.
    assert!(!h.record(&b, None).unwrap());
    // Read back from its file with a flag added after it was recorded (a level shift), it is
    // still the run recorded.
    let mut flagged = b.clone();
    let row = flagged.results.iter_mut().find(|r| r.summary.is_some()).unwrap();
    row.add_flag(model::Flag::LevelShift, "lies above every interval".into());
    assert!(!h.record(&flagged, None).unwrap(), "one run, recorded once");
    assert_eq!(h.runs().unwrap(), 2);
    // A file written before runs drew an id keeps its key.
    let old = run_file(false);
    assert!(!run_key(&old).ends_with(&"a".repeat(32)));
    assert_eq!(run_key(&old).split(' ').count(), 4);
}

#[test]
fn a_fleets_runs_on_one_machine_are_recorded_and_judged_under_their_own_host() {
    let mut h = in_memory();
    // Two inventory hosts on one kernel host name (containers, local connections).
    let on = |host: &str, id: char, day: u32| {
        let mut r = run_file(false);
        r.host = Some(host.into());
        r.run_id = Some(id.to_string().repeat(32));
        r.started_utc = format!("2026-11-{day:02}T00:00:00Z");
        r
    };
    assert!(h.record(&on("host-a", 'a', 1), None).unwrap());
    assert!(h.record(&on("host-b", 'b', 2), None).unwrap());
    let hosts: std::collections::BTreeSet<String> = h.points(&[]).unwrap().into_iter().map(|p| p.host).collect();
    assert_eq!(hosts.into_iter().collect::<Vec<_>>(), ["host-a", "host-b"]);
    // A later run of host-a is judged against host-a's runs only.
    let later = on("host-a", 'c', 3);
    let earlier = h.earlier(&later).unwrap();
    assert!(earlier.iter().flatten().all(|p| p.host == "host-a"));
    assert!(earlier.iter().any(|e| !e.is_empty()));
}

#[test]
fn import_takes_a_file_or_a_directory_and_names_the_host_of_files_that_name_none() {
    let dir = tempfile::tempdir().unwrap();
    let mut h = in_memory();
    let mut named = run_file(false);
    named.host = Some("host-b".into());
    named.run_id = Some("b".repeat(32));
    crate::write_result_file(&dir.path().join("named.json"), &named).unwrap();
    let mut unnamed = run_file(false);
    unnamed.run_id = Some("u".repeat(32));
    let one = dir.path().join("one");
    std::fs::create_dir(&one).unwrap();
    crate::write_result_file(&one.join("unnamed.json"), &unnamed).unwrap();
    // One file, under the host given; then the directory, whose file names its own host.
    assert_eq!(import(&mut h, &one.join("unnamed.json"), Some("host-a")).unwrap(), (1, 0, vec![]));
    assert_eq!(import(&mut h, dir.path(), Some("ignored")).unwrap(), (1, 0, vec![]));
    let hosts: std::collections::BTreeSet<String> = h.points(&[]).unwrap().into_iter().map(|p| p.host).collect();
    assert_eq!(hosts.into_iter().collect::<Vec<_>>(), ["host-a", "host-b"]);
    let missing = import(&mut h, &dir.path().join("nothing"), None).unwrap_err().to_string();
    assert!(missing.starts_with("cannot import "), "{missing}");
}

/// A new history in memory, at the current schema.
fn in_memory() -> History {
    History::with_backend(
        Box::new(sqlite::Sqlite::in_memory().unwrap()),
        Location::Sqlite(PathBuf::new()),
        MIGRATIONS.len(),
    )
    .unwrap()
}

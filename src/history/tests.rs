//! The same history tests on SQLite (in memory and in a file) and on a real PostgreSQL
//! server started from Debian's packages in a private directory (skipped, saying why, where
//! it cannot start).

use super::*;
use crate::report::tests::run_file;

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

    // The previous measurement of each result on the same host and build: a's, not b's (run
    // later, but on another host); none before the first run.
    let mut c = run_file(false);
    c.started_utc = "2026-11-03T00:00:00Z".into();
    let previous = h.previous(&c).unwrap();
    assert_eq!(previous.len(), c.results.len());
    let measured = c.results.iter().zip(&previous).filter(|(r, _)| r.summary.is_some()).count();
    assert!(measured > 0);
    for (r, p) in c.results.iter().zip(&previous) {
        if r.summary.is_some() {
            let p = p.as_ref().unwrap_or_else(|| panic!("{}: no previous", r.id));
            assert_eq!((p.host.as_str(), p.started_utc.as_str()), ("fixture", "2026-11-01T00:00:00Z"));
            assert_eq!((p.id.as_str(), level_shift(p, r)), (r.id.as_str(), None), "the same figures: no shift");
        } else {
            assert!(p.is_none(), "{}: nothing to compare", r.id);
        }
    }
    let mut z = run_file(false);
    z.started_utc = "2026-10-01T00:00:00Z".into();
    assert!(h.previous(&z).unwrap().iter().all(Option::is_none), "nothing before the first run");
}

#[test]
fn a_level_shift_is_an_interval_apart_from_the_previous_one() {
    let run = run_file(false);
    let row = run.results.iter().find(|r| r.summary.is_some()).unwrap().clone();
    let s = row.summary.clone().unwrap();
    let [lo, hi] = s.median_ci95;
    let point = |ci: [f64; 2]| Point {
        id: row.id.clone(),
        params: String::new(),
        unit: "ns".into(),
        status: "ok".into(),
        started_utc: "2026-11-25T12:01:25Z".into(),
        host: "fixture".into(),
        kernel: String::new(),
        commit: String::new(),
        median: Some((ci[0] + ci[1]) / 2.0),
        ci95: Some(ci),
        mean: None,
        n: None,
        cpu_model: String::new(),
    };
    assert_eq!(level_shift(&point([hi, hi * 1.1]), &row), None, "touching intervals overlap");
    assert_eq!(level_shift(&point([lo * 0.5, lo]), &row), None);
    let note = level_shift(&point([hi * 1.2, hi * 1.3]), &row).expect("disjoint above");
    assert!(note.starts_with("level shift: the previous run on this machine (2026-11-25T12:01:25Z) gave"), "{note}");
    assert!(level_shift(&point([lo * 0.5, lo * 0.9]), &row).is_some(), "disjoint below");
    let mut unmeasured = row.clone();
    unmeasured.summary = None;
    assert_eq!(level_shift(&point([hi * 2.0, hi * 3.0]), &unmeasured), None);
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
    assert_eq!(again.runs().unwrap(), 3);
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
    assert_eq!(postgres::numbered("INSERT INTO t VALUES (?, ?, ?)"), "INSERT INTO t VALUES ($1, $2, $3)");
}

/// A PostgreSQL server of its own: `initdb` into a temporary directory, started on a free
/// loopback port with trust authentication, stopped (and the directory removed) on drop.
pub(crate) struct Server {
    dir: tempfile::TempDir,
    bin: PathBuf,
    as_user: Option<&'static str>,
    /// `postgres://…` of its `postgres` database.
    pub url: String,
}

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

fn running_as_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| s.lines().find(|l| l.starts_with("Uid:")).map(|l| l.split_whitespace().nth(2) == Some("0")))
        .unwrap_or(false)
}

fn free_port() -> Result<u16, String> {
    let l = std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    l.local_addr().map(|a| a.port()).map_err(|e| e.to_string())
}

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
    assert_eq!(again.runs().unwrap(), 2);
}

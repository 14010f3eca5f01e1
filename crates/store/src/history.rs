//! History: every saved run recorded in a database, so that a result can be followed over
//! time and across machines. SQLite (bundled, a file: `osprim-results/history.db` by
//! default) for one machine; PostgreSQL (`postgres://…`) for a fleet or a kernel CI farm
//! whose nodes all write to one server. Both hold the same schema, created and upgraded by
//! the same numbered migrations ([`MIGRATIONS`]); the SQL is written once, in the subset both
//! speak, and each backend ([`sqlite`], [`postgres`]) only binds values and reads rows.
//!
//! A run is keyed by its start time, host and osprim commit, so recording a file twice (or
//! importing a directory again) adds nothing.
//!
//! Read back, the history is series ([`changes`]: where each series changes level, by
//! E-divisive means) and, for a new run, the earlier runs it is judged against
//! ([`History::earlier`], [`level_shift`]).

#[cfg(feature = "postgres")]
pub mod ab;
pub mod postgres;
pub mod sqlite;

use analysis::history::{Point, StabilityPoint, method_name};
use model::stability::{Outcome, StabilityRun};
use model::{Row, RunFile};
use std::path::{Path, PathBuf};

/// A value bound to, or read from, a statement. Every variant is nullable, so that a NULL
/// still carries its SQL type (PostgreSQL checks the type of each parameter).
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// `BIGINT`.
    Int(Option<i64>),
    /// `DOUBLE PRECISION`.
    Real(Option<f64>),
    /// `TEXT`.
    Text(Option<String>),
}

/// What a backend can do: run statements with `?` placeholders and read rows whose columns
/// have the kinds given.
pub trait Backend {
    /// Statements without parameters, separated by `;`.
    fn batch(&mut self, sql: &str) -> Result<(), HistoryError>;
    /// One statement; the number of rows it changed.
    fn execute(&mut self, sql: &str, params: &[Value]) -> Result<u64, HistoryError>;
    /// One query; each row's columns read as the kinds of `columns` (values ignored).
    fn query(&mut self, sql: &str, params: &[Value], columns: &[Value]) -> Result<Vec<Vec<Value>>, HistoryError>;
    /// Begins a transaction that no other writer can interleave with (migrations: two osprim
    /// processes opening a new database at once must not both create it).
    fn begin_exclusive(&mut self) -> Result<(), HistoryError>;
}

/// What went wrong with the history database.
#[derive(Debug, thiserror::Error)]
pub enum HistoryError {
    /// The database could not be opened or reached.
    #[error("cannot open the history database {what}: {detail}")]
    Open { what: String, detail: String },
    /// A statement failed.
    #[error("history database: {0}")]
    Sql(String),
    /// The result files to import could not be listed.
    #[error("cannot import {what}: {detail}")]
    Import { what: String, detail: String },
    /// The database was written by a newer osprim.
    #[error("the history database has schema version {found}; this osprim knows up to {known}: use a newer osprim")]
    TooNew { found: i64, known: i64 },
}

/// Where the history is kept: a SQLite file, or a PostgreSQL server.
#[derive(Clone, Debug, PartialEq)]
pub enum Location {
    /// A SQLite file.
    Sqlite(PathBuf),
    /// A PostgreSQL connection string (`postgres://…` or `postgresql://…`).
    Postgres(String),
}

impl Location {
    /// `postgres://…` / `postgresql://…`, or a file path.
    pub fn parse(s: &str) -> Location {
        if s.starts_with("postgres://") || s.starts_with("postgresql://") {
            Location::Postgres(s.to_string())
        } else {
            Location::Sqlite(PathBuf::from(s))
        }
    }

    /// The default: `history.db` in the results directory.
    pub fn default_in(results_dir: &Path) -> Location {
        Location::Sqlite(results_dir.join("history.db"))
    }

    /// As said to people (a password in a URL is not repeated).
    pub fn describe(&self) -> String {
        match self {
            Location::Sqlite(p) => p.display().to_string(),
            Location::Postgres(url) => redact(url),
        }
    }
}

/// `text` with every password it may hold replaced by `…`: the one redaction of what osprim
/// records or prints of a command line or a connection string.
/// - `postgres://user:secret@host/db` (or `postgresql://`) → `postgres://user:…@host/db`; the
///   user part ends at the *last* `@` before the query (a password may hold `@`, `/` or `:`);
/// - a `password=…` parameter (a URL's query `?password=…`, or a key=value connection string
///   `host=h password=secret`, quoted or not; `sslpassword=` too), its value → `…`.
pub fn redact(text: &str) -> String {
    redact_passwords(&redact_userinfo(text))
}

/// Every `postgres://` / `postgresql://` URL in `text` with its password (if any) replaced.
fn redact_userinfo(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    loop {
        let found = ["postgres://", "postgresql://"].iter().filter_map(|s| rest.find(s).map(|i| (i, s.len()))).min();
        let Some((at, scheme_len)) = found else {
            out.push_str(rest);
            return out;
        };
        let (before, url) = rest.split_at(at + scheme_len);
        out.push_str(before);
        // The URL runs to the next white space; its user part to the last '@' before the query.
        let end = url.find(char::is_whitespace).unwrap_or(url.len());
        let (url, after) = url.split_at(end);
        let head_end = url.find('?').unwrap_or(url.len());
        match url[..head_end].rfind('@') {
            Some(last_at) if url[..last_at].contains(':') => {
                let user = &url[..url.find(':').unwrap_or(0)];
                out.push_str(user);
                out.push_str(":…");
                out.push_str(&url[last_at..]);
            }
            _ => out.push_str(url),
        }
        rest = after;
    }
}

/// Every `password=value` in `text` (any case) with its value replaced: up to `&`, white space
/// or the end, or between quotes when quoted.
fn redact_passwords(text: &str) -> String {
    const KEY: &str = "password=";
    let lower = text.to_ascii_lowercase();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while let Some(found) = lower[i..].find(KEY) {
        let value = i + found + KEY.len();
        out.push_str(&text[i..value]);
        let v = &text[value..];
        let len = match v.chars().next() {
            Some(q @ ('\'' | '"')) => v[1..].find(q).map_or(v.len(), |e| e + 2),
            _ => v.find(|c: char| c == '&' || c.is_whitespace()).unwrap_or(v.len()),
        };
        out.push('…');
        i = value + len;
    }
    out.push_str(&text[i..]);
    out
}

/// A command line as osprim records and prints it: every argument [`redact`]ed (`--db URL`,
/// `--db=URL`, a connection string anywhere).
pub fn redact_args<S: AsRef<str>>(args: &[S]) -> Vec<String> {
    args.iter().map(|a| redact(a.as_ref())).collect()
}

/// The schema, one migration per version (version = index + 1). Plain SQL both SQLite and
/// PostgreSQL accept. Never edit a migration that has shipped; add one.
pub const MIGRATIONS: &[&str] = &[
    // 1: runs and their results.
    "CREATE TABLE runs (
        run_key TEXT PRIMARY KEY,
        started_utc TEXT NOT NULL,
        finished_utc TEXT,
        partial BIGINT NOT NULL,
        host TEXT NOT NULL,
        arch TEXT NOT NULL,
        cpu_model TEXT NOT NULL,
        kernel TEXT NOT NULL,
        hypervisor TEXT NOT NULL,
        osprim_version TEXT NOT NULL,
        osprim_commit TEXT NOT NULL,
        file TEXT
    );
    CREATE TABLE results (
        run_key TEXT NOT NULL REFERENCES runs (run_key),
        position BIGINT NOT NULL,
        bench_id TEXT NOT NULL,
        params TEXT NOT NULL,
        unit TEXT NOT NULL,
        status TEXT NOT NULL,
        median DOUBLE PRECISION,
        ci_low DOUBLE PRECISION,
        ci_high DOUBLE PRECISION,
        mean DOUBLE PRECISION,
        n BIGINT,
        flags TEXT NOT NULL,
        PRIMARY KEY (run_key, position)
    );
    CREATE INDEX results_by_bench ON results (bench_id)",
    // 2: the whole machine description (JSON), for differences between runs.
    "ALTER TABLE runs ADD COLUMN machine TEXT",
    // 3: each result's sampling method (`adaptive`, `seed`): a series never mixes them. NULL
    // for results recorded before, whose method is unknown.
    "ALTER TABLE results ADD COLUMN method TEXT",
    // 4: a cold row's cold/hot ratio and its interval (`--cache cold`), and the hardware
    // counts per operation (`--counters`: a JSON object, event name → mean per operation).
    "ALTER TABLE results ADD COLUMN cold_hot DOUBLE PRECISION;
    ALTER TABLE results ADD COLUMN cold_hot_low DOUBLE PRECISION;
    ALTER TABLE results ADD COLUMN cold_hot_high DOUBLE PRECISION;
    ALTER TABLE results ADD COLUMN counts TEXT",
    // 5: stability runs (`osprim stress`, `osprim errortest`): how long each ran without a
    // failure, and the whole run (JSON) for its operations, invariants and trend.
    "CREATE TABLE stability (
        run_key TEXT NOT NULL REFERENCES runs (run_key),
        position BIGINT NOT NULL,
        test TEXT NOT NULL,
        seed TEXT NOT NULL,
        mode TEXT NOT NULL,
        outcome TEXT NOT NULL,
        ran_s DOUBLE PRECISION NOT NULL,
        clean_s DOUBLE PRECISION NOT NULL,
        operations BIGINT NOT NULL,
        detail TEXT NOT NULL,
        PRIMARY KEY (run_key, position)
    )",
    // 6: A/B results (`osprim ab`): the conditions and design, and per result its verdict,
    // ratio B/A, interval and pairs. Apart from `runs`: a B measured under a seccomp filter is
    // not a point of the machine's series.
    "CREATE TABLE ab_runs (
        run_key TEXT PRIMARY KEY,
        started_utc TEXT NOT NULL,
        finished_utc TEXT,
        partial BIGINT NOT NULL,
        host TEXT NOT NULL,
        cpu_model TEXT NOT NULL,
        kernel TEXT NOT NULL,
        osprim_commit TEXT NOT NULL,
        a TEXT NOT NULL,
        b TEXT NOT NULL,
        mode TEXT NOT NULL,
        seed TEXT NOT NULL,
        noise DOUBLE PRECISION NOT NULL,
        pairs BIGINT NOT NULL,
        stopped TEXT NOT NULL,
        file TEXT
    );
    CREATE TABLE ab_results (
        run_key TEXT NOT NULL REFERENCES ab_runs (run_key),
        position BIGINT NOT NULL,
        bench_id TEXT NOT NULL,
        params TEXT NOT NULL,
        unit TEXT NOT NULL,
        verdict TEXT NOT NULL,
        ratio DOUBLE PRECISION,
        ci_low DOUBLE PRECISION,
        ci_high DOUBLE PRECISION,
        pairs BIGINT NOT NULL,
        decided_after BIGINT,
        PRIMARY KEY (run_key, position)
    )",
];

/// The schema version this osprim writes.
pub fn schema_version() -> i64 {
    MIGRATIONS.len() as i64
}

/// A history database, open and at the current schema.
pub struct History {
    db: Box<dyn Backend>,
    /// Where it is.
    pub location: Location,
}

impl History {
    /// Opens (creating if need be) the history at `location` and brings its schema up to date.
    pub fn open(location: &Location) -> Result<History, HistoryError> {
        let db: Box<dyn Backend> = match location {
            Location::Sqlite(path) => Box::new(sqlite::Sqlite::open(path)?),
            #[cfg(feature = "postgres")]
            Location::Postgres(url) => Box::new(postgres::Postgres::connect(url)?),
            #[cfg(not(feature = "postgres"))]
            Location::Postgres(url) => {
                return Err(HistoryError::Open {
                    what: redact(url),
                    detail: "this osprim was built without PostgreSQL support (cargo feature `postgres`)".into(),
                });
            }
        };
        let mut h = History { db, location: location.clone() };
        h.migrate(MIGRATIONS.len())?;
        Ok(h)
    }

    /// An open backend, migrated to `version` (tests use an older version to check upgrades).
    pub fn with_backend(db: Box<dyn Backend>, location: Location, version: usize) -> Result<History, HistoryError> {
        let mut h = History { db, location };
        h.migrate(version)?;
        Ok(h)
    }

    /// The schema version of the database (0 when new).
    pub fn version(&mut self) -> Result<i64, HistoryError> {
        self.db.batch("CREATE TABLE IF NOT EXISTS osprim_schema (version BIGINT NOT NULL)")?;
        self.version_inside()
    }

    /// The version, read inside an open transaction.
    fn version_inside(&mut self) -> Result<i64, HistoryError> {
        let rows = self.db.query("SELECT MAX(version) FROM osprim_schema", &[], &[Value::Int(None)])?;
        Ok(match rows.first().and_then(|r| r.first()) {
            Some(Value::Int(Some(v))) => *v,
            _ => 0,
        })
    }

    /// Applies the migrations after the database's version, up to `target`, each in its own
    /// transaction with its version row.
    fn migrate(&mut self, target: usize) -> Result<(), HistoryError> {
        let have = self.version()?;
        if have > MIGRATIONS.len() as i64 {
            return Err(HistoryError::TooNew { found: have, known: MIGRATIONS.len() as i64 });
        }
        for (i, sql) in MIGRATIONS.iter().enumerate().take(target).skip(have as usize) {
            self.db.begin_exclusive()?;
            // Another process may have applied it while this one waited for the lock.
            let done = self.version_inside().and_then(|now| {
                if now > i as i64 {
                    return Ok(0);
                }
                self.db.batch(sql)?;
                self.db.execute("INSERT INTO osprim_schema (version) VALUES (?)", &[Value::Int(Some(i as i64 + 1))])
            });
            match done {
                Ok(_) => self.db.batch("COMMIT")?,
                Err(e) => {
                    let _ = self.db.batch("ROLLBACK");
                    return Err(e);
                }
            }
        }
        Ok(())
    }

    /// Records `run` (saved at `file`), in one transaction. `false` when it was there already.
    pub fn record(&mut self, run: &RunFile, file: Option<&Path>) -> Result<bool, HistoryError> {
        let key = run_key(run);
        let known = self.db.query("SELECT run_key FROM runs WHERE run_key = ?", &[text(&key)], &[Value::Text(None)])?;
        if !known.is_empty() {
            return Ok(false);
        }
        self.db.begin_exclusive()?;
        match self.insert(run, &key, file) {
            Ok(()) => {
                self.db.batch("COMMIT")?;
                Ok(true)
            }
            Err(e) => {
                let _ = self.db.batch("ROLLBACK");
                Err(e)
            }
        }
    }

    fn insert(&mut self, run: &RunFile, key: &str, file: Option<&Path>) -> Result<(), HistoryError> {
        let m = &run.machine;
        let machine = serde_json::to_string(m).unwrap_or_default();
        self.db.execute(
            "INSERT INTO runs (run_key, started_utc, finished_utc, partial, host, arch, cpu_model, kernel, \
             hypervisor, osprim_version, osprim_commit, file, machine) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            &[
                text(key),
                text(&run.started_utc),
                Value::Text(run.finished_utc.clone()),
                Value::Int(Some(i64::from(run.partial))),
                // The name the fleet knows it by (`--host`) when the run was given one.
                text(run.host_name()),
                text(&m.arch),
                text(&m.cpu.model_name),
                text(&m.kernel.release),
                text(&m.virtualization.hypervisor_vendor),
                text(&run.osprim.version),
                text(&run.osprim.commit),
                Value::Text(file.map(|f| f.display().to_string())),
                text(&machine),
            ],
        )?;
        for (i, r) in run.results.iter().enumerate() {
            self.db.execute(
                "INSERT INTO results (run_key, position, bench_id, params, unit, status, median, ci_low, ci_high, \
                 mean, n, flags, method, cold_hot, cold_hot_low, cold_hot_high, counts) \
                 VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                &result_values(key, i, r),
            )?;
        }
        for (i, s) in run.stability.iter().enumerate() {
            self.db.execute(
                "INSERT INTO stability (run_key, position, test, seed, mode, outcome, ran_s, clean_s, operations, \
                 detail) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                &stability_values(key, i, s),
            )?;
        }
        Ok(())
    }

    /// Every recorded result whose id matches any of `patterns` (all without one), oldest
    /// run first.
    pub fn points(&mut self, patterns: &[String]) -> Result<Vec<Point>, HistoryError> {
        let columns = [
            Value::Text(None),
            Value::Text(None),
            Value::Text(None),
            Value::Text(None),
            Value::Text(None),
            Value::Text(None),
            Value::Text(None),
            Value::Text(None),
            Value::Real(None),
            Value::Real(None),
            Value::Real(None),
            Value::Real(None),
            Value::Int(None),
            Value::Text(None),
            Value::Text(None),
            Value::Text(None),
            Value::Text(None),
            Value::Real(None),
            Value::Real(None),
            Value::Real(None),
            Value::Text(None),
        ];
        let rows = self.db.query(
            "SELECT r.bench_id, r.params, r.unit, r.status, u.started_utc, u.host, u.kernel, u.osprim_commit, \
             r.median, r.ci_low, r.ci_high, r.mean, r.n, u.cpu_model, r.method, u.run_key, u.file, \
             r.cold_hot, r.cold_hot_low, r.cold_hot_high, r.counts \
             FROM results r JOIN runs u ON u.run_key = r.run_key ORDER BY u.started_utc, u.run_key, r.position",
            &[],
            &columns,
        )?;
        let mut points: Vec<Point> = rows.into_iter().map(point_from_row).collect();
        points.extend(self.stability()?.into_iter().map(stability_point));
        // Oldest run first, each run's results in their order, its stability runs after them.
        points.sort_by(|a, b| (&a.started_utc, &a.run_key).cmp(&(&b.started_utc, &b.run_key)));
        Ok(points
            .into_iter()
            .filter(|p| patterns.is_empty() || patterns.iter().any(|pat| model::ids::matches(pat, &p.id)))
            .collect())
    }

    /// For each result of `run`, the earlier measurements of the same benchmark, parameters
    /// and unit, by the same sampling method, on the same host, CPU model and kernel by the
    /// same osprim build, oldest first (`run` itself not yet recorded: a run started in the
    /// same second as `run` counts as earlier). Results recorded without a method (before
    /// schema 3) are left out: they might be another method's.
    pub fn earlier(&mut self, run: &RunFile) -> Result<Vec<Vec<Point>>, HistoryError> {
        let ids: Vec<String> = run.results.iter().map(|r| r.id.clone()).collect();
        let points = if ids.is_empty() { Vec::new() } else { self.points(&ids)? };
        let m = &run.machine;
        Ok(run
            .results
            .iter()
            .map(|r| {
                let params = serde_json::to_string(&r.params).unwrap_or_default();
                let method = method_name(r.method);
                points
                    .iter()
                    .filter(|p| {
                        p.id == r.id
                            && p.params == params
                            && p.unit == r.unit.symbol()
                            && p.method == method
                            && p.median.is_some()
                            && p.host == run.host_name()
                            && p.cpu_model == m.cpu.model_name
                            && p.kernel == m.kernel.release
                            && p.commit == run.osprim.commit
                            && p.started_utc <= run.started_utc
                    })
                    .cloned()
                    .collect()
            })
            .collect())
    }

    /// The result files of the last `n` runs recorded before `run` on its host, CPU model and
    /// kernel by its osprim build (the runs [`History::earlier`] judges a level shift against),
    /// newest first: each run's start and its file (`None` when recorded without one). `run`
    /// itself is left out.
    pub fn base_runs(&mut self, run: &RunFile, n: usize) -> Result<Vec<(String, Option<String>)>, HistoryError> {
        let m = &run.machine;
        let rows = self.db.query(
            "SELECT started_utc, file FROM runs WHERE host = ? AND cpu_model = ? AND kernel = ? AND \
             osprim_commit = ? AND started_utc <= ? AND run_key <> ? ORDER BY started_utc DESC, run_key DESC",
            &[
                text(run.host_name()),
                text(&m.cpu.model_name),
                text(&m.kernel.release),
                text(&run.osprim.commit),
                text(&run.started_utc),
                text(&run_key(run)),
            ],
            &[Value::Text(None), Value::Text(None)],
        )?;
        Ok(rows
            .into_iter()
            .take(n)
            .map(|r| {
                let t = |v: Option<&Value>| match v {
                    Some(Value::Text(Some(s))) => Some(s.clone()),
                    _ => None,
                };
                (t(r.first()).unwrap_or_default(), t(r.get(1)))
            })
            .collect())
    }

    /// Every recorded stability run, oldest first.
    pub fn stability(&mut self) -> Result<Vec<StabilityPoint>, HistoryError> {
        let columns = vec![Value::Text(None); 8];
        let rows = self.db.query(
            "SELECT u.started_utc, u.host, u.cpu_model, u.kernel, u.osprim_commit, u.file, s.detail, u.run_key \
             FROM stability s JOIN runs u ON u.run_key = s.run_key ORDER BY u.started_utc, u.run_key, s.position",
            &[],
            &columns,
        )?;
        Ok(rows
            .into_iter()
            .filter_map(|row| {
                let t = |i: usize| match row.get(i) {
                    Some(Value::Text(Some(s))) => s.clone(),
                    _ => String::new(),
                };
                // A detail this osprim cannot read (a newer one's) is left out, not an error.
                let run = serde_json::from_str(&t(6)).ok()?;
                Some(StabilityPoint {
                    run_key: t(7),
                    started_utc: t(0),
                    host: t(1),
                    cpu_model: t(2),
                    kernel: t(3),
                    commit: t(4),
                    file: Some(t(5)).filter(|f| !f.is_empty()),
                    run,
                })
            })
            .collect())
    }

    /// How many runs are recorded.
    pub fn runs(&mut self) -> Result<i64, HistoryError> {
        let rows = self.db.query("SELECT COUNT(*) FROM runs", &[], &[Value::Int(None)])?;
        Ok(match rows.first().and_then(|r| r.first()) {
            Some(Value::Int(Some(n))) => *n,
            _ => 0,
        })
    }
}

pub(crate) fn text(s: &str) -> Value {
    Value::Text(Some(s.to_string()))
}

/// A run's key: its start, its host, the osprim build that measured it, and the run's random
/// id (two runs started in the same second on hosts of the same name with equal results, all
/// skipped say, differ in it; the same run recorded twice, or read back from its file, does
/// not). A file written before runs drew an id keeps the key it had: a digest of its results
/// in the id's place.
pub fn run_key(run: &RunFile) -> String {
    let head = format!("{} {} {}", run.started_utc, run.machine.hostname, run.osprim.commit);
    // A run that drew its own id is named by it: the same run read back from its file (whose
    // rows may carry flags added after it was recorded) is the same run.
    if let Some(id) = &run.run_id {
        return format!("{head} {id}");
    }
    let bytes = serde_json::to_vec(&run.results).unwrap_or_default();
    // FNV-1a, 64 bits: a digest to tell runs apart, not a defence against forgery.
    let digest = bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3));
    format!("{head} {digest:016x}")
}

fn result_values(key: &str, position: usize, r: &Row) -> Vec<Value> {
    let s = r.summary.as_ref();
    let status = serde_json::to_value(r.status).ok().and_then(|v| v.as_str().map(String::from)).unwrap_or_default();
    let flags: Vec<String> = r
        .flags
        .iter()
        .filter_map(|f| serde_json::to_value(f).ok().and_then(|v| v.as_str().map(String::from)))
        .collect();
    vec![
        text(key),
        Value::Int(Some(position as i64)),
        text(&r.id),
        text(&serde_json::to_string(&r.params).unwrap_or_default()),
        text(r.unit.symbol()),
        text(&status),
        Value::Real(s.map(|s| s.median)),
        Value::Real(s.map(|s| s.median_ci95[0])),
        Value::Real(s.map(|s| s.median_ci95[1])),
        Value::Real(s.map(|s| s.mean)),
        Value::Int(s.map(|s| s.n as i64)),
        text(&flags.join(",")),
        text(&method_name(r.method)),
        Value::Real(r.cold_hot.as_ref().map(|c| c.ratio)),
        Value::Real(r.cold_hot.as_ref().map(|c| c.ci[0])),
        Value::Real(r.cold_hot.as_ref().map(|c| c.ci[1])),
        Value::Text(r.counters.as_ref().filter(|c| !c.events.is_empty()).map(|c| {
            let counts: serde_json::Map<String, serde_json::Value> =
                c.events.iter().map(|e| (e.event.clone(), serde_json::json!(e.per_op))).collect();
            serde_json::Value::Object(counts).to_string()
        })),
    ]
}

fn stability_values(key: &str, position: usize, s: &StabilityRun) -> Vec<Value> {
    let outcome = match &s.outcome {
        Outcome::Clean => "clean",
        Outcome::Failed { .. } => "failed",
        Outcome::Interrupted { .. } => "interrupted",
    };
    vec![
        text(key),
        Value::Int(Some(position as i64)),
        text(s.test.name()),
        // TEXT: a 64-bit seed does not fit a signed BIGINT.
        text(&s.seed.to_string()),
        text(&s.mode),
        text(outcome),
        Value::Real(Some(s.ran_s)),
        Value::Real(Some(s.clean_s)),
        Value::Int(Some(i64::try_from(s.total_operations()).unwrap_or(i64::MAX))),
        text(&serde_json::to_string(s).unwrap_or_default()),
    ]
}

/// A [`Point`] from a row of the points query ([`History::points`]).
fn point_from_row(row: Vec<Value>) -> Point {
    let t = |i: usize| match row.get(i) {
        Some(Value::Text(Some(s))) => s.clone(),
        _ => String::new(),
    };
    let f = |i: usize| match row.get(i) {
        Some(Value::Real(v)) => *v,
        _ => None,
    };
    let n = match row.get(12) {
        Some(Value::Int(v)) => *v,
        _ => None,
    };
    Point {
        id: t(0),
        params: t(1),
        unit: t(2),
        status: t(3),
        started_utc: t(4),
        host: t(5),
        kernel: t(6),
        commit: t(7),
        median: f(8),
        ci95: f(9).zip(f(10)).map(|(a, b)| [a, b]),
        mean: f(11),
        n,
        cpu_model: t(13),
        method: t(14),
        run_key: t(15),
        file: Some(t(16)).filter(|f| !f.is_empty()),
        cold_hot: f(17)
            .map(|point| model::Estimate { point, ci95: [f(18).unwrap_or(f64::NAN), f(19).unwrap_or(f64::NAN)] }),
        counts: serde_json::from_str::<serde_json::Map<String, serde_json::Value>>(&t(20))
            .map(|m| m.into_iter().filter_map(|(k, v)| v.as_f64().map(|v| (k, v))).collect())
            .unwrap_or_default(),
    }
}

/// A stability run as a point of its series `stability.<test>` (by mode): its value is how
/// long it ran without a failure, its status how it ended (`clean`, `failed`, `interrupted`).
fn stability_point(s: StabilityPoint) -> Point {
    let status = match s.run.outcome {
        Outcome::Clean => "clean",
        Outcome::Failed { .. } => "failed",
        Outcome::Interrupted { .. } => "interrupted",
    };
    Point {
        id: format!("stability.{}", s.run.test.name()),
        params: serde_json::json!({ "mode": s.run.mode }).to_string(),
        unit: "ns".into(),
        status: status.into(),
        started_utc: s.started_utc,
        host: s.host,
        kernel: s.kernel,
        commit: s.commit,
        median: Some(s.run.clean_s * 1e9),
        ci95: None,
        mean: None,
        n: None,
        cpu_model: s.cpu_model,
        method: "stability".into(),
        run_key: s.run_key,
        file: s.file,
        cold_hot: None,
        counts: Vec::new(),
    }
}

/// Records the result file `path`, or every result file in the directory `path` (not the
/// journals, not the database); how many runs were new, how many known already, and the files
/// that could not be read, with why. `host`: the host a file that names none is recorded
/// under (`history --import --host`; a file's own `host` wins).
pub fn import(h: &mut History, path: &Path, host: Option<&str>) -> Result<(usize, usize, Vec<String>), HistoryError> {
    let mut files: Vec<PathBuf> = if path.is_dir() {
        let entries = std::fs::read_dir(path)
            .map_err(|e| HistoryError::Import { what: path.display().to_string(), detail: e.to_string() })?;
        entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "json"))
            .collect()
    } else if path.is_file() {
        vec![path.to_path_buf()]
    } else {
        return Err(HistoryError::Import {
            what: path.display().to_string(),
            detail: "no such file or directory of result files".into(),
        });
    };
    files.sort();
    let (mut new, mut known, mut bad) = (0, 0, Vec::new());
    for f in files {
        match model::read_result_file(&f) {
            Ok(mut run) => {
                if run.host.is_none() {
                    run.host = host.map(String::from);
                }
                if h.record(&run, Some(&f))? { new += 1 } else { known += 1 }
            }
            Err(e) => bad.push(e.to_string()),
        }
    }
    Ok((new, known, bad))
}

#[cfg(test)]
pub(crate) mod tests;

//! The run's journal: everything measured, appended as it is measured, beside the result file,
//! so that nothing measured is lost to a crash, a full disk, a file-size limit, SIGKILL or a
//! second Ctrl-C. At the end of a run the result file is written from what the run holds and
//! the journal removed; after a run that did not end, `osprim finish RESULT` turns the journal
//! into the result file.
//!
//! # Format
//! `<result file>.journal`, JSON Lines: one [`Record`] per line, each written with one
//! `write(2)` as soon as it is measured (so a killed process loses nothing), and synced
//! (`fdatasync`) at most every [`SYNC_EVERY`] and at the end of measuring (so a machine crash
//! loses at most that much, and the disk's latency does not lengthen the run).
//!
//! 1. `{"kind":"start","journal":1,"run":{…}}` — the result document as it stands at the start
//!    (machine, timer, placement, settings; no results);
//! 2. `{"kind":"slot","row":0,"id":"syscall.null","about":"…","params":{…}}` — a benchmark
//!    under one parameter set gets row 0, 1, … of the result file;
//! 3. `{"kind":"outcome","row":0,"steal_jiffies":0,"outcome":{"measured":{…}}}` — what one
//!    round of that row gave (the raw samples and checks, or why nothing was measured);
//! 4. `{"kind":"note","row":0,"note":"…"}` — a remark of the run's on a row;
//! 5. `{"kind":"execution","execution":{…}}` — a worker process that measures (part of) a
//!    round (`model::Execution`): once it is ready, and again once it ended (the later
//!    record of the same process replaces the earlier);
//! 6. `{"kind":"end","finished_utc":…}` — measuring is over.
//!
//! A record that could not be written whole (a full disk) is cut off again (`ftruncate` back
//! to the last whole record), so the journal always holds whole records; a reader also
//! ignores a last line cut short by a crash.
//!
//! While a run is going on it holds an exclusive `flock(2)` on its journal: a second run given
//! the same `--output` is refused before it measures, and `osprim finish` refuses a journal a
//! live run is still writing.

use model::RunFile;
use model::{Measured, NotMeasured, Params};
use serde::{Deserialize, Serialize};
use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};

/// The version of the journal format.
pub const JOURNAL_FORMAT: u32 = 1;

/// The journal is synced at most this often while the run goes on.
pub const SYNC_EVERY: std::time::Duration = std::time::Duration::from_secs(2);

/// The largest journal `osprim finish` reads (every raw sample of a long run fits many times).
const MAX_JOURNAL_BYTES: u64 = 4 << 30;

/// One line of the journal (module doc).
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Record {
    /// The run as it stands at the start.
    Start {
        /// [`JOURNAL_FORMAT`].
        journal: u32,
        /// The result document without results.
        run: Box<RunFile>,
    },
    /// A new row: one benchmark under one parameter set.
    Slot {
        /// Its index among the result file's rows.
        row: usize,
        /// Benchmark id.
        id: String,
        /// One line on what it measures.
        about: String,
        /// Its parameters.
        params: Params,
    },
    /// What one round of a row gave.
    Outcome {
        /// The row.
        row: usize,
        /// Steal time during this round, `USER_HZ` ticks.
        steal_jiffies: u64,
        /// The samples, or why there are none.
        outcome: Outcome,
    },
    /// A remark on a row from the run itself (e.g. why it took fewer rounds).
    Note {
        /// The row.
        row: usize,
        /// The remark.
        note: String,
    },
    /// An availability probe of the measuring CPU (between rounds).
    Probe {
        /// What it found.
        probe: model::Probe,
    },
    /// A worker process that measures (part of) a round: when it is ready, and again when it
    /// ended (a reader keeps the later record of the same process).
    Execution {
        /// Its record.
        execution: model::Execution,
    },
    /// Measuring is over (the result file is written next).
    End {
        /// UTC end, RFC 3339; absent when the run was interrupted.
        finished_utc: Option<String>,
    },
}

/// [`Record::Outcome`], written from a borrowed outcome.
#[derive(Serialize)]
#[serde(tag = "kind", rename = "outcome")]
struct OutcomeLine<'a> {
    row: usize,
    steal_jiffies: u64,
    outcome: OutcomeRef<'a>,
}

/// [`Outcome`], borrowed.
#[derive(Serialize)]
#[serde(rename_all = "snake_case")]
pub enum OutcomeRef<'a> {
    /// Samples and checks.
    Measured(&'a Measured),
    /// Nothing measured, and why.
    NotMeasured(&'a NotMeasured),
}

/// What one round of a row gave, as the journal keeps it.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Samples and checks.
    Measured(Box<Measured>),
    /// Nothing measured, and why.
    NotMeasured(NotMeasured),
}

/// Everything measured for one row (a benchmark under one parameter set), round by round.
#[derive(Debug)]
pub struct Rounds {
    /// Benchmark id.
    pub id: String,
    /// One line on what it measures.
    pub about: String,
    /// Its parameters.
    pub params: Params,
    /// Each round's outcome, in order.
    pub outcomes: Vec<Result<Measured, NotMeasured>>,
    /// Steal time over its rounds, `USER_HZ` ticks.
    pub steal_jiffies: u64,
    /// Remarks from the run itself.
    pub notes: Vec<String>,
}

/// What a journal holds.
#[derive(Debug)]
pub struct Contents {
    /// The run as it stood at the start.
    pub run: RunFile,
    /// The rows, in result-file order.
    pub rows: Vec<Rounds>,
    /// When measuring ended, if the run got that far and was not interrupted.
    pub finished_utc: Option<String>,
    /// Lines that could not be read (cut short by a crash, or damaged).
    pub unreadable_lines: usize,
}

/// Why a journal cannot be made or read.
#[derive(Debug, thiserror::Error)]
pub enum JournalError {
    /// A live run holds the journal.
    #[error("another osprim run is writing {result} (its journal {journal} is locked)")]
    InUse {
        /// The result file.
        result: PathBuf,
        /// The journal.
        journal: PathBuf,
    },
    /// A journal of a run that did not end is there.
    #[error(
        "{journal} holds the measurements of a run that did not end: run 'osprim finish {result}' to turn it into \
         the result file, or remove it"
    )]
    Unfinished {
        /// The result file.
        result: PathBuf,
        /// The journal.
        journal: PathBuf,
    },
    /// No journal is there.
    #[error("no journal at {0}: nothing to finish (the run ended and saved its result file, or never started)")]
    Missing(PathBuf),
    /// The journal is not one osprim wrote.
    #[error("{path} is not an osprim journal: {detail}")]
    Corrupt {
        /// The journal.
        path: PathBuf,
        /// What is wrong.
        detail: String,
    },
    /// An I/O error.
    #[error("{path}: {error}")]
    Io {
        /// The journal.
        path: PathBuf,
        /// What the kernel said.
        /// (Said in the message, so not a `source`: a chain would say it twice.)
        error: std::io::Error,
    },
}

/// The journal of the result file at `result`: the same name with `.journal` added.
pub fn path_for(result: &Path) -> PathBuf {
    let mut name = result.as_os_str().to_os_string();
    name.push(".journal");
    PathBuf::from(name)
}

/// The result file a journal belongs to: `path` without `.journal`, or `path` itself.
pub fn result_for(path: &Path) -> PathBuf {
    use std::os::unix::ffi::OsStrExt;
    match path.as_os_str().as_bytes().strip_suffix(b".journal") {
        Some(stem) if !stem.is_empty() && !stem.ends_with(b"/") => PathBuf::from(std::ffi::OsStr::from_bytes(stem)),
        _ => path.to_path_buf(),
    }
}

/// The journal a run appends to, locked for the run's life.
pub struct Journal {
    file: File,
    /// The lock, on a duplicate of `file`'s descriptor (the same open file).
    _lock: Locked,
    path: PathBuf,
    /// Length of the whole records written so far.
    len: u64,
    /// The first write error, kept so that the run can say it once.
    error: Option<std::io::Error>,
    /// When the journal was last synced.
    synced: std::time::Instant,
}

impl Journal {
    /// Creates the journal of `result`, which must not exist yet, and locks it. The journal is
    /// made and locked under a temporary name and then given its own name in one step (a rename
    /// that replaces nothing), so that its name never exists unlocked: a second run starting at
    /// the same moment is told that a live run writes it, never that a run did not end.
    pub fn create(result: &Path) -> Result<Journal, JournalError> {
        let path = path_for(result);
        let io = |error| JournalError::Io { path: path.clone(), error };
        if std::fs::symlink_metadata(&path).is_ok() {
            return Err(busy_or_unfinished(result, &path));
        }
        use std::os::unix::fs::PermissionsExt;
        let tmp = tempfile::Builder::new()
            .prefix(".osprim-journal-")
            .permissions(std::fs::Permissions::from_mode(0o644))
            .tempfile_in(crate::output::parent(&path))
            .map_err(io)?;
        let _lock = tmp.as_file().try_clone().and_then(lock).map_err(io)?;
        let file = match tmp.persist_noclobber(&path) {
            Ok(f) => f,
            Err(e) if e.error.kind() == std::io::ErrorKind::AlreadyExists => {
                return Err(busy_or_unfinished(result, &path));
            }
            Err(e) => return Err(io(e.error)),
        };
        Ok(Journal { file, _lock, path, len: 0, error: None, synced: std::time::Instant::now() })
    }

    /// Where it is.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The first write error, if any (the record was left out; later ones are still tried).
    pub fn error(&self) -> Option<&std::io::Error> {
        self.error.as_ref()
    }

    /// Appends one record (synced if [`SYNC_EVERY`] has passed, and always for the end of
    /// measuring, [`Record::End`]). On failure the journal is cut back to its last whole record
    /// and the error kept ([`Journal::error`]) as well as returned.
    pub fn append(&mut self, record: &Record) -> std::io::Result<()> {
        let sync_now = matches!(record, Record::End { .. });
        self.append_line(record, sync_now)
    }

    /// Appends what one round of row `row` gave ([`Record::Outcome`]).
    pub fn append_outcome(&mut self, row: usize, steal_jiffies: u64, outcome: OutcomeRef<'_>) -> std::io::Result<()> {
        self.append_line(&OutcomeLine { row, steal_jiffies, outcome }, false)
    }

    fn append_line(&mut self, record: &impl Serialize, sync_now: bool) -> std::io::Result<()> {
        let mut line = serde_json::to_vec(record).map_err(std::io::Error::other)?;
        line.push(b'\n');
        let sync = sync_now || self.synced.elapsed() >= SYNC_EVERY;
        let written = self.file.write_all(&line).and_then(|()| if sync { self.file.sync_data() } else { Ok(()) });
        if sync && written.is_ok() {
            self.synced = std::time::Instant::now();
        }
        match written {
            Ok(()) => {
                self.len += line.len() as u64;
                Ok(())
            }
            Err(e) => {
                // Cut back, and the next record goes right after the last whole one.
                let _ = self.file.set_len(self.len);
                let _ = std::io::Seek::seek(&mut self.file, std::io::SeekFrom::Start(self.len));
                let kept = std::io::Error::new(e.kind(), e.to_string());
                self.error.get_or_insert(e);
                Err(kept)
            }
        }
    }

    /// Removes the journal (its contents are in the result file now).
    pub fn remove(self) -> std::io::Result<()> {
        std::fs::remove_file(&self.path)
    }
}

/// Whether a live run is writing the result file at `result` (its journal is there and
/// locked): the file is then its placeholder, without results yet.
pub fn held(result: &Path) -> bool {
    let path = path_for(result);
    std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_file()) && File::open(&path).and_then(lock).is_err()
}

/// Takes the journal's lock, or says which of the two reasons the journal exists.
fn busy_or_unfinished(result: &Path, journal: &Path) -> JournalError {
    match File::open(journal).and_then(lock) {
        Ok(_) => JournalError::Unfinished { result: result.into(), journal: journal.into() },
        Err(_) => JournalError::InUse { result: result.into(), journal: journal.into() },
    }
}

/// A file under an exclusive `flock`, released when it is dropped.
pub type Locked = nix::fcntl::Flock<File>;

/// Takes an exclusive, non-blocking `flock` on `file`.
fn lock(file: File) -> std::io::Result<Locked> {
    nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusiveNonblock)
        .map_err(|(_, errno)| std::io::Error::from(errno))
}

/// Opens the journal at `path` for `osprim finish`: it must exist, be a regular file and be
/// held by no live run. The returned file keeps the lock until it is dropped.
pub fn open_unlocked(result: &Path) -> Result<(Locked, PathBuf), JournalError> {
    let path = path_for(result);
    let meta = match std::fs::symlink_metadata(&path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(JournalError::Missing(path)),
        Err(error) => return Err(JournalError::Io { path, error }),
    };
    if !meta.file_type().is_file() {
        return Err(JournalError::Corrupt { path, detail: "it is not a regular file".into() });
    }
    let file = File::options()
        .read(true)
        .write(true)
        .open(&path)
        .map_err(|error| JournalError::Io { path: path.clone(), error })?;
    match lock(file) {
        Ok(locked) => Ok((locked, path)),
        Err(_) => Err(JournalError::InUse { result: result.into(), journal: path }),
    }
}

/// Reads a journal (module doc): the start record, then every whole slot and outcome record.
pub fn read(path: &Path) -> Result<Contents, JournalError> {
    let corrupt = |detail: String| JournalError::Corrupt { path: path.into(), detail };
    let file = File::open(path).map_err(|error| JournalError::Io { path: path.into(), error })?;
    let meta = file.metadata().map_err(|error| JournalError::Io { path: path.into(), error })?;
    if !meta.file_type().is_file() {
        return Err(corrupt("it is not a regular file".into()));
    }
    if meta.len() > MAX_JOURNAL_BYTES {
        return Err(corrupt(format!("it is larger than {} GiB", MAX_JOURNAL_BYTES >> 30)));
    }
    parse(path, BufReader::new(file))
}

/// The records of a journal read from `path` (named in errors), as [`read`] finds them: the
/// parser under it, also for the fuzzers (docs/fuzzing.md).
pub fn parse(path: &Path, text: impl BufRead) -> Result<Contents, JournalError> {
    let corrupt = |detail: String| JournalError::Corrupt { path: path.into(), detail };
    let mut lines = text.split(b'\n');
    let first = match lines.next() {
        Some(Ok(line)) => line,
        Some(Err(error)) => return Err(JournalError::Io { path: path.into(), error }),
        None => return Err(corrupt("it is empty".into())),
    };
    let mut run = match serde_json::from_slice::<Record>(&first) {
        Ok(Record::Start { journal, run }) if journal == JOURNAL_FORMAT => *run,
        Ok(Record::Start { journal, .. }) => {
            return Err(corrupt(format!("journal format {journal}; this build reads {JOURNAL_FORMAT}")));
        }
        Ok(_) => return Err(corrupt("it does not begin with a start record".into())),
        Err(e) => return Err(corrupt(format!("its first line is unreadable ({e})"))),
    };
    run.results.clear();
    run.availability.clear();
    run.executions.clear();
    let mut rows: Vec<Rounds> = Vec::new();
    let (mut unreadable_lines, mut finished_utc) = (0, None);
    let mut seen = std::collections::HashMap::new();
    for line in lines {
        let line = line.map_err(|error| JournalError::Io { path: path.into(), error })?;
        match serde_json::from_slice::<Record>(&line) {
            Ok(Record::Slot { row, id, about, params }) if row == rows.len() => {
                rows.push(Rounds { id, about, params, outcomes: Vec::new(), steal_jiffies: 0, notes: Vec::new() });
            }
            Ok(Record::Outcome { row, steal_jiffies, outcome }) if row < rows.len() => {
                let r = &mut rows[row];
                // Saturating: a damaged journal's counts must not overflow.
                r.steal_jiffies = r.steal_jiffies.saturating_add(steal_jiffies);
                r.outcomes.push(match outcome {
                    Outcome::Measured(m) => Ok(*m),
                    Outcome::NotMeasured(n) => Err(n),
                });
            }
            Ok(Record::Note { row, note }) if row < rows.len() => rows[row].notes.push(note),
            Ok(Record::Probe { probe }) => run.availability.push(probe),
            Ok(Record::Execution { execution }) => {
                if let Some(o) = &execution.overhead {
                    run.timer.keep_overhead(o);
                }
                // A worker is journaled when it starts and again when it ends: the later wins
                // (found by key, not by a search: a journal may hold many).
                match seen.entry((execution.pid, execution.round)) {
                    std::collections::hash_map::Entry::Occupied(at) => run.executions[*at.get()] = execution,
                    std::collections::hash_map::Entry::Vacant(at) => {
                        at.insert(run.executions.len());
                        run.executions.push(execution);
                    }
                }
            }
            Ok(Record::End { finished_utc: end }) => finished_utc = end,
            _ => unreadable_lines += 1,
        }
    }
    Ok(Contents { run, rows, finished_utc, unreadable_lines })
}

#[cfg(test)]
mod tests {
    use super::*;
    use model::Samples;

    fn header() -> RunFile {
        use model::{BuildInfo, Placement, SCHEMA};
        RunFile {
            schema: SCHEMA,
            osprim: BuildInfo {
                version: "0.1.0".into(),
                commit: "test".into(),
                rustc: "rustc".into(),
                profile: "release".into(),
            },
            started_utc: "2026-11-25T00:00:00Z".into(),
            finished_utc: None,
            partial: true,
            command: vec!["osprim".into()],
            config: model::fixtures::run_file(false).config,
            placement: Placement { cpu: 0, chosen_by: "test".into(), allowed_cpus: vec![0], cpu_pair: None },
            timer: model::TimerInfo::for_tests(),
            machine: platform::env::capture(),
            results: Vec::new(),
            availability: Vec::new(),
            executions: Vec::new(),
            counters: None,
            stability: Vec::new(),
            run_id: None,
            host: None,
        }
    }

    fn measured(v: f64) -> Outcome {
        let samples = Samples { per_op_ns: vec![v, v + 1.0], iterations_per_sample: 10, ..Samples::default() };
        Outcome::Measured(Box::new(Measured::new(samples, Vec::new())))
    }

    #[test]
    fn names_pair_up() {
        let r = Path::new("d/today.json");
        assert_eq!(path_for(r), Path::new("d/today.json.journal"));
        assert_eq!(result_for(&path_for(r)), r);
        assert_eq!(result_for(r), r);
    }

    #[test]
    fn round_trip_keeps_rows_in_order_and_skips_a_torn_last_line() {
        let d = tempfile::tempdir().unwrap();
        let result = d.path().join("r.json");
        let mut j = Journal::create(&result).unwrap();
        j.append(&Record::Start { journal: JOURNAL_FORMAT, run: Box::new(header()) }).unwrap();
        for (row, id) in ["a.x", "b.y"].iter().enumerate() {
            j.append(&Record::Slot { row, id: id.to_string(), about: "t".into(), params: Params::new() }).unwrap();
        }
        j.append(&Record::Outcome { row: 1, steal_jiffies: 2, outcome: measured(5.0) }).unwrap();
        let skipped = NotMeasured::Skipped("no".into());
        j.append_outcome(0, 0, OutcomeRef::NotMeasured(&skipped)).unwrap();
        let exec =
            model::Execution { round: 0, pid: 77, env_pad_bytes: 9, ended: "exit 0".into(), ..Default::default() };
        let running = model::Execution { ended: "still running when the run ended".into(), ..exec.clone() };
        j.append(&Record::Execution { execution: running }).unwrap();
        j.append(&Record::Execution { execution: exec.clone() }).unwrap();
        j.append(&Record::End { finished_utc: Some("2026-11-25T00:00:01Z".into()) }).unwrap();
        j.append(&Record::Outcome { row: 1, steal_jiffies: 1, outcome: measured(7.0) }).unwrap();
        // A crash in the middle of a line.
        std::fs::OpenOptions::new().append(true).open(j.path()).unwrap().write_all(b"{\"kind\":\"outc").unwrap();
        let c = read(j.path()).unwrap();
        assert_eq!(c.unreadable_lines, 1);
        assert_eq!(c.rows.len(), 2);
        assert_eq!(c.rows[0].id, "a.x");
        assert!(matches!(c.rows[0].outcomes[..], [Err(NotMeasured::Skipped(_))]));
        assert_eq!(c.rows[1].steal_jiffies, 3);
        assert_eq!(c.finished_utc.as_deref(), Some("2026-11-25T00:00:01Z"));
        assert_eq!(c.run.executions, [exec], "the worker processes are kept");
        let firsts: Vec<f64> = c.rows[1].outcomes.iter().map(|o| o.as_ref().unwrap().samples.per_op_ns[0]).collect();
        assert_eq!(firsts, [5.0, 7.0]);
    }

    #[test]
    fn a_second_writer_is_refused_and_a_left_journal_is_unfinished() {
        let d = tempfile::tempdir().unwrap();
        let result = d.path().join("r.json");
        let j = Journal::create(&result).unwrap();
        assert!(matches!(Journal::create(&result), Err(JournalError::InUse { .. })));
        assert!(matches!(open_unlocked(&result), Err(JournalError::InUse { .. })));
        drop(j);
        assert!(matches!(Journal::create(&result), Err(JournalError::Unfinished { .. })));
        assert!(open_unlocked(&result).is_ok());
        assert!(matches!(open_unlocked(&d.path().join("other.json")), Err(JournalError::Missing(_))));
    }

    #[test]
    fn runs_starting_together_are_told_a_live_run_writes_it_never_to_finish_it() {
        for _ in 0..300 {
            let d = tempfile::tempdir().unwrap();
            let result = d.path().join("r.json");
            let start = std::sync::Barrier::new(2);
            let outcomes: Vec<Result<Journal, JournalError>> = std::thread::scope(|s| {
                let racers: Vec<_> = (0..2)
                    .map(|_| {
                        s.spawn(|| {
                            start.wait();
                            Journal::create(&result)
                        })
                    })
                    .collect();
                racers.into_iter().map(|r| r.join().unwrap()).collect()
            });
            assert_eq!(outcomes.iter().filter(|o| o.is_ok()).count(), 1, "one wins");
            for o in &outcomes {
                if let Err(e) = o {
                    assert!(matches!(e, JournalError::InUse { .. }), "the loser is told: {e}");
                }
            }
            assert!(held(&result));
            drop(outcomes);
            assert!(!held(&result), "no run holds it now");
            let left: Vec<_> = std::fs::read_dir(d.path()).unwrap().flatten().map(|e| e.file_name()).collect();
            assert_eq!(left, [std::ffi::OsString::from("r.json.journal")], "no temporary file left");
        }
    }

    #[test]
    fn foreign_files_are_refused() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("x.journal");
        for (text, want) in [("", "empty"), ("{\"kind\":\"slot\"}\n", "unreadable"), ("hello\n", "unreadable")] {
            std::fs::write(&p, text).unwrap();
            let e = read(&p).unwrap_err().to_string();
            assert!(e.contains(want), "{e}");
        }
    }

    #[test]
    fn a_failed_append_leaves_only_whole_records() {
        let d = tempfile::tempdir().unwrap();
        let result = d.path().join("r.json");
        let mut j = Journal::create(&result).unwrap();
        j.append(&Record::Start { journal: JOURNAL_FORMAT, run: Box::new(header()) }).unwrap();
        let len = std::fs::metadata(j.path()).unwrap().len();
        // A read-only descriptor in its place makes the next write fail.
        j.file = File::open(j.path()).unwrap();
        let slot = Record::Slot { row: 0, id: "a.x".into(), about: String::new(), params: Params::new() };
        assert!(j.append(&slot).is_err());
        assert!(j.error().is_some());
        assert_eq!(std::fs::metadata(j.path()).unwrap().len(), len);
        assert!(read(j.path()).unwrap().rows.is_empty());
    }

    #[test]
    fn a_damaged_journal_neither_overflows_nor_slows_down() {
        let mut text =
            serde_json::to_string(&Record::Start { journal: JOURNAL_FORMAT, run: Box::new(header()) }).unwrap();
        text.push('\n');
        let slot = Record::Slot { row: 0, id: "a.x".into(), about: String::new(), params: Params::new() };
        text += &serde_json::to_string(&slot).unwrap();
        text.push('\n');
        for _ in 0..2 {
            let outcome = Record::Outcome { row: 0, steal_jiffies: u64::MAX, outcome: measured(1.0) };
            text += &serde_json::to_string(&outcome).unwrap();
            text.push('\n');
        }
        // Many workers, each journaled twice: read in linear time.
        for pid in 0..20_000 {
            let e = Record::Execution { execution: model::Execution { pid, ..Default::default() } };
            let line = serde_json::to_string(&e).unwrap();
            text += &format!("{line}\n{line}\n");
        }
        let c = parse(Path::new("j"), text.as_bytes()).unwrap();
        assert_eq!(c.rows[0].steal_jiffies, u64::MAX);
        assert_eq!(c.unreadable_lines, 0);
        assert_eq!(c.run.executions.len(), 20_000);
    }
}

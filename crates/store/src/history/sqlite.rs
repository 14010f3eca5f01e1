//! The SQLite backend of [`super::History`]: a file, the SQLite library bundled in osprim.

use super::{Backend, HistoryError, Value};
use rusqlite::types::{ToSqlOutput, Value as Sql};
use std::path::Path;
use std::time::Duration;

/// An open SQLite database.
pub struct Sqlite(rusqlite::Connection);

/// How long a write waits for another osprim writing the same file.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

fn err(e: rusqlite::Error) -> HistoryError {
    HistoryError::Sql(e.to_string())
}

impl Sqlite {
    /// Opens `path`, creating it if absent. Refuses anything but a regular file (a FIFO, a
    /// device), and a file that is not a SQLite database is an error, never overwritten.
    /// A symbolic link as the last component is never followed (`SQLITE_OPEN_NOFOLLOW`, as `-o`
    /// refuses one), nor is a file another user owns in a directory anyone may write to (sticky
    /// `/tmp`): a database planted there is not this user's to write.
    pub fn open(path: &Path) -> Result<Sqlite, HistoryError> {
        let open_err = |detail: String| HistoryError::Open { what: path.display().to_string(), detail };
        if let Some(why) = refused(path) {
            return Err(open_err(why.into()));
        }
        use rusqlite::OpenFlags;
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_URI
            | OpenFlags::SQLITE_OPEN_NO_MUTEX
            | OpenFlags::SQLITE_OPEN_NOFOLLOW;
        let c = rusqlite::Connection::open_with_flags(path, flags).map_err(|e| open_err(e.to_string()))?;
        // Checked again once open: nothing may have put a link or a stranger's file there since.
        if let Some(why) = refused(path) {
            return Err(open_err(why.into()));
        }
        c.busy_timeout(BUSY_TIMEOUT).map_err(|e| open_err(e.to_string()))?;
        // Reading the schema proves it is a database (SQLite opens lazily).
        c.query_row("SELECT COUNT(*) FROM sqlite_master", [], |r| r.get::<_, i64>(0))
            .map_err(|e| open_err(e.to_string()))?;
        c.execute_batch("PRAGMA foreign_keys = ON").map_err(|e| open_err(e.to_string()))?;
        Ok(Sqlite(c))
    }

    /// A database in memory (tests).
    pub fn in_memory() -> Result<Sqlite, HistoryError> {
        rusqlite::Connection::open_in_memory().map(Sqlite).map_err(err)
    }
}

/// Why the database at `path` is not opened (a symbolic link, not a regular file, another
/// user's file in a directory anyone may write to), if it is not.
fn refused(path: &Path) -> Option<&'static str> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::symlink_metadata(path).ok()?;
    if meta.file_type().is_symlink() {
        return Some("it is a symbolic link, which osprim does not follow");
    }
    if !meta.is_file() {
        return Some("it is not a regular file");
    }
    let me = std::fs::metadata("/proc/self").map(|m| m.uid()).ok()?;
    let dir = crate::output::parent(path);
    let shared = std::fs::metadata(dir).is_ok_and(|d| d.mode() & 0o1002 != 0);
    (shared && meta.uid() != me)
        .then_some("another user owns it in a directory anyone may write to; osprim does not write to it")
}

fn bind(v: &Value) -> ToSqlOutput<'static> {
    ToSqlOutput::Owned(match v {
        Value::Int(Some(i)) => Sql::Integer(*i),
        Value::Real(Some(f)) => Sql::Real(*f),
        Value::Text(Some(s)) => Sql::Text(s.clone()),
        _ => Sql::Null,
    })
}

fn read(row: &rusqlite::Row, i: usize, kind: &Value) -> rusqlite::Result<Value> {
    Ok(match kind {
        Value::Int(_) => Value::Int(row.get(i)?),
        Value::Real(_) => Value::Real(row.get(i)?),
        Value::Text(_) => Value::Text(row.get(i)?),
    })
}

impl Backend for Sqlite {
    fn batch(&mut self, sql: &str) -> Result<(), HistoryError> {
        self.0.execute_batch(sql).map_err(err)
    }

    fn execute(&mut self, sql: &str, params: &[Value]) -> Result<u64, HistoryError> {
        let bound: Vec<ToSqlOutput> = params.iter().map(bind).collect();
        self.0.execute(sql, rusqlite::params_from_iter(bound.iter())).map(|n| n as u64).map_err(err)
    }

    fn begin_exclusive(&mut self) -> Result<(), HistoryError> {
        // IMMEDIATE takes the write lock now (waiting up to the busy timeout), not at the
        // first write.
        self.0.execute_batch("BEGIN IMMEDIATE").map_err(err)
    }

    fn query(&mut self, sql: &str, params: &[Value], columns: &[Value]) -> Result<Vec<Vec<Value>>, HistoryError> {
        let bound: Vec<ToSqlOutput> = params.iter().map(bind).collect();
        let mut stmt = self.0.prepare(sql).map_err(err)?;
        let rows = stmt
            .query_map(rusqlite::params_from_iter(bound.iter()), |row| {
                columns.iter().enumerate().map(|(i, k)| read(row, i, k)).collect::<rusqlite::Result<Vec<Value>>>()
            })
            .map_err(err)?;
        rows.collect::<rusqlite::Result<Vec<_>>>().map_err(err)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_symbolic_link_is_not_followed_and_nothing_is_made_where_it_points() {
        let d = tempfile::tempdir().unwrap();
        let victim = d.path().join("victim");
        let link = d.path().join("history.db");
        std::os::unix::fs::symlink(&victim, &link).unwrap();
        let e = Sqlite::open(&link).err().expect("refused").to_string();
        assert!(e.contains("symbolic link"), "{e}");
        assert!(!victim.exists(), "nothing made through the link");
        // A link to an existing database is refused too.
        Sqlite::open(&victim).expect("a new database");
        assert!(Sqlite::open(&link).is_err());
        Sqlite::open(&victim).expect("the database itself");
    }

    #[test]
    fn another_users_file_in_a_shared_directory_is_refused() {
        use std::os::unix::fs::PermissionsExt;
        let d = tempfile::tempdir().unwrap();
        std::fs::set_permissions(d.path(), std::fs::Permissions::from_mode(0o1777)).unwrap();
        let db = d.path().join("history.db");
        Sqlite::open(&db).expect("this user's own file");
        let me = std::fs::metadata("/proc/self").map(|m| std::os::unix::fs::MetadataExt::uid(&m)).unwrap();
        if me != 0 {
            eprintln!("skipped the other user's file: not root, cannot give the file away");
            return;
        }
        std::os::unix::fs::chown(&db, Some(65534), None).unwrap();
        let e = Sqlite::open(&db).err().expect("refused").to_string();
        assert!(e.contains("another user owns it"), "{e}");
        // Outside a shared directory it is the user's choice.
        std::fs::set_permissions(d.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        Sqlite::open(&db).expect("a private directory");
    }
}

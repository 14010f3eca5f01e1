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
    pub fn open(path: &Path) -> Result<Sqlite, HistoryError> {
        let open_err = |detail: String| HistoryError::Open { what: path.display().to_string(), detail };
        if let Ok(meta) = std::fs::metadata(path)
            && !meta.is_file()
        {
            return Err(open_err("it is not a regular file".into()));
        }
        let c = rusqlite::Connection::open(path).map_err(|e| open_err(e.to_string()))?;
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

//! The PostgreSQL backend of [`super::History`]: a shared server that many machines record
//! into. The statements are [`super`]'s, with `?` placeholders renumbered as `$1, $2, …`.

use super::{Backend, HistoryError, Value};
use postgres::types::ToSql;

/// A connection to a PostgreSQL server.
pub struct Postgres(postgres::Client);

fn err(e: postgres::Error) -> HistoryError {
    HistoryError::Sql(chain(&e))
}

/// The error and its causes in one line: `error connecting to server: Connection refused`.
fn chain(e: &postgres::Error) -> String {
    let mut text = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        let more = s.to_string();
        if !text.contains(&more) {
            text.push_str(": ");
            text.push_str(&more);
        }
        source = s.source();
    }
    text
}

impl Postgres {
    /// Connects with `url` (`postgres://user@host:port/db`, or `host=/path/to/socket` in the
    /// URL's query, as libpq accepts), without TLS, waiting at most 10 s.
    pub fn connect(url: &str) -> Result<Postgres, HistoryError> {
        let mut cfg: postgres::Config = url
            .parse()
            .map_err(|e: postgres::Error| HistoryError::Open { what: super::redact(url), detail: e.to_string() })?;
        cfg.connect_timeout(std::time::Duration::from_secs(10));
        cfg.connect(postgres::NoTls)
            .map(Postgres)
            .map_err(|e| HistoryError::Open { what: super::redact(url), detail: chain(&e) })
    }
}

/// `?` → `$1`, `$2`, … (the statements hold no `?` inside strings).
pub fn numbered(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len() + 8);
    let mut n = 0;
    for c in sql.chars() {
        if c == '?' {
            n += 1;
            out.push_str(&format!("${n}"));
        } else {
            out.push(c);
        }
    }
    out
}

fn bind(v: &Value) -> Box<dyn ToSql + Sync> {
    match v {
        Value::Int(i) => Box::new(*i),
        Value::Real(f) => Box::new(*f),
        Value::Text(s) => Box::new(s.clone()),
    }
}

fn read(row: &postgres::Row, i: usize, kind: &Value) -> Result<Value, postgres::Error> {
    Ok(match kind {
        Value::Int(_) => Value::Int(row.try_get(i)?),
        Value::Real(_) => Value::Real(row.try_get(i)?),
        Value::Text(_) => Value::Text(row.try_get(i)?),
    })
}

impl Backend for Postgres {
    fn batch(&mut self, sql: &str) -> Result<(), HistoryError> {
        self.0.batch_execute(sql).map_err(err)
    }

    fn execute(&mut self, sql: &str, params: &[Value]) -> Result<u64, HistoryError> {
        let bound: Vec<Box<dyn ToSql + Sync>> = params.iter().map(bind).collect();
        let refs: Vec<&(dyn ToSql + Sync)> = bound.iter().map(|b| b.as_ref()).collect();
        self.0.execute(numbered(sql).as_str(), &refs).map_err(err)
    }

    fn begin_exclusive(&mut self) -> Result<(), HistoryError> {
        self.0.batch_execute("BEGIN; LOCK TABLE osprim_schema IN EXCLUSIVE MODE").map_err(err)
    }

    fn query(&mut self, sql: &str, params: &[Value], columns: &[Value]) -> Result<Vec<Vec<Value>>, HistoryError> {
        let bound: Vec<Box<dyn ToSql + Sync>> = params.iter().map(bind).collect();
        let refs: Vec<&(dyn ToSql + Sync)> = bound.iter().map(|b| b.as_ref()).collect();
        let rows = self.0.query(numbered(sql).as_str(), &refs).map_err(err)?;
        rows.iter()
            .map(|row| columns.iter().enumerate().map(|(i, k)| read(row, i, k)).collect::<Result<Vec<_>, _>>())
            .collect::<Result<Vec<_>, _>>()
            .map_err(err)
    }
}

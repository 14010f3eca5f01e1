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

/// How long connecting (the TCP connection and PostgreSQL's start-up exchange together) may
/// take: a server that accepts and never answers is given up on after it.
pub const CONNECT_DEADLINE: std::time::Duration = std::time::Duration::from_secs(10);

/// How long one statement may run on the server (`statement_timeout`), and how long sent data
/// may stay unacknowledged (`tcp_user_timeout`) before the connection is dropped.
const STATEMENT_LIMIT: std::time::Duration = std::time::Duration::from_secs(60);

impl Postgres {
    /// Connects with `url` (`postgres://user@host:port/db`, or `host=/path/to/socket` in the
    /// URL's query, as libpq accepts), without TLS. The whole of connecting, start-up exchange
    /// included, has [`CONNECT_DEADLINE`] (the driver's own connect timeout covers the TCP
    /// connection only): the connection is made on a thread of its own, given up on at the
    /// deadline. Each statement is limited to 60 s on the server, and a dead peer is noticed
    /// by TCP keepalives and `tcp_user_timeout`.
    pub fn connect(url: &str) -> Result<Postgres, HistoryError> {
        let mut cfg: postgres::Config = url.parse().map_err(|e: postgres::Error| HistoryError::Open {
            what: super::redact(url),
            detail: super::redact(&e.to_string()),
        })?;
        cfg.connect_timeout(CONNECT_DEADLINE);
        cfg.keepalives(true);
        cfg.keepalives_idle(std::time::Duration::from_secs(30));
        cfg.tcp_user_timeout(STATEMENT_LIMIT);
        let limit = format!("-c statement_timeout={}", STATEMENT_LIMIT.as_millis());
        let options = match cfg.get_options() {
            Some(o) if !o.is_empty() => format!("{o} {limit}"),
            _ => limit,
        };
        cfg.options(&options);
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::Builder::new()
            .name("osprim-postgres-connect".into())
            .spawn(move || {
                let _ = tx.send(cfg.connect(postgres::NoTls));
            })
            .map_err(|e| HistoryError::Open { what: super::redact(url), detail: e.to_string() })?;
        match rx.recv_timeout(CONNECT_DEADLINE) {
            Ok(connected) => connected
                .map(Postgres)
                .map_err(|e| HistoryError::Open { what: super::redact(url), detail: super::redact(&chain(&e)) }),
            // The thread is left to its blocked read: it holds nothing of osprim's.
            Err(_) => Err(HistoryError::Open {
                what: super::redact(url),
                detail: format!(
                    "the server did not complete the connection within {} s (it accepted, then did not answer)",
                    CONNECT_DEADLINE.as_secs()
                ),
            }),
        }
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

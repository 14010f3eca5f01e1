//! A/B results in the history (`osprim ab`): recorded apart from the runs, one row per
//! invocation in `ab_runs` and one per result in `ab_results` (migration 6), and read back
//! for `osprim history --ab`.

use super::{History, HistoryError, Value, text};
use model::ab::{AbFile, AbPoint};
use std::path::Path;

/// The key of an A/B invocation: its start, host and random id.
fn ab_key(ab: &AbFile) -> String {
    format!("ab|{}|{}|{}", ab.started_utc, ab.host_name(), ab.run_id)
}

impl History {
    /// Records `ab` (saved at `file`), in one transaction; `false` when it was there already.
    pub fn record_ab(&mut self, ab: &AbFile, file: Option<&Path>) -> Result<bool, HistoryError> {
        let key = ab_key(ab);
        let known =
            self.db.query("SELECT run_key FROM ab_runs WHERE run_key = ?", &[text(&key)], &[Value::Text(None)])?;
        if !known.is_empty() {
            return Ok(false);
        }
        self.db.begin_exclusive()?;
        match self.insert_ab(ab, &key, file) {
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

    fn insert_ab(&mut self, ab: &AbFile, key: &str, file: Option<&Path>) -> Result<(), HistoryError> {
        let m = &ab.a_run.machine;
        let mode = serde_json::to_value(ab.design.mode).ok().and_then(|v| v.as_str().map(String::from));
        self.db.execute(
            "INSERT INTO ab_runs (run_key, started_utc, finished_utc, partial, host, cpu_model, kernel, osprim_commit, \
             a, b, mode, seed, noise, pairs, stopped, file) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            &[
                text(key),
                text(&ab.started_utc),
                Value::Text(ab.finished_utc.clone()),
                Value::Int(Some(i64::from(ab.partial))),
                text(ab.host_name()),
                text(&m.cpu.model_name),
                text(&m.kernel.release),
                text(&ab.osprim.commit),
                text(&ab.a.describe()),
                text(&ab.b.describe()),
                Value::Text(mode),
                text(&ab.design.seed.to_string()),
                Value::Real(Some(ab.design.noise)),
                Value::Int(Some(ab.pairs.len() as i64)),
                text(&ab.stopped),
                Value::Text(file.map(|f| f.display().to_string())),
            ],
        )?;
        for (i, r) in ab.rows.iter().enumerate() {
            self.db.execute(
                "INSERT INTO ab_results (run_key, position, bench_id, params, unit, verdict, ratio, ci_low, ci_high, \
                 pairs, decided_after) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                &[
                    text(key),
                    Value::Int(Some(i as i64)),
                    text(&r.id),
                    text(&serde_json::to_string(&r.params).unwrap_or_default()),
                    text(r.unit.symbol()),
                    text(&r.decision.verdict),
                    Value::Real(r.decision.ratio_ci95.and(r.decision.ratio)),
                    Value::Real(r.decision.ratio_ci95.map(|c| c[0])),
                    Value::Real(r.decision.ratio_ci95.map(|c| c[1])),
                    Value::Int(Some(r.pairs.len() as i64)),
                    Value::Int(r.decision.decided_after.map(|n| n as i64)),
                ],
            )?;
        }
        Ok(())
    }

    /// Every recorded A/B result whose id matches any of `patterns` (all without one), oldest
    /// first.
    pub fn ab_points(&mut self, patterns: &[String]) -> Result<Vec<AbPoint>, HistoryError> {
        let t = || Value::Text(None);
        let columns = [
            t(),
            t(),
            t(),
            t(),
            t(),
            t(),
            t(),
            t(),
            t(),
            t(),
            Value::Real(None),
            Value::Real(None),
            Value::Real(None),
            Value::Int(None),
            Value::Int(None),
            t(),
        ];
        let rows = self.db.query(
            "SELECT u.started_utc, u.host, u.kernel, u.a, u.b, u.mode, r.bench_id, r.params, r.unit, r.verdict, \
             r.ratio, r.ci_low, r.ci_high, r.pairs, r.decided_after, u.file \
             FROM ab_results r JOIN ab_runs u ON u.run_key = r.run_key ORDER BY u.started_utc, u.run_key, r.position",
            &[],
            &columns,
        )?;
        let s = |v: &Value| match v {
            Value::Text(Some(s)) => s.clone(),
            _ => String::new(),
        };
        let f = |v: &Value| match v {
            Value::Real(x) => *x,
            _ => None,
        };
        let i = |v: &Value| match v {
            Value::Int(x) => *x,
            _ => None,
        };
        Ok(rows
            .into_iter()
            .map(|r| AbPoint {
                started_utc: s(&r[0]),
                host: s(&r[1]),
                kernel: s(&r[2]),
                a: s(&r[3]),
                b: s(&r[4]),
                mode: s(&r[5]),
                id: s(&r[6]),
                params: s(&r[7]),
                unit: s(&r[8]),
                verdict: s(&r[9]),
                ratio: f(&r[10]),
                ratio_ci95: f(&r[11]).zip(f(&r[12])).map(|(a, b)| [a, b]),
                pairs: i(&r[13]).unwrap_or(0),
                decided: i(&r[14]).is_some(),
                file: match &r[15] {
                    Value::Text(x) => x.clone(),
                    _ => None,
                },
            })
            .filter(|p| patterns.is_empty() || patterns.iter().any(|pat| model::ids::matches(pat, &p.id)))
            .collect())
    }
}

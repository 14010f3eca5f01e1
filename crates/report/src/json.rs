//! The JSON writer: each document as the data it is, pretty-printed, one newline at the end.
//! A run is the result file itself (schema in `model`); the seed view is its rows
//! ([`super::seeds::SeedRow`]); a comparison is described in [`super::compare`].

use super::compare::Named;
use super::listing::Entry;
use super::seeds;
use super::write::{Writer, Written};
use super::{View, text};
use analysis::history::Point;
use analysis::history::changes::Report;
use model::RunFile;
use model::crosscheck::Crosscheck;
use serde::Serialize;

/// The JSON writer.
pub struct Json;

/// `value` pretty-printed, with a newline at the end.
fn pretty<T: Serialize + ?Sized>(value: &T) -> Written {
    Ok(serde_json::to_string_pretty(value)? + "\n")
}

impl Writer for Json {
    fn run(&self, run: &RunFile, _: &View) -> Written {
        pretty(run)
    }

    fn papers(&self, run: &RunFile, _: &View) -> Written {
        pretty(&seeds::rows(run))
    }

    fn comparison(&self, all: &[Named], _: &View) -> Written {
        pretty(&comparison(all))
    }

    fn history(&self, points: &[Point], _: &View) -> Written {
        pretty(points)
    }

    fn changes(&self, report: &Report, _: &View) -> Written {
        pretty(report)
    }

    fn crosscheck(&self, c: &Crosscheck, _: &View) -> Written {
        pretty(c)
    }

    fn catalogue(&self, entries: &[Entry], _: &View) -> Written {
        pretty(entries)
    }

    /// The pairs as text: the machine's JSON is its own structure, which the caller has.
    fn machine(&self, fields: &[(String, String)]) -> String {
        text::Text.machine(fields)
    }
}

/// The comparisons as one array, each with its files' names and start times.
fn comparison(all: &[Named]) -> serde_json::Value {
    serde_json::Value::Array(
        all.iter()
            .map(|n| {
                serde_json::json!({
                    "base": n.base_name,
                    "new": n.new_name,
                    "base_started_utc": n.base.started_utc,
                    "new_started_utc": n.new.started_utc,
                    "base_host": n.base.host_name(),
                    "new_host": n.new.host_name(),
                    "comparison": n.comparison,
                })
            })
            .collect(),
    )
}

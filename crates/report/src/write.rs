//! One writer per format, one registration point. Every document osprim shows (a run, the
//! seed papers beside it, a comparison, history and its change points, a crosscheck, the
//! catalogue of benchmarks, the machine) goes through [`Writer`]; each format implements it
//! in its own file (`text.rs`, `json.rs`, `csv.rs`, `markdown.rs`, `latex.rs`), and
//! [`crate::writer`] is the one place a [`crate::Format`] meets its writer. A new format is one
//! new file with a `Writer` and one line in [`crate::writer`] (beside its `Format` variant).
//!
//! Writers only format: the documents' contents come from their modules (`seeds::rows`, the
//! run's families and lines in `document`, `analysis::compare`, `store::history`).

use super::View;
use super::compare::Named;
use super::listing::Entry;
use analysis::history::Point;
use analysis::history::changes::Report;
use model::RunFile;
use model::crosscheck::Crosscheck;

/// What writing can fail with: only JSON's serialisation can.
pub type Written = Result<String, serde_json::Error>;

/// One output format: a method per document.
pub trait Writer: Sync {
    /// A run's results.
    fn run(&self, run: &RunFile, view: &View) -> Written;
    /// The seed papers' tables beside a run's results.
    fn papers(&self, run: &RunFile, view: &View) -> Written;
    /// Every comparison of `osprim compare` (or `run --compare`).
    fn comparison(&self, all: &[Named], view: &View) -> Written;
    /// `osprim history`: each result as a series over the runs that recorded it.
    fn history(&self, points: &[Point], view: &View) -> Written;
    /// `osprim history --changes`: where each series changed level.
    fn changes(&self, report: &Report, view: &View) -> Written;
    /// `osprim crosscheck`'s rows.
    fn crosscheck(&self, c: &Crosscheck, view: &View) -> Written;
    /// `osprim list`: the catalogue of benchmarks; a table keeps to `view.width`.
    fn catalogue(&self, entries: &[Entry], view: &View) -> Written;
    /// `osprim env`: the machine as key–value pairs (JSON is the caller's, which has the
    /// machine's structure; this writer then lists the pairs as the text writer does).
    fn machine(&self, fields: &[(String, String)]) -> String;
}

//! Markdown (GitHub-flavoured pipe tables): a run's results, and the seed tables.

use super::View;
use crate::model::RunFile;

/// The results of `run` as Markdown.
pub fn render(run: &RunFile, _view: &View) -> String {
    let mut s = String::from("| benchmark | median |\n|---|---:|\n");
    for r in &run.results {
        let m = r.median().map(|m| r.unit.format(m)).unwrap_or_else(|| "-".into());
        s.push_str(&format!("| {} | {} |\n", r.id, m));
    }
    s
}

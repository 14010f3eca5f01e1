//! LaTeX (booktabs): a run's results, and the seed tables ready to paste into a paper.

use super::View;
use crate::model::RunFile;

/// The results of `run` as a LaTeX `tabular` with booktabs rules.
pub fn render(run: &RunFile, _view: &View) -> String {
    let mut s = String::from("\\begin{tabular}{lr}\n\\toprule\nbenchmark & median \\\\\n\\midrule\n");
    for r in &run.results {
        let m = r.median().map(|m| r.unit.format(m)).unwrap_or_else(|| "-".into());
        s.push_str(&format!("\\texttt{{{}}} & {} \\\\\n", r.id.replace('_', "\\_"), m));
    }
    s.push_str("\\bottomrule\n\\end{tabular}\n");
    s
}

//! The text writer: every document for people at a terminal, fitted to the view's width. Each
//! document's table lives with it (`table` with `header`, `marks`, `matrix` and `sweep` for a
//! run; `seeds` for the papers; `compare`, `history`, `crosscheck`, `listing`), all laid out
//! by [`super::layout`].

use super::compare::{self, Named};
use super::listing::{self, Entry};
use super::write::{Writer, Written};
use super::{View, crosscheck, history, seeds, stability, table};
use analysis::history::Point;
use analysis::history::changes::Report;
use model::RunFile;
use model::crosscheck::Crosscheck;

/// The text writer.
pub struct Text;

impl Writer for Text {
    fn run(&self, run: &RunFile, view: &View) -> Written {
        if run.results.is_empty() && !run.stability.is_empty() {
            return Ok(run.stability.iter().map(|s| stability::text(s, view) + "\n").collect::<Vec<_>>().join("\n"));
        }
        let mut out = table::render(run, view);
        for s in &run.stability {
            out.push('\n');
            out.push_str(&stability::text(s, view));
            out.push('\n');
        }
        Ok(out)
    }

    fn papers(&self, run: &RunFile, view: &View) -> Written {
        Ok(seeds::render(run, view))
    }

    fn comparison(&self, all: &[Named], view: &View) -> Written {
        let tables = all.iter().map(|n| compare::table(n, view)).collect::<Vec<_>>().join("\n");
        // A fleet (three runs or more) side by side first, then each pair.
        Ok(if all.len() > 1 { format!("{}\n{tables}", compare::side_by_side(all, view)) } else { tables })
    }

    fn history(&self, points: &[Point], view: &View) -> Written {
        Ok(history::table(points, view))
    }

    fn changes(&self, report: &Report, view: &View) -> Written {
        Ok(history::changes_table(report, view))
    }

    fn crosscheck(&self, c: &Crosscheck, view: &View) -> Written {
        Ok(crosscheck::table(c, view))
    }

    fn catalogue(&self, entries: &[Entry], view: &View) -> Written {
        Ok(listing::table(entries, view.width))
    }

    fn machine(&self, fields: &[(String, String)]) -> String {
        listing::pairs(fields)
    }
}

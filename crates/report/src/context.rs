//! What every part of one rendering of the run table shares: the run, the view, whether the
//! seed method's means are shown, and the footnotes numbered so far ([`super::marks`]).

use super::View;
use super::marks::{self, Marks, NoteKind, RowMarks, RowRef};
use model::{Row, RunFile};

/// What every part of one rendering shares: the run, the view and the footnotes so far.
pub struct Ctx<'a> {
    /// The run.
    pub run: &'a RunFile,
    /// Width, detail, colour.
    pub view: View,
    /// The seed method: means, not medians.
    pub seed: bool,
    /// The footnotes.
    pub marks: Marks,
    /// Notes more than one row has: said once under the table.
    pub shared: Vec<String>,
}

impl Ctx<'_> {
    /// The columns a line may take (unlimited with `--wide`).
    pub fn width(&self) -> usize {
        if self.view.wide { usize::MAX } else { self.view.width.max(20) }
    }

    /// The columns prose keeps to.
    pub fn prose(&self) -> usize {
        self.view.width.max(20)
    }

    /// The row's own notes to show under it (`--detail`, `--wide`); the shared ones are
    /// registered for the notes under the table, the rest counted as not shown.
    pub fn row_notes(&mut self, r: &Row, at: &RowRef) -> Vec<String> {
        let mut own = Vec::new();
        for n in &r.notes {
            match marks::note_kind(n) {
                NoteKind::Steal(_) | NoteKind::Scaled => {}
                NoteKind::Other if self.shared.contains(n) => self.marks.note(n, at),
                _ => own.push(n.clone()),
            }
        }
        if !(own.is_empty() || self.view.detail || self.view.wide) {
            self.marks.unshown_notes += 1;
            own.clear();
        }
        own
    }

    /// The markers of a row, numbered: (check column, flags column).
    pub fn numbered(&mut self, rm: &RowMarks, at: &RowRef) -> (Vec<usize>, Vec<usize>) {
        (self.marks.numbers(&rm.check, at), self.marks.numbers(&rm.flags, at))
    }

    /// The markers of a row, for a matrix cell or a sweep line: numbered, each row named.
    pub fn cell_marks(&mut self, r: &Row, at: &RowRef) -> (RowMarks, Vec<usize>, Vec<usize>) {
        let rm = marks::of(r);
        let (c, f) = self.numbered(&rm, at);
        (rm, c, f)
    }
}

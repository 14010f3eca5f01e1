//! A folding table, the seed view's shape: one leading space, the flex column wrapped to the
//! width left, and minor columns folded into an indented `↳` detail line under each row when
//! the flex column would get too narrow. Text wraps by [`Wrap::SEEDS`].

use super::{Align, Cell, Wrap, paint, width as text_width, wrap};
use std::fmt::Write;

/// A column of a folding table. The `flex` one wraps to what the width leaves; a `movable` one
/// goes into the row's detail line when the flex one would be too narrow.
#[derive(Clone, Debug)]
pub struct Column {
    /// Its header.
    pub header: &'static str,
    /// How its cells sit in it.
    pub align: Align,
    /// Whether it wraps (one column at most).
    pub flex: bool,
    /// Whether it may move into the detail line (a column of only `-` is not shown).
    pub movable: bool,
}

/// A row of a folding table: its cells and the detail line under it (may be empty).
#[derive(Clone, Debug)]
pub struct Row {
    /// One cell per column; `-` where there is nothing.
    pub cells: Vec<Cell>,
    /// Text under the row, after `↳`.
    pub detail: String,
}

/// The narrowest the flex column may get before other columns move out of its way.
const MIN_FLEX: usize = 24;

/// The table in `width` columns (`usize::MAX`: no limit): a space, then cells two spaces apart,
/// a rule under the header, each row's detail line under it, indented.
pub fn folded(columns: &[Column], lines: &[Row], width: usize, color: bool) -> String {
    let natural = |i: usize| {
        lines.iter().map(|l| text_width(&l.cells[i].text)).chain([text_width(columns[i].header)]).max().unwrap_or(0)
    };
    let mut shown: Vec<usize> =
        (0..columns.len()).filter(|&i| !columns[i].movable || lines.iter().any(|l| l.cells[i].text != "-")).collect();
    let flex = columns.iter().position(|c| c.flex);
    let widths = |shown: &[usize]| -> (Vec<usize>, usize) {
        let w: Vec<usize> = shown.iter().map(|&i| natural(i)).collect();
        let total = 1 + w.iter().sum::<usize>() + 2 * w.len().saturating_sub(1);
        (w, total)
    };
    let (mut w, mut total) = widths(&shown);
    // Move columns out, rightmost movable first, while the flex column would be too narrow.
    while total > width {
        let Some(f) = flex.and_then(|f| shown.iter().position(|&i| i == f)) else { break };
        let room = width.saturating_sub(total - w[f]);
        if room >= MIN_FLEX.min(w[f]) {
            w[f] = room;
            break;
        }
        // Movable columns first; when even that is not enough (a very narrow terminal), every
        // column but the operation goes into the detail line.
        let pos =
            shown.iter().rposition(|&i| columns[i].movable).or_else(|| shown.iter().rposition(|&i| !columns[i].flex));
        let Some(pos) = pos.filter(|_| shown.len() > 1) else {
            w[f] = room.max(1);
            break;
        };
        shown.remove(pos);
        (w, total) = widths(&shown);
    }
    let moved: Vec<usize> = (0..columns.len()).filter(|i| !shown.contains(i)).collect();

    let mut out = String::new();
    let emit = |out: &mut String, cells: Vec<Cell>| {
        let mut line = String::from(" ");
        for (k, Cell { text, style }) in cells.iter().enumerate() {
            let pad = w[k].saturating_sub(text_width(text));
            let last = k + 1 == cells.len();
            if k > 0 {
                line.push_str("  ");
            }
            match columns[shown[k]].align {
                Align::Right => {
                    line.push_str(&" ".repeat(pad));
                    line.push_str(&paint(text, *style, color));
                }
                Align::Left => {
                    line.push_str(&paint(text, *style, color));
                    if !last {
                        line.push_str(&" ".repeat(pad));
                    }
                }
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    };
    emit(&mut out, shown.iter().map(|&i| Cell::plain(columns[i].header)).collect());
    let rule_width = w.iter().sum::<usize>() + 2 * w.len().saturating_sub(1);
    let _ = writeln!(out, " {}", "─".repeat(rule_width));
    for l in lines {
        // The flex cell wraps; the other cells stand on its first line.
        let wrapped: Vec<Vec<String>> = shown
            .iter()
            .enumerate()
            .map(|(k, &i)| {
                if Some(i) == flex && text_width(&l.cells[i].text) > w[k] {
                    wrap(&l.cells[i].text, w[k], "", "  ", Wrap::SEEDS)
                } else {
                    vec![l.cells[i].text.clone()]
                }
            })
            .collect();
        let height = wrapped.iter().map(Vec::len).max().unwrap_or(1);
        for j in 0..height {
            let cells = shown
                .iter()
                .enumerate()
                .map(|(k, &i)| Cell::styled(wrapped[k].get(j).cloned().unwrap_or_default(), l.cells[i].style))
                .collect();
            emit(&mut out, cells);
        }
        let mut detail = l.detail.clone();
        for &i in &moved {
            if l.cells[i].text != "-" {
                let sep = if detail.is_empty() { "" } else { " · " };
                let _ = write!(detail, "{sep}{} {}", columns[i].header, l.cells[i].text);
            }
        }
        if !detail.is_empty() {
            for d in wrap(&detail, width, "   ↳ ", "     ", Wrap::SEEDS) {
                out.push_str(&d);
                out.push('\n');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_narrow_table_wraps_its_flex_column_and_folds_movable_ones_into_the_detail_line() {
        let column = |header, flex, movable| Column { header, align: Align::Left, flex, movable };
        let columns = [column("operation", true, false), column("then", false, false), column("median", false, true)];
        let rows = [Row {
            cells: vec![
                Cell::plain("a rather long operation name that wraps"),
                Cell::plain("1 µs"),
                Cell::plain("2 µs"),
            ],
            detail: "bench.id".into(),
        }];
        let wide = folded(&columns, &rows, usize::MAX, false);
        assert!(wide.lines().next().is_some_and(|l| l.starts_with(" operation") && l.ends_with("median")), "{wide}");
        let narrow = folded(&columns, &rows, 34, false);
        let lines: Vec<&str> = narrow.lines().collect();
        assert!(lines.iter().all(|l| text_width(l) <= 34), "{narrow}");
        assert_eq!(lines[0].split_whitespace().collect::<Vec<_>>(), ["operation", "then"], "{narrow}");
        assert!(lines[2].starts_with(" a rather") && lines[3].starts_with("   "), "the flex column wraps: {narrow}");
        assert_eq!(lines.last(), Some(&"   ↳ bench.id · median 2 µs"), "{narrow}");
    }
}

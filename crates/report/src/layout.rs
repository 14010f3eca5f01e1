//! Plain-text layout for the run table and the seed view: cells padded into columns, prose
//! wrapped to a width by a policy ([`Wrap`]), text abbreviated without cutting a number, and
//! colour applied last. The run table is a [`Grid`]; the seed view's tables are [`folding`]
//! tables. Widths count characters, never ANSI escape codes; every line comes out trimmed.

pub mod folding;

/// How a piece of text is coloured when colour is on.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Style {
    /// No colour.
    #[default]
    Plain,
    /// Secondary text: the header, family headings, sub-lines.
    Dim,
    /// A failure: a failed check or a failed benchmark.
    Bad,
    /// A warning: flag markers, a skipped benchmark; in the seed view, today slower.
    Warn,
    /// Better than before: in the seed view, today faster.
    Good,
    /// A heading.
    Bold,
}

/// `text` in `style`'s ANSI colour when `color` is on; unchanged otherwise.
pub fn paint(text: &str, style: Style, color: bool) -> String {
    let code = match style {
        _ if !color || text.is_empty() => return text.to_string(),
        Style::Plain => return text.to_string(),
        Style::Dim => "2",
        Style::Bad => "1;31",
        Style::Warn => "33",
        Style::Good => "32",
        Style::Bold => "1",
    };
    format!("\x1b[{code}m{text}\x1b[0m")
}

/// The columns `s` takes on a terminal: its characters outside ANSI escape sequences.
pub fn width(s: &str) -> usize {
    let mut n = 0;
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c == '\x1b' {
            // CSI: ESC [ parameters… final byte in @..~
            for d in chars.by_ref() {
                if ('@'..='~').contains(&d) && d != '[' {
                    break;
                }
            }
        } else {
            n += 1;
        }
    }
    n
}

/// `s` shortened to at most `max` columns, ending in `…`, cut where no number is split: a
/// cut never falls between two digits, nor after a digit before a decimal point.
pub fn abbreviate(s: &str, max: usize) -> String {
    let chars: Vec<char> = s.chars().collect();
    if chars.len() <= max {
        return s.to_string();
    }
    if max == 0 {
        return String::new();
    }
    let mut cut = max - 1;
    let digit = |j: usize| chars.get(j).is_some_and(|c| c.is_ascii_digit());
    // A digit, or a decimal point or thousands comma between digits.
    let numeric = |j: usize| digit(j) || (matches!(chars[j], '.' | ',') && j > 0 && digit(j - 1) && digit(j + 1));
    let in_number = |i: usize| numeric(i - 1) && numeric(i);
    while cut > 0 && in_number(cut) {
        cut -= 1;
    }
    let kept: String = chars[..cut].iter().collect();
    format!("{}…", kept.trim_end())
}

/// How [`wrap`] breaks text into lines: what becomes of a word too long for a line, and
/// which units stay on the line of their number.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Wrap {
    /// A word too long for a line.
    pub long: Long,
    /// How text splits into words, and which words stay with the one before.
    pub glue: Glue,
}

impl Wrap {
    /// The run table's prose: over-long words abbreviated, units kept with a number.
    pub const TABLE: Wrap = Wrap { long: Long::Shorten, glue: Glue::UnitAfterDigit };
    /// The seed view's prose: over-long words cut, units and "faster" kept with a number.
    pub const SEEDS: Wrap = Wrap { long: Long::Cut, glue: Glue::UnitAfterNumber };
}

/// What becomes of a word too long for a line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Long {
    /// Abbreviated to the room left, ending in `…` ([`abbreviate`]); nothing is carried over.
    Shorten,
    /// Cut at the room left and carried on the next line; a word too long for any line is cut
    /// even where a shorter line already stands (when at least 8 columns are left).
    Cut,
}

/// How text splits into words and which words are glued to the one before.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Glue {
    /// Words are split at spaces; `12 %`, `3 µs`, `4 KiB` are one word: a unit of [`UNITS`]
    /// after a word ending in a digit.
    UnitAfterDigit,
    /// Words are split at any white space; `18 µs` and `46.4× faster` are one word: a unit of
    /// [`NUMBER_UNITS`] after a word that reads as a number, a comparison of [`RATIO_WORDS`]
    /// after one ending in `×`.
    UnitAfterNumber,
}

/// `text` flowed into lines of at most `max` columns, broken at spaces: the first line starts
/// with `first`, later ones with `rest` (a hanging indent). A word too long for a line is
/// abbreviated ([`abbreviate`]). Lines are trimmed.
pub fn flow(text: &str, max: usize, first: &str, rest: &str) -> Vec<String> {
    wrap(text, max, first, rest, Wrap::TABLE)
}

/// `text` broken into lines of at most `max` columns by `policy`: the first line starts with
/// `first`, later ones with `rest` (a hanging indent). Lines are trimmed; there is one line at
/// least.
pub fn wrap(text: &str, max: usize, first: &str, rest: &str, policy: Wrap) -> Vec<String> {
    let mut lines = Vec::new();
    let mut line = first.to_string();
    let mut fresh = true;
    let mut new_line = |line: &mut String, fresh: &mut bool| {
        lines.push(std::mem::replace(line, rest.to_string()).trim_end().to_string());
        *fresh = true;
    };
    for mut word in glued(text, policy.glue) {
        loop {
            let room = max.saturating_sub(width(&line) + usize::from(!fresh));
            let w = width(&word);
            if w <= room {
                if !fresh {
                    line.push(' ');
                }
                line.push_str(&word);
                fresh = false;
                break;
            }
            let too_long = w > max.saturating_sub(width(rest)).max(1) && room >= 8;
            match policy.long {
                Long::Shorten if fresh => {
                    line.push_str(&abbreviate(&word, room.max(1)));
                    fresh = false;
                    break;
                }
                Long::Cut if fresh || too_long => {
                    let cut = room.max(1);
                    if !fresh {
                        line.push(' ');
                    }
                    line.extend(word.chars().take(cut));
                    word = word.chars().skip(cut).collect();
                    new_line(&mut line, &mut fresh);
                    if word.is_empty() {
                        break;
                    }
                }
                _ => new_line(&mut line, &mut fresh),
            }
        }
    }
    if !fresh || lines.is_empty() {
        lines.push(line.trim_end().to_string());
    }
    lines
}

/// Units a line never starts with after a word ending in a digit ([`Glue::UnitAfterDigit`]).
pub const UNITS: [&str; 11] = ["%", "ns", "µs", "ms", "s", "B", "KiB", "MiB", "GB/s", "%)", "%,"];

/// Units a line never starts with after a number ([`Glue::UnitAfterNumber`]).
pub const NUMBER_UNITS: [&str; 6] = ["µs", "ns", "ms", "cycles", "B", "MHz"];

/// Words a line never starts with after a ratio `N×` ([`Glue::UnitAfterNumber`]).
pub const RATIO_WORDS: [&str; 4] = ["faster", "slower", "more", "less"];

/// The words of `text`, each unit kept with the number before it by `glue`.
fn glued(text: &str, glue: Glue) -> Vec<String> {
    let split: Vec<&str> = match glue {
        Glue::UnitAfterDigit => text.split(' ').filter(|w| !w.is_empty()).collect(),
        Glue::UnitAfterNumber => text.split_whitespace().collect(),
    };
    let mut words: Vec<String> = Vec::new();
    for w in split {
        let stays = words.last().is_some_and(|prev| match glue {
            Glue::UnitAfterDigit => {
                let unit = UNITS.iter().any(|u| w.strip_suffix([',', ';', ')', '.']).unwrap_or(w) == *u || w == *u);
                unit && prev.ends_with(|c: char| c.is_ascii_digit())
            }
            Glue::UnitAfterNumber => {
                let unit = w.trim_end_matches([',', ';', '.', ')', ':']);
                prev.parse::<f64>().is_ok() && NUMBER_UNITS.contains(&unit)
                    || prev.ends_with('×') && RATIO_WORDS.contains(&unit)
            }
        });
        match words.last_mut() {
            Some(prev) if stays => {
                prev.push(' ');
                prev.push_str(w);
            }
            _ => words.push(w.to_string()),
        }
    }
    words
}

/// `n` in superscript digits: `¹²`.
pub fn superscript(n: usize) -> String {
    const DIGITS: [char; 10] = ['⁰', '¹', '²', '³', '⁴', '⁵', '⁶', '⁷', '⁸', '⁹'];
    n.to_string().chars().map(|c| c.to_digit(10).map_or(c, |d| DIGITS[d as usize])).collect()
}

/// Footnote references in order, `¹ ³`, or nothing.
pub fn refs(numbers: &[usize]) -> String {
    let mut n = numbers.to_vec();
    n.sort_unstable();
    n.dedup();
    n.iter().map(|&n| superscript(n)).collect::<Vec<_>>().join(" ")
}

/// One cell: plain text and its colour.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Cell {
    /// The text, without escape codes.
    pub text: String,
    /// Its colour.
    pub style: Style,
}

impl Cell {
    /// Uncoloured text.
    pub fn plain(text: impl Into<String>) -> Cell {
        Cell { text: text.into(), style: Style::Plain }
    }

    /// Coloured text.
    pub fn styled(text: impl Into<String>, style: Style) -> Cell {
        Cell { text: text.into(), style }
    }
}

/// How a column's cells sit in it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Align {
    /// Text: padded on the right.
    Left,
    /// Figures: padded on the left.
    Right,
}

/// A line of a [`Grid`].
#[derive(Clone, Debug)]
pub enum Line {
    /// One cell per column.
    Cells(Vec<Cell>),
    /// Text across the table (a heading, a breakdown, a note), flowed to the width with a
    /// hanging indent; it does not widen any column.
    Span { indent: usize, cell: Cell },
    /// Where the grid is cut: the parts are printed apart, each under its own header.
    Cut,
}

/// Columns under a header: widths fit the widest cell; columns are dropped (lowest priority
/// first) and one column abbreviated until the lines fit the width.
#[derive(Clone, Debug)]
pub struct Grid {
    /// The header: lines of cells (none: no header and no rule).
    pub header: Vec<Vec<Cell>>,
    /// How each column aligns.
    pub align: Vec<Align>,
    /// The body.
    pub lines: Vec<Line>,
    /// Which columns are shown.
    shown: Vec<bool>,
    /// The most columns a cell of column `i` takes (after abbreviation).
    cap: Vec<usize>,
}

/// Columns between two cells.
pub const GAP: usize = 2;

impl Grid {
    /// An empty grid with these header lines.
    pub fn new(header: Vec<Vec<Cell>>, align: Vec<Align>) -> Grid {
        let n = align.len();
        Grid { header, align, lines: Vec::new(), shown: vec![true; n], cap: vec![usize::MAX; n] }
    }

    /// Adds a line.
    pub fn push(&mut self, line: Line) {
        self.lines.push(line);
    }

    fn rows(&self) -> impl Iterator<Item = &Vec<Cell>> {
        self.header.iter().chain(self.lines.iter().filter_map(|l| match l {
            Line::Cells(c) => Some(c),
            _ => None,
        }))
    }

    /// The width of each column, 0 for a hidden one.
    pub fn widths(&self) -> Vec<usize> {
        let mut w = vec![0; self.align.len()];
        for row in self.rows() {
            for (i, c) in row.iter().enumerate().take(w.len()) {
                w[i] = w[i].max(width(&c.text).min(self.cap[i]));
            }
        }
        w.iter().zip(&self.shown).map(|(&w, &s)| if s { w } else { 0 }).collect()
    }

    /// The width of a full line of cells.
    pub fn total(&self) -> usize {
        let w = self.widths();
        let n = w.iter().zip(&self.shown).filter(|(_, s)| **s).count();
        w.iter().sum::<usize>() + GAP * n.saturating_sub(1)
    }

    /// Fits the grid into `max` columns: hides the columns of `drop` in order while the lines
    /// are too wide, then abbreviates column `shrink` (never below 8 columns).
    pub fn fit(&mut self, max: usize, drop: &[usize], shrink: usize) {
        for &i in drop {
            if self.total() <= max {
                return;
            }
            if let Some(s) = self.shown.get_mut(i) {
                *s = false;
            }
        }
        let over = self.total().saturating_sub(max);
        if over > 0 && shrink < self.cap.len() {
            let w = self.widths()[shrink];
            self.cap[shrink] = w.saturating_sub(over).max(8);
        }
    }

    /// The lines, in parts split at each [`Line::Cut`], each part under the header and a
    /// rule; spans flowed to `max` columns.
    pub fn render(&self, max: usize, color: bool) -> Vec<Vec<String>> {
        let widths = self.widths();
        let mut top: Vec<String> = self.header.iter().map(|h| self.render_cells(h, &widths, color)).collect();
        if !top.is_empty() {
            top.push(paint(&"─".repeat(self.total()), Style::Dim, color));
        }
        let top = || top.clone();
        let head = self.header.len() + usize::from(!self.header.is_empty());
        let mut parts = vec![top()];
        for line in &self.lines {
            let part = parts.last_mut().expect("one part at least");
            match line {
                Line::Cells(cells) => part.push(self.render_cells(cells, &widths, color)),
                Line::Span { indent, cell } => {
                    let (first, rest) = (" ".repeat(*indent), " ".repeat(indent + 2));
                    for l in flow(&cell.text, max, &first, &rest) {
                        let body = l.trim_start();
                        let lead = &l[..l.len() - body.len()];
                        part.push(format!("{lead}{}", paint(body, cell.style, color)));
                    }
                }
                Line::Cut => parts.push(top()),
            }
        }
        parts.retain(|p| p.len() > head);
        parts
    }

    fn render_cells(&self, cells: &[Cell], widths: &[usize], color: bool) -> String {
        let mut out = String::new();
        let mut first = true;
        for (i, &w) in widths.iter().enumerate() {
            if !self.shown[i] {
                continue;
            }
            if !first {
                out.push_str(&" ".repeat(GAP));
            }
            first = false;
            let text = cells.get(i).map(|c| abbreviate(&c.text, w)).unwrap_or_default();
            let style = cells.get(i).map(|c| c.style).unwrap_or_default();
            let pad = " ".repeat(w.saturating_sub(width(&text)));
            let body = paint(&text, style, color);
            match self.align.get(i).copied().unwrap_or(Align::Left) {
                Align::Left => out.push_str(&format!("{body}{pad}")),
                Align::Right => out.push_str(&format!("{pad}{body}")),
            }
        }
        out.trim_end().to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_codes_take_no_width() {
        assert_eq!(width(&paint("FAILED", Style::Bad, true)), 6);
        assert_eq!(paint("FAILED", Style::Bad, false), "FAILED");
        assert_eq!(width("± 4.2 % µs ¹²"), 13);
    }

    #[test]
    fn abbreviations_never_split_a_number() {
        assert_eq!(abbreviate("fault.file.read", 20), "fault.file.read");
        assert_eq!(abbreviate("objects 10000", 11), "objects…");
        assert_eq!(abbreviate("size 12.50 KiB", 9), "size…");
        assert_eq!(abbreviate("size 12.50 KiB", 12), "size 12.50…");
        assert_eq!(abbreviate("10,000 objects", 5), "…");
        assert_eq!(abbreviate("abcdef", 4), "abc…");
        assert_eq!(abbreviate("12345", 3), "…");
        assert_eq!(abbreviate("x", 0), "");
    }

    #[test]
    fn prose_flows_within_the_width_with_a_hanging_indent() {
        let text = "one two three four five six seven eight nine ten eleven twelve";
        let lines = flow(text, 20, "¹ ", "  ");
        assert!(lines.iter().all(|l| width(l) <= 20), "{lines:?}");
        assert!(lines[0].starts_with("¹ one"));
        assert!(lines[1].starts_with("  "));
        assert_eq!(lines.join(" ").split_whitespace().count(), 13);
        assert_eq!(flow("", 10, "  ", "  "), vec![String::new()]);
        assert!(flow(&"x".repeat(50), 10, "", "").iter().all(|l| width(l) <= 10));
        assert_eq!(flow("aaaa −6.1 %); b", 10, "", ""), ["aaaa", "−6.1 %); b"], "a unit stays with its number");
    }

    #[test]
    fn the_seed_policy_cuts_long_words_and_keeps_faster_with_its_ratio() {
        let cut = wrap(&"x".repeat(25), 10, "", "", Wrap::SEEDS);
        assert_eq!(cut, ["x".repeat(10), "x".repeat(10), "x".repeat(5)], "cut, not shortened");
        assert_eq!(wrap("aaaa 46.4× faster", 12, "", "", Wrap::SEEDS), ["aaaa", "46.4× faster"]);
        assert_eq!(wrap("aaaa 12 cycles", 10, "", "", Wrap::SEEDS), ["aaaa", "12 cycles"]);
        assert_eq!(wrap("aaaa 12 cycles", 10, "", "", Wrap::TABLE), ["aaaa 12", "cycles"], "not a run-table unit");
        assert_eq!(wrap("", 10, "  ", "  ", Wrap::SEEDS), [""]);
    }

    #[test]
    fn a_grid_drops_columns_then_abbreviates_to_fit() {
        let mut g = Grid::new(
            vec![vec![Cell::plain("name"), Cell::plain("a"), Cell::plain("b")]],
            vec![Align::Left, Align::Right, Align::Right],
        );
        g.push(Line::Cells(vec![
            Cell::plain("a long benchmark name"),
            Cell::plain("1.000 µs"),
            Cell::plain("2.000 µs"),
        ]));
        g.push(Line::Span { indent: 2, cell: Cell::plain("a note that is long enough to be flowed over lines") });
        assert_eq!(g.total(), 21 + 2 + 8 + 2 + 8);
        g.fit(25, &[2], 0);
        let lines = g.render(25, false).concat();
        assert!(lines.iter().all(|l| width(l) <= 25 && !l.ends_with(' ')), "{lines:#?}");
        assert!(lines.iter().any(|l| l.ends_with("1.000 µs")), "{lines:#?}");
        assert!(!lines.iter().any(|l| l.contains("2.000")), "column b dropped: {lines:#?}");
        assert_eq!(superscript(12), "¹²");
        assert_eq!(refs(&[3, 1]), "¹ ³");
    }
}

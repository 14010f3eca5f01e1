//! The one Markdown escaper and the one LaTeX escaper every format uses.
//!
//! Markdown text is escaped for where it goes ([`Md`]): a table cell of a run, the seed
//! view's prose and cells (which escape every mark Markdown may read as markup), a cell of
//! text osprim wrote itself (the pipe alone), or a catalogue cell that keeps its line breaks.
//! LaTeX text ([`latex`]) escapes every special and spells out the symbols osprim writes.

/// Where a piece of Markdown goes, which decides what is escaped in it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Md {
    /// A run's or a history's table cell or line: `\`, `|`, `*` and backticks escaped, `<` as
    /// `&lt;`, line breaks as spaces.
    Cell,
    /// The seed view's cells and prose: also `_`, `[`, `]`, `<`, `>` and `#` escaped with a
    /// backslash; line breaks as spaces.
    Prose,
    /// A cell of text osprim composed itself (a comparison, a crosscheck): the pipe alone.
    Pipe,
    /// A catalogue cell: the pipe escaped, line breaks as `<br>`.
    Lines,
}

impl Md {
    /// `s` as Markdown text of this kind.
    pub fn escape(self, s: &str) -> String {
        let mut out = String::with_capacity(s.len() + s.len() / 8);
        for c in s.chars() {
            match (self, c) {
                (_, '|') => out.push_str("\\|"),
                (Md::Cell | Md::Prose, '\\' | '*' | '`') => {
                    out.push('\\');
                    out.push(c);
                }
                (Md::Prose, '_' | '[' | ']' | '<' | '>' | '#') => {
                    out.push('\\');
                    out.push(c);
                }
                (Md::Cell, '<') => out.push_str("&lt;"),
                (Md::Cell | Md::Prose, '\n' | '\r') => out.push(' '),
                (Md::Lines, '\n') => out.push_str("<br>"),
                _ => out.push(c),
            }
        }
        out
    }

    /// `s` as inline code, the pipe escaped (GitHub's tables require it even there). A run's
    /// id with a backtick or a line break is escaped text instead; in the seed view a backtick
    /// becomes `'`.
    pub fn code(self, s: &str) -> String {
        match self {
            Md::Prose => format!("`{}`", s.replace('|', "\\|").replace('`', "'")),
            _ if s.contains('`') || s.contains('\n') => self.escape(s),
            _ => format!("`{}`", s.replace('|', "\\|")),
        }
    }
}

/// Text for LaTeX's text mode: every special escaped, the symbols osprim writes spelled out.
pub fn latex(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + s.len() / 8);
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' => out.push_str("\\textbackslash{}"),
            '&' | '%' | '$' | '#' | '_' | '{' | '}' => {
                out.push('\\');
                out.push(c);
            }
            '~' => out.push_str("\\textasciitilde{}"),
            '^' => out.push_str("\\textasciicircum{}"),
            '<' => out.push_str("\\textless{}"),
            '>' => out.push_str("\\textgreater{}"),
            '|' => out.push_str("\\textbar{}"),
            '"' => out.push_str("''"),
            // `--` would be an en dash.
            '-' if chars.peek() == Some(&'-') => out.push_str("-{}"),
            '\n' | '\r' | '\t' => out.push(' '),
            'µ' | 'μ' => out.push_str("\\textmu{}"),
            '−' => out.push_str("$-$"),
            '×' => out.push_str("$\\times$"),
            '→' => out.push_str("$\\rightarrow$"),
            '←' => out.push_str("$\\leftarrow$"),
            '↳' => out.push_str("$\\hookrightarrow$"),
            '±' => out.push_str("$\\pm$"),
            '≤' => out.push_str("$\\leq$"),
            '≥' => out.push_str("$\\geq$"),
            '≈' => out.push_str("$\\approx$"),
            '≠' => out.push_str("$\\neq$"),
            '∞' => out.push_str("$\\infty$"),
            '√' => out.push_str("$\\surd$"),
            '·' | '•' => out.push_str("$\\cdot$"),
            '÷' => out.push_str("$\\div$"),
            'χ' => out.push_str("$\\chi$"),
            'σ' => out.push_str("$\\sigma$"),
            'Σ' => out.push_str("$\\Sigma$"),
            '²' => out.push_str("\\textsuperscript{2}"),
            '³' => out.push_str("\\textsuperscript{3}"),
            '–' => out.push_str("--"),
            '—' => out.push_str("---"),
            '…' => out.push_str("\\ldots{}"),
            '‘' => out.push('`'),
            '’' => out.push('\''),
            '“' => out.push_str("``"),
            '”' => out.push_str("''"),
            '\u{a0}' => out.push('~'),
            '°' => out.push_str("\\textdegree{}"),
            c if c.is_ascii_graphic() || c == ' ' => out.push(c),
            // Latin-1's letters (é, ü, ß, …), which pdflatex's utf8 input sets up.
            c if ('\u{c0}'..='\u{ff}').contains(&c) && c != '÷' => out.push(c),
            _ => out.push('?'),
        }
    }
    out
}

/// Text for a LaTeX comment line: its `%` escaped.
pub fn latex_comment(s: &str) -> String {
    s.replace('%', "\\%")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_of_markdown_escapes_what_it_must() {
        let s = "a|b *c* _d_ [e] <f> #g `h` \\i\nj";
        assert_eq!(Md::Cell.escape(s), "a\\|b \\*c\\* _d_ [e] &lt;f> #g \\`h\\` \\\\i j");
        assert_eq!(Md::Prose.escape(s), "a\\|b \\*c\\* \\_d\\_ \\[e\\] \\<f\\> \\#g \\`h\\` \\\\i j");
        assert_eq!(Md::Pipe.escape(s), "a\\|b *c* _d_ [e] <f> #g `h` \\i\nj");
        assert_eq!(Md::Lines.escape(s), "a\\|b *c* _d_ [e] <f> #g `h` \\i<br>j");
        assert_eq!(Md::Cell.code("ipc.pipe|x"), "`ipc.pipe\\|x`");
        assert_eq!(Md::Cell.code("a`b"), "a\\`b");
        assert_eq!(Md::Prose.code("a`b|c"), "`a'b\\|c`");
        assert_eq!(latex_comment("5 % of it"), "5 \\% of it");
    }
}

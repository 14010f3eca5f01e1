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
        let mut chars = s.chars().peekable();
        while let Some(c) = chars.next() {
            // A `<` that could open an HTML tag, comment or declaration (`<script`, `</a`,
            // `<!--`, `<?`): never passed to a Markdown viewer; `|x| < 2 ns` is left alone.
            let opens_tag = c == '<' && chars.peek().is_some_and(|n| n.is_ascii_alphabetic() || "/!?".contains(*n));
            match (self, c) {
                (_, '|') => out.push_str("\\|"),
                (Md::Pipe | Md::Lines, '<') if opens_tag => out.push_str("&lt;"),
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
                (_, c) if c != '\n' && c != '\t' && is_unsafe_in_terminal(c) => push_visible(&mut out, c),
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
            // Inside a code span `<script>` would be shown, not run; escaped text is safe in
            // every viewer, and no id of osprim's holds these.
            _ if s.contains('`') || s.contains('\n') || s.contains('<') => self.escape(s),
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

/// Whether `c` may not reach a terminal as it is: a C0 or C1 control, DEL, or a bidirectional
/// override or isolate (which reorder what is shown).
fn is_unsafe_in_terminal(c: char) -> bool {
    c.is_control() || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// `c` spelled out: `\x1b`, `\x9b`, `\u{202e}`.
fn push_visible(out: &mut String, c: char) {
    let n = u32::from(c);
    if n < 0x100 { out.push_str(&format!("\\x{n:02x}")) } else { out.push_str(&format!("\\u{{{n:04x}}}")) }
}

/// Text for a terminal: every control character but the line break and the tab (ESC, DEL, C1,
/// carriage return…) and every bidirectional override spelled out (`\x1b`), so that nothing a
/// result file, a peer or a history holds (an id, a note, a host name) can move the cursor,
/// retitle the window or hide text. `keep_sgr`: osprim's own colours (`ESC [ digits;… m`) are
/// kept, every other escape sequence spelled out. The one sanitiser of text for the terminal.
pub fn terminal(s: &str, keep_sgr: bool) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(c) = rest.chars().next() {
        if c == '\u{1b}' && keep_sgr {
            let body = &rest[1..];
            if let Some(params) = body.strip_prefix('[')
                && let Some(end) = params.find(|d: char| !(d.is_ascii_digit() || d == ';'))
                && params[end..].starts_with('m')
            {
                let len = 2 + end + 1;
                out.push_str(&rest[..len]);
                rest = &rest[len..];
                continue;
            }
        }
        if c != '\n' && c != '\t' && is_unsafe_in_terminal(c) {
            push_visible(&mut out, c);
        } else {
            out.push(c);
        }
        rest = &rest[c.len_utf8()..];
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
        assert_eq!(Md::Pipe.escape(s), "a\\|b *c* _d_ [e] &lt;f> #g `h` \\i\nj");
        assert_eq!(Md::Lines.escape(s), "a\\|b *c* _d_ [e] &lt;f> #g `h` \\i<br>j");
        assert_eq!(Md::Pipe.escape("|x| < 2 ns"), "\\|x\\| < 2 ns");
        // No markup a viewer would run, and no escape sequence, in any kind of cell.
        for md in [Md::Cell, Md::Prose, Md::Pipe, Md::Lines] {
            let e = md.escape("<script>x</script> & \u{1b}]0;t\u{7}");
            // Every `<` that could open a tag is an entity, or backslash-escaped (the seed view).
            let bare = e.replace("\\<", "");
            assert!(!bare.contains("<s") && !bare.contains("</"), "{md:?}: {e}");
            assert!(!e.contains('\u{1b}') && !e.contains('\u{7}'), "{md:?}: {e}");
        }
        assert_eq!(Md::Cell.code("ipc.pipe|x"), "`ipc.pipe\\|x`");
        assert_eq!(Md::Cell.code("a`b"), "a\\`b");
        assert_eq!(Md::Prose.code("a`b|c"), "`a'b\\|c`");
        assert_eq!(latex_comment("5 % of it"), "5 \\% of it");
    }

    #[test]
    fn terminal_text_spells_out_controls_and_keeps_only_osprims_colours() {
        let s = "id\u{1b}]0;pwned\u{7} \u{1b}[2J\r\u{9b}31m \u{7f} \u{202e}x\ttab\nline";
        assert_eq!(terminal(s, false), "id\\x1b]0;pwned\\x07 \\x1b[2J\\x0d\\x9b31m \\x7f \\u{202e}x\ttab\nline");
        assert_eq!(terminal("\u{1b}[1;31mred\u{1b}[0m", true), "\u{1b}[1;31mred\u{1b}[0m");
        assert_eq!(terminal("\u{1b}[1;31mred\u{1b}[0m", false), "\\x1b[1;31mred\\x1b[0m");
        assert_eq!(terminal("\u{1b}[2J", true), "\\x1b[2J");
        assert_eq!(terminal("µs ±1 % ≥ plain", true), "µs ±1 % ≥ plain");
    }
}

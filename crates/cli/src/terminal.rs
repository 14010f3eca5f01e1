//! What the terminal allows: the width stdout keeps to and whether to colour it.
//!
//! A terminal's width comes from the kernel (`TIOCGWINSZ`, through `terminal_size`); when
//! stdout is a file or a pipe there is none, and reports keep to their fixed width. Colour
//! follows `--color`: `auto` colours a terminal unless `NO_COLOR` is set to anything non-empty
//! (no-color.org); `always` and `never` are what they say.

use std::io::IsTerminal;

/// `--color`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ColorChoice {
    /// A terminal, unless `NO_COLOR` is set.
    #[default]
    Auto,
    /// Always.
    Always,
    /// Never.
    Never,
}

/// The narrowest width a report is laid out for, whatever the terminal says.
pub const MIN_WIDTH: usize = 60;

/// The width of the terminal stdout is, if it is one (never below [`MIN_WIDTH`]).
pub fn stdout_width() -> Option<usize> {
    let stdout = std::io::stdout();
    if !stdout.is_terminal() {
        return None;
    }
    terminal_size::terminal_size_of(&stdout).map(|(w, _)| usize::from(w.0).max(MIN_WIDTH))
}

/// Whether stdout gets colour under `choice`.
pub fn stdout_color(choice: ColorChoice) -> bool {
    decide(choice, std::io::stdout().is_terminal(), no_color_set())
}

/// Whether stderr gets colour under `choice`.
pub fn stderr_color(choice: ColorChoice) -> bool {
    decide(choice, std::io::stderr().is_terminal(), no_color_set())
}

fn no_color_set() -> bool {
    std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty())
}

fn decide(choice: ColorChoice, terminal: bool, no_color: bool) -> bool {
    match choice {
        ColorChoice::Always => true,
        ColorChoice::Never => false,
        ColorChoice::Auto => terminal && !no_color,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colour_follows_the_choice_the_terminal_and_no_color() {
        assert!(decide(ColorChoice::Auto, true, false));
        assert!(!decide(ColorChoice::Auto, true, true), "NO_COLOR wins over auto");
        assert!(!decide(ColorChoice::Auto, false, false), "no colour into a pipe");
        assert!(decide(ColorChoice::Always, false, true), "--color always wins over NO_COLOR");
        assert!(!decide(ColorChoice::Never, true, false));
    }
}

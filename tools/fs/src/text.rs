//! Text as a file keeps it: its line endings and its final newline; and
//! the region a change touched, shown with line numbers as `read` shows
//! lines.

use std::fmt::Write as _;

/// Lines of context shown around a changed region.
const CONTEXT_LINES: usize = 3;

/// The most lines a result shows of a changed region.
pub(crate) const MAX_SHOWN_LINES: usize = 40;

/// The most bytes a result shows of a changed region.
pub(crate) const MAX_SHOWN_BYTES: usize = 8 * 1024;

/// How a file ends its lines.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum LineEndings {
    /// `\n` (or mixed: then the text is taken as it is).
    Lf,
    /// Every line ends in `\r\n`.
    Crlf,
}

impl LineEndings {
    /// The line endings of `text`: `Crlf` when it has line breaks and
    /// every one is `\r\n`.
    pub(crate) fn of(text: &str) -> Self {
        let breaks = memchr::memchr_iter(b'\n', text.as_bytes()).count();
        let crlf = text.matches("\r\n").count();
        if breaks > 0 && crlf == breaks {
            Self::Crlf
        } else {
            Self::Lf
        }
    }

    /// `text` (whose lines end in `\n`, as the model writes them) with
    /// these line endings.
    pub(crate) fn apply(self, text: &str) -> String {
        match self {
            Self::Lf => text.to_owned(),
            Self::Crlf => to_lf(text).replace('\n', "\r\n"),
        }
    }
}

/// `text` with `\r\n` made `\n`: what the model sees of a CRLF file (read
/// shows lines without their `\r`), and what its strings are matched in.
pub(crate) fn to_lf(text: &str) -> String {
    text.replace("\r\n", "\n")
}

/// `new` made to keep what `old`, the file's text before, had: its line
/// endings, and its final newline or its absence.
pub(crate) fn keep_style(old: &str, new: &str) -> String {
    let endings = LineEndings::of(old);
    let mut text = to_lf(new);
    if !old.is_empty() && !text.is_empty() {
        match (old.ends_with('\n'), text.ends_with('\n')) {
            (true, false) => text.push('\n'),
            (false, true) => {
                text.pop();
            }
            _ => {}
        }
    }
    if endings == LineEndings::Crlf || !new.contains("\r\n") {
        endings.apply(&text)
    } else {
        // The model wrote CRLF itself into a file that had none: its text.
        new.to_owned()
    }
}

/// The 1-based line of byte `offset` of `text`.
pub(crate) fn line_of(text: &str, offset: usize) -> usize {
    memchr::memchr_iter(b'\n', &text.as_bytes()[..offset]).count() + 1
}

/// The lines `new` changed against `old` (1-based, inclusive, in `new`):
/// after the lines both start with and before the lines both end with.
/// `None` when they are equal. An empty range (`last < first`) means
/// lines were only removed, before line `first`.
pub(crate) fn changed_lines(old: &str, new: &str) -> Option<(usize, usize)> {
    if old == new {
        return None;
    }
    let old_lines: Vec<&str> = old.split_inclusive('\n').collect();
    let new_lines: Vec<&str> = new.split_inclusive('\n').collect();
    let prefix = old_lines
        .iter()
        .zip(&new_lines)
        .take_while(|(a, b)| a == b)
        .count();
    let suffix = old_lines[prefix..]
        .iter()
        .rev()
        .zip(new_lines[prefix..].iter().rev())
        .take_while(|(a, b)| a == b)
        .count();
    Some((prefix + 1, new_lines.len() - suffix))
}

/// Lines `first..=last` of `text` (1-based) with a few lines of context,
/// numbered like `read`'s lines, at most [`MAX_SHOWN_LINES`] lines and
/// [`MAX_SHOWN_BYTES`] bytes; what is left out is said, with how to see
/// it.
pub(crate) fn show_lines(text: &str, first: usize, last: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    if lines.is_empty() {
        return "[the file is now empty]".to_owned();
    }
    let from = first.saturating_sub(CONTEXT_LINES).max(1);
    let to = (last.max(first) + CONTEXT_LINES).min(lines.len());
    let mut shown = String::new();
    let mut number = from;
    while number <= to {
        let line = lines[number - 1];
        if number - from >= MAX_SHOWN_LINES || shown.len() + line.len() + 8 > MAX_SHOWN_BYTES {
            let _ = write!(
                shown,
                "[… lines {number}-{to} are not shown; call read with offset={number} to see them]"
            );
            return shown;
        }
        let _ = writeln!(
            shown,
            "{number:>6}\t{}",
            line.strip_suffix('\r').unwrap_or(line)
        );
        number += 1;
    }
    shown.pop();
    shown
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_endings_are_crlf_only_when_every_break_is() {
        assert_eq!(LineEndings::of("a\r\nb\r\n"), LineEndings::Crlf);
        assert_eq!(LineEndings::of("a\r\nb\n"), LineEndings::Lf);
        assert_eq!(LineEndings::of("no break"), LineEndings::Lf);
    }

    #[test]
    fn a_rewrite_keeps_crlf_and_the_missing_final_newline() {
        assert_eq!(keep_style("a\r\nb", "x\ny\nz\n"), "x\r\ny\r\nz");
        assert_eq!(keep_style("a\nb\n", "x\ny"), "x\ny\n");
        assert_eq!(keep_style("", "new\n"), "new\n");
    }

    #[test]
    fn the_changed_lines_are_between_the_common_ends() {
        assert_eq!(changed_lines("a\nb\nc\n", "a\nB\nc\n"), Some((2, 2)));
        assert_eq!(changed_lines("a\nc\n", "a\nb1\nb2\nc\n"), Some((2, 3)));
        assert_eq!(changed_lines("a\nb\nc\n", "a\nc\n"), Some((2, 1)));
        assert_eq!(changed_lines("same", "same"), None);
    }

    #[test]
    fn shown_lines_are_numbered_and_capped() {
        let text: String = (1..=100).map(|n| format!("line {n}\n")).collect();
        assert_eq!(
            show_lines(&text, 10, 10),
            "     7\tline 7\n     8\tline 8\n     9\tline 9\n    10\tline 10\n    11\tline 11\n    12\tline 12\n    13\tline 13"
        );
        let all = show_lines(&text, 1, 100);
        assert!(
            all.ends_with("[… lines 41-100 are not shown; call read with offset=41 to see them]")
        );
        assert_eq!(all.lines().count(), 41);
    }
}

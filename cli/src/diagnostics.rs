//! How problems reach the user: one `miette` diagnostic each, pointing
//! into the deployment file when the problem has a place there.
//!
//! This module knows nothing of deployments or prompts: it reports the
//! [`Problem`]s the deployment layer returns (`dsh_deployment::Problem`).

use std::io::{IsTerminal, Write};

use dsh_deployment::Problem;
#[cfg(test)]
use dsh_deployment::SourceFile;
use miette::{Diagnostic, GraphicalReportHandler, GraphicalTheme};

/// How many problems a report shows; the rest are counted in one line.
pub(crate) const MAX_REPORTED: usize = 50;

/// A handler of `theme`, 100 columns wide, that wraps between words
/// only: a name (`search-docs`, `mcp:web-search`) is never cut at its
/// hyphens nor inside.
fn handler(theme: GraphicalTheme) -> GraphicalReportHandler {
    GraphicalReportHandler::new_themed(theme)
        .with_width(100)
        .with_break_words(false)
        .with_word_splitter(textwrap::WordSplitter::NoHyphenation)
}

/// Renders problems for stderr.
#[derive(Debug)]
pub(crate) struct Reporter {
    handler: GraphicalReportHandler,
    /// Without colors: for a problem that quotes control characters.
    plain_handler: GraphicalReportHandler,
}

impl Reporter {
    /// Colors only on a terminal, and never when `NO_COLOR` is set, so
    /// piped output and test snapshots are plain text.
    pub(crate) fn for_stderr() -> Self {
        let color = std::io::stderr().is_terminal()
            && std::env::var_os("NO_COLOR").is_none_or(|value| value.is_empty());
        let theme = if color {
            GraphicalTheme::unicode()
        } else {
            GraphicalTheme::unicode_nocolor()
        };
        Self {
            handler: handler(theme),
            plain_handler: handler(GraphicalTheme::unicode_nocolor()),
        }
    }

    /// Plain text, for tests.
    #[cfg(test)]
    pub(crate) fn plain() -> Self {
        Self {
            handler: handler(GraphicalTheme::unicode_nocolor()),
            plain_handler: handler(GraphicalTheme::unicode_nocolor()),
        }
    }

    /// Renders one problem: a one-line `error: …` when it has no place in
    /// a file, else a diagnostic with the file excerpt (clipped around its
    /// labels when their line is long). Control characters from the file
    /// (a terminal escape sequence) are shown escaped, never sent to the
    /// terminal.
    pub(crate) fn render(&self, problem: &Problem) -> String {
        if problem.source().is_none() {
            let kind = if problem.is_warning() {
                "warning"
            } else {
                "error"
            };
            let mut out = format!("{kind}: {}\n", problem.message());
            if let Some(help) = problem.help_text() {
                out.push_str(&format!("  help: {help}\n"));
            }
            return escape_controls(out);
        }
        let clipped = problem.clipped();
        let problem = clipped.as_ref().unwrap_or(problem);
        let hostile = has_controls(problem);
        // The colored theme's own escapes cannot be told from the file's:
        // a problem quoting control characters renders without colors.
        let handler = if hostile {
            &self.plain_handler
        } else {
            &self.handler
        };
        let mut out = String::new();
        if handler.render_report(&mut out, problem).is_err() {
            // Rendering into a String cannot fail; keep the message anyway.
            out = format!("error: {}\n", problem.message());
        }
        if hostile { escape_controls(out) } else { out }
    }

    /// Writes the problems to stderr: the first [`MAX_REPORTED`], then one
    /// line counting the rest.
    pub(crate) fn report(&self, problems: &[Problem]) {
        let mut stderr = std::io::stderr().lock();
        for (index, problem) in problems.iter().take(MAX_REPORTED).enumerate() {
            let separator = if index > 0 { "\n" } else { "" };
            // Nothing sensible is left to do when stderr itself is gone.
            let _ = write!(stderr, "{separator}{}", self.render(problem));
        }
        if let Some(line) = more_line(problems) {
            let _ = writeln!(stderr, "\n{line}");
        }
    }
}

/// The line that counts the problems past the first [`MAX_REPORTED`]:
/// worded as warnings when they all are (a warning fails nothing, so it
/// is not something to fix first).
fn more_line(problems: &[Problem]) -> Option<String> {
    let rest = problems
        .get(MAX_REPORTED..)
        .filter(|rest| !rest.is_empty())?;
    let more = rest.len();
    let plural = if more == 1 { "" } else { "s" };
    Some(if rest.iter().all(Problem::is_warning) {
        format!("and {more} more warning{plural}")
    } else {
        format!("and {more} more problem{plural} (fix these first)")
    })
}

/// Whether anything a problem shows holds a control character other than
/// a line break or a tab.
fn has_controls(problem: &Problem) -> bool {
    let hostile = |text: &str| {
        text.chars()
            .any(|c| c.is_control() && !matches!(c, '\n' | '\t' | '\r'))
    };
    hostile(problem.message())
        || problem.help_text().is_some_and(hostile)
        || Diagnostic::labels(problem)
            .into_iter()
            .flatten()
            .any(|label| label.label().is_some_and(hostile))
        || problem.source().is_some_and(|file| hostile(file.text()))
}

/// `text` with every control character but line breaks and tabs written
/// as a Rust escape (`\u{1b}`).
fn escape_controls(text: String) -> String {
    escape_controls_but(text, &['\n', '\t'])
}

/// `text` with every control character written as a Rust escape
/// (`\u{1b}`), line breaks and tabs too: for text someone else wrote (a
/// recorded prompt, a directory's name) shown in one cell of a table.
pub(crate) fn escape_controls_in_line(text: String) -> String {
    escape_controls_but(text, &[])
}

/// `text` with every control character not in `kept` written as a Rust
/// escape (`\u{1b}`): the one way dsh shows control characters it did
/// not write, so none reaches the terminal.
fn escape_controls_but(text: String, kept: &[char]) -> String {
    let escaped = |c: char| c.is_control() && !kept.contains(&c);
    if !text.chars().any(escaped) {
        return text;
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if escaped(c) {
            out.extend(c.escape_unicode());
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rest_are_counted_as_warnings_when_they_all_are() {
        let warnings: Vec<Problem> = (0..MAX_REPORTED + 16)
            .map(|n| Problem::new(format!("warning {n}")).warning())
            .collect();
        assert_eq!(
            more_line(&warnings).as_deref(),
            Some("and 16 more warnings")
        );
        let mut mixed = warnings;
        mixed.push(Problem::new("an error"));
        assert_eq!(
            more_line(&mixed).as_deref(),
            Some("and 17 more problems (fix these first)")
        );
        assert_eq!(more_line(&mixed[..MAX_REPORTED]), None);
    }

    #[test]
    fn a_diagnostic_header_counts_columns_in_characters() {
        let file = SourceFile::new("dsh.toml", "x = \"é\"\ny = \"ü ö <<bad>>\"\n");
        let at = file.text().find("<<").expect("a reference");
        let problem = file.problem("bad").label(at..at + 7, "here");
        let rendered = Reporter::plain().render(&problem);
        assert!(rendered.contains("[dsh.toml:2:10]"), "{rendered}");
    }

    #[test]
    fn a_label_near_the_start_of_a_long_line_is_clipped_without_underflow() {
        let text = format!("a{}", "b".repeat(5000));
        let file = SourceFile::new("dsh.toml", text);
        for at in [0, 1, 2, 41, 42, 4999] {
            let problem = file.problem("bad").label(at..at + 1, "here");
            let rendered = Reporter::plain().render(&problem);
            assert!(
                rendered.contains(&format!("[dsh.toml:1:{}]", at + 1)),
                "{rendered}"
            );
            assert!(rendered.len() < 2000, "{rendered}");
        }
    }

    #[test]
    fn control_characters_are_escaped() {
        let problem = Problem::new("bad \x1b[2J name");
        let rendered = Reporter::plain().render(&problem);
        assert_eq!(rendered, "error: bad \\u{1b}[2J name\n");
    }
}

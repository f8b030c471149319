//! Problems and how they reach the user: one `miette` diagnostic each,
//! pointing into the deployment file when the problem has a place there.
//!
//! This module knows nothing of deployments or prompts: it reports. What a
//! prompt's problems are comes from `dsh_system_prompt::check_prompt`;
//! where they are in the file, from `crate::prompt_problems`.

use std::fmt;
use std::io::{IsTerminal, Write};
use std::ops::Range;
use std::sync::Arc;

use dsh_system_prompt::template::position_of;
use miette::{
    Diagnostic, GraphicalReportHandler, GraphicalTheme, LabeledSpan, MietteError,
    MietteSpanContents, SourceCode, SourceSpan, SpanContents,
};

/// A file diagnostics point into: its display name and its text.
#[derive(Debug, Clone)]
pub(crate) struct SourceFile {
    name: Arc<str>,
    text: Arc<str>,
}

impl SourceFile {
    pub(crate) fn new(name: impl AsRef<str>, text: impl Into<Arc<str>>) -> Self {
        Self {
            name: name.as_ref().into(),
            text: text.into(),
        }
    }

    /// The name diagnostics show (the path as given).
    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    /// The file's text.
    pub(crate) fn text(&self) -> &str {
        &self.text
    }

    /// The 1-based line and column (in characters, as an editor counts) of
    /// a byte offset; an offset inside a character is that character's.
    /// The template crate owns this arithmetic; diagnostics headers use it
    /// too (see the `SourceCode` impl).
    pub(crate) fn position(&self, offset: usize) -> (usize, usize) {
        let position = position_of(self.text(), offset);
        (position.line, position.column)
    }

    /// A problem located in this file; add its labels with
    /// [`Problem::label`].
    pub(crate) fn problem(&self, message: impl Into<String>) -> Problem {
        Problem {
            source: Some(self.clone()),
            ..Problem::new(message)
        }
    }
}

impl SourceCode for SourceFile {
    /// `str`'s excerpt, named, as TOML, and with the column in characters:
    /// `str` counts it in bytes, so a diagnostic after a non-ASCII
    /// character on its line would name the wrong column.
    fn read_span<'a>(
        &'a self,
        span: &SourceSpan,
        context_lines_before: usize,
        context_lines_after: usize,
    ) -> Result<Box<dyn SpanContents<'a> + 'a>, MietteError> {
        let contents = self
            .text
            .read_span(span, context_lines_before, context_lines_after)?;
        let start = position_of(self.text(), contents.span().offset());
        let contents = MietteSpanContents::new_named(
            self.name.to_string(),
            contents.data(),
            *contents.span(),
            start.line - 1,
            start.column - 1,
            contents.line_count(),
        )
        .with_language("TOML");
        Ok(Box::new(contents))
    }
}

/// One problem, shown as one diagnostic.
#[derive(Debug, Clone)]
pub(crate) struct Problem {
    message: String,
    source: Option<SourceFile>,
    labels: Vec<LabeledSpan>,
    help: Option<String>,
    /// A warning is reported, and does not fail the command.
    warning: bool,
}

impl Problem {
    /// A problem with no place in a file.
    pub(crate) fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            source: None,
            labels: Vec::new(),
            help: None,
            warning: false,
        }
    }

    /// Makes it a warning: reported as one, and the command still
    /// succeeds.
    pub(crate) fn warning(mut self) -> Self {
        self.warning = true;
        self
    }

    /// Underlines `span` of the problem's file with `label`. The first
    /// label is the primary one: its line and column head the diagnostic.
    pub(crate) fn label(mut self, span: Range<usize>, label: impl Into<String>) -> Self {
        let label = if self.labels.is_empty() {
            LabeledSpan::new_primary_with_span(Some(label.into()), span)
        } else {
            LabeledSpan::new_with_span(Some(label.into()), span)
        };
        self.labels.push(label);
        self
    }

    /// Says how to fix it.
    pub(crate) fn help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }

    /// The one-line message.
    #[cfg(test)]
    pub(crate) fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Problem {}

impl Diagnostic for Problem {
    fn severity(&self) -> Option<miette::Severity> {
        self.warning.then_some(miette::Severity::Warning)
    }

    fn help<'a>(&'a self) -> Option<Box<dyn fmt::Display + 'a>> {
        self.help
            .as_ref()
            .map(|help| Box::new(help) as Box<dyn fmt::Display>)
    }

    fn source_code(&self) -> Option<&dyn SourceCode> {
        self.source.as_ref().map(|source| source as &dyn SourceCode)
    }

    fn labels(&self) -> Option<Box<dyn Iterator<Item = LabeledSpan> + '_>> {
        if self.labels.is_empty() {
            None
        } else {
            Some(Box::new(self.labels.iter().cloned()))
        }
    }
}

/// Renders problems for stderr.
#[derive(Debug)]
pub(crate) struct Reporter {
    handler: GraphicalReportHandler,
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
            handler: GraphicalReportHandler::new_themed(theme).with_width(100),
        }
    }

    /// Plain text, for tests.
    #[cfg(test)]
    pub(crate) fn plain() -> Self {
        Self {
            handler: GraphicalReportHandler::new_themed(GraphicalTheme::unicode_nocolor())
                .with_width(100),
        }
    }

    /// Renders one problem: a one-line `error: …` when it has no place in
    /// a file, else a diagnostic with the file excerpt.
    pub(crate) fn render(&self, problem: &Problem) -> String {
        if problem.source.is_none() {
            let kind = if problem.warning { "warning" } else { "error" };
            let mut out = format!("{kind}: {}\n", problem.message);
            if let Some(help) = &problem.help {
                out.push_str(&format!("  help: {help}\n"));
            }
            return out;
        }
        let mut out = String::new();
        if self.handler.render_report(&mut out, problem).is_err() {
            // Rendering into a String cannot fail; keep the message anyway.
            out = format!("error: {}\n", problem.message);
        }
        out
    }

    /// Writes every problem to stderr.
    pub(crate) fn report(&self, problems: &[Problem]) {
        let mut stderr = std::io::stderr().lock();
        for (index, problem) in problems.iter().enumerate() {
            let separator = if index > 0 { "\n" } else { "" };
            // Nothing sensible is left to do when stderr itself is gone.
            let _ = write!(stderr, "{separator}{}", self.render(problem));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_count_characters_and_hold_inside_a_character() {
        let file = SourceFile::new("dsh.toml", "a = 1\npersona = \"Tu es « <<x>> »\"\n");
        let at = file.text().find("<<").expect("a reference");
        assert_eq!(file.position(at), (2, 20));
        // Inside `«` (two bytes): that character's column, not the end of
        // the file.
        let inside = file.text().find('«').expect("a guillemet") + 1;
        assert_eq!(file.position(inside), (2, 18));
        assert_eq!(file.position(0), (1, 1));
    }

    #[test]
    fn a_diagnostic_header_counts_columns_in_characters() {
        let file = SourceFile::new("dsh.toml", "x = \"é\"\ny = \"ü ö <<bad>>\"\n");
        let at = file.text().find("<<").expect("a reference");
        let problem = file.problem("bad").label(at..at + 7, "here");
        let rendered = Reporter::plain().render(&problem);
        assert!(rendered.contains("[dsh.toml:2:10]"), "{rendered}");
    }
}

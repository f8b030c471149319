//! Problems and how they reach the user: one `miette` diagnostic each,
//! pointing into the deployment file when the problem has a place there.
//!
//! This module knows nothing of deployments or prompts: it reports. What a
//! prompt's problems are comes from the `RenderErrors` of
//! `dsh_system_prompt::render_prompt`; where they are in the file, from
//! `crate::prompt_problems`.

use std::fmt;
use std::io::{IsTerminal, Write};
use std::ops::Range;
use std::sync::Arc;

use dsh_system_prompt::template::position_of;
use miette::{
    Diagnostic, GraphicalReportHandler, GraphicalTheme, LabeledSpan, MietteError,
    MietteSpanContents, SourceCode, SourceSpan, SpanContents,
};

/// How many problems a report shows; the rest are counted in one line.
pub(crate) const MAX_REPORTED: usize = 50;

/// A line longer than this (in bytes) is not shown whole under a
/// diagnostic: its snippet is clipped around the labels. The renderer
/// cannot draw columns past 65,535, and no one reads such a line anyway.
const MAX_SNIPPET_LINE: usize = 400;

/// How much of a long line a clipped snippet shows around its labels.
const CLIP_CONTEXT: usize = 40;

/// A file diagnostics point into: its display name and its text.
#[derive(Debug, Clone)]
pub(crate) struct SourceFile {
    name: Arc<str>,
    text: Arc<str>,
    /// For an excerpt of one line of a file (a clipped snippet): the line
    /// it is on, and what to add to an excerpt column to get the file's.
    /// (Boxed: a `Problem` stays small enough to return by value.)
    origin: Option<Box<(usize, isize)>>,
}

impl SourceFile {
    pub(crate) fn new(name: impl AsRef<str>, text: impl Into<Arc<str>>) -> Self {
        Self {
            name: name.as_ref().into(),
            text: text.into(),
            origin: None,
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
        match self.origin.as_deref() {
            Some(&(line, shift)) => (
                line + position.line - 1,
                position.column.saturating_add_signed(shift),
            ),
            None => (position.line, position.column),
        }
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
        let (line, column) = self.position(contents.span().offset());
        let contents = MietteSpanContents::new_named(
            self.name.to_string(),
            contents.data(),
            *contents.span(),
            line - 1,
            column - 1,
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
            handler: GraphicalReportHandler::new_themed(theme).with_width(100),
            plain_handler: GraphicalReportHandler::new_themed(GraphicalTheme::unicode_nocolor())
                .with_width(100),
        }
    }

    /// Plain text, for tests.
    #[cfg(test)]
    pub(crate) fn plain() -> Self {
        Self {
            handler: GraphicalReportHandler::new_themed(GraphicalTheme::unicode_nocolor())
                .with_width(100),
            plain_handler: GraphicalReportHandler::new_themed(GraphicalTheme::unicode_nocolor())
                .with_width(100),
        }
    }

    /// Renders one problem: a one-line `error: …` when it has no place in
    /// a file, else a diagnostic with the file excerpt (clipped around its
    /// labels when their line is long). Control characters from the file
    /// (a terminal escape sequence) are shown escaped, never sent to the
    /// terminal.
    pub(crate) fn render(&self, problem: &Problem) -> String {
        if problem.source.is_none() {
            let kind = if problem.warning { "warning" } else { "error" };
            let mut out = format!("{kind}: {}\n", problem.message);
            if let Some(help) = &problem.help {
                out.push_str(&format!("  help: {help}\n"));
            }
            return escape_controls(out);
        }
        let clipped = clip_long_lines(problem);
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
            out = format!("error: {}\n", problem.message);
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
        if let Some(more) = problems.len().checked_sub(MAX_REPORTED).filter(|&n| n > 0) {
            let _ = writeln!(
                stderr,
                "\nand {more} more problem{} (fix these first)",
                if more == 1 { "" } else { "s" }
            );
        }
    }
}

/// Whether anything a problem shows holds a control character other than
/// a line break or a tab.
fn has_controls(problem: &Problem) -> bool {
    let hostile = |text: &str| {
        text.chars()
            .any(|c| c.is_control() && !matches!(c, '\n' | '\t' | '\r'))
    };
    hostile(&problem.message)
        || problem.help.as_deref().is_some_and(hostile)
        || problem
            .labels
            .iter()
            .any(|label| label.label().is_some_and(hostile))
        || problem
            .source
            .as_ref()
            .is_some_and(|file| hostile(file.text()))
}

/// `text` with every control character but line breaks and tabs written
/// as a Rust escape (`\u{1b}`).
fn escape_controls(text: String) -> String {
    if !text
        .chars()
        .any(|c| c.is_control() && !matches!(c, '\n' | '\t'))
    {
        return text;
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if c.is_control() && !matches!(c, '\n' | '\t') {
            out.extend(c.escape_unicode());
        } else {
            out.push(c);
        }
    }
    out
}

/// The problem with its snippet clipped, when its primary label is on a
/// line longer than [`MAX_SNIPPET_LINE`]: an excerpt of that line around
/// the labels on it, marked `…` where cut, at the same line and column;
/// labels on other lines are named in the help. `None` when the snippet
/// can be shown whole.
fn clip_long_lines(problem: &Problem) -> Option<Problem> {
    let file = problem.source.as_ref()?;
    let text = file.text();
    let line_of = |offset: usize| {
        let offset = offset.min(text.len());
        let start = text[..offset].rfind('\n').map_or(0, |at| at + 1);
        let end = text[offset..]
            .find('\n')
            .map_or(text.len(), |at| offset + at);
        start..end
    };
    let long = problem.labels.iter().any(|label| {
        let line = line_of(label.offset());
        line.len() > MAX_SNIPPET_LINE
    });
    if !long {
        return None;
    }
    let primary = problem.labels.first()?;
    let line = line_of(primary.offset());
    let (on_line, elsewhere): (Vec<&LabeledSpan>, Vec<&LabeledSpan>) = problem
        .labels
        .iter()
        .partition(|label| line.contains(&label.offset()) || label.offset() == line.end);
    let lowest = on_line.iter().map(|label| label.offset()).min()?;
    let highest = on_line
        .iter()
        .map(|label| label.offset() + label.len())
        .max()?;
    let floor = |mut at: usize| {
        while !text.is_char_boundary(at) {
            at -= 1;
        }
        at
    };
    let start = floor(lowest.saturating_sub(CLIP_CONTEXT).max(line.start));
    let end = floor(
        (highest + CLIP_CONTEXT)
            .min(start + MAX_SNIPPET_LINE)
            .min(line.end),
    );
    let cut_before = start > line.start;
    let cut_after = end < line.end;
    let lead = if cut_before { "…" } else { "" };
    let excerpt = format!(
        "{lead}{}{}",
        &text[start..end],
        if cut_after { "…" } else { "" }
    );
    // An excerpt offset is the file offset, less `start`, plus the lead.
    let excerpt_offset = |offset: usize| offset.clamp(start, end) - start + lead.len();
    let (line_number, column) = file.position(start);
    let lead_columns = usize::from(cut_before);
    let origin_shift = isize::try_from(column).unwrap_or(isize::MAX)
        - 1
        - isize::try_from(lead_columns).unwrap_or(0);
    let clipped_file = SourceFile {
        name: Arc::clone(&file.name),
        text: excerpt.into(),
        origin: Some(Box::new((line_number, origin_shift))),
    };
    let labels = on_line
        .iter()
        .map(|label| {
            let from = excerpt_offset(label.offset());
            let to = excerpt_offset(label.offset() + label.len());
            let span = SourceSpan::new(from.into(), to - from);
            if label.primary() {
                LabeledSpan::new_primary_with_span(label.label().map(str::to_owned), span)
            } else {
                LabeledSpan::new_with_span(label.label().map(str::to_owned), span)
            }
        })
        .collect();
    let mut help = problem.help.clone();
    for label in elsewhere {
        let (line, column) = file.position(label.offset());
        let also = format!(
            "also {}: {}:{line}:{column}",
            label.label().unwrap_or("here"),
            file.name()
        );
        help = Some(match help {
            Some(help) => format!("{help}\n{also}"),
            None => also,
        });
    }
    Some(Problem {
        warning: problem.warning,
        message: problem.message.clone(),
        source: Some(clipped_file),
        labels,
        help,
    })
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

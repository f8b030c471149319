//! Problems as data: one message, where it is in a file (a [`SourceFile`]
//! and labeled spans), how to fix it, and whether it is only a warning.
//!
//! Every layer of the deployment returns its problems as [`Problem`]s;
//! this crate prints none of them. A front end renders them (`dsh` with
//! `miette`'s graphical handler: a `Problem` is a `miette::Diagnostic`).

use std::fmt;
use std::ops::Range;
use std::sync::{Arc, OnceLock};

use dsh_system_prompt::template::Position;
use miette::{
    Diagnostic, LabeledSpan, MietteError, MietteSpanContents, SourceCode, SourceSpan, SpanContents,
};

/// A line longer than this (in bytes) is not shown whole under a
/// diagnostic: its snippet is clipped around the labels. The renderer
/// cannot draw columns past 65,535, and no one reads such a line anyway.
const MAX_SNIPPET_LINE: usize = 400;

/// How much of a long line a clipped snippet shows around its labels.
const CLIP_CONTEXT: usize = 40;

/// A file diagnostics point into: its display name and its text.
#[derive(Debug, Clone)]
pub struct SourceFile {
    name: Arc<str>,
    text: Arc<FileText>,
    /// For an excerpt of one line of a file (a clipped snippet): the line
    /// it is on, and what to add to an excerpt column to get the file's.
    /// (Boxed: a `Problem` stays small enough to return by value.)
    origin: Option<Box<(usize, isize)>>,
}

/// A file's text, and where each of its lines starts, found at the first
/// [`SourceFile::position`] asked and shared by the file's clones: a
/// search from the start for every position made 10,000 sections' owners
/// quadratic.
#[derive(Debug)]
struct FileText {
    text: Arc<str>,
    line_starts: OnceLock<Box<[usize]>>,
}

impl FileText {
    fn new(text: impl Into<Arc<str>>) -> Arc<Self> {
        Arc::new(Self {
            text: text.into(),
            line_starts: OnceLock::new(),
        })
    }
}

impl SourceFile {
    /// A file named `name` (as diagnostics show it) holding `text`.
    pub fn new(name: impl AsRef<str>, text: impl Into<Arc<str>>) -> Self {
        Self {
            name: name.as_ref().into(),
            text: FileText::new(text),
            origin: None,
        }
    }

    /// The name diagnostics show (the path as given).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The file's text.
    pub fn text(&self) -> &str {
        &self.text.text
    }

    /// The 1-based line and column (in characters, as an editor counts) of
    /// a byte offset; an offset inside a character is that character's.
    /// The template crate owns this arithmetic; diagnostics headers use it
    /// too (see the `SourceCode` impl).
    pub fn position(&self, offset: usize) -> (usize, usize) {
        let position = self.position_of(offset);
        match self.origin.as_deref() {
            Some(&(line, shift)) => (
                line + position.line - 1,
                position.column.saturating_add_signed(shift),
            ),
            None => (position.line, position.column),
        }
    }

    /// [`position_of`](dsh_system_prompt::template::position_of) by the
    /// line index: a binary search for the line,
    /// then the characters of that line before `offset`.
    fn position_of(&self, offset: usize) -> Position {
        let text = self.text();
        let mut offset = offset.min(text.len());
        while !text.is_char_boundary(offset) {
            offset -= 1;
        }
        let starts = self.text.line_starts.get_or_init(|| {
            std::iter::once(0)
                .chain(text.match_indices('\n').map(|(at, _)| at + 1))
                .collect()
        });
        // At least 1: the first line starts at 0.
        let line = starts.partition_point(|start| *start <= offset);
        let start = starts.get(line.wrapping_sub(1)).copied().unwrap_or(0);
        let column = text.get(start..offset).unwrap_or_default().chars().count() + 1;
        Position {
            offset,
            line,
            column,
        }
    }

    /// A problem located in this file; add its labels with
    /// [`Problem::label`].
    pub fn problem(&self, message: impl Into<String>) -> Problem {
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
        let contents =
            (self.text.text).read_span(span, context_lines_before, context_lines_after)?;
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
pub struct Problem {
    message: String,
    source: Option<SourceFile>,
    labels: Vec<LabeledSpan>,
    help: Option<String>,
    /// A warning is reported, and does not fail the command.
    warning: bool,
}

impl Problem {
    /// A problem with no place in a file.
    pub fn new(message: impl Into<String>) -> Self {
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
    pub fn warning(mut self) -> Self {
        self.warning = true;
        self
    }

    /// Underlines `span` of the problem's file with `label`. The first
    /// label is the primary one: its line and column head the diagnostic.
    pub fn label(mut self, span: Range<usize>, label: impl Into<String>) -> Self {
        let label = if self.labels.is_empty() {
            LabeledSpan::new_primary_with_span(Some(label.into()), span)
        } else {
            LabeledSpan::new_with_span(Some(label.into()), span)
        };
        self.labels.push(label);
        self
    }

    /// Says how to fix it.
    pub fn help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }

    /// The one-line message.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// How to fix it, if said.
    pub fn help_text(&self) -> Option<&str> {
        self.help.as_deref()
    }

    /// The file it points into, if it has a place in one.
    pub fn source(&self) -> Option<&SourceFile> {
        self.source.as_ref()
    }

    /// Whether it is only a warning (the command still succeeds).
    pub fn is_warning(&self) -> bool {
        self.warning
    }

    /// The problem with its snippet clipped for display, when its primary
    /// label is on a line longer than a renderer can draw; `None` when
    /// the snippet can be shown whole.
    pub fn clipped(&self) -> Option<Problem> {
        clip_long_lines(self)
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

/// The problem with its snippet clipped, when its primary label is on a
/// line longer than [`MAX_SNIPPET_LINE`]: an excerpt of that line around
/// the labels on it, marked `…` where cut, at the same line and column;
/// labels on other lines are named in the help. `None` when the snippet
/// can be shown whole.
fn clip_long_lines(problem: &Problem) -> Option<Problem> {
    let file = problem.source.as_ref()?;
    let text = file.text();
    let long =
        (problem.labels.iter()).any(|label| line_of(text, label.offset()).len() > MAX_SNIPPET_LINE);
    if !long {
        return None;
    }
    let line = line_of(text, problem.labels.first()?.offset());
    let (on_line, elsewhere): (Vec<&LabeledSpan>, Vec<&LabeledSpan>) = problem
        .labels
        .iter()
        .partition(|label| line.contains(&label.offset()) || label.offset() == line.end);
    let excerpt = Excerpt::around(file, line, &on_line)?;
    let labels = on_line.iter().map(|label| excerpt.label(label)).collect();
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
        source: Some(excerpt.file),
        labels,
        help,
    })
}

/// The byte range of the line of `text` that holds `offset`, without its
/// line break.
fn line_of(text: &str, offset: usize) -> Range<usize> {
    let offset = offset.min(text.len());
    let start = text[..offset].rfind('\n').map_or(0, |at| at + 1);
    let end = text[offset..]
        .find('\n')
        .map_or(text.len(), |at| offset + at);
    start..end
}

/// A clipped excerpt of one long line: a file of its own that knows the
/// line and column it starts at, and where in it an offset of the whole
/// file falls.
struct Excerpt {
    file: SourceFile,
    /// The file offsets the excerpt shows.
    range: Range<usize>,
    /// The bytes of the `…` before it, if cut there.
    lead: usize,
}

impl Excerpt {
    /// The part of `line` around `labels`, at most [`MAX_SNIPPET_LINE`]
    /// bytes with [`CLIP_CONTEXT`] on each side, on character boundaries.
    fn around(file: &SourceFile, line: Range<usize>, labels: &[&LabeledSpan]) -> Option<Self> {
        let text = file.text();
        let lowest = labels.iter().map(|label| label.offset()).min()?;
        let highest = (labels.iter())
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
        let (cut_before, cut_after) = (start > line.start, end < line.end);
        let lead = if cut_before { "…" } else { "" };
        let excerpt = format!(
            "{lead}{}{}",
            &text[start..end],
            if cut_after { "…" } else { "" }
        );
        let (line_number, column) = file.position(start);
        let origin_shift =
            isize::try_from(column).unwrap_or(isize::MAX) - 1 - isize::from(cut_before);
        let file = SourceFile {
            name: Arc::clone(&file.name),
            text: FileText::new(excerpt),
            origin: Some(Box::new((line_number, origin_shift))),
        };
        Some(Self {
            file,
            range: start..end,
            lead: lead.len(),
        })
    }

    /// `label` moved into the excerpt.
    fn label(&self, label: &LabeledSpan) -> LabeledSpan {
        // An excerpt offset is the file offset, less the start, plus the
        // lead.
        let at = |offset: usize| {
            offset.clamp(self.range.start, self.range.end) - self.range.start + self.lead
        };
        let (from, to) = (at(label.offset()), at(label.offset() + label.len()));
        let span = SourceSpan::new(from.into(), to - from);
        if label.primary() {
            LabeledSpan::new_primary_with_span(label.label().map(str::to_owned), span)
        } else {
            LabeledSpan::new_with_span(label.label().map(str::to_owned), span)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_position_by_the_line_index_is_the_templates_position() {
        let text = "a\nbé <<x>>\r\n\n€€ end\nlast";
        let file = SourceFile::new("f", text);
        for offset in (0..text.len() + 3).rev() {
            let expected = dsh_system_prompt::template::position_of(text, offset);
            assert_eq!(file.position_of(offset), expected, "offset {offset}");
        }
    }

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
}

//! The parser: one forward pass, no recursion, every error collected.

use std::sync::LazyLock;

use memchr::{memchr2, memmem};

use crate::error::{ParseError, ParseErrorKind, ParseErrors, PositionCursor};
use crate::{RawSegment, Template, is_variable_name};

/// The searchers, built once: building one costs more than searching a
/// short text, and registries parse many short texts.
pub(crate) static OPENING: LazyLock<memmem::Finder<'static>> =
    LazyLock::new(|| memmem::Finder::new(b"<<"));
static CLOSING: LazyLock<memmem::Finder<'static>> = LazyLock::new(|| memmem::Finder::new(b">>"));
static LAST_CLOSING: LazyLock<memmem::FinderRev<'static>> =
    LazyLock::new(|| memmem::FinderRev::new(b">>"));

pub(crate) fn parse(source: &str) -> Result<Template, ParseErrors> {
    match parse_recovering(source) {
        (template, None) => Ok(template),
        (_, Some(errors)) => Err(errors),
    }
}

/// The one pass: every well-formed piece, and every error. A malformed
/// group or opening is not a reference: its text stays in the literal run
/// around it, so the references after it are still found.
pub(crate) fn parse_recovering(source: &str) -> (Template, Option<ParseErrors>) {
    Parser {
        source,
        bytes: source.as_bytes(),
        // Whether a `>>` follows a position is answered by comparing with
        // the last `>>` of the input, found once: this keeps the pass
        // linear.
        last_close: LAST_CLOSING.rfind(source.as_bytes()),
        segments: Vec::new(),
        errors: Vec::new(),
        positions: PositionCursor::new(source),
        literal_len: 0,
        literal_start: 0,
    }
    .run()
}

/// The state of the one pass over a source.
struct Parser<'s> {
    source: &'s str,
    bytes: &'s [u8],
    /// Where the last `>>` of the source starts.
    last_close: Option<usize>,
    segments: Vec<RawSegment>,
    errors: Vec<ParseError>,
    positions: PositionCursor<'s>,
    literal_len: usize,
    /// Start of the literal run not yet pushed.
    literal_start: usize,
}

impl Parser<'_> {
    /// Reads every `<<` of the source in order; each step returns where
    /// the search for the next one resumes.
    fn run(mut self) -> (Template, Option<ParseErrors>) {
        let opening = &*OPENING;
        let mut cursor = 0;
        while let Some(found) = opening.find(&self.bytes[cursor..]) {
            let open = cursor + found;
            cursor = if open > self.literal_start && self.bytes[open - 1] == b'\\' {
                self.escaped(open)
            } else {
                self.opening(open)
            };
        }
        self.push_literal(self.bytes.len());
        let template = Template {
            segments: self.segments.into_boxed_slice(),
            source_len: self.source.len(),
            literal_len: self.literal_len,
        };
        (template, ParseErrors::new(self.errors))
    }

    /// Ends the literal run not yet pushed at `end`.
    fn push_literal(&mut self, end: usize) {
        if self.literal_start < end {
            self.literal_len += end - self.literal_start;
            self.segments
                .push(RawSegment::Literal(self.literal_start..end));
        }
    }

    /// `\<<` is a literal `<<`: drop the backslash, keep the `<<` as the
    /// start of the next literal run.
    fn escaped(&mut self, open: usize) -> usize {
        self.push_literal(open - 1);
        self.literal_start = open;
        open + 2
    }

    /// A `<<` at `open`, not escaped: a complete group, or an opening
    /// that closes none.
    fn opening(&mut self, open: usize) -> usize {
        let inside_start = open + 2;
        let stop = memchr2(b'<', b'>', &self.bytes[inside_start..]).map(|at| inside_start + at);
        match stop {
            // A complete group: `<<`, no `<` or `>`, then `>>`.
            Some(close)
                if self.bytes[close] == b'>' && self.bytes.get(close + 1) == Some(&b'>') =>
            {
                self.group(open, close)
            }
            _ => self.unclosed(open),
        }
    }

    /// The group `<<…>>` from `open` to the `>>` at `close`: a reference
    /// when it holds a variable name, else a malformed reference.
    fn group(&mut self, open: usize, close: usize) -> usize {
        let end = close + 2;
        let name = &self.source[open + 2..close];
        if is_variable_name(name) {
            self.push_literal(open);
            self.segments.push(RawSegment::Reference(open..end));
            self.literal_start = end;
        } else {
            self.errors.push(ParseError {
                kind: ParseErrorKind::MalformedReference,
                span: open..end,
                position: self.positions.advance_to(open),
                text: self.source[open..end].to_owned(),
                suggestion: suggest(name),
            });
        }
        end
    }

    /// A `<<` that opens no complete group: malformed when a `>>` follows
    /// it somewhere, else literal text (`cat <<EOF`).
    fn unclosed(&mut self, open: usize) -> usize {
        let bytes = self.bytes;
        let inside_start = open + 2;
        if self.last_close.is_none_or(|close| close < inside_start) {
            return open + count_leading(&bytes[open..], b'<');
        }
        // Malformed: name the text up to and including the next run of
        // `>`, so `<<<model>>>` is reported whole, once.
        let close = CLOSING
            .find(&bytes[inside_start..])
            .map_or(bytes.len(), |at| inside_start + at);
        let end = close + count_leading(&bytes[close..], b'>');
        self.errors.push(ParseError {
            kind: ParseErrorKind::UnclosedOpening,
            span: open..end,
            position: self.positions.advance_to(open),
            text: self.source[open..end].to_owned(),
            suggestion: None,
        });
        end
    }
}

/// How many times `byte` repeats at the start of `bytes`.
fn count_leading(bytes: &[u8], byte: u8) -> usize {
    bytes.iter().take_while(|&&b| b == byte).count()
}

/// The reference the author of a malformed group probably meant.
fn suggest(inside: &str) -> Option<String> {
    let name = inside.trim().to_ascii_lowercase().replace('-', "_");
    is_variable_name(&name).then(|| format!("<<{name}>>"))
}

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
    let bytes = source.as_bytes();
    // Whether a `>>` follows a position is answered by comparing with the
    // last `>>` of the input, found once: this keeps the pass linear.
    let last_close = LAST_CLOSING.rfind(bytes);
    let opening = &*OPENING;

    let mut segments = Vec::new();
    let mut errors = Vec::new();
    let mut positions = PositionCursor::new(source);
    let mut literal_len = 0;
    // Start of the literal run not yet pushed.
    let mut literal_start = 0;
    // Where the search for the next `<<` resumes.
    let mut cursor = 0;

    let mut push_literal = |segments: &mut Vec<RawSegment>, start: usize, end: usize| {
        if start < end {
            literal_len += end - start;
            segments.push(RawSegment::Literal(start..end));
        }
    };

    while let Some(found) = opening.find(&bytes[cursor..]) {
        let open = cursor + found;

        // `\<<` is a literal `<<`: drop the backslash, keep the `<<` as the
        // start of the next literal run.
        if open > literal_start && bytes[open - 1] == b'\\' {
            push_literal(&mut segments, literal_start, open - 1);
            literal_start = open;
            cursor = open + 2;
            continue;
        }

        let inside_start = open + 2;
        let stop = memchr2(b'<', b'>', &bytes[inside_start..]).map(|at| inside_start + at);
        match stop {
            // A complete group: `<<`, no `<` or `>`, then `>>`.
            Some(close) if bytes[close] == b'>' && bytes.get(close + 1) == Some(&b'>') => {
                let end = close + 2;
                let name = &source[inside_start..close];
                if is_variable_name(name) {
                    push_literal(&mut segments, literal_start, open);
                    segments.push(RawSegment::Reference(open..end));
                    literal_start = end;
                } else {
                    errors.push(ParseError {
                        kind: ParseErrorKind::MalformedReference,
                        span: open..end,
                        position: positions.advance_to(open),
                        text: source[open..end].to_owned(),
                        suggestion: suggest(name),
                    });
                }
                cursor = end;
            }
            // A `<<` that opens no complete group.
            _ => {
                let run_end = open + count_leading(&bytes[open..], b'<');
                if last_close.is_some_and(|close| close >= inside_start) {
                    // Malformed: name the text up to and including the next
                    // run of `>`, so `<<<model>>>` is reported whole, once.
                    let close = CLOSING
                        .find(&bytes[inside_start..])
                        .map_or(bytes.len(), |at| inside_start + at);
                    let end = close + count_leading(&bytes[close..], b'>');
                    errors.push(ParseError {
                        kind: ParseErrorKind::UnclosedOpening,
                        span: open..end,
                        position: positions.advance_to(open),
                        text: source[open..end].to_owned(),
                        suggestion: None,
                    });
                    cursor = end;
                } else {
                    // No `>>` anywhere after it: literal text (`cat <<EOF`).
                    cursor = run_end;
                }
            }
        }
    }
    push_literal(&mut segments, literal_start, bytes.len());

    let template = Template {
        segments: segments.into_boxed_slice(),
        source_len: source.len(),
        literal_len,
    };
    let errors = ParseErrors::new(errors);
    (template, errors)
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

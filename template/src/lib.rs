//! The `<<name>>` template grammar of dsh system prompts.
//!
//! A prompt section's text may reference prompt variables as `<<name>>`. This
//! crate parses such text into literal runs and references, lists the
//! references (the macros use that at build time), and interpolates with a
//! lookup the caller supplies (the registry uses that at render time).
//!
//! ```
//! use dsh_prompt_template::Template;
//!
//! let source = "You are running on <<model>>. Write heredocs as `cat \\<<EOF`.";
//! let template = Template::parse(source)?;
//! let names: Vec<&str> = template.references(source).map(|r| r.name).collect();
//! assert_eq!(names, ["model"]);
//!
//! let text = template.render(source, |reference| match reference.name {
//!     "model" => Ok("gpt-5"),
//!     other => Err(format!("no variable `{other}`")),
//! })?;
//! assert_eq!(text, "You are running on gpt-5. Write heredocs as `cat <<EOF`.");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Grammar
//!
//! - A reference is `<<name>>`; a name matches `[a-z][a-z0-9_]*`
//!   ([`is_variable_name`]).
//! - A *complete group* is `<<`, then characters that are neither `<` nor
//!   `>`, then `>>`. A complete group whose inside is not a valid name is
//!   malformed: `<< model >>`, `<<Model>>`, `<<>>`, `<<a-b>>`.
//! - A `<<` that opens no complete group while a `>>` still follows later is
//!   malformed: `<<<model>>>`, `a << b << c >> d`. A `<<` with no `>>`
//!   anywhere after it is literal text, so `cat <<EOF` needs no escape.
//! - `\<<` is a literal `<<`; the backslash is consumed. It is the escape for
//!   shell heredocs and C++ streams, and every error about `<<` names it.
//!   Exactly one backslash is consumed, so `\\<<` is a literal `\<<`;
//!   [`escape_literal`] escapes arbitrary text this way.
//! - Substituted values are never re-scanned: a value containing `<<x>>`
//!   stays literal.
//!
//! Parsing is one forward pass over the input (linear time, no recursion)
//! and never panics; it reports **every** error, each with its byte span and
//! line:column, not just the first.
#![deny(missing_docs)]
#![forbid(unsafe_code)]

mod error;
mod names;
mod parse;

pub use error::ESCAPE_HINT;
pub use error::{
    ErrorList, InterpolateError, ParseError, ParseErrorKind, ParseErrors, Position, quoted_list,
    series,
};
pub use names::{SECTION_NAME_GRAMMAR, VARIABLE_NAME_GRAMMAR, is_section_name, is_variable_name};

use std::borrow::Cow;
use std::ops::Range;

/// A parsed template: the positions of its literal runs and references
/// inside the source text it was parsed from.
///
/// A `Template` stores byte offsets, not text, so it can be cached beside
/// the text it describes (the registry parses a static section once, when it
/// is registered). Every method that reads text takes that same source; use
/// a `Template` only with the exact string it was parsed from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    segments: Box<[RawSegment]>,
    source_len: usize,
    literal_len: usize,
}

/// One piece of a template, as stored: byte ranges into the source.
#[derive(Debug, Clone, PartialEq, Eq)]
enum RawSegment {
    Literal(Range<usize>),
    /// The whole `<<name>>` group; the name is `start + 2 .. end - 2`.
    Reference(Range<usize>),
}

/// A `<<name>>` reference inside a template.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Reference<'s> {
    /// The variable name, without the angle brackets.
    pub name: &'s str,
    /// Byte offset of the opening `<<` in the source.
    pub offset: usize,
}

/// A piece of a template: literal text or a reference.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Segment<'s> {
    /// Text copied to the output as it is (escapes already resolved).
    Literal(&'s str),
    /// A reference to a variable.
    Reference(Reference<'s>),
}

impl Template {
    /// Parses `source`, reporting every syntax error it contains.
    ///
    /// ```
    /// use dsh_prompt_template::Template;
    ///
    /// let errors = Template::parse("<<Model>> and << cwd >>").unwrap_err();
    /// assert_eq!(errors.len(), 2);
    /// assert_eq!(errors.iter().next().unwrap().text, "<<Model>>");
    /// ```
    pub fn parse(source: &str) -> Result<Template, ParseErrors> {
        parse::parse(source)
    }

    /// Parses `source` past its errors, to report every problem of a text
    /// at once: every syntax error, and the template of what is well formed,
    /// whose [`references`](Self::references) are the references a fixed
    /// text would still make. Malformed text is kept as literal text.
    ///
    /// ```
    /// use dsh_prompt_template::Template;
    ///
    /// let source = "<<Model>> in <<cwd>>";
    /// let (template, errors) = Template::parse_recovering(source);
    /// assert_eq!(errors.map(|errors| errors.len()), Some(1));
    /// let names: Vec<&str> = template.references(source).map(|r| r.name).collect();
    /// assert_eq!(names, ["cwd"]);
    /// ```
    pub fn parse_recovering(source: &str) -> (Template, Option<ParseErrors>) {
        parse::parse_recovering(source)
    }

    /// The pieces of the template, in order. `source` must be the text the
    /// template was parsed from.
    pub fn segments<'s>(&'s self, source: &'s str) -> impl Iterator<Item = Segment<'s>> + 's {
        debug_assert_eq!(
            source.len(),
            self.source_len,
            "template used with another source"
        );
        self.segments.iter().map(move |segment| match segment {
            RawSegment::Literal(range) => Segment::Literal(&source[range.clone()]),
            RawSegment::Reference(range) => Segment::Reference(Reference {
                name: &source[range.start + 2..range.end - 2],
                offset: range.start,
            }),
        })
    }

    /// The references the template makes, in order of appearance (a name
    /// referenced twice appears twice).
    pub fn references<'s>(&'s self, source: &'s str) -> impl Iterator<Item = Reference<'s>> + 's {
        self.segments(source).filter_map(|segment| match segment {
            Segment::Reference(reference) => Some(reference),
            Segment::Literal(_) => None,
        })
    }

    /// Whether the template references any variable. A template without
    /// references renders to its literal text.
    pub fn has_references(&self) -> bool {
        self.segments
            .iter()
            .any(|segment| matches!(segment, RawSegment::Reference(_)))
    }

    /// The number of bytes the literal pieces contribute to the output: a
    /// lower bound of the rendered length, used to size output buffers.
    pub fn literal_len(&self) -> usize {
        self.literal_len
    }

    /// Appends the rendered template to `out`, asking `lookup` for the value
    /// of each reference. Values are copied as they are, never re-scanned.
    ///
    /// On error, `out` holds the text rendered before the failing reference.
    pub fn render_into<'v, E>(
        &self,
        source: &str,
        out: &mut String,
        mut lookup: impl FnMut(&Reference<'_>) -> Result<&'v str, E>,
    ) -> Result<(), E> {
        for segment in self.segments(source) {
            match segment {
                Segment::Literal(text) => out.push_str(text),
                Segment::Reference(reference) => out.push_str(lookup(&reference)?),
            }
        }
        Ok(())
    }

    /// Renders the template into a new string; see [`Template::render_into`].
    pub fn render<'v, E>(
        &self,
        source: &str,
        lookup: impl FnMut(&Reference<'_>) -> Result<&'v str, E>,
    ) -> Result<String, E> {
        let mut out = String::with_capacity(self.literal_len);
        self.render_into(source, &mut out, lookup)?;
        Ok(out)
    }
}

/// Parses `source` and renders it in one call.
///
/// ```
/// let text = dsh_prompt_template::interpolate("cwd: <<cwd>>", |_| Ok::<_, ()>("/work"))?;
/// assert_eq!(text, "cwd: /work");
/// # Ok::<(), dsh_prompt_template::InterpolateError<()>>(())
/// ```
pub fn interpolate<'v, E>(
    source: &str,
    lookup: impl FnMut(&Reference<'_>) -> Result<&'v str, E>,
) -> Result<String, InterpolateError<E>> {
    let template = Template::parse(source).map_err(InterpolateError::Parse)?;
    template
        .render(source, lookup)
        .map_err(InterpolateError::Lookup)
}

/// Escapes `text` so that it parses back as exactly that literal text.
///
/// A `\` is inserted before every `<<`, scanning left to right without
/// overlap, exactly as the parser does; the parser consumes exactly one
/// backslash before each `<<`, so the result renders to `text` and contains
/// no references and no errors. Text without `<<` is returned borrowed.
///
/// ```
/// use dsh_prompt_template::{Template, escape_literal};
///
/// let text = r"cat <<EOF; std::cout << <<model>>; a \<< b";
/// let escaped = escape_literal(text);
/// assert_eq!(escaped, r"cat \<<EOF; std::cout \<< \<<model>>; a \\<< b");
///
/// let template = Template::parse(&escaped)?;
/// assert!(!template.has_references());
/// assert_eq!(template.render(&escaped, |_| Err("no references"))?, text);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// The result stands for `text` on its own. Concatenated with a reference,
/// its last character still meets the reference's `<<`: a trailing `\`
/// escapes the reference and a trailing `<` makes `<<<`, which is
/// malformed. The grammar has no way to write a literal `\` or `<` right
/// before a reference; put another character between them.
pub fn escape_literal(text: &str) -> Cow<'_, str> {
    let mut openings = parse::OPENING.find_iter(text.as_bytes()).peekable();
    if openings.peek().is_none() {
        return Cow::Borrowed(text);
    }
    let mut escaped = String::with_capacity(text.len() + text.len() / 8 + 1);
    let mut copied = 0;
    // `find_iter` reports non-overlapping matches, left to right: the same
    // `<<`s the parser meets, since it resumes after each escaped `<<`.
    for open in openings {
        escaped.push_str(&text[copied..open]);
        escaped.push('\\');
        copied = open;
    }
    escaped.push_str(&text[copied..]);
    Cow::Owned(escaped)
}

/// Computes the 1-based line and column (in characters) of a byte offset.
///
/// An offset inside a multi-byte character is moved back to the start of
/// that character; offsets past the end are clamped to the end.
pub fn position_of(source: &str, offset: usize) -> Position {
    Positions::new(source).at(offset)
}

/// [`position_of`] for many offsets of one text: increasing offsets cost
/// one pass over the text in all, where calling `position_of` for each
/// would start over every time (quadratic for a text with thousands of
/// problems). An offset before the previous one starts over.
///
/// ```
/// use dsh_prompt_template::{Positions, position_of};
/// let text = "a\nbc <<x>>\n<<y>>";
/// let mut positions = Positions::new(text);
/// for offset in [5, 12, 3] {
///     assert_eq!(positions.at(offset), position_of(text, offset));
/// }
/// ```
#[derive(Debug)]
pub struct Positions<'s> {
    cursor: error::PositionCursor<'s>,
    source: &'s str,
    last: usize,
}

impl<'s> Positions<'s> {
    /// Positions in `source`.
    pub fn new(source: &'s str) -> Self {
        Self {
            cursor: error::PositionCursor::new(source),
            source,
            last: 0,
        }
    }

    /// The position of `offset`, as [`position_of`] computes it.
    pub fn at(&mut self, offset: usize) -> Position {
        let mut offset = offset.min(self.source.len());
        while !self.source.is_char_boundary(offset) {
            offset -= 1;
        }
        if offset < self.last {
            self.cursor = error::PositionCursor::new(self.source);
        }
        self.last = offset;
        self.cursor.advance_to(offset)
    }
}

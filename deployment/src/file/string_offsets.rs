//! Where each byte of a decoded TOML string came from in the file.
//!
//! A persona (or a deployment's section text) is a template, and a template error has a byte offset inside
//! the *decoded* string. To underline the offending `<<…>>` in the TOML
//! file, that offset has to become an offset in the *raw* text: literal
//! strings copy their content verbatim, but basic strings have escapes
//! (`\n`, `\u00e9`) and line-ending backslashes that make the two differ.
//! The string is decoded again with `toml_parser` — the decoder the `toml`
//! crate itself uses, so the two cannot disagree — while recording which
//! raw bytes produced which decoded bytes.

use std::ops::Range;

use toml::Spanned;
use toml_parser::decoder::StringBuilder;
use toml_parser::{ParseError, Source};

use crate::problem::SourceFile;

/// The file range of the part of the TOML string `value` that decoded to
/// `decoded`; the whole value when the string cannot be mapped. For many
/// ranges of one value, build a [`StringFileMap`] once.
pub fn string_file_range(
    file: &SourceFile,
    value: &Spanned<String>,
    decoded: Range<usize>,
) -> Range<usize> {
    StringFileMap::new(file, value).file_range(decoded)
}

/// Where the parts of one TOML string value are in the file: the string
/// is decoded once, for however many ranges are looked up.
#[derive(Debug, Clone)]
pub struct StringFileMap {
    span: Range<usize>,
    offsets: Option<StringOffsets>,
}

impl StringFileMap {
    /// The map of `value`, a string of `file`.
    pub fn new(file: &SourceFile, value: &Spanned<String>) -> Self {
        let span = value.span();
        let offsets = file
            .text()
            .get(span.clone())
            .and_then(|raw| StringOffsets::new(raw, value.get_ref()));
        Self { span, offsets }
    }

    /// The file range that decoded to `decoded`; the whole value when the
    /// string cannot be mapped.
    pub(crate) fn file_range(&self, decoded: Range<usize>) -> Range<usize> {
        match &self.offsets {
            Some(offsets) => {
                let range = offsets.raw_range(decoded);
                self.span.start + range.start..self.span.start + range.end
            }
            None => self.span.clone(),
        }
    }
}

/// The map from decoded offsets to raw offsets of one string value.
#[derive(Debug, Clone)]
pub(super) struct StringOffsets {
    /// Pieces of the decoded string, in order, each with the raw bytes that
    /// produced it.
    pieces: Vec<Piece>,
    /// Where the content ends in the raw text (before the closing quotes).
    content_end: usize,
}

#[derive(Debug, Clone)]
struct Piece {
    decoded: Range<usize>,
    raw: Range<usize>,
    /// Copied as is (so offsets inside map one to one), not an escape.
    verbatim: bool,
}

impl StringOffsets {
    /// Decodes `raw`, the text of one TOML string value with its quotes.
    /// Returns `None` unless `raw` is exactly one valid string that decodes
    /// to `decoded` — the value the deserializer produced — so a map that
    /// exists is always right.
    pub(super) fn new(raw: &str, decoded: &str) -> Option<Self> {
        let source = Source::new(raw);
        let mut tokens = source.lex();
        let token = tokens.next()?;
        if token.span().start() != 0 || token.span().end() != raw.len() {
            return None;
        }
        let value = source.get(token)?;
        let mut recorder = Recorder {
            base: raw,
            decoded: String::with_capacity(decoded.len()),
            pieces: Vec::new(),
            cursor: 0,
        };
        let mut errors: Vec<ParseError> = Vec::new();
        let kind = value.decode_scalar(&mut recorder, &mut errors);
        if kind != toml_parser::decoder::ScalarKind::String
            || !errors.is_empty()
            || recorder.decoded != decoded
        {
            return None;
        }
        let content_end = raw.len() - closing_quotes(raw);
        let mut pieces = recorder.pieces;
        // An escape ends where the next piece begins.
        for at in 0..pieces.len() {
            if !pieces[at].verbatim {
                let end = pieces
                    .get(at + 1)
                    .map_or(content_end, |next| next.raw.start);
                pieces[at].raw = escape_at(raw, pieces[at].raw.start, end);
            }
        }
        Some(Self {
            pieces,
            content_end,
        })
    }

    /// The raw range that produced the decoded range `decoded`.
    pub(super) fn raw_range(&self, decoded: Range<usize>) -> Range<usize> {
        let start = self.raw_start(decoded.start);
        let end = self.raw_end(decoded.end).max(start);
        start..end
    }

    // The pieces are in order and their decoded ranges contiguous, so both
    // lookups are a binary search: a text with thousands of problems maps
    // each in logarithmic time.
    fn raw_start(&self, offset: usize) -> usize {
        let first = self
            .pieces
            .partition_point(|piece| piece.decoded.end <= offset);
        match self
            .pieces
            .get(first)
            .filter(|piece| piece.decoded.contains(&offset))
        {
            Some(piece) if piece.verbatim => piece.raw.start + (offset - piece.decoded.start),
            Some(piece) => piece.raw.start,
            None => self.content_end,
        }
    }

    fn raw_end(&self, offset: usize) -> usize {
        let first = self
            .pieces
            .partition_point(|piece| piece.decoded.end < offset);
        match self.pieces[first..]
            .iter()
            .take_while(|piece| piece.decoded.start <= offset)
            .find(|piece| piece.decoded.start < offset && offset <= piece.decoded.end)
        {
            Some(piece) if piece.verbatim => piece.raw.start + (offset - piece.decoded.start),
            Some(piece) => piece.raw.end,
            None => self
                .pieces
                .iter()
                .find(|piece| !piece.decoded.is_empty())
                .map_or(self.content_end, |piece| piece.raw.start),
        }
    }
}

/// How many closing quote bytes a string value has.
fn closing_quotes(raw: &str) -> usize {
    if raw.len() >= 6 && (raw.ends_with("\"\"\"") || raw.ends_with("'''")) {
        3
    } else {
        1
    }
}

/// The raw range of the escape sequence that starts at or after `from`
/// (skipping line-ending backslashes, which produce nothing) and ends no
/// later than `limit`.
fn escape_at(raw: &str, mut from: usize, limit: usize) -> Range<usize> {
    const WHITESPACE: [char; 4] = [' ', '\t', '\r', '\n'];
    while let Some(rest) = raw.get(from..limit) {
        let Some(after) = rest.strip_prefix('\\') else {
            break;
        };
        if !after.starts_with(WHITESPACE) {
            break;
        }
        from += rest.len() - after.trim_start_matches(WHITESPACE).len();
    }
    let len = match raw.as_bytes().get(from + 1) {
        Some(b'x') => 4,
        Some(b'u') => 6,
        Some(b'U') => 10,
        _ => 2,
    };
    from..(from + len).min(limit).max(from)
}

/// A `StringBuilder` that records where each appended piece came from.
struct Recorder<'i> {
    base: &'i str,
    decoded: String,
    pieces: Vec<Piece>,
    /// The raw offset after the last verbatim piece: an escape starts there
    /// or later.
    cursor: usize,
}

impl<'i> StringBuilder<'i> for Recorder<'i> {
    fn clear(&mut self) {
        self.decoded.clear();
        self.pieces.clear();
        self.cursor = 0;
    }

    fn push_str(&mut self, append: &'i str) -> bool {
        // Verbatim pieces are subslices of the raw text: their address says
        // where they are.
        let start = (append.as_ptr() as usize).wrapping_sub(self.base.as_ptr() as usize);
        if start > self.base.len() || start + append.len() > self.base.len() {
            return false;
        }
        let decoded = self.decoded.len();
        self.decoded.push_str(append);
        self.pieces.push(Piece {
            decoded: decoded..self.decoded.len(),
            raw: start..start + append.len(),
            verbatim: true,
        });
        self.cursor = start + append.len();
        true
    }

    fn push_char(&mut self, append: char) -> bool {
        let decoded = self.decoded.len();
        self.decoded.push(append);
        self.pieces.push(Piece {
            decoded: decoded..self.decoded.len(),
            // Fixed up once the next piece is known.
            raw: self.cursor..self.cursor,
            verbatim: false,
        });
        true
    }
}

#[cfg(test)]
mod tests {
    use super::StringOffsets;

    /// Decodes `raw` with the `toml` crate, then maps `needle`'s decoded
    /// range back and returns the raw text it covers.
    fn raw_of(raw: &str, needle: &str) -> String {
        let document = format!("value = {raw}\n");
        let table: toml::Table = toml::from_str(&document).expect("valid TOML");
        let decoded = table["value"].as_str().expect("a string").to_owned();
        let offsets = StringOffsets::new(raw, &decoded).expect("a map");
        let start = decoded.find(needle).expect("needle in decoded");
        raw[offsets.raw_range(start..start + needle.len())].to_owned()
    }

    #[test]
    fn literal_strings_map_directly() {
        assert_eq!(raw_of("'a <<Model>> b'", "<<Model>>"), "<<Model>>");
        assert_eq!(raw_of("'''\nline one\nthen <<x>>'''", "<<x>>"), "<<x>>");
    }

    #[test]
    fn basic_strings_skip_escapes_before_the_reference() {
        assert_eq!(
            raw_of(r#""tab\there \u00e9 \"q\" <<Model>>""#, "<<Model>>"),
            "<<Model>>"
        );
    }

    #[test]
    fn multiline_basic_strings_skip_line_ending_backslashes() {
        let raw = "\"\"\"\nfirst \\\n    joined\\n<<cwd>> end\"\"\"";
        assert_eq!(raw_of(raw, "<<cwd>>"), "<<cwd>>");
        assert_eq!(raw_of(raw, "joined"), "joined");
    }

    #[test]
    fn an_escape_inside_the_range_maps_to_the_whole_escape() {
        assert_eq!(
            raw_of(r#""x \u003c<name>> y""#, "<<name>>"),
            r"\u003c<name>>"
        );
        assert_eq!(raw_of(r#""a\n\tb""#, "\n\t"), r"\n\t");
    }

    #[test]
    fn crlf_newlines_are_kept() {
        assert_eq!(raw_of("\"\"\"\r\nx\r\n<<y>>\"\"\"", "<<y>>"), "<<y>>");
    }

    #[test]
    fn a_value_that_does_not_match_is_refused() {
        assert!(StringOffsets::new("'abc'", "abd").is_none());
        assert!(StringOffsets::new("42", "42").is_none());
        assert!(StringOffsets::new("'a' 'b'", "a").is_none());
    }
}

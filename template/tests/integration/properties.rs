//! Properties over generated input: the parser never panics, agrees with a
//! direct transcription of the grammar, reports well-formed errors, and
//! round-trips every template built from escaped literals and references.

use std::ops::Range;

use dsh_prompt_template::{
    ParseErrorKind, Segment, Template, escape_literal, interpolate, is_variable_name, position_of,
};
use proptest::prelude::*;

// --- Strategies --------------------------------------------------------

/// Text biased toward the characters the grammar cares about, in pieces
/// that often form `<<`, `>>`, escapes and (valid or not) groups, mixed with
/// letters, newlines and multi-byte characters.
fn grammar_text() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        4 => Just("<"),
        4 => Just(">"),
        3 => Just("<<"),
        3 => Just(">>"),
        2 => Just("\\"),
        2 => Just("\\<<"),
        2 => Just("<<a>>"),
        1 => Just("<<Bad>>"),
        1 => Just("<< x >>"),
        3 => Just("a"),
        2 => Just("z"),
        1 => Just("A"),
        1 => Just("0"),
        1 => Just("_"),
        1 => Just("-"),
        2 => Just(" "),
        2 => Just("\n"),
        1 => Just("\r\n"),
        1 => Just("é"),
        1 => Just("☃"),
        1 => Just("𝄞"),
    ];
    prop::collection::vec(piece, 0..48).prop_map(|pieces| pieces.concat())
}

/// Any text: arbitrary Unicode, or text biased toward the grammar.
fn any_text() -> impl Strategy<Value = String> {
    prop_oneof![any::<String>(), grammar_text()]
}

/// A valid variable name.
fn variable_name() -> impl Strategy<Value = String> {
    "[a-z][a-z0-9_]{0,8}"
}

/// One piece of a generated template, before escaping.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Piece {
    Literal(String),
    Reference(String),
}

/// Pieces of a valid template: literal runs (already merged, so that no
/// two literals are adjacent) and references.
fn pieces() -> impl Strategy<Value = Vec<Piece>> {
    let piece = prop_oneof![
        any_text().prop_map(Piece::Literal),
        variable_name().prop_map(Piece::Reference),
    ];
    prop::collection::vec(piece, 0..12).prop_map(|pieces| normalize(merge_literals(pieces)))
}

/// Merges adjacent literals and drops empty ones: a template is one
/// literal run between two references, however it was generated.
fn merge_literals(pieces: Vec<Piece>) -> Vec<Piece> {
    let mut merged: Vec<Piece> = Vec::new();
    for piece in pieces {
        match (merged.last_mut(), piece) {
            (_, Piece::Literal(text)) if text.is_empty() => {}
            (Some(Piece::Literal(last)), Piece::Literal(text)) => last.push_str(&text),
            (_, piece) => merged.push(piece),
        }
    }
    merged
}

/// The grammar cannot express a literal `\` or `<` right before a
/// reference (the `\` would escape it, the `<` would make `<<<`): such a
/// literal gets a space appended, so the pieces stay expressible.
fn normalize(mut pieces: Vec<Piece>) -> Vec<Piece> {
    for index in 0..pieces.len() {
        let before_reference = matches!(pieces.get(index + 1), Some(Piece::Reference(_)));
        if let Piece::Literal(text) = &mut pieces[index]
            && before_reference
            && (text.ends_with('\\') || text.ends_with('<'))
        {
            text.push(' ');
        }
    }
    pieces
}

/// The source of a template for `pieces`, and the offset of each reference.
fn build_source(pieces: &[Piece]) -> (String, Vec<usize>) {
    let mut source = String::new();
    let mut offsets = Vec::new();
    for piece in pieces {
        match piece {
            Piece::Literal(text) => source.push_str(&escape_literal(text)),
            Piece::Reference(name) => {
                offsets.push(source.len());
                source.push_str("<<");
                source.push_str(name);
                source.push_str(">>");
            }
        }
    }
    (source, offsets)
}

/// The parsed segments as pieces, with adjacent literals merged (an escape
/// splits a literal run in the parser's output).
fn parsed_pieces(template: &Template, source: &str) -> Vec<Piece> {
    merge_literals(
        template
            .segments(source)
            .map(|segment| match segment {
                Segment::Literal(text) => Piece::Literal(text.to_owned()),
                Segment::Reference(reference) => Piece::Reference(reference.name.to_owned()),
            })
            .collect(),
    )
}

// --- The grammar, transcribed ------------------------------------------

/// What the grammar says about a template: its pieces, or its errors as
/// `(kind, span)`.
type Expected = Result<Vec<Piece>, Vec<(ParseErrorKind, Range<usize>)>>;

/// A direct, deliberately naive transcription of the grammar in DESIGN.md,
/// one character at a time, to compare the parser with. It is quadratic
/// (it searches the rest of the input for `>>` at every `<<`), which is
/// fine for short generated inputs.
fn grammar(source: &str) -> Expected {
    let mut pieces = Vec::new();
    let mut errors = Vec::new();
    let mut literal = String::new();
    let mut at = 0;
    while at < source.len() {
        let rest = &source[at..];
        // `\<<` is a literal `<<`; the backslash is consumed.
        if rest.starts_with("\\<<") {
            literal.push_str("<<");
            at += 3;
            continue;
        }
        if rest.starts_with("<<") {
            let inside = at + 2;
            let stop = source[inside..]
                .find(['<', '>'])
                .map(|found| inside + found);
            // A complete group: `<<`, no `<` or `>`, then `>>`.
            if let Some(close) = stop.filter(|&close| source[close..].starts_with(">>")) {
                let name = &source[inside..close];
                if is_variable_name(name) {
                    pieces.push(Piece::Literal(std::mem::take(&mut literal)));
                    pieces.push(Piece::Reference(name.to_owned()));
                } else {
                    errors.push((ParseErrorKind::MalformedReference, at..close + 2));
                }
                at = close + 2;
                continue;
            }
            // No complete group, but a `>>` follows: malformed, up to and
            // including the next run of `>`.
            if let Some(found) = source[inside..].find(">>") {
                let close = inside + found;
                let end =
                    close + source[close..].len() - source[close..].trim_start_matches('>').len();
                errors.push((ParseErrorKind::UnclosedOpening, at..end));
                at = end;
                continue;
            }
            // No `>>` anywhere after: the whole run of `<` is literal.
            let run = rest.len() - rest.trim_start_matches('<').len();
            literal.push_str(&rest[..run]);
            at += run;
            continue;
        }
        let ch = rest.chars().next().unwrap_or_default();
        literal.push(ch);
        at += ch.len_utf8();
    }
    pieces.push(Piece::Literal(literal));
    if errors.is_empty() {
        Ok(merge_literals(pieces))
    } else {
        Err(errors)
    }
}

/// Line and column of `offset`, counted independently of the crate.
fn line_column(source: &str, offset: usize) -> (usize, usize) {
    let before = &source[..offset];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |newline| newline + 1);
    (line, before[line_start..].chars().count() + 1)
}

// --- Properties --------------------------------------------------------

/// The default configuration (which honours `PROPTEST_CASES`), with at
/// least `cases` cases.
fn at_least(cases: u32) -> ProptestConfig {
    let config = ProptestConfig::default();
    ProptestConfig {
        cases: config.cases.max(cases),
        ..config
    }
}

// Properties over raw text: cheap to generate, so many cases.
proptest! {
    #![proptest_config(at_least(1024))]

    #[test]
    fn parsing_never_panics(source in any_text()) {
        let _ = Template::parse(&source);
    }

    /// The recovering parse is the parse, carried on past errors: the same
    /// errors, the same template when there are none, and the references
    /// a text whose malformed parts were blanked out would make.
    #[test]
    fn the_recovering_parse_agrees_with_the_parse(source in any_text()) {
        let (template, errors) = Template::parse_recovering(&source);
        match Template::parse(&source) {
            Ok(parsed) => {
                prop_assert!(errors.is_none());
                prop_assert_eq!(parsed, template);
            }
            Err(parsed) => {
                let errors = errors.expect("the same errors");
                prop_assert_eq!(&parsed, &errors);
                let mut blanked = source.clone();
                for error in &errors {
                    blanked.replace_range(error.span.clone(), &" ".repeat(error.span.len()));
                }
                if let Ok(clean) = Template::parse(&blanked) {
                    let recovered: Vec<_> = template.references(&source).collect();
                    let after: Vec<_> = clean.references(&blanked).map(|r| (r.name.to_owned(), r.offset)).collect();
                    let recovered: Vec<_> = recovered.iter().map(|r| (r.name.to_owned(), r.offset)).collect();
                    prop_assert_eq!(recovered, after, "source {:?}", source);
                }
            }
        }
    }

    #[test]
    fn the_parser_agrees_with_the_grammar(source in grammar_text()) {
        let parsed: Expected = match Template::parse(&source) {
            Ok(template) => Ok(parsed_pieces(&template, &source)),
            Err(errors) => Err(errors.iter().map(|error| (error.kind, error.span.clone())).collect()),
        };
        prop_assert_eq!(parsed, grammar(&source), "source {:?}", source);
    }

    #[test]
    fn errors_are_ordered_in_bounds_and_on_character_boundaries(source in any_text()) {
        let Err(errors) = Template::parse(&source) else { return Ok(()) };
        prop_assert!(errors.len() >= 1);
        let mut previous_end = 0;
        for error in &errors {
            let Range { start, end } = error.span.clone();
            prop_assert!(previous_end <= start && start < end && end <= source.len(), "{:?}", error);
            prop_assert!(source.is_char_boundary(start) && source.is_char_boundary(end), "{:?}", error);
            prop_assert_eq!(&source[start..end], error.text.as_str());
            prop_assert!(error.text.starts_with("<<"), "{:?}", error);
            prop_assert_eq!(error.position.offset, start);
            prop_assert_eq!((error.position.line, error.position.column), line_column(&source, start));
            prop_assert!(error.to_string().contains("\\<<"), "{}", error);
            previous_end = end;
        }
    }

    #[test]
    fn escaped_text_renders_back_to_itself(text in any_text()) {
        let escaped = escape_literal(&text);
        let rendered = interpolate(&escaped, |reference| Err(reference.name.to_owned()));
        prop_assert_eq!(rendered.map_err(|error| error.to_string()), Ok(text.clone()));
    }

    #[test]
    fn position_of_agrees_with_counting(source in any_text(), offset in 0usize..256) {
        let position = position_of(&source, offset);
        let mut expected = offset.min(source.len());
        while !source.is_char_boundary(expected) {
            expected -= 1;
        }
        prop_assert_eq!(position.offset, expected);
        prop_assert_eq!((position.line, position.column), line_column(&source, expected));
    }
}

// Properties over whole generated templates: costlier to generate (in a
// debug build), so the default number of cases.
proptest! {
    #![proptest_config(at_least(256))]

    #[test]
    fn a_valid_template_round_trips(pieces in pieces()) {
        let (source, offsets) = build_source(&pieces);
        let template = Template::parse(&source)
            .map_err(|errors| TestCaseError::fail(format!("{source:?} fails:\n{errors}")))?;
        prop_assert_eq!(parsed_pieces(&template, &source), pieces.clone());

        let names: Vec<&str> = pieces.iter().filter_map(|piece| match piece {
            Piece::Reference(name) => Some(name.as_str()),
            Piece::Literal(_) => None,
        }).collect();
        let parsed: Vec<(&str, usize)> = template.references(&source).map(|r| (r.name, r.offset)).collect();
        let expected: Vec<(&str, usize)> = names.iter().copied().zip(offsets.iter().copied()).collect();
        prop_assert_eq!(parsed, expected);

        // Rendering with a marker for every reference gives the literals
        // back, unescaped, with a marker where each reference was.
        const MARKER: &str = "\u{1}";
        let rendered = template.render(&source, |_| Ok::<_, ()>(MARKER));
        let expected: String = pieces.iter().map(|piece| match piece {
            Piece::Literal(text) => text.as_str(),
            Piece::Reference(_) => MARKER,
        }).collect();
        prop_assert_eq!(rendered, Ok(expected));
        prop_assert_eq!(template.has_references(), !names.is_empty());
    }

    #[test]
    fn literal_len_is_the_length_of_the_literal_segments(pieces in pieces()) {
        let (source, _) = build_source(&pieces);
        let template = Template::parse(&source).map_err(|errors| TestCaseError::fail(errors.to_string()))?;
        let literal: usize = template.segments(&source).map(|segment| match segment {
            Segment::Literal(text) => text.len(),
            Segment::Reference(_) => 0,
        }).sum();
        prop_assert_eq!(template.literal_len(), literal);
    }

    #[test]
    fn values_are_never_rescanned(
        pieces in pieces(),
        values in prop::collection::vec(
            prop_oneof![
                Just("<<x>>".to_owned()),
                Just("\\<<x>>".to_owned()),
                Just("<<Bad>>".to_owned()),
                Just("<<".to_owned()),
                Just("\\".to_owned()),
                grammar_text(),
            ],
            12,
        ),
    ) {
        let (source, _) = build_source(&pieces);
        let mut next_value = values.iter();
        let mut expected = String::new();
        for piece in &pieces {
            match piece {
                Piece::Literal(text) => expected.push_str(text),
                Piece::Reference(_) => expected.push_str(next_value.next().map_or("", String::as_str)),
            }
        }
        let mut next_value = values.iter();
        let rendered = interpolate(&source, |_| Ok::<_, ()>(next_value.next().map_or("", String::as_str)));
        prop_assert_eq!(rendered.map_err(|error| format!("{error:?}")), Ok(expected));
    }

}

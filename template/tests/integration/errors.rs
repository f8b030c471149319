//! Syntax errors: every one reported, in order, each with its text, byte
//! span, line:column (in characters) and a message that names the escape.

use dsh_prompt_template::{ParseError, ParseErrorKind, Position, Template, position_of};

/// The errors of a template that must be invalid.
fn parse_err(source: &str) -> Vec<ParseError> {
    match Template::parse(source) {
        Ok(template) => panic!("{source:?} should not parse, got {template:?}"),
        Err(errors) => errors.into_iter().collect(),
    }
}

/// A position from its parts.
fn at(offset: usize, line: usize, column: usize) -> Position {
    Position {
        offset,
        line,
        column,
    }
}

/// One malformed sample of each kind, and of each shape the design names.
const MALFORMED: &[&str] = &[
    "<< model >>",
    "<<Model>>",
    "<<>>",
    "<<a-b>>",
    "<<<model>>>",
    "a << b << c >> d",
    "<<a> b >>",
    "cat <<EOF then <<cwd>>",
];

#[test]
fn an_error_on_the_first_line_counts_columns_from_one() {
    let errors = parse_err("<<Model>>");
    assert_eq!(errors[0].position, at(0, 1, 1));
    assert_eq!(errors[0].span, 0..9);
    assert_eq!(errors[0].text, "<<Model>>");
}

#[test]
fn an_error_after_multibyte_characters_counts_columns_in_characters() {
    // "Modèle : ☃\n" is 14 bytes; "  café → " is 12 bytes and 9 characters.
    let source = "Modèle : ☃\n  café → <<Bad>> ok\n";
    let errors = parse_err(source);
    assert_eq!(errors.len(), 1);
    assert_eq!(errors[0].kind, ParseErrorKind::MalformedReference);
    assert_eq!(errors[0].span, 26..33);
    assert_eq!(errors[0].text, "<<Bad>>");
    assert_eq!(errors[0].position, at(26, 2, 10));
    assert!(errors[0].to_string().contains("at 2:10"), "{}", errors[0]);
}

#[test]
fn several_errors_are_all_reported_in_order() {
    use ParseErrorKind::{MalformedReference, UnclosedOpening};
    let source = "première ligne\r\n«ok» <<x>> puis <<Y>>\n\tfin << z >> <<<w>>> et <<>>";
    let errors = parse_err(source);
    let summary: Vec<_> = errors
        .iter()
        .map(|error| {
            (
                error.kind,
                error.span.clone(),
                error.text.as_str(),
                error.position,
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            (MalformedReference, 35..40, "<<Y>>", at(35, 2, 17)),
            (MalformedReference, 46..53, "<< z >>", at(46, 3, 6)),
            (UnclosedOpening, 54..61, "<<<w>>>", at(54, 3, 14)),
            (MalformedReference, 65..69, "<<>>", at(65, 3, 25)),
        ]
    );
}

#[test]
fn an_unclosed_opening_does_not_hide_the_errors_after_it() {
    let errors = parse_err("<< a <<b>> <<C>>");
    let texts: Vec<&str> = errors.iter().map(|error| error.text.as_str()).collect();
    assert_eq!(texts, ["<< a <<b>>", "<<C>>"]);
}

#[test]
fn a_valid_reference_between_errors_is_not_reported() {
    let errors = parse_err("<<A>> <<ok>> <<B>>");
    let spans: Vec<_> = errors.iter().map(|error| error.span.clone()).collect();
    assert_eq!(spans, [0..5, 13..18]);
}

#[test]
fn every_error_message_names_the_escape() {
    for source in MALFORMED {
        for error in parse_err(source) {
            let message = error.to_string();
            assert!(message.contains("\\<<"), "{source:?}: {message}");
        }
    }
}

#[test]
fn every_error_message_quotes_the_text_and_its_position() {
    for source in MALFORMED {
        for error in parse_err(source) {
            let message = error.to_string();
            assert!(message.contains(&format!("`{}`", error.text)), "{message}");
            assert!(
                message.contains(&format!("at {}", error.position)),
                "{message}"
            );
        }
    }
}

#[test]
fn error_messages_are_lowercase_without_a_trailing_period() {
    for source in MALFORMED {
        for error in parse_err(source) {
            let message = error.to_string();
            let first = message.chars().next();
            assert!(
                first.is_some_and(|c| c.is_lowercase() || c == '`'),
                "{message}"
            );
            assert!(!message.ends_with('.'), "{message}");
        }
    }
}

#[test]
fn a_malformed_reference_message_states_the_name_grammar_and_suggestion() {
    let message = parse_err("<< Model >>")[0].to_string();
    assert_eq!(
        message,
        "malformed reference `<< Model >>` at 1:1: a reference is `<<name>>` with a name \
         matching `[a-z][a-z0-9_]*` (did you mean `<<model>>`?); write `\\<<` for a literal `<<`"
    );
}

#[test]
fn an_unclosed_opening_message_says_a_closing_pair_follows() {
    let message = parse_err("x <<<model>>>")[0].to_string();
    assert_eq!(
        message,
        "`<<` at 1:3 opens no reference, but a `>>` follows (in `<<<model>>>`); \
         write `\\<<` for a literal `<<`"
    );
}

#[test]
fn the_error_list_displays_one_error_a_line() {
    let errors = Template::parse("<<A>>\n<<B>>\n<<C>>").expect_err("three malformed groups");
    assert_eq!(errors.len(), 3);
    assert_eq!(errors.first().text, "<<A>>");
    let shown = errors.to_string();
    let lines: Vec<&str> = shown.lines().collect();
    assert_eq!(lines.len(), 3);
    for (line, error) in lines.iter().zip(&errors) {
        assert_eq!(*line, error.to_string());
    }
    assert_eq!(errors.iter().count(), 3);
}

#[test]
fn errors_implement_std_error() {
    fn assert_error<E: std::error::Error + Send + Sync + 'static>() {}
    assert_error::<ParseError>();
    assert_error::<dsh_prompt_template::ParseErrors>();
}

// --- `position_of` -----------------------------------------------------

/// `position_of(source, offset)` is `expected` for each
/// `(offset, expected)` of `cases`.
#[track_caller]
fn assert_positions(source: &str, cases: &[(usize, Position)]) {
    for &(offset, expected) in cases {
        assert_eq!(position_of(source, offset), expected, "offset {offset}");
    }
}

#[test]
fn position_of_counts_lines_and_character_columns() {
    assert_positions(
        "ab\nçé☃x\n",
        &[
            (0, at(0, 1, 1)),
            (2, at(2, 1, 3)),
            (3, at(3, 2, 1)),
            // "çé☃" is 2 + 2 + 3 bytes.
            (10, at(10, 2, 4)),
            (11, at(11, 2, 5)),
            (12, at(12, 3, 1)),
        ],
    );
}

#[test]
fn position_of_moves_an_offset_inside_a_character_back_to_its_start() {
    assert_positions(
        "a☃b",
        &[(2, at(1, 1, 2)), (3, at(1, 1, 2)), (4, at(4, 1, 3))],
    );
}

#[test]
fn position_of_clamps_an_offset_past_the_end() {
    assert_positions("ab\nc", &[(100, at(4, 2, 2))]);
    assert_positions("", &[(5, at(0, 1, 1))]);
}

#[test]
fn position_of_counts_a_carriage_return_as_a_column() {
    // Lines end at `\n`; a `\r` before it is an ordinary character.
    assert_positions("a\r\nb", &[(2, at(2, 1, 3)), (3, at(3, 2, 1))]);
}

#[test]
fn position_displays_as_line_colon_column() {
    assert_eq!(at(17, 3, 9).to_string(), "3:9");
}

#[test]
fn error_positions_agree_with_position_of() {
    let source = "ü\n\n  <<X>> ☃ <<<y>>>\n<<>>";
    for error in parse_err(source) {
        assert_eq!(error.position, position_of(source, error.span.start));
    }
}

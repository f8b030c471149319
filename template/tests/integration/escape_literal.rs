//! `escape_literal`: arbitrary text in, a template that renders back to
//! exactly that text out.

use std::borrow::Cow;

use dsh_prompt_template::{Template, escape_literal};

/// Parses the escaped text and renders it; it must have no references.
fn round_trip(text: &str) -> String {
    let escaped = escape_literal(text);
    let template = match Template::parse(&escaped) {
        Ok(template) => template,
        Err(errors) => panic!("escape of {text:?} is {escaped:?}, which fails:\n{errors}"),
    };
    assert!(!template.has_references(), "{escaped:?}");
    match template.render(&escaped, |reference| Err(reference.name.to_owned())) {
        Ok(text) => text,
        Err(name) => panic!("escape of {text:?} references `{name}`"),
    }
}

#[test]
fn text_without_an_opening_is_borrowed_unchanged() {
    for text in ["", "plain", "a < b > c", "x >> y", "C:\\dir", "<", "\\<"] {
        assert!(
            matches!(escape_literal(text), Cow::Borrowed(t) if t == text),
            "{text:?}"
        );
    }
}

#[test]
fn each_opening_gets_one_backslash() {
    for (text, escaped) in [
        ("<<", "\\<<"),
        ("<<model>>", "\\<<model>>"),
        ("cat <<EOF", "cat \\<<EOF"),
        ("a << b << c >> d", "a \\<< b \\<< c >> d"),
        // Non-overlapping, left to right, as the parser scans.
        ("<<<", "\\<<<"),
        ("<<<<", "\\<<\\<<"),
        ("<<<<<", "\\<<\\<<<"),
        // A backslash already there is text: it gets one more.
        ("\\<<", "\\\\<<"),
        ("☃<<é", "☃\\<<é"),
    ] {
        assert_eq!(escape_literal(text), escaped, "{text:?}");
    }
}

#[test]
fn escaped_text_parses_back_to_the_original() {
    for text in [
        "",
        "<<model>>",
        "<<Model>> << x >> <<>> <<a-b>>",
        "<<<model>>>",
        "a << b << c >> d",
        "cat <<EOF\nbody\nEOF",
        "\\<<x>>",
        "\\\\<<x>>",
        "<<<<<<",
        "<\\<<",
        "end\\",
        "é<<☃>>",
        ">> <<",
    ] {
        assert_eq!(round_trip(text), text, "{text:?}");
    }
}

#[test]
fn a_trailing_backslash_escapes_a_following_reference() {
    // `escape_literal` makes text stand on its own; a reference written
    // right after a trailing backslash is escaped by it (documented).
    let source = format!("{}<<x>>", escape_literal("dir\\"));
    let template = Template::parse(&source).expect("an escaped reference is valid");
    assert!(!template.has_references());
}

#[test]
fn a_trailing_bracket_makes_a_following_reference_malformed() {
    let source = format!("{}<<x>>", escape_literal("a <"));
    assert!(Template::parse(&source).is_err(), "{source:?}");
}

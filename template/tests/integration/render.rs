//! Rendering: values are copied as they are, never re-scanned; names are
//! looked up exactly; lookup and syntax errors reach the caller.

use dsh_prompt_template::{InterpolateError, Reference, Template, interpolate};

/// A lookup over a fixed table that fails, naming the variable, for any
/// other name.
fn table<'v>(
    entries: &'v [(&'v str, &'v str)],
) -> impl FnMut(&Reference<'_>) -> Result<&'v str, String> {
    |reference| {
        entries
            .iter()
            .find(|(name, _)| *name == reference.name)
            .map(|(_, value)| *value)
            .ok_or_else(|| format!("no variable `{}`", reference.name))
    }
}

/// `source` renders to `expected` with the values `entries`.
#[track_caller]
fn assert_renders(source: &str, entries: &[(&str, &str)], expected: &str) {
    assert_eq!(interpolate(source, table(entries)).as_deref(), Ok(expected));
}

#[test]
fn references_are_replaced_by_their_values() {
    assert_renders(
        "You are <<model>> in <<cwd>>; <<model>> again.",
        &[("model", "gpt-5"), ("cwd", "/work")],
        "You are gpt-5 in /work; gpt-5 again.",
    );
}

#[test]
fn a_value_containing_a_reference_stays_literal() {
    assert_renders("a <<x>> b", &[("x", "<<y>>"), ("y", "leaked")], "a <<y>> b");
}

#[test]
fn a_value_containing_syntax_that_would_be_an_error_stays_literal() {
    for value in [
        "<<Model>>",
        "<<<x>>>",
        "<< a << b >>",
        "\\<<x>>",
        "\\",
        "<<",
    ] {
        let text = interpolate("[<<x>>]", table(&[("x", value)]));
        assert_eq!(text, Ok(format!("[{value}]")), "{value:?}");
    }
}

#[test]
fn an_escape_in_a_value_keeps_its_backslash() {
    assert_renders("<<x>>", &[("x", "cat \\<<EOF")], "cat \\<<EOF");
}

#[test]
fn a_trailing_backslash_in_a_value_does_not_escape_what_follows() {
    assert_renders(
        "<<dir>><<name>>",
        &[("dir", "C:\\"), ("name", "x")],
        "C:\\x",
    );
}

#[test]
fn the_lookup_sees_each_reference_with_its_exact_name_and_offset() {
    let source = "<<a>> and <<ab>> and <<a>>";
    let mut seen = Vec::new();
    let text = interpolate(source, |reference| {
        seen.push((reference.name.to_owned(), reference.offset));
        Ok::<_, ()>("v")
    });
    assert_eq!(text.as_deref(), Ok("v and v and v"));
    assert_eq!(
        seen,
        [
            ("a".to_owned(), 0),
            ("ab".to_owned(), 10),
            ("a".to_owned(), 21)
        ]
    );
}

#[test]
fn a_lookup_error_is_returned_as_is() {
    let error = interpolate("<<model>> <<cwd>>", table(&[("model", "m")])).expect_err("no cwd");
    assert_eq!(
        error,
        InterpolateError::Lookup("no variable `cwd`".to_owned())
    );
    assert_eq!(error.to_string(), "no variable `cwd`");
}

#[test]
fn a_syntax_error_is_returned_before_any_lookup() {
    let mut lookups = 0;
    let error = interpolate("<<model>> <<Bad>> << x >>", |_| {
        lookups += 1;
        Ok::<_, String>("v")
    })
    .expect_err("malformed");
    assert_eq!(lookups, 0);
    match error {
        InterpolateError::Parse(errors) => assert_eq!(errors.len(), 2),
        InterpolateError::Lookup(error) => panic!("unexpected lookup error {error}"),
    }
}

#[test]
fn interpolate_errors_chain_to_their_source() {
    use std::error::Error as _;

    #[derive(Debug, PartialEq)]
    struct Missing;
    impl std::fmt::Display for Missing {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("missing")
        }
    }
    impl std::error::Error for Missing {}

    let lookup = interpolate("<<x>>", |_| Err::<&str, _>(Missing)).expect_err("missing");
    assert!(lookup.source().is_some_and(|source| source.is::<Missing>()));

    let parse = interpolate("<<X>>", |_| Err::<&str, _>(Missing)).expect_err("malformed");
    let source = parse.source().expect("a parse error has a source");
    assert!(source.is::<dsh_prompt_template::ParseErrors>());
    assert_eq!(parse.to_string(), source.to_string());
}

#[test]
fn render_into_appends_and_keeps_the_text_before_a_failing_reference() {
    let source = "head <<a>> middle <<b>> tail";
    let template = Template::parse(source).expect("valid");
    let mut out = String::from(">");
    let result = template.render_into(source, &mut out, table(&[("a", "A")]));
    assert_eq!(result, Err("no variable `b`".to_owned()));
    assert_eq!(out, ">head A middle ");

    let mut out = String::from(">");
    template
        .render_into(source, &mut out, table(&[("a", "A"), ("b", "B")]))
        .expect("both variables are present");
    assert_eq!(out, ">head A middle B tail");
}

#[test]
fn a_template_renders_the_same_way_twice() {
    let source = "\\<<x>> <<y>>";
    let template = Template::parse(source).expect("valid");
    let first = template.render(source, table(&[("y", "<<z>>")]));
    let second = template.render(source, table(&[("y", "<<z>>")]));
    assert_eq!(first.as_deref(), Ok("<<x>> <<z>>"));
    assert_eq!(first, second);
}

#[test]
fn a_template_without_references_renders_without_lookups() {
    let source = "cat \\<<EOF\n\\<<x>>\nEOF";
    let text = interpolate(source, |_| Err::<&str, _>("no lookups expected"));
    assert_eq!(text.as_deref(), Ok("cat <<EOF\n<<x>>\nEOF"));
}

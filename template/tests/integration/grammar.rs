//! The grammar, one rule at a time: what parses as a reference, what is
//! malformed, what stays literal, and what the `\<<` escape does.
//!
//! Error positions and messages are pinned in `errors.rs`; rendering with
//! values in `render.rs`.

use dsh_prompt_template::{ParseError, ParseErrorKind, Reference, Segment, Template};

/// Parses a template that must be valid.
fn parse_ok(source: &str) -> Template {
    match Template::parse(source) {
        Ok(template) => template,
        Err(errors) => panic!("{source:?} should parse, got:\n{errors}"),
    }
}

/// The errors of a template that must be invalid.
fn parse_err(source: &str) -> Vec<ParseError> {
    match Template::parse(source) {
        Ok(template) => panic!("{source:?} should not parse, got {template:?}"),
        Err(errors) => errors.into_iter().collect(),
    }
}

/// Renders a valid template with every reference shown as `{name}`, so one
/// string shows both the literal text (escapes resolved) and the references.
fn render_marked(source: &str) -> String {
    let template = parse_ok(source);
    let mut out = String::new();
    for segment in template.segments(source) {
        match segment {
            Segment::Literal(text) => out.push_str(text),
            Segment::Reference(reference) => {
                out.push('{');
                out.push_str(reference.name);
                out.push('}');
            }
        }
    }
    out
}

/// The `(name, offset)` of every reference of a valid template.
fn references(source: &str) -> Vec<(String, usize)> {
    let template = parse_ok(source);
    template
        .references(source)
        .map(|reference| (reference.name.to_owned(), reference.offset))
        .collect()
}

/// `(kind, span, text)` of every error, for compact assertions.
fn error_summary(source: &str) -> Vec<(ParseErrorKind, std::ops::Range<usize>, String)> {
    parse_err(source)
        .into_iter()
        .map(|error| (error.kind, error.span, error.text))
        .collect()
}

// --- References --------------------------------------------------------

#[test]
fn references_are_parsed_with_their_names_and_offsets() {
    let source = "You are <<model>> working in <<cwd>>.";
    assert_eq!(
        references(source),
        [("model".to_owned(), 8), ("cwd".to_owned(), 29)]
    );
    let template = parse_ok(source);
    let segments: Vec<Segment<'_>> = template.segments(source).collect();
    assert_eq!(
        segments,
        [
            Segment::Literal("You are "),
            Segment::Reference(Reference {
                name: "model",
                offset: 8
            }),
            Segment::Literal(" working in "),
            Segment::Reference(Reference {
                name: "cwd",
                offset: 29
            }),
            Segment::Literal("."),
        ]
    );
}

#[test]
fn a_reference_offset_points_at_its_opening_brackets() {
    let source = "é☃ <<git_branch2>> and\n<<a>>";
    for (name, offset) in references(source) {
        let group = format!("<<{name}>>");
        assert_eq!(&source[offset..offset + group.len()], group);
    }
}

#[test]
fn names_may_contain_digits_and_underscores_after_a_lowercase_letter() {
    for name in ["a", "model", "git_branch2", "a_", "x9_y"] {
        let source = format!("<<{name}>>");
        assert_eq!(references(&source), [(name.to_owned(), 0)], "{source}");
    }
}

#[test]
fn a_name_referenced_twice_is_listed_twice() {
    assert_eq!(
        references("<<cwd>> then <<cwd>>"),
        [("cwd".to_owned(), 0), ("cwd".to_owned(), 13)]
    );
}

#[test]
fn adjacent_references_leave_no_empty_literals() {
    let source = "<<a>><<b>>";
    let template = parse_ok(source);
    let segments: Vec<Segment<'_>> = template.segments(source).collect();
    assert_eq!(
        segments,
        [
            Segment::Reference(Reference {
                name: "a",
                offset: 0
            }),
            Segment::Reference(Reference {
                name: "b",
                offset: 5
            }),
        ]
    );
    assert_eq!(template.literal_len(), 0);
    assert!(template.has_references());
}

#[test]
fn an_empty_template_has_no_segments() {
    let template = parse_ok("");
    assert_eq!(template.segments("").count(), 0);
    assert!(!template.has_references());
    assert_eq!(template.literal_len(), 0);
}

#[test]
fn literal_len_counts_the_literal_bytes_after_escapes() {
    // 8 bytes of "You are ", the backslash of `\<<` is dropped: "<<EOF" is 5.
    let source = "You are <<model>>; \\<<EOF";
    let template = parse_ok(source);
    assert_eq!(
        template.literal_len(),
        "You are ".len() + "; ".len() + "<<EOF".len()
    );
}

#[test]
fn a_template_without_references_says_so() {
    assert!(!parse_ok("plain text, x >> y, `cat <<EOF`").has_references());
    assert!(parse_ok("x <<y>>").has_references());
}

// --- Malformed complete groups ----------------------------------------

#[test]
fn a_complete_group_whose_inside_is_not_a_name_is_malformed() {
    for group in [
        "<< model >>",
        "<<Model>>",
        "<<>>",
        "<<a-b>>",
        "<<2fa>>",
        "<<_x>>",
        "<<a b>>",
        "<<modèle>>",
        "<<model\n>>",
    ] {
        let source = format!("ab {group} cd");
        assert_eq!(
            error_summary(&source),
            [(
                ParseErrorKind::MalformedReference,
                3..3 + group.len(),
                group.to_owned()
            )],
            "{source:?}"
        );
    }
}

#[test]
fn a_malformed_group_suggests_the_name_the_author_probably_meant() {
    for (group, suggestion) in [
        ("<< model >>", Some("<<model>>")),
        ("<<Model>>", Some("<<model>>")),
        ("<< CWD >>", Some("<<cwd>>")),
        ("<<a-b>>", Some("<<a_b>>")),
        ("<<>>", None),
        ("<<2fa>>", None),
        ("<<a b>>", None),
    ] {
        let errors = parse_err(group);
        assert_eq!(errors.len(), 1, "{group}");
        assert_eq!(errors[0].suggestion.as_deref(), suggestion, "{group}");
    }
}

// --- `<<` that opens no complete group --------------------------------

/// Sources whose `<<` opens no complete group, or a group whose inside is
/// not a name, each with its one error: `(case, source, kind, span, text)`.
const ONE_ERROR: &[(&str, &str, ParseErrorKind, std::ops::Range<usize>, &str)] = &[
    (
        "a triple-bracket group is malformed and reported once",
        "<<<model>>>",
        ParseErrorKind::UnclosedOpening,
        0..11,
        "<<<model>>>",
    ),
    (
        "an opening inside an opening is malformed",
        "a << b << c >> d",
        ParseErrorKind::UnclosedOpening,
        2..14,
        "<< b << c >>",
    ),
    (
        // `<<a>` is not a complete group; the `>>` after it makes it
        // malformed.
        "a single closing bracket does not close a group",
        "<<a> b >> c",
        ParseErrorKind::UnclosedOpening,
        0..9,
        "<<a> b >>",
    ),
    (
        // The `>>` of the reference follows the heredoc's `<<`, so the
        // heredoc must be escaped (see `RENDERED`); the error covers it up
        // to that `>>`.
        "a heredoc followed later by a closing pair is malformed",
        "run `cat <<EOF` on <<model>>",
        ParseErrorKind::UnclosedOpening,
        9..28,
        "<<EOF` on <<model>>",
    ),
    (
        // Nothing between `<<` and `>>` is `<` or `>`, so this is a
        // complete group whose inside is not a name.
        "a heredoc and a later append form a malformed complete group",
        "`cat <<EOF`, x >> y",
        ParseErrorKind::MalformedReference,
        5..17,
        "<<EOF`, x >>",
    ),
];

#[test]
fn each_source_has_its_one_error() {
    for (name, source, kind, span, text) in ONE_ERROR {
        assert_eq!(
            error_summary(source),
            [(*kind, span.clone(), (*text).to_owned())],
            "{name}"
        );
    }
}

#[test]
fn an_opening_with_no_closing_pair_after_it_is_literal() {
    for source in [
        "cat <<EOF",
        "cat <<EOF\nhello\nEOF\n",
        "std::cout << x << std::endl;",
        "<<",
        "<<<<",
        "a <<b> c",
        "x >> y <<",
        ">> then <<a",
        "<<a>",
    ] {
        let template = parse_ok(source);
        assert!(!template.has_references(), "{source:?}");
        assert_eq!(render_marked(source), source, "{source:?}");
    }
}

// --- The `\<<` escape --------------------------------------------------

/// Valid sources and how they render with each reference as `{name}`:
/// `(case, source, rendered)`.
const RENDERED: &[(&str, &str, &str)] = &[
    (
        "a closing pair without an opening is literal",
        "a >> b >>> c",
        "a >> b >>> c",
    ),
    (
        // Only a `>>` *after* the `<<` counts.
        "a closing pair before the opening does not make it malformed",
        "<<a>> >> cat <<EOF",
        "{a} >> cat <<EOF",
    ),
    (
        "an extra closing bracket after a reference is literal",
        "<<a>>>",
        "{a}>",
    ),
    (
        "an escaped opening renders as a literal opening",
        "\\<<",
        "<<",
    ),
    (
        "an escaped heredoc renders as a literal opening",
        "cat \\<<EOF",
        "cat <<EOF",
    ),
    (
        "an escaped reference renders literally",
        "\\<<model>>",
        "<<model>>",
    ),
    (
        "an escaped malformed group is not an error",
        "\\<< model >> and \\<<<x>>>",
        "<< model >> and <<<x>>>",
    ),
    (
        "an escape and a reference can share a template",
        "cat \\<<EOF > <<cwd>>/out",
        "cat <<EOF > {cwd}/out",
    ),
    (
        "an escaped heredoc before a reference",
        "run `cat \\<<EOF` on <<model>>",
        "run `cat <<EOF` on {model}",
    ),
    (
        "exactly one backslash before an opening is consumed",
        "\\\\<<model>>",
        "\\<<model>>",
    ),
    (
        "exactly one backslash before a bare opening is consumed",
        "\\\\\\<<",
        "\\\\<<",
    ),
    (
        // `\<<` takes two `<`; the third cannot start a `<<` of its own.
        "an escape covers two brackets, so a third stays a single bracket",
        "\\<<<model>>",
        "<<<model>>",
    ),
    (
        // A backslash between brackets escapes the pair after it.
        "a backslash between brackets escapes the pair after it",
        "<\\<<model>>",
        "<<<model>>",
    ),
    (
        // There is no way to write a literal `\` right before a reference:
        // the backslash always escapes it. Pinned so that a change is
        // deliberate.
        "a trailing backslash escapes the next reference",
        "dir\\<<name>>",
        "dir<<name>>",
    ),
];

#[test]
fn each_source_renders_as_marked() {
    for (name, source, rendered) in RENDERED {
        assert_eq!(render_marked(source), *rendered, "{name}");
    }
}

#[test]
fn an_escaped_reference_is_no_reference() {
    assert!(!parse_ok("\\<<model>>").has_references());
}

#[test]
fn a_backslash_not_before_an_opening_is_kept() {
    for source in ["C:\\path", "\\n", "a \\< b", "\\>>", "<\\<", "end\\"] {
        assert_eq!(render_marked(source), source, "{source:?}");
    }
}

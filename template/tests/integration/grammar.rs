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

#[test]
fn a_triple_bracket_group_is_malformed_and_reported_once() {
    assert_eq!(
        error_summary("<<<model>>>"),
        [(
            ParseErrorKind::UnclosedOpening,
            0..11,
            "<<<model>>>".to_owned()
        )]
    );
}

#[test]
fn an_opening_inside_an_opening_is_malformed() {
    assert_eq!(
        error_summary("a << b << c >> d"),
        [(
            ParseErrorKind::UnclosedOpening,
            2..14,
            "<< b << c >>".to_owned()
        )]
    );
}

#[test]
fn a_single_closing_bracket_does_not_close_a_group() {
    // `<<a>` is not a complete group; the `>>` after it makes it malformed.
    assert_eq!(
        error_summary("<<a> b >> c"),
        [(
            ParseErrorKind::UnclosedOpening,
            0..9,
            "<<a> b >>".to_owned()
        )]
    );
}

#[test]
fn a_heredoc_followed_later_by_a_closing_pair_is_malformed() {
    // The `>>` of the reference follows the heredoc's `<<`, so the heredoc
    // must be escaped; the error covers it up to that `>>`.
    let source = "run `cat <<EOF` on <<model>>";
    assert_eq!(
        error_summary(source),
        [(
            ParseErrorKind::UnclosedOpening,
            9..28,
            "<<EOF` on <<model>>".to_owned()
        )]
    );
    assert_eq!(
        render_marked("run `cat \\<<EOF` on <<model>>"),
        "run `cat <<EOF` on {model}"
    );
}

#[test]
fn a_heredoc_and_a_later_append_form_a_malformed_complete_group() {
    // Nothing between `<<` and `>>` is `<` or `>`, so this is a complete
    // group whose inside is not a name.
    assert_eq!(
        error_summary("`cat <<EOF`, x >> y"),
        [(
            ParseErrorKind::MalformedReference,
            5..17,
            "<<EOF`, x >>".to_owned()
        )]
    );
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

#[test]
fn a_closing_pair_without_an_opening_is_literal() {
    assert_eq!(render_marked("a >> b >>> c"), "a >> b >>> c");
}

#[test]
fn a_closing_pair_before_the_opening_does_not_make_it_malformed() {
    // Only a `>>` *after* the `<<` counts.
    assert_eq!(render_marked("<<a>> >> cat <<EOF"), "{a} >> cat <<EOF");
}

#[test]
fn an_extra_closing_bracket_after_a_reference_is_literal() {
    assert_eq!(render_marked("<<a>>>"), "{a}>");
}

// --- The `\<<` escape --------------------------------------------------

#[test]
fn an_escaped_opening_renders_as_a_literal_opening() {
    assert_eq!(render_marked("\\<<"), "<<");
    assert_eq!(render_marked("cat \\<<EOF"), "cat <<EOF");
}

#[test]
fn an_escaped_reference_renders_literally() {
    let source = "\\<<model>>";
    assert!(!parse_ok(source).has_references());
    assert_eq!(render_marked(source), "<<model>>");
}

#[test]
fn an_escaped_malformed_group_is_not_an_error() {
    assert_eq!(
        render_marked("\\<< model >> and \\<<<x>>>"),
        "<< model >> and <<<x>>>"
    );
}

#[test]
fn an_escape_and_a_reference_can_share_a_template() {
    assert_eq!(
        render_marked("cat \\<<EOF > <<cwd>>/out"),
        "cat <<EOF > {cwd}/out"
    );
}

#[test]
fn exactly_one_backslash_before_an_opening_is_consumed() {
    assert_eq!(render_marked("\\\\<<model>>"), "\\<<model>>");
    assert_eq!(render_marked("\\\\\\<<"), "\\\\<<");
}

#[test]
fn a_backslash_not_before_an_opening_is_kept() {
    for source in ["C:\\path", "\\n", "a \\< b", "\\>>", "<\\<", "end\\"] {
        assert_eq!(render_marked(source), source, "{source:?}");
    }
}

#[test]
fn an_escape_covers_two_brackets_so_a_third_stays_a_single_bracket() {
    // `\<<` takes two `<`; the third cannot start a `<<` of its own.
    assert_eq!(render_marked("\\<<<model>>"), "<<<model>>");
    // A backslash between brackets escapes the pair after it.
    assert_eq!(render_marked("<\\<<model>>"), "<<<model>>");
}

#[test]
fn a_trailing_backslash_escapes_the_next_reference() {
    // There is no way to write a literal `\` right before a reference: the
    // backslash always escapes it. Pinned so that a change is deliberate.
    assert_eq!(render_marked("dir\\<<name>>"), "dir<<name>>");
}

//! Rendering: strict interpolation, empty sections, separators, spans, and
//! the errors that name what is wrong and where.

use std::sync::Arc;

use dsh_system_prompt::ReferenceSite;
use dsh_system_prompt::inspect::render_prompt_with_spans;
use dsh_system_prompt::template::{ParseErrorKind, ParseErrors, escape_literal};
use dsh_system_prompt::{
    AssembleContext, Owner, PromptSection, RegistryError, RenderError, SystemPrompt, ToolSchema,
    render_prompt,
};
use proptest::prelude::*;

use crate::support;
use support::{assembly, assert_mentions, registry, render_default};

fn render(
    sections: &[(&str, &str)],
    variables: &[(&str, Option<&str>)],
) -> Result<String, RenderError> {
    render_prompt(&assembly(sections, variables)).map_err(support::only)
}

/// A registry holding one provided section with `text`, so its syntax is
/// first checked at render.
#[track_caller]
fn provided(text: &'static str) -> (SystemPrompt, Vec<dsh_system_prompt::Registration>) {
    registry(
        [PromptSection::provided("agent:persona", 0, move |_| {
            text.to_owned()
        })],
        &[],
    )
}

/// The syntax errors of `err`, which must be a template error of the
/// section `agent:persona`, whose text is `text`.
#[track_caller]
fn persona_syntax_errors<'e>(err: &'e RenderError, text: &str) -> &'e ParseErrors {
    let RenderError::Template(problem) = err else {
        panic!("expected Template for {text:?}, got {err:?}");
    };
    assert_eq!(problem.section, "agent:persona", "{text:?}");
    &problem.errors
}

// ---------------------------------------------------------------------------
// Joining and interpolation

/// One case of [`what_sections_and_variables_render_to`]: its name, the
/// sections, the variables, and the prompt they render.
type RenderCase = (
    &'static str,
    &'static [(&'static str, &'static str)],
    &'static [(&'static str, Option<&'static str>)],
    &'static str,
);

const EMPTY_AND_WORD: &[(&str, Option<&str>)] = &[("empty", Some("")), ("word", Some("word"))];

const RENDER_CASES: &[RenderCase] = &[
    (
        "sections are joined by exactly one blank line",
        &[("a", "A"), ("b", "B"), ("c", "C")],
        &[],
        "A\n\nB\n\nC",
    ),
    (
        "a single section renders alone",
        &[("only", "Only.")],
        &[],
        "Only.",
    ),
    ("no section renders the empty prompt", &[], &[], ""),
    (
        "sections empty after interpolation are dropped with their separator",
        &[
            ("leading_empty", "<<empty>>"),
            ("a", "A"),
            ("fixed_empty", ""),
            ("b", "<<empty>>B<<empty>>"),
            ("interpolated_empty", "<<empty>><<empty>>"),
            ("c", "<<word>>"),
            ("trailing_empty", "<<empty>>"),
        ],
        EMPTY_AND_WORD,
        "A\n\nB\n\nword",
    ),
    (
        "all empty renders the empty prompt",
        &[("x", ""), ("y", "<<empty>>")],
        EMPTY_AND_WORD,
        "",
    ),
    (
        "nothing is trimmed",
        &[
            ("lead", "  leading spaces"),
            ("trail", "trailing spaces  \n"),
            ("lines", "\n\nsurrounded by newlines\n\n"),
            ("blank", " "),
            ("newline", "\n"),
            ("tab", "\t<<pad>>"),
        ],
        &[("pad", Some(" padded "))],
        "  leading spaces\n\ntrailing spaces  \n\n\n\n\nsurrounded by newlines\n\n\n\n \n\n\n\n\n\t padded ",
    ),
    (
        "references are replaced by their values",
        &[("persona", "You are <<model>> in <<cwd>>; <<model>> again.")],
        &[("model", Some("gpt-5")), ("cwd", Some("/work"))],
        "You are gpt-5 in /work; gpt-5 again.",
    ),
    (
        // A `>>` before the `<<` does not close it.
        "a lone opening without a closing is literal",
        &[("heredoc", "a >> b\ncat <<EOF\nhello\nEOF")],
        &[],
        "a >> b\ncat <<EOF\nhello\nEOF",
    ),
    (
        "an escaped opening renders as a literal opening",
        &[(
            "heredoc",
            r"cat \<<EOF >> out.txt; std::cout \<< x >> y; <<v>>",
        )],
        &[("v", Some("value"))],
        "cat <<EOF >> out.txt; std::cout << x >> y; value",
    ),
    (
        "a value containing a reference stays literal",
        &[("s", "value: <<v>>")],
        &[("v", Some("<<x>> and <<v>> and << bad >> and <<<y>>>"))],
        "value: <<x>> and <<v>> and << bad >> and <<<y>>>",
    ),
];

#[test]
fn what_sections_and_variables_render_to() {
    for &(name, sections, variables, want) in RENDER_CASES {
        let got = render(sections, variables);
        assert_eq!(got.as_deref(), Ok(want), "{name}");
    }
}

#[test]
fn a_registry_prompt_drops_a_section_whose_variable_is_empty() {
    let (prompt, _handles) = registry(
        [
            PromptSection::new("a", 0, "A"),
            PromptSection::new("extra", 1, "<<extra>>"),
            PromptSection::new("b", 2, "B"),
        ],
        &[("extra", Some(""))],
    );
    assert_eq!(render_default(&prompt).unwrap(), "A\n\nB");
}

#[test]
fn a_lone_opening_in_a_provided_section_is_literal() {
    let (prompt, _handle) = provided("cat <<EOF");
    assert_eq!(render_default(&prompt).unwrap(), "cat <<EOF");
}

#[test]
fn an_escaped_reference_needs_no_variable() {
    let (prompt, _fixed) = registry(
        [PromptSection::new("fixed", 0, r"write \<<name>> literally")],
        &[],
    );
    assert_eq!(render_default(&prompt).unwrap(), "write <<name>> literally");
}

// ---------------------------------------------------------------------------
// Errors

#[test]
fn an_unknown_reference_names_the_reference_the_section_and_the_registered_variables() {
    let (prompt, _handles) = registry(
        [PromptSection::new(
            "agent:persona",
            0,
            "You are\n  <<modle>>.",
        )],
        &[("model", Some("gpt-5")), ("cwd", None)],
    );
    let err = render_default(&prompt).unwrap_err();
    let RenderError::UnknownVariable {
        site,
        registered,
        suggestion,
    } = &err
    else {
        panic!("expected UnknownVariable, got {err:?}");
    };
    let ReferenceSite {
        kind,
        section,
        reference,
        position,
        span,
        owner,
        ..
    } = &**site;
    assert_eq!(*kind, dsh_system_prompt::PartKind::Section);
    assert_eq!(section, "agent:persona");
    assert_eq!(reference, "modle");
    assert_eq!(
        (position.line, position.column, position.offset),
        (2, 3, 10)
    );
    assert_eq!(span, &(10..19), "`<<modle>>`");
    assert_eq!(registered, &["cwd", "model"], "sorted");
    assert_eq!(suggestion.as_deref(), Some("model"));
    assert!(owner.file.ends_with("rendering.rs"), "{owner:?}");
    assert_eq!(err.section(), "agent:persona");

    assert_mentions(
        &err.to_string(),
        &["`agent:persona`", "<<modle>>", "2:3", "`cwd`", "`model`"],
    );
}

/// One case of [`an_unknown_reference_names_what_it_can`]: the sections
/// and variables, then what the error holds and what its message says.
struct Unknown {
    name: &'static str,
    sections: &'static [(&'static str, &'static str)],
    variables: &'static [(&'static str, Option<&'static str>)],
    reference: &'static str,
    registered: &'static [&'static str],
    suggestion: Option<&'static str>,
    says: &'static [&'static str],
    not: &'static [&'static str],
}

const UNKNOWN: &[Unknown] = &[
    Unknown {
        name: "with no variables it says none are registered",
        sections: &[("s", "Hi <<model>>")],
        variables: &[],
        reference: "model",
        registered: &[],
        suggestion: None,
        says: &["no variables are registered", "<<model>>", "`s`"],
        not: &[],
    },
    Unknown {
        name: "it lists the registered variables sorted, whatever their order",
        sections: &[("s", "<<x>>")],
        variables: &[("zeta", Some("z")), ("alpha", None), ("mid", Some("m"))],
        reference: "x",
        registered: &["alpha", "mid", "zeta"],
        suggestion: None,
        says: &["registered variables: `alpha`, `mid`, `zeta`"],
        not: &[],
    },
    Unknown {
        name: "far from every name it suggests nothing",
        sections: &[("s", "<<zzz>>")],
        variables: &[("model", Some("m"))],
        reference: "zzz",
        registered: &["model"],
        suggestion: None,
        says: &[],
        not: &["did you mean"],
    },
];

#[test]
fn an_unknown_reference_names_what_it_can() {
    for case in UNKNOWN {
        let name = case.name;
        let err = render(case.sections, case.variables).unwrap_err();
        let (site, registered, suggestion) = match &err {
            RenderError::UnknownVariable {
                site,
                registered,
                suggestion,
            } => (site, registered, suggestion),
            other => panic!("{name}: expected UnknownVariable, got {other:?}"),
        };
        assert_eq!(site.reference, case.reference, "{name}");
        assert_eq!(registered, case.registered, "{name}");
        assert_eq!(suggestion.as_deref(), case.suggestion, "{name}");
        let message = err.to_string();
        for needle in case.says {
            assert!(message.contains(needle), "{name}: {needle:?} in {message}");
        }
        for needle in case.not {
            assert!(
                !message.contains(needle),
                "{name}: no {needle:?} in {message}"
            );
        }
    }
}

#[test]
fn a_valueless_reference_names_the_reference_and_the_section() {
    let (prompt, _handles) = registry(
        [PromptSection::new("workspace", 10, "You work in <<cwd>>.")],
        &[("cwd", None)],
    );
    let err = render_default(&prompt).unwrap_err();
    let RenderError::ValuelessVariable {
        site,
        variable_owner,
    } = &err
    else {
        panic!("expected ValuelessVariable, got {err:?}");
    };
    let ReferenceSite {
        section,
        reference,
        position,
        ..
    } = &**site;
    assert_eq!(section, "workspace");
    assert_eq!(reference, "cwd");
    assert_eq!((position.line, position.column), (1, 13));
    assert!(
        variable_owner
            .as_ref()
            .is_some_and(|o| o.file.ends_with("rendering.rs")),
        "{variable_owner:?}"
    );
    assert_mentions(
        &err.to_string(),
        &["`workspace`", "<<cwd>>", "`cwd`", "1:13"],
    );
}

#[test]
fn malformed_syntax_in_a_provided_section_names_the_text_and_its_position() {
    let cases: [(&str, &str, ParseErrorKind); 5] = [
        (
            "first line\nx << model >> y",
            "<< model >>",
            ParseErrorKind::MalformedReference,
        ),
        (
            "first line\nx <<Model>> y",
            "<<Model>>",
            ParseErrorKind::MalformedReference,
        ),
        (
            "first line\nx <<>> y",
            "<<>>",
            ParseErrorKind::MalformedReference,
        ),
        (
            "first line\nx <<a-b>> y",
            "<<a-b>>",
            ParseErrorKind::MalformedReference,
        ),
        (
            "first line\nx <<<model>>> y",
            "<<<model>>>",
            ParseErrorKind::UnclosedOpening,
        ),
    ];
    for (text, bad, kind) in cases {
        let (prompt, _handle) = provided(text);
        let err = render_default(&prompt).unwrap_err();
        let errors = persona_syntax_errors(&err, text);
        assert_eq!(errors.len(), 1, "{errors:?}");
        let error = errors.first();
        assert_eq!(error.text, bad);
        assert_eq!(error.kind, kind, "{bad}");
        assert_eq!(
            (
                error.position.line,
                error.position.column,
                error.position.offset
            ),
            (2, 3, 13),
            "{bad}"
        );
        assert_eq!(&text[error.span.clone()], bad);
        assert_mentions(&err.to_string(), &["`agent:persona`", bad, "2:3", "\\<<"]);
    }
}

#[test]
fn an_opening_followed_later_by_a_closing_is_malformed() {
    let (prompt, _handle) = provided("a << b << c >> d");
    let err = render_default(&prompt).unwrap_err();
    assert!(matches!(err, RenderError::Template(_)), "{err:?}");
}

#[test]
fn every_failing_section_is_reported_in_render_order() {
    let errors = render_prompt(&assembly(
        &[
            ("ok", "fine"),
            ("first_bad", "<<nope>>"),
            ("second_bad", "<<Bad>>"),
        ],
        &[],
    ))
    .unwrap_err();
    let sections: Vec<&str> = errors.iter().map(RenderError::section).collect();
    assert_eq!(sections, ["first_bad", "second_bad"]);
}

#[test]
fn malformed_text_set_by_a_waterfall_is_a_render_error() {
    let (prompt, _persona) = registry([PromptSection::new("agent:persona", 0, "fine")], &[]);
    let _listener = prompt
        .on_assemble("listener#387", |_, assembly| {
            assembly
                .sections
                .get_mut("agent:persona")
                .unwrap()
                .set_text("now <<Broken>>");
            std::ops::ControlFlow::Continue(())
        })
        .unwrap();
    let err = render_default(&prompt).unwrap_err();
    let errors = persona_syntax_errors(&err, "now <<Broken>>");
    assert_eq!(errors.first().text, "<<Broken>>");
}

#[test]
fn a_fixed_section_with_the_same_malformed_text_is_refused_at_registration() {
    let prompt = SystemPrompt::empty();
    let owner = Owner::new("dsh-test", "persona", "persona.rs", 7);
    let err = prompt
        .section(PromptSection::new("agent:persona", 0, "x <<Model>> y").owned_by(owner.clone()))
        .unwrap_err();
    let RegistryError::Template(refused) = &err else {
        panic!("expected Template, got {err:?}");
    };
    // Registration and render report a malformed text with one payload,
    // in the same words.
    let (provided, _handle) = registry(
        [
            PromptSection::provided("agent:persona", 0, |_| "x <<Model>> y".to_owned())
                .owned_by(owner),
        ],
        &[],
    );
    let failed = render_default(&provided).unwrap_err();
    let RenderError::Template(rendered) = &failed else {
        panic!("expected Template, got {failed:?}");
    };
    assert_eq!(refused, rendered);
    assert_eq!(err.to_string(), failed.to_string());
    let first_line = err.to_string().lines().next().map(str::to_owned);
    assert_eq!(
        first_line.as_deref(),
        Some(
            "section `agent:persona` (`persona` of dsh-test (persona.rs:7)) has malformed \
             template syntax:"
        )
    );
}

// ---------------------------------------------------------------------------
// Spans

#[test]
fn spans_slice_the_text_to_exactly_each_rendered_section() {
    let prompt = SystemPrompt::empty();
    let _model = prompt
        .variable("model", |_| Some("modèle-5 ✓".into()))
        .unwrap();
    let _empty = prompt.variable("empty", |_| Some("".into())).unwrap();
    let _handles = [
        prompt.section(PromptSection::new(
            "agent:persona",
            0,
            "  Vous êtes <<model>>.\n",
        )),
        prompt.section(PromptSection::new("dropped", 1, "<<empty>>")),
        prompt.section(PromptSection::new("unbound", 2, "no tool").bound_to_tool("absent")),
        prompt.section(PromptSection::provided("status", 3, |_| {
            "\nstatus ok".to_owned()
        })),
        prompt.section(
            PromptSection::new("tool:bash", 105, "Check <<model>>.").bound_to_tool("bash"),
        ),
    ]
    .map(Result::unwrap);
    let bash = Arc::new(ToolSchema::new("bash", "", serde_json::Value::Null));
    let _tools = prompt
        .tools("tools#443", move |_| vec![bash.clone()])
        .unwrap();

    let assembly = prompt.assemble(&AssembleContext::default());
    let rendered = render_prompt_with_spans(&assembly).unwrap();
    assert_eq!(rendered.text, render_prompt(&assembly).unwrap());

    let pieces: Vec<(&str, &str)> = rendered
        .sections
        .iter()
        .map(|section| (section.name.as_str(), &rendered.text[section.range.clone()]))
        .collect();
    assert_eq!(
        pieces,
        [
            ("agent:persona", "  Vous êtes modèle-5 ✓.\n"),
            ("status", "\nstatus ok"),
            ("tool:bash", "Check modèle-5 ✓."),
        ]
    );
    // Between consecutive spans there is exactly the separator, and the
    // spans cover the text from its first byte to its last.
    assert_eq!(rendered.sections[0].range.start, 0);
    assert_eq!(
        rendered.sections.last().unwrap().range.end,
        rendered.text.len()
    );
    for pair in rendered.sections.windows(2) {
        assert_eq!(
            &rendered.text[pair[0].range.end..pair[1].range.start],
            "\n\n"
        );
    }
    for span in &rendered.sections {
        assert_eq!(
            &span.owner,
            assembly.sections.get(&span.name).unwrap().owner()
        );
    }
}

#[test]
fn spans_of_an_error_are_an_error() {
    let err = render_prompt_with_spans(&assembly(&[("s", "<<missing>>")], &[])).unwrap_err();
    assert!(
        matches!(
            support::only(err.clone()),
            RenderError::UnknownVariable { .. }
        ),
        "{err:?}"
    );
}

proptest! {
    /// Whatever the literal texts, spans slice the prompt back into exactly
    /// the non-empty sections, joined by one blank line.
    #[test]
    fn spans_and_joining_hold_for_any_literal_texts(
        texts in proptest::collection::vec(any::<String>(), 0..8),
    ) {
        let escaped: Vec<String> = texts.iter().map(|text| escape_literal(text).into_owned()).collect();
        let names: Vec<String> = (0..texts.len()).map(|at| format!("s{at}")).collect();
        let sections: Vec<(&str, &str)> = names
            .iter()
            .map(String::as_str)
            .zip(escaped.iter().map(String::as_str))
            .collect();
        let assembly = assembly(&sections, &[]);

        let rendered = render_prompt_with_spans(&assembly).unwrap();
        let expected: Vec<&str> = texts.iter().map(String::as_str).filter(|t| !t.is_empty()).collect();
        prop_assert_eq!(&rendered.text, &expected.join("\n\n"));
        let pieces: Vec<&str> = rendered.sections.iter().map(|s| &rendered.text[s.range.clone()]).collect();
        prop_assert_eq!(pieces, expected);
        prop_assert_eq!(render_prompt(&assembly).unwrap(), rendered.text);
    }
}

/// `render_prompt` and its spans variant agree on every mix of fixed,
/// provided, tool-bound, empty-valued and valueless sections.
#[test]
fn every_mix_of_sections_renders_the_same_with_and_without_spans() {
    let prompt = SystemPrompt::empty();
    let mut keep = Vec::new();
    keep.push(
        prompt
            .variable("full", |_| Some("value <<x>>".into()))
            .unwrap(),
    );
    keep.push(prompt.variable("empty", |_| Some("".into())).unwrap());
    for (at, text) in [
        "a <<full>> b",
        "<<empty>>",
        "",
        "  spaced  \n",
        "<<full>><<empty>>",
        "tail \\<< <<full>>",
    ]
    .into_iter()
    .enumerate()
    {
        let order = i32::try_from(at).unwrap();
        keep.push(
            prompt
                .section(PromptSection::new(format!("s{at}"), order, text))
                .unwrap(),
        );
    }
    keep.push(
        prompt
            .section(PromptSection::new("bound", 3, "guidance").bound_to_tool("absent"))
            .unwrap(),
    );
    keep.push(
        prompt
            .section(PromptSection::provided("provided", 2, |_| {
                "from <<full>>".to_owned()
            }))
            .unwrap(),
    );

    for _ in 0..2 {
        let assembly = prompt.assemble(&AssembleContext::default());
        let plain = render_prompt(&assembly).unwrap();
        let spanned = dsh_system_prompt::inspect::render_prompt_with_spans(&assembly).unwrap();
        assert_eq!(plain, spanned.text);
        assert_eq!(
            plain,
            "a value <<x>> b\n\nfrom value <<x>>\n\n  spaced  \n\n\nvalue <<x>>\n\ntail << value <<x>>"
        );
    }

    // A valueless variable gives the same error on both paths.
    keep.push(prompt.variable("none", |_| None).unwrap());
    keep.push(
        prompt
            .section(PromptSection::new("late", 99, "<<none>>"))
            .unwrap(),
    );
    let assembly = prompt.assemble(&AssembleContext::default());
    let plain = render_prompt(&assembly).unwrap_err();
    let spanned = dsh_system_prompt::inspect::render_prompt_with_spans(&assembly).unwrap_err();
    assert_eq!(plain, spanned);
    assert!(matches!(
        support::only(plain),
        RenderError::ValuelessVariable { .. }
    ));
}

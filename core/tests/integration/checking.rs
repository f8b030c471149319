//! `render_prompt` fails with every problem of every section at once, each
//! with its section, owner, span and suggestion.

use dsh_system_prompt::suggestion::closest;
use dsh_system_prompt::template::{ESCAPE_HINT, ParseErrorKind};
use dsh_system_prompt::{
    AssembleContext, AssembledSection, Owner, PromptAssembly, PromptSection, RenderError,
    SystemPrompt, TemplateProblem, render_prompt,
};
use proptest::prelude::*;

use crate::support;
use support::{assembly, registry};

/// One problem: its section, its kind, and its spans in the section's text.
type Summary = (String, &'static str, Vec<(usize, usize)>);

/// Every problem of `assembly`, summarized.
fn summary(assembly: &PromptAssembly) -> Vec<Summary> {
    let errors = render_prompt(assembly).expect_err("problems");
    errors
        .iter()
        .map(|error| {
            let (kind, spans) = match error {
                RenderError::UnknownVariable { site, .. } => {
                    ("unknown", vec![(site.span.start, site.span.end)])
                }
                RenderError::ValuelessVariable { site, .. } => {
                    ("valueless", vec![(site.span.start, site.span.end)])
                }
                RenderError::Template(problem) => (
                    "syntax",
                    problem
                        .errors
                        .iter()
                        .map(|error| (error.span.start, error.span.end))
                        .collect(),
                ),
                other => panic!("unexpected {other:?}"),
            };
            (error.section().to_owned(), kind, spans)
        })
        .collect()
}

#[test]
fn a_good_assembly_has_no_problems() {
    let good = assembly(&[("a", "A <<x>>"), ("b", "B")], &[("x", Some("1"))]);
    assert_eq!(render_prompt(&good).as_deref(), Ok("A 1\n\nB"));
    assert_eq!(render_prompt(&PromptAssembly::new()).as_deref(), Ok(""));
}

#[test]
fn every_problem_of_every_section_is_reported_in_render_order() {
    let assembly = assembly(
        &[
            ("first", "You are <<modle>> in <<cwd>>, on <<model>>."),
            ("fine", "Nothing wrong."),
            ("second", "<<Model>> and <<budget>>, then << cwd >>."),
        ],
        &[("model", Some("gpt")), ("cwd", None)],
    );
    assert_eq!(
        summary(&assembly),
        [
            ("first".to_owned(), "unknown", vec![(8, 17)]),
            ("first".to_owned(), "valueless", vec![(21, 28)]),
            ("second".to_owned(), "syntax", vec![(0, 9), (31, 40)]),
            ("second".to_owned(), "unknown", vec![(14, 24)]),
        ]
    );
    let errors = render_prompt(&assembly).unwrap_err();
    assert_eq!(errors.len(), 4);
    // The spans slice the references out of the sections' texts.
    for error in &errors {
        if let Some(span) = error.span() {
            let text = assembly.sections.get(error.section()).unwrap().text();
            assert!(text[span].starts_with("<<"));
        }
    }
    // One message a line, each naming its section.
    let message = errors.to_string();
    assert_eq!(
        message
            .lines()
            .filter(|line| line.contains("section `"))
            .count(),
        4
    );
}

#[test]
fn each_problem_carries_its_suggestion_owner_and_help() {
    let prompt = SystemPrompt::empty();
    let owner = Owner::new("dsh-test", "the variable", "vars.rs", 7);
    let _cwd = prompt
        .variable_owned_by("cwd", owner.clone(), |_| None)
        .unwrap();
    let _model = prompt.variable("model", |_| Some("m".into())).unwrap();
    let _persona = prompt
        .section(PromptSection::provided("agent:persona", 0, |_| {
            "On <<modle>> in\n<<cwd>>, <<zzz>>.".to_owned()
        }))
        .unwrap();
    let errors = render_prompt(&prompt.assemble(&AssembleContext::default())).unwrap_err();
    let errors: Vec<&RenderError> = errors.iter().collect();
    let [modle, cwd, zzz] = errors[..] else {
        panic!("three problems: {errors:?}");
    };

    let RenderError::UnknownVariable {
        suggestion,
        registered,
        site,
    } = modle
    else {
        panic!("{modle:?}");
    };
    assert_eq!(suggestion.as_deref(), Some("model"));
    assert_eq!(registered, &["cwd", "model"]);
    assert_eq!((site.position.line, site.position.column), (1, 4));
    assert!(modle.owner().file.ends_with("checking.rs"), "{modle:?}");
    assert_eq!(
        modle.help().unwrap(),
        format!("did you mean `<<model>>`? registered variables: `cwd`, `model`; {ESCAPE_HINT}")
    );

    let RenderError::ValuelessVariable {
        variable_owner,
        site,
    } = cwd
    else {
        panic!("{cwd:?}");
    };
    assert_eq!(variable_owner.as_ref(), Some(&owner));
    assert_eq!((site.position.line, site.position.column), (2, 1));
    let help = cwd.help().unwrap();
    assert!(help.contains("`the variable` of dsh-test"), "{help}");
    assert!(help.ends_with(ESCAPE_HINT), "{help}");

    let RenderError::UnknownVariable { suggestion, .. } = zzz else {
        panic!("{zzz:?}");
    };
    assert_eq!(suggestion, &None, "nothing is close to `zzz`");
}

#[test]
fn with_no_variables_the_help_says_none_are_registered() {
    let errors = render_prompt(&assembly(&[("a", "<<x>>")], &[])).unwrap_err();
    assert_eq!(
        errors.first().help().unwrap(),
        format!("no variables are registered; {ESCAPE_HINT}")
    );
}

#[test]
fn a_malformed_section_names_every_syntax_error() {
    let errors = render_prompt(&assembly(&[("a", "<<Model>> <<<x>>>")], &[])).unwrap_err();
    let RenderError::Template(problem) = errors.first() else {
        panic!("{errors:?}");
    };
    let TemplateProblem { errors, owner, .. } = &**problem;
    let kinds: Vec<ParseErrorKind> = errors.iter().map(|error| error.kind).collect();
    assert_eq!(
        kinds,
        [
            ParseErrorKind::MalformedReference,
            ParseErrorKind::UnclosedOpening
        ]
    );
    assert_eq!(
        errors.first().help(),
        format!("did you mean `<<model>>`? {ESCAPE_HINT}")
    );
    assert!(owner.file.ends_with("checking.rs"), "{owner:?}");
}

#[test]
fn guidance_of_an_absent_tool_is_not_checked() {
    let mut assembly = assembly(&[("a", "fine")], &[]);
    assembly
        .sections
        .insert(AssembledSection::new("tool:bash", 105, "<<nope>>").bound_to_tool("bash"));
    assert_eq!(render_prompt(&assembly).as_deref(), Ok("fine"));
}

/// The registry's compiled plan fuses fixed sections; checking sees through
/// it to the valueless reference it would fall back on.
#[test]
fn fixed_registry_sections_are_checked_like_any_other() {
    let (prompt, _handles) = registry(
        [
            PromptSection::new("a", 1, "Work in <<cwd>>."),
            PromptSection::new("b", 2, "Again <<cwd>>."),
        ],
        &[("cwd", None)],
    );
    let assembly = prompt.assemble(&AssembleContext::default());
    let errors = render_prompt(&assembly).unwrap_err();
    let sections: Vec<&str> = errors.iter().map(RenderError::section).collect();
    assert_eq!(sections, ["a", "b"]);
}

#[test]
fn closest_suggests_only_plausible_typos() {
    assert_eq!(closest("modle", ["cwd", "model"]), Some("model"));
    assert_eq!(
        closest("cwdir", &["cwd".to_owned()]),
        Some(&"cwd".to_owned())
    );
    assert_eq!(closest("budget", ["cwd", "model"]), None);
    assert_eq!(closest("x", Vec::<String>::new()), None);
}

/// Section texts made of a few pieces, each valid, unknown, valueless or
/// malformed.
fn section_text() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        Just("text ".to_owned()),
        Just("<<a>>".to_owned()),
        Just("<<b>>".to_owned()),
        Just("<<none>>".to_owned()),
        Just("<<B>>".to_owned()),
        Just("<<<a>>>".to_owned()),
        Just("é\n".to_owned()),
    ];
    prop::collection::vec(piece, 0..6).prop_map(|pieces| pieces.concat())
}

proptest! {
    /// A render's problems are the problems of each section rendered
    /// alone, in order: a section's first problem never hides the next
    /// one, nor the next section's.
    #[test]
    fn every_section_reports_its_problems(texts in prop::collection::vec(section_text(), 0..4)) {
        let names: Vec<String> = (0..texts.len()).map(|at| format!("s{at}")).collect();
        let sections: Vec<(&str, &str)> =
            names.iter().map(String::as_str).zip(texts.iter().map(String::as_str)).collect();
        let whole = assembly(&sections, &[("a", Some("A")), ("none", None)]);
        let alone: Vec<RenderError> = names
            .iter()
            .filter_map(|name| {
                let mut alone = whole.clone();
                alone.sections.retain(|section| section.name().as_str() == name);
                render_prompt(&alone).err()
            })
            .flatten()
            .collect();
        match render_prompt(&whole) {
            Ok(_) => prop_assert!(alone.is_empty(), "{:?}", alone),
            Err(errors) => prop_assert_eq!(errors.into_iter().collect::<Vec<_>>(), alone),
        }
    }
}

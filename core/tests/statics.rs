//! Static contributions: items declared with the macros are installed by
//! `SystemPrompt::new`, sorted like any other, owned by their declaration.

#[path = "support/mod.rs"]
mod support;

use dsh_system_prompt::{
    AssembleContext, NameKind, PromptSection, SystemPrompt, prompt_section, prompt_variable,
    render_prompt,
};

/// A typed field a caller adds to the context.
struct Visitor(&'static str);

#[prompt_variable]
fn shell(_cx: &AssembleContext) -> Option<String> {
    Some("bash".to_owned())
}

#[prompt_variable]
fn visitor(cx: &AssembleContext) -> Option<String> {
    cx.get::<Visitor>().map(|visitor| visitor.0.to_owned())
}

#[prompt_section(name = "statics:late", order = 200)]
const LATE: &str = "Late, in <<shell>>.";

#[prompt_section(name = "statics:early", order = -10)]
const EARLY: &str = "Early.";

#[prompt_section(order = 105, tool = "bash")]
const BASH_HABIT: &str = "Check the exit code.";

#[prompt_section(name = "statics:greeting", order = 0)]
fn greeting(cx: &AssembleContext) -> String {
    match cx.get::<Visitor>() {
        Some(visitor) => format!("Hello, {}.", visitor.0),
        None => "Hello.".to_owned(),
    }
}

#[test]
fn new_installs_every_static_contribution_sorted_by_order_then_name() {
    let prompt = SystemPrompt::new().unwrap();
    assert_eq!(
        prompt.section_names(),
        [
            "statics:early",
            "statics:greeting",
            "statics::BASH_HABIT",
            "statics:late",
        ]
    );
    assert_eq!(prompt.variable_names(), ["shell", "visitor"]);
    // The constants are the items as written.
    assert_eq!(
        (EARLY, LATE, BASH_HABIT),
        ("Early.", "Late, in <<shell>>.", "Check the exit code.")
    );
}

#[test]
fn static_sections_and_variables_resolve_against_each_assemblys_context() {
    let prompt = SystemPrompt::new().unwrap();
    let bare = prompt.assemble(&AssembleContext::default());
    assert_eq!(bare.variables.get("visitor"), Some(None));
    assert_eq!(
        render_prompt(&bare).unwrap(),
        "Early.\n\nHello.\n\nLate, in bash."
    );
    let with = prompt.assemble(&AssembleContext::new().with(Visitor("ada")));
    assert_eq!(with.variables.get("visitor"), Some(Some("ada")));
    assert_eq!(
        render_prompt(&with).unwrap(),
        "Early.\n\nHello, ada.\n\nLate, in bash."
    );
}

#[test]
fn a_static_contribution_is_owned_by_its_declaration() {
    let prompt = SystemPrompt::new().unwrap();
    let owner = prompt.section_owner("statics:early").unwrap();
    assert_eq!(owner.krate, "dsh-system-prompt");
    assert_eq!(owner.item, "statics::EARLY");
    assert!(owner.file.ends_with("statics.rs"), "{owner:?}");
    assert!(owner.line > 0);

    let assembly = prompt.assemble(&AssembleContext::default());
    let shell = assembly.variables.owner("shell").unwrap();
    assert_eq!(shell.item, "statics::shell");
}

#[test]
fn a_runtime_duplicate_of_a_static_name_fails_naming_the_static_owner() {
    let prompt = SystemPrompt::new().unwrap();
    let err = prompt
        .section(PromptSection::new("statics:early", 0, "again"))
        .unwrap_err();
    let (name, existing) = support::duplicate(&err, NameKind::Section);
    assert_eq!(name, "statics:early");
    assert_eq!(existing.item, "statics::EARLY");
    let err = prompt.variable("shell", |_| None).unwrap_err();
    // The duplicate names the static variable's owner.
    support::assert_mentions(&err.to_string(), &["statics::shell"]);
}

#[test]
fn an_empty_registry_has_no_static_contribution() {
    let prompt = SystemPrompt::empty();
    assert!(prompt.section_names().is_empty());
    assert!(prompt.variable_names().is_empty());
}

//! What `SystemPrompt::new()` installs from the macros: names, render
//! order, owners, tool bindings, variables of both return types, and `fn`
//! sections that read the caller's context.
//!
//! The items are declared out of render order, across modules, and a
//! variable is used from another module through `use`, as a tool crate
//! would.

use std::sync::Arc;

use dsh_system_prompt::{AssembleContext, SystemPrompt, ToolSchema, render_prompt};

/// The context field the `fn` items of this test read.
struct Agent {
    name: &'static str,
    model: &'static str,
}

mod guidance {
    use dsh_system_prompt::prompt_section;

    // A variable of another module is referenced after importing it.
    use crate::variables::{model, workspace_root};

    /// Declared first, renders late.
    #[prompt_section(order = 150)]
    pub(crate) const LATE: &str = "Late guidance.";

    pub(crate) const EXIT_CODE_LINE: u32 = line!() + 2;
    #[prompt_section(name = "tool:bash", order = 105, tool = "bash")]
    pub(crate) const EXIT_CODE: &str = "On <<model>>, check `[exit code: N]` after every command.";

    /// Same order as `tool:bash`: the name decides, `tool:aardvark` first.
    #[prompt_section(name = "tool:aardvark", order = 105)]
    pub(crate) static SAME_ORDER: &str = "Work in <<workspace_root>>.";
}

mod persona {
    use dsh_system_prompt::{AssembleContext, prompt_section};

    use crate::Agent;

    pub(crate) const PERSONA_LINE: u32 = line!() + 2;
    #[prompt_section(name = "agent:persona", order = 0)]
    fn persona(cx: &AssembleContext) -> String {
        match cx.get::<Agent>() {
            Some(agent) => format!("You are {}.", agent.name),
            None => "You are an agent.".to_owned(),
        }
    }

    #[prompt_section(order = -5)]
    const PREAMBLE: &str = "Preamble.";
}

mod variables {
    use dsh_system_prompt::{AssembleContext, prompt_variable};

    use crate::Agent;

    /// `None` when the context carries no agent.
    pub(crate) const MODEL_LINE: u32 = line!() + 2;
    #[prompt_variable]
    pub(crate) fn model(cx: &AssembleContext) -> Option<String> {
        cx.get::<Agent>().map(|agent| agent.model.to_owned())
    }

    /// Always a value.
    #[prompt_variable]
    pub(crate) fn workspace_root(_cx: &AssembleContext) -> String {
        "/work".to_owned()
    }
}

fn agent() -> AssembleContext {
    AssembleContext::new().with(Agent {
        name: "coder",
        model: "gpt-5",
    })
}

fn names(prompt: &SystemPrompt) -> Vec<String> {
    prompt
        .section_names()
        .iter()
        .map(ToString::to_string)
        .collect()
}

#[test]
fn sections_install_in_order_then_name_order_whatever_the_declaration_order() {
    let prompt = SystemPrompt::new().expect("the statics of this test install");
    assert_eq!(
        names(&prompt),
        [
            "static_registry::persona::PREAMBLE",
            "agent:persona",
            "tool:aardvark",
            "tool:bash",
            "static_registry::guidance::LATE",
        ]
    );
    let orders: Vec<i32> = prompt
        .assemble(&AssembleContext::default())
        .sections
        .iter()
        .map(|section| section.order())
        .collect();
    assert_eq!(orders, [-5, 0, 105, 105, 150]);
}

#[test]
fn every_static_contribution_knows_its_crate_item_and_declaration() {
    let prompt = SystemPrompt::new().expect("install");
    let owner = prompt
        .section_owner("tool:bash")
        .expect("tool:bash installed");
    assert_eq!(owner.krate, "dsh-tests");
    assert_eq!(owner.item, "static_registry::guidance::EXIT_CODE");
    assert!(
        owner.file.ends_with("tests/static_registry.rs"),
        "{}",
        owner.file
    );
    assert_eq!(owner.line, guidance::EXIT_CODE_LINE);

    let owner = prompt.section_owner("agent:persona").expect("persona");
    assert_eq!(owner.item, "static_registry::persona::persona");
    assert_eq!(owner.line, persona::PERSONA_LINE);

    // A section without `name` is named after its path, which is its owner.
    let owner = prompt
        .section_owner("static_registry::guidance::LATE")
        .expect("derived name");
    assert_eq!(owner.item, "static_registry::guidance::LATE");

    let assembly = prompt.assemble(&AssembleContext::default());
    let owner = assembly.variables.owner("model").expect("model installed");
    assert_eq!(
        (owner.krate.as_str(), owner.item.as_str(), owner.line),
        (
            "dsh-tests",
            "static_registry::variables::model",
            variables::MODEL_LINE
        )
    );
    assert!(owner.location().contains("static_registry.rs:"));
}

#[test]
fn variables_install_with_both_return_types() {
    let prompt = SystemPrompt::new().expect("install");
    let names: Vec<String> = prompt
        .variable_names()
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(names, ["model", "workspace_root"]);

    let bare = prompt.assemble(&AssembleContext::default());
    assert_eq!(bare.variables.get("workspace_root"), Some(Some("/work")));
    assert_eq!(bare.variables.get("model"), Some(None));

    let with_agent = prompt.assemble(&agent());
    assert_eq!(with_agent.variables.get("model"), Some(Some("gpt-5")));
}

#[test]
fn fn_sections_receive_the_callers_context() {
    let prompt = SystemPrompt::new().expect("install");
    let text = |cx: &AssembleContext| {
        prompt
            .assemble(cx)
            .sections
            .get("agent:persona")
            .expect("persona")
            .text()
            .to_string()
    };
    assert_eq!(text(&agent()), "You are coder.");
    assert_eq!(text(&AssembleContext::default()), "You are an agent.");
}

#[test]
fn a_section_bound_to_a_tool_renders_only_with_that_tool() {
    let prompt = SystemPrompt::new().expect("install");
    let assembly = prompt.assemble(&agent());
    assert_eq!(
        assembly
            .sections
            .get("tool:bash")
            .and_then(|s| s.tool())
            .map(|t| t.as_str()),
        Some("bash")
    );
    assert_eq!(
        render_prompt(&assembly).expect("render"),
        "Preamble.\n\nYou are coder.\n\nWork in /work.\n\nLate guidance."
    );

    let bash = Arc::new(ToolSchema::new(
        "bash",
        "Runs a command.",
        serde_json::json!({"type": "object"}),
    ));
    let _tools = prompt
        .tools("tools#207", move |_| vec![bash.clone()])
        .expect("tool provider");
    assert_eq!(
        render_prompt(&prompt.assemble(&agent())).expect("render"),
        "Preamble.\n\nYou are coder.\n\nWork in /work.\n\n\
         On gpt-5, check `[exit code: N]` after every command.\n\nLate guidance."
    );
}

#[test]
fn fixture_crates_this_test_does_not_name_are_not_linked() {
    // `dsh-fixture-duplicate-*` and `dsh-fixture-thousand-sections` are
    // dependencies of this package, but this test binary does not use them,
    // so their statics are not here (and their duplicate does not fail it).
    let prompt = SystemPrompt::new().expect("install");
    assert!(prompt.section_owner("fixture:duplicate").is_none());
    assert_eq!(prompt.section_names().len(), 5);
}

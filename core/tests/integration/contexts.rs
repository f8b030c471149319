//! Runtime contexts: declared like sections, rendered by `render_context`
//! and never by `render_prompt`, with the same grammar and errors naming
//! the kind.

use std::sync::Arc;

use dsh_system_prompt::NameKind;
use dsh_system_prompt::{
    AssembleContext, PartKind, PromptAssembly, PromptSection, RegistryError, RenderError,
    SystemPrompt, ToolSchema, render_context, render_prompt,
};

use crate::support;
use support::{assert_mentions, registry, render_default};

/// The contexts of `prompt`, rendered for a caller that adds nothing.
fn contexts_of(prompt: &SystemPrompt) -> Result<String, RenderError> {
    render_context(&assembled(prompt)).map_err(support::only)
}

fn assembled(prompt: &SystemPrompt) -> PromptAssembly {
    prompt.assemble(&AssembleContext::default())
}

#[test]
fn contexts_render_apart_from_the_system_prompt_in_order() {
    let persona = PromptSection::new("agent:persona", 0, "You work in <<cwd>>.");
    let (prompt, _handles) = registry([persona], &[("cwd", Some("/work"))]);
    let parts = [
        PromptSection::new("editor", 20, "Open file: <<cwd>>/src/lib.rs"),
        PromptSection::provided("todo", 10, |_| "1. [>] Fix it".to_owned()),
        PromptSection::provided("git", 15, |_| String::new()),
    ];
    let mut contexts: Vec<_> = parts.map(|part| prompt.context(part).unwrap()).into();

    assert_eq!(render_default(&prompt).unwrap(), "You work in /work.");
    assert_eq!(
        contexts_of(&prompt).unwrap(),
        "1. [>] Fix it\n\nOpen file: /work/src/lib.rs",
        "ordered, empty ones dropped"
    );
    assert!(
        assembled(&prompt)
            .contexts
            .iter()
            .all(|context| context.kind() == PartKind::Context)
    );
    drop(contexts.remove(1));
    assert_eq!(contexts_of(&prompt).unwrap(), "Open file: /work/src/lib.rs");
}

#[test]
fn a_context_error_names_the_context() {
    let (prompt, _handles) = registry([], &[("model", Some("m"))]);
    let _todo = prompt
        .context(PromptSection::provided("todo", 10, |_| {
            "see <<modle>>".to_owned()
        }))
        .unwrap();
    let assembly = assembled(&prompt);
    assert_eq!(render_prompt(&assembly).unwrap(), "", "the prompt is fine");
    let error = support::only(render_context(&assembly).unwrap_err());
    assert!(
        matches!(
            &error,
            RenderError::UnknownVariable { site, .. } if site.kind == PartKind::Context
        ),
        "{error:?}"
    );
    assert!(error.to_string().starts_with("context `todo` ("), "{error}");

    let malformed = prompt.context(PromptSection::new("bad", 1, "<<Model>>"));
    assert_mentions(
        &malformed.unwrap_err().to_string(),
        &["context `bad` (", "malformed"],
    );
}

#[test]
fn context_names_are_unique_among_contexts_only() {
    let (prompt, _handles) = registry([PromptSection::new("todo", 1, "guidance")], &[]);
    let _context = prompt
        .context(PromptSection::new("todo", 1, "the list"))
        .unwrap();
    let error = prompt
        .context(PromptSection::new("todo", 2, "again"))
        .unwrap_err();
    assert!(
        matches!(&error, RegistryError::Duplicate { kind: NameKind::Context, name, .. } if name == "todo"),
        "{error:?}"
    );
    assert_mentions(
        &error.to_string(),
        &["context `todo` is already registered by "],
    );
}

#[test]
fn a_context_bound_to_a_tool_renders_only_with_it() {
    let (prompt, _handles) = registry([], &[]);
    let list = PromptSection::new("todo", 1, "the list").bound_to_tool("todo_write");
    let _todo = prompt.context(list).unwrap();
    assert_eq!(contexts_of(&prompt).unwrap(), "");
    let schema = Arc::new(ToolSchema::new(
        "todo_write",
        "writes",
        serde_json::json!({}),
    ));
    let _tools = prompt
        .tools("tools#117", move |_| vec![Arc::clone(&schema)])
        .unwrap();
    assert_eq!(contexts_of(&prompt).unwrap(), "the list");
}

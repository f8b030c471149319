//! Runtime contexts: declared like sections, rendered by `render_context`
//! and never by `render_prompt`, with the same grammar and errors naming
//! the kind.

use dsh_system_prompt::{
    AssembleContext, PartKind, PromptSection, RegistryError, RenderError, SystemPrompt, ToolSchema,
    check_prompt, render_context, render_prompt,
};
use std::sync::Arc;

#[test]
fn contexts_render_apart_from_the_system_prompt_in_order() {
    let prompt = SystemPrompt::empty();
    let _cwd = prompt
        .variable("cwd", |_| Some("/work".to_owned()))
        .unwrap();
    let _persona = prompt
        .section(PromptSection::new(
            "agent:persona",
            0,
            "You work in <<cwd>>.",
        ))
        .unwrap();
    let _later = prompt
        .context(PromptSection::new(
            "editor",
            20,
            "Open file: <<cwd>>/src/lib.rs",
        ))
        .unwrap();
    let todo = prompt
        .context(PromptSection::provided("todo", 10, |_| {
            "1. [>] Fix it".to_owned()
        }))
        .unwrap();
    let _empty = prompt
        .context(PromptSection::provided("git", 15, |_| String::new()))
        .unwrap();

    let assembly = prompt.assemble(&AssembleContext::default());
    assert_eq!(render_prompt(&assembly).unwrap(), "You work in /work.");
    assert_eq!(
        render_context(&assembly).unwrap(),
        "1. [>] Fix it\n\nOpen file: /work/src/lib.rs",
        "ordered, empty ones dropped"
    );
    assert!(
        assembly
            .contexts
            .iter()
            .all(|context| context.kind() == PartKind::Context)
    );

    drop(todo);
    let assembly = prompt.assemble(&AssembleContext::default());
    assert_eq!(
        render_context(&assembly).unwrap(),
        "Open file: /work/src/lib.rs"
    );
}

#[test]
fn a_context_error_names_the_context() {
    let prompt = SystemPrompt::empty();
    let _model = prompt.variable("model", |_| Some("m".to_owned())).unwrap();
    let _todo = prompt
        .context(PromptSection::provided("todo", 10, |_| {
            "see <<modle>>".to_owned()
        }))
        .unwrap();
    let assembly = prompt.assemble(&AssembleContext::default());
    assert_eq!(render_prompt(&assembly).unwrap(), "", "the prompt is fine");
    let error = render_context(&assembly).unwrap_err();
    assert!(
        matches!(
            &error,
            RenderError::UnknownVariable {
                kind: PartKind::Context,
                ..
            }
        ),
        "{error:?}"
    );
    assert!(error.to_string().starts_with("context `todo` ("), "{error}");
    let problems = check_prompt(&assembly).unwrap_err();
    assert_eq!(problems.first().to_string(), error.to_string());

    let malformed = prompt
        .context(PromptSection::new("bad", 1, "<<Model>>"))
        .unwrap_err();
    assert!(
        malformed.to_string().starts_with("context `bad` ("),
        "{malformed}"
    );
}

#[test]
fn context_names_are_unique_among_contexts_only() {
    let prompt = SystemPrompt::empty();
    let _section = prompt
        .section(PromptSection::new("todo", 1, "guidance"))
        .unwrap();
    let _context = prompt
        .context(PromptSection::new("todo", 1, "the list"))
        .unwrap();
    let error = prompt
        .context(PromptSection::new("todo", 2, "again"))
        .unwrap_err();
    assert!(
        matches!(&error, RegistryError::DuplicateContext { name, .. } if name == "todo"),
        "{error:?}"
    );
    assert!(
        error
            .to_string()
            .starts_with("context `todo` is already registered by ")
    );
}

#[test]
fn a_context_bound_to_a_tool_renders_only_with_it() {
    let prompt = SystemPrompt::empty();
    let _todo = prompt
        .context(PromptSection::new("todo", 1, "the list").bound_to_tool("todo_write"))
        .unwrap();
    let without = prompt.assemble(&AssembleContext::default());
    assert_eq!(render_context(&without).unwrap(), "");
    let _tools = prompt
        .tools(|_| {
            vec![Arc::new(ToolSchema::new(
                "todo_write",
                "writes",
                serde_json::json!({}),
            ))]
        })
        .unwrap();
    let with = prompt.assemble(&AssembleContext::default());
    assert_eq!(render_context(&with).unwrap(), "the list");
}

//! `#[prompt_section(complete)]` builds without a warning and installs a
//! complete section: after the waterfall it is the whole prompt, whatever
//! else the crate and the registry hold.
#![deny(warnings)]

use dsh_system_prompt::{
    AssembleContext, AssembledSection, PromptSection, SystemPrompt, prompt_section,
    prompt_variable, render_prompt, RenderError,
};

#[prompt_variable]
fn model(_cx: &AssembleContext) -> String {
    "m1".to_owned()
}

#[prompt_section(name = "agent:persona", order = 0, complete)]
const MINIMAL: &str = "You are a minimal agent on <<model>>.";

#[prompt_section(order = 105)]
const HABIT: &str = "Check the exit code.";

fn main() {
    let prompt = SystemPrompt::new().expect("the statics install");
    let cx = AssembleContext::default();
    let assembly = prompt.assemble(&cx);
    assert_eq!(render_prompt(&assembly).unwrap(), "You are a minimal agent on m1.");
    assert!(assembly.sections[0].is_complete());

    // A run-time section and a listener's addition are discarded too.
    let _section = prompt
        .section(PromptSection::new("extra", 200, "More."))
        .unwrap();
    let _listener = prompt
        .on_assemble("adds", |_, assembly| {
            assembly
                .sections
                .insert(AssembledSection::new("added", 300, "Added."));
            std::ops::ControlFlow::Continue(())
        })
        .unwrap();
    let assembly = prompt.assemble(&cx);
    assert_eq!(render_prompt(&assembly).unwrap(), "You are a minimal agent on m1.");

    // A second complete section, registered at run time, fails to
    // render, naming both.
    let _second = prompt
        .section(PromptSection::new("other", 1, "Other.").complete())
        .unwrap();
    let error = render_prompt(&prompt.assemble(&cx)).unwrap_err();
    assert!(
        matches!(
            error.first(),
            RenderError::CompleteSections { section, other, .. }
                if section == "agent:persona" && other == "other"
        ),
        "{error:?}"
    );
}

//! `#[prompt_context]` builds without a warning in each form, may share a
//! name with a section, and installs as a context: rendered by
//! `render_context`, never by `render_prompt`.
#![deny(warnings)]

use dsh_system_prompt::{
    AssembleContext, SystemPrompt, prompt_context, prompt_section, prompt_variable,
    render_context, render_prompt,
};

#[prompt_variable]
fn branch(_cx: &AssembleContext) -> String {
    "main".to_owned()
}

#[prompt_section(name = "git", order = 1)]
const GIT_HABIT: &str = "Commit small changes.";

#[prompt_context(name = "git", order = 1)]
const GIT_STATE: &str = "On branch <<branch>>.";

#[prompt_context(order = 2)]
fn open_file(_cx: &AssembleContext) -> String {
    "src/lib.rs is open.".to_owned()
}

fn main() {
    let prompt = SystemPrompt::new().expect("the statics install");
    let assembly = prompt.assemble(&AssembleContext::default());
    assert_eq!(render_prompt(&assembly).unwrap(), "Commit small changes.");
    assert_eq!(
        render_context(&assembly).unwrap(),
        "On branch main.\n\nsrc/lib.rs is open."
    );
}

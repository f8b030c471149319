//! `prompt_template!` is a `&'static str`, usable in a `const`.
#![deny(warnings)]

use dsh_system_prompt::{
    AssembleContext, PromptSection, SystemPrompt, prompt_template, render_prompt,
};

const PERSONA: &str = prompt_template!("You are <<agent_name>>; write `cat \\<<EOF`.");

fn main() {
    let prompt = SystemPrompt::empty();
    let _name = prompt
        .variable("agent_name", |_| Some("coder".into()))
        .expect("variable");
    let _persona = prompt
        .section(PromptSection::new("agent:persona", 0, PERSONA))
        .expect("section");
    let text = prompt_template!(r"Raw <<agent_name>>.");
    assert_eq!(text, "Raw <<agent_name>>.");
    assert_eq!(
        render_prompt(&prompt.assemble(&AssembleContext::default())).expect("render"),
        "You are coder; write `cat <<EOF`."
    );
}

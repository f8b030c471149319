use dsh_system_prompt::{AssembleContext, prompt_context, prompt_variable};

#[prompt_variable]
fn model(_cx: &AssembleContext) -> Option<String> {
    None
}

#[prompt_context(name = "editor", order = 1)]
const OPEN_FILE: &str = "The file open on <<modle>>.";

fn main() {}

use dsh_system_prompt::{AssembleContext, prompt_context};

#[prompt_context(name = "editor", order = 1)]
const OPEN_FILE: &str = "The open file.";

#[prompt_context(name = "editor", order = 2)]
fn selection(_cx: &AssembleContext) -> String {
    "The selection.".to_owned()
}

fn main() {}

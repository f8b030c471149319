use dsh_system_prompt::{AssembleContext, prompt_section, prompt_variable};

#[prompt_variable]
fn model(_cx: &AssembleContext) -> Option<String> {
    None
}

#[prompt_section(order = 1)]
const HABIT: &str = "You run <<modle>>.";

fn main() {}

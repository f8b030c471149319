use dsh_system_prompt::{AssembleContext, prompt_section};

// A fn named `model`, but without `#[prompt_variable]`.
#[allow(dead_code)]
fn model(_cx: &AssembleContext) -> Option<String> {
    None
}

#[prompt_section(order = 1)]
const HABIT: &str = "You run <<model>>.";

fn main() {}

use dsh_system_prompt::{AssembleContext, prompt_section, prompt_variable};

// The wrong return type is the only error: the section's `<<model>>` still
// resolves, so the mistake does not cascade.
#[prompt_variable]
fn model(_cx: &AssembleContext) -> Option<u32> {
    None
}

#[prompt_section(order = 1)]
const HABIT: &str = "You run <<model>>.";

fn main() {}

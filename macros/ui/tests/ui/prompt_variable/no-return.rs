use dsh_system_prompt::{AssembleContext, prompt_variable};

#[prompt_variable]
fn model(_cx: &AssembleContext) {}

fn main() {}

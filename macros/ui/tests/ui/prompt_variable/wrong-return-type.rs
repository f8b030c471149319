use dsh_system_prompt::{AssembleContext, prompt_variable};

#[prompt_variable]
fn retries(_cx: &AssembleContext) -> u32 {
    3
}

fn main() {}

use dsh_system_prompt::{AssembleContext, prompt_context};

#[prompt_context(order = 1)]
fn todo(_cx: &AssembleContext) -> Option<String> {
    None
}

fn main() {}

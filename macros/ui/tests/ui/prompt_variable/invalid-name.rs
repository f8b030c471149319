use dsh_system_prompt::{AssembleContext, prompt_variable};

#[prompt_variable]
fn _model(_cx: &AssembleContext) -> Option<String> {
    None
}

fn main() {}

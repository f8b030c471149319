use dsh_system_prompt::{AssembleContext, prompt_variable};

#[prompt_variable]
async fn model(_cx: &AssembleContext) -> Option<String> {
    None
}

fn main() {}

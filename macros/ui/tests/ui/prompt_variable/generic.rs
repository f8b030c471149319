use dsh_system_prompt::{AssembleContext, prompt_variable};

#[prompt_variable]
fn model<const N: usize>(_cx: &AssembleContext) -> Option<String> {
    Some(N.to_string())
}

fn main() {}

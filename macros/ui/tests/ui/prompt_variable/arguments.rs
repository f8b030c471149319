use dsh_system_prompt::{AssembleContext, prompt_variable};

#[prompt_variable(name = "model")]
fn agent_model(_cx: &AssembleContext) -> Option<String> {
    None
}

fn main() {}

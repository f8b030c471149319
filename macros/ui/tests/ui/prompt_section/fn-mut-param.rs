use dsh_system_prompt::{AssembleContext, prompt_section};

#[prompt_section(order = 1)]
fn habit(_cx: &mut AssembleContext) -> String {
    String::new()
}

fn main() {}

use dsh_system_prompt::{AssembleContext, prompt_section};

#[prompt_section(order = 1)]
unsafe fn habit(_cx: &AssembleContext) -> String {
    String::new()
}

fn main() {}

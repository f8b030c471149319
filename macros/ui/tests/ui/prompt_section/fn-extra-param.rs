use dsh_system_prompt::{AssembleContext, prompt_section};

#[prompt_section(order = 1)]
fn habit(_cx: &AssembleContext, verbose: bool) -> String {
    verbose.to_string()
}

fn main() {}

use dsh_system_prompt::{AssembleContext, prompt_section};

#[prompt_section(order = 1)]
fn habit<T: Default + ToString>(_cx: &AssembleContext) -> String {
    T::default().to_string()
}

fn main() {}

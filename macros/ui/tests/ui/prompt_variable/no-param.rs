use dsh_system_prompt::prompt_variable;

#[prompt_variable]
fn model() -> Option<String> {
    None
}

fn main() {}

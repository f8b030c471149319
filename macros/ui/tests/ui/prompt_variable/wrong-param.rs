use dsh_system_prompt::prompt_variable;

#[prompt_variable]
fn model(cx: &str) -> Option<String> {
    Some(cx.to_owned())
}

fn main() {}

use dsh_system_prompt::prompt_section;

#[prompt_section(order = 1)]
fn habit(cx: &str) -> String {
    cx.to_owned()
}

fn main() {}

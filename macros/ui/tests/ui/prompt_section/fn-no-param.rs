use dsh_system_prompt::prompt_section;

#[prompt_section(order = 1)]
fn habit() -> String {
    String::new()
}

fn main() {}

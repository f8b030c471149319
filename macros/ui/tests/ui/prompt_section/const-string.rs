use dsh_system_prompt::prompt_section;

#[prompt_section(order = 1)]
const HABIT: String = String::new();

fn main() {}

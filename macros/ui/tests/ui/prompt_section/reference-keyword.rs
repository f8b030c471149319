use dsh_system_prompt::prompt_section;

#[prompt_section(order = 1)]
const HABIT: &str = "Work in <<crate>>.";

fn main() {}

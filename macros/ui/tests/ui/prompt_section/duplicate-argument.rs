use dsh_system_prompt::prompt_section;

#[prompt_section(order = 1, order = 2)]
const HABIT: &str = "Check the exit code.";

fn main() {}

use dsh_system_prompt::prompt_section;

#[prompt_section(order = 2147483648)]
const HABIT: &str = "Check the exit code.";

fn main() {}

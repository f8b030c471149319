use dsh_system_prompt::prompt_section;

#[prompt_section(order = 105u8)]
const HABIT: &str = "Check the exit code.";

fn main() {}

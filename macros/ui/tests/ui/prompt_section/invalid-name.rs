use dsh_system_prompt::prompt_section;

#[prompt_section(name = "tool bash", order = 105)]
const HABIT: &str = "Check the exit code.";

fn main() {}

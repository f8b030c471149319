use dsh_system_prompt::prompt_section;

#[prompt_section(ordr = 1)]
const HABIT: &str = "Check the exit code.";

fn main() {}

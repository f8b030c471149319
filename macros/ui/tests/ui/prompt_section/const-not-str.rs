use dsh_system_prompt::prompt_section;

#[prompt_section(order = 1)]
const HABIT: u32 = 1;

fn main() {}

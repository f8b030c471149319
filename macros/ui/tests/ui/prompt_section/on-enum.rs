use dsh_system_prompt::prompt_section;

#[prompt_section(order = 1)]
enum Habit {}

fn main() {}

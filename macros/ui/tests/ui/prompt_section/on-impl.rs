use dsh_system_prompt::prompt_section;

struct Habit;

#[prompt_section(order = 1)]
impl Habit {}

fn main() {}

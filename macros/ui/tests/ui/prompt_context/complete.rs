use dsh_system_prompt::prompt_context;

#[prompt_context(order = 0, complete)]
const STATE: &str = "On branch main.";

fn main() {}

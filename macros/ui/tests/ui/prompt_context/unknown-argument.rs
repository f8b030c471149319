use dsh_system_prompt::prompt_context;

#[prompt_context(ordr = 1)]
const STATE: &str = "On branch main.";

fn main() {}

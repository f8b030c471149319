use dsh_system_prompt::prompt_section;

#[prompt_section(order = 0, complete = true)]
const MINIMAL: &str = "You are a minimal agent.";

fn main() {}

use dsh_system_prompt::prompt_variable;

#[prompt_variable]
const MODEL: &str = "gpt-5";

fn main() {}

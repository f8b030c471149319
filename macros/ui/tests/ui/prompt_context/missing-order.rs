use dsh_system_prompt::prompt_context;

#[prompt_context(name = "editor")]
const OPEN_FILE: &str = "The open file.";

fn main() {}

use dsh_system_prompt::prompt_variable;

#[prompt_variable]
struct Model;

fn main() {}

use dsh_system_prompt::prompt_section;

// A type named `model`, but not a `#[prompt_variable]`.
#[allow(non_camel_case_types, dead_code)]
struct model;

#[prompt_section(order = 1)]
const HABIT: &str = "You run <<model>>.";

fn main() {}

use dsh_system_prompt::prompt_section;

// Every mistake of an attribute is reported in one compile.
#[prompt_section(order = 1.5, name = "", tool = "", tool = "bash")]
const HABIT: &str = "Check the exit code.";

fn main() {}

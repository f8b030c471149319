use dsh_system_prompt::prompt_section;

// Every syntax error in the literal is reported, each with its line:column.
#[prompt_section(order = 1)]
const HABIT: &str = "You run <<Model>>.
Work in << cwd >>, and write heredocs as <<<EOF>>>.";

fn main() {}

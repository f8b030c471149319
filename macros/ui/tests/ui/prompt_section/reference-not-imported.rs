use dsh_system_prompt::prompt_section;

mod agent {
    use dsh_system_prompt::{AssembleContext, prompt_variable};

    #[prompt_variable]
    pub fn model(_cx: &AssembleContext) -> Option<String> {
        None
    }
}

// The variable exists, but not in scope here: `use agent::model;` fixes it.
#[prompt_section(order = 1)]
const HABIT: &str = "You run <<model>>.";

fn main() {}

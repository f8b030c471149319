mod agent {
    use dsh_system_prompt::{AssembleContext, prompt_variable};

    #[prompt_variable]
    pub fn model(_cx: &AssembleContext) -> Option<String> {
        None
    }
}

mod config {
    use dsh_system_prompt::{AssembleContext, prompt_variable};

    #[prompt_variable]
    pub fn model(_cx: &AssembleContext) -> Option<String> {
        Some("gpt-5".to_owned())
    }
}

fn main() {}

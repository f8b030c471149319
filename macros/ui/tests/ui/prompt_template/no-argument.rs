use dsh_system_prompt::prompt_template;

const PERSONA: &str = prompt_template!();

fn main() {
    let _ = PERSONA;
}

use dsh_system_prompt::prompt_template;

const PERSONA: &str = prompt_template!("You are <<Name>>, working in << cwd >>.");

fn main() {
    let _ = PERSONA;
}

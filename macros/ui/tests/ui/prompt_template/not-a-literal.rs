use dsh_system_prompt::prompt_template;

const TEXT: &str = "You are <<name>>.";
const PERSONA: &str = prompt_template!(TEXT);

fn main() {
    let _ = PERSONA;
}

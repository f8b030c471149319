mod bash {
    use dsh_system_prompt::prompt_section;

    #[prompt_section(name = "tool:bash", order = 105)]
    const EXIT_CODE: &str = "Check the exit code.";
}

mod shell {
    use dsh_system_prompt::prompt_section;

    #[prompt_section(name = "tool:bash", order = 106)]
    const QUOTING: &str = "Quote paths with spaces.";
}

fn main() {}

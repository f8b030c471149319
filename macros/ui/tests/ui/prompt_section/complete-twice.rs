mod minimal {
    use dsh_system_prompt::prompt_section;

    #[prompt_section(name = "agent:persona", order = 0, complete)]
    const MINIMAL: &str = "You are a minimal agent.";
}

mod reviewer {
    use dsh_system_prompt::prompt_section;

    #[prompt_section(order = 1, complete)]
    const REVIEWER: &str = "You review changes.";
}

fn main() {}

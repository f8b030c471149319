mod editor {
    use dsh_system_prompt::prompt_context;

    #[prompt_context(name = "editor", order = 1)]
    const OPEN_FILE: &str = "The open file.";
}

mod git {
    use dsh_system_prompt::prompt_context;

    #[prompt_context(name = "editor", order = 2)]
    const BRANCH: &str = "The branch.";
}

fn main() {}

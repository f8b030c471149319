//! Every form of `#[prompt_section]` builds without a warning, and
//! `SystemPrompt::new()` installs it.
#![deny(warnings)]

use dsh_system_prompt::{AssembleContext, SystemPrompt, prompt_section, prompt_variable};

mod variables {
    use dsh_system_prompt::{AssembleContext, prompt_variable};

    #[prompt_variable]
    pub fn model(_cx: &AssembleContext) -> Option<String> {
        Some("gpt-5".to_owned())
    }

    /// A keyword name: the fn is `r#type`, the reference `<<type>>`.
    #[prompt_variable]
    pub(crate) fn r#type(_cx: &AssembleContext) -> String {
        "coding".to_owned()
    }
}

// A variable of another module is referenced after importing it.
use variables::{model, r#type};

#[prompt_variable]
fn shell(_cx: &AssembleContext) -> String {
    "bash".to_owned()
}

#[prompt_section(name = "tool:bash", order = 105, tool = "bash")]
const EXIT_CODE: &str = "Commands run in <<shell>>; check `[exit code: N]`.";

#[prompt_section(order = -10)]
pub static PREAMBLE: &'static str = "A <<type>> agent on <<model>>, <<model>> again.";

#[prompt_section(order = 0, name = "agent:persona")]
fn persona(_cx: &AssembleContext) -> String {
    "You are a careful agent.".to_owned()
}

// A literal with no references and an escaped `\<<`, and a raw string.
#[prompt_section(order = 2147483647)]
const HEREDOC: &str = r"Write heredocs as `cat \<<EOF`.";

#[prompt_section(order = -2147483648, name = "first")]
const FIRST: &str = "First.";

// Text that is not a literal is checked when the registry is built.
#[prompt_section(order = 7i32)]
const JOINED: &str = concat!("Joined ", "text.");

#[cfg(any())]
#[prompt_section(order = 1, name = "configured:away")]
const CONFIGURED_AWAY: &str = "Never registered.";

// A `cfg` after the attribute: the registration is configured away with
// the item.
#[prompt_section(order = 1, name = "configured:away")]
#[cfg(any())]
const CONFIGURED_AWAY_TOO: &str = "Never registered <<unconfigured>>.";

#[prompt_variable]
#[cfg(any())]
fn unconfigured(_cx: &AssembleContext) -> String {
    String::new()
}

fn main() {
    // A section declared inside a fn body.
    #[prompt_section(order = 3, name = "local")]
    const LOCAL: &str = "Declared in main.";

    let prompt = SystemPrompt::new().expect("static contributions install");
    let names: Vec<String> = prompt
        .section_names()
        .iter()
        .map(|n| n.to_string())
        .collect();
    // Without `name`, a section is named after its path; trybuild names
    // this crate.
    let krate = module_path!();
    assert_eq!(
        names,
        [
            "first".to_owned(),
            format!("{krate}::PREAMBLE"),
            "agent:persona".to_owned(),
            "local".to_owned(),
            format!("{krate}::JOINED"),
            "tool:bash".to_owned(),
            format!("{krate}::HEREDOC"),
        ]
    );
    let variables: Vec<String> = prompt
        .variable_names()
        .iter()
        .map(|n| n.to_string())
        .collect();
    assert_eq!(variables, ["model", "shell", "type"]);
}

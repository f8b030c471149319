//! The three facts of the prompt this crate owns: the persona section and
//! the `model` and `cwd` variables. Nothing else of the prompt is written
//! here.

use dsh_system_prompt::{AssembleContext, prompt_section, prompt_variable};

use crate::AgentContextExt;

/// The name of the section that renders the agent's persona, for code that
/// looks the section up (a front end mapping a render error back to the
/// deployment's persona). The macro below declares it with this literal;
/// a test keeps the two the same.
pub const PERSONA_SECTION: &str = "agent:persona";

/// The name of the prompt variable [`model`] declares: `<<model>>`.
pub const MODEL_VARIABLE: &str = "model";

/// The name of the prompt variable [`cwd`] declares: `<<cwd>>`.
pub const CWD_VARIABLE: &str = "cwd";

/// Section `agent:persona`, order 0: the agent's identity renders before
/// every tool's guidance. Its text is the agent's persona as the deployment
/// wrote it, so its references are checked when the prompt is rendered.
#[prompt_section(name = "agent:persona", order = 0)]
fn persona(cx: &AssembleContext) -> String {
    cx.agent()
        .map(|agent| agent.persona().to_owned())
        .unwrap_or_default()
}

/// Prompt variable `model`: the model the agent is configured to run.
#[prompt_variable]
pub fn model(cx: &AssembleContext) -> Option<String> {
    cx.agent().map(|agent| agent.model().to_owned())
}

/// Prompt variable `cwd`: the working directory of the agent's session;
/// no value when the session has none (so a `<<cwd>>` then fails to
/// render, loudly, instead of saying something untrue).
#[prompt_variable]
pub fn cwd(cx: &AssembleContext) -> Option<String> {
    let cwd = cx.session()?.cwd.as_deref()?;
    Some(cwd.to_string_lossy().into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Agent, AgentOptions, Session};

    #[test]
    fn the_names_are_those_the_macros_declare() -> Result<(), Box<dyn std::error::Error>> {
        let prompt = dsh_system_prompt::SystemPrompt::new()?;
        let assembly = prompt.assemble(&AssembleContext::default());
        let persona = assembly
            .sections
            .get(PERSONA_SECTION)
            .map(|section| section.owner().item.to_string());
        assert_eq!(persona.as_deref(), Some("dsh_agent_loop::prompt::persona"));
        for (name, item) in [
            (MODEL_VARIABLE, "dsh_agent_loop::prompt::model"),
            (CWD_VARIABLE, "dsh_agent_loop::prompt::cwd"),
        ] {
            let owner = assembly
                .variables
                .owner(name)
                .map(|owner| owner.item.to_string());
            assert_eq!(owner.as_deref(), Some(item), "variable `{name}`");
        }
        Ok(())
    }

    #[test]
    fn a_bare_context_has_no_facts() {
        let cx = AssembleContext::default();
        assert_eq!(persona(&cx), "");
        assert_eq!(model(&cx), None);
        assert_eq!(cwd(&cx), None);
    }

    #[test]
    fn facts_come_from_the_agent_and_its_session() {
        let agent = Agent::new("a", AgentOptions::new("m1").with_persona("p"));
        let cx = AssembleContext::new()
            .with_agent(agent)
            .with_session(&Session::new().with_cwd("/w"));
        assert_eq!(persona(&cx), "p");
        assert_eq!(model(&cx).as_deref(), Some("m1"));
        assert_eq!(cwd(&cx).as_deref(), Some("/w"));
    }
}

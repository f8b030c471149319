//! `model` and `cwd` are Rust items: another crate's static section
//! references them by importing them, and the build checks the reference.

use dsh_agent_loop::{Agent, AgentLoop, AgentOptions, ScriptedAdapter, Session};
use dsh_agent_loop::{cwd, model};
use dsh_system_prompt::{SystemPrompt, prompt_section, render_prompt};
use dsh_tools::ToolRegistry;
use std::sync::Arc;

#[prompt_section(name = "test:workspace", order = 150)]
const WORKSPACE: &str = "<<model>> works in <<cwd>>.";

#[test]
fn a_static_section_of_another_crate_renders_the_loops_variables()
-> Result<(), Box<dyn std::error::Error>> {
    let agent_loop = AgentLoop::new(
        SystemPrompt::new()?,
        ToolRegistry::new(),
        Arc::new(ScriptedAdapter::default()),
    );
    let agent = Agent::new(
        "coder",
        AgentOptions::new("model-7").with_persona("I am <<model>>."),
    );
    let session = Session::new().with_cwd("/w");
    assert_eq!(
        render_prompt(&agent_loop.assemble(&agent, &session))?,
        "I am model-7.\n\nmodel-7 works in /w."
    );
    Ok(())
}

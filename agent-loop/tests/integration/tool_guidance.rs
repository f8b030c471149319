//! With the real tool crates installed, an agent's prompt is its persona,
//! then `tool:read`, then `tool:bash` — and guidance leaves with its tool.

use crate::support;

use std::sync::Arc;

use dsh_agent_loop::{Agent, AgentOptions, ModelResponse, ScriptedAdapter, Session};
use dsh_system_prompt::render_prompt;
use dsh_tool_bash::{BashTool, EXIT_CODE_HABIT};
use dsh_tool_fs::{READ_HABIT, ReadTool};
use dsh_tool_todo::TodoWriteTool;
use dsh_tools::Tool;
use tokio_util::sync::CancellationToken;

type TestResult = Result<(), Box<dyn std::error::Error>>;

const PERSONA: &str = "You are a coding agent running <<model>>.";

fn all_tools() -> Vec<Arc<dyn Tool>> {
    vec![
        Arc::new(ReadTool::new()),
        Arc::new(BashTool::new()),
        Arc::new(TodoWriteTool::new()),
    ]
}

#[tokio::test]
async fn with_every_tool_the_prompt_is_persona_then_read_then_bash() -> TestResult {
    let adapter = Arc::new(ScriptedAdapter::new([ModelResponse::text("ok")]));
    let (agent_loop, _installed) = support::agent_loop(all_tools(), adapter.clone())?;
    let agent = Agent::new("coder", AgentOptions::new("gpt-5").with_persona(PERSONA));
    let mut session = Session::new();

    agent_loop
        .run_turn(&agent, &mut session, "hi", &CancellationToken::new())
        .await?;

    let expected =
        format!("You are a coding agent running gpt-5.\n\n{READ_HABIT}\n\n{EXIT_CODE_HABIT}");
    assert_eq!(
        adapter.requests()[0].system.as_deref(),
        Some(expected.as_str())
    );
    Ok(())
}

#[tokio::test]
async fn without_bash_in_the_agents_tool_set_its_guidance_disappears() -> TestResult {
    let adapter = Arc::new(ScriptedAdapter::new([ModelResponse::text("ok")]));
    let (agent_loop, _installed) = support::agent_loop(all_tools(), adapter.clone())?;
    let agent = Agent::new("reader", AgentOptions::new("gpt-5").with_persona(PERSONA))
        .with_tools(["read", "todo_write"]);
    let session = Session::new();

    let assembly = agent_loop.assemble(&agent, &session);
    let text = render_prompt(&assembly)?;

    assert_eq!(
        text,
        format!("You are a coding agent running gpt-5.\n\n{READ_HABIT}")
    );
    assert!(!assembly.has_tool("bash"));
    assert!(!text.contains(EXIT_CODE_HABIT));
    Ok(())
}

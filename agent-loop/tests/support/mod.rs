//! Test tools and a loop builder shared by the integration tests.

#![allow(dead_code, unreachable_pub)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use dsh_agent_loop::{
    Agent, AgentLoop, CallingTurn, ModelAdapter, ModelResponse, ScriptedAdapter, Session,
    TurnError, TurnSummary,
};
use dsh_system_prompt::{Registration, SystemPrompt};
use dsh_tools::{Tool, ToolCallContext, ToolError, ToolOutput, ToolRegistry, async_trait};
use tokio_util::sync::CancellationToken;

/// Returns its `text` argument; counts its calls.
#[derive(Default)]
pub struct Echo {
    pub calls: AtomicUsize,
}

#[async_trait]
impl Tool for Echo {
    fn name(&self) -> &str {
        "echo"
    }

    fn description(&self) -> String {
        "Returns `text` unchanged.".to_owned()
    }

    fn parameters(&self) -> serde_json::Value {
        serde_json::json!({
            "type": "object",
            "properties": {"text": {"type": "string", "description": "The text to return."}},
            "required": ["text"],
            "additionalProperties": false,
        })
    }

    async fn execute(
        &self,
        arguments: serde_json::Value,
        _cx: &ToolCallContext,
    ) -> Result<ToolOutput, ToolError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        Ok(ToolOutput::new(
            arguments["text"].as_str().unwrap_or_default(),
        ))
    }
}

/// A test tool of one fixed behaviour, whose arguments are any object.
pub enum TestTool {
    /// `boom`: panics on every call, a tool with a bug.
    Boom,
    /// `slow`: sleeps for a minute, ignoring cancellation.
    Slow,
    /// `inspect`: reports what it learns about the calling turn.
    Inspect,
}

#[async_trait]
impl Tool for TestTool {
    fn name(&self) -> &str {
        match self {
            Self::Boom => "boom",
            Self::Slow => "slow",
            Self::Inspect => "inspect",
        }
    }

    fn description(&self) -> String {
        match self {
            Self::Boom => "Has a bug.",
            Self::Slow => "Takes a minute.",
            Self::Inspect => "Reports the calling turn.",
        }
        .to_owned()
    }

    fn parameters(&self) -> serde_json::Value {
        serde_json::json!({"type": "object"})
    }

    async fn execute(
        &self,
        _arguments: serde_json::Value,
        cx: &ToolCallContext,
    ) -> Result<ToolOutput, ToolError> {
        match self {
            Self::Boom => panic!("the boom tool always panics"),
            Self::Slow => {
                tokio::time::sleep(Duration::from_secs(60)).await;
                Ok(ToolOutput::new("done"))
            }
            Self::Inspect => {
                let Some(turn) = cx.get::<CallingTurn>() else {
                    return Err(ToolError::failed("inspect", "no calling turn"));
                };
                Ok(ToolOutput::new(format!(
                    "agent={} session={} same_session={} cwd={:?} completed_events={}",
                    turn.agent().id(),
                    turn.session().id,
                    turn.session().id.as_str() == cx.session_id,
                    cx.cwd,
                    turn.completed_turns().len(),
                )))
            }
        }
    }
}

/// One turn of `agent` in `session`, never cancelled.
pub async fn turn(
    agent_loop: &AgentLoop,
    agent: &Agent,
    session: &mut Session,
    input: &str,
) -> Result<TurnSummary, TurnError> {
    agent_loop
        .run_turn(agent, session, input, &CancellationToken::new())
        .await
}

/// A loop with the [`Echo`] tool whose model answers `answers` in order,
/// and that model, to read the requests it was sent.
pub fn echo_loop(
    answers: impl IntoIterator<Item = ModelResponse>,
) -> Result<(AgentLoop, Registration, Arc<ScriptedAdapter>), Box<dyn std::error::Error>> {
    let adapter = Arc::new(ScriptedAdapter::new(answers));
    let (agent_loop, installed) = agent_loop(vec![Arc::new(Echo::default())], adapter.clone())?;
    Ok((agent_loop, installed, adapter))
}

/// A loop over a fresh registry with the static contributions, and the
/// tools given installed. Keep the returned registration alive.
pub fn agent_loop(
    tools: Vec<Arc<dyn Tool>>,
    adapter: Arc<dyn ModelAdapter>,
) -> Result<(AgentLoop, Registration), Box<dyn std::error::Error>> {
    let prompt = SystemPrompt::new()?;
    let registry = ToolRegistry::new();
    for tool in tools {
        registry.register(tool)?;
    }
    let installed = registry.install(&prompt)?;
    Ok((AgentLoop::new(prompt, registry, adapter), installed))
}

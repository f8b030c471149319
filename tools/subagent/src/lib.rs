//! Subagents: a tool that hands one task to a child agent and returns the
//! child's final answer, worded truthfully for the provider it is bound to.
//!
//! ```
//! use std::sync::Arc;
//!
//! use dsh_agent_loop::{Agent, AgentLoop, AgentOptions, Message, ModelResponse, ScriptedAdapter, Session, ToolCall};
//! use dsh_system_prompt::SystemPrompt;
//! use dsh_tool_subagent::{SpawnProvider, SubagentProviders, SubagentTool, SubagentToolConfig};
//! use dsh_tools::ToolRegistry;
//! use tokio_util::sync::CancellationToken;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! // Providers first: a subagent tool resolves its provider when installed.
//! let providers = SubagentProviders::new();
//! providers.register(Arc::new(SpawnProvider::new()))?;
//! let tools = ToolRegistry::new();
//! SubagentTool::install(&SubagentToolConfig::new("spawn"), &providers, &tools)?;
//!
//! let prompt = SystemPrompt::new()?;
//! let _installed = tools.install(&prompt)?;
//! // The parent asks for a subagent, the child answers, the parent answers.
//! let adapter = Arc::new(ScriptedAdapter::new([
//!     ModelResponse::default().with_tool_call(ToolCall::new(
//!         "call_1",
//!         "subagent",
//!         r#"{"prompt": "Count the words in: a b c"}"#,
//!     )),
//!     ModelResponse::text("3"),
//!     ModelResponse::text("The subagent counted 3 words."),
//! ]));
//! let agent_loop = AgentLoop::new(prompt, tools, adapter.clone());
//!
//! let agent = Agent::new("coder", AgentOptions::new("gpt-5"));
//! let mut session = Session::new();
//! let summary = agent_loop
//!     .run_turn(&agent, &mut session, "How many words?", &CancellationToken::new())
//!     .await?;
//! assert_eq!(summary.answer, "The subagent counted 3 words.");
//!
//! // A spawned child starts fresh: it saw only its prompt.
//! let child = &adapter.requests()[1];
//! assert_eq!(child.messages, [Message::User { text: "Count the words in: a b c".into() }]);
//! # Ok(())
//! # }
//! ```
//!
//! # Providers
//!
//! A [`SubagentProvider`] has a name, [capabilities](SubagentCapabilities),
//! and says whether its children inherit the caller's context:
//!
//! - [`SpawnProvider`] (`spawn`, `inherits_parent_context = false`): a
//!   fresh child agent and session in this process, in the caller's
//!   working directory; who the child is comes from a
//!   [`ChildAgentConfig`] (the parent's model, persona and tools unless it
//!   says otherwise).
//! - [`ForkProvider`] (`fork`, `true`): the caller's agent, its session
//!   seeded with the caller's completed turns — not the turn in flight,
//!   which is still being written.
//!
//! A provider that talks to another agent over a protocol (ACP) is fresh
//! too: `false`. Providers live in a [`SubagentProviders`] registry.
//!
//! # The tool
//!
//! A [`SubagentTool`] is bound to one provider by its
//! [`SubagentToolConfig`]; a second instance under another tool name binds
//! another provider. Its description and its `prompt` parameter's
//! description are derived from `inherits_parent_context`: a fresh child
//! is announced as not seeing this conversation, so the model writes a
//! complete, self-contained prompt; an inheriting child as seeing the
//! completed turns, so the prompt says only what is new. The tool needs no
//! prompt section: its description carries its whole contract.
//!
//! [`SubagentTool::install`] resolves the provider at once: a tool bound to
//! a provider that is not registered fails then, with the fix in the
//! message — register providers before the tools that use them.
//!
//! Every run is disposed — on success, error, cancellation, a panic, and
//! when the call is dropped — and a child's failure is the call's error
//! result, never the caller's crash. In-process children reach the caller's
//! loop through the [`CallingTurn`](dsh_agent_loop::CallingTurn) the agent
//! loop attaches to every tool call.
#![deny(missing_docs)]

mod acp;
mod depth;
mod error;
mod in_process;
mod provider;
mod table;
mod tool;

pub use acp::AcpProvider;
pub use depth::{DEFAULT_MAX_DEPTH, DEPTH_ENV, current_depth};
pub use error::SubagentError;
pub use in_process::{AgentFields, ChildAgentConfig, ForkProvider, SpawnProvider};
pub use provider::{
    SubagentCapabilities, SubagentProvider, SubagentProviders, SubagentRun, SubagentTask,
};
pub use table::{SubagentKind, SubagentTable, SubagentTableError};
pub use tool::{SubagentTool, SubagentToolConfig};

//! Agents, sessions and the step loop: each step assembles the system
//! prompt for one agent, renders it, and sends exactly that to the model.
//!
//! ```
//! use std::sync::Arc;
//!
//! use dsh_agent_loop::{Agent, AgentLoop, AgentOptions, ModelResponse, ScriptedAdapter, Session};
//! use dsh_system_prompt::SystemPrompt;
//! use dsh_tools::ToolRegistry;
//! use tokio_util::sync::CancellationToken;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! // One registry for the process: the persona section and the `model` and
//! // `cwd` variables of this crate, and the sections of every linked tool
//! // crate, are installed by `SystemPrompt::new`.
//! let prompt = SystemPrompt::new()?;
//! let tools = ToolRegistry::new();
//! let _installed = tools.install(&prompt)?;
//! let adapter = Arc::new(ScriptedAdapter::new([ModelResponse::text("Hello!")]));
//! let agent_loop = AgentLoop::new(prompt, tools, adapter.clone());
//!
//! let agent = Agent::new(
//!     "coder",
//!     AgentOptions::new("gpt-5").with_persona("You are a coding agent running <<model>> in <<cwd>>."),
//! );
//! let mut session = Session::new().with_cwd("/work");
//! let summary = agent_loop
//!     .run_turn(&agent, &mut session, "Say hello.", &CancellationToken::new())
//!     .await?;
//!
//! assert_eq!(summary.answer, "Hello!");
//! let request = &adapter.requests()[0];
//! assert_eq!(request.model, "gpt-5");
//! assert_eq!(request.system.as_deref(), Some("You are a coding agent running gpt-5 in /work."));
//! # Ok(())
//! # }
//! ```
//!
//! # What this crate owns of the prompt
//!
//! Three facts, declared with the macros of `dsh-system-prompt`, and
//! nothing else:
//!
//! - section `agent:persona` ([`PERSONA_SECTION`]), order 0 — the agent's
//!   [persona](AgentOptions::persona), its template fragment, so identity
//!   renders before all tool guidance (orders 100–199);
//! - variable [`model`] ([`MODEL_VARIABLE`]) — the agent's configured model;
//! - variable [`cwd`] ([`CWD_VARIABLE`]) — its session's working directory;
//!   no value when the session has none.
//!
//! Code that refers to these names (a front end that maps a render error
//! back to a persona) uses the constants, never the strings.
//!
//! They reach assemblies through the context: each step assembles with the
//! agent and its session's facts, which providers read back with
//! [`AgentContextExt`] (`cx.agent()`, `cx.session()`). What a tool does and
//! how to use it comes from the tool crates; a persona should not restate
//! it. `render_prompt(assembly)` is the whole system prompt: the loop adds
//! no banner, joins nothing, and sends no system message at all when the
//! prompt renders empty.
//!
//! # A turn
//!
//! [`AgentLoop::run_turn`] appends the user's message to the [`Session`],
//! then steps: assemble with [`AgentLoop::context`], render, show
//! exactly that prompt to the loop's observers ([`LoopEvent::Step`]),
//! send a [`ModelRequest`] `{ model, system, tools, messages }` to the
//! [`ModelAdapter`], append the answer, run each tool call through the
//! [`ToolRegistry`](dsh_tools::ToolRegistry) (only tools of the step's
//! final assembly may run, each after the [`ToolApproval`], if any, allows
//! it), append the results — until the model answers without tool calls,
//! or the step limit is reached.
//!
//! # Observers
//!
//! A [`LoopObserver`], installed with [`AgentLoop::observed_by`], sees
//! each [`LoopEvent`] as it happens: every event once it is appended to
//! the session's log ([`Recorded`](LoopEvent::Recorded)), the answer's
//! text as it streams ([`Text`](LoopEvent::Text)) and what the model
//! thinks before it ([`Thought`](LoopEvent::Thought), its [`Thought`]s),
//! what a running tool call reports ([`Progress`](LoopEvent::Progress)),
//! the prompt of each step ([`Step`](LoopEvent::Step)) and the whole
//! answer, with the tokens the API says it took ([`Usage`],
//! [`Response`](LoopEvent::Response)). Observers add up, so a host's trace
//! and a front end's display both see everything; the enum is closed, so
//! an observer that forgets a new kind of event does not compile. A front
//! end (`dsh run`, `dsh acp`) is an observer, a [`ToolApproval`] and what
//! it lends a tool call
//! ([`on_tool_call_context`](AgentLoop::on_tool_call_context)): the loop
//! knows nothing of terminals, protocols or traces.
//!
//! ```
//! use std::sync::Arc;
//!
//! use dsh_agent_loop::{
//!     Agent, AgentLoop, AgentOptions, Event, LoopEvent, ModelResponse, ScriptedAdapter, Session,
//! };
//! use dsh_system_prompt::SystemPrompt;
//! use dsh_tools::ToolRegistry;
//! use parking_lot::Mutex;
//! use tokio_util::sync::CancellationToken;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let prompt = SystemPrompt::new()?;
//! let tools = ToolRegistry::new();
//! let _installed = tools.install(&prompt)?;
//! let adapter = Arc::new(ScriptedAdapter::new([ModelResponse::text("Hello!")]));
//! let shown = Arc::new(Mutex::new(Vec::new()));
//! let display = Arc::clone(&shown);
//! let agent_loop = AgentLoop::new(prompt, tools, adapter).observed_by(Arc::new(
//!     move |event: LoopEvent<'_>| match event {
//!         LoopEvent::Text { piece, .. } => display.lock().push(format!("text: {piece}")),
//!         LoopEvent::Recorded { event: Event::AssistantMessage { .. }, .. } => {
//!             display.lock().push("answer recorded".to_owned());
//!         }
//!         _ => {}
//!     },
//! ));
//!
//! let agent = Agent::new("coder", AgentOptions::new("gpt-5"));
//! agent_loop
//!     .run_turn(&agent, &mut Session::new(), "Say hello.", &CancellationToken::new())
//!     .await?;
//! assert_eq!(*shown.lock(), ["text: Hello!", "answer recorded"]);
//! # Ok(())
//! # }
//! ```
//!
//! # Failures
//!
//! Failures stay inside their turn: when the prompt does not render (a
//! persona says `<<cwd>>` and the session has none) no request is sent and
//! the turn ends with [`TurnError::Render`], whose message names the
//! section and the variable. An adapter error, a panic inside a prompt
//! provider, the adapter, a tool or an observer of a step or an answer,
//! the step limit and
//! cancellation end the turn the same way, with the reason in its
//! [`Event::TurnEnd`]. The agent serves the next turn, and other agents'
//! turns never notice.
//!
//! # Adapters
//!
//! - [`ScriptedAdapter`] answers from a queue of canned answers (tool calls
//!   included) and records every request: for tests and offline demos,
//!   loadable from a [`Script`] file.
//! - [`OpenAiAdapter`] talks to any OpenAI-compatible chat-completions API,
//!   its key read from a named environment variable. It streams: the text
//!   reaches the loop's observers ([`LoopEvent::Text`]) piece by piece
//!   as the server sends it (a server that does not stream answers whole).
//!   Each request names its session as `prompt_cache_key`.
//! - [`AnthropicAdapter`] talks to Anthropic's Messages API: it streams
//!   too, and places the prompt cache's breakpoints where dsh keeps the
//!   request stable (the rule, and why, is on the type). [`Usage`] then
//!   says what the cache read and what it wrote. With a
//!   [`thinking_budget`](AnthropicConfig::thinking_budget) the model
//!   thinks first; its signed thoughts go back to the API with the tool
//!   results, as it requires. (The OpenAI-compatible adapter reads the
//!   reasoning a server streams, and sends it back as `reasoning_content`
//!   for the answers of a turn that called tools, as DeepSeek's thinking
//!   mode requires; a server that streams none is sent none.)
//!
//! The two HTTP adapters share one exchange: posting, telling a busy API
//! from a failed one, reading the stream or the body, and cancelling are
//! written once, and each adapter states only its wire format. So both
//! retry a busy API (a 429; Anthropic's 529 and `overloaded_error`; any
//! status the server marks `x-should-retry: true`) after its
//! `retry-after`, or a doubling wait, up to `max_retries` times; both
//! bound what a server may send for one request ([`ResponseLimit`]); and
//! both follow a redirect only within the origin of their `base_url`,
//! since a request carries the API key and the conversation.
//!
//! A deployment picks one with an [`AdapterConfig`], its `[adapter.<kind>]`
//! table; the `dsh` command deserializes this schema, with places kept,
//! and its JSON Schema is `schemars::schema_for!(AdapterConfig<String>)`.
//!
//! # The vocabulary
//!
//! What a session's log records and a conversation is made of —
//! [`Event`], [`Message`], [`ToolCall`], [`SessionId`], [`AgentId`],
//! [`TurnEndReason`], [`CompactionTrigger`], [`NOT_RUN`] — is defined in
//! the small crate `dsh-agent-types` and re-exported here under the same
//! names. A crate that only stores or reads logs (the session store)
//! depends on that crate, without this one's HTTP client and tokenizer.
//!
//! # Tokens
//!
//! The loop owns which encoding an agent's model reads, as it owns the
//! model's name: [`Tokenizer::for_model`] selects it from the name (the
//! deployment's [`AdapterConfig`] may name another), and says when it fell
//! back to [`Tokenizer::DEFAULT`]. Counting is for front ends that ask
//! (explaining or budgeting a prompt, tracing a session), and for a step
//! whose request could reach its agent's [`ContextBudget`].
//!
//! # Long sessions
//!
//! Each agent has a [`ContextBudget`]: its model's context window (from
//! the deployment, or [`context_window_for`]'s table) and when to compact.
//! Before a step's request is sent, the loop checks it against the budget
//! — counting tokens only when the size the API last reported plus the
//! new messages' bytes could reach it — and compacts the history when it
//! does ([`compaction`]): old tool results elided first, then the oldest
//! turns summarized by the model. The system prompt and the tools are
//! never touched. Each compaction is one [`Event::Compacted`] in the log;
//! [`AgentLoop::compact`] compacts on request.
//!
//! # Cancellation
//!
//! Pass a [`CancellationToken`](tokio_util::sync::CancellationToken) to
//! `run_turn` and cancel it from anywhere: the turn stops waiting for the
//! model, gives a running tool [a moment](AgentLoop::with_cancel_grace) to
//! clean up, answers every open tool call, and ends with reason
//! `Cancelled`.
#![deny(missing_docs)]

mod adapters;
mod agent;
mod approval;
mod budget;
pub mod compaction;
mod context;
mod error;
mod history;
mod notes;
mod observer;
mod prompt;
mod request;
mod session;
mod tokens;
mod turn;

pub use adapters::{
    AdapterConfig, AnthropicAdapter, AnthropicConfig, CacheTtl, OpenAiAdapter, OpenAiConfig,
    ResponseLimit, Script, ScriptedAdapter, ScriptedAnswer, ScriptedToolCall,
};
pub use agent::{Agent, AgentOptions};
pub use approval::{Approval, ToolApproval};
pub use async_trait::async_trait;
pub use budget::{
    Assessment, CompactAt, ContextBudget, IMAGE_TOKENS, KnownSize, MESSAGE_FRAMING_TOKENS,
    WindowSource, context_window_for,
};
pub use compaction::{COMPACTION_SECTION, CompactionReport, compaction_context, elided_result};
pub use context::{AgentContextExt, SessionFacts};
pub use dsh_agent_types::{
    AgentId, CompactionTrigger, Event, IMAGE_TYPES, Image, ImageBudget, ImageProblem,
    MAX_IMAGE_BYTES, MAX_MESSAGE_IMAGE_BYTES, Message, NOT_RUN, SessionId, Thought, ToolCall,
    TurnEndReason,
};
pub use error::{BoxError, ModelApi, ModelError, TokenizerError, TurnError};
pub use history::{CONTEXT_CLEARED, CONTEXT_HEADER};
pub use notes::{Note, ResultNotes, noted};
pub use observer::{LoopEvent, LoopObserver};
pub use prompt::{CWD_VARIABLE, MODEL_VARIABLE, PERSONA_SECTION, cwd, model};
pub use request::{
    FinishReason, ModelAdapter, ModelRequest, ModelResponse, Piece, TextSink, Usage,
};
pub use session::Session;
pub use tokens::{Encoding, RangeTokens, Tokenizer, TokenizerChoice, TokenizerRule};
pub use turn::{AgentLoop, CallingTurn, StepPrompt, StepResponse, TurnSummary};

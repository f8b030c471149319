//! What the loop sends a model and what it gets back, and the one trait
//! every model adapter implements.

use std::sync::Arc;

use async_trait::async_trait;
use dsh_system_prompt::ToolSchema;
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use crate::{Message, ModelError, SessionId, Thought, ToolCall};

/// One request to a model: everything it is told for one step.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ModelRequest {
    /// The agent's model.
    pub model: String,
    /// The system prompt: exactly `render_prompt` of the step's assembly.
    /// `None` when that renders empty, so no system message is sent at all.
    pub system: Option<String>,
    /// The tools of the step's final assembly, with their JSON-schema
    /// parameters.
    pub tools: Vec<Arc<ToolSchema>>,
    /// The conversation so far.
    pub messages: Vec<Message>,
    /// The session the request belongs to; `None` for a request outside
    /// any session. An adapter may name it to the API so that a session's
    /// requests reach the same prompt cache (OpenAI's
    /// `prompt_cache_key`); it is never part of what the model reads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<SessionId>,
    /// How much the model reasons before it answers, where its API takes
    /// a level (OpenAI's `reasoning_effort`: `low`, `medium`, `high`);
    /// `None`: the API's default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effort: Option<String>,
    /// The most tokens of the answer, below the adapter's own limit (an
    /// MCP server's sampling request asks for one); `None`: the
    /// adapter's limit (Anthropic's `max_tokens`), or the API's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
}

/// A model's answer to one request.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelResponse {
    /// The text; empty when the model only called tools.
    #[serde(default)]
    pub text: String,
    /// The tools the model calls; none ends the turn.
    #[serde(default)]
    pub tool_calls: Vec<ToolCall>,
    /// The tokens the API says the request and the answer took, when it
    /// says (a scripted answer, or a server that reports none, has `None`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// Why the model stopped, as the API says it.
    #[serde(default, skip_serializing_if = "FinishReason::is_stop")]
    pub finish: FinishReason,
    /// What the model thought before it answered (Anthropic's extended
    /// thinking, an OpenAI-compatible server's reasoning), in order;
    /// empty when it showed none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub thoughts: Vec<Thought>,
}

/// Why a model stopped writing its answer, as its API says it (OpenAI's
/// `finish_reason`, Anthropic's `stop_reason`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum FinishReason {
    /// It was done, or called tools.
    #[default]
    Stop,
    /// It reached the request's output limit (OpenAI's `length`,
    /// Anthropic's `max_tokens`): the answer is cut short.
    MaxTokens,
    /// It refused (OpenAI's `content_filter` or a `refusal`, Anthropic's
    /// `refusal`).
    Refusal,
}

impl FinishReason {
    /// Whether the model simply stopped: the default, left out of a
    /// serialized answer.
    pub fn is_stop(&self) -> bool {
        *self == Self::Stop
    }
}

impl ModelResponse {
    /// A plain answer, with no tool calls.
    pub fn text(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            tool_calls: Vec::new(),
            usage: None,
            finish: FinishReason::Stop,
            thoughts: Vec::new(),
        }
    }

    /// Adds a thought, after those it has.
    pub fn with_thought(mut self, thought: Thought) -> Self {
        self.thoughts.push(thought);
        self
    }

    /// Sets why the model stopped.
    pub fn with_finish(mut self, finish: FinishReason) -> Self {
        self.finish = finish;
        self
    }

    /// Adds a tool call.
    pub fn with_tool_call(mut self, call: ToolCall) -> Self {
        self.tool_calls.push(call);
        self
    }

    /// Passes the whole answer to `on_text` at once, as an adapter that
    /// does not stream does: each thought's text, then the text (the
    /// empty ones left out).
    pub(crate) fn show_whole(&self, on_text: TextSink<'_>) {
        let thoughts = self
            .thoughts
            .iter()
            .map(|thought| Piece::Thought(thought.text()));
        Piece::send(thoughts.chain([Piece::Text(&self.text)]), on_text);
    }

    /// Sets the usage the API reported.
    pub fn with_usage(mut self, usage: Usage) -> Self {
        self.usage = Some(usage);
        self
    }
}

/// The tokens one request took, as the API counted them: the numbers it
/// bills, and the ones that show how much of the prompt its cache served.
///
/// ```
/// use dsh_agent_loop::Usage;
///
/// let usage = Usage::new(1_200, 40).with_cached_prompt_tokens(1_024);
/// assert_eq!(usage.cached_prompt_tokens, Some(1_024));
///
/// // Anthropic's API also says what the request wrote to its cache.
/// let written = Usage::new(1_200, 40).with_cache_creation_prompt_tokens(1_150);
/// assert_eq!(written.cache_creation_prompt_tokens, Some(1_150));
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct Usage {
    /// The tokens of the request: system prompt, tools and messages, with
    /// the API's own framing — all of them, those the cache served or
    /// stored included (Anthropic's `input_tokens`,
    /// `cache_creation_input_tokens` and `cache_read_input_tokens` added
    /// up).
    pub prompt_tokens: u64,
    /// The tokens of the answer.
    pub completion_tokens: u64,
    /// Of the prompt's tokens, how many the API served from its prompt
    /// cache (OpenAI's `usage.prompt_tokens_details.cached_tokens`,
    /// Anthropic's `cache_read_input_tokens`); `None` when the API does not
    /// say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_prompt_tokens: Option<u64>,
    /// Of the prompt's tokens, how many the API wrote to its prompt cache
    /// for later requests to read (Anthropic's
    /// `cache_creation_input_tokens`, billed above plain input); `None`
    /// when the API does not say (OpenAI's caches without telling).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_creation_prompt_tokens: Option<u64>,
}

impl Usage {
    /// Usage with no word on the cache.
    pub fn new(prompt_tokens: u64, completion_tokens: u64) -> Self {
        Self {
            prompt_tokens,
            completion_tokens,
            cached_prompt_tokens: None,
            cache_creation_prompt_tokens: None,
        }
    }

    /// Sets how many prompt tokens the cache served.
    pub fn with_cached_prompt_tokens(mut self, cached: u64) -> Self {
        self.cached_prompt_tokens = Some(cached);
        self
    }

    /// Sets how many prompt tokens were written to the cache.
    pub fn with_cache_creation_prompt_tokens(mut self, written: u64) -> Self {
        self.cache_creation_prompt_tokens = Some(written);
        self
    }
}

/// A model backend: turns one [`ModelRequest`] into one [`ModelResponse`].
///
/// One method: the loop calls [`complete`](Self::complete) once per step,
/// with the sink the answer's text goes to as it arrives and the step's
/// cancel signal, so a wrapper (a recorder, a retry) forwards one thing.
/// An adapter should stop early with [`ModelError::Cancelled`] when
/// `cancel` fires; the loop also stops waiting for it then, so an adapter
/// that ignores the token only wastes the work.
///
/// ```
/// use dsh_agent_loop::{ModelAdapter, ModelError, ModelRequest, ModelResponse, Piece, TextSink, async_trait};
/// use tokio_util::sync::CancellationToken;
///
/// /// Answers every request with the name of the model it was sent to.
/// #[derive(Debug)]
/// struct Echo;
///
/// #[async_trait]
/// impl ModelAdapter for Echo {
///     async fn complete(
///         &self,
///         request: &ModelRequest,
///         on_text: TextSink<'_>,
///         _cancel: &CancellationToken,
///     ) -> Result<ModelResponse, ModelError> {
///         let answer = format!("this is {}", request.model);
///         on_text(Piece::Text(&answer));
///         Ok(ModelResponse::text(answer))
///     }
/// }
/// ```
#[async_trait]
pub trait ModelAdapter: Send + Sync + 'static {
    /// Sends one request and passes the answer's text to `on_text` piece
    /// by piece as the model writes it; the [`Piece::Text`]s, joined, are
    /// the response's [`text`](ModelResponse::text), and the
    /// [`Piece::Thought`]s what its [`thoughts`](ModelResponse::thoughts)
    /// show. An adapter that cannot stream passes the whole of each once,
    /// when it has it.
    async fn complete(
        &self,
        request: &ModelRequest,
        on_text: TextSink<'_>,
        cancel: &CancellationToken,
    ) -> Result<ModelResponse, ModelError>;
}

/// Where an adapter sends the text of an answer as it arrives: its
/// pieces, and the pieces of what the model thinks before it.
pub type TextSink<'a> = &'a (dyn Fn(Piece<'_>) + Send + Sync);

/// A piece of a streaming answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Piece<'a> {
    /// A piece of the answer's text.
    Text(&'a str),
    /// A piece of the model's reasoning (Anthropic's `thinking_delta`, an
    /// OpenAI-compatible server's `reasoning_content`): shown apart from
    /// the answer, and never part of its text.
    Thought(&'a str),
}

impl<'a> Piece<'a> {
    /// The piece's text, of either kind.
    pub fn text(self) -> &'a str {
        match self {
            Self::Text(text) | Self::Thought(text) => text,
        }
    }

    /// Sends `pieces` to `on_text`, in order, the empty ones left out;
    /// whether any was sent.
    pub(crate) fn send(pieces: impl IntoIterator<Item = Self>, on_text: TextSink<'_>) -> bool {
        let mut sent = false;
        for piece in pieces.into_iter().filter(|piece| !piece.text().is_empty()) {
            sent = true;
            on_text(piece);
        }
        sent
    }
}

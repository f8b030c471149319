//! `OpenAiAdapter`: any OpenAI-compatible chat-completions API.

use std::fmt;
use std::time::Duration;

use async_trait::async_trait;
use reqwest::header::AUTHORIZATION;
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use crate::adapters::http::{ApiKey, Backoff, Exchange, Step, Wire};
use crate::{
    Message, ModelAdapter, ModelApi, ModelError, ModelRequest, ModelResponse, TextSink, ToolCall,
    Usage,
};

/// How to reach an OpenAI-compatible chat-completions API. The model comes
/// from each agent's [`AgentOptions`](crate::AgentOptions).
///
/// ```toml
/// base_url = "https://api.openai.com/v1"
/// api_key_env = "OPENAI_API_KEY"
/// timeout_ms = 120000
/// prompt_cache_key = true
/// max_retries = 4
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OpenAiConfig {
    /// The API's base URL; requests go to `<base_url>/chat/completions`.
    pub base_url: String,
    /// The environment variable that holds the API key, sent as a bearer
    /// token. `None` sends no key (a local server).
    #[serde(default)]
    pub api_key_env: Option<String>,
    /// How long one request may take, in milliseconds: until the last
    /// piece of its answer, when it streams.
    #[serde(default = "OpenAiConfig::default_timeout_ms")]
    pub timeout_ms: u64,
    /// Whether each request carries `prompt_cache_key`, set to the id of
    /// its session ([`ModelRequest::session`]): OpenAI routes the requests
    /// of one key to the same prompt cache, so a session's requests find
    /// what the one before cached (codex and opencode send it too). On by
    /// default; turn it off for a server that rejects fields it does not
    /// know.
    #[serde(default = "OpenAiConfig::default_prompt_cache_key")]
    pub prompt_cache_key: bool,
    /// How many times a request the server is too busy for (HTTP 429, or
    /// any error status with `x-should-retry: true`) is sent again before
    /// its error is the answer.
    #[serde(default = "OpenAiConfig::default_max_retries")]
    pub max_retries: u32,
    /// The wait before the first retry when the server names none in
    /// `retry-after-ms` or `retry-after`, in milliseconds; it doubles for
    /// each retry after.
    #[serde(default = "OpenAiConfig::default_retry_base_ms")]
    pub retry_base_ms: u64,
}

impl OpenAiConfig {
    /// The default request timeout: five minutes, since a model may think
    /// for a long time.
    pub const DEFAULT_TIMEOUT_MS: u64 = 300_000;
    /// Four retries: with the doubling wait, about fifteen seconds of a
    /// rate-limited server before giving up (as Anthropic's).
    pub const DEFAULT_MAX_RETRIES: u32 = 4;
    /// One second before the first retry.
    pub const DEFAULT_RETRY_BASE_MS: u64 = 1_000;

    fn default_max_retries() -> u32 {
        Self::DEFAULT_MAX_RETRIES
    }

    fn default_retry_base_ms() -> u64 {
        Self::DEFAULT_RETRY_BASE_MS
    }

    fn default_timeout_ms() -> u64 {
        Self::DEFAULT_TIMEOUT_MS
    }

    fn default_prompt_cache_key() -> bool {
        true
    }

    /// A configuration for the API at `base_url`, with no API key and the
    /// default timeout.
    pub fn new(base_url: impl Into<String>) -> Self {
        Self {
            base_url: base_url.into(),
            api_key_env: None,
            timeout_ms: Self::DEFAULT_TIMEOUT_MS,
            prompt_cache_key: true,
            max_retries: Self::DEFAULT_MAX_RETRIES,
            retry_base_ms: Self::DEFAULT_RETRY_BASE_MS,
        }
    }

    /// Names the environment variable that holds the API key.
    pub fn with_api_key_env(mut self, var: impl Into<String>) -> Self {
        self.api_key_env = Some(var.into());
        self
    }

    /// Sets the request timeout.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout_ms = u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX);
        self
    }

    /// Sets whether requests carry `prompt_cache_key` (on by default).
    pub fn with_prompt_cache_key(mut self, send: bool) -> Self {
        self.prompt_cache_key = send;
        self
    }

    /// Sets how many times a busy server is asked again, and the wait
    /// before the first retry when it names none.
    pub fn with_retries(mut self, max_retries: u32, base: Duration) -> Self {
        self.max_retries = max_retries;
        self.retry_base_ms = u64::try_from(base.as_millis()).unwrap_or(u64::MAX);
        self
    }
}

/// A model adapter for OpenAI-compatible chat-completions APIs (OpenAI,
/// vLLM, llama.cpp, Ollama, …).
///
/// It sends the system prompt as the first `system` message (none when the
/// prompt is empty), the conversation, and the tools with their JSON-schema
/// parameters; tool calls and tool results map both ways.
///
/// It streams: every request asks for `"stream": true`, and
/// [`complete`](ModelAdapter::complete) passes each
/// piece of text to its sink as the server sends it, while tool calls are
/// assembled from their deltas and returned, in order, with the whole
/// answer. A server that ignores `stream` and sends one `application/json`
/// chat completion works too (its text reaches the sink at once).
///
/// The token usage the server reports — the last chunk of a stream (asked
/// for with `stream_options.include_usage`) or the `usage` of a plain
/// completion — is the response's [`usage`](ModelResponse::usage), with
/// `usage.prompt_tokens_details.cached_tokens`, what the server's prompt
/// cache served, when it says. Each request names its session as its
/// `prompt_cache_key`, unless [`OpenAiConfig::prompt_cache_key`] is off.
///
/// A busy server (HTTP 429, or an error status with `x-should-retry:
/// true`) is asked again, after its `retry-after-ms` or `retry-after`, or
/// a doubling wait, up to [`max_retries`](OpenAiConfig::max_retries)
/// times; `x-should-retry: false` makes any status final. Other HTTP
/// errors, answers that are not chat completions, streams that break
/// off before their `[DONE]`, timeouts (the whole answer, streamed or not,
/// must arrive within `timeout_ms`) and cancellation come back as typed
/// [`ModelError`]s whose messages say what to fix.
///
/// ```
/// use dsh_agent_loop::{OpenAiAdapter, OpenAiConfig};
///
/// let adapter = OpenAiAdapter::new(OpenAiConfig::new("http://127.0.0.1:8080/v1"), None)?;
/// assert_eq!(adapter.endpoint(), "http://127.0.0.1:8080/v1/chat/completions");
///
/// let missing = OpenAiAdapter::from_env(
///     OpenAiConfig::new("https://api.openai.com/v1").with_api_key_env("DSH_DOC_EXAMPLE_UNSET_KEY"),
/// );
/// assert!(missing.unwrap_err().to_string().contains("`DSH_DOC_EXAMPLE_UNSET_KEY`"));
/// # Ok::<(), dsh_agent_loop::ModelError>(())
/// ```
pub struct OpenAiAdapter {
    /// The request, its key (a bearer token marked sensitive) and its
    /// retries.
    exchange: Exchange,
    prompt_cache_key: bool,
}

/// The chat-completions API's part of an exchange.
#[derive(Clone, Copy, Debug)]
struct ChatWire;

impl fmt::Debug for OpenAiAdapter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The key is a secret: say only whether there is one.
        f.debug_struct("OpenAiAdapter")
            .field("endpoint", &self.exchange.endpoint)
            .field("api_key", &self.exchange.has_key().then_some("…"))
            .field("prompt_cache_key", &self.prompt_cache_key)
            .field("backoff", &self.exchange.backoff)
            .finish()
    }
}

impl OpenAiAdapter {
    /// An adapter that reads its API key from the variable named by
    /// `config.api_key_env`; fails when that variable is unset or empty.
    pub fn from_env(config: OpenAiConfig) -> Result<Self, ModelError> {
        let api_key = match &config.api_key_env {
            Some(var) => match std::env::var(var) {
                Ok(key) if !key.trim().is_empty() => Some(key),
                _ => return Err(ModelError::MissingApiKey { var: var.clone() }),
            },
            None => None,
        };
        Self::new(config, api_key)
    }

    /// An adapter with the API key given (`None`: send no key);
    /// `config.api_key_env` is not read.
    pub fn new(config: OpenAiConfig, api_key: Option<String>) -> Result<Self, ModelError> {
        let var = config.api_key_env.as_deref().unwrap_or("the configuration");
        let key = api_key
            .map(|key| ApiKey::new(AUTHORIZATION, "Bearer ", &key, var))
            .transpose()?;
        let exchange = Exchange::connect(
            &config.base_url,
            "/chat/completions",
            config.timeout_ms,
            ModelApi::OpenAiChatCompletions,
            key,
            Backoff {
                max_retries: config.max_retries,
                base: Duration::from_millis(config.retry_base_ms),
            },
        )?;
        Ok(Self {
            exchange,
            prompt_cache_key: config.prompt_cache_key,
        })
    }

    /// The URL requests are posted to.
    pub fn endpoint(&self) -> &str {
        &self.exchange.endpoint.url
    }
}

impl Wire for ChatWire {
    type Streamed = wire::StreamedAnswer;

    const END_OF_STREAM: &'static str = "`data: [DONE]`";

    /// 429 (rate limited) alone: other statuses are final unless the
    /// server says `x-should-retry: true`. A 503 is an answer to read
    /// (`try again later`), not a wait the user did not ask for.
    fn is_busy(&self, status: u16, _body: &[u8]) -> bool {
        status == 429
    }

    fn add<'a>(&self, answer: &'a mut Self::Streamed, data: &str) -> Result<Step<'a>, String> {
        if data.trim() == "[DONE]" {
            return Ok(Step::Stop);
        }
        answer.add(data)
    }

    fn held(&self, answer: &Self::Streamed) -> usize {
        answer.held()
    }

    fn finish(&self, answer: Self::Streamed) -> Result<ModelResponse, String> {
        answer.finish()
    }

    fn response(&self, body: &[u8]) -> Result<ModelResponse, String> {
        wire::response(body)
    }
}

#[async_trait]
impl ModelAdapter for OpenAiAdapter {
    async fn complete(
        &self,
        request: &ModelRequest,
        on_text: TextSink<'_>,
        cancel: &CancellationToken,
    ) -> Result<ModelResponse, ModelError> {
        let cache_key = self
            .prompt_cache_key
            .then_some(request.session.as_ref())
            .flatten();
        let body = wire::request(request, cache_key);
        self.exchange.run(&ChatWire, &body, on_text, cancel).await
    }
}

/// The chat-completions wire format.
mod wire {
    use std::collections::BTreeMap;

    use serde::{Deserialize, Serialize};

    use super::{Message, ModelRequest, ModelResponse, ToolCall, Usage};
    use crate::FinishReason;
    use crate::SessionId;
    use crate::Thought;
    use crate::adapters::http::{Step, parse};

    #[derive(Serialize)]
    struct ChatRequest<'a> {
        model: &'a str,
        messages: Vec<WireMessage<'a>>,
        // Some servers reject an empty `tools` array: omit it instead.
        #[serde(skip_serializing_if = "Vec::is_empty")]
        tools: Vec<WireTool<'a>>,
        // Always: a caller that wants no pieces drops them, so there is one
        // request and one way to read its answer.
        stream: bool,
        stream_options: StreamOptions,
        /// The session's id, so its requests reach the same prompt cache.
        #[serde(skip_serializing_if = "Option::is_none")]
        prompt_cache_key: Option<&'a SessionId>,
        /// How much a reasoning model reasons: the session's pick.
        #[serde(skip_serializing_if = "Option::is_none")]
        reasoning_effort: Option<&'a str>,
        /// The most tokens of the answer, when the request sets one.
        #[serde(skip_serializing_if = "Option::is_none")]
        max_completion_tokens: Option<u32>,
    }

    #[derive(Serialize)]
    struct StreamOptions {
        /// Asks for a last chunk with the token usage.
        include_usage: bool,
    }

    #[derive(Serialize)]
    #[serde(tag = "role", rename_all = "snake_case")]
    enum WireMessage<'a> {
        System {
            content: &'a str,
        },
        User {
            content: &'a str,
        },
        /// A user message that is an image: OpenAI's content parts.
        #[serde(rename = "user")]
        UserParts {
            content: [WirePart; 1],
        },
        Assistant {
            content: Option<&'a str>,
            /// The answer's reasoning, where DeepSeek's thinking mode
            /// needs it back ([`reasoning_sent_back`]).
            #[serde(skip_serializing_if = "Option::is_none")]
            reasoning_content: Option<String>,
            #[serde(skip_serializing_if = "Vec::is_empty")]
            tool_calls: Vec<WireToolCall<'a>>,
        },
        /// A tool's result: its images described (chat completions
        /// take no image in a tool message).
        Tool {
            tool_call_id: &'a str,
            content: std::borrow::Cow<'a, str>,
        },
    }

    /// A part of a user message's content.
    #[derive(Serialize)]
    #[serde(tag = "type", rename_all = "snake_case")]
    enum WirePart {
        ImageUrl { image_url: WireImageUrl },
    }

    #[derive(Serialize)]
    struct WireImageUrl {
        url: String,
    }

    #[derive(Serialize)]
    struct WireToolCall<'a> {
        id: &'a str,
        r#type: &'static str,
        function: WireFunctionCall<'a>,
    }

    #[derive(Serialize)]
    struct WireFunctionCall<'a> {
        name: &'a str,
        arguments: &'a str,
    }

    #[derive(Serialize)]
    struct WireTool<'a> {
        r#type: &'static str,
        function: WireFunction<'a>,
    }

    #[derive(Serialize)]
    struct WireFunction<'a> {
        name: &'a str,
        description: &'a str,
        parameters: &'a serde_json::Value,
    }

    pub(super) fn request<'a>(
        request: &'a ModelRequest,
        prompt_cache_key: Option<&'a SessionId>,
    ) -> impl Serialize + 'a {
        let system = request
            .system
            .as_deref()
            .map(|content| WireMessage::System { content });
        let reasoning = reasoning_sent_back(&request.messages);
        let messages = system
            .into_iter()
            .chain(
                request
                    .messages
                    .iter()
                    .zip(reasoning)
                    .map(|(message, reasoning)| wire_message(message, reasoning)),
            )
            .collect();
        ChatRequest {
            model: &request.model,
            messages,
            tools: request
                .tools
                .iter()
                .map(|tool| WireTool {
                    r#type: "function",
                    function: WireFunction {
                        name: &tool.name,
                        description: &tool.description,
                        parameters: &tool.parameters,
                    },
                })
                .collect(),
            stream: true,
            stream_options: StreamOptions {
                include_usage: true,
            },
            prompt_cache_key,
            reasoning_effort: request.effort.as_deref(),
            max_completion_tokens: request.max_tokens,
        }
    }

    /// The wire form of `message`; `reasoning_content` goes with an
    /// assistant's answer.
    fn wire_message(message: &Message, reasoning_content: Option<String>) -> WireMessage<'_> {
        match message {
            Message::User { text } => WireMessage::User { content: text },
            Message::UserImage { image } => WireMessage::UserParts {
                content: [WirePart::ImageUrl {
                    image_url: WireImageUrl {
                        url: image.data_uri(),
                    },
                }],
            },
            Message::Assistant {
                text, tool_calls, ..
            } => WireMessage::Assistant {
                content: (!text.is_empty() || tool_calls.is_empty()).then_some(text.as_str()),
                reasoning_content,
                tool_calls: tool_calls
                    .iter()
                    .map(|call| WireToolCall {
                        id: &call.id,
                        r#type: "function",
                        function: WireFunctionCall {
                            name: &call.name,
                            arguments: &call.arguments,
                        },
                    })
                    .collect(),
            },
            Message::Tool {
                call_id,
                text,
                images,
                ..
            } => WireMessage::Tool {
                tool_call_id: call_id,
                content: crate::Image::described_after(text, images),
            },
        }
    }

    /// The reasoning each of `messages` sends back, as DeepSeek's thinking
    /// mode requires: between two user messages where the model called a
    /// tool, every answer's `reasoning_content` goes back, in that turn's
    /// later requests and in all later turns (else HTTP 400); an answer of
    /// a turn without tool calls sends none (it would be ignored). The
    /// reasoning is the answer's unsigned thoughts joined: a server that
    /// streams none is sent the request it always was.
    fn reasoning_sent_back(messages: &[Message]) -> Vec<Option<String>> {
        let mut sent = Vec::with_capacity(messages.len());
        for turn in messages.split_inclusive(|message| {
            // The user's message closes the turn before it.
            matches!(message, Message::User { .. } | Message::UserImage { .. })
        }) {
            let called = turn.iter().any(|message| {
                matches!(message, Message::Assistant { tool_calls, .. } if !tool_calls.is_empty())
            });
            sent.extend(turn.iter().map(|message| match message {
                Message::Assistant { thoughts, .. } if called => unsigned_text(thoughts),
                _ => None,
            }));
        }
        sent
    }

    /// The text of `thoughts` that no API sealed, joined; `None` for none.
    fn unsigned_text(thoughts: &[crate::Thought]) -> Option<String> {
        let texts: Vec<&str> = thoughts
            .iter()
            .filter_map(|thought| match thought {
                crate::Thought::Text {
                    text,
                    signature: None,
                } if !text.is_empty() => Some(text.as_str()),
                _ => None,
            })
            .collect();
        (!texts.is_empty()).then(|| texts.join("\n"))
    }

    #[derive(Deserialize)]
    struct ChatResponse {
        choices: Vec<Choice>,
        #[serde(default)]
        usage: Option<WireUsage>,
    }

    /// `usage` of a completion, or of the last chunk of a stream.
    #[derive(Deserialize)]
    struct WireUsage {
        #[serde(default)]
        prompt_tokens: u64,
        #[serde(default)]
        completion_tokens: u64,
        #[serde(default)]
        prompt_tokens_details: Option<PromptTokensDetails>,
    }

    #[derive(Deserialize)]
    struct PromptTokensDetails {
        /// The prompt's tokens the server's prompt cache served.
        #[serde(default)]
        cached_tokens: Option<u64>,
    }

    impl From<WireUsage> for Usage {
        fn from(wire: WireUsage) -> Self {
            let usage = Usage::new(wire.prompt_tokens, wire.completion_tokens);
            match wire
                .prompt_tokens_details
                .and_then(|details| details.cached_tokens)
            {
                Some(cached) => usage.with_cached_prompt_tokens(cached),
                None => usage,
            }
        }
    }

    #[derive(Deserialize)]
    struct Choice {
        message: AssistantMessage,
        #[serde(default)]
        finish_reason: Option<String>,
    }

    #[derive(Deserialize)]
    struct AssistantMessage {
        #[serde(default)]
        content: Option<String>,
        /// What the model said when it refused, in place of `content`.
        #[serde(default)]
        refusal: Option<String>,
        #[serde(default)]
        tool_calls: Option<Vec<ResponseToolCall>>,
        #[serde(flatten)]
        reasoning: Reasoning,
    }

    /// What a server says the model reasoned, in the field its kind
    /// uses: `reasoning_content` (DeepSeek, vLLM, llama.cpp) or
    /// `reasoning` (OpenRouter, newer vLLM). Read, shown and recorded;
    /// sent back as `reasoning_content` only where DeepSeek needs it
    /// ([`reasoning_sent_back`]).
    #[derive(Default, Deserialize)]
    struct Reasoning {
        #[serde(default)]
        reasoning_content: Option<String>,
        #[serde(default)]
        reasoning: Option<String>,
    }

    impl Reasoning {
        /// The text, from the first field that has one: a server that
        /// fills both says the same twice.
        fn text(&self) -> &str {
            [&self.reasoning_content, &self.reasoning]
                .into_iter()
                .flatten()
                .find(|text| !text.is_empty())
                .map_or("", String::as_str)
        }
    }

    #[derive(Deserialize)]
    struct ResponseToolCall {
        #[serde(default)]
        id: Option<String>,
        function: ResponseFunction,
    }

    #[derive(Deserialize)]
    struct ResponseFunction {
        name: String,
        #[serde(default)]
        arguments: Option<String>,
    }

    /// Parses a chat completion; the error says what is wrong and where.
    pub(super) fn response(body: &[u8]) -> Result<ModelResponse, String> {
        let response: ChatResponse = parse(body, "body")?;
        let Some(choice) = response.choices.into_iter().next() else {
            return Err("`choices` is empty".to_owned());
        };
        let message = choice.message;
        let refused = message
            .refusal
            .as_ref()
            .is_some_and(|text| !text.is_empty());
        let mut text = message.content.unwrap_or_default();
        text.push_str(message.refusal.as_deref().unwrap_or_default());
        let reasoning = message.reasoning.text().to_owned();
        let answer = answer(text, message.tool_calls.unwrap_or_default(), response.usage);
        let answer = answer.with_finish(finish_reason(choice.finish_reason.as_deref(), refused));
        Ok(with_reasoning(answer, reasoning))
    }

    /// Why the model stopped: `length` is its output limit,
    /// `content_filter` or a `refusal` a refusal.
    fn finish_reason(reason: Option<&str>, refused: bool) -> FinishReason {
        match reason {
            _ if refused => FinishReason::Refusal,
            Some("length") => FinishReason::MaxTokens,
            Some("content_filter") => FinishReason::Refusal,
            _ => FinishReason::Stop,
        }
    }

    /// The answer of a completion, streamed or not.
    fn answer(
        text: String,
        tool_calls: Vec<ResponseToolCall>,
        usage: Option<WireUsage>,
    ) -> ModelResponse {
        ModelResponse {
            text,
            finish: FinishReason::Stop,
            thoughts: Vec::new(),
            usage: usage.map(Usage::from),
            tool_calls: tool_calls
                .into_iter()
                .enumerate()
                .map(|(at, call)| ToolCall {
                    // Some servers leave out the id; the result still
                    // needs one to answer.
                    id: call.id.unwrap_or_else(|| format!("call_{}", at + 1)),
                    name: call.function.name,
                    arguments: call.function.arguments.unwrap_or_else(|| "{}".to_owned()),
                })
                .collect(),
        }
    }

    /// The answer with `reasoning` as its one thought, when there is any.
    fn with_reasoning(answer: ModelResponse, reasoning: String) -> ModelResponse {
        if reasoning.is_empty() {
            return answer;
        }
        answer.with_thought(Thought::Text {
            text: reasoning,
            signature: None,
        })
    }

    /// One event of a streamed completion. The last one before `[DONE]`
    /// has no choices and the usage.
    #[derive(Deserialize)]
    struct ChatChunk {
        #[serde(default)]
        choices: Vec<ChunkChoice>,
        /// Asked for with `stream_options.include_usage`: `null` in every
        /// chunk but the last, which has it and no choices.
        #[serde(default)]
        usage: Option<WireUsage>,
    }

    #[derive(Deserialize)]
    struct ChunkChoice {
        #[serde(default)]
        delta: Delta,
        #[serde(default)]
        finish_reason: Option<String>,
    }

    #[derive(Default, Deserialize)]
    struct Delta {
        #[serde(default)]
        content: Option<String>,
        /// A piece of what the model says when it refuses.
        #[serde(default)]
        refusal: Option<String>,
        #[serde(default)]
        tool_calls: Option<Vec<ToolCallDelta>>,
        #[serde(flatten)]
        reasoning: Reasoning,
    }

    /// A piece of one tool call: the first of a call carries its id and
    /// name, the later ones more of its arguments.
    #[derive(Deserialize)]
    struct ToolCallDelta {
        index: usize,
        #[serde(default)]
        id: Option<String>,
        #[serde(default)]
        function: Option<FunctionDelta>,
    }

    #[derive(Default, Deserialize)]
    struct FunctionDelta {
        #[serde(default)]
        name: Option<String>,
        #[serde(default)]
        arguments: Option<String>,
    }

    /// A tool call so far, from its deltas.
    #[derive(Default)]
    struct PartialToolCall {
        id: Option<String>,
        name: Option<String>,
        arguments: String,
    }

    impl PartialToolCall {
        /// The bytes of its id, name and arguments so far.
        fn held(&self) -> usize {
            self.id.as_ref().map_or(0, String::len)
                + self.name.as_ref().map_or(0, String::len)
                + self.arguments.len()
        }
    }

    /// A streamed completion so far: the text, and the tool calls by their
    /// index.
    #[derive(Default)]
    pub(super) struct StreamedAnswer {
        text: String,
        /// What the model reasoned so far.
        reasoning: String,
        tool_calls: BTreeMap<usize, PartialToolCall>,
        usage: Option<WireUsage>,
        /// The `finish_reason` of the last chunk that had one.
        finish_reason: Option<String>,
        /// Whether a `refusal` came.
        refused: bool,
        events: usize,
        /// What the text and the tool calls hold, in bytes: each call's
        /// strings and its own size (so a flood of empty calls counts).
        held: usize,
    }

    impl StreamedAnswer {
        /// Adds the data of the next event, a chat-completion chunk;
        /// returns its pieces of reasoning and text, empty when it has
        /// none.
        pub(super) fn add(&mut self, data: &str) -> Result<Step<'_>, String> {
            self.events += 1;
            let chunk: ChatChunk = parse(data.as_bytes(), "its data")
                .map_err(|message| format!("event {} of the stream: {message}", self.events))?;
            if chunk.usage.is_some() {
                self.usage = chunk.usage;
            }
            let Some(choice) = chunk.choices.into_iter().next() else {
                return Ok(Step::Nothing);
            };
            if choice.finish_reason.is_some() {
                self.finish_reason = choice.finish_reason;
            }
            let delta = choice.delta;
            for piece in delta.tool_calls.unwrap_or_default() {
                self.add_tool_call(piece);
            }
            let (thought_start, start) = (self.reasoning.len(), self.text.len());
            let reasoning = delta.reasoning.text();
            self.held += reasoning.len();
            self.reasoning.push_str(reasoning);
            // A refusal is what the model says instead: shown as its text.
            let refusal = delta.refusal.as_deref().unwrap_or_default();
            self.refused |= !refusal.is_empty();
            for text in [delta.content.as_deref().unwrap_or_default(), refusal] {
                self.held += text.len();
                self.text.push_str(text);
            }
            Ok(Step::Shown {
                thought: &self.reasoning[thought_start..],
                text: &self.text[start..],
            })
        }

        /// Adds a piece of a tool call to the call of its index.
        fn add_tool_call(&mut self, piece: ToolCallDelta) {
            let call = self.tool_calls.entry(piece.index).or_insert_with(|| {
                self.held += std::mem::size_of::<PartialToolCall>();
                PartialToolCall::default()
            });
            let before = call.held();
            // Set once: some servers repeat the id and name in every delta.
            if call.id.is_none() {
                call.id = piece.id.filter(|id| !id.is_empty());
            }
            let function = piece.function.unwrap_or_default();
            if call.name.is_none() {
                call.name = function.name.filter(|name| !name.is_empty());
            }
            call.arguments
                .push_str(function.arguments.as_deref().unwrap_or_default());
            self.held += call.held() - before;
        }

        /// What the answer holds so far, in bytes.
        pub(super) fn held(&self) -> usize {
            self.held
        }

        /// The whole answer, its tool calls in index order.
        pub(super) fn finish(self) -> Result<ModelResponse, String> {
            let tool_calls = self
                .tool_calls
                .into_iter()
                .map(|(index, call)| {
                    let name = call.name.ok_or_else(|| {
                        format!("the tool call with `index` {index} of the stream has no `function.name`")
                    })?;
                    Ok(ResponseToolCall {
                        id: call.id,
                        function: ResponseFunction {
                            name,
                            arguments: (!call.arguments.is_empty()).then_some(call.arguments),
                        },
                    })
                })
                .collect::<Result<_, String>>()?;
            let finish = finish_reason(self.finish_reason.as_deref(), self.refused);
            let answer = answer(self.text, tool_calls, self.usage).with_finish(finish);
            Ok(with_reasoning(answer, self.reasoning))
        }
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn a_missing_field_is_named_with_its_path() {
            let error = response(br#"{"choices": [{"message": {"tool_calls": [{"id": "a"}]}}]}"#)
                .err()
                .unwrap_or_default();
            assert!(
                error.contains("choices[0].message.tool_calls[0]"),
                "{error}"
            );
            assert!(error.contains("function"), "{error}");
        }

        /// Adds each event's data; returns the pieces of text (and of
        /// reasoning, marked `thought: `).
        fn stream(answer: &mut StreamedAnswer, events: &[&str]) -> Result<Vec<String>, String> {
            let mut pieces = Vec::new();
            for data in events {
                let Step::Shown { thought, text } = answer.add(data)? else {
                    pieces.push(String::new());
                    continue;
                };
                if !thought.is_empty() {
                    pieces.push(format!("thought: {thought}"));
                }
                pieces.push(text.to_owned());
            }
            Ok(pieces)
        }

        #[test]
        fn tool_call_deltas_are_assembled_by_index() -> Result<(), String> {
            let mut answer = StreamedAnswer::default();
            let pieces = stream(
                &mut answer,
                &[
                    r#"{"choices": [{"delta": {"role": "assistant", "content": "Look"}}]}"#,
                    r#"{"choices": [{"delta": {"tool_calls": [{"index": 1, "function": {"name": "bash", "arguments": "{\"co"}}]}}]}"#,
                    r#"{"choices": [{"delta": {"content": "ing."}}]}"#,
                    r#"{"choices": [{"delta": {"tool_calls": [{"index": 0, "id": "a", "function": {"name": "read", "arguments": ""}}]}}]}"#,
                    // The name again, as some servers send it: kept once.
                    r#"{"choices": [{"delta": {"tool_calls": [{"index": 1, "function": {"name": "bash", "arguments": "mmand\":\"ls\"}"}}]}}]}"#,
                    r#"{"choices": [], "usage": {"prompt_tokens": 9, "completion_tokens": 4, "total_tokens": 13}}"#,
                ],
            )?;
            assert_eq!(pieces, ["Look", "", "ing.", "", "", ""]);
            assert_eq!(
                answer.finish()?,
                ModelResponse::text("Looking.")
                    .with_tool_call(ToolCall::new("a", "read", "{}"))
                    .with_tool_call(ToolCall::new("call_2", "bash", r#"{"command":"ls"}"#))
                    .with_usage(Usage::new(9, 4))
            );
            Ok(())
        }

        #[test]
        fn the_last_chunk_says_how_much_of_the_prompt_was_cached() -> Result<(), String> {
            let mut answer = StreamedAnswer::default();
            stream(
                &mut answer,
                &[
                    r#"{"choices": [{"delta": {"content": "Hi"}}], "usage": null}"#,
                    r#"{"choices": [], "usage": {"prompt_tokens": 2048, "completion_tokens": 1, "prompt_tokens_details": {"cached_tokens": 1920}}}"#,
                ],
            )?;
            assert_eq!(
                answer.finish()?.usage,
                Some(Usage::new(2048, 1).with_cached_prompt_tokens(1920))
            );
            // A completion that is not streamed says it the same way; a
            // server without the details says nothing of the cache.
            let plain = response(
                br#"{"choices": [{"message": {"content": "Hi"}}], "usage": {"prompt_tokens": 7, "completion_tokens": 1, "prompt_tokens_details": {"cached_tokens": 0}}}"#,
            )?;
            assert_eq!(
                plain.usage,
                Some(Usage::new(7, 1).with_cached_prompt_tokens(0))
            );
            let bare = response(
                br#"{"choices": [{"message": {"content": "Hi"}}], "usage": {"prompt_tokens": 7, "completion_tokens": 1}}"#,
            )?;
            assert_eq!(bare.usage, Some(Usage::new(7, 1)));
            Ok(())
        }

        #[test]
        fn a_tool_call_without_a_name_is_named_by_its_index() -> Result<(), String> {
            let mut answer = StreamedAnswer::default();
            stream(
                &mut answer,
                &[
                    r#"{"choices": [{"delta": {"tool_calls": [{"index": 3, "id": "x", "function": {"arguments": "{}"}}]}}]}"#,
                ],
            )?;
            let error = answer.finish().err().unwrap_or_default();
            assert!(error.contains("`index` 3"), "{error}");
            assert!(error.contains("`function.name`"), "{error}");
            Ok(())
        }

        #[test]
        fn a_malformed_chunk_is_named_by_its_event_and_path() {
            let mut answer = StreamedAnswer::default();
            let error = stream(
                &mut answer,
                &[
                    r#"{"choices": [{"delta": {"content": "ok"}}]}"#,
                    r#"{"choices": [{"delta": {"content": 7}}]}"#,
                ],
            )
            .err()
            .unwrap_or_default();
            assert!(error.starts_with("event 2 of the stream"), "{error}");
            assert!(error.contains("`choices[0].delta.content`"), "{error}");
        }
    }
}

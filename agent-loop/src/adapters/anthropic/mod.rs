//! `AnthropicAdapter`: Anthropic's Messages API, with its prompt-cache
//! breakpoints placed where dsh knows the request is stable.
//!
//! The rule that places the cache breakpoints, and why, is documented on
//! [`AnthropicAdapter`].

mod wire;

use std::fmt;
use std::time::Duration;

use async_trait::async_trait;
use reqwest::header::HeaderName;
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use crate::adapters::http::{ApiKey, Backoff, Exchange, Step, Wire};
use crate::{ModelAdapter, ModelApi, ModelError, ModelRequest, ModelResponse, TextSink};

/// How long a cached prefix lives after it was last read or written.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema,
)]
#[non_exhaustive]
pub enum CacheTtl {
    /// `"5m"`: five minutes, the API's default; a write costs 1.25 times
    /// the input price.
    #[default]
    #[serde(rename = "5m")]
    FiveMinutes,
    /// `"1h"`: an hour, for sessions with long pauses between turns; a
    /// write costs twice the input price. Requests then carry
    /// `anthropic-beta: extended-cache-ttl-2025-04-11`, which the API
    /// asks for.
    #[serde(rename = "1h")]
    OneHour,
}

impl CacheTtl {
    /// The lifetime as the API and the deployment file write it.
    pub fn name(self) -> &'static str {
        match self {
            Self::FiveMinutes => "5m",
            Self::OneHour => "1h",
        }
    }
}

impl fmt::Display for CacheTtl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// How to reach Anthropic's Messages API. The model comes from each
/// agent's [`AgentOptions`](crate::AgentOptions).
///
/// ```toml
/// base_url = "https://api.anthropic.com"   # requests go to {base_url}/v1/messages
/// api_key_env = "ANTHROPIC_API_KEY"
/// max_tokens = 8192
/// cache_ttl = "5m"                         # or "1h"
/// thinking_budget = 4096                   # extended thinking; off when left out
/// timeout_ms = 300000
/// max_retries = 4
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AnthropicConfig {
    /// The API's base URL, without `/v1`.
    #[serde(default = "AnthropicConfig::default_base_url")]
    pub base_url: String,
    /// The environment variable that holds the API key, sent as
    /// `x-api-key`.
    #[serde(default = "AnthropicConfig::default_api_key_env")]
    pub api_key_env: String,
    /// The most tokens one answer may take (the API requires a bound).
    #[serde(default = "AnthropicConfig::default_max_tokens")]
    pub max_tokens: u32,
    /// How long the cached prefixes live.
    #[serde(default)]
    pub cache_ttl: CacheTtl,
    /// How long one attempt of a request may take, in milliseconds, until
    /// the last event of its answer (a retry gets the same time again).
    #[serde(default = "AnthropicConfig::default_timeout_ms")]
    pub timeout_ms: u64,
    /// How many times a request the API is too busy for (HTTP 429, 529,
    /// an `overloaded_error`) is sent again before its error is the
    /// answer.
    #[serde(default = "AnthropicConfig::default_max_retries")]
    pub max_retries: u32,
    /// The wait before the first retry when the API names none in
    /// `retry-after`, in milliseconds; it doubles for each retry after.
    #[serde(default = "AnthropicConfig::default_retry_base_ms")]
    pub retry_base_ms: u64,
    /// Extended thinking: the model thinks in at most this many tokens
    /// of [`max_tokens`](Self::max_tokens) before it answers, and its
    /// thoughts stream to the sink and come back with the answer. At
    /// least [`MIN_THINKING_BUDGET`](Self::MIN_THINKING_BUDGET) and
    /// below `max_tokens`, as the API requires; `None` (the default):
    /// no thinking.
    #[serde(default)]
    pub thinking_budget: Option<u32>,
}

impl AnthropicConfig {
    /// Anthropic's API.
    pub const DEFAULT_BASE_URL: &str = "https://api.anthropic.com";
    /// The variable Anthropic's own tools read the key from.
    pub const DEFAULT_API_KEY_ENV: &str = "ANTHROPIC_API_KEY";
    /// Enough for a long answer with tool calls.
    pub const DEFAULT_MAX_TOKENS: u32 = 8192;
    /// Five minutes, since a model may think for a long time.
    pub const DEFAULT_TIMEOUT_MS: u64 = 300_000;
    /// Four retries: with the doubling wait, about fifteen seconds of an
    /// overloaded API before giving up.
    pub const DEFAULT_MAX_RETRIES: u32 = 4;
    /// One second before the first retry.
    pub const DEFAULT_RETRY_BASE_MS: u64 = 1_000;
    /// The smallest thinking budget the API takes.
    pub const MIN_THINKING_BUDGET: u32 = 1_024;

    fn default_base_url() -> String {
        Self::DEFAULT_BASE_URL.to_owned()
    }

    fn default_api_key_env() -> String {
        Self::DEFAULT_API_KEY_ENV.to_owned()
    }

    fn default_max_tokens() -> u32 {
        Self::DEFAULT_MAX_TOKENS
    }

    fn default_timeout_ms() -> u64 {
        Self::DEFAULT_TIMEOUT_MS
    }

    fn default_max_retries() -> u32 {
        Self::DEFAULT_MAX_RETRIES
    }

    fn default_retry_base_ms() -> u64 {
        Self::DEFAULT_RETRY_BASE_MS
    }

    /// Sets the base URL (a proxy, or a local server in tests).
    pub fn with_base_url(mut self, base_url: impl Into<String>) -> Self {
        self.base_url = base_url.into();
        self
    }

    /// Names the environment variable that holds the API key.
    pub fn with_api_key_env(mut self, var: impl Into<String>) -> Self {
        self.api_key_env = var.into();
        self
    }

    /// Sets the most tokens one answer may take.
    pub fn with_max_tokens(mut self, max_tokens: u32) -> Self {
        self.max_tokens = max_tokens;
        self
    }

    /// Sets how long cached prefixes live.
    pub fn with_cache_ttl(mut self, ttl: CacheTtl) -> Self {
        self.cache_ttl = ttl;
        self
    }

    /// Sets the request timeout.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout_ms = u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX);
        self
    }

    /// Turns on extended thinking with `budget` tokens (see
    /// [`thinking_budget`](Self::thinking_budget)).
    pub fn with_thinking_budget(mut self, budget: u32) -> Self {
        self.thinking_budget = Some(budget);
        self
    }

    /// Whether the thinking budget, when set, is one the API takes: at
    /// least [`MIN_THINKING_BUDGET`](Self::MIN_THINKING_BUDGET) and below
    /// `max_tokens`.
    pub fn check(&self) -> Result<(), ModelError> {
        match self.thinking_budget {
            Some(budget) if budget < Self::MIN_THINKING_BUDGET || budget >= self.max_tokens => {
                Err(ModelError::InvalidThinkingBudget {
                    budget,
                    max_tokens: self.max_tokens,
                })
            }
            _ => Ok(()),
        }
    }

    /// Sets how many times a busy API is asked again, and the wait before
    /// the first retry when it names none.
    pub fn with_retries(mut self, max_retries: u32, base: Duration) -> Self {
        self.max_retries = max_retries;
        self.retry_base_ms = u64::try_from(base.as_millis()).unwrap_or(u64::MAX);
        self
    }
}

impl Default for AnthropicConfig {
    fn default() -> Self {
        Self {
            base_url: Self::default_base_url(),
            api_key_env: Self::default_api_key_env(),
            max_tokens: Self::DEFAULT_MAX_TOKENS,
            cache_ttl: CacheTtl::default(),
            timeout_ms: Self::DEFAULT_TIMEOUT_MS,
            max_retries: Self::DEFAULT_MAX_RETRIES,
            retry_base_ms: Self::DEFAULT_RETRY_BASE_MS,
            thinking_budget: None,
        }
    }
}

/// A model adapter for Anthropic's Messages API (`POST
/// {base_url}/v1/messages`, `anthropic-version: 2023-06-01`).
///
/// It sends the system prompt as one text block, the tools with their
/// JSON-schema parameters as `input_schema`, and the conversation as
/// alternating `user` and `assistant` messages of content blocks: tool
/// calls as `tool_use` blocks, their results as `tool_result` blocks
/// (`is_error` for a call that failed), the results of one answer's calls
/// together in one user message. It marks up to four cache breakpoints,
/// by the rule below.
///
/// It streams: text reaches the sink as each `text_delta` arrives; a tool
/// call's input is assembled from its `input_json_delta` pieces, and the
/// calls are returned in order with the whole answer. The usage of
/// `message_start` and `message_delta` is the response's
/// [`usage`](ModelResponse::usage): every input token in
/// [`prompt_tokens`](crate::Usage::prompt_tokens), those read from the
/// cache in [`cached_prompt_tokens`](crate::Usage::cached_prompt_tokens),
/// those written to it in
/// [`cache_creation_prompt_tokens`](crate::Usage::cache_creation_prompt_tokens).
///
/// A busy API (HTTP 429 or 529, an `overloaded_error` before any text
/// arrived) is asked again, after its `retry-after` or a doubling wait,
/// up to [`max_retries`](AnthropicConfig::max_retries) times; an error
/// status with `x-should-retry` is retried, or not, as that header says. Every other
/// failure is one [`ModelError`] naming the status or the event and the
/// API's message. The API key is sent only as a header marked sensitive:
/// it is in no error, no `Debug` output and no recorded request.
///
/// # Cache breakpoints
///
/// The Messages API caches a request's prefix — tools, then the system
/// prompt, then the messages, in that order — up to each block marked
/// with `cache_control`, at most four marks a request. A later request
/// that starts with the same bytes up to a mark reads that prefix from the
/// cache (a tenth of the price of input) instead of processing it again;
/// writing costs a quarter more than input, once. The adapter marks:
///
/// 1. **the last tool**: the tools alone. dsh sends a step's tools in the
///    order its assembly chose, byte for byte the same from step to step,
///    so this prefix outlives any change after it — another agent of the
///    deployment with the same tools, a system prompt edited between runs.
/// 2. **the last system block**: tools and system prompt. The system
///    prompt is byte-stable for a session: what changes while it runs (a
///    task list, any runtime context) is appended to the conversation's
///    tail as a snapshot message, never rendered into the prompt. So
///    every request of a session reads this prefix, and so does the first
///    request of the next session whose prompt is the same.
/// 3. **the last block of the last message**: the whole request, written
///    for the next one to read — the next step of the turn, or the next
///    turn, extends exactly this.
/// 4. **the last block of the previous request's last message**, while the
///    conversation grows: the message just before the newest assistant
///    answer, since that answer is what the previous request returned.
///    The previous request wrote its whole prefix there (mark 3 of the
///    request before), so this request reads it with an exact hit. Without
///    it, the hit would depend on the API's look-back from mark 3, which
///    checks only about twenty blocks: a step that answered many tool
///    calls at once appends more than that, and would pay for the whole
///    conversation again.
///
/// Marks 1 and 2 are left out when there are no tools or no system
/// prompt, mark 4 when no assistant answer is in the conversation yet (a
/// session's first request); never more than four. Peers place them by
/// rule of thumb (the last two user messages, the first two system
/// messages, the last message only); these follow from what dsh keeps
/// stable. A prefix shorter than the model's minimum (1,024 tokens or
/// more, by model) is not cached, and costs nothing extra.
///
/// Every mark has the same lifetime, [`CacheTtl`]: five minutes (the
/// API's default; each read renews it), or an hour for sessions with long
/// pauses, which costs twice the input price to write.
///
/// ```
/// use dsh_agent_loop::{AnthropicAdapter, AnthropicConfig};
///
/// let config = AnthropicConfig::default().with_base_url("http://127.0.0.1:8080");
/// let adapter = AnthropicAdapter::new(config, Some("sk-ant-test".into()))?;
/// assert_eq!(adapter.endpoint(), "http://127.0.0.1:8080/v1/messages");
/// assert!(!format!("{adapter:?}").contains("sk-ant-test"));
///
/// let missing = AnthropicAdapter::from_env(
///     AnthropicConfig::default().with_api_key_env("DSH_DOC_EXAMPLE_UNSET_KEY"),
/// );
/// assert!(missing.unwrap_err().to_string().contains("`DSH_DOC_EXAMPLE_UNSET_KEY`"));
/// # Ok::<(), dsh_agent_loop::ModelError>(())
/// ```
pub struct AnthropicAdapter {
    /// The request, its key (marked sensitive, so reqwest's and this
    /// type's `Debug` hide it) and its retries.
    exchange: Exchange,
    wire: MessagesWire,
}

/// The Messages API's part of an exchange.
#[derive(Clone, Copy, Debug)]
struct MessagesWire {
    max_tokens: u32,
    cache_ttl: CacheTtl,
    /// Extended thinking's budget, when it is on.
    thinking_budget: Option<u32>,
}

impl fmt::Debug for AnthropicAdapter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The key is a secret: say only whether there is one.
        f.debug_struct("AnthropicAdapter")
            .field("endpoint", &self.exchange.endpoint.url)
            .field("api_key", &self.exchange.has_key().then_some("…"))
            .field("max_tokens", &self.wire.max_tokens)
            .field("cache_ttl", &self.wire.cache_ttl)
            .field("thinking_budget", &self.wire.thinking_budget)
            .field("backoff", &self.exchange.backoff)
            .finish()
    }
}

/// The API version the wire format of this adapter is written for.
const ANTHROPIC_VERSION: &str = "2023-06-01";

/// The beta that admits `"ttl": "1h"` in `cache_control`; without it the
/// API rejects the request.
const EXTENDED_CACHE_TTL_BETA: &str = "extended-cache-ttl-2025-04-11";

impl AnthropicAdapter {
    /// An adapter that reads its API key from the variable named by
    /// `config.api_key_env`; fails when that variable is unset or empty.
    pub fn from_env(config: AnthropicConfig) -> Result<Self, ModelError> {
        match std::env::var(&config.api_key_env) {
            Ok(key) if !key.trim().is_empty() => Self::new(config, Some(key)),
            _ => Err(ModelError::MissingApiKey {
                var: config.api_key_env,
            }),
        }
    }

    /// An adapter with the API key given (`None`: send no key, for a
    /// proxy that adds its own, or to check a configuration);
    /// `config.api_key_env` is not read.
    /// Fails when the configuration does not [`check`](AnthropicConfig::check).
    pub fn new(config: AnthropicConfig, api_key: Option<String>) -> Result<Self, ModelError> {
        config.check()?;
        let key = api_key
            .map(|key| {
                ApiKey::new(
                    HeaderName::from_static("x-api-key"),
                    "",
                    &key,
                    &config.api_key_env,
                )
            })
            .transpose()?;
        let exchange = Exchange::connect(
            &config.base_url,
            "/v1/messages",
            config.timeout_ms,
            ModelApi::AnthropicMessages,
            key,
            Backoff {
                max_retries: config.max_retries,
                base: Duration::from_millis(config.retry_base_ms),
            },
        )?;
        Ok(Self {
            exchange,
            wire: MessagesWire {
                max_tokens: config.max_tokens,
                cache_ttl: config.cache_ttl,
                thinking_budget: config.thinking_budget,
            },
        })
    }

    /// The URL requests are posted to.
    pub fn endpoint(&self) -> &str {
        &self.exchange.endpoint.url
    }
}

impl Wire for MessagesWire {
    type Streamed = wire::StreamedMessage;

    const END_OF_STREAM: &'static str = "`message_stop`";

    fn headers(&self, request: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        let request = request.header("anthropic-version", ANTHROPIC_VERSION);
        if self.cache_ttl == CacheTtl::OneHour {
            request.header("anthropic-beta", EXTENDED_CACHE_TTL_BETA)
        } else {
            request
        }
    }

    /// 429 (rate limited), 529 (overloaded), and any status whose body is
    /// an `overloaded_error`.
    fn is_busy(&self, status: u16, body: &[u8]) -> bool {
        matches!(status, 429 | 529) || wire::is_overloaded_error_body(body)
    }

    fn is_busy_event(&self, kind: &str) -> bool {
        kind == "overloaded_error"
    }

    fn add<'a>(&self, answer: &'a mut Self::Streamed, data: &str) -> Result<Step<'a>, String> {
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
impl ModelAdapter for AnthropicAdapter {
    async fn complete(
        &self,
        request: &ModelRequest,
        on_text: TextSink<'_>,
        cancel: &CancellationToken,
    ) -> Result<ModelResponse, ModelError> {
        let body = wire::request(request, &self.wire);
        self.exchange.run(&self.wire, &body, on_text, cancel).await
    }
}

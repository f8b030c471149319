//! `AnthropicAdapter`: Anthropic's Messages API, with its prompt-cache
//! breakpoints placed where dsh knows the request is stable.
//!
//! The rule that places the cache breakpoints, and why, is documented on
//! [`AnthropicAdapter`].

mod wire;

use std::fmt;
use std::pin::pin;
use std::time::Duration;

use async_trait::async_trait;
use futures::StreamExt as _;
use reqwest::header::HeaderValue;
use serde::{Deserialize, Serialize};
use sse_stream::SseByteStream;
use tokio_util::sync::CancellationToken;

use crate::adapters::http::{self, Backoff, Endpoint};
use crate::{ModelAdapter, ModelApi, ModelError, ModelRequest, ModelResponse, TextSink};

/// How long a cached prefix lives after it was last read or written.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
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
    client: reqwest::Client,
    endpoint: Endpoint,
    /// Marked sensitive, so reqwest's and this type's `Debug` hide it.
    api_key: Option<HeaderValue>,
    /// The key as text, to scrub it from what a server echoes back.
    api_key_text: Option<String>,
    max_tokens: u32,
    cache_ttl: CacheTtl,
    backoff: Backoff,
}

impl fmt::Debug for AnthropicAdapter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The key is a secret: say only whether there is one.
        f.debug_struct("AnthropicAdapter")
            .field("endpoint", &self.endpoint.url)
            .field("api_key", &self.api_key.as_ref().map(|_| "…"))
            .field("max_tokens", &self.max_tokens)
            .field("cache_ttl", &self.cache_ttl)
            .field("backoff", &self.backoff)
            .finish()
    }
}

/// The API version the wire format of this adapter is written for.
const ANTHROPIC_VERSION: &str = "2023-06-01";

/// The beta that admits `"ttl": "1h"` in `cache_control`; without it the
/// API rejects the request.
const EXTENDED_CACHE_TTL_BETA: &str = "extended-cache-ttl-2025-04-11";

/// Why one attempt failed: worth another, or final.
enum Failure {
    /// The API was too busy; `retry_after` is what it asked to wait.
    Busy {
        error: ModelError,
        retry_after: Option<Duration>,
    },
    Final(ModelError),
}

impl From<ModelError> for Failure {
    fn from(error: ModelError) -> Self {
        Self::Final(error)
    }
}

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
    pub fn new(config: AnthropicConfig, api_key: Option<String>) -> Result<Self, ModelError> {
        let (client, endpoint) = Endpoint::connect(
            &config.base_url,
            "/v1/messages",
            config.timeout_ms,
            ModelApi::AnthropicMessages,
        )?;
        let header = match &api_key {
            None => None,
            Some(key) => {
                let mut value = HeaderValue::from_str(key.trim()).map_err(|_| {
                    ModelError::Other(
                        format!(
                            "the API key in `{}` is not a valid HTTP header value \
                             (it holds a line break or another control character); \
                             export the key alone",
                            config.api_key_env
                        )
                        .into(),
                    )
                })?;
                value.set_sensitive(true);
                Some(value)
            }
        };
        Ok(Self {
            client,
            endpoint,
            api_key: header,
            api_key_text: api_key.map(|key| key.trim().to_owned()),
            max_tokens: config.max_tokens,
            cache_ttl: config.cache_ttl,
            backoff: Backoff {
                max_retries: config.max_retries,
                base: Duration::from_millis(config.retry_base_ms),
            },
        })
    }

    /// The URL requests are posted to.
    pub fn endpoint(&self) -> &str {
        &self.endpoint.url
    }

    /// Sends the request, again while the API is too busy for it.
    async fn send(
        &self,
        request: &ModelRequest,
        on_text: TextSink<'_>,
    ) -> Result<ModelResponse, ModelError> {
        // Serialized once: every retry sends the same bytes.
        let body = serde_json::to_vec(&wire::request(request, self.max_tokens, self.cache_ttl))
            .map_err(|error| ModelError::Other(error.into()))?;
        let mut retries = 0;
        loop {
            let (error, retry_after) = match self.attempt(&body, on_text).await {
                Ok(answer) => return Ok(answer),
                Err(Failure::Final(error)) => return Err(self.scrubbed(error)),
                Err(Failure::Busy { error, retry_after }) => (error, retry_after),
            };
            retries += 1;
            match self.backoff.wait(retries, retry_after) {
                Some(wait) => tokio::time::sleep(wait).await,
                None => return Err(self.scrubbed(gave_up(error, retries - 1))),
            }
        }
    }

    /// Posts the request once and reads its answer.
    async fn attempt(&self, body: &[u8], on_text: TextSink<'_>) -> Result<ModelResponse, Failure> {
        let mut http = self
            .client
            .post(&self.endpoint.url)
            .header("anthropic-version", ANTHROPIC_VERSION)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(body.to_vec());
        if let Some(key) = &self.api_key {
            http = http.header("x-api-key", key.clone());
        }
        if self.cache_ttl == CacheTtl::OneHour {
            http = http.header("anthropic-beta", EXTENDED_CACHE_TTL_BETA);
        }
        let response = http
            .send()
            .await
            .map_err(|error| self.endpoint.transport(&error))?;
        let status = response.status();
        if status.is_success() && http::is_event_stream(response.headers()) {
            return self.read_stream(response, on_text).await;
        }
        let retry_after = http::retry_after(response.headers());
        let should_retry = should_retry(response.headers());
        let body = response
            .bytes()
            .await
            .map_err(|error| self.endpoint.transport(&error))?;
        if !status.is_success() {
            let error = self.endpoint.status(status.as_u16(), &body);
            // The API's own word wins; else its busy statuses and errors.
            let busy = should_retry.unwrap_or_else(|| {
                matches!(status.as_u16(), 429 | 529) || wire::is_overloaded_error_body(&body)
            });
            return Err(if busy {
                Failure::Busy { error, retry_after }
            } else {
                Failure::Final(error)
            });
        }
        // A proxy that ignores `stream` answers with one message.
        let answer = wire::response(&body).map_err(|message| self.endpoint.invalid(message))?;
        if !answer.text.is_empty() {
            on_text(&answer.text);
        }
        Ok(answer)
    }

    /// Reads the events of a streamed answer up to its `message_stop`,
    /// passing each piece of text to `on_text` as it arrives.
    async fn read_stream(
        &self,
        response: reqwest::Response,
        on_text: TextSink<'_>,
    ) -> Result<ModelResponse, Failure> {
        let mut events = pin!(SseByteStream::new(response.bytes_stream()));
        let mut answer = wire::StreamedMessage::default();
        while let Some(event) = events.next().await {
            let event = event.map_err(|error| self.endpoint.broken_stream(error))?;
            // A block without data (a comment, a `retry:` alone) carries no event.
            let Some(data) = event.data else { continue };
            let step = answer
                .add(&data)
                .map_err(|message| self.endpoint.invalid(message))?;
            match step {
                wire::Step::Text(piece) => on_text(piece),
                wire::Step::Nothing => {}
                wire::Step::Stop => {
                    return answer
                        .finish()
                        .map_err(|message| self.endpoint.invalid(message).into());
                }
                wire::Step::Error { kind, message } => {
                    let error = ModelError::ErrorEvent {
                        url: self.endpoint.url.clone(),
                        kind,
                        message,
                    };
                    // Once text has reached the sink, a retry would show
                    // it twice: only an answer not yet begun is retried.
                    let busy = matches!(&error, ModelError::ErrorEvent { kind, .. } if kind == "overloaded_error")
                        && !answer.has_text();
                    return Err(if busy {
                        Failure::Busy {
                            error,
                            retry_after: None,
                        }
                    } else {
                        Failure::Final(error)
                    });
                }
            }
        }
        Err(self
            .endpoint
            .interrupted("the stream ended without `message_stop`")
            .into())
    }

    /// `error` with the API key, should a server echo it, replaced by `…`.
    fn scrubbed(&self, error: ModelError) -> ModelError {
        let Some(key) = self.api_key_text.as_deref().filter(|key| !key.is_empty()) else {
            return error;
        };
        match error {
            ModelError::Status {
                url,
                status,
                message,
                api,
            } => ModelError::Status {
                url,
                status,
                message: message.replace(key, "…"),
                api,
            },
            ModelError::ErrorEvent { url, kind, message } => ModelError::ErrorEvent {
                url,
                kind,
                message: message.replace(key, "…"),
            },
            ModelError::InvalidResponse { url, message, api } => ModelError::InvalidResponse {
                url,
                message: message.replace(key, "…"),
                api,
            },
            other => other,
        }
    }
}

/// The API's `x-should-retry` header: whether it says to send the request
/// again, when it says.
fn should_retry(headers: &reqwest::header::HeaderMap) -> Option<bool> {
    match headers.get("x-should-retry")?.to_str().ok()?.trim() {
        "true" => Some(true),
        "false" => Some(false),
        _ => None,
    }
}

/// A busy API's last error, saying how many retries were spent on it.
fn gave_up(error: ModelError, retries: u32) -> ModelError {
    if retries == 0 {
        return error;
    }
    let plural = if retries == 1 { "y" } else { "ies" };
    let note = |message: String| format!("{message} (still busy after {retries} retr{plural})");
    match error {
        ModelError::Status {
            url,
            status,
            message,
            api,
        } => ModelError::Status {
            url,
            status,
            message: note(message),
            api,
        },
        ModelError::ErrorEvent { url, kind, message } => ModelError::ErrorEvent {
            url,
            kind,
            message: note(message),
        },
        other => other,
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
        // Dropping `send` stops reading (or waiting to retry) and closes
        // the connection.
        tokio::select! {
            biased;
            () = cancel.cancelled() => Err(ModelError::Cancelled),
            response = self.send(request, on_text) => response,
        }
    }
}

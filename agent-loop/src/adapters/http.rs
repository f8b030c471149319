//! The one HTTP exchange of the model adapters: post a request, classify
//! the status, read the answer as a stream of server-sent events or as a
//! body, send it again while the API is busy (after its `retry-after`, or
//! a doubling wait), and stop when the turn is cancelled.
//!
//! [`OpenAiAdapter`](crate::OpenAiAdapter) and
//! [`AnthropicAdapter`](crate::AnthropicAdapter) differ in their wire
//! formats only, which each states as a [`Wire`]; everything that can go
//! wrong on the way (a bad URL, a timeout, a connection that breaks
//! part-way, an error status, a busy API) is handled and worded here,
//! once, through an [`Exchange`] and its [`Endpoint`]. So are the bounds
//! on what an answer may hold ([`ResponseLimit`], in `limits`). The client
//! and the redirects a request follows (within its origin) are
//! `dsh-http`'s, which MCP servers share.

mod limits;
#[cfg(test)]
mod properties;

use std::pin::pin;
use std::time::Duration;

use bytes::Bytes;
use dsh_http::chain;
use futures::StreamExt as _;
use reqwest::header::{HeaderName, HeaderValue};
use serde::Serialize;
use serde::de::DeserializeOwned;
use sse_stream::SseByteStream;
use tokio_util::sync::CancellationToken;

use crate::{ModelApi, ModelError, ModelResponse, Piece, TextSink};

pub use limits::ResponseLimit;
use limits::{ERROR_BODY_BYTES, StreamError, bounded_events, held_by, read_body};

/// One API's part of an exchange: its headers, which of its failures
/// mean "too busy, ask again", and how its answers read. Posting,
/// statuses, the event stream, retries and cancellation are the
/// [`Exchange`]'s, the same for every API.
pub(crate) trait Wire: Send + Sync {
    /// An answer being assembled from the events of a stream.
    type Streamed: Default + Send;

    /// What a stream that ended before its answer was complete lacks
    /// (`` `data: [DONE]` ``, `` `message_stop` ``).
    const END_OF_STREAM: &'static str;

    /// Adds the API's own headers (its version, a beta) to a request; the
    /// key is the exchange's ([`ApiKey`]).
    fn headers(&self, request: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        request
    }

    /// Whether an error status means the API is too busy for now, when
    /// the API did not say so itself with `x-should-retry`.
    fn is_busy(&self, status: u16, body: &[u8]) -> bool;

    /// Whether an error event of a stream, of kind `kind`, means the API
    /// is too busy for now.
    fn is_busy_event(&self, _kind: &str) -> bool {
        false
    }

    /// Reads the data of the stream's next event into `answer`.
    fn add<'a>(&self, answer: &'a mut Self::Streamed, data: &str) -> Result<Step<'a>, String>;

    /// What `answer` holds so far, in bytes, as [`ResponseLimit::Answer`]
    /// counts it: its text, its tool calls' ids, names and arguments, and
    /// the size of each block or call it keeps apart (so that endless
    /// empty ones count too).
    fn held(&self, answer: &Self::Streamed) -> usize;

    /// The answer of a stream that said it is complete.
    fn finish(&self, answer: Self::Streamed) -> Result<ModelResponse, String>;

    /// The answer of a server that did not stream: one JSON body.
    fn response(&self, body: &[u8]) -> Result<ModelResponse, String>;
}

/// What one event of a stream brought.
pub(crate) enum Step<'a> {
    /// Pieces to show: of what the model thinks, and of the answer's
    /// text; either may be empty.
    Shown { thought: &'a str, text: &'a str },
    /// Nothing to show: a block opened or closed, a tool call's input
    /// grew, usage, a ping.
    Nothing,
    /// The answer is complete.
    Stop,
    /// An error event: the answer ends with this error.
    Error { kind: String, message: String },
}

/// An API key, sent as one header marked sensitive, so that reqwest's
/// `Debug` hides it; its text is kept only to scrub it from what a
/// server echoes back.
#[derive(Clone)]
pub(crate) struct ApiKey {
    header: HeaderName,
    value: HeaderValue,
    text: String,
}

impl ApiKey {
    /// The key `key` (trimmed), sent as `header: {prefix}{key}`; `var`
    /// names where it came from, for the error when it is no header value.
    pub(crate) fn new(
        header: HeaderName,
        prefix: &str,
        key: &str,
        var: &str,
    ) -> Result<Self, ModelError> {
        let text = key.trim().to_owned();
        let mut value = HeaderValue::from_str(&format!("{prefix}{text}")).map_err(|_| {
            ModelError::Other(
                format!(
                    "the API key in `{var}` is not a valid HTTP header value \
                     (it holds a line break or another control character); \
                     export the key alone"
                )
                .into(),
            )
        })?;
        value.set_sensitive(true);
        Ok(Self {
            header,
            value,
            text,
        })
    }
}

/// Where and how an adapter exchanges requests with its API: the client,
/// the [`Endpoint`], the key, and the retry policy.
#[derive(Clone)]
pub(crate) struct Exchange {
    client: reqwest::Client,
    /// Where requests go, and how failures there are worded.
    pub(crate) endpoint: Endpoint,
    key: Option<ApiKey>,
    /// How a busy API is asked again.
    pub(crate) backoff: Backoff,
}

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

impl Exchange {
    /// An exchange with the API at `base_url` + `path` (see
    /// [`Endpoint::connect`]).
    pub(crate) fn connect(
        base_url: &str,
        path: &str,
        timeout_ms: u64,
        api: ModelApi,
        key: Option<ApiKey>,
        backoff: Backoff,
    ) -> Result<Self, ModelError> {
        let (client, endpoint) = Endpoint::connect(base_url, path, timeout_ms, api)?;
        Ok(Self {
            client,
            endpoint,
            key,
            backoff,
        })
    }

    /// Whether requests carry a key.
    pub(crate) fn has_key(&self) -> bool {
        self.key.is_some()
    }

    /// Sends `request` as JSON and reads the answer, again while the API
    /// is too busy for it; the text goes to `on_text` as it arrives. The
    /// request is serialized once: every retry sends the same bytes.
    ///
    /// This is the adapters' one cancellation point: when `cancel` fires,
    /// the exchange is dropped wherever it is — sending, reading, or
    /// waiting to retry — which closes the connection, and the answer is
    /// [`ModelError::Cancelled`].
    pub(crate) async fn run<W: Wire>(
        &self,
        wire: &W,
        request: &impl Serialize,
        on_text: TextSink<'_>,
        cancel: &CancellationToken,
    ) -> Result<ModelResponse, ModelError> {
        // Serialized once; each attempt sends the same bytes, shared.
        let body = serde_json::to_vec(request).map_err(|error| ModelError::Other(error.into()))?;
        let body = Bytes::from(body);
        tokio::select! {
            biased;
            () = cancel.cancelled() => Err(ModelError::Cancelled),
            response = self.send(wire, &body, on_text) => response,
        }
    }

    /// Sends the request until it is answered, fails for good, or the
    /// retries are spent.
    async fn send<W: Wire>(
        &self,
        wire: &W,
        body: &Bytes,
        on_text: TextSink<'_>,
    ) -> Result<ModelResponse, ModelError> {
        let mut retries = 0;
        loop {
            let (error, retry_after) = match self.attempt(wire, body, on_text).await {
                Ok(answer) => return Ok(answer),
                Err(Failure::Final(error)) => return Err(self.scrubbed(error)),
                Err(Failure::Busy { error, retry_after }) => (error, retry_after),
            };
            retries += 1;
            let error = match self.backoff.wait(retries, retry_after) {
                Retry::After(wait) => {
                    tokio::time::sleep(wait).await;
                    continue;
                }
                Retry::Spent => error,
                Retry::TooLong => too_long(error),
            };
            return Err(self.scrubbed(gave_up(error, retries - 1)));
        }
    }

    /// Posts the request once and reads its answer.
    async fn attempt<W: Wire>(
        &self,
        wire: &W,
        body: &Bytes,
        on_text: TextSink<'_>,
    ) -> Result<ModelResponse, Failure> {
        let mut request = self
            .client
            .post(&self.endpoint.url)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(body.clone());
        if let Some(key) = &self.key {
            request = request.header(key.header.clone(), key.value.clone());
        }
        let response = wire
            .headers(request)
            .send()
            .await
            .map_err(|error| self.endpoint.transport(&error))?;
        let status = response.status();
        if status.is_success() && is_event_stream(response.headers()) {
            let events = bounded_events(response.bytes_stream(), ResponseLimit::MAX_EVENT);
            return self.read_events(wire, events, on_text).await;
        }
        let retry_after = retry_after(response.headers());
        let should_retry = should_retry(response.headers());
        // An error's message is at the start of its body; an answer
        // past its bound is refused.
        let limit = if status.is_success() {
            ResponseLimit::MAX_BODY
        } else {
            ERROR_BODY_BYTES
        };
        let (body, cut) = read_body(response, limit)
            .await
            .map_err(|error| self.endpoint.transport(&error))?;
        if cut && status.is_success() {
            return Err(self.endpoint.too_large(ResponseLimit::Body).into());
        }
        if !status.is_success() {
            let error = self.endpoint.status(status.as_u16(), &body);
            // The API's own word wins; else what its wire calls busy.
            let busy = should_retry.unwrap_or_else(|| wire.is_busy(status.as_u16(), &body));
            return Err(if busy {
                Failure::Busy { error, retry_after }
            } else {
                Failure::Final(error)
            });
        }
        // A server (or a proxy) that ignores `stream` answers whole.
        let answer = wire
            .response(&body)
            .map_err(|message| self.endpoint.invalid(message))?;
        if held_by(&answer) > ResponseLimit::MAX_ANSWER {
            return Err(self.endpoint.too_large(ResponseLimit::Answer).into());
        }
        answer.show_whole(on_text);
        Ok(answer)
    }

    /// Reads the events of a streamed answer (its body's `bytes`, each
    /// event already bounded) up to the one that ends it, passing each
    /// piece of text to `on_text` as it arrives; fails once the answer
    /// holds more than [`ResponseLimit::Answer`].
    async fn read_events<W: Wire>(
        &self,
        wire: &W,
        bytes: impl futures::Stream<Item = Result<Bytes, StreamError>>,
        on_text: TextSink<'_>,
    ) -> Result<ModelResponse, Failure> {
        let mut events = pin!(SseByteStream::new(bytes));
        let mut answer = W::Streamed::default();
        let mut shown = false;
        while let Some(event) = events.next().await {
            let event = event.map_err(|error| self.endpoint.broken_stream(error))?;
            // A block without data (a comment, an `id:` or `retry:` alone)
            // carries no event.
            let Some(data) = event.data else { continue };
            let step = wire
                .add(&mut answer, &data)
                .map_err(|message| self.endpoint.invalid(message))?;
            match step {
                Step::Shown { thought, text } => {
                    shown |= Piece::send([Piece::Thought(thought), Piece::Text(text)], on_text);
                }
                Step::Nothing => {}
                Step::Stop => {
                    self.check_held(wire, &answer)?;
                    return wire
                        .finish(answer)
                        .map_err(|message| self.endpoint.invalid(message).into());
                }
                Step::Error { kind, message } => {
                    // Once text has reached the sink, a retry would show
                    // it twice: only an answer not yet begun is retried.
                    let busy = wire.is_busy_event(&kind) && !shown;
                    return Err(self.error_event(kind, message, busy));
                }
            }
            // Counted once the step (which borrows the answer) is done
            // with: the text shown past the bound is one event's at most.
            self.check_held(wire, &answer)?;
        }
        Err(self
            .endpoint
            .interrupted(format!("the stream ended without {}", W::END_OF_STREAM))
            .into())
    }

    /// Fails once `answer` holds more than [`ResponseLimit::Answer`].
    fn check_held<W: Wire>(&self, wire: &W, answer: &W::Streamed) -> Result<(), Failure> {
        if wire.held(answer) > ResponseLimit::MAX_ANSWER {
            return Err(self.endpoint.too_large(ResponseLimit::Answer).into());
        }
        Ok(())
    }

    /// A stream's error event, of kind `kind`, as a failure: worth a retry
    /// when `busy`.
    fn error_event(&self, kind: String, message: String, busy: bool) -> Failure {
        let error = ModelError::ErrorEvent {
            url: self.endpoint.url.clone(),
            kind,
            message,
        };
        if busy {
            Failure::Busy {
                error,
                retry_after: None,
            }
        } else {
            Failure::Final(error)
        }
    }

    /// `error` with the API key, should a server echo it, replaced by `…`.
    fn scrubbed(&self, error: ModelError) -> ModelError {
        let Some(key) = self.key.as_ref().map(|key| key.text.as_str()) else {
            return error;
        };
        if key.is_empty() {
            return error;
        }
        with_message(error, |message| message.replace(key, "…"))
    }
}

/// The API's `x-should-retry` header (Anthropic's and OpenAI's): whether
/// it says to send the request again, when it says.
fn should_retry(headers: &reqwest::header::HeaderMap) -> Option<bool> {
    match headers.get("x-should-retry")?.to_str().ok()?.trim() {
        "true" => Some(true),
        "false" => Some(false),
        _ => None,
    }
}

/// A busy API's error when it asked for a wait longer than dsh accepts.
fn too_long(error: ModelError) -> ModelError {
    with_message(error, |message| {
        format!(
            "{message} (the server asks for a wait longer than the {} s dsh accepts)",
            Backoff::MAX_WAIT.as_secs()
        )
    })
}

/// A busy API's last error, saying how many retries were spent on it.
fn gave_up(error: ModelError, retries: u32) -> ModelError {
    if retries == 0 {
        return error;
    }
    let plural = if retries == 1 { "y" } else { "ies" };
    // A busy API's error is a status or an error event.
    with_message(error, |message| {
        format!("{message} (still busy after {retries} retr{plural})")
    })
}

/// `error` with the message that a server's words may be in (of an error
/// status, an error event, or an answer that is not the API's) rewritten
/// by `rewrite`; any other error as it is.
fn with_message(error: ModelError, rewrite: impl FnOnce(String) -> String) -> ModelError {
    match error {
        ModelError::Status {
            url,
            status,
            message,
            api,
        } => ModelError::Status {
            url,
            status,
            message: rewrite(message),
            api,
        },
        ModelError::ErrorEvent { url, kind, message } => ModelError::ErrorEvent {
            url,
            kind,
            message: rewrite(message),
        },
        ModelError::InvalidResponse { url, message, api } => ModelError::InvalidResponse {
            url,
            message: rewrite(message),
            api,
        },
        other => other,
    }
}

/// Where an adapter posts its requests, and how it words what went wrong
/// there.
#[derive(Clone, Debug)]
pub(crate) struct Endpoint {
    /// The URL requests are posted to.
    pub(crate) url: String,
    timeout_ms: u64,
    api: ModelApi,
}

impl Endpoint {
    /// Checks `base_url` (an http or https URL) and builds a client whose
    /// requests must be answered, whole, within `timeout_ms`, and follow
    /// a redirect only within their origin; requests go to `base_url`
    /// (without a trailing `/`) followed by `path`.
    pub(crate) fn connect(
        base_url: &str,
        path: &str,
        timeout_ms: u64,
        api: ModelApi,
    ) -> Result<(reqwest::Client, Self), ModelError> {
        let invalid = |message: String| ModelError::InvalidBaseUrl {
            url: base_url.to_owned(),
            message,
            api,
        };
        let url = reqwest::Url::parse(base_url).map_err(|error| invalid(error.to_string()))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(invalid(format!(
                "the scheme `{}` is not http or https",
                url.scheme()
            )));
        }
        let options = dsh_http::ClientOptions::with_timeout(Duration::from_millis(timeout_ms));
        let client = dsh_http::client(options).map_err(|error| ModelError::Unreachable {
            url: base_url.to_owned(),
            message: chain(&error),
        })?;
        let endpoint = Self {
            url: format!("{}{path}", base_url.trim_end_matches('/')),
            timeout_ms,
            api,
        };
        Ok((client, endpoint))
    }

    /// The request could not be sent, or its answer not read: a timeout,
    /// a redirect to another origin, or a connection that failed.
    pub(crate) fn transport(&self, error: &reqwest::Error) -> ModelError {
        if let Some(refused) = dsh_http::cross_origin(error) {
            ModelError::CrossOriginRedirect {
                url: self.url.clone(),
                from: refused.from.clone(),
                to: refused.to.clone(),
            }
        } else if error.is_timeout() {
            ModelError::Timeout {
                url: self.url.clone(),
                timeout_ms: self.timeout_ms,
            }
        } else {
            ModelError::Unreachable {
                url: self.url.clone(),
                message: chain(error),
            }
        }
    }

    /// A stream that failed part-way: the connection (or the request's
    /// timeout), an event past its bound, or bytes that are not UTF-8
    /// text.
    pub(crate) fn broken_stream(&self, error: sse_stream::Error) -> ModelError {
        let sse_stream::Error::Body(error) = error else {
            return self.invalid(format!("the event stream does not decode: {error}"));
        };
        match error.downcast_ref::<StreamError>() {
            Some(StreamError::EventTooLarge) => self.too_large(ResponseLimit::Event),
            Some(StreamError::Read(error)) => match error.downcast_ref::<reqwest::Error>() {
                Some(error) if error.is_timeout() => self.transport(error),
                _ => self.interrupted(chain(&**error)),
            },
            None => self.interrupted(chain(&*error)),
        }
    }

    /// An answer that passed `limit`.
    pub(crate) fn too_large(&self, limit: ResponseLimit) -> ModelError {
        ModelError::TooLarge {
            url: self.url.clone(),
            limit,
        }
    }

    /// A stream that ended, or broke off, before its answer was complete.
    pub(crate) fn interrupted(&self, message: impl Into<String>) -> ModelError {
        ModelError::Interrupted {
            url: self.url.clone(),
            message: message.into(),
        }
    }

    /// An answer that is not one of the API's.
    pub(crate) fn invalid(&self, message: String) -> ModelError {
        ModelError::InvalidResponse {
            url: self.url.clone(),
            message,
            api: self.api,
        }
    }

    /// An error status, with the message of its body.
    pub(crate) fn status(&self, status: u16, body: &[u8]) -> ModelError {
        ModelError::Status {
            url: self.url.clone(),
            status,
            message: error_message(body),
            api: self.api,
        }
    }
}

/// Whether a response's `Content-Type` is `text/event-stream`.
fn is_event_stream(headers: &reqwest::header::HeaderMap) -> bool {
    headers
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.split(';').next())
        .is_some_and(|media_type| media_type.trim().eq_ignore_ascii_case("text/event-stream"))
}

/// Parses JSON into a `T`; the error names the path of a wrong field, or
/// quotes the start of `what` when it is not JSON at all.
pub(crate) fn parse<T: DeserializeOwned>(json: &[u8], what: &str) -> Result<T, String> {
    let deserializer = &mut serde_json::Deserializer::from_slice(json);
    serde_path_to_error::deserialize(deserializer).map_err(|error| {
        let path = error.path().to_string();
        let inner = error.into_inner();
        if inner.is_syntax() || inner.is_eof() {
            format!(
                "invalid JSON ({inner}), {what} starts with {:?}",
                excerpt(json)
            )
        } else {
            format!("at `{path}`: {inner}")
        }
    })
}

/// The error message of an error body: `error.message`, `error`, or
/// `message` of a JSON body, else the body's start.
fn error_message(body: &[u8]) -> String {
    if let Ok(value) = serde_json::from_slice::<serde_json::Value>(body) {
        let message = value
            .pointer("/error/message")
            .or_else(|| value.get("error"))
            .or_else(|| value.get("message"))
            .and_then(serde_json::Value::as_str);
        if let Some(message) = message {
            return message.to_owned();
        }
    }
    match excerpt(body) {
        text if text.is_empty() => "(empty body)".to_owned(),
        text => text,
    }
}

/// The start of a body, for messages.
fn excerpt(body: &[u8]) -> String {
    const LIMIT: usize = 200;
    let text = String::from_utf8_lossy(body);
    let text = text.trim();
    match text.char_indices().nth(LIMIT) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text.to_owned(),
    }
}

/// How often, and after how long, a request the API was too busy for is
/// sent again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Backoff {
    /// Retries after the first attempt; 0 never retries.
    pub(crate) max_retries: u32,
    /// The wait before the first retry when the server names none;
    /// doubled for each retry after it.
    pub(crate) base: Duration,
}

impl Backoff {
    /// The longest wait a server's `retry-after` may ask for: a longer one
    /// fails the request at once rather than leave the user waiting
    /// without a word.
    pub(crate) const MAX_WAIT: Duration = Duration::from_secs(60);

    /// Whether, and after how long, to send retry `retry` (from 1): not
    /// when every retry is spent, or when the server asks for more than
    /// [`MAX_WAIT`](Self::MAX_WAIT). The server's `retry-after` is
    /// honoured when it sent one; else the wait doubles from `base`.
    pub(crate) fn wait(&self, retry: u32, retry_after: Option<Duration>) -> Retry {
        if retry == 0 || retry > self.max_retries {
            return Retry::Spent;
        }
        let wait = retry_after.unwrap_or_else(|| {
            self.base
                .saturating_mul(2u32.saturating_pow(retry.saturating_sub(1)))
        });
        if wait <= Self::MAX_WAIT {
            Retry::After(wait)
        } else {
            Retry::TooLong
        }
    }
}

/// What [`Backoff::wait`] decides for a request the API was too busy for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Retry {
    /// Send it again after this wait (at most [`Backoff::MAX_WAIT`]).
    After(Duration),
    /// Every retry is spent: the last error is the answer.
    Spent,
    /// The server asks for a wait longer than [`Backoff::MAX_WAIT`]: the
    /// error is the answer now, rather than a wait the user did not ask
    /// for.
    TooLong,
}

/// How long the server asks to be left alone: `retry-after-ms`
/// (milliseconds) when sent, else `retry-after` in seconds (a whole or a
/// decimal number; the HTTP-date form is not honoured, the backoff's own
/// wait applies then). A value that is not a finite number of at least
/// zero is no value; one too large to be a [`Duration`] is
/// [`Duration::MAX`], which [`Backoff::wait`] refuses to wait.
fn retry_after(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    let number = |name: &str| {
        headers
            .get(name)?
            .to_str()
            .ok()?
            .trim()
            .parse::<f64>()
            .ok()
            .filter(|value| value.is_finite() && *value >= 0.0)
    };
    number("retry-after-ms")
        .map(|ms| seconds(ms / 1000.0))
        .or_else(|| number("retry-after").map(seconds))
}

/// `seconds` (finite, not negative) as a wait; a number too large for a
/// [`Duration`] (`1e20`) is [`Duration::MAX`], longer than any wait dsh
/// accepts, so the request fails rather than the conversion panicking.
fn seconds(seconds: f64) -> Duration {
    Duration::try_from_secs_f64(seconds).unwrap_or(Duration::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_messages_come_from_the_body() {
        assert_eq!(
            error_message(br#"{"error": {"message": "bad key", "type": "auth"}}"#),
            "bad key"
        );
        assert_eq!(error_message(br#"{"error": "overloaded"}"#), "overloaded");
        assert_eq!(error_message(b"upstream down\n"), "upstream down");
        assert_eq!(error_message(b""), "(empty body)");
    }

    #[test]
    fn the_servers_retry_after_is_honoured_else_the_wait_doubles() {
        let backoff = Backoff {
            max_retries: 3,
            base: Duration::from_millis(500),
        };
        assert_eq!(
            backoff.wait(1, Some(Duration::from_secs(2))),
            Retry::After(Duration::from_secs(2))
        );
        assert_eq!(
            backoff.wait(1, None),
            Retry::After(Duration::from_millis(500))
        );
        assert_eq!(backoff.wait(3, None), Retry::After(Duration::from_secs(2)));
        assert_eq!(backoff.wait(4, None), Retry::Spent, "every retry is spent");
        assert_eq!(
            backoff.wait(1, Some(Duration::from_secs(600))),
            Retry::TooLong,
            "too long a wait fails at once"
        );
    }

    #[test]
    fn retry_after_is_read_in_seconds_or_milliseconds() {
        let mut headers = reqwest::header::HeaderMap::new();
        assert_eq!(retry_after(&headers), None);
        headers.insert(
            "retry-after",
            reqwest::header::HeaderValue::from_static("3"),
        );
        assert_eq!(retry_after(&headers), Some(Duration::from_secs(3)));
        headers.insert(
            "retry-after",
            reqwest::header::HeaderValue::from_static("0.25"),
        );
        assert_eq!(retry_after(&headers), Some(Duration::from_millis(250)));
        headers.insert(
            "retry-after-ms",
            reqwest::header::HeaderValue::from_static("40"),
        );
        assert_eq!(retry_after(&headers), Some(Duration::from_millis(40)));
        let mut date = reqwest::header::HeaderMap::new();
        date.insert(
            "retry-after",
            reqwest::header::HeaderValue::from_static("Wed, 21 Oct 2015 07:28:00 GMT"),
        );
        assert_eq!(retry_after(&date), None);
    }

    /// `headers` with `name: value`.
    fn with_header(name: &'static str, value: &str) -> reqwest::header::HeaderMap {
        let mut headers = reqwest::header::HeaderMap::new();
        if let Ok(value) = reqwest::header::HeaderValue::from_str(value) {
            headers.insert(name, value);
        }
        headers
    }

    #[test]
    fn a_retry_after_too_large_for_a_duration_is_too_long_a_wait() {
        let backoff = Backoff {
            max_retries: 4,
            base: Duration::from_millis(1),
        };
        for (name, value) in [
            ("retry-after", "1e20"),
            ("retry-after", "18446744073709551616"),
            ("retry-after-ms", "1e300"),
            ("retry-after-ms", "1.7976931348623157e308"),
        ] {
            let asked = retry_after(&with_header(name, value));
            assert_eq!(asked, Some(Duration::MAX), "{name}: {value}");
            assert_eq!(backoff.wait(1, asked), Retry::TooLong, "{name}: {value}");
        }
        for value in ["-1", "-0.5", "NaN", "inf", "-inf", "infinity", "1e400"] {
            assert_eq!(
                retry_after(&with_header("retry-after", value)),
                None,
                "{value}"
            );
        }
    }
}

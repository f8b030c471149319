//! What the HTTP adapters share: the client and its TLS set-up, the
//! errors of a transport, of an event stream and of an error body, reading
//! JSON with the path of a wrong field, and waiting before a retry.
//!
//! [`OpenAiAdapter`](crate::OpenAiAdapter) and
//! [`AnthropicAdapter`](crate::AnthropicAdapter) differ in their wire
//! formats only; what goes wrong on the way (a bad URL, a timeout, a
//! connection that breaks part-way, an error status) is told the same way
//! by both, through an [`Endpoint`].

use std::time::Duration;

use serde::de::DeserializeOwned;

use crate::{ModelApi, ModelError};

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
    /// requests must be answered, whole, within `timeout_ms`; requests go
    /// to `base_url` (without a trailing `/`) followed by `path`.
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
        install_crypto_provider();
        let client = reqwest::Client::builder()
            .timeout(Duration::from_millis(timeout_ms))
            .build()
            .map_err(|error| ModelError::Unreachable {
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
    /// or a connection that failed.
    pub(crate) fn transport(&self, error: &reqwest::Error) -> ModelError {
        if error.is_timeout() {
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
    /// timeout), or bytes that are not UTF-8 text.
    pub(crate) fn broken_stream(&self, error: sse_stream::Error) -> ModelError {
        match error {
            sse_stream::Error::Body(error) => match error.downcast_ref::<reqwest::Error>() {
                Some(error) if error.is_timeout() => self.transport(error),
                _ => self.interrupted(chain(&*error)),
            },
            other => self.invalid(format!("the event stream does not decode: {other}")),
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
pub(crate) fn is_event_stream(headers: &reqwest::header::HeaderMap) -> bool {
    headers
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.split(';').next())
        .is_some_and(|media_type| media_type.trim().eq_ignore_ascii_case("text/event-stream"))
}

/// Makes `ring` the process's rustls crypto provider, unless the program
/// has installed one of its own (which then stays). reqwest is built
/// without a provider of its own (see the workspace's Cargo.toml for why
/// `ring`) and refuses to build a client when the process has none.
fn install_crypto_provider() {
    if rustls::crypto::CryptoProvider::get_default().is_none() {
        // Err: another thread installed one in between, which is as good.
        let _ = rustls::crypto::ring::default_provider().install_default();
    }
}

/// An error and its causes, on one line: reqwest's own message says only
/// "error sending request", the cause says why.
fn chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut message = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        message.push_str(": ");
        message.push_str(&cause.to_string());
        source = cause.source();
    }
    message
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
pub(crate) fn error_message(body: &[u8]) -> String {
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

    /// The wait before retry `retry` (from 1), or `None` to give up: every
    /// retry is spent, or the server asks for more than
    /// [`MAX_WAIT`](Self::MAX_WAIT). The server's `retry-after` is
    /// honoured when it sent one; else the wait doubles from `base`.
    pub(crate) fn wait(&self, retry: u32, retry_after: Option<Duration>) -> Option<Duration> {
        if retry == 0 || retry > self.max_retries {
            return None;
        }
        let wait = retry_after.unwrap_or_else(|| {
            self.base
                .saturating_mul(2u32.saturating_pow(retry.saturating_sub(1)))
        });
        (wait <= Self::MAX_WAIT).then_some(wait)
    }
}

/// How long the server asks to be left alone: `retry-after-ms`
/// (milliseconds) when sent, else `retry-after` in seconds (a whole or a
/// decimal number; the HTTP-date form is not honoured, the backoff's own
/// wait applies then).
pub(crate) fn retry_after(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
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
        .map(|ms| Duration::from_secs_f64(ms / 1000.0))
        .or_else(|| number("retry-after").map(Duration::from_secs_f64))
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
            Some(Duration::from_secs(2))
        );
        assert_eq!(backoff.wait(1, None), Some(Duration::from_millis(500)));
        assert_eq!(backoff.wait(3, None), Some(Duration::from_secs(2)));
        assert_eq!(backoff.wait(4, None), None, "every retry is spent");
        assert_eq!(
            backoff.wait(1, Some(Duration::from_secs(600))),
            None,
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
}

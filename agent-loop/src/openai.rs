//! `OpenAiAdapter`: any OpenAI-compatible chat-completions API.

use std::error::Error as _;
use std::fmt;
use std::time::Duration;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use crate::{Message, ModelAdapter, ModelError, ModelRequest, ModelResponse, ToolCall};

/// How to reach an OpenAI-compatible chat-completions API. The model comes
/// from each agent's [`AgentOptions`](crate::AgentOptions).
///
/// ```toml
/// base_url = "https://api.openai.com/v1"
/// api_key_env = "OPENAI_API_KEY"
/// timeout_ms = 120000
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
    /// How long one request may take, in milliseconds.
    #[serde(default = "OpenAiConfig::default_timeout_ms")]
    pub timeout_ms: u64,
}

impl OpenAiConfig {
    /// The default request timeout: five minutes, since a model may think
    /// for a long time.
    pub const DEFAULT_TIMEOUT_MS: u64 = 300_000;

    fn default_timeout_ms() -> u64 {
        Self::DEFAULT_TIMEOUT_MS
    }

    /// A configuration for the API at `base_url`, with no API key and the
    /// default timeout.
    pub fn new(base_url: impl Into<String>) -> Self {
        Self {
            base_url: base_url.into(),
            api_key_env: None,
            timeout_ms: Self::DEFAULT_TIMEOUT_MS,
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
}

/// A model adapter for OpenAI-compatible chat-completions APIs (OpenAI,
/// vLLM, llama.cpp, Ollama, …).
///
/// It sends the system prompt as the first `system` message (none when the
/// prompt is empty), the conversation, and the tools with their JSON-schema
/// parameters; tool calls and tool results map both ways. HTTP errors,
/// answers that are not chat completions, timeouts and cancellation come
/// back as typed [`ModelError`]s whose messages say what to fix.
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
    client: reqwest::Client,
    endpoint: String,
    api_key: Option<String>,
    timeout_ms: u64,
}

impl fmt::Debug for OpenAiAdapter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The key is a secret: say only whether there is one.
        f.debug_struct("OpenAiAdapter")
            .field("endpoint", &self.endpoint)
            .field("api_key", &self.api_key.as_ref().map(|_| "…"))
            .field("timeout_ms", &self.timeout_ms)
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
        let invalid = |message: String| ModelError::InvalidBaseUrl {
            url: config.base_url.clone(),
            message,
        };
        let url =
            reqwest::Url::parse(&config.base_url).map_err(|error| invalid(error.to_string()))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(invalid(format!(
                "the scheme `{}` is not http or https",
                url.scheme()
            )));
        }
        install_crypto_provider();
        let client = reqwest::Client::builder()
            .timeout(Duration::from_millis(config.timeout_ms))
            .build()
            .map_err(|error| ModelError::Unreachable {
                url: config.base_url.clone(),
                message: chain(&error),
            })?;
        Ok(Self {
            client,
            endpoint: format!("{}/chat/completions", config.base_url.trim_end_matches('/')),
            api_key,
            timeout_ms: config.timeout_ms,
        })
    }

    /// The URL requests are posted to.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    async fn send(&self, request: &ModelRequest) -> Result<ModelResponse, ModelError> {
        let mut http = self
            .client
            .post(&self.endpoint)
            .json(&wire::request(request));
        if let Some(key) = &self.api_key {
            http = http.bearer_auth(key);
        }
        let response = http.send().await.map_err(|error| self.transport(&error))?;
        let status = response.status();
        let body = response
            .bytes()
            .await
            .map_err(|error| self.transport(&error))?;
        if !status.is_success() {
            return Err(ModelError::Status {
                url: self.endpoint.clone(),
                status: status.as_u16(),
                message: wire::error_message(&body),
            });
        }
        wire::response(&body).map_err(|message| ModelError::InvalidResponse {
            url: self.endpoint.clone(),
            message,
        })
    }

    fn transport(&self, error: &reqwest::Error) -> ModelError {
        if error.is_timeout() {
            ModelError::Timeout {
                url: self.endpoint.clone(),
                timeout_ms: self.timeout_ms,
            }
        } else {
            ModelError::Unreachable {
                url: self.endpoint.clone(),
                message: chain(error),
            }
        }
    }
}

#[async_trait]
impl ModelAdapter for OpenAiAdapter {
    async fn complete(
        &self,
        request: &ModelRequest,
        cancel: &CancellationToken,
    ) -> Result<ModelResponse, ModelError> {
        tokio::select! {
            biased;
            () = cancel.cancelled() => Err(ModelError::Cancelled),
            response = self.send(request) => response,
        }
    }
}

/// An error and its causes, on one line: reqwest's own message says only
/// "error sending request", the cause says why.
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

fn chain(error: &reqwest::Error) -> String {
    let mut message = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        message.push_str(": ");
        message.push_str(&cause.to_string());
        source = cause.source();
    }
    message
}

/// The chat-completions wire format.
mod wire {
    use serde::{Deserialize, Serialize};

    use super::{Message, ModelRequest, ModelResponse, ToolCall};

    #[derive(Serialize)]
    struct ChatRequest<'a> {
        model: &'a str,
        messages: Vec<WireMessage<'a>>,
        // Some servers reject an empty `tools` array: omit it instead.
        #[serde(skip_serializing_if = "Vec::is_empty")]
        tools: Vec<WireTool<'a>>,
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
        Assistant {
            content: Option<&'a str>,
            #[serde(skip_serializing_if = "Vec::is_empty")]
            tool_calls: Vec<WireToolCall<'a>>,
        },
        Tool {
            tool_call_id: &'a str,
            content: &'a str,
        },
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

    pub(super) fn request(request: &ModelRequest) -> impl Serialize + '_ {
        let system = request
            .system
            .as_deref()
            .map(|content| WireMessage::System { content });
        let messages = system
            .into_iter()
            .chain(request.messages.iter().map(|message| {
                match message {
                    Message::User { text } => WireMessage::User { content: text },
                    Message::Assistant { text, tool_calls } => WireMessage::Assistant {
                        content: (!text.is_empty() || tool_calls.is_empty())
                            .then_some(text.as_str()),
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
                    Message::Tool { call_id, text, .. } => WireMessage::Tool {
                        tool_call_id: call_id,
                        content: text,
                    },
                }
            }))
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
        }
    }

    #[derive(Deserialize)]
    struct ChatResponse {
        choices: Vec<Choice>,
    }

    #[derive(Deserialize)]
    struct Choice {
        message: AssistantMessage,
    }

    #[derive(Deserialize)]
    struct AssistantMessage {
        #[serde(default)]
        content: Option<String>,
        #[serde(default)]
        tool_calls: Option<Vec<ResponseToolCall>>,
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
        let deserializer = &mut serde_json::Deserializer::from_slice(body);
        let response: ChatResponse =
            serde_path_to_error::deserialize(deserializer).map_err(|error| {
                let path = error.path().to_string();
                let inner = error.into_inner();
                if inner.is_syntax() || inner.is_eof() {
                    format!(
                        "invalid JSON ({inner}), body starts with {:?}",
                        excerpt(body)
                    )
                } else {
                    format!("at `{path}`: {inner}")
                }
            })?;
        let Some(choice) = response.choices.into_iter().next() else {
            return Err("`choices` is empty".to_owned());
        };
        let message = choice.message;
        Ok(ModelResponse {
            text: message.content.unwrap_or_default(),
            tool_calls: message
                .tool_calls
                .unwrap_or_default()
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
        })
    }

    /// The error message of an error body: `error.message`, `error`, or
    /// `message` of a JSON body, else the body's start.
    pub(super) fn error_message(body: &[u8]) -> String {
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
    }
}

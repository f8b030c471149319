//! The errors of model adapters, of turns, and of choosing a tokenizer.

use std::path::PathBuf;

use dsh_system_prompt::{RenderError, RenderErrors};

use crate::TurnEndReason;

/// A boxed error, for adapters outside this crate.
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// A model adapter failed: its configuration, the transport, the server's
/// answer, or its script.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ModelError {
    /// The environment variable that should hold the API key is unset or
    /// empty.
    #[error(
        "environment variable `{var}` holds no API key; export it (`export {var}=…`), \
         or set `api_key_env` to the variable that holds your key"
    )]
    MissingApiKey {
        /// The variable's name.
        var: String,
    },
    /// The configured base URL is not an http(s) URL.
    #[error(
        "invalid model server URL `{url}`: {message}; set `base_url` to an http(s) URL \
         such as `{}`", api.example_base_url()
    )]
    InvalidBaseUrl {
        /// The configured URL.
        url: String,
        /// What is wrong with it.
        message: String,
        /// The API the adapter speaks, for the example URL.
        api: ModelApi,
    },
    /// The Anthropic adapter's `thinking_budget` is one the API refuses.
    #[error(
        "`thinking_budget` = {budget} is not a budget the API takes: it must be at least \
         1024 and below `max_tokens` = {max_tokens}; lower it, or raise `max_tokens`"
    )]
    InvalidThinkingBudget {
        /// The configured budget.
        budget: u32,
        /// The configured (or default) `max_tokens`.
        max_tokens: u32,
    },
    /// The server could not be reached, or the connection failed.
    #[error(
        "could not reach the model server at {url}: {message}; check `base_url` and that the server is running"
    )]
    Unreachable {
        /// The request's URL.
        url: String,
        /// The transport's error, with its causes.
        message: String,
    },
    /// The server answered with an HTTP error status.
    #[error("the model server at {url} answered HTTP {status}: {message}; {}", status_hint(*.status, *.api))]
    Status {
        /// The request's URL.
        url: String,
        /// The HTTP status code.
        status: u16,
        /// The server's error message, or the start of its body.
        message: String,
        /// The API the adapter speaks, for the hint.
        api: ModelApi,
    },
    /// The server redirected the request to another origin, which dsh
    /// does not follow: the request carries the API key and the
    /// conversation.
    #[error(
        "the model server at {url} redirected the request from {from} to {to}, another \
         origin; dsh does not send the API key and the conversation there: set `base_url` \
         to the final URL directly"
    )]
    CrossOriginRedirect {
        /// The request's URL.
        url: String,
        /// The origin of the request's URL.
        from: String,
        /// Where the redirect points: its origin.
        to: String,
    },
    /// The server did not answer in time.
    #[error(
        "the model server at {url} did not answer within {timeout_ms} ms; \
         check that the server is up, or raise `timeout_ms`"
    )]
    Timeout {
        /// The request's URL.
        url: String,
        /// The configured timeout.
        timeout_ms: u64,
    },
    /// The server's answer is not one of the API the adapter speaks.
    #[error(
        "the model server at {url} sent an answer that is not {}: {message}; \
         check that `base_url` points at {}", api.answer(), api.base_url_hint()
    )]
    InvalidResponse {
        /// The request's URL.
        url: String,
        /// What is wrong with the answer, and where.
        message: String,
        /// The API the adapter speaks.
        api: ModelApi,
    },
    /// The server reported an error in the middle of a streamed answer
    /// (the Messages API's `error` event).
    #[error(
        "the model server at {url} stopped its answer with an error: {kind}: {message}; {}",
        error_event_hint(kind)
    )]
    ErrorEvent {
        /// The request's URL.
        url: String,
        /// The error's type, as the API names it (`overloaded_error`).
        kind: String,
        /// The API's message.
        message: String,
    },
    /// The server's streamed answer broke off before it was complete: the
    /// connection failed part-way, or the stream ended without its closing
    /// `[DONE]`.
    #[error(
        "the model server at {url} broke off its answer: {message}; try again, \
         and check the server's log if it keeps happening"
    )]
    Interrupted {
        /// The request's URL.
        url: String,
        /// How the answer broke off.
        message: String,
    },
    /// The server sent more than one of dsh's bounds on an answer allows
    /// (a server that ignores `max_tokens`, or an endless line).
    #[error(
        "the model server at {url} sent more than {limit}; check that the server \
         bounds its answers (`max_tokens`) and that `base_url` points at the API"
    )]
    TooLarge {
        /// The request's URL.
        url: String,
        /// The bound it passed.
        limit: crate::ResponseLimit,
    },
    /// The request was cancelled.
    #[error("the model request was cancelled")]
    Cancelled,
    /// A scripted adapter was asked for more answers than its script holds.
    #[error(
        "the script has no answer left for request {request} (it held {answers}); \
         add one answer for every step the conversation takes"
    )]
    ScriptExhausted {
        /// The number of the request, from 1.
        request: usize,
        /// How many answers the script held.
        answers: usize,
    },
    /// A script file could not be read or parsed.
    #[error("cannot load script `{}`: {message}", path.display())]
    Script {
        /// The file.
        path: PathBuf,
        /// What went wrong, and where in the file.
        message: String,
    },
    /// An adapter of another crate failed.
    #[error("the model adapter failed: {0}")]
    Other(#[source] BoxError),
}

/// The API a model adapter speaks: what its errors say it expected, and
/// how they say to fix `base_url`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ModelApi {
    /// OpenAI-compatible chat completions
    /// ([`OpenAiAdapter`](crate::OpenAiAdapter)).
    OpenAiChatCompletions,
    /// Anthropic's Messages API ([`AnthropicAdapter`](crate::AnthropicAdapter)).
    AnthropicMessages,
}

impl ModelApi {
    fn example_base_url(self) -> &'static str {
        match self {
            Self::OpenAiChatCompletions => "https://api.openai.com/v1",
            Self::AnthropicMessages => "https://api.anthropic.com",
        }
    }

    fn answer(self) -> &'static str {
        match self {
            Self::OpenAiChatCompletions => "a chat completion",
            Self::AnthropicMessages => "a Messages API answer",
        }
    }

    fn base_url_hint(self) -> &'static str {
        match self {
            Self::OpenAiChatCompletions => "an OpenAI-compatible API (it usually ends in `/v1`)",
            Self::AnthropicMessages => {
                "Anthropic's Messages API (`https://api.anthropic.com`, without `/v1`)"
            }
        }
    }
}

fn status_hint(status: u16, api: ModelApi) -> &'static str {
    match (status, api) {
        (400, _) => {
            "the server rejected the request; check that the model supports tools and that `base_url` is right"
        }
        (401 | 403, _) => "check the API key in the variable named by `api_key_env`",
        (404, ModelApi::AnthropicMessages) => {
            "check `base_url` (requests go to `{base_url}/v1/messages`) and the agent's `model`"
        }
        (404, _) => "check `base_url` (it usually ends in `/v1`) and the agent's `model`",
        (408 | 429, _) => "the server is busy or rate-limiting; wait and try again",
        (529, _) => "the API is overloaded; wait and try again",
        (500..=599, _) => "the server failed; try again later",
        _ => "check the server's documentation for this status",
    }
}

fn error_event_hint(kind: &str) -> &'static str {
    match kind {
        "overloaded_error" | "rate_limit_error" => "the API is busy; wait and try again",
        _ => "try again, and check the API's status page if it keeps happening",
    }
}

/// A deployment names a tokenizer this build does not have.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TokenizerError {
    /// `tokenizer = "…"` names no [`Encoding`](crate::Encoding).
    #[error(
        "unknown tokenizer `{name}`{}; set `tokenizer` to one of {}, \
         or leave it out to choose by the model's name",
        tokenizer_suggestion(name),
        known_tokenizers()
    )]
    Unknown {
        /// The name as written.
        name: String,
    },
}

/// ` (did you mean `o200k_base`?)`, when a known name is close.
fn tokenizer_suggestion(name: &str) -> String {
    let names = crate::Encoding::ALL.map(crate::Encoding::name);
    dsh_system_prompt::suggestion::closest(name, names)
        .map(|closest| format!(" (did you mean `{closest}`?)"))
        .unwrap_or_default()
}

/// `o200k_base`, `cl100k_base`.
fn known_tokenizers() -> String {
    dsh_system_prompt::template::quoted_list(crate::Encoding::ALL.map(crate::Encoding::name))
}

/// Why a turn did not complete.
///
/// Every turn error is contained: the turn ends, its
/// [`TurnEnd`](crate::Event::TurnEnd) records the [`reason`](Self::reason)
/// and this message, and the agent and its session serve the next turn.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TurnError {
    /// The step's prompt (or its runtime contexts) did not render, so no
    /// request was sent.
    #[error(
        "step {step}: the system prompt did not render, so no request was sent: {}{source}{}",
        if .source.len() > 1 { "\n" } else { "" },
        render_hint(.source)
    )]
    Render {
        /// The step, from 1.
        step: u32,
        /// Every problem of the prompt, then of the contexts; each names
        /// its section and its variable.
        #[source]
        source: RenderErrors,
    },
    /// The model adapter failed.
    #[error("step {step}: {source}")]
    Model {
        /// The step, from 1.
        step: u32,
        /// The adapter's error.
        #[source]
        source: ModelError,
    },
    /// A prompt provider, the model adapter, a tool or a loop observer
    /// panicked.
    #[error("step {step}: {what} panicked: {message}")]
    Panicked {
        /// The step, from 1.
        step: u32,
        /// What panicked (`the model adapter`, `tool \`bash\``).
        what: String,
        /// The panic's message.
        message: String,
    },
    /// The model still called tools after the last step allowed.
    #[error(
        "the model was still calling tools after {limit} steps, so the turn was stopped; \
         raise the agent loop's step limit, or ask for a smaller task"
    )]
    StepLimit {
        /// The step limit.
        limit: u32,
    },
    /// The request reached the agent's context budget and compacting it
    /// failed (the summary request did): nothing was replaced.
    #[error(
        "compacting the conversation failed, so nothing was replaced: the request holds \
         {tokens} tokens against {budget}, and the summary request failed: {source}; \
         the session is unchanged and serves the next prompt"
    )]
    Compaction {
        /// The request's tokens, as the loop counted them.
        tokens: u64,
        /// The agent's budget.
        budget: crate::ContextBudget,
        /// Why the summary request failed.
        #[source]
        source: Box<TurnError>,
    },
    /// The turn was cancelled.
    #[error("the turn was cancelled")]
    Cancelled,
}

impl TurnError {
    /// How the turn ended: [`Cancelled`](TurnEndReason::Cancelled) for a
    /// cancellation, [`Error`](TurnEndReason::Error) otherwise.
    pub fn reason(&self) -> TurnEndReason {
        match self {
            Self::Cancelled => TurnEndReason::Cancelled,
            _ => TurnEndReason::Error,
        }
    }
}

/// The fix for the render failure the loop can explain: a session without
/// a working directory.
fn render_hint(errors: &RenderErrors) -> &'static str {
    let homeless = errors.iter().any(|error| {
        matches!(error, RenderError::ValuelessVariable { site, .. }
            if site.reference == crate::CWD_VARIABLE)
    });
    if homeless {
        "; the session has no working directory: give it one, or drop `<<cwd>>` from the text"
    } else {
        ""
    }
}

//! A server's requests of the person dsh works for: sampling
//! (`sampling/createMessage`: a message from the person's model) and
//! elicitation (`elicitation/create`: an answer from the person).
//!
//! dsh-mcp only translates them: an [`Asker`] a host gives a server
//! ([`ServerConfig::with_asker`](crate::ServerConfig::with_asker)) decides
//! who answers and how — a terminal, an editor — and a server without one
//! is told dsh has neither capability.

// rmcp marks sampling deprecated (SEP-2577, for the protocol after
// 2025-11-25); the version dsh speaks has it.
#![allow(
    deprecated,
    reason = "rmcp marks sampling deprecated; 2025-11-25 has it"
)]

use std::sync::Arc;

use async_trait::async_trait;
use parking_lot::Mutex;
use rmcp::ErrorData;
use rmcp::model::{
    CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams, ElicitResult,
    ElicitationAction, ErrorCode, Role, SamplingMessage, SamplingMessageContentBlock,
};
use tokio_util::sync::CancellationToken;

/// Who a server's request comes from: the server, and the session it
/// works for when dsh knows it (the session of the call it is serving,
/// else the session the server was started for).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    /// The server's name.
    pub server: String,
    /// The agent loop's id of the session.
    pub session: Option<String>,
    /// The id of the tool call the server is serving (the model's, as
    /// the session shows the call), when dsh knows it: an editor shows
    /// the question with that call.
    pub call: Option<String>,
}

/// A server's `sampling/createMessage`, as dsh reads it.
#[derive(Debug, Clone, PartialEq)]
pub struct SamplingRequest {
    /// Who asks.
    pub origin: Origin,
    /// The system prompt the server asks for.
    pub system_prompt: Option<String>,
    /// The conversation the model is to continue.
    pub messages: Vec<SampledMessage>,
    /// The most tokens of the answer, as the server asks.
    pub max_tokens: u32,
}

/// One message of a sampling request.
#[derive(Debug, Clone, PartialEq)]
pub struct SampledMessage {
    /// Whether the person or the model says it.
    pub role: SampledRole,
    /// What it says, block by block.
    pub content: Vec<SampledContent>,
}

/// Who says a message of a sampling request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SampledRole {
    /// The person.
    User,
    /// The model.
    Assistant,
}

/// A block of a message of a sampling request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SampledContent {
    /// Text.
    Text(String),
    /// An image, in base64.
    Image {
        /// Its type (`image/png`).
        mime_type: String,
        /// Its bytes, in base64.
        data: String,
    },
    /// Audio, a tool use or a tool result, which dsh sends the model as a
    /// line saying what it was.
    Described(String),
}

/// The model's answer to a sampling request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sampled {
    /// The model that answered.
    pub model: String,
    /// Its text.
    pub text: String,
    /// Why it stopped.
    pub stop: SampledStop,
}

/// Why the model stopped answering a sampling request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SampledStop {
    /// It was done (`endTurn`).
    EndTurn,
    /// It reached the request's limit (`maxTokens`).
    MaxTokens,
    /// It refused (`refusal`).
    Refusal,
}

/// A server's `elicitation/create`, as dsh reads it.
#[derive(Debug, Clone, PartialEq)]
pub struct Elicitation {
    /// Who asks.
    pub origin: Origin,
    /// What the server says to the person.
    pub message: String,
    /// A form to fill in, or a URL to visit.
    pub kind: ElicitKind,
}

/// What an elicitation asks for.
#[derive(Debug, Clone, PartialEq)]
pub enum ElicitKind {
    /// A form: `requestedSchema`, a flat JSON object schema of strings,
    /// numbers, integers, booleans and enums.
    Form {
        /// The schema, as the server sent it, but for its properties'
        /// order: sorted by name (rmcp keeps them in a `BTreeMap`).
        schema: serde_json::Value,
    },
    /// A URL the person visits (to sign in, to pay), outside dsh.
    Url {
        /// The URL.
        url: String,
        /// The server's id of the elicitation.
        id: String,
    },
}

/// The person's answer to an elicitation.
#[derive(Debug, Clone, PartialEq)]
pub enum ElicitAnswer {
    /// Accepted, with the form's content (none for a URL).
    Accept(Option<serde_json::Map<String, serde_json::Value>>),
    /// Declined.
    Decline,
    /// Dismissed without a choice.
    Cancel,
}

/// Which elicitations an asker answers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Elicits {
    /// Forms.
    pub form: bool,
    /// URLs.
    pub url: bool,
}

impl Elicits {
    /// Both kinds.
    pub const ALL: Self = Self {
        form: true,
        url: true,
    };
}

/// Why a sampling request got no answer: the JSON-RPC error the server
/// gets, with this message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AskError {
    /// No one allowed it: the person declined, or no one could be asked
    /// (the specification's code for a rejected sampling request, `-1`).
    #[error("{0}")]
    Refused(String),
    /// It was allowed, and the model failed (`-32603`).
    #[error("{0}")]
    Failed(String),
}

/// Answers a server's sampling and elicitation requests for the person:
/// a host's front end implements it (the terminal of `dsh run`, the
/// editor of `dsh acp`). Its capabilities are advertised to the server
/// at `initialize`, so a server sees only what someone answers.
#[async_trait]
pub trait Asker: Send + Sync + 'static {
    /// Whether it answers sampling requests.
    fn samples(&self) -> bool;

    /// Which elicitations it answers.
    fn elicits(&self) -> Elicits;

    /// The model's answer to `request`, once someone allowed it.
    async fn sample(&self, request: SamplingRequest) -> Result<Sampled, AskError>;

    /// The person's answer to `request`.
    async fn elicit(&self, request: Elicitation) -> ElicitAnswer;

    /// A sampling request of `origin` was refused unasked, `why`: a
    /// server past its sampling limits ([`SamplingLimits`](crate::SamplingLimits)),
    /// said once for each call or session that reached one, however many
    /// requests follow. Nothing, by default.
    fn refused(&self, origin: &Origin, why: &str) {
        let _ = (origin, why);
    }
}

/// An [`Asker`] shared by the servers it answers for; two are equal when
/// they are the same asker.
#[derive(Clone)]
pub struct SharedAsker(pub Arc<dyn Asker>);

impl std::fmt::Debug for SharedAsker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedAsker")
            .field("samples", &self.0.samples())
            .field("elicits", &self.0.elicits())
            .finish()
    }
}

impl PartialEq for SharedAsker {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for SharedAsker {}

/// The sessions a server works for: those whose calls to it are running
/// (the latest last, with the token that cancels each), and the one it
/// was started for, if any.
#[derive(Debug, Clone, Default)]
pub(crate) struct Callers {
    inner: Arc<Mutex<CallersInner>>,
}

#[derive(Debug, Default)]
struct CallersInner {
    /// Each running call: its session, its call id, what cancels it.
    calling: Vec<(String, String, CancellationToken)>,
    home: Option<String>,
}

impl Callers {
    /// Notes the call `call` of `session`, cancelled by `cancel`, until
    /// the guard drops.
    pub(crate) fn calling(
        &self,
        session: &str,
        call: &str,
        cancel: &CancellationToken,
    ) -> CallingGuard {
        let entry = (session.to_owned(), call.to_owned(), cancel.clone());
        self.inner.lock().calling.push(entry);
        CallingGuard {
            callers: self.clone(),
            session: session.to_owned(),
        }
    }

    /// Makes `session` the one the server was started for.
    pub(crate) fn set_home(&self, session: &str) {
        self.inner.lock().home = Some(session.to_owned());
    }

    /// The session a request of the server is for now: the one with
    /// calls running, else its own; `None` when calls of more than one
    /// session are running (a shared server serving two at once: which
    /// one asks cannot be told, [`Callers::ambiguous`]).
    pub(crate) fn current(&self) -> Option<String> {
        let inner = self.inner.lock();
        if inner.ambiguous() {
            return None;
        }
        let latest = inner.calling.last().map(|(session, ..)| session.clone());
        latest.or_else(|| inner.home.clone())
    }

    /// The id of the call a request of the server serves now: the latest
    /// running, when the request is one session's ([`Callers::current`]).
    pub(crate) fn call(&self) -> Option<String> {
        let inner = self.inner.lock();
        if inner.ambiguous() {
            return None;
        }
        inner.calling.last().map(|(_, call, _)| call.clone())
    }

    /// What cancels the call a request of the server serves now (the
    /// latest running, as [`Callers::current`]): a token never cancelled
    /// when no call runs.
    pub(crate) fn cancel(&self) -> CancellationToken {
        let inner = self.inner.lock();
        (inner.calling.last()).map_or_else(CancellationToken::new, |(.., cancel)| cancel.clone())
    }

    /// Whether calls of more than one session are running: a request of
    /// the server now is no one session's.
    pub(crate) fn ambiguous(&self) -> bool {
        self.inner.lock().ambiguous()
    }
}

impl CallersInner {
    fn ambiguous(&self) -> bool {
        let mut sessions = self.calling.iter().map(|(session, ..)| session);
        let first = sessions.next();
        sessions.any(|session| Some(session) != first)
    }
}

/// A running call of a session; dropping it ends it.
pub(crate) struct CallingGuard {
    callers: Callers,
    session: String,
}

impl Drop for CallingGuard {
    fn drop(&mut self) {
        let mut inner = self.callers.inner.lock();
        if let Some(at) = (inner.calling.iter()).rposition(|(one, ..)| *one == self.session) {
            inner.calling.remove(at);
        }
    }
}

/// `params` as dsh reads them, from `origin`.
pub(crate) fn sampling_request(
    params: CreateMessageRequestParams,
    origin: Origin,
) -> SamplingRequest {
    let messages = (params.messages.into_iter())
        .map(|message| SampledMessage {
            role: match message.role {
                Role::Assistant => SampledRole::Assistant,
                _ => SampledRole::User,
            },
            content: message.content.into_vec().into_iter().map(block).collect(),
        })
        .collect();
    SamplingRequest {
        origin,
        system_prompt: params.system_prompt,
        messages,
        max_tokens: params.max_tokens,
    }
}

fn block(block: SamplingMessageContentBlock) -> SampledContent {
    match block {
        SamplingMessageContentBlock::Text(text) => SampledContent::Text(text.text),
        SamplingMessageContentBlock::Image(image) => SampledContent::Image {
            mime_type: image.mime_type,
            data: image.data,
        },
        SamplingMessageContentBlock::Audio(audio) => SampledContent::Described(format!(
            "[audio: {}, {} bytes of base64, not sent]",
            audio.mime_type,
            audio.data.len()
        )),
        SamplingMessageContentBlock::ToolUse(tool) => {
            SampledContent::Described(format!("[a call of tool `{}`]", tool.name))
        }
        SamplingMessageContentBlock::ToolResult(result) => SampledContent::Described(format!(
            "[the result of tool call `{}`]",
            result.tool_use_id
        )),
        _ => SampledContent::Described("[content of a kind dsh does not know]".to_owned()),
    }
}

/// The protocol's result of `sampled`.
pub(crate) fn message_result(sampled: Sampled) -> CreateMessageResult {
    let stop = match sampled.stop {
        SampledStop::EndTurn => CreateMessageResult::STOP_REASON_END_TURN,
        SampledStop::MaxTokens => CreateMessageResult::STOP_REASON_END_MAX_TOKEN,
        SampledStop::Refusal => "refusal",
    };
    let message = SamplingMessage::new(
        Role::Assistant,
        SamplingMessageContentBlock::text(sampled.text),
    );
    CreateMessageResult::new(message, sampled.model).with_stop_reason(stop)
}

/// The JSON-RPC error of `error`.
pub(crate) fn sampling_error(error: AskError) -> ErrorData {
    match error {
        AskError::Refused(message) => ErrorData::new(ErrorCode(-1), message, None),
        AskError::Failed(message) => ErrorData::internal_error(message, None),
    }
}

/// `params` as dsh reads them, from `origin`; `None` for a kind of
/// elicitation dsh does not know.
pub(crate) fn elicitation(params: ElicitRequestParams, origin: Origin) -> Option<Elicitation> {
    let (message, kind) = match params {
        ElicitRequestParams::FormElicitationParams {
            message,
            requested_schema,
            ..
        } => (
            message,
            ElicitKind::Form {
                schema: serde_json::to_value(requested_schema).ok()?,
            },
        ),
        ElicitRequestParams::UrlElicitationParams {
            message,
            url,
            elicitation_id,
            ..
        } => (
            message,
            ElicitKind::Url {
                url,
                id: elicitation_id,
            },
        ),
        _ => return None,
    };
    Some(Elicitation {
        origin,
        message,
        kind,
    })
}

/// The protocol's result of `answer`.
pub(crate) fn elicit_result(answer: ElicitAnswer) -> ElicitResult {
    match answer {
        ElicitAnswer::Accept(content) => {
            let result = ElicitResult::new(ElicitationAction::Accept);
            match content {
                Some(content) => result.with_content(serde_json::Value::Object(content)),
                None => result,
            }
        }
        ElicitAnswer::Decline => ElicitResult::new(ElicitationAction::Decline),
        ElicitAnswer::Cancel => ElicitResult::new(ElicitationAction::Cancel),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_is_the_one_calling_else_the_servers_own_and_none_of_two() {
        let callers = Callers::default();
        assert_eq!(callers.current(), None);
        callers.set_home("home");
        let (a, b) = (CancellationToken::new(), CancellationToken::new());
        let first = callers.calling("a", "c1", &a);
        let again = callers.calling("a", "c1", &a);
        assert_eq!(callers.current().as_deref(), Some("a"));
        assert!(!callers.ambiguous());
        assert!(!callers.cancel().is_cancelled());
        // Calls of two sessions at once: a request is neither's.
        let second = callers.calling("b", "c2", &b);
        assert!(callers.ambiguous());
        assert_eq!(callers.current(), None);
        assert_eq!(callers.call(), None);
        drop((first, again));
        assert_eq!(callers.current().as_deref(), Some("b"));
        // The call a request serves: the latest running one's id.
        assert_eq!(callers.call().as_deref(), Some("c2"));
        b.cancel();
        assert!(callers.cancel().is_cancelled());
        drop(second);
        assert_eq!(callers.current().as_deref(), Some("home"));
    }

    #[test]
    fn a_request_keeps_text_and_images_and_describes_the_rest() {
        let params: CreateMessageRequestParams = serde_json::from_value(serde_json::json!({
            "systemPrompt": "Be brief.",
            "maxTokens": 50,
            "messages": [
                {"role": "user", "content": {"type": "text", "text": "Hi"}},
                {"role": "assistant", "content": [
                    {"type": "image", "data": "AA==", "mimeType": "image/png"},
                    {"type": "audio", "data": "AAAA", "mimeType": "audio/wav"}
                ]}
            ]
        }))
        .expect("a sampling request");
        let origin = Origin {
            server: "docs".into(),
            session: None,
            call: None,
        };
        let request = sampling_request(params, origin);
        assert_eq!(request.system_prompt.as_deref(), Some("Be brief."));
        assert_eq!(request.max_tokens, 50);
        assert_eq!(
            request.messages[0].content,
            vec![SampledContent::Text("Hi".into())]
        );
        assert_eq!(request.messages[1].role, SampledRole::Assistant);
        assert_eq!(
            request.messages[1].content[1],
            SampledContent::Described("[audio: audio/wav, 4 bytes of base64, not sent]".into())
        );
    }

    #[test]
    fn a_refusal_is_the_specifications_code_and_a_failure_an_internal_error() {
        let refused = sampling_error(AskError::Refused("no one can answer".into()));
        assert_eq!(refused.code, ErrorCode(-1));
        assert_eq!(refused.message, "no one can answer");
        let failed = sampling_error(AskError::Failed("the model failed".into()));
        assert_eq!(failed.code, ErrorCode::INTERNAL_ERROR);
    }
}

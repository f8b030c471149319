//! An MCP server's questions under `dsh acp`, put to the editor:
//!
//! - **Sampling** asks `session/request_permission` in the session whose
//!   call the server serves (the server's name in the title; its system
//!   prompt, messages and max tokens as the call's content, escaped and
//!   cut); allowed, the host's model answers with the session's model.
//!   The call then ends: completed with the model's answer, failed when
//!   rejected, when the model failed, or when the request was withdrawn.
//!   Refused when no editor is connected or the request is no session's;
//!   a session in a mode that never asks (`full-access`) answers unasked.
//! - **Elicitation** is forwarded as ACP's `elicitation/create` (a form,
//!   or a URL), scoped to the session, when the editor advertised that
//!   kind; declined otherwise (no editor, no session, a kind or a form the
//!   editor cannot take), and said on stderr with the reason
//!   ([`dsh_tool_mcp::log_declined`]). The deployment's servers start
//!   before an editor connects: they are told dsh answers both kinds, and
//!   a kind the editor turns out not to support is declined.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};

use agent_client_protocol::Client;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    self, ContentBlock, CreateElicitationRequest, ElicitationAction as AcpAction,
    ElicitationCapabilities, ElicitationFormMode, ElicitationMode, ElicitationSessionScope,
    ElicitationUrlMode, PermissionOption, PermissionOptionKind, RequestPermissionOutcome,
    RequestPermissionRequest, ToolCallContent, ToolCallStatus, ToolCallUpdate,
    ToolCallUpdateFields,
};
use dsh_agent_loop::{SessionId, async_trait};
use dsh_deployment::policy::modes::Asking;
use dsh_deployment::policy::sampling::{
    MAX_SAMPLED_TOKENS, Sampler, cannot_ask, declined, describe_sampling, sampling_asks,
    sampling_title,
};
use dsh_tool_mcp::{
    AskError, Asker, ElicitAnswer, ElicitKind, Elicitation, Elicits, Sampled, SamplingRequest,
};
use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;

use super::Inner;

const ALLOW: &str = "allow";
const REJECT: &str = "reject";

/// Puts the MCP servers' questions to the editor.
pub(crate) struct AskTheEditor {
    sampler: Sampler,
    /// How sessions start (the mode of a session not found).
    start_asking: Asking,
    /// The connection, and what the editor said it supports, once it
    /// sent `initialize`.
    editor: Mutex<Option<(ConnectionTo<Client>, Option<ElicitationCapabilities>)>>,
    /// The server's sessions, for their modes and models.
    sessions: Mutex<Weak<Inner>>,
    /// Numbers the sampling requests' permission calls.
    asked: AtomicU64,
}

impl std::fmt::Debug for AskTheEditor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AskTheEditor").finish_non_exhaustive()
    }
}

impl AskTheEditor {
    pub(crate) fn new(sampler: Sampler, start_asking: Asking) -> Self {
        Self {
            sampler,
            start_asking,
            editor: Mutex::new(None),
            sessions: Mutex::new(Weak::new()),
            asked: AtomicU64::new(0),
        }
    }

    /// Finds the sessions' modes and models in `inner`.
    pub(super) fn serve(&self, inner: &Arc<Inner>) {
        *self.sessions.lock() = Arc::downgrade(inner);
    }

    /// The editor connected with `capabilities`.
    pub(super) fn connected(
        &self,
        cx: ConnectionTo<Client>,
        capabilities: &schema::ClientCapabilities,
    ) {
        *self.editor.lock() = Some((cx, capabilities.elicitation.clone()));
    }

    /// How session `session` asks, and the model it runs.
    fn steering(&self, session: &str) -> (Asking, Option<String>) {
        let Some(inner) = self.sessions.lock().upgrade() else {
            return (self.start_asking, None);
        };
        let sessions = inner.sessions.lock();
        match sessions.get(&SessionId::new(session.to_owned())) {
            Some(slot) => (slot.steering.mode.asking, Some(slot.steering.model.clone())),
            None => (self.start_asking, None),
        }
    }

    /// Asks the editor whether `request` may use the model, in the tool
    /// call `shown`.
    async fn allowed(&self, shown: &ShownCall, request: &SamplingRequest) -> Result<(), AskError> {
        let server = &request.origin.server;
        let described = describe_sampling(request);
        let fields = ToolCallUpdateFields::new()
            .title(sampling_title(request))
            .kind(schema::ToolKind::Other)
            .status(ToolCallStatus::Pending)
            .content(vec![ToolCallContent::from(ContentBlock::from(described))])
            .raw_input(serde_json::json!({
                "server": server,
                "systemPrompt": request.system_prompt,
                "maxTokens": request.max_tokens.min(MAX_SAMPLED_TOKENS),
            }));
        let permission = RequestPermissionRequest::new(
            shown.session.clone(),
            ToolCallUpdate::new(shown.id.clone(), fields),
            vec![
                PermissionOption::new(ALLOW, "Allow", PermissionOptionKind::AllowOnce),
                PermissionOption::new(REJECT, "Reject", PermissionOptionKind::RejectOnce),
            ],
        );
        match shown.cx.send_request(permission).block_task().await {
            Ok(response) => match response.outcome {
                RequestPermissionOutcome::Selected(selected) if &*selected.option_id.0 == ALLOW => {
                    Ok(())
                }
                _ => Err(declined(server)),
            },
            Err(error) => Err(cannot_ask(server, &error.message)),
        }
    }
}

/// The tool call a sampling request shows in the editor while it is
/// asked and answered: dropped, it ends with status `ended` (failed
/// unless the model answered: rejected, the model failed, or the request
/// was withdrawn).
struct ShownCall {
    cx: ConnectionTo<Client>,
    session: schema::SessionId,
    id: schema::ToolCallId,
    ended: ToolCallStatus,
}

impl Drop for ShownCall {
    fn drop(&mut self) {
        let update = ToolCallUpdate::new(
            self.id.clone(),
            ToolCallUpdateFields::new().status(self.ended),
        );
        let notification = schema::SessionNotification::new(
            self.session.clone(),
            schema::SessionUpdate::ToolCallUpdate(update),
        );
        let _ = self.cx.send_notification(notification);
    }
}

#[async_trait]
impl Asker for AskTheEditor {
    /// Always: every editor answers `session/request_permission`.
    fn samples(&self) -> bool {
        true
    }

    /// What the editor supports, once it said; both before.
    fn elicits(&self) -> Elicits {
        match &*self.editor.lock() {
            None => Elicits {
                form: true,
                url: true,
            },
            Some((_, capabilities)) => Elicits {
                form: capabilities.as_ref().is_some_and(|c| c.supports_form()),
                url: capabilities.as_ref().is_some_and(|c| c.supports_url()),
            },
        }
    }

    async fn sample(&self, request: SamplingRequest) -> Result<Sampled, AskError> {
        let server = request.origin.server.clone();
        let Some(cx) = self.editor.lock().as_ref().map(|(cx, _)| cx.clone()) else {
            return Err(cannot_ask(&server, "no editor is connected"));
        };
        let Some(session) = request.origin.session.clone() else {
            return Err(cannot_ask(
                &server,
                "the request came outside any call of a session, so no session could show it",
            ));
        };
        let (asking, model) = self.steering(&session);
        if !sampling_asks(asking) {
            let cancel = CancellationToken::new();
            return (self.sampler)
                .sample(&request, model.as_deref(), &cancel)
                .await;
        }
        let number = self.asked.fetch_add(1, Ordering::Relaxed) + 1;
        let mut shown = ShownCall {
            cx,
            session: schema::SessionId::new(session),
            id: schema::ToolCallId::new(format!("sampling-{number}")),
            ended: ToolCallStatus::Failed,
        };
        self.allowed(&shown, &request).await?;
        let cancel = CancellationToken::new();
        let sampled = (self.sampler)
            .sample(&request, model.as_deref(), &cancel)
            .await;
        if sampled.is_ok() {
            shown.ended = ToolCallStatus::Completed;
        }
        sampled
    }

    async fn elicit(&self, request: Elicitation) -> ElicitAnswer {
        let Elicitation {
            origin,
            message,
            kind,
        } = request;
        let decline = |why: &str| {
            dsh_tool_mcp::log_declined(&origin.server, why, &message);
            ElicitAnswer::Decline
        };
        let Some(cx) = self.editor.lock().as_ref().map(|(cx, _)| cx.clone()) else {
            return decline("no editor is connected");
        };
        let Some(session) = origin.session.clone() else {
            return decline("it came outside any call of a session, so no session could show it");
        };
        let elicits = self.elicits();
        let scope = ElicitationSessionScope::new(schema::SessionId::new(session));
        let mode = match kind {
            ElicitKind::Form { schema } if elicits.form => match serde_json::from_value(schema) {
                Ok(schema) => ElicitationMode::Form(ElicitationFormMode::new(scope, schema)),
                Err(error) => return decline(&format!("the editor cannot show its form: {error}")),
            },
            ElicitKind::Url { url, id } if elicits.url => {
                ElicitationMode::Url(ElicitationUrlMode::new(scope, id, url))
            }
            ElicitKind::Form { .. } => return decline("the editor takes no forms"),
            ElicitKind::Url { .. } => return decline("the editor takes no URLs"),
        };
        let asked = CreateElicitationRequest::new(mode, message);
        match cx.send_request(asked).block_task().await {
            Ok(response) => match response.action {
                AcpAction::Accept(accepted) => {
                    let content = accepted
                        .content
                        .and_then(|content| serde_json::to_value(content).ok())
                        .and_then(|value| match value {
                            serde_json::Value::Object(map) => Some(map),
                            _ => None,
                        });
                    ElicitAnswer::Accept(content)
                }
                AcpAction::Cancel => ElicitAnswer::Cancel,
                _ => ElicitAnswer::Decline,
            },
            Err(_) => ElicitAnswer::Cancel,
        }
    }
}

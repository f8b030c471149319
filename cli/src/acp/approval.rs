//! Tool approval over ACP: a call the host's policy says asks first (a
//! `permission = "ask"` tool, an MCP tool not annotated read-only) waits for
//! the client's `session/request_permission` answer; every call that may
//! run is then reported `in_progress`.

use agent_client_protocol::Client;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    self, PermissionOption, PermissionOptionKind, RequestPermissionOutcome,
    RequestPermissionRequest, ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields,
};
use dsh_agent_loop::{Approval, SessionFacts, ToolApproval, ToolCall, async_trait};
use std::sync::Arc;

use dsh_deployment::policy::approval::ApprovalPolicy;
use dsh_deployment::policy::modes::Asking;
use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;

use super::steering::{Remembered, Said, Steering, scope};
use super::updates::Updates;

const ALLOW: &str = "allow";
const ALLOW_ALWAYS: &str = "allow_always";
const REJECT: &str = "reject";
const REJECT_ALWAYS: &str = "reject_always";

/// Asks the client before each call of the tools that ask first.
#[derive(Debug)]
pub(super) struct AskTheClient {
    acp_session: schema::SessionId,
    policy: ApprovalPolicy,
    /// Which calls the session's mode asks about.
    asking: Asking,
    /// What the person answered "always" to in this session.
    remembered: Arc<Mutex<Remembered>>,
    updates: Updates,
    cx: ConnectionTo<Client>,
}

impl AskTheClient {
    pub(super) fn new(
        acp_session: schema::SessionId,
        policy: ApprovalPolicy,
        steering: &Steering,
        updates: Updates,
        cx: ConnectionTo<Client>,
    ) -> Self {
        Self {
            acp_session,
            policy,
            asking: steering.mode.asking,
            remembered: Arc::clone(&steering.remembered),
            updates,
            cx,
        }
    }

    /// Asks the client whether `call` may run, unless the person answered
    /// "always" for its scope already.
    async fn ask(&self, call: &ToolCall) -> Approval {
        let (scope, shown_scope) = scope(&call.name, &call.arguments);
        match self.remembered.lock().said(&scope) {
            Some(Said::Allowed) => return Approval::Allow,
            Some(Said::Rejected) => {
                return Approval::Deny {
                    reason: format!("the user declined to run {shown_scope}, for this session"),
                };
            }
            None => {}
        }
        let shown = self.updates.describe(call);
        let fields = ToolCallUpdateFields::new()
            .title(shown.title)
            .kind(shown.kind)
            .status(ToolCallStatus::Pending)
            .locations(shown.locations)
            .raw_input(shown.input);
        let request = RequestPermissionRequest::new(
            self.acp_session.clone(),
            ToolCallUpdate::new(call.id.clone(), fields),
            vec![
                PermissionOption::new(ALLOW, "Allow", PermissionOptionKind::AllowOnce),
                PermissionOption::new(
                    ALLOW_ALWAYS,
                    format!("Always allow {shown_scope}"),
                    PermissionOptionKind::AllowAlways,
                ),
                PermissionOption::new(REJECT, "Reject", PermissionOptionKind::RejectOnce),
                PermissionOption::new(
                    REJECT_ALWAYS,
                    format!("Always reject {shown_scope}"),
                    PermissionOptionKind::RejectAlways,
                ),
            ],
        );
        let denied = |reason: String| Approval::Deny { reason };
        match self.cx.send_request(request).block_task().await {
            Ok(response) => match response.outcome {
                RequestPermissionOutcome::Selected(selected) => {
                    let chosen = &*selected.option_id.0;
                    let always = match chosen {
                        ALLOW_ALWAYS => Some(Said::Allowed),
                        REJECT_ALWAYS => Some(Said::Rejected),
                        _ => None,
                    };
                    if let Some(said) = always {
                        self.remembered.lock().remember(scope, said);
                    }
                    if chosen == ALLOW || chosen == ALLOW_ALWAYS {
                        Approval::Allow
                    } else {
                        denied(format!("the user declined to run `{}`", call.name))
                    }
                }
                _ => denied(format!(
                    "the permission request for `{}` was cancelled",
                    call.name
                )),
            },
            Err(error) => denied(format!(
                "`{}` needs the user's permission, which could not be asked: {}",
                call.name, error.message
            )),
        }
    }
}

#[async_trait]
impl ToolApproval for AskTheClient {
    async fn approve(
        &self,
        call: &ToolCall,
        session: &SessionFacts,
        _cancel: &CancellationToken,
    ) -> Approval {
        if self
            .policy
            .asks_in(self.asking, &call.name, session.id.as_str())
        {
            let approval = self.ask(call).await;
            if approval != Approval::Allow {
                return approval;
            }
        }
        // An in-process child's calls are not the client's to track.
        if self.updates.is_for(&session.id) {
            self.updates.started(call);
        }
        Approval::Allow
    }
}

//! A session's approval: the host's policy says which calls ask first in
//! the session's mode ([`ApprovalPolicy::asks_in`]); a call an "always"
//! answer covers, by the one rule of [`crate::policy::always`], runs (or is
//! refused) unasked; any other is put to the session's person, whose
//! "always" is remembered — and recorded with the session — for exactly
//! what the question said it covers. An MCP tool that changed since is
//! a new tool for approval ([`super::changed_tools`]).

use std::sync::Arc;

use dsh_agent_loop::{Approval, SessionFacts, ToolApproval, ToolCall, async_trait};
use dsh_sandbox::SandboxMode;
use tokio_util::sync::CancellationToken;

use super::SessionShared;
use super::changed_tools::ChangedTools;
use super::events::SessionEvent;
use super::person::{Answer, Question};
use crate::policy::always::{self, Said};
use crate::policy::approval::ApprovalPolicy;
use crate::policy::modes::Mode;

/// Approves the calls of one session (and of the in-process children its
/// calls start) for its person.
pub(crate) struct SessionApproval {
    policy: ApprovalPolicy,
    shared: Arc<SessionShared>,
    /// What changed of the session's MCP tools.
    changed: Arc<ChangedTools>,
}

impl SessionApproval {
    pub(crate) fn new(
        policy: ApprovalPolicy,
        shared: Arc<SessionShared>,
        changed: Arc<ChangedTools>,
    ) -> Self {
        Self {
            policy,
            shared,
            changed,
        }
    }

    /// Whether `call`, which no remembered answer covers, may run: the
    /// person's answer.
    async fn decide(
        &self,
        call: &ToolCall,
        session: &SessionFacts,
        cancel: &CancellationToken,
    ) -> Approval {
        let offer = always::offer(&call.name, &call.arguments);
        let view = self.shared.narrator.view(call);
        let (always, never) = (offer.label(Said::Allowed), offer.label(Said::Rejected));
        let question = Question::Call {
            call: &view,
            always: &always,
            never: &never,
        };
        let answer = self.shared.person.ask(question, cancel).await;
        let remember = |said: Said| {
            self.shared.remembered.lock().remember_offer(&offer, said);
            for scope in offer.scopes(said) {
                self.shared.record_always(&scope.key(), said);
            }
            self.changed.remembered(&call.name);
        };
        if answer.allows() {
            self.changed.allowed(&call.name);
        }
        match answer {
            Answer::Once => Approval::Allow,
            Answer::Always => {
                remember(Said::Allowed);
                Approval::Allow
            }
            Answer::No => declined(call),
            Answer::Never => {
                remember(Said::Rejected);
                declined(call)
            }
            Answer::Withdrawn => Approval::Deny {
                reason: format!("the permission request for `{}` was cancelled", call.name),
            },
            Answer::Unanswerable(why) => Approval::Deny {
                reason: format!(
                    "`{name}` runs only with the user's permission, and {why}, or {how}",
                    name = call.name,
                    how = self.policy.how_to_allow(&call.name, session.id.as_str()),
                ),
            },
        }
    }
}

/// The refusal of `call`, a change of files, in `mode`, whose sandbox is
/// read-only: said at once, with the way out.
fn read_only(call: &ToolCall, mode: &Mode) -> Approval {
    Approval::Deny {
        reason: format!(
            "`{name}` changes files, and this session's mode is `{id}` ({what}), whose \
             sandbox is `read-only` and lets no file change, so `{name}` was not run; the \
             person can switch the mode (`/mode auto`, or the editor's mode picker) to let \
             files change",
            name = call.name,
            id = mode.id,
            what = mode.name,
        ),
    }
}

fn declined(call: &ToolCall) -> Approval {
    Approval::Deny {
        reason: format!("the user declined to run `{}`", call.name),
    }
}

#[async_trait]
impl ToolApproval for SessionApproval {
    async fn approve(
        &self,
        call: &ToolCall,
        session: &SessionFacts,
        cancel: &CancellationToken,
    ) -> Approval {
        // A tool that changed since its answers lapses them first.
        let standing = self.changed.standing(&call.name, session.id.as_str());
        // "Always reject" holds in every mode, even one that asks nothing.
        let said = self
            .shared
            .remembered
            .lock()
            .said(&call.name, &call.arguments);
        if said == Some(Said::Rejected) {
            return Approval::Deny {
                reason: format!(
                    "the user declined to run `{}` like this, for this session",
                    call.name
                ),
            };
        }
        let mode = self.shared.steering.lock().mode;
        // Asking would be for nothing: the sandbox refuses the change
        // whatever the answer.
        if mode.sandbox == SandboxMode::ReadOnly
            && self.policy.changes_files(&call.name, session.id.as_str())
        {
            return read_only(call, mode);
        }
        let asking = mode.asking;
        if said != Some(Said::Allowed) && standing.asks_in(asking) {
            let approval = self.decide(call, session, cancel).await;
            if approval != Approval::Allow {
                return approval;
            }
        }
        // An in-process child's calls are not the person's to follow.
        if self.shared.narrator.is_for(&session.id) {
            self.shared.show(SessionEvent::CallRunning {
                call_id: call.id.clone(),
            });
        }
        Approval::Allow
    }
}

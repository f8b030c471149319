//! `ToolApproval`: who decides, right before a tool call runs, whether it
//! may.

use async_trait::async_trait;
use tokio_util::sync::CancellationToken;

use crate::{SessionFacts, ToolCall};

/// Whether a tool call may run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Approval {
    /// Run it.
    Allow,
    /// Do not run it: the model gets `reason` as the call's failed result
    /// and goes on.
    Deny {
        /// Why, as the model reads it ("the user declined to run `bash`").
        reason: String,
    },
}

/// Asked right before each tool call of a turn runs (after the loop has
/// checked the agent may use the tool): a front end that can ask its user
/// (an editor, over ACP) decides here, and knows the call starts when it
/// allows it.
///
/// A refusal is a result the model sees, never a failed turn. When the
/// turn is cancelled while the approval is pending, the loop stops
/// waiting for it and the call ends as cancelled.
///
/// ```
/// use dsh_agent_loop::{Approval, SessionFacts, ToolApproval, ToolCall, async_trait};
/// use tokio_util::sync::CancellationToken;
///
/// /// Lets everything run but `bash`.
/// #[derive(Debug)]
/// struct NoShell;
///
/// #[async_trait]
/// impl ToolApproval for NoShell {
///     async fn approve(&self, call: &ToolCall, _: &SessionFacts, _: &CancellationToken) -> Approval {
///         match call.name.as_str() {
///             "bash" => Approval::Deny { reason: "this agent may not run commands".into() },
///             _ => Approval::Allow,
///         }
///     }
/// }
/// ```
#[async_trait]
pub trait ToolApproval: Send + Sync + 'static {
    /// Decides whether `call`, made in `session`, may run now.
    async fn approve(
        &self,
        call: &ToolCall,
        session: &SessionFacts,
        cancel: &CancellationToken,
    ) -> Approval;
}

//! The session's slash commands, as ACP announces them
//! (`available_commands_update`, right after `session/new`) and as a
//! prompt runs them: `/compact`, the loop's compaction on request.

use agent_client_protocol::Client;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    self, AvailableCommand, AvailableCommandsUpdate, SessionNotification, SessionUpdate,
};

/// `/compact`'s name, without the slash.
pub(super) const COMPACT: &str = "compact";

/// Whether a prompt's text is the `/compact` command.
pub(super) fn is_compact(input: &str) -> bool {
    input.trim().strip_prefix('/') == Some(COMPACT)
}

/// Tells the client which commands the session takes.
pub(super) fn announce(cx: &ConnectionTo<Client>, session: schema::SessionId) {
    let commands = vec![AvailableCommand::new(
        COMPACT,
        "Compact the conversation: summarize it so far, keeping the system prompt and tools as they are",
    )];
    let update = SessionUpdate::AvailableCommandsUpdate(AvailableCommandsUpdate::new(commands));
    // The connection is gone only when the client is: nothing to tell.
    let _ = cx.send_notification(SessionNotification::new(session, update));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_command_itself_compacts() {
        assert!(is_compact("/compact"));
        assert!(is_compact("  /compact\n"));
        assert!(!is_compact("compact"));
        assert!(!is_compact("/compact the file"));
    }
}

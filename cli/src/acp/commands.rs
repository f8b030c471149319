//! The session's slash commands, as ACP announces them
//! (`available_commands_update`, right after `session/new`): the host's
//! list ([`SLASH_COMMANDS`]), which also reads a prompt's text.

use agent_client_protocol::Client;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    self, AvailableCommand, AvailableCommandsUpdate, SessionNotification, SessionUpdate,
};
use dsh_deployment::host::SLASH_COMMANDS;

/// Tells the client which commands the session takes.
pub(super) fn announce(cx: &ConnectionTo<Client>, session: schema::SessionId) {
    let commands = SLASH_COMMANDS
        .iter()
        .map(|command| AvailableCommand::new(command.name(), command.description()))
        .collect();
    let update = SessionUpdate::AvailableCommandsUpdate(AvailableCommandsUpdate::new(commands));
    // The connection is gone only when the client is: nothing to tell.
    let _ = cx.send_notification(SessionNotification::new(session, update));
}

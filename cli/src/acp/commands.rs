//! The session's slash commands, as ACP announces them
//! (`available_commands_update`, right after `session/new`, and again
//! when a server's prompts change): the host's list
//! ([`Commands::listed`]: the built-in commands, then the prompts of the
//! MCP servers the session sees).

use agent_client_protocol::Client;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    self, AvailableCommand, AvailableCommandInput, AvailableCommandsUpdate, SessionNotification,
    SessionUpdate, UnstructuredCommandInput,
};
use std::sync::atomic::Ordering;

use dsh_agent_loop::SessionId;
use dsh_deployment::host::Host;
use dsh_deployment::session::Commands;
use tokio::sync::broadcast::error::RecvError;

/// Tells the client which commands session `session` of `host` takes.
pub(super) fn announce(cx: &ConnectionTo<Client>, host: &Host, session: schema::SessionId) {
    let commands = Commands::of(&host.runtime.mcp, &session.0)
        .listed()
        .into_iter()
        .map(|command| {
            let listed = AvailableCommand::new(command.name, command.description);
            match command.hint {
                Some(hint) => listed.input(AvailableCommandInput::Unstructured(
                    UnstructuredCommandInput::new(hint),
                )),
                None => listed,
            }
        })
        .collect();
    let update = SessionUpdate::AvailableCommandsUpdate(AvailableCommandsUpdate::new(commands));
    // The connection is gone only when the client is: nothing to tell.
    let _ = cx.send_notification(SessionNotification::new(session, update));
}

impl super::Server {
    /// Announces the commands again to each open session that sees a
    /// server whose prompts changed, as they change, while the
    /// connection lasts. Started once, at `initialize`.
    pub(super) fn keep_commands_current(&self, cx: &ConnectionTo<Client>) {
        if self.inner.commands_kept.swap(true, Ordering::SeqCst) {
            return;
        }
        let (server, to) = (self.clone(), cx.clone());
        let mut changes = self.inner.host.runtime.mcp.prompt_changes();
        // The task ends with the connection; failing to start it leaves
        // the commands as first announced.
        let _ = cx.spawn(async move {
            loop {
                let changed = match changes.recv().await {
                    Ok(name) => Some(name),
                    // Some changes were missed: every session hears again.
                    Err(RecvError::Lagged(_)) => None,
                    Err(RecvError::Closed) => return Ok(()),
                };
                server.announce_where(&to, changed.as_deref());
            }
        });
    }

    /// Announces the commands of each open session that sees server
    /// `changed` (every open session, for `None`).
    fn announce_where(&self, cx: &ConnectionTo<Client>, changed: Option<&str>) {
        let servers = &self.inner.host.runtime.mcp;
        let open: Vec<SessionId> = self.inner.sessions.lock().keys().cloned().collect();
        for id in open {
            let sees = |name: &str| {
                (servers.prompts(Some(id.as_str())).iter()).any(|(one, _)| one == name)
            };
            if changed.is_none_or(sees) {
                announce(cx, &self.inner.host, schema::SessionId::new(id.to_string()));
            }
        }
    }
}

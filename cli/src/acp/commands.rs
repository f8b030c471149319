//! The session's slash commands, as ACP announces them
//! (`available_commands_update`, right after `session/new`, and again
//! when a server's prompts change): the host's list
//! ([`Commands::listed`]: the built-in commands, then the prompts of the
//! MCP servers the session sees), which also reads a prompt's text.

use agent_client_protocol::Client;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    self, AvailableCommand, AvailableCommandInput, AvailableCommandsUpdate, SessionNotification,
    SessionUpdate, UnstructuredCommandInput,
};
use std::borrow::Cow;
use std::sync::atomic::Ordering;

use dsh_agent_loop::SessionId;
use dsh_deployment::session::{Commands, Input, SlashCommand};
use dsh_tool_mcp::McpServers;
use tokio::sync::broadcast::error::RecvError;
use tokio_util::sync::CancellationToken;

use super::updates::Updates;

/// Tells the client which commands session `session` takes, its servers
/// among `servers`.
pub(super) fn announce(
    cx: &ConnectionTo<Client>,
    servers: &McpServers,
    session: schema::SessionId,
) {
    let commands = Commands::of(servers, &session.0)
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

/// What a prompt's text asks of the session.
pub(super) enum Read<'a> {
    /// A built-in command, with its argument.
    Command(SlashCommand, &'a str),
    /// A turn with this text: the prompt's own, or the text of the
    /// server's prompt it runs.
    Turn(Cow<'a, str>),
    /// No turn: a server's prompt that cannot run, and why, has been
    /// said instead.
    Said,
}

impl super::Server {
    /// Reads `input`, a prompt's text in session `session`, by the
    /// host's commands ([`Commands::parse`]); a server's prompt is got
    /// from its server (until `cancel`), and when it cannot be, why is
    /// said through `said`.
    pub(super) async fn read<'a>(
        &self,
        session: &SessionId,
        input: &'a str,
        (said, cancel): (&Updates, &CancellationToken),
    ) -> Read<'a> {
        let servers = &self.inner.mcp.servers;
        match Commands::of(servers, session.as_str()).parse(input) {
            Input::Command(command, argument) => Read::Command(command, argument),
            Input::ServerPrompt(call) => match call.text(servers, session.as_str(), cancel).await {
                Ok(text) => Read::Turn(Cow::Owned(text)),
                Err(error) => {
                    said.say(&error.to_string());
                    Read::Said
                }
            },
            Input::Invalid(error) => {
                said.say(&error.to_string());
                Read::Said
            }
            // An empty prompt is the client's to send: a turn.
            Input::Empty | Input::Prompt(_) => Read::Turn(Cow::Borrowed(input)),
        }
    }

    /// Announces the commands again to each open session that sees a
    /// server whose prompts changed, as they change, while the
    /// connection lasts. Started once, at `initialize`.
    pub(super) fn keep_commands_current(&self, cx: &ConnectionTo<Client>) {
        if self.inner.commands_kept.swap(true, Ordering::SeqCst) {
            return;
        }
        let (server, to) = (self.clone(), cx.clone());
        let mut changes = self.inner.mcp.servers.prompt_changes();
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
        let servers = &self.inner.mcp.servers;
        let open: Vec<SessionId> = self.inner.sessions.lock().keys().cloned().collect();
        for id in open {
            let sees = |name: &str| {
                (servers.prompts(Some(id.as_str())).iter()).any(|(one, _)| one == name)
            };
            if changed.is_none_or(sees) {
                announce(cx, servers, schema::SessionId::new(id.to_string()));
            }
        }
    }
}

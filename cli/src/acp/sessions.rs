//! Recorded sessions over ACP: `session/load` (the history replayed as the
//! `session/update`s its turns sent live, then the answer),
//! `session/resume` (the same, without the replay), `session/list` (by
//! `cwd`, a page at a time) and `session/delete` — advertised only while
//! the store is on —, and `session/close`, always.
//!
//! A load or a resume starts the editor's `mcpServers` as `session/new`
//! does. A session another dsh process has open is refused, never opened
//! twice: its writer holds the session's lock.

use std::path::PathBuf;
use std::sync::Arc;

use agent_client_protocol::Client;
use agent_client_protocol::v1::schema::{
    self, AgentCapabilities, CloseSessionRequest, CloseSessionResponse, DeleteSessionRequest,
    DeleteSessionResponse, ListSessionsRequest, ListSessionsResponse, LoadSessionRequest,
    LoadSessionResponse, McpServer as ClientServer, ResumeSessionRequest, ResumeSessionResponse,
    SessionAdditionalDirectoriesCapabilities, SessionCapabilities, SessionCloseCapabilities,
    SessionDeleteCapabilities, SessionListCapabilities, SessionResumeCapabilities,
};
use agent_client_protocol::v1::{ConnectionTo, Responder};
use agent_client_protocol::{Error, ErrorCode};
use dsh_agent_loop::SessionId;
use dsh_deployment::host::store::Recording;
use dsh_deployment::session::{HostedSession, Opening};
use dsh_session_store::{ListQuery, StoreError};

use super::{Server, fs, mcp, session_cwd, steering, system_prompt};

/// How many sessions one `session/list` page holds.
const PAGE: usize = 50;

/// What dsh can do with sessions: loading, listing, resuming and deleting
/// them when there is a store to keep them.
/// What a prompt may hold besides text and links: images (pasted
/// screenshots, sent to the model as image parts) and embedded resources
/// (an editor's @-mentions of files, inlined).
fn prompt_capabilities() -> schema::PromptCapabilities {
    schema::PromptCapabilities::new()
        .image(true)
        .embedded_context(true)
}

pub(super) fn capabilities(recording: Option<&Recording>) -> AgentCapabilities {
    let capabilities = SessionCapabilities::new()
        .close(SessionCloseCapabilities::new())
        .system_prompt(system_prompt::capabilities())
        .additional_directories(SessionAdditionalDirectoriesCapabilities::new());
    if recording.is_none() {
        return AgentCapabilities::new()
            .prompt_capabilities(prompt_capabilities())
            .session_capabilities(capabilities);
    }
    AgentCapabilities::new()
        .prompt_capabilities(prompt_capabilities())
        .load_session(true)
        .session_capabilities(
            capabilities
                .list(SessionListCapabilities::new())
                .resume(SessionResumeCapabilities::new())
                .delete(SessionDeleteCapabilities::new())
                .fork(schema::SessionForkCapabilities::new()),
        )
}

/// The `Reopened` of a `session/load` or `session/resume` request, whose
/// types differ but whose fields are named alike.
macro_rules! reopened {
    ($request:expr, $replay:expr) => {{
        let request = $request;
        Reopened {
            id: request.session_id,
            dirs: (request.cwd, request.additional_directories),
            system_prompt: system_prompt::of_request(request.system_prompt, &request.meta),
            servers: request.mcp_servers,
            replay: $replay,
        }
    }};
}

impl Server {
    /// `session/load`: opens the recorded session, replays its history as
    /// updates, starts the editor's `mcpServers` for it, then answers.
    pub(super) fn load_session(
        &self,
        request: LoadSessionRequest,
        responder: Responder<LoadSessionResponse>,
        cx: ConnectionTo<Client>,
    ) -> Result<(), Error> {
        let reopened = reopened!(request, true);
        self.reopen(reopened, (responder, cx), |(modes, options)| {
            LoadSessionResponse::new()
                .modes(modes)
                .config_options(options)
        })
    }

    /// `session/resume`: opens the recorded session, without replay,
    /// starts the editor's `mcpServers` for it, then answers.
    pub(super) fn resume_session(
        &self,
        request: ResumeSessionRequest,
        responder: Responder<ResumeSessionResponse>,
        cx: ConnectionTo<Client>,
    ) -> Result<(), Error> {
        let reopened = reopened!(request, false);
        self.reopen(reopened, (responder, cx), |(modes, options)| {
            ResumeSessionResponse::new()
                .modes(modes)
                .config_options(options)
        })
    }

    /// `session/fork` (unstable): a new session with the recorded session's
    /// history (the host's `Opening::fork`), in the request's directories,
    /// with its prompt and servers; the parent goes on as it was. A
    /// `_meta.messageId` (a `messageId` dsh gave a message of the parent)
    /// forks at that message.
    pub(super) fn fork_session(
        &self,
        request: schema::ForkSessionRequest,
        responder: Responder<schema::ForkSessionResponse>,
        cx: ConnectionTo<Client>,
    ) -> Result<(), Error> {
        let parent = request.session_id;
        let at = match fork_point(&parent.0, &request.meta) {
            Ok(at) => at,
            Err(error) => return responder.respond_with_error(error),
        };
        let opened = (self.inner.mcp.required_error().map_or(Ok(()), Err))
            .and_then(|()| self.recording().map(|_| ()))
            .and_then(|()| {
                let cwd = session_cwd(request.cwd)?;
                let roots = fs::additional_directories(request.additional_directories)?;
                let prompt = system_prompt::of_request(request.system_prompt, &request.meta);
                self.open(Opening::fork(&at, Some(&cwd)), (&roots, prompt), &cx)
            });
        let session = match opened {
            Ok(session) => session,
            Err(error) if error.code == ErrorCode::RESOURCE_NOT_FOUND => {
                return responder.respond_with_error(not_found(&parent));
            }
            Err(error) => return responder.respond_with_error(error),
        };
        let servers = self.servers_for(true, request.mcp_servers);
        self.with_servers(session, servers, (responder, cx), |session| {
            let (modes, options) = steering::of(session);
            Ok(schema::ForkSessionResponse::new(session.id().to_string())
                .modes(modes)
                .config_options(options))
        })
    }

    /// Opens the recorded session `reopened` names (or takes the one this
    /// process has open), starts the editor's servers for it, replays it
    /// if asked, and answers with `answer` of its steering.
    fn reopen<R: agent_client_protocol::JsonRpcResponse>(
        &self,
        reopened: Reopened,
        (responder, cx): (Responder<R>, ConnectionTo<Client>),
        answer: impl FnOnce((schema::SessionModeState, Vec<schema::SessionConfigOption>)) -> R
        + Send
        + 'static,
    ) -> Result<(), Error> {
        let opened = self.open_recorded(&reopened.id, reopened.dirs, reopened.system_prompt, &cx);
        let (session, fresh) = match opened {
            Ok(opened) => opened,
            Err(error) => return responder.respond_with_error(error),
        };
        let (servers, replay) = (self.servers_for(fresh, reopened.servers), reopened.replay);
        // Replayed once the editor's servers run, so that their calls show
        // with the title and kind the servers give them.
        self.with_servers(session, servers, (responder, cx), move |session| {
            if replay {
                let replayed = session.replay();
                replayed
                    .map_err(|error| Error::new(ErrorCode::INVALID_REQUEST, error.to_string()))?;
                // A load ends with the context counted: the store keeps none.
                session.show_usage();
            }
            Ok(answer(steering::of(session)))
        })
    }

    /// The servers to start for a session opened by a load or a resume,
    /// and the failures to say: none for a session this process had open
    /// already (it keeps the servers it has).
    fn servers_for(
        &self,
        fresh: bool,
        servers: Vec<ClientServer>,
    ) -> (Vec<Result<dsh_tool_mcp::ServerConfig, String>>, Vec<String>) {
        match fresh {
            true => (
                mcp::client_configs(servers),
                self.inner.mcp.optional_failures.clone(),
            ),
            false => (Vec::new(), Vec::new()),
        }
    }

    /// The recorded session `acp_id`, opened in `cwd` with the editor's
    /// other directories and its prompt (or the one this process has open
    /// already: `false`).
    fn open_recorded(
        &self,
        acp_id: &schema::SessionId,
        (cwd, directories): (PathBuf, Vec<PathBuf>),
        system_prompt: Option<schema::SystemPrompt>,
        cx: &ConnectionTo<Client>,
    ) -> Result<(Arc<HostedSession>, bool), Error> {
        if let Some(error) = self.inner.mcp.required_error() {
            return Err(error);
        }
        self.recording()?;
        let cwd = session_cwd(cwd)?;
        let roots = fs::additional_directories(directories)?;
        if let Ok(open) = self.session(acp_id) {
            return Ok((open, false));
        }
        let opening = Opening::recorded(&acp_id.0, Some(&cwd));
        match self.open(opening, (&roots, system_prompt), cx) {
            Ok(session) => Ok((session, true)),
            Err(error) if error.code == ErrorCode::RESOURCE_NOT_FOUND => Err(not_found(acp_id)),
            Err(error) => Err(error),
        }
    }

    /// `session/list`: this agent's sessions, of `cwd` if given, the most
    /// recent first, [`PAGE`] at a time.
    pub(super) fn list_sessions(
        &self,
        request: ListSessionsRequest,
    ) -> Result<ListSessionsResponse, Error> {
        let recording = self.recording()?;
        let before = request.cursor.as_deref().map(parse_cursor).transpose()?;
        let mut query = ListQuery::default();
        query.cwd = request.cwd;
        query.agent = Some(recording.agent().to_owned());
        query.before = before;
        query.limit = Some(PAGE + 1);
        let mut found = recording.store().list(&query).map_err(store_error)?;
        let next_cursor = (found.len() > PAGE).then(|| {
            found.truncate(PAGE);
            found
                .last()
                .map(|last| format!("{}:{}", last.updated_at_ms, last.id))
        });
        let sessions = found
            .into_iter()
            // ACP sessions have a working directory; a `dsh run --no-cwd`
            // session has none to show.
            .filter_map(|info| {
                let cwd = info.cwd?;
                Some(
                    schema::SessionInfo::new(info.id, cwd)
                        .title((!info.title.is_empty()).then_some(info.title))
                        .updated_at(iso8601(info.updated_at_ms)),
                )
            })
            .collect();
        Ok(ListSessionsResponse::new(sessions).next_cursor(next_cursor.flatten()))
    }

    /// `session/delete`: deletes the recorded session, closing it first if
    /// this process has it open and idle; its own MCP servers end with it,
    /// off the message loop (a server may take a while).
    pub(super) fn delete_session(
        &self,
        request: DeleteSessionRequest,
        cx: &ConnectionTo<Client>,
    ) -> Result<DeleteSessionResponse, Error> {
        let recording = self.recording()?;
        let id = SessionId::new(request.session_id.0.clone());
        let open = self.inner.sessions.lock().get(&id).cloned();
        if let Some(session) = open {
            if session.is_running() {
                return Err(Error::new(
                    ErrorCode::INVALID_REQUEST,
                    format!(
                        "session `{id}` is running a turn; send `session/cancel` and wait \
                         for its answer before deleting it"
                    ),
                ));
            }
            // Dropping the session drops its writer, and with it the lock.
            self.inner.sessions.lock().remove(&id);
            self.inner.host.trace().forget(id.as_str());
            drop(session);
        }
        match recording.store().delete(id.as_str()) {
            Ok(()) => {
                let servers = self.inner.host.runtime.mcp.clone();
                cx.spawn(async move {
                    servers.end_session(id.as_str()).await;
                    Ok(())
                })?;
                Ok(DeleteSessionResponse::new())
            }
            Err(StoreError::NotFound { .. }) => Err(not_found(&request.session_id)),
            Err(error) => Err(store_error(error)),
        }
    }

    /// `session/close`: the editor is done with a session of this
    /// process. Its running turn is cancelled (and answers `cancelled`);
    /// the session leaves the process — with its recorder, whose writer
    /// holds its lock in the store, so another process may open it now,
    /// or once the cancelled turn has ended —; its own MCP servers stop,
    /// off the message loop.
    pub(super) fn close_session(
        &self,
        request: CloseSessionRequest,
        cx: &ConnectionTo<Client>,
    ) -> Result<CloseSessionResponse, Error> {
        let id = SessionId::new(request.session_id.0.clone());
        let Some(session) = self.inner.sessions.lock().remove(&id) else {
            let mut error = schema::Error::session_not_found(request.session_id.clone());
            error.message = format!("no session `{id}` is open in this dsh process");
            return Err(error.into());
        };
        // The servers stop off the message loop; the session (its writer,
        // and the lock it holds) goes now, or when its cancelled turn ends.
        let closing = session.close();
        drop(session);
        cx.spawn(async move {
            closing.await;
            Ok(())
        })?;
        Ok(CloseSessionResponse::new())
    }

    fn recording(&self) -> Result<&Recording, Error> {
        self.inner.host.recording().ok_or_else(|| {
            Error::new(
                ErrorCode::METHOD_NOT_FOUND,
                "dsh records no sessions in this process (`--no-store`, or `[sessions] \
                 enabled = false`), so it cannot load, list, resume or delete them",
            )
        })
    }
}

/// A recorded session an editor opens again (`session/load`,
/// `session/resume`).
struct Reopened {
    id: schema::SessionId,
    /// Its working directory and the editor's other directories.
    dirs: (PathBuf, Vec<PathBuf>),
    system_prompt: Option<schema::SystemPrompt>,
    servers: Vec<ClientServer>,
    /// Whether its history is shown again (a load).
    replay: bool,
}

/// The error for an unknown session: the protocol's, naming it.
fn not_found(id: &schema::SessionId) -> Error {
    let mut error = schema::Error::session_not_found(id.clone());
    error.message = format!("no session `{}` in the session store", id.0);
    error.into()
}

fn store_error(error: StoreError) -> Error {
    let code = match error {
        StoreError::InUse { .. } => ErrorCode::INVALID_REQUEST,
        _ => ErrorCode::INTERNAL_ERROR,
    };
    Error::new(code, error.to_string())
}

/// A `session/list` cursor: the last listed session's `updated_at_ms:id`.
fn parse_cursor(cursor: &str) -> Result<(i64, String), Error> {
    cursor
        .split_once(':')
        .and_then(|(ms, id)| Some((ms.parse().ok()?, id.to_owned())))
        .ok_or_else(|| {
            Error::new(
                ErrorCode::INVALID_PARAMS,
                format!(
                    "`cursor` `{cursor}` is not one dsh gave; pass the `nextCursor` of the \
                     page before, or none for the first page"
                ),
            )
        })
}

/// Milliseconds since the Unix epoch as ISO 8601, UTC
/// (`2026-12-06T16:24:08.123Z`); a time chrono cannot hold as the epoch.
fn iso8601(ms: i64) -> String {
    let time = chrono::DateTime::from_timestamp_millis(ms).unwrap_or_default();
    time.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// Where a fork of `parent` starts: the message `_meta.messageId` names
/// (one of `parent`'s), else the end of its history.
fn fork_point(
    parent: &str,
    meta: &Option<serde_json::Map<String, serde_json::Value>>,
) -> Result<String, Error> {
    let Some(id) = meta.as_ref().and_then(|meta| meta.get("messageId")) else {
        return Ok(parent.to_owned());
    };
    match id.as_str() {
        Some(id)
            if id
                .strip_prefix(parent)
                .is_some_and(|at| at.starts_with('/')) =>
        {
            Ok(id.to_owned())
        }
        _ => Err(Error::new(
            ErrorCode::INVALID_PARAMS,
            format!("`_meta.messageId` {id} is no message id of session `{parent}`"),
        )
        .data(serde_json::json!({ "field": "_meta.messageId" }))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_are_iso_8601() {
        assert_eq!(iso8601(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(iso8601(951_782_400_000), "2000-02-29T00:00:00.000Z");
        assert_eq!(iso8601(1_796_574_248_123), "2026-12-06T16:24:08.123Z");
    }

    #[test]
    fn a_cursor_is_checked() {
        assert_eq!(parse_cursor("12:abc").unwrap(), (12, "abc".to_owned()));
        let error = parse_cursor("nonsense").unwrap_err();
        assert!(error.message.contains("`nonsense`"), "{}", error.message);
    }
}

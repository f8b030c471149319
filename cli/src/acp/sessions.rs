//! Recorded sessions over ACP: `session/load` (the history replayed as the
//! `session/update`s its turns sent live, then the answer),
//! `session/resume` (the same, without the replay), `session/list` (by
//! `cwd`, a page at a time) and `session/delete` — advertised only while
//! the store is on —, and `session/close`, always.
//!
//! A load or a resume starts the editor's `mcpServers` as `session/new`
//! does. A session another dsh process has open is refused, never opened
//! twice: its writer holds the session's lock.

use std::path::Path;
use std::sync::Arc;

use agent_client_protocol::Client;
use agent_client_protocol::JsonRpcResponse;
use agent_client_protocol::v1::schema::{
    self, AgentCapabilities, CloseSessionRequest, CloseSessionResponse, DeleteSessionRequest,
    DeleteSessionResponse, ListSessionsRequest, ListSessionsResponse, LoadSessionRequest,
    LoadSessionResponse, McpServer as ClientServer, ResumeSessionRequest, ResumeSessionResponse,
    SessionAdditionalDirectoriesCapabilities, SessionCapabilities, SessionCloseCapabilities,
    SessionDeleteCapabilities, SessionListCapabilities, SessionResumeCapabilities,
};
use agent_client_protocol::v1::{ConnectionTo, Responder};
use agent_client_protocol::{Error, ErrorCode};
use dsh_agent_loop::{Event, SessionId};
use dsh_session_store::{ListQuery, StoreError};

use super::steering::Steering;
use super::updates::Updates;
use super::{Server, Slot, commands, fs, mcp, session_cwd, system_prompt};
use dsh_deployment::host::store::{Recording, ResumeError};

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
                .delete(SessionDeleteCapabilities::new()),
        )
}

impl Server {
    /// `session/load`: opens the recorded session, replays its history as
    /// updates, starts the editor's `mcpServers` for it, then answers.
    pub(super) fn load_session(
        &self,
        mut request: LoadSessionRequest,
        responder: Responder<LoadSessionResponse>,
        cx: ConnectionTo<Client>,
    ) -> Result<(), Error> {
        let servers = std::mem::take(&mut request.mcp_servers);
        let id = request.session_id.clone();
        self.open_with_servers(&id, servers, (responder, cx), move |server, cx| {
            server.load(request, cx)
        })
    }

    /// Opens the recorded session of `request`, and replays its history
    /// as updates.
    fn load(
        &self,
        request: LoadSessionRequest,
        cx: &ConnectionTo<Client>,
    ) -> Result<LoadSessionResponse, Error> {
        let cwd = request.cwd.clone();
        let history = self.open_recorded(
            &request.session_id,
            request.cwd,
            request.additional_directories,
            request.system_prompt,
        )?;
        let id = SessionId::new(request.session_id.0.clone());
        let updates_id = request.session_id.clone();
        let updates = Updates::new(
            id.clone(),
            request.session_id,
            self.inner.agent_loop.tools().clone(),
            Some(&cwd),
            self.client_terminal(),
            cx.clone(),
        );
        if let Some(recording) = self.store() {
            updates.title_from(recording.store().clone());
            updates.replay_changes(recorded_changes(recording, &id));
        }
        updates.replay(&history);
        // The store keeps no API counts: the context is counted now.
        if let Some((used, window)) = self.counted_usage(&id) {
            updates.usage(used, window);
        }
        // A loaded session takes the commands a new one does; the client
        // knows its id, so they go before the answer, with the replay.
        commands::announce(cx, &self.inner.mcp.servers, updates_id.clone());
        let (modes, options) = self.steering_of(&updates_id);
        Ok(LoadSessionResponse::new()
            .modes(modes)
            .config_options(options))
    }

    /// Answers a `session/load` or `session/resume` of `acp_id` with what
    /// `open` makes of it, as `session/new` answers: a required deployment
    /// server that is down refuses it; the editor's `servers` start for the
    /// session once it is open (on a task of the connection, so other
    /// requests are served meanwhile) and before the answer, so its first
    /// prompt has their tools; the servers that failed, and the
    /// deployment's optional ones, are said in the session after the
    /// answer. A session this process has open already keeps the servers
    /// it has.
    fn open_with_servers<R: JsonRpcResponse>(
        &self,
        acp_id: &schema::SessionId,
        mut servers: Vec<ClientServer>,
        (responder, cx): (Responder<R>, ConnectionTo<Client>),
        open: impl FnOnce(&Self, &ConnectionTo<Client>) -> Result<R, Error> + Send + 'static,
    ) -> Result<(), Error> {
        if let Some(error) = self.inner.mcp.required_error() {
            return responder.respond_with_error(error);
        }
        let id = SessionId::new(acp_id.0.clone());
        let mut failures = self.inner.mcp.optional_failures.clone();
        if self.inner.sessions.lock().contains_key(&id) {
            (servers, failures) = (Vec::new(), Vec::new());
        }
        if servers.is_empty() && failures.is_empty() {
            return responder.respond_with_result(open(self, &cx));
        }
        let server = self.clone();
        cx.clone().spawn(async move {
            let opened = open(&server, &cx);
            if opened.is_ok() {
                failures.extend(server.start_servers(&id, servers).await);
            }
            let said = opened.is_ok() && !failures.is_empty();
            responder.respond_with_result(opened)?;
            if said {
                let update = mcp::failure_update(&failures);
                let notification = schema::SessionNotification::new(id.to_string(), update);
                // The connection is gone only when the client is.
                let _ = cx.send_notification(notification);
            }
            Ok(())
        })
    }

    /// Starts the editor's `servers` for the open session `id`, its roots
    /// the session's directories; the failures, one message each.
    async fn start_servers(&self, id: &SessionId, servers: Vec<ClientServer>) -> Vec<String> {
        if servers.is_empty() {
            return Vec::new();
        }
        let dirs = {
            let sessions = self.inner.sessions.lock();
            let slot = sessions.get(id);
            let cwd = slot.and_then(|slot| slot.session.as_ref()?.cwd().map(Path::to_path_buf));
            cwd.zip(slot.map(|slot| slot.roots.clone()))
        };
        let Some((cwd, roots)) = dirs else {
            return Vec::new();
        };
        let mcp = &self.inner.mcp;
        mcp.start_session_servers(id.as_str(), (&cwd, &roots), servers)
            .await
    }

    /// The context the agent of session `id` has in it now, counted with
    /// its budget, and its window: what a load says of the session's usage,
    /// since the store does not keep the API's counts. `None` when the
    /// session is not open here, or its prompt does not render.
    fn counted_usage(&self, id: &SessionId) -> Option<(u64, Option<u64>)> {
        let sessions = self.inner.sessions.lock();
        let slot = sessions.get(id)?;
        let session = slot.session.as_ref()?;
        let steering = &slot.steering;
        let agent = (self.inner.host)
            .agent_for(steering.mode, &steering.model, steering.effort.as_deref())
            .ok()?;
        let used = self.inner.agent_loop.context_tokens(&agent, session)?;
        Some((used, agent.budget().window()))
    }

    /// `session/resume`: opens the recorded session, without replay,
    /// announces its commands, starts the editor's `mcpServers` for it,
    /// then answers.
    pub(super) fn resume_session(
        &self,
        mut request: ResumeSessionRequest,
        responder: Responder<ResumeSessionResponse>,
        cx: ConnectionTo<Client>,
    ) -> Result<(), Error> {
        let servers = std::mem::take(&mut request.mcp_servers);
        let id = request.session_id.clone();
        self.open_with_servers(&id, servers, (responder, cx), move |server, cx| {
            server.resume(request, cx)
        })
    }

    /// Opens the recorded session of `request`, without replay, and
    /// announces its commands.
    fn resume(
        &self,
        request: ResumeSessionRequest,
        cx: &ConnectionTo<Client>,
    ) -> Result<ResumeSessionResponse, Error> {
        self.open_recorded(
            &request.session_id,
            request.cwd,
            request.additional_directories,
            request.system_prompt,
        )?;
        let (modes, options) = self.steering_of(&request.session_id);
        commands::announce(cx, &self.inner.mcp.servers, request.session_id);
        Ok(ResumeSessionResponse::new()
            .modes(modes)
            .config_options(options))
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
        {
            let mut sessions = self.inner.sessions.lock();
            if let Some(slot) = sessions.get(&id) {
                if slot.session.is_none() {
                    return Err(Error::new(
                        ErrorCode::INVALID_REQUEST,
                        format!(
                            "session `{id}` is running a turn; send `session/cancel` and wait \
                             for its answer before deleting it"
                        ),
                    ));
                }
                // Dropping the slot and the trace's recorder drops its
                // writer, and with it the lock.
                self.inner.host.trace().forget(id.as_str());
                sessions.remove(&id);
            }
        }
        match recording.store().delete(id.as_str()) {
            Ok(()) => {
                let servers = self.inner.mcp.servers.clone();
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
        let slot = self.inner.sessions.lock().remove(&id);
        let Some(slot) = slot else {
            let mut error = schema::Error::session_not_found(request.session_id.clone());
            error.message = format!("no session `{id}` is open in this dsh process");
            return Err(error.into());
        };
        if let Some(turn) = &slot.turn {
            turn.cancel();
        }
        self.inner.host.trace().forget(id.as_str());
        drop(slot);
        let servers = self.inner.mcp.servers.clone();
        cx.spawn(async move {
            servers.end_session(id.as_str()).await;
            Ok(())
        })?;
        Ok(CloseSessionResponse::new())
    }

    fn recording(&self) -> Result<&Recording, Error> {
        self.store().ok_or_else(|| {
            Error::new(
                ErrorCode::METHOD_NOT_FOUND,
                "dsh records no sessions in this process (`--no-store`, or `[sessions] \
                 enabled = false`), so it cannot load, list, resume or delete them",
            )
        })
    }

    /// Opens the recorded session `id` in `cwd` for prompts; returns its
    /// history. One this process has open already is returned as it is.
    fn open_recorded(
        &self,
        acp_id: &schema::SessionId,
        cwd: std::path::PathBuf,
        additional_directories: Vec<std::path::PathBuf>,
        system_prompt: Option<schema::SystemPrompt>,
    ) -> Result<Vec<Event>, Error> {
        let recording = self.recording()?;
        let cwd = session_cwd(cwd)?;
        let roots = fs::additional_directories(additional_directories)?;
        let id = SessionId::new(acp_id.0.clone());
        if let Some(slot) = self.inner.sessions.lock().get(&id) {
            return match &slot.session {
                Some(session) => Ok(session.events().to_vec()),
                None => Err(Error::new(
                    ErrorCode::INVALID_REQUEST,
                    format!("session `{id}` is running a turn; wait for its answer"),
                )),
            };
        }
        let resumed = recording
            .resume(id.as_str(), Some(&cwd))
            .map_err(|error| match error {
                ResumeError::Store(StoreError::NotFound { .. })
                | ResumeError::OtherAgent { .. } => not_found(acp_id),
                ResumeError::Store(error) => store_error(error),
            })?;
        // Like a new session, it brings its instruction files and the
        // client's system prompt, read now.
        let client = self.inner.client.lock().clone();
        let brought = system_prompt::bring(
            &self.inner.host.runtime,
            &resumed.session,
            &client,
            system_prompt,
        )?;
        let (recorded, prefix) = (Some(&resumed.recorded), resumed.loaded.prefix.as_ref());
        self.trace_session(&resumed.session, recorded, prefix);
        let history = resumed.loaded.events;
        let steering = Steering::restore(
            &self.inner.host,
            Arc::clone(&resumed.recorded.writer),
            &resumed.loaded.settings,
        );
        self.inner.sessions.lock().insert(
            id,
            Slot {
                session: Some(resumed.session),
                turn: None,
                recorded: Some(resumed.recorded),
                _brought: brought,
                roots,
                steering,
            },
        );
        Ok(history)
    }
}

/// The files the calls of session `id` changed, as recorded; none when
/// the store fails to read them, which is said on stderr (stdout is the
/// protocol's) and leaves the diffs out of the replay.
fn recorded_changes(
    recording: &Recording,
    id: &SessionId,
) -> std::collections::BTreeMap<String, Vec<dsh_session_store::RecordedChange>> {
    recording
        .store()
        .changes(id.as_str())
        .unwrap_or_else(|error| {
            let problem = dsh_deployment::host::store::problem(error)
                .help("the replay of the session shows no diffs");
            crate::diagnostics::Reporter::for_stderr().report(&[problem]);
            Default::default()
        })
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
/// (`2026-12-06T16:24:08.123Z`).
fn iso8601(ms: i64) -> String {
    let (days, ms_of_day) = (ms.div_euclid(86_400_000), ms.rem_euclid(86_400_000));
    // Howard Hinnant's civil_from_days: days since 1970-01-01 to a date of
    // the proleptic Gregorian calendar.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    let (h, m, s, milli) = (
        ms_of_day / 3_600_000,
        ms_of_day / 60_000 % 60,
        ms_of_day / 1_000 % 60,
        ms_of_day % 1_000,
    );
    format!("{year:04}-{month:02}-{day:02}T{h:02}:{m:02}:{s:02}.{milli:03}Z")
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

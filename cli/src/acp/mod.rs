//! The Agent Client Protocol front end of the agent loop: one agent of a
//! deployment served to an editor, one loop [`Session`] per ACP session.
//!
//! The SDK runs handlers one at a time inside its dispatch loop, so no
//! handler awaits a turn: `session/prompt` registers the turn's
//! cancellation token, moves its responder into a task spawned on the
//! connection, and returns. The turn runs in that task; its updates and
//! permission requests are sent from there, and its answer goes last.
//! `session/cancel` then finds the token while the turn runs.
//!
//! The loop knows nothing of ACP: a turn runs on a clone of the loop whose
//! hooks ([`updates::Updates`]) and tool approval ([`approval`]) speak for
//! that ACP session.

mod approval;
mod commands;
mod fs;
mod mcp;
mod questions;
mod sessions;
mod shutdown;
mod steering;
mod system_prompt;
pub(crate) mod transport;
mod updates;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use agent_client_protocol::v1::schema::{
    self, CancelNotification, CloseSessionRequest, ContentBlock, DeleteSessionRequest,
    FileSystemCapabilities, Implementation, InitializeRequest, InitializeResponse,
    ListSessionsRequest, LoadSessionRequest, NewSessionRequest, NewSessionResponse, PromptRequest,
    PromptResponse, ResumeSessionRequest, SetSessionConfigOptionRequest,
    SetSessionConfigOptionResponse, SetSessionModeRequest, SetSessionModeResponse, StopReason,
};
use agent_client_protocol::v1::{ConnectionTo, Responder};
use agent_client_protocol::{Agent, Client, ConnectTo, Error, ErrorCode, RequestCancellation};
use dsh_agent_loop::{AgentLoop, FinishReason, Image, ImageBudget, Session, SessionId, TurnError};
use dsh_deployment::facts::attach;
use dsh_deployment::host::Host;
use dsh_deployment::session::SlashCommand;
use dsh_system_prompt::render_prompt;
use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;

pub(crate) use self::mcp::AcpMcp;
pub(crate) use self::questions::AskTheEditor;

use self::approval::AskTheClient;
use self::commands::Read;
use self::fs::SessionFiles;
use self::steering::{MODE_OPTION, Steering};
use self::updates::Updates;
use dsh_deployment::facts::cwd::{Relative, working_directory};
use dsh_deployment::host::store::{Recorded, Recording};

/// What `dsh acp` serves: one agent on one loop, and its sessions.
#[derive(Clone, Debug)]
pub(crate) struct Server {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    /// The agent's host: the deployment, its store, its trace.
    host: Arc<Host>,
    /// The host's loop, traced; each turn runs on a clone with its hooks.
    agent_loop: AgentLoop,
    sessions: Mutex<HashMap<SessionId, Slot>>,
    /// The MCP servers: the deployment's and each session's.
    mcp: AcpMcp,
    /// The client's file-system capabilities, from `initialize`.
    client_fs: Mutex<FileSystemCapabilities>,
    /// The client's name, from `initialize`: the owner of its system
    /// prompt.
    client: Mutex<String>,
    /// Whether the client shows running commands as terminals: its
    /// capabilities' `_meta.terminal_output`, from `initialize`.
    client_terminal: AtomicBool,
    /// Whether the task that announces changed commands runs.
    commands_kept: AtomicBool,
    /// Puts the MCP servers' sampling and elicitation to the editor.
    questions: Arc<AskTheEditor>,
}

/// One ACP session.
#[derive(Debug)]
struct Slot {
    /// Its `additionalDirectories`, where the file tools change files
    /// without asking.
    roots: Vec<PathBuf>,
    /// The loop's session; taken out while a turn runs on it.
    session: Option<Session>,
    /// The running turn's token.
    turn: Option<CancellationToken>,
    /// The store's side of the session, when it is recorded: its writer
    /// holds the session's lock while the slot lives.
    recorded: Option<Recorded>,
    /// What the session brought to its prompt, registered while it lives.
    _brought: system_prompt::Brought,
    /// Its mode, its model, its remembered answers.
    steering: Steering,
}

impl Server {
    /// Serves the agent `host` hosts, on the host's traced loop; calls of
    /// the tools that ask first wait for the client's permission; `mcp`
    /// holds the MCP servers; `questions` puts their sampling and
    /// elicitation to the editor.
    pub(crate) fn new(host: Arc<Host>, mcp: AcpMcp, questions: Arc<AskTheEditor>) -> Self {
        let server = Self {
            inner: Arc::new(Inner {
                agent_loop: host.agent_loop(),
                host,
                sessions: Mutex::new(HashMap::new()),
                mcp,
                client_fs: Mutex::new(FileSystemCapabilities::new()),
                client: Mutex::new(system_prompt::UNNAMED_CLIENT.to_owned()),
                client_terminal: AtomicBool::new(false),
                commands_kept: AtomicBool::new(false),
                questions,
            }),
        };
        server.inner.questions.serve(&server.inner);
        server
    }

    /// Where sessions are recorded; `None` with the store off.
    fn store(&self) -> Option<&Recording> {
        self.inner.host.recording()
    }

    /// Whether the client shows running commands as terminals.
    fn client_terminal(&self) -> bool {
        self.inner.client_terminal.load(Ordering::Relaxed)
    }

    /// The agent loop's agent.
    fn loop_agent(&self) -> &dsh_agent_loop::Agent {
        self.inner.host.loop_agent()
    }

    /// Traces `session` across processes (`Host::trace_session`); the
    /// store's failure goes to stderr (stdout is the protocol's).
    fn trace_session(
        &self,
        session: &Session,
        recorded: Option<&Recorded>,
        prefix: Option<&dsh_session_store::RequestPrefix>,
    ) {
        self.inner
            .host
            .trace_session(session, recorded, prefix, |warning| {
                let problem = dsh_deployment::Problem::new(warning).warning();
                crate::diagnostics::Reporter::for_stderr().report(&[problem]);
            });
    }

    /// The protocol's agent side, ready to connect to a transport (stdio,
    /// or a client in-process).
    pub(crate) fn agent(&self) -> impl ConnectTo<Client> + 'static {
        let (init, new, prompt, cancel) = (self.clone(), self.clone(), self.clone(), self.clone());
        let (load, list, resume, delete) = (self.clone(), self.clone(), self.clone(), self.clone());
        let (set_mode, set_option, close) = (self.clone(), self.clone(), self.clone());
        Agent
            .v1()
            .name("dsh")
            .on_receive_request(
                async move |request: InitializeRequest, responder, cx: ConnectionTo<Client>| {
                    responder.respond(init.initialize(&request, &cx))
                },
                agent_client_protocol::on_receive_request!(),
            )
            .on_receive_request(
                async move |request: LoadSessionRequest, responder, cx: ConnectionTo<Client>| {
                    load.load_session(request, responder, cx)
                },
                agent_client_protocol::on_receive_request!(),
            )
            .on_receive_request(
                async move |request: ListSessionsRequest, responder, _cx| {
                    responder.respond_with_result(list.list_sessions(request))
                },
                agent_client_protocol::on_receive_request!(),
            )
            .on_receive_request(
                async move |request: ResumeSessionRequest, responder, cx: ConnectionTo<Client>| {
                    resume.resume_session(request, responder, cx)
                },
                agent_client_protocol::on_receive_request!(),
            )
            .on_receive_request(
                async move |request: DeleteSessionRequest, responder, cx: ConnectionTo<Client>| {
                    responder.respond_with_result(delete.delete_session(request, &cx))
                },
                agent_client_protocol::on_receive_request!(),
            )
            .on_receive_request(
                async move |request: CloseSessionRequest, responder, cx: ConnectionTo<Client>| {
                    responder.respond_with_result(close.close_session(request, &cx))
                },
                agent_client_protocol::on_receive_request!(),
            )
            .on_receive_request(
                async move |request: NewSessionRequest, responder, cx: ConnectionTo<Client>| {
                    new.new_session(request, responder, cx)
                },
                agent_client_protocol::on_receive_request!(),
            )
            .on_receive_request(
                async move |request: PromptRequest, responder, cx: ConnectionTo<Client>| {
                    prompt.prompt(request, responder, cx)
                },
                agent_client_protocol::on_receive_request!(),
            )
            .on_receive_request(
                async move |request: SetSessionModeRequest, responder, cx: ConnectionTo<Client>| {
                    let value = request.mode_id.0.to_string();
                    let set = set_mode.steer(&request.session_id, MODE_OPTION, &value, &cx);
                    responder.respond_with_result(set.map(|_| SetSessionModeResponse::new()))
                },
                agent_client_protocol::on_receive_request!(),
            )
            .on_receive_request(
                async move |request: SetSessionConfigOptionRequest,
                            responder,
                            cx: ConnectionTo<Client>| {
                    responder.respond_with_result(set_option.set_option(&request, &cx))
                },
                agent_client_protocol::on_receive_request!(),
            )
            .on_receive_notification(
                async move |notification: CancelNotification, _cx| {
                    cancel.cancel(&notification.session_id);
                    Ok(())
                },
                agent_client_protocol::on_receive_notification!(),
            )
    }

    /// Cancels every running turn: the client has gone. Returns whether
    /// any was running.
    pub(crate) fn cancel_all(&self) -> bool {
        let mut any = false;
        for turn in self
            .inner
            .sessions
            .lock()
            .values()
            .filter_map(|slot| slot.turn.as_ref())
        {
            turn.cancel();
            any = true;
        }
        any
    }

    /// `session/new`: the client's `cwd` is the session's `<<cwd>>` and
    /// where its tools run; its `mcpServers` start (on a task of the
    /// connection, so other requests are served meanwhile) before the
    /// answer, and a server that failed is said in the session.
    fn new_session(
        &self,
        request: NewSessionRequest,
        responder: Responder<NewSessionResponse>,
        cx: ConnectionTo<Client>,
    ) -> Result<(), Error> {
        if let Some(error) = self.inner.mcp.required_error() {
            return responder.respond_with_error(error);
        }
        let cwd = match session_cwd(request.cwd) {
            Ok(cwd) => cwd,
            Err(error) => return responder.respond_with_error(error),
        };
        let roots = match fs::additional_directories(request.additional_directories) {
            Ok(roots) => roots,
            Err(error) => return responder.respond_with_error(error),
        };
        let (session, recorded) = match self.create_session(&cwd) {
            Ok(created) => created,
            Err(error) => return responder.respond_with_error(error),
        };
        let (system_prompt, servers) = (request.system_prompt, request.mcp_servers);
        let mut failures = self.inner.mcp.optional_failures.clone();
        if servers.is_empty() && failures.is_empty() {
            let opened = self.open_session(session, recorded, roots, system_prompt);
            let id = opened.as_ref().ok().map(|new| new.session_id.clone());
            responder.respond_with_result(opened)?;
            if let Some(id) = id {
                commands::announce(&cx, &self.inner.mcp.servers, id);
            }
            return Ok(());
        }
        let server = self.clone();
        cx.clone().spawn(async move {
            let id = session.id().clone();
            let mcp = &server.inner.mcp;
            let started = mcp.start_session_servers(id.as_str(), (&cwd, &roots), servers);
            failures.extend(started.await);
            let opened = server.open_session(session, recorded, roots, system_prompt);
            if opened.is_err() {
                mcp.servers.end_session(id.as_str()).await;
            }
            let said = opened.is_ok() && !failures.is_empty();
            let announced = opened.as_ref().ok().map(|new| new.session_id.clone());
            responder.respond_with_result(opened)?;
            if let Some(announced) = announced {
                commands::announce(&cx, &mcp.servers, announced);
            }
            if said {
                let notification = schema::SessionNotification::new(
                    schema::SessionId::new(id.to_string()),
                    mcp::failure_update(&failures),
                );
                // The connection is gone only when the client is.
                let _ = cx.send_notification(notification);
            }
            Ok(())
        })
    }

    /// A new session in `cwd`, recorded when the store is on.
    fn create_session(&self, cwd: &std::path::Path) -> Result<(Session, Option<Recorded>), Error> {
        (self.inner.host.new_session(cwd))
            .map_err(|error| Error::new(ErrorCode::INTERNAL_ERROR, error.to_string()))
    }

    /// Opens `session`, once its prompt renders.
    fn open_session(
        &self,
        session: Session,
        recorded: Option<Recorded>,
        roots: Vec<PathBuf>,
        system_prompt: Option<schema::SystemPrompt>,
    ) -> Result<NewSessionResponse, Error> {
        let client = self.inner.client.lock().clone();
        let brought = (|| {
            let brought =
                system_prompt::bring(&self.inner.host.runtime, &session, &client, system_prompt)?;
            // The prompt renders now or never: say so here, not at the
            // first prompt.
            let assembly = self.inner.agent_loop.assemble(self.loop_agent(), &session);
            if let Err(errors) = render_prompt(&assembly) {
                return Err(Error::new(
                    ErrorCode::INTERNAL_ERROR,
                    format!("the agent's prompt does not render:\n{errors}"),
                ));
            }
            Ok(brought)
        })();
        let brought = match brought {
            Ok(brought) => brought,
            Err(error) => {
                // No session: leave none in the store either. The session's
                // recorder holds the writer, and the writer the lock.
                if let (Some(recording), Some(recorded)) = (self.store(), recorded) {
                    let id = recorded.writer.id().to_owned();
                    drop((session, recorded));
                    let _ = recording.store().delete(&id);
                }
                return Err(error);
            }
        };
        let id = session.id().clone();
        self.trace_session(&session, recorded.as_ref(), None);
        self.inner.sessions.lock().insert(
            id.clone(),
            Slot {
                roots,
                session: Some(session),
                turn: None,
                steering: Steering::start(
                    &self.inner.host,
                    recorded
                        .as_ref()
                        .map(|recorded| Arc::clone(&recorded.writer)),
                ),
                recorded,
                _brought: brought,
            },
        );
        let (modes, options) = self.steering_of(&schema::SessionId::new(id.to_string()));
        Ok(NewSessionResponse::new(id.to_string())
            .modes(modes)
            .config_options(options))
    }

    /// `session/prompt`: takes the session, starts its turn on a task of
    /// the connection, and returns at once; the task answers.
    fn prompt(
        &self,
        request: PromptRequest,
        responder: Responder<PromptResponse>,
        cx: ConnectionTo<Client>,
    ) -> Result<(), Error> {
        let id = SessionId::new(request.session_id.0.clone());
        let dirs = self.session_dirs(&id);
        let (input, images) = match prompt_text(&request.prompt, &dirs) {
            Ok(input) => input,
            Err(error) => return responder.respond_with_error(error),
        };
        let cancel = CancellationToken::new();
        let (session, roots, steering) = {
            let mut sessions = self.inner.sessions.lock();
            let Some(slot) = sessions.get_mut(&id) else {
                return responder.respond_with_error(
                    schema::Error::session_not_found(request.session_id).into(),
                );
            };
            let Some(session) = slot.session.take() else {
                return responder.respond_with_error(Error::new(
                    ErrorCode::INVALID_REQUEST,
                    format!(
                        "session `{id}` is already running a turn; wait for its answer, \
                         or send `session/cancel` first"
                    ),
                ));
            };
            slot.turn = Some(cancel.clone());
            (session, slot.roots.clone(), slot.steering.clone())
        };
        let server = self.clone();
        // `$/cancel_request` of the prompt cancels the turn too.
        let cancelled = responder.cancellation();
        cx.clone().spawn(async move {
            let stop = server
                .turn(
                    session,
                    (roots, steering),
                    (&input, images),
                    (&cancel, &cancelled),
                    &cx,
                )
                .await;
            responder.respond_with_result(stop.map(PromptResponse::new))
        })
    }

    /// Runs one turn of the session on a loop whose hooks speak for it,
    /// then gives the session back.
    async fn turn(
        &self,
        mut session: Session,
        (roots, steering): (Vec<PathBuf>, Steering),
        (input, images): (&str, Vec<Image>),
        (cancel, cancelled): (&CancellationToken, &RequestCancellation),
        cx: &ConnectionTo<Client>,
    ) -> Result<StopReason, Error> {
        let agent = (self.inner.host)
            .agent_for(steering.mode, &steering.model, steering.effort.as_deref())
            .map_err(|message| Error::new(ErrorCode::INTERNAL_ERROR, message))?;
        let acp_id = schema::SessionId::new(session.id().to_string());
        let updates = self.turn_updates(&session, &acp_id, cx);
        let files = SessionFiles::new(
            &self.inner.client_fs.lock(),
            roots,
            acp_id.clone(),
            updates.clone(),
            cx.clone(),
        );
        let [events, text, thought, progress, said, answered] =
            std::array::from_fn(|_| updates.clone());
        let policy = self.inner.host.approval_policy();
        let approval = AskTheClient::new(acp_id, policy, &steering, updates, cx.clone());
        let agent_loop = self
            .inner
            .agent_loop
            .clone()
            .on_event(move |session, event| events.event(session, event))
            .on_text(move |session, piece| text.text(session, piece))
            .on_thought(move |session, piece| thought.thought(session, piece))
            .on_response(move |response| answered.answered(response))
            .on_tool_progress(move |session, call, text| progress.progress(session, call, text))
            .on_tool_call_context(move |session, call, cx| files.attach(session, call, cx))
            .with_approval(Arc::new(approval));

        let result = {
            let agent = &agent;
            let session = &mut session;
            let turn = async {
                match self.read(session.id(), input, (&said, cancel)).await {
                    Read::Command(SlashCommand::Compact, _) => {
                        let report = agent_loop.compact(agent, session, cancel).await?;
                        if report.is_none() {
                            said.say("nothing to compact");
                        }
                        Ok(FinishReason::Stop)
                    }
                    Read::Command(command @ (SlashCommand::Mode | SlashCommand::Model), value) => {
                        said.say(&self.steer_by_command(session.id(), command, value, cx));
                        Ok(FinishReason::Stop)
                    }
                    Read::Said => Ok(FinishReason::Stop),
                    // An empty prompt is the client's to send: a turn.
                    Read::Turn(text) => agent_loop
                        .run_turn_with(agent, session, (text.into_owned(), images), cancel)
                        .await
                        .map(|summary| summary.finish),
                }
            };
            tokio::pin!(turn);
            loop {
                tokio::select! {
                    result = &mut turn => break result,
                    () = cancelled.cancelled(), if !cancel.is_cancelled() => cancel.cancel(),
                }
            }
        };
        self.give_back(session);
        stop_reason(result, cancel)
    }

    /// The updates of a turn of `session`; they send its title once its
    /// prompt gives it one, if the store has none yet, and record the
    /// files its calls change, if it is recorded.
    fn turn_updates(
        &self,
        session: &Session,
        acp_id: &schema::SessionId,
        cx: &ConnectionTo<Client>,
    ) -> Updates {
        let updates = Updates::new(
            session.id().clone(),
            acp_id.clone(),
            self.inner.agent_loop.tools().clone(),
            session.cwd(),
            self.client_terminal(),
            cx.clone(),
        );
        let store = self.store().map(Recording::store);
        let untitled = store.filter(|store| {
            (store.info(session.id().as_str())).is_ok_and(|info| info.title.is_empty())
        });
        if let Some(store) = untitled {
            updates.title_from(store.clone());
        }
        let sessions = self.inner.sessions.lock();
        let recorded = sessions
            .get(session.id())
            .and_then(|slot| slot.recorded.as_ref());
        if let Some(recorded) = recorded {
            updates.record_changes(Arc::clone(&recorded.writer));
        }
        drop(sessions);
        updates
    }

    /// Puts `session` back in its slot after a turn, and says what the
    /// store failed to record of it.
    fn give_back(&self, session: Session) {
        if let Some(slot) = self.inner.sessions.lock().get_mut(session.id()) {
            slot.turn = None;
            slot.session = Some(session);
            // stdout is the protocol's: the store's failure goes to stderr.
            if let Some(problem) = slot.recorded.as_ref().and_then(Recorded::failure) {
                crate::diagnostics::Reporter::for_stderr().report(&[problem]);
            }
        }
    }

    /// The modes and config options of session `id` (new ones, for a
    /// session not open).
    fn steering_of(
        &self,
        id: &schema::SessionId,
    ) -> (schema::SessionModeState, Vec<schema::SessionConfigOption>) {
        let host = &self.inner.host;
        let steering = (self.inner.sessions.lock())
            .get(&SessionId::new(id.0.clone()))
            .map_or_else(|| Steering::start(host, None), |slot| slot.steering.clone());
        (steering.modes(), steering.config_options(host))
    }

    /// Sets session `id`'s config option `option` to `value` (the mode or
    /// the model), for its next turn; announces the options as they are
    /// now (and the mode, to clients of `session/set_mode`). Answers the
    /// options.
    fn steer(
        &self,
        id: &schema::SessionId,
        option: &str,
        value: &str,
        cx: &ConnectionTo<Client>,
    ) -> Result<Vec<schema::SessionConfigOption>, Error> {
        let host = &self.inner.host;
        let steering = {
            let mut sessions = self.inner.sessions.lock();
            let slot = sessions
                .get_mut(&SessionId::new(id.0.clone()))
                .ok_or_else(|| Error::from(schema::Error::session_not_found(id.clone())))?;
            slot.steering.set(host, option, value)?;
            slot.steering.clone()
        };
        let options = steering.config_options(host);
        let updates = [
            schema::SessionUpdate::ConfigOptionUpdate(schema::ConfigOptionUpdate::new(
                options.clone(),
            )),
            schema::SessionUpdate::CurrentModeUpdate(schema::CurrentModeUpdate::new(
                steering.mode.id,
            )),
        ];
        for update in updates {
            // The connection is gone only when the client is.
            let _ = cx.send_notification(schema::SessionNotification::new(id.clone(), update));
        }
        Ok(options)
    }

    /// `session/set_config_option`: [`steer`](Self::steer) by a value id.
    fn set_option(
        &self,
        request: &SetSessionConfigOptionRequest,
        cx: &ConnectionTo<Client>,
    ) -> Result<SetSessionConfigOptionResponse, Error> {
        let value = request.value.as_value_id().ok_or_else(|| {
            Error::new(
                ErrorCode::INVALID_PARAMS,
                "dsh's config options take a value id, not a boolean",
            )
        })?;
        let option = request.config_id.0.to_string();
        self.steer(&request.session_id, &option, &value.0, cx)
            .map(SetSessionConfigOptionResponse::new)
    }

    /// `/mode ID` and `/model ID` typed in a prompt: the same switch as
    /// the config options; without an id, what there is to choose. The
    /// answer is what the session says.
    fn steer_by_command(
        &self,
        id: &SessionId,
        command: SlashCommand,
        value: &str,
        cx: &ConnectionTo<Client>,
    ) -> String {
        let option = match command {
            SlashCommand::Mode => MODE_OPTION,
            _ => steering::MODEL_OPTION,
        };
        let acp_id = schema::SessionId::new(id.to_string());
        if value.is_empty() {
            let (_, options) = self.steering_of(&acp_id);
            return steering::choices(&options, option);
        }
        match self.steer(&acp_id, option, value, cx) {
            Ok(_) => format!("{option}: {value}"),
            Err(error) => error.message,
        }
    }

    /// The directories of session `id` whose files a prompt may attach:
    /// its working directory and its additional directories.
    fn session_dirs(&self, id: &SessionId) -> Vec<PathBuf> {
        let sessions = self.inner.sessions.lock();
        let Some(slot) = sessions.get(id) else {
            return Vec::new();
        };
        let cwd = slot.session.as_ref().and_then(|session| session.cwd());
        cwd.map(std::path::Path::to_path_buf)
            .into_iter()
            .chain(slot.roots.iter().cloned())
            .collect()
    }

    /// `session/cancel`: cancels the session's running turn, if any.
    fn cancel(&self, id: &schema::SessionId) {
        let id = SessionId::new(id.0.clone());
        if let Some(turn) = self
            .inner
            .sessions
            .lock()
            .get(&id)
            .and_then(|slot| slot.turn.as_ref())
        {
            turn.cancel();
        }
    }
}

impl Server {
    /// `initialize`: the version the SDK negotiated, and what dsh can do —
    /// with the store on, load, list, resume and delete sessions
    /// ([`sessions`]); text and resource links in prompts; MCP servers over
    /// stdio and streamable HTTP (not the older SSE); the client's system
    /// prompt in both modes, a session's `additionalDirectories`. From
    /// now on, changed commands and the MCP servers' questions go to the
    /// client.
    fn initialize(
        &self,
        request: &InitializeRequest,
        cx: &ConnectionTo<Client>,
    ) -> InitializeResponse {
        self.keep_commands_current(cx);
        (self.inner.questions).connected(cx.clone(), &request.client_capabilities);
        *self.inner.client_fs.lock() = request.client_capabilities.fs.clone();
        if let Some(client) = &request.client_info {
            *self.inner.client.lock() = client.name.clone();
        }
        let meta = request.client_capabilities.meta.as_ref();
        let terminal = meta.and_then(|meta| meta.get("terminal_output"));
        (self.inner.client_terminal).store(terminal == Some(&true.into()), Ordering::Relaxed);
        InitializeResponse::new(request.protocol_version)
            .agent_capabilities(
                sessions::capabilities(self.store())
                    .mcp_capabilities(schema::McpCapabilities::new().http(true).sse(false)),
            )
            .agent_info(Implementation::new("dsh", env!("CARGO_PKG_VERSION")).title("dsh"))
    }
}

/// A session's working directory, by the one rule
/// ([`working_directory`]): ACP's `cwd` must be absolute.
fn session_cwd(cwd: PathBuf) -> Result<PathBuf, Error> {
    working_directory(Some(&cwd), Relative::Refused).map_err(|error| {
        Error::new(ErrorCode::INVALID_PARAMS, format!("`cwd`: {error}"))
            .data(serde_json::json!({ "field": "cwd", "cwd": cwd.display().to_string() }))
    })
}

/// The user's message of a prompt: its text blocks; each embedded text
/// resource inline with its URI, and each link to a file of the session's
/// `dirs` read and inlined (`facts::attach`, within its budget); other
/// links as their name and URI; and its images, each checked
/// ([`prompt_image`]). Audio needs a capability dsh does not advertise.
fn prompt_text(prompt: &[ContentBlock], dirs: &[PathBuf]) -> Result<(String, Vec<Image>), Error> {
    let mut parts = Vec::with_capacity(prompt.len());
    let mut images = Vec::new();
    let mut budget = ImageBudget::default();
    for (at, block) in prompt.iter().enumerate() {
        match block {
            ContentBlock::Text(text) => parts.push(text.text.clone()),
            ContentBlock::Image(image) => images.push(prompt_image(at, image, &mut budget)?),
            ContentBlock::ResourceLink(link) => {
                let inside = attach::file_uri_path(&link.uri)
                    .and_then(|path| attach::file(&path, dirs).ok());
                parts.push(inside.unwrap_or_else(|| format!("[{}]({})", link.name, link.uri)));
            }
            ContentBlock::Resource(resource) => parts.push(match &resource.resource {
                schema::EmbeddedResourceResource::TextResourceContents(text) => {
                    attach::inline(&text.uri, &text.text)
                }
                schema::EmbeddedResourceResource::BlobResourceContents(blob) => format!(
                    "[resource {}: {}, {} bytes of base64, not shown]",
                    blob.uri,
                    blob.mime_type.as_deref().unwrap_or("binary"),
                    blob.blob.len()
                ),
                _ => format!("`prompt[{at}]`: a resource of a kind dsh does not know"),
            }),
            other => {
                let kind = serde_json::to_value(other)
                    .ok()
                    .and_then(|value| value.get("type")?.as_str().map(str::to_owned))
                    .unwrap_or_else(|| "unknown".to_owned());
                return Err(Error::new(
                    ErrorCode::INVALID_PARAMS,
                    format!(
                        "`prompt[{at}]` is a `{kind}` block, which dsh does not accept; \
                         send `text`, `image`, `resource` or `resource_link` blocks"
                    ),
                ));
            }
        }
    }
    Ok((parts.join("\n\n"), images))
}

/// Image block `at` of a prompt, when a model API takes it (checked as
/// every image is, against the prompt's `budget`: [`ImageBudget`]); else
/// the error naming what is wrong.
fn prompt_image(
    at: usize,
    image: &schema::ImageContent,
    budget: &mut ImageBudget,
) -> Result<Image, Error> {
    let image = Image {
        mime_type: image.mime_type.clone(),
        data: image.data.clone(),
    };
    match budget.admit(&image) {
        Ok(()) => Ok(image),
        Err(problem) => Err(Error::new(
            ErrorCode::INVALID_PARAMS,
            format!(
                "`prompt[{at}]` is an image of type `{}` dsh cannot send: {problem}",
                image.mime_type
            ),
        )),
    }
}

/// How a turn ended, as ACP says it: a cancelled turn is `cancelled`
/// whatever failed underneath; an answer cut short or refused is
/// `max_tokens` or `refusal`; a turn that failed otherwise is an error
/// with the one line `dsh run` prints.
fn stop_reason(
    result: Result<FinishReason, TurnError>,
    cancel: &CancellationToken,
) -> Result<StopReason, Error> {
    if cancel.is_cancelled() {
        return Ok(StopReason::Cancelled);
    }
    match result {
        Ok(FinishReason::MaxTokens) => Ok(StopReason::MaxTokens),
        Ok(FinishReason::Refusal) => Ok(StopReason::Refusal),
        Ok(_) => Ok(StopReason::EndTurn),
        Err(TurnError::Cancelled) => Ok(StopReason::Cancelled),
        Err(TurnError::StepLimit { .. }) => Ok(StopReason::MaxTurnRequests),
        Err(error) => Err(Error::new(ErrorCode::INTERNAL_ERROR, error.to_string())),
    }
}

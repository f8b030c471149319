//! The Agent Client Protocol front end: one agent of a deployment served
//! to an editor, one host [`HostedSession`] per ACP session, whose person
//! is the editor ([`editor::EditorPerson`]).
//!
//! The SDK runs handlers one at a time inside its dispatch loop, so no
//! handler awaits a turn: `session/prompt` moves its responder into a
//! task spawned on the connection and returns. The turn runs in that
//! task; its updates and permission requests are sent from there, and its
//! answer goes last. `session/cancel` then finds the running turn.
//!
//! What a session does — its commands, its steering, its approvals and
//! questions, what it shows — is the host's ([`dsh_deployment::session`]);
//! this module says it in ACP's words.

mod commands;
mod editor;
mod elicit;
mod fs;
mod mcp;
mod sessions;
mod shutdown;
mod steering;
mod system_prompt;
pub(crate) mod transport;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use agent_client_protocol::v1::schema::{
    self, CancelNotification, CloseSessionRequest, ContentBlock, DeleteSessionRequest,
    FileSystemCapabilities, ForkSessionRequest, Implementation, InitializeRequest,
    InitializeResponse, ListSessionsRequest, LoadSessionRequest, NewSessionRequest,
    NewSessionResponse, PromptRequest, PromptResponse, ResumeSessionRequest,
    SetSessionConfigOptionRequest, SetSessionConfigOptionResponse, SetSessionModeRequest,
    SetSessionModeResponse, StopReason,
};
use agent_client_protocol::v1::{ConnectionTo, Responder};
use agent_client_protocol::{Agent, Client, ConnectTo, Error, ErrorCode};
use dsh_agent_loop::{FinishReason, Image, SessionId, TurnError};
use dsh_deployment::facts::attach::{self, PromptPart};
use dsh_deployment::host::Host;
use dsh_deployment::session::{
    Attachments, HostedSession, Knob, OpenError, Opening, PromptError, Prompted, Reach, Sessions,
};
use dsh_tool_mcp::Elicits;
use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;

pub(crate) use self::mcp::AcpMcp;

use self::editor::EditorPerson;
use dsh_deployment::facts::cwd::{Relative, working_directory};

/// What `dsh acp` serves: one agent, and its sessions.
#[derive(Clone, Debug)]
pub(crate) struct Server {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    /// The agent's host: the deployment, its store, its trace.
    host: Arc<Host>,
    /// Where its sessions open.
    opener: Sessions,
    /// The sessions open in this process.
    sessions: Mutex<HashMap<SessionId, Arc<HostedSession>>>,
    /// What the deployment's MCP servers' start came to.
    mcp: AcpMcp,
    /// What the client said of itself at `initialize`.
    client: Mutex<ClientFacts>,
    /// Whether the task that announces changed commands runs.
    commands_kept: AtomicBool,
}

/// What the client said at `initialize`.
#[derive(Debug)]
struct ClientFacts {
    /// Its name: the owner of its system prompt.
    name: String,
    /// Its file-system capabilities.
    fs: FileSystemCapabilities,
    /// Whether it shows running commands as terminals: its capabilities'
    /// `_meta.terminal_output`.
    terminal: bool,
    /// Whether it shows `notice` and `compaction_update` updates
    /// (`session.notices`, `session.compaction`).
    shows: (bool, bool),
    /// Which elicitations it shows.
    elicits: Elicits,
}

impl Server {
    /// Serves the agent whose sessions open in `sessions`; `mcp` is what
    /// its servers' start came to.
    pub(crate) fn new(sessions: Sessions, mcp: AcpMcp) -> Self {
        Self {
            inner: Arc::new(Inner {
                host: Arc::clone(sessions.host()),
                opener: sessions,
                sessions: Mutex::new(HashMap::new()),
                mcp,
                client: Mutex::new(ClientFacts {
                    name: system_prompt::UNNAMED_CLIENT.to_owned(),
                    fs: FileSystemCapabilities::new(),
                    terminal: false,
                    shows: (false, false),
                    elicits: Elicits::ALL,
                }),
                commands_kept: AtomicBool::new(false),
            }),
        }
    }

    /// What an editor answers: sampling and changes outside the
    /// workspace always (every editor answers `session/request_permission`),
    /// and the elicitations it shows.
    pub(crate) fn reach(elicits: Elicits) -> Reach {
        Reach {
            samples: true,
            elicits,
            only_session: false,
            outside: true,
        }
    }

    /// The protocol's agent side, ready to connect to a transport (stdio,
    /// or a client in-process).
    pub(crate) fn agent(&self) -> impl ConnectTo<Client> + 'static {
        let [init, new, prompt, cancel, load, list] = std::array::from_fn(|_| self.clone());
        let [resume, delete, mode, option, close, fork] = std::array::from_fn(|_| self.clone());
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
                async move |request: ForkSessionRequest, responder, cx: ConnectionTo<Client>| {
                    fork.fork_session(request, responder, cx)
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
                async move |request: SetSessionModeRequest, responder, _cx| {
                    responder.respond_with_result(mode.set_mode(&request))
                },
                agent_client_protocol::on_receive_request!(),
            )
            .on_receive_request(
                async move |request: SetSessionConfigOptionRequest, responder, _cx| {
                    responder.respond_with_result(option.set_option(&request))
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

    /// `session/set_mode`: the mode of the session, as `/mode` sets it.
    fn set_mode(&self, request: &SetSessionModeRequest) -> Result<SetSessionModeResponse, Error> {
        let value = request.mode_id.0.to_string();
        let set = self.steer(&request.session_id, Knob::Mode.id(), &value);
        set.map(|_| SetSessionModeResponse::new())
    }

    /// Cancels every running turn: the client has gone. Returns whether
    /// any was running.
    pub(crate) fn cancel_all(&self) -> bool {
        let sessions: Vec<Arc<HostedSession>> =
            self.inner.sessions.lock().values().cloned().collect();
        let mut any = false;
        for session in sessions {
            any |= session.cancel();
        }
        any
    }

    /// The open session `id`.
    fn session(&self, id: &schema::SessionId) -> Result<Arc<HostedSession>, Error> {
        let sessions = self.inner.sessions.lock();
        (sessions.get(&SessionId::new(id.0.clone())).cloned())
            .ok_or_else(|| Error::from(schema::Error::session_not_found(id.clone())))
    }

    /// Opens a session as `opening` says, with the editor's other
    /// directories `roots` and its `system_prompt`, its person the editor,
    /// and keeps it.
    fn open(
        &self,
        opening: Opening,
        (roots, system_prompt): (&[PathBuf], Option<schema::SystemPrompt>),
        cx: &ConnectionTo<Client>,
    ) -> Result<Arc<HostedSession>, Error> {
        let (name, shows, fs) = {
            let client = self.inner.client.lock();
            let shows = (client.terminal, client.shows, client.elicits);
            (client.name.clone(), shows, client.fs.clone())
        };
        let client_prompt = (system_prompt)
            .map(|prompt| system_prompt::client_prompt(&name, prompt))
            .transpose()?;
        let person = Arc::new(EditorPerson::new(
            cx.clone(),
            shows,
            fs,
            Arc::clone(&self.inner.host),
        ));
        let opening = (opening.with_roots(roots.to_vec())).with_client_prompt(client_prompt);
        let (session, _notes) =
            (self.inner.opener.open(opening, person.clone())).map_err(open_error)?;
        person.bind(schema::SessionId::new(session.id().to_string()));
        (self.inner.sessions.lock()).insert(session.id().clone(), Arc::clone(&session));
        Ok(session)
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
        let opened = session_cwd(request.cwd).and_then(|cwd| {
            let roots = fs::additional_directories(request.additional_directories)?;
            let prompt = system_prompt::of_request(request.system_prompt, &request.meta);
            self.open(Opening::new(&cwd), (&roots, prompt), &cx)
        });
        let session = match opened {
            Ok(session) => session,
            Err(error) => return responder.respond_with_error(error),
        };
        let servers = mcp::client_configs(request.mcp_servers);
        let failures = self.inner.mcp.optional_failures.clone();
        let answer = |session: &HostedSession| {
            let (modes, options) = steering::of(session);
            Ok(NewSessionResponse::new(session.id().to_string())
                .modes(modes)
                .config_options(options))
        };
        self.with_servers(session, (servers, failures), (responder, cx), answer)
    }

    /// Answers a request that opened `session` with `answer`, once the
    /// editor's `servers` started for it (on a task of the connection, so
    /// other requests are served meanwhile; none: at once); then
    /// announces its commands, and says the servers that failed (its
    /// own, and the deployment's optional ones: `failures`).
    fn with_servers<R: agent_client_protocol::JsonRpcResponse>(
        &self,
        session: Arc<HostedSession>,
        (servers, mut failures): (Vec<Result<dsh_tool_mcp::ServerConfig, String>>, Vec<String>),
        (responder, cx): (Responder<R>, ConnectionTo<Client>),
        answer: impl FnOnce(&HostedSession) -> Result<R, Error> + Send + 'static,
    ) -> Result<(), Error> {
        let acp_id = schema::SessionId::new(session.id().to_string());
        if servers.is_empty() && failures.is_empty() {
            match answer(&session) {
                Ok(answered) => responder.respond(answered)?,
                Err(error) => return responder.respond_with_error(error),
            }
            commands::announce(&cx, &self.inner.host, acp_id);
            return Ok(());
        }
        let host = Arc::clone(&self.inner.host);
        cx.clone().spawn(async move {
            failures.extend(session.start_servers(servers).await);
            match answer(&session) {
                Ok(answered) => responder.respond(answered)?,
                Err(error) => return responder.respond_with_error(error),
            }
            commands::announce(&cx, &host, acp_id.clone());
            if !failures.is_empty() {
                let notification =
                    schema::SessionNotification::new(acp_id, mcp::failure_update(&failures));
                // The connection is gone only when the client is.
                let _ = cx.send_notification(notification);
            }
            Ok(())
        })
    }

    /// `session/prompt`: starts the session's turn on a task of the
    /// connection, and returns at once; the task answers.
    fn prompt(
        &self,
        request: PromptRequest,
        responder: Responder<PromptResponse>,
        cx: ConnectionTo<Client>,
    ) -> Result<(), Error> {
        let read = self.session(&request.session_id).and_then(|session| {
            let input = prompt_text(&request.prompt, &session.dirs())?;
            Ok((session, input))
        });
        let (session, (text, images)) = match read {
            Ok(read) => read,
            Err(error) => return responder.respond_with_error(error),
        };
        // The turn is begun here, so that a `session/cancel` handled
        // before its task runs finds it.
        let cancel = CancellationToken::new();
        let running = match session.begin(&cancel) {
            Ok(running) => running,
            Err(busy) => {
                let busy = Error::new(ErrorCode::INVALID_REQUEST, busy.to_string());
                return responder.respond_with_error(busy);
            }
        };
        // `$/cancel_request` of the prompt cancels the turn too.
        let cancelled = responder.cancellation();
        cx.spawn(async move {
            let mut attached = Attachments {
                images,
                ..Attachments::default()
            };
            let turn = running.run(&text, &mut attached);
            tokio::pin!(turn);
            let result = loop {
                tokio::select! {
                    result = &mut turn => break result,
                    () = cancelled.cancelled(), if !cancel.is_cancelled() => cancel.cancel(),
                }
            };
            // stdout is the protocol's: the store's failure goes to stderr.
            if let Some(problem) = session.unrecorded() {
                crate::diagnostics::Reporter::for_stderr().report(&[problem]);
            }
            responder.respond_with_result(stop_reason(result, &cancel).map(PromptResponse::new))
        })
    }

    /// Sets session `id`'s config option `option` to `value` (the mode,
    /// the model, the effort), for its next turn; the session announces
    /// the options as they are now. Answers the options.
    fn steer(
        &self,
        id: &schema::SessionId,
        option: &str,
        value: &str,
    ) -> Result<Vec<schema::SessionConfigOption>, Error> {
        let session = self.session(id)?;
        let invalid = |message: String| Error::new(ErrorCode::INVALID_PARAMS, message);
        let knob = Knob::of(option).map_err(invalid)?;
        let steering = session.steer(knob, value).map_err(invalid)?;
        Ok(steering::config_options(&self.inner.host, &steering))
    }

    /// `session/set_config_option`: [`steer`](Self::steer) by a value id.
    fn set_option(
        &self,
        request: &SetSessionConfigOptionRequest,
    ) -> Result<SetSessionConfigOptionResponse, Error> {
        let value = request.value.as_value_id().ok_or_else(|| {
            Error::new(
                ErrorCode::INVALID_PARAMS,
                "dsh's config options take a value id, not a boolean",
            )
        })?;
        let option = request.config_id.0.to_string();
        self.steer(&request.session_id, &option, &value.0)
            .map(SetSessionConfigOptionResponse::new)
    }

    /// `session/cancel`: cancels the session's running turn, if any.
    fn cancel(&self, id: &schema::SessionId) {
        if let Ok(session) = self.session(id) {
            session.cancel();
        }
    }
}

/// A session that could not open, as the protocol's error.
fn open_error(error: OpenError) -> Error {
    match error {
        OpenError::NotFound(problem) => {
            Error::new(ErrorCode::RESOURCE_NOT_FOUND, problem.message())
        }
        OpenError::InUse(problem) => Error::new(ErrorCode::INVALID_REQUEST, problem.message()),
        OpenError::Failed(problems) => {
            let said: Vec<&str> = problems.iter().map(|problem| problem.message()).collect();
            Error::new(ErrorCode::INTERNAL_ERROR, said.join("; "))
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
        let capabilities = &request.client_capabilities;
        let elicitation = capabilities.elicitation.as_ref();
        let elicits = Elicits {
            form: elicitation.is_some_and(|elicits| elicits.supports_form()),
            url: elicitation.is_some_and(|elicits| elicits.supports_url()),
        };
        // The servers' elicitations the editor cannot show are declined.
        self.inner.opener.reach(Self::reach(elicits));
        let meta = capabilities.meta.as_ref();
        let terminal = meta.and_then(|meta| meta.get("terminal_output"));
        *self.inner.client.lock() = ClientFacts {
            name: (request.client_info.as_ref()).map_or_else(
                || system_prompt::UNNAMED_CLIENT.to_owned(),
                |client| client.name.clone(),
            ),
            fs: capabilities.fs.clone(),
            terminal: terminal == Some(&true.into()),
            shows: (capabilities.session.as_ref()).map_or((false, false), |session| {
                (session.notices.is_some(), session.compaction.is_some())
            }),
            elicits,
        };
        InitializeResponse::new(request.protocol_version)
            .agent_capabilities(
                sessions::capabilities(self.inner.host.recording())
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

/// The user's message of a prompt, by the host's rule
/// ([`attach::compose`]): its text blocks, embedded resources and links,
/// and its images. Audio needs a capability dsh does not advertise.
fn prompt_text(prompt: &[ContentBlock], dirs: &[PathBuf]) -> Result<(String, Vec<Image>), Error> {
    let invalid = |at: usize, why: String| {
        Error::new(
            ErrorCode::INVALID_PARAMS,
            format!("`prompt[{at}]` is {why}"),
        )
    };
    let mut parts = Vec::with_capacity(prompt.len());
    for (at, block) in prompt.iter().enumerate() {
        parts.push(match block {
            ContentBlock::Text(text) => PromptPart::Text(text.text.as_str().into()),
            ContentBlock::Image(image) => PromptPart::Image(Image {
                mime_type: image.mime_type.clone(),
                data: image.data.clone(),
            }),
            ContentBlock::ResourceLink(link) => PromptPart::Link {
                uri: &link.uri,
                name: &link.name,
            },
            ContentBlock::Resource(resource) => match &resource.resource {
                schema::EmbeddedResourceResource::TextResourceContents(text) => {
                    PromptPart::Embedded {
                        uri: &text.uri,
                        text: &text.text,
                    }
                }
                schema::EmbeddedResourceResource::BlobResourceContents(blob) => PromptPart::Blob {
                    uri: &blob.uri,
                    mime_type: blob.mime_type.as_deref(),
                    base64_len: blob.blob.len(),
                },
                _ => PromptPart::Text(
                    format!("`prompt[{at}]`: a resource of a kind dsh does not know").into(),
                ),
            },
            other => {
                let kind = (serde_json::to_value(other).ok())
                    .and_then(|value| value.get("type")?.as_str().map(str::to_owned))
                    .unwrap_or_else(|| "unknown".to_owned());
                return Err(invalid(
                    at,
                    format!(
                        "a `{kind}` block, which dsh does not accept; send `text`, `image`, \
                         `resource` or `resource_link` blocks"
                    ),
                ));
            }
        });
    }
    attach::compose(parts, dirs).map_err(|(at, why)| invalid(at, why))
}

/// How a turn ended, as ACP says it: a cancelled turn is `cancelled`
/// whatever failed underneath; an answer cut short or refused is
/// `max_tokens` or `refusal`; a turn that failed otherwise is an error
/// with the one line `dsh run` prints.
fn stop_reason(
    result: Result<Prompted, PromptError>,
    cancel: &CancellationToken,
) -> Result<StopReason, Error> {
    if cancel.is_cancelled() {
        return Ok(StopReason::Cancelled);
    }
    match result {
        Ok(Prompted::Turn(FinishReason::MaxTokens)) => Ok(StopReason::MaxTokens),
        Ok(Prompted::Turn(FinishReason::Refusal)) => Ok(StopReason::Refusal),
        Ok(_) => Ok(StopReason::EndTurn),
        Err(PromptError::Turn(TurnError::Cancelled)) => Ok(StopReason::Cancelled),
        Err(PromptError::Turn(TurnError::StepLimit { .. })) => Ok(StopReason::MaxTurnRequests),
        Err(PromptError::Busy(id)) => Err(Error::new(
            ErrorCode::INVALID_REQUEST,
            PromptError::Busy(id).to_string(),
        )),
        Err(error) => Err(Error::new(ErrorCode::INTERNAL_ERROR, error.to_string())),
    }
}

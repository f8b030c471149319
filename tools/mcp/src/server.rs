//! One running MCP server: started, its tools listed, its calls made, its
//! process stopped.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use dsh_agent_types::Image;
use dsh_system_prompt::ToolSchema;
use dsh_tools::{ToolError, ToolOutput, ToolProgress};
use nix::sys::signal::Signal;
use parking_lot::{Mutex, RwLock};
use rmcp::RoleClient;
use rmcp::model::{CallToolRequestParams, Resource, ResourceTemplate};
use rmcp::service::{Peer, RunningService, ServiceError};
use tokio_util::sync::CancellationToken;

use crate::connection::connect::{connect, introduced, is_modern, login_needed};
use crate::connection::process::ProcessGroup;
use crate::connection::spawn::process_exists;
use crate::questions::asker::{Callers, CallingGuard};
use crate::questions::client::{Handler, Roots};
use crate::resources::prompts::{
    PromptError, PromptList, ServerPrompt, arguments_object, render_messages,
};
use crate::tasks::LeftOut;
use crate::tools::call::call_tool_once;
use crate::tools::keeping::Shared;
use crate::tools::naming::ExposedName;
use crate::tools::print::ToolPrint;
use crate::tools::progress::CallProgress;
use crate::tools::render::render_result;
use crate::tools::section::InstructionsSection;
use crate::tools::tool_list::{Listed, list_tools};
use crate::tools::tool_set::ToolSet;
use crate::{McpError, ServerConfig};

/// How long a stopping server has to exit after its stdin closes, and
/// then after `SIGTERM`, before its group is killed.
const STOP_GRACE: Duration = Duration::from_millis(1500);

/// A running MCP server: its instructions, its tools as the model sees
/// them, and the connection its calls go through.
///
/// Dropping it kills its process group; [`shutdown`](Self::shutdown)
/// stops it gracefully first (stdin closed, then `SIGTERM`, then
/// `SIGKILL`).
pub struct McpServer {
    config: ServerConfig,
    shared: Arc<Shared>,
    peer: Peer<RoleClient>,
    service: Mutex<Option<RunningService<RoleClient, Handler>>>,
    instructions: Option<InstructionsSection>,
    server_info: Option<String>,
    started_in: Duration,
    group: Option<ProcessGroup>,
    pid: Option<u32>,
    /// The directories the server may work in (`roots/list`).
    roots: Roots,
    /// The sessions it works for, for its sampling and elicitation.
    callers: Callers,
    /// Ends the task that re-lists the tools (when the server stops, or
    /// is dropped).
    relisting: CancellationToken,
    /// The displays of the running calls, which the connection's handler
    /// reports the server's progress to.
    progress: Arc<CallProgress>,
    /// The connection's handler, which also answers the questions of a
    /// 2026-07-28 server's rounds (`input_required`).
    handler: Handler,
    /// The task that keeps a 2026-07-28 server's `subscriptions/listen`
    /// open; it ends the subscription once `relisting` is cancelled.
    listening: Mutex<Option<tokio::task::JoinHandle<()>>>,
}

impl McpServer {
    /// Starts the server `config` describes and lists its tools, within
    /// its startup timeout. `http` is the client HTTP servers are reached
    /// with (dsh's own, with its TLS set-up).
    ///
    /// A stdio server runs as the leader of a process group of its own;
    /// its stderr goes to dsh's, each line prefixed `[mcp <name>]`.
    pub async fn start(config: ServerConfig, http: &reqwest::Client) -> Result<Self, McpError> {
        let started = Instant::now();
        let shared = Arc::new(Shared {
            config: config.clone(),
            tools: RwLock::new(Arc::default()),
            generation: AtomicU64::new(0),
            announced: Arc::default(),
            handled: tokio::sync::watch::channel(0).0,
            resources: RwLock::new(None),
            templates: RwLock::new(Arc::default()),
            prompts: Arc::new(PromptList::new(
                &config.name,
                config.startup_timeout,
                config.output.clone(),
            )),
            task_only: Arc::default(),
            last: RwLock::new(Listed {
                tools: Vec::new(),
                ttl_ms: None,
            }),
            refused: Arc::default(),
        });
        let roots = Roots::new(config.roots());
        let deadline = tokio::time::Instant::now() + config.startup_timeout;
        let timeout = || McpError::StartupTimeout {
            server: config.name.clone(),
            origin: config.origin(),
            seconds: config.startup_timeout.as_secs_f64(),
        };
        let callers = Callers::default();
        let progress = Arc::new(CallProgress::default());
        let handler = Handler {
            roots: roots.clone(),
            prompts: Arc::clone(&shared.prompts),
            server: config.name.as_str().into(),
            asker: config.asker.clone(),
            callers: callers.clone(),
            progress: Arc::clone(&progress),
            log_level: config.log_level,
            output: config.output.clone(),
            sampling: Arc::new(crate::questions::sampling::SamplingGate::new(
                config.sampling,
            )),
        };
        let connect = connect(&config, &shared, handler.clone(), http);
        let (service, group, pid) = tokio::time::timeout_at(deadline, connect)
            .await
            .map_err(|_| timeout())??;
        let peer = service.peer();
        let info = peer.peer_info();
        let (instructions, server_info) = introduced(&config, info.as_deref());
        tokio::time::timeout_at(deadline, shared.first_lists(peer))
            .await
            .map_err(|_| timeout())??;
        let relisting = Shared::keep_current(&shared, peer);
        let listen = shared.listen_if_offered(peer, &relisting);
        let listening = tokio::time::timeout_at(deadline, listen)
            .await
            .ok()
            .flatten();
        Ok(Self {
            relisting,
            listening: Mutex::new(listening),
            handler,
            peer: peer.clone(),
            service: Mutex::new(Some(service)),
            config,
            shared,
            instructions,
            server_info,
            started_in: started.elapsed(),
            group,
            pid,
            roots,
            callers,
            progress,
        })
    }

    /// The server's configuration.
    pub fn config(&self) -> &ServerConfig {
        &self.config
    }

    /// The server's name.
    pub fn name(&self) -> &str {
        &self.config.name
    }

    /// The pid of a stdio server's process (the leader of its group).
    pub fn pid(&self) -> Option<u32> {
        self.pid
    }

    /// The server's own name and version, as its `initialize` said.
    pub fn server_info(&self) -> Option<&str> {
        self.server_info.as_deref()
    }

    /// How long the start took (spawn, `initialize`, `tools/list`).
    pub fn started_in(&self) -> Duration {
        self.started_in
    }

    /// The server's `instructions`, as its prompt section has them (cut
    /// at 4 KiB, with the marker), if it sent any.
    pub fn instructions(&self) -> Option<&str> {
        self.instructions
            .as_ref()
            .map(|section| section.text.as_str())
    }

    /// How many bytes of `instructions` the server sent (more than
    /// [`MAX_INSTRUCTIONS`](crate::MAX_INSTRUCTIONS) when they were cut),
    /// if it sent any.
    pub fn instructions_sent_bytes(&self) -> Option<usize> {
        self.instructions.as_ref().map(|section| section.sent_bytes)
    }

    /// The names of the server's prompts now: `None` when it has no
    /// prompts capability.
    pub fn prompt_names(&self) -> Option<Vec<String>> {
        let prompts = self.prompts()?;
        Some(prompts.iter().map(|prompt| prompt.name.clone()).collect())
    }

    /// The server's prompts now (as listed at its start, or since it said
    /// they changed): `None` when it has no prompts capability.
    pub fn prompts(&self) -> Option<Arc<[ServerPrompt]>> {
        self.shared.prompts.get()
    }

    /// The text of the server's prompt `prompt` with `arguments`
    /// (`prompts/get`, within the call timeout): its messages rendered
    /// as one person's turn (text as it is, other content described).
    /// `cancel` firing abandons the request, and the server is told. A
    /// prompt the server does not list, an error it answers, a timeout,
    /// a cancel and a dead server are each a [`PromptError`] naming the
    /// server and the prompt.
    pub async fn get_prompt(
        &self,
        prompt: &str,
        arguments: &std::collections::BTreeMap<String, String>,
        cancel: &CancellationToken,
    ) -> Result<String, PromptError> {
        let known = self.prompt_names().unwrap_or_default();
        if !known.iter().any(|name| name == prompt) {
            return Err(PromptError::UnknownPrompt {
                server: self.config.name.clone(),
                prompt: prompt.to_owned(),
                known,
            });
        }
        let failed = |message: String| PromptError::Failed {
            server: self.config.name.clone(),
            prompt: prompt.to_owned(),
            message,
        };
        if self.is_closed() {
            return Err(failed(self.gone()));
        }
        let params = rmcp::model::GetPromptRequestParams::new(prompt)
            .with_arguments(arguments_object(arguments));
        // Dropping the request (timeout, cancel) tells the server.
        let get = tokio::time::timeout(self.config.call_timeout, self.prompt_rounds(params));
        let outcome = tokio::select! {
            outcome = get => outcome,
            () = cancel.cancelled() => {
                return Err(PromptError::Cancelled {
                    server: self.config.name.clone(),
                    prompt: prompt.to_owned(),
                });
            }
        };
        match outcome {
            Ok(Ok(result)) => Ok(render_messages(&result)),
            Ok(Err(ServiceError::McpError(error))) => Err(failed(error.message.into_owned())),
            Ok(Err(ServiceError::TransportClosed | ServiceError::TransportSend(_))) => {
                Err(failed(self.gone()))
            }
            Ok(Err(error)) => Err(failed(error.to_string())),
            Err(_) => Err(failed(format!(
                "no answer within {} s (its `call_timeout_secs`)",
                self.config.call_timeout.as_secs_f64()
            ))),
        }
    }

    /// `prompts/get`, with the rounds a 2026-07-28 server asks for.
    async fn prompt_rounds(
        &self,
        params: rmcp::model::GetPromptRequestParams,
    ) -> Result<rmcp::model::GetPromptResult, ServiceError> {
        use crate::questions::mrtr::Round;
        use rmcp::model::GetPromptResponse;
        let peer = &self.peer;
        crate::questions::mrtr::drive(&self.handler, peer, params, |params| async move {
            match peer.get_prompt_once(params).await? {
                GetPromptResponse::Complete(result) => Ok(Round::Complete(result)),
                GetPromptResponse::InputRequired(asked) => Ok(Round::InputRequired(asked)),
                _ => Err(ServiceError::UnexpectedResponse),
            }
        })
        .await
    }

    /// The tools the server lists that the model does not see, each with
    /// why: not in the deployment's allow-list, or runnable only as a
    /// task.
    pub fn left_out(&self) -> Vec<(String, LeftOut)> {
        self.tool_set().left_out.clone()
    }

    pub(crate) fn instructions_section(&self) -> Option<&InstructionsSection> {
        self.instructions.as_ref()
    }

    /// The schemas of the server's (allowed) tools now, as the model sees
    /// them.
    pub fn tool_schemas(&self) -> Vec<Arc<ToolSchema>> {
        self.shared.tools.read().schemas.clone()
    }

    pub(crate) fn tool_set(&self) -> Arc<ToolSet> {
        Arc::clone(&self.shared.tools.read())
    }

    /// Whether a call of the tool the model knows as `exposed` asks a
    /// person first, by the server's [`McpApproval`](crate::McpApproval)
    /// and the tool's annotations; `None` when the server has no such
    /// tool.
    pub fn asks_first(&self, exposed: &str) -> Option<bool> {
        let set = self.tool_set();
        let tool = set.raw.get(exposed)?;
        Some(
            self.config
                .approval
                .asks(tool, set.read_only.contains(exposed)),
        )
    }

    /// What the tool the model knows as `exposed` says it is now (its
    /// description, schema and annotations); `None` when the server has
    /// no such tool.
    pub fn print(&self, exposed: &str) -> Option<ToolPrint> {
        self.tool_set().prints.get(exposed).cloned()
    }

    /// The title and kind of the calls of the tool the model knows as
    /// `exposed` (by its annotations); `None` when the server has no such
    /// tool.
    pub(crate) fn look(&self, exposed: &str) -> Option<crate::tools::annotations::Look> {
        self.tool_set().looks.get(exposed).cloned()
    }

    /// Tells `listener` the server's name whenever it says its prompts
    /// changed, once they are listed again.
    pub(crate) fn tell_prompt_changes(&self, listener: tokio::sync::broadcast::Sender<String>) {
        self.shared.prompts.tell(listener);
    }

    /// Notes the call `call` of session `session` to the server until the guard
    /// drops: a sampling or elicitation request meanwhile is that
    /// session's, and withdrawn when `cancel` fires.
    pub(crate) fn calling(
        &self,
        session: &str,
        call: &str,
        cancel: &CancellationToken,
    ) -> CallingGuard {
        self.callers.calling(session, call, cancel)
    }

    /// Makes the server session `session`'s own: its requests outside
    /// any call are that session's.
    pub(crate) fn belongs_to(&self, session: &str) {
        self.callers.set_home(session);
    }

    /// The directories the server may work in now (`roots/list`).
    pub fn roots(&self) -> Vec<std::path::PathBuf> {
        self.roots.dirs()
    }

    /// Puts `dirs` in place of the server's roots and, when they changed,
    /// tells the server (`notifications/roots/list_changed`). Returns
    /// whether they changed.
    pub async fn set_roots(&self, dirs: Vec<std::path::PathBuf>) -> bool {
        if !self.roots.replace(dirs) {
            return false;
        }
        // A server gone cannot be told; its calls say it is gone. One of
        // 2026-07-28 is not told: it asks for them in a call's round.
        if !is_modern(&self.peer) {
            let _ = Roots::announce(&self.peer).await;
        }
        true
    }

    /// The server's resources, as listed at its start: `None` when it has
    /// no resources capability.
    pub fn resources(&self) -> Option<Vec<Resource>> {
        (self.shared.resources.read().as_deref()).map(<[Resource]>::to_vec)
    }

    /// The server's resource templates (`recipe://{name}`), as listed at
    /// its start: the reader's description shows them.
    pub fn resource_templates(&self) -> Vec<ResourceTemplate> {
        self.shared.templates.read().to_vec()
    }

    /// The exposed name of the tool that reads the server's resources
    /// (`<server>__read_resource`), when the model has one.
    pub fn resource_reader(&self) -> Option<String> {
        self.tool_set().reader.clone()
    }

    /// Every tool's exposed name, with the fix applied to it, if any.
    pub fn exposed_names(&self) -> Vec<ExposedName> {
        self.shared.tools.read().names.clone()
    }

    /// Names the deployment's `tools` allow-list gives that the server does
    /// not have.
    pub fn unknown_allowed_tools(&self) -> Vec<String> {
        self.shared.tools.read().unknown_allowed.clone()
    }

    /// The server's own name of every tool it lists, whether the
    /// deployment's allow-list lets the model see it or not, in the
    /// server's order: what an allow-list may name.
    pub fn listed_tools(&self) -> Vec<String> {
        self.shared.tools.read().listed.clone()
    }

    /// How many tool lists the server has sent: 1 after the start, one
    /// more for each `notifications/tools/list_changed` read.
    pub fn tool_list_generation(&self) -> u64 {
        self.shared.generation.load(Ordering::SeqCst)
    }

    /// The protocol version the connection speaks: `2026-07-28` with a
    /// server that answers `server/discover` with it, else the one
    /// `initialize` agreed (`2025-11-25` for servers of today).
    pub fn protocol_version(&self) -> Option<String> {
        (self.peer.peer_info()).map(|info| info.protocol_version.to_string())
    }

    /// Reads the server's tools again where its last list is past its
    /// `ttlMs` (MCP 2026-07-28), and puts a list that differs in place:
    /// within the time rmcp's cache answers, and the server is not asked.
    /// A list without a `ttlMs`, or with `0` (nothing promised), is kept
    /// current by the server's `list_changed` alone. Whether the tools
    /// changed; a list that fails is said, and the tools stay as they
    /// were.
    pub async fn refresh_tools(&self) -> bool {
        let ttl_ms = self.shared.last.read().ttl_ms;
        if ttl_ms.is_none_or(|ttl_ms| ttl_ms == 0) || self.is_closed() {
            return false;
        }
        let covered = self.shared.announced.count();
        let listed = tokio::time::timeout(self.config.startup_timeout, list_tools(&self.peer));
        let (name, output) = (&self.config.name, &self.config.output);
        match listed.await {
            Ok(Ok(listed)) => {
                // The same tools keep the `ttlMs` they came with: rmcp's
                // cache answers with the time left, down to 0.
                let same = self.shared.last.read().tools == listed.tools;
                if !same {
                    self.shared.listed(listed, covered);
                }
                !same
            }
            Ok(Err(error)) => {
                output.failed(
                    name,
                    format!("its tool list went stale, and could not be read again: {error}"),
                );
                false
            }
            Err(_) => {
                output.failed(
                    name,
                    "its tool list went stale, and listing it again timed out",
                );
                false
            }
        }
    }

    /// The names of the server's tools as it lists them now, asked of the
    /// server itself (rmcp's cache is passed by): what `dsh check`
    /// compares with the list of the start, to find a server whose order
    /// changes from one list to the next.
    pub async fn list_again(&self) -> Result<Vec<String>, String> {
        self.peer.clear_response_cache().await;
        let listed = tokio::time::timeout(self.config.startup_timeout, list_tools(&self.peer));
        match listed.await {
            Ok(Ok(listed)) => Ok((listed.tools.iter())
                .map(|tool| tool.name.to_string())
                .collect()),
            Ok(Err(error)) => Err(error.to_string()),
            Err(_) => Err(format!(
                "no answer within {} s (its `startup_timeout_secs`)",
                self.config.startup_timeout.as_secs_f64()
            )),
        }
    }

    /// Whether the connection is gone (the process exited, the HTTP
    /// session ended).
    pub fn is_closed(&self) -> bool {
        // `RunningService::is_closed` stays false after the transport
        // died; the peer's channel does not.
        self.peer.is_transport_closed()
    }

    /// Calls the tool the model knows as `exposed`, within the call
    /// timeout; `cancel` firing abandons the call, and the server is told
    /// (`notifications/cancelled`). A result the server marks `isError`, a
    /// dead server, a timeout and a protocol error are all a
    /// [`ToolError::Failed`] naming the server.
    pub async fn call(
        &self,
        exposed: &str,
        arguments: serde_json::Value,
        cancel: &CancellationToken,
    ) -> Result<ToolOutput, ToolError> {
        self.call_reporting(exposed, arguments, cancel, None).await
    }

    /// [`call`](Self::call), with what the server says of the call's
    /// progress (`notifications/progress`) reported to `progress` as it
    /// comes: its message and how far along (`step 2 of 3 (2/3)`).
    pub async fn call_reporting(
        &self,
        exposed: &str,
        arguments: serde_json::Value,
        cancel: &CancellationToken,
        progress: Option<&ToolProgress>,
    ) -> Result<ToolOutput, ToolError> {
        let failed = |message: String| ToolError::Failed {
            tool: exposed.to_owned(),
            message,
        };
        let set = self.tool_set();
        let Some(raw) = set.raw.get(exposed).cloned() else {
            return Err(failed(format!(
                "MCP server `{}` no longer has this tool",
                self.config.name
            )));
        };
        if self.is_closed() {
            return Err(failed(self.gone()));
        }
        if set.reader.as_deref() == Some(exposed) {
            return self.read_resource(exposed, &arguments, cancel).await;
        }
        let mut params = CallToolRequestParams::new(raw);
        if let serde_json::Value::Object(arguments) = arguments {
            params = params.with_arguments(arguments);
        }
        // Dropping the request future (timeout, cancel) sends
        // `notifications/cancelled` to the server.
        let call = crate::questions::mrtr::drive(&self.handler, &self.peer, params, |params| {
            call_tool_once(&self.peer, params, |token| {
                self.progress.watch(token.clone(), progress.cloned())
            })
        });
        let call = tokio::time::timeout(self.config.call_timeout, call);
        let outcome = tokio::select! {
            outcome = call => outcome,
            () = cancel.cancelled() => return Err(ToolError::cancelled(exposed)),
        };
        self.tool_list_settled().await;
        match outcome {
            Err(_) => Err(failed(format!(
                "MCP server `{}` ({}) did not answer within {} s (its `call_timeout_secs`); \
                 the call was cancelled",
                self.config.name,
                self.config.origin(),
                self.config.call_timeout.as_secs_f64()
            ))),
            Ok(Err(ServiceError::TransportClosed | ServiceError::TransportSend(_))) => {
                Err(failed(self.gone()))
            }
            Ok(Err(ServiceError::McpError(error))) => Err(failed(format!(
                "MCP server `{}` answered with an error: {}",
                self.config.name, error.message
            ))),
            Ok(Err(_)) if self.shared.refused.load(Ordering::SeqCst) => Err(failed(self.gone())),
            Ok(Err(error)) => Err(failed(format!(
                "MCP server `{}`: {error}",
                self.config.name
            ))),
            Ok(Ok(result)) => {
                let mut rendered = render_result(&result, set.reader.as_deref());
                if rendered.is_error {
                    // A failure is its text: an image of it is described.
                    let text = Image::described_after(&rendered.text, &rendered.images);
                    return Err(failed(text.into_owned()));
                }
                if let Some(schema) = set.outputs.get(exposed)
                    && let Some(note) = crate::tools::render::schema_note(schema, &result)
                {
                    rendered.text = format!("{}\n{note}", rendered.text);
                }
                Ok(ToolOutput::new(rendered.text).with_images(rendered.images))
            }
        }
    }

    /// A call of the resource reader `exposed`: reads the resource its
    /// `uri` names, within the call timeout.
    async fn read_resource(
        &self,
        exposed: &str,
        arguments: &serde_json::Value,
        cancel: &CancellationToken,
    ) -> Result<ToolOutput, ToolError> {
        let failed = |message: String| ToolError::Failed {
            tool: exposed.to_owned(),
            message,
        };
        let uri = crate::resources::read::uri_argument(arguments).map_err(failed)?;
        let read = crate::resources::read::read(&self.handler, &self.peer, &uri);
        let outcome = tokio::select! {
            outcome = tokio::time::timeout(self.config.call_timeout, read) => outcome,
            () = cancel.cancelled() => return Err(ToolError::cancelled(exposed)),
        };
        match outcome {
            Ok(Ok(text)) => Ok(ToolOutput::new(text)),
            Ok(Err(ServiceError::McpError(error))) => Err(failed(format!(
                "MCP server `{}` could not read `{uri}`: {}",
                self.config.name, error.message
            ))),
            Ok(Err(ServiceError::TransportClosed | ServiceError::TransportSend(_))) => {
                Err(failed(self.gone()))
            }
            Ok(Err(error)) => Err(failed(format!(
                "MCP server `{}` could not read `{uri}`: {error}",
                self.config.name
            ))),
            Err(_) => Err(failed(format!(
                "MCP server `{}` ({}) did not answer within {} s (its `call_timeout_secs`)",
                self.config.name,
                self.config.origin(),
                self.config.call_timeout.as_secs_f64()
            ))),
        }
    }

    /// Waits until every `list_changed` notification read so far has been
    /// handled (bounded by the startup timeout): a call that changed the
    /// server's tools returns after the new list is in place.
    async fn tool_list_settled(&self) {
        let announced = self.shared.announced.count();
        let mut handled = self.shared.handled.subscribe();
        let settled = handled.wait_for(|handled| *handled >= announced);
        let _ = tokio::time::timeout(self.config.startup_timeout, settled).await;
    }

    fn gone(&self) -> String {
        if self.shared.refused.load(Ordering::SeqCst) {
            let logged_in = self.config.logins.is_some();
            return login_needed(&self.config, logged_in).to_string();
        }
        format!(
            "MCP server `{}` ({}) is not running: it exited or closed its connection",
            self.config.name,
            self.config.origin()
        )
    }

    /// Stops the server: closes the connection (a stdio server's stdin),
    /// waits a moment, sends its process group `SIGTERM`, waits a moment,
    /// and kills the group. Bounded: at most about three seconds.
    pub async fn shutdown(&self) {
        self.relisting.cancel();
        // The server is told the subscription ended before the connection
        // closes: it waits for its open requests before it exits.
        let listening = self.listening.lock().take();
        if let Some(listening) = listening {
            let _ = tokio::time::timeout(STOP_GRACE, listening).await;
        }
        let service = self.service.lock().take();
        if let Some(mut service) = service {
            let _ = service.close_with_timeout(STOP_GRACE).await;
        }
        if let Some(group) = &self.group {
            group.signal(Signal::SIGTERM);
            let exited = async {
                while self.pid.is_some_and(process_exists) {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            };
            let _ = tokio::time::timeout(STOP_GRACE, exited).await;
            group.signal(Signal::SIGKILL);
        }
    }
}

impl Drop for McpServer {
    fn drop(&mut self) {
        self.relisting.cancel();
    }
}

impl std::fmt::Debug for McpServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpServer")
            .field("name", &self.config.name)
            .field("origin", &self.config.origin())
            .field("pid", &self.pid)
            .finish_non_exhaustive()
    }
}

//! One running MCP server: started, its tools listed, its calls made, its
//! process stopped.

use std::collections::HashMap;
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use dsh_agent_types::Image;
use dsh_sandbox::Sandbox;
use dsh_system_prompt::ToolSchema;
use dsh_tools::{ToolError, ToolOutput, ToolProgress};
use nix::sys::signal::Signal;
use parking_lot::{Mutex, RwLock};
use rmcp::model::ProtocolVersion;
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResult, CancelledNotificationParam,
    ClientRequest, RequestId, Resource, ResourceTemplate, ServerResult,
};
use rmcp::service::{ClientCacheConfig, Peer, PeerRequestOptions, RunningService, ServiceError};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientLifecycleMode, ClientServiceExt, RoleClient};
use tokio_util::sync::CancellationToken;

use crate::annotations::Look;
use crate::asker::{Callers, CallingGuard};
use crate::client::{Handler, Roots};
use crate::naming::{ExposedName, exposed_names};
use crate::print::ToolPrint;
use crate::process::{ProcessGroup, StdioTransport};
use crate::progress::CallProgress;
use crate::prompts::{
    PromptError, PromptList, ServerPrompt, arguments_object, list_prompts, render_messages,
};
use crate::render::render_result;
use crate::resources::{READ_RESOURCE, list_resources, list_templates, reader_schema};
use crate::section::{InstructionsSection, instructions_section};
use crate::tasks::{LeftOut, TappedHttp, TaskOnly};
use crate::tool_list::{Listed, MIN_RELIST_INTERVAL, list_tools};
use crate::watched::{Announcements, Watched};
use crate::{McpError, ServerConfig, Transport};

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

/// What the server's tools are now; replaced whole when the server says
/// its list changed.
#[derive(Debug, Default)]
pub(crate) struct ToolSet {
    /// The schemas the model sees, in the server's order.
    pub(crate) schemas: Vec<Arc<ToolSchema>>,
    /// Exposed name → the server's name.
    pub(crate) raw: HashMap<String, String>,
    /// Every exposed name, with its fix.
    pub(crate) names: Vec<ExposedName>,
    /// Names in `allowed_tools` the server does not have.
    pub(crate) unknown_allowed: Vec<String>,
    /// The exposed names of the tools whose annotations say
    /// `readOnlyHint: true`.
    pub(crate) read_only: std::collections::HashSet<String>,
    /// The name of every tool the server listed, allowed or not, in its
    /// order.
    pub(crate) listed: Vec<String>,
    /// Exposed name → the tool's `outputSchema`, compiled (or why it does
    /// not compile), for the tools that declare one.
    pub(crate) outputs: HashMap<String, Result<Arc<jsonschema::Validator>, String>>,
    /// Exposed name → how a front end shows its calls (title, kind).
    pub(crate) looks: HashMap<String, Look>,
    /// Exposed name → what the tool says it is ([`ToolPrint`]).
    pub(crate) prints: HashMap<String, ToolPrint>,
    /// The exposed name of the tool that reads the server's resources
    /// (`<server>__read_resource`), for a server that has resources.
    pub(crate) reader: Option<String>,
    /// The tools it listed that the model does not see, each with why.
    pub(crate) left_out: Vec<(String, LeftOut)>,
}

impl ToolSet {
    /// The tools of `server` as the model sees them: those it `listed`
    /// that its allow-list lets through, and, when it has `resources`
    /// (`None`: it has no resources capability), the tool that reads them
    /// and its resource `templates`, last. A tool in `task_only` is left
    /// out.
    fn new(
        server: &ServerConfig,
        listed: Vec<rmcp::model::Tool>,
        (resources, templates): (Option<&[Resource]>, &[ResourceTemplate]),
        task_only: &std::collections::HashSet<String>,
    ) -> Self {
        let listed_names = listed.iter().map(|tool| tool.name.to_string()).collect();
        let (tools, left_out) = kept(listed, |name| {
            if !server.allows(name) {
                Some(LeftOut::NotAllowed)
            } else if task_only.contains(name) {
                Some(LeftOut::TaskOnly)
            } else {
                None
            }
        });
        let resources = resources.filter(|_| server.allows(READ_RESOURCE));
        let mut raw_names: Vec<String> = tools.iter().map(|tool| tool.name.to_string()).collect();
        if resources.is_some() {
            raw_names.push(READ_RESOURCE.to_owned());
        }
        let names = exposed_names(&server.name, raw_names);
        let mut schemas: Vec<Arc<ToolSchema>> = tools
            .iter()
            .zip(&names)
            .map(|(tool, name)| {
                Arc::new(ToolSchema::new(
                    name.exposed.clone(),
                    tool.description.as_deref().unwrap_or_default(),
                    serde_json::Value::Object((*tool.input_schema).clone()),
                ))
            })
            .collect();
        let mut looks: HashMap<String, Look> = tools
            .iter()
            .zip(&names)
            .map(|(tool, name)| (name.exposed.clone(), Look::of(tool)))
            .collect();
        let mut prints = prints_of(&tools, &names, &schemas);
        let outputs = output_validators(&tools, &names);
        let reader = resources
            .zip(names.get(tools.len()))
            .map(|(resources, name)| {
                let schema = reader_schema(&server.name, &name.exposed, resources, templates);
                let print = ToolPrint::new(&schema.description, &schema.parameters, None);
                prints.insert(name.exposed.clone(), print);
                schemas.push(schema);
                looks.insert(name.exposed.clone(), Look::reader());
                name.exposed.clone()
            });
        let raw = names
            .iter()
            .map(|name| (name.exposed.clone(), name.tool.clone()))
            .collect();
        let read_only = looks
            .iter()
            .filter(|(_, look)| look.reads_only)
            .map(|(exposed, _)| exposed.clone())
            .collect();
        let unknown_allowed = server
            .allowed_tools
            .iter()
            .flatten()
            .filter(|allowed| !names.iter().any(|name| &name.tool == *allowed))
            .cloned()
            .collect();
        Self {
            schemas,
            raw,
            names,
            unknown_allowed,
            read_only,
            listed: listed_names,
            outputs,
            looks,
            prints,
            reader,
            left_out,
        }
    }
}

/// What each of `tools` says it is, by its exposed name (`names` and
/// `schemas`, in `tools`' order).
fn prints_of(
    tools: &[rmcp::model::Tool],
    names: &[ExposedName],
    schemas: &[Arc<ToolSchema>],
) -> HashMap<String, ToolPrint> {
    (tools.iter().zip(names).zip(schemas))
        .map(|((tool, name), schema)| {
            let print = ToolPrint::new(&schema.description, &schema.parameters, Some(tool));
            (name.exposed.clone(), print)
        })
        .collect()
}

/// Each tool's `outputSchema`, compiled (or why it does not compile), by
/// its exposed name (`names`, in `tools`' order).
fn output_validators(
    tools: &[rmcp::model::Tool],
    names: &[ExposedName],
) -> HashMap<String, Result<Arc<jsonschema::Validator>, String>> {
    (tools.iter().zip(names))
        .filter_map(|(tool, name)| {
            let schema = serde_json::Value::Object((**tool.output_schema.as_ref()?).clone());
            let compiled = jsonschema::validator_for(&schema)
                .map(Arc::new)
                .map_err(|error| error.to_string());
            Some((name.exposed.clone(), compiled))
        })
        .collect()
}

/// The tools of `listed` that `left_out` finds no reason to leave out, and
/// those it does, each with its reason.
fn kept(
    listed: Vec<rmcp::model::Tool>,
    left_out: impl Fn(&str) -> Option<LeftOut>,
) -> (Vec<rmcp::model::Tool>, Vec<(String, LeftOut)>) {
    let mut out = Vec::new();
    let kept = (listed.into_iter())
        .filter(|tool| match left_out(&tool.name) {
            Some(why) => {
                out.push((tool.name.to_string(), why));
                false
            }
            None => true,
        })
        .collect();
    (kept, out)
}

/// What the server and the task that keeps its tools current share.
pub(crate) struct Shared {
    config: ServerConfig,
    pub(crate) tools: RwLock<Arc<ToolSet>>,
    /// Counts the tool lists received: the first is 1.
    pub(crate) generation: AtomicU64,
    /// The `list_changed` notifications read off the transport, which
    /// shares them (`Watched`).
    announced: Arc<Announcements>,
    /// How many of those the tools have been read again since (or
    /// failed to be): a call waits for it to reach `announced`.
    handled: tokio::sync::watch::Sender<u64>,
    /// The server's resources, as listed at its start; `None` when it
    /// has no resources capability.
    resources: RwLock<Option<Arc<[Resource]>>>,
    /// Its resource templates (`recipe://{name}`), as listed at its start:
    /// the reader's description shows them.
    templates: RwLock<Arc<[ResourceTemplate]>>,
    /// Its prompts, as listed at its start and again on
    /// `notifications/prompts/list_changed`; `None` when it has no
    /// prompts capability.
    pub(crate) prompts: Arc<PromptList>,
    /// The tools it runs only as tasks, as read off a stdio server's
    /// answers (`tasks`): left out of its tool set.
    task_only: Arc<TaskOnly>,
    /// The last list read, as the server sent it, and how long it stays
    /// fresh (`ttlMs`).
    last: RwLock<Listed>,
    /// Set when the server (over HTTP) answers 401 after all: it wants a
    /// login, or a new one (`TappedHttp`).
    refused: Arc<AtomicBool>,
}

impl Shared {
    /// Puts a list read in place: the tools as the model sees them now,
    /// read after `covered` notifications.
    fn listed(&self, listed: Listed, covered: u64) {
        let resources = self.resources.read().clone();
        let templates = Arc::clone(&self.templates.read());
        let task_only = self.task_only.names();
        *self.tools.write() = Arc::new(ToolSet::new(
            &self.config,
            listed.tools.clone(),
            (resources.as_deref(), &templates),
            &task_only,
        ));
        *self.last.write() = listed;
        self.generation.fetch_add(1, Ordering::SeqCst);
        self.handled
            .send_modify(|handled| *handled = (*handled).max(covered));
    }

    /// Starts the task that keeps the server's tools current
    /// ([`keep_tools_current`](Self::keep_tools_current)); cancelling the
    /// token ends it.
    fn keep_current(shared: &Arc<Self>, peer: &Peer<RoleClient>) -> CancellationToken {
        let stop = CancellationToken::new();
        let (shared, peer, token) = (Arc::clone(shared), peer.clone(), stop.clone());
        tokio::spawn(async move { shared.keep_tools_current(peer, token).await });
        stop
    }

    /// Reads the tools again whenever the server said they changed, until
    /// `stop`: one list at a time (notifications meanwhile make one more,
    /// no more), and at most one every [`MIN_RELIST_INTERVAL`], so a server
    /// that announces without pause costs dsh little. A list that fails
    /// leaves the tools as they were, and says so.
    async fn keep_tools_current(&self, peer: Peer<RoleClient>, stop: CancellationToken) {
        let (name, output) = (&self.config.name, &self.config.output);
        loop {
            tokio::select! {
                () = self.announced.changed() => {}
                () = stop.cancelled() => return,
            }
            let covered = self.announced.count();
            // The notification went no further than `Watched`: rmcp's
            // cache still has the list it changed, fresh or not.
            peer.clear_response_cache().await;
            match tokio::time::timeout(self.config.startup_timeout, list_tools(&peer)).await {
                Ok(Ok(tools)) => self.listed(tools, covered),
                Ok(Err(error)) => output.failed(
                    name,
                    format!("its tool list changed, but could not be read again: {error}"),
                ),
                Err(_) => output.failed(
                    name,
                    "its tool list changed, but listing it again timed out",
                ),
            }
            self.handled
                .send_modify(|handled| *handled = (*handled).max(covered));
            tokio::select! {
                () = tokio::time::sleep(MIN_RELIST_INTERVAL) => {}
                () = stop.cancelled() => return,
            }
        }
    }
}

impl Shared {
    /// What is listed at the start, within the caller's deadline: the
    /// log level asked for (2025-11-25, where the server has logging),
    /// its resources and prompts, then its tools.
    async fn first_lists(&self, peer: &Peer<RoleClient>) -> Result<(), McpError> {
        let config = &self.config;
        // rmcp keeps lists for their `ttlMs`; one that could not be read
        // again is an error, never the old list passed off as new.
        let cache = ClientCacheConfig::default().with_serve_stale_on_error(false);
        peer.set_response_cache_config(cache).await;
        let covered = self.announced.count();
        let logging = (peer.peer_info()).is_some_and(|info| info.capabilities.logging.is_some());
        // 2026-07-28 has no `logging/setLevel`: dsh shows a server's
        // messages at its level all the same (`log_line`).
        if logging && !is_modern(peer) {
            set_log_level(config, peer).await;
        }
        let (resources, templates, prompts) = listed_beside_tools(config, peer).await;
        *self.resources.write() = resources;
        *self.templates.write() = templates;
        self.prompts.set(prompts);
        let listed = list_tools(peer)
            .await
            .map_err(|error| error.at_start(config))?;
        self.listed(listed, covered);
        Ok(())
    }
}

impl Shared {
    /// Opens `subscriptions/listen` to a 2026-07-28 server that offers
    /// to say its lists changed, kept until `stop`; the task that keeps
    /// it.
    async fn listen_if_offered(
        &self,
        peer: &Peer<RoleClient>,
        stop: &CancellationToken,
    ) -> Option<tokio::task::JoinHandle<()>> {
        let filter = crate::listen::offered(peer).filter(|_| is_modern(peer))?;
        let config = &self.config;
        crate::listen::listen(
            peer,
            filter,
            (Arc::clone(&self.prompts), stop.clone()),
            (&config.name, &config.output),
        )
        .await
    }
}

/// Whether the connection speaks MCP 2026-07-28 or later (no
/// `initialize`: version and capabilities in each request's `_meta`).
fn is_modern(peer: &Peer<RoleClient>) -> bool {
    (peer.peer_info()).is_some_and(|info| !info.protocol_version.has_initialize())
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
            sampling: Arc::new(crate::sampling::SamplingGate::new(config.sampling)),
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
        use crate::mrtr::Round;
        use rmcp::model::GetPromptResponse;
        let peer = &self.peer;
        crate::mrtr::drive(&self.handler, peer, params, |params| async move {
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
    pub(crate) fn look(&self, exposed: &str) -> Option<crate::annotations::Look> {
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
        let call = crate::mrtr::drive(&self.handler, &self.peer, params, |params| {
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
                    && let Some(note) = crate::render::schema_note(schema, &result)
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
        let uri = crate::resources::uri_argument(arguments).map_err(failed)?;
        let read = crate::resources::read(&self.handler, &self.peer, &uri);
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

/// Whether the process `pid` exists (and is not a zombie we reaped).
fn process_exists(pid: u32) -> bool {
    i32::try_from(pid)
        .is_ok_and(|pid| nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None).is_ok())
}

type Spawned = (StdioTransport, Option<ProcessGroup>, Option<u32>);

/// One round of `tools/call`, as rmcp's `Peer::call_tool_once` sends it,
/// but with the request's progress token handed to `watch` (whose guard
/// is kept while the round runs): rmcp chooses the token and tells it
/// only on this path. Dropping the future before the answer tells the
/// server (`notifications/cancelled`), as `Peer::call_tool_once` does.
async fn call_tool_once<W>(
    peer: &Peer<RoleClient>,
    params: CallToolRequestParams,
    watch: impl FnOnce(&rmcp::model::ProgressToken) -> W,
) -> Result<crate::mrtr::Round<CallToolResult>, ServiceError> {
    use crate::mrtr::Round;
    let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
    let handle = peer
        .send_request_with_option(request, PeerRequestOptions::no_options())
        .await?;
    let _watching = watch(&handle.progress_token);
    let mut abandoned = Abandoned {
        peer: peer.clone(),
        id: Some(handle.id.clone()),
    };
    let answer = handle.await_response().await;
    abandoned.id = None;
    match answer? {
        ServerResult::CallToolResult(result) => Ok(Round::Complete(result)),
        ServerResult::InputRequiredResult(asked) => Ok(Round::InputRequired(asked)),
        other => contentless(other)
            .map(Round::Complete)
            .ok_or(ServiceError::UnexpectedResponse),
    }
}

/// A `tools/call` answer without `content`, which rmcp's untagged
/// [`ServerResult`] reads as another kind: an empty result, a `_meta`
/// alone, a task's acknowledgement (`resultType: "complete"`) — an empty
/// success, as rmcp's own `call_tool_once` takes them (its private
/// `contentless_call_tool_result`, rmcp 3.11).
fn contentless(result: ServerResult) -> Option<CallToolResult> {
    #[derive(serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct MetaOnly {
        #[serde(rename = "_meta")]
        meta: rmcp::model::MetaObject,
    }
    let (result_type, meta) = match result {
        ServerResult::EmptyResult(_) => (None, None),
        ServerResult::TaskAckResult(ack) => (Some(ack.result_type), ack.meta),
        ServerResult::CustomResult(custom) => {
            let MetaOnly { meta } = serde_json::from_value(custom.0).ok()?;
            (None, Some(meta))
        }
        _ => return None,
    };
    let mut empty = CallToolResult::success(Vec::new());
    empty.result_type = result_type;
    empty.meta = meta;
    Some(empty)
}

/// A request whose answer is no longer awaited: dropped with an id, it
/// tells the server the request was cancelled.
struct Abandoned {
    peer: Peer<RoleClient>,
    id: Option<RequestId>,
}

impl Drop for Abandoned {
    fn drop(&mut self) {
        let Some(id) = self.id.take() else { return };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let peer = self.peer.clone();
        let reason = "request abandoned by the caller".to_owned();
        runtime.spawn(async move {
            let params = CancelledNotificationParam::new(Some(id), Some(reason));
            let _ = peer.notify_cancelled(params).await;
        });
    }
}

/// Asks a server with the logging capability for the log messages its
/// table's `log_level` shows (`logging/setLevel`); one that refuses is
/// said, and its messages below the level are still not shown.
#[allow(
    deprecated,
    reason = "rmcp marks logging deprecated (SEP-2577); 2025-11-25 has it"
)]
async fn set_log_level(config: &ServerConfig, peer: &Peer<RoleClient>) {
    let params = rmcp::model::SetLevelRequestParams::new(config.log_level.protocol());
    if let Err(error) = peer.set_level(params).await {
        config.output.failed(
            &config.name,
            format!("it refused the log level `logging/setLevel` asked for: {error}"),
        );
    }
}

/// What a server has beside its tools, as listed at its start: its
/// resources (`None` when it lacks the capability) and resource
/// templates, and the names of its prompts (`None` likewise). A list that
/// fails is said, and taken as empty: the server's tools work without it.
async fn listed_beside_tools(
    config: &ServerConfig,
    peer: &Peer<RoleClient>,
) -> (
    Option<Arc<[Resource]>>,
    Arc<[ResourceTemplate]>,
    Option<Arc<[ServerPrompt]>>,
) {
    let info = peer.peer_info();
    let capabilities = info.as_ref().map(|info| &info.capabilities);
    let failed = |what: &str, error: ServiceError| {
        config.output.failed(
            &config.name,
            format!("its {what} could not be listed: {error}"),
        );
    };
    let (resources, templates) = match capabilities.and_then(|c| c.resources.as_ref()) {
        None => (None, Arc::default()),
        Some(_) => {
            let resources = list_resources(peer).await.unwrap_or_else(|error| {
                failed("resources", error);
                Vec::new()
            });
            let templates = list_templates(peer).await.unwrap_or_else(|error| {
                failed("resource templates", error);
                Vec::new()
            });
            (Some(resources.into()), templates.into())
        }
    };
    let prompts = match capabilities.and_then(|c| c.prompts.as_ref()) {
        None => None,
        Some(_) => Some(match list_prompts(peer).await {
            Ok(prompts) => prompts.into(),
            Err(error) => {
                failed("prompts", error);
                Arc::default()
            }
        }),
    };
    (resources, templates, prompts)
}

/// A server connected: its process started (a stdio server's), and the
/// `initialize` handshake done. Unbounded: the caller sets the deadline
/// (dropping the future kills the process).
async fn connect(
    config: &ServerConfig,
    shared: &Shared,
    handler: Handler,
    http: &reqwest::Client,
) -> Result<
    (
        RunningService<RoleClient, Handler>,
        Option<ProcessGroup>,
        Option<u32>,
    ),
    McpError,
> {
    let handshake = |error: String| McpError::Handshake {
        server: config.name.clone(),
        origin: config.origin(),
        message: error,
    };
    match &config.transport {
        Transport::Stdio { .. } => {
            let child = Child::of(&config.transport);
            let (transport, group, pid) = spawn(config, &child, &shared.task_only)?;
            let transport = Watched {
                inner: transport,
                announced: Arc::clone(&shared.announced),
            };
            let service = handler
                .serve_with_lifecycle(transport, lifecycle())
                .await
                .map_err(|error| handshake(error.to_string()))?;
            Ok((service, group, pid))
        }
        Transport::Http {
            url,
            headers,
            bearer_token,
        } => {
            // A login is used only when no token is configured.
            let manager = match &config.logins {
                Some(logins) if bearer_token.is_none() => {
                    (crate::auth::authorized(config, url, logins).await)
                        .map_err(|error| handshake(error.to_string()))?
                }
                _ => None,
            };
            let logged_in = manager.is_some();
            let transport = http_config(config, url, headers, bearer_token)?;
            let served = match manager {
                Some(manager) => {
                    let client = rmcp::transport::AuthClient::new(http.clone(), manager);
                    serve_http(handler, shared, client, transport).await
                }
                None => serve_http(handler, shared, http.clone(), transport).await,
            };
            let service = served.map_err(|error| {
                if shared.refused.load(Ordering::SeqCst) {
                    login_needed(config, logged_in)
                } else {
                    handshake(crate::redirect::described(&error))
                }
            })?;
            Ok((service, None, None))
        }
    }
}

/// How dsh opens a connection: `server/discover` first, and MCP
/// 2026-07-28 with a server that answers it with that version; with a
/// server that answers with an error (the method is not one it has, as
/// a server of 2025-11-25 answers) or not within ten seconds,
/// `initialize` with 2025-11-25 on the same connection. 2025-11-25 is
/// the second version offered: a server that refuses 2026-07-28 naming
/// the versions it has (an rmcp server of 2025-11-25 does) is asked
/// again with it, and then says it has no `server/discover`.
fn lifecycle() -> ClientLifecycleMode {
    ClientLifecycleMode::Auto {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28, ProtocolVersion::V_2025_11_25],
        legacy_version: Some(ProtocolVersion::V_2025_11_25),
    }
}

/// Serves `handler` over streamable HTTP through `client` (dsh's, or
/// rmcp's `AuthClient` over it), tapped for task support and 401s.
async fn serve_http<C>(
    handler: Handler,
    shared: &Shared,
    client: C,
    config: StreamableHttpClientTransportConfig,
) -> Result<RunningService<RoleClient, Handler>, rmcp::service::ClientInitializeError>
where
    C: rmcp::transport::streamable_http_client::StreamableHttpClient<Error = reqwest::Error> + Sync,
{
    let http = TappedHttp {
        client,
        task_only: Arc::clone(&shared.task_only),
        refused: Arc::clone(&shared.refused),
    };
    let transport = Watched {
        inner: StreamableHttpClientTransport::with_client(http, config),
        announced: Arc::clone(&shared.announced),
    };
    handler.serve_with_lifecycle(transport, lifecycle()).await
}

/// The error of a server that answered 401: it needs a login, or (when
/// one was sent) a new one.
fn login_needed(config: &ServerConfig, logged_in: bool) -> McpError {
    McpError::LoginNeeded {
        server: config.name.clone(),
        origin: config.origin(),
        why: if logged_in {
            "; it refused the login kept, which could not be refreshed".to_owned()
        } else {
            String::new()
        },
    }
}

/// What a server's `initialize` answer says of itself: its instructions,
/// as its section (none when blank), and its name and version.
fn introduced(
    config: &ServerConfig,
    info: Option<&rmcp::model::ServerPeerInfo>,
) -> (Option<InstructionsSection>, Option<String>) {
    let instructions = info
        .and_then(|info| info.instructions.as_deref())
        .filter(|text| !text.trim().is_empty())
        .map(|text| instructions_section(config, text));
    let server_info = info
        .and_then(|info| info.server_info.as_ref())
        .map(|implementation| format!("{} {}", implementation.name, implementation.version));
    (instructions, server_info)
}

/// A stdio server's process, as its transport describes it.
struct Child<'a> {
    command: &'a [String],
    env: &'a [(String, String)],
    inherit_env: Option<&'a [String]>,
    sandbox: Option<&'a Sandbox>,
    cwd: Option<&'a std::path::Path>,
}

impl<'a> Child<'a> {
    /// The process of a stdio transport (an HTTP one has none: an empty
    /// command, which [`spawn`] refuses).
    fn of(transport: &'a Transport) -> Self {
        match transport {
            Transport::Stdio {
                command,
                env,
                inherit_env,
                sandbox,
                cwd,
            } => Self {
                command,
                env,
                inherit_env: inherit_env.as_deref(),
                sandbox: sandbox.as_ref(),
                cwd: cwd.as_deref(),
            },
            Transport::Http { .. } => Self {
                command: &[],
                env: &[],
                inherit_env: None,
                sandbox: None,
                cwd: None,
            },
        }
    }
}

/// Starts a stdio server as the leader of a new process group, with the
/// environment and in the sandbox its transport says, its stderr drained
/// onto dsh's.
fn spawn(
    config: &ServerConfig,
    child: &Child<'_>,
    task_only: &Arc<TaskOnly>,
) -> Result<Spawned, McpError> {
    let Child {
        command,
        env,
        inherit_env,
        sandbox,
        cwd,
    } = *child;
    let Some((program, args)) = command.split_first() else {
        return Err(McpError::Config {
            server: config.name.clone(),
            origin: config.origin(),
            message: "the command is empty; give the program, then its arguments".to_owned(),
        });
    };
    let mut cmd = tokio::process::Command::new(program);
    if let Some(names) = inherit_env {
        cmd.env_clear();
        for name in names {
            if let Some(value) = std::env::var_os(name) {
                cmd.env(name, value);
            }
        }
    }
    cmd.args(args)
        .envs(env.iter().map(|(k, v)| (k, v)))
        // A group of its own: stopping the server stops its children, and
        // a terminal's Ctrl-C goes to dsh alone, which stops it in order.
        .process_group(0)
        // Should everything else fail, tokio kills the child when the
        // handle is dropped, synchronously.
        .kill_on_drop(true);
    if let Some(cwd) = cwd {
        cmd.current_dir(cwd);
    }
    if let Some(sandbox) = sandbox {
        let cwd = cwd
            .map(std::path::Path::to_path_buf)
            .or_else(|| std::env::current_dir().ok());
        let confinement = sandbox
            .confine(cwd.as_deref())
            .map_err(|error| McpError::Spawn {
                server: config.name.clone(),
                origin: config.origin(),
                message: error.to_string(),
            })?;
        confinement.apply_to(cmd.as_std_mut());
    }
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut process = cmd.spawn().map_err(|error| McpError::Spawn {
        server: config.name.clone(),
        origin: config.origin(),
        message: if error.kind() == std::io::ErrorKind::NotFound {
            format!("`{program}` was not found: {error}")
        } else {
            error.to_string()
        },
    })?;
    let pid = process.id();
    let group = pid.and_then(ProcessGroup::led_by);
    if let Some(stderr) = process.stderr.take() {
        // Always drained: a server blocks once a full pipe is not read.
        crate::stderr::copy_to_output(&config.name, config.output.clone(), stderr);
    }
    let transport =
        StdioTransport::new(process, Arc::clone(task_only)).ok_or_else(|| McpError::Spawn {
            server: config.name.clone(),
            origin: config.origin(),
            message: "its stdin and stdout could not be connected".to_owned(),
        })?;
    Ok((transport, group, pid))
}

/// The transport's configuration of an HTTP server: its URL, its headers
/// (each checked) and its bearer token.
fn http_config(
    config: &ServerConfig,
    url: &str,
    headers: &[(String, String)],
    bearer_token: &Option<String>,
) -> Result<StreamableHttpClientTransportConfig, McpError> {
    let mut map = HashMap::new();
    for (name, value) in headers {
        let bad = |message: String| McpError::Config {
            server: config.name.clone(),
            origin: config.origin(),
            message,
        };
        let name = reqwest::header::HeaderName::from_bytes(name.as_bytes())
            .map_err(|error| bad(format!("header name `{name}`: {error}")))?;
        let value = reqwest::header::HeaderValue::from_str(value)
            .map_err(|error| bad(format!("the value of header `{name}`: {error}")))?;
        map.insert(name, value);
    }
    let mut transport_config =
        StreamableHttpClientTransportConfig::with_uri(url).custom_headers(map);
    if let Some(token) = bearer_token {
        transport_config = transport_config.auth_header(token.clone());
    }
    Ok(transport_config)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(json: serde_json::Value) -> Option<CallToolResult> {
        let read: ServerResult = serde_json::from_value(json).expect("a result");
        match read {
            ServerResult::CallToolResult(result) => Some(result),
            other => contentless(other),
        }
    }

    #[test]
    fn a_call_answered_without_content_is_an_empty_success_as_rmcp_takes_it() {
        let empty = answer(serde_json::json!({})).expect("empty");
        assert!(empty.content.is_empty() && empty.is_error != Some(true));
        let meta = answer(serde_json::json!({"_meta": {"trace": "t1"}})).expect("meta alone");
        assert_eq!(
            meta.meta.map(|meta| meta.0.get("trace").cloned()),
            Some(Some("t1".into()))
        );
        let ack = answer(serde_json::json!({"resultType": "complete"})).expect("task ack");
        assert!(ack.result_type.is_some() && ack.content.is_empty());
        // Anything else is not a tool's answer.
        assert!(answer(serde_json::json!({"tools": []})).is_none());
        assert!(answer(serde_json::json!({"other": 1})).is_none());
    }
}

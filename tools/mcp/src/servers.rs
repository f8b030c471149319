//! The servers of a process: the deployment's, and each editor session's.

use std::collections::HashMap;
use std::ops::ControlFlow;
use std::sync::Arc;

use async_trait::async_trait;
use dsh_system_prompt::{
    AssembleContext, PromptAssembly, Registration, RegistryError, SystemPrompt,
};
use dsh_tools::{
    Tool, ToolCallContext, ToolError, ToolOutput, ToolRegistry, ToolResolver, ToolSelectionExt,
    ToolSession,
};
use parking_lot::RwLock;

use crate::{McpError, McpServer, ServerConfig};

/// The entry of an agent's tool list that selects every (allowed) tool of
/// server `server`: `mcp:<server>`.
pub fn selection_entry(server: &str) -> String {
    format!("mcp:{server}")
}

/// The running MCP servers of a process: the deployment's, which an agent
/// sees when its tool list has `mcp:<server>` (or when it has no tool list
/// at all), and each editor session's, which only that session sees, every
/// tool of them.
///
/// [`install`](Self::install) makes them part of every assembly (a
/// waterfall listener adds the visible servers' tools and sections) and
/// lets the [`ToolRegistry`] run their calls. Cheap to clone (clones share
/// the set).
#[derive(Clone)]
pub struct McpServers {
    inner: Arc<RwLock<Inner>>,
    /// The name of each server whose prompts changed, as it changes.
    prompt_changes: tokio::sync::broadcast::Sender<String>,
}

impl Default for McpServers {
    fn default() -> Self {
        Self {
            inner: Arc::default(),
            prompt_changes: tokio::sync::broadcast::channel(PROMPT_CHANGES_KEPT).0,
        }
    }
}

/// How many prompt changes a slow listener may fall behind by before it
/// is told it missed some (and takes every server's as changed).
const PROMPT_CHANGES_KEPT: usize = 64;

#[derive(Default)]
struct Inner {
    deployment: Vec<Arc<McpServer>>,
    sessions: HashMap<String, Vec<Arc<McpServer>>>,
    /// The directories of each session that has said them, in the order
    /// they came: the deployment's servers' roots.
    session_dirs: Vec<(String, Vec<std::path::PathBuf>)>,
}

impl Inner {
    /// The directories of every session that said them, each once, in
    /// the order they came.
    fn all_session_dirs(&self) -> Vec<std::path::PathBuf> {
        let mut all: Vec<std::path::PathBuf> = Vec::new();
        for dir in self.session_dirs.iter().flat_map(|(_, dirs)| dirs) {
            if !all.contains(dir) {
                all.push(dir.clone());
            }
        }
        all
    }
}

impl McpServers {
    /// An empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Starts every server of `configs` at once, and waits for all:
    /// each outcome in the order of `configs`. A session with several
    /// servers is ready when its slowest server is.
    pub async fn start_all(
        configs: &[ServerConfig],
        http: &reqwest::Client,
    ) -> Vec<Result<McpServer, McpError>> {
        futures::future::join_all(
            configs
                .iter()
                .map(|config| McpServer::start(config.clone(), http)),
        )
        .await
    }

    /// The names of the servers whose prompts change, each as it changes
    /// (`notifications/prompts/list_changed`, once they are listed
    /// again), from now on; a receiver too slow is told how many it
    /// missed.
    pub fn prompt_changes(&self) -> tokio::sync::broadcast::Receiver<String> {
        self.prompt_changes.subscribe()
    }

    /// Adds a server of the deployment.
    pub fn add(&self, server: McpServer) -> Arc<McpServer> {
        server.tell_prompt_changes(self.prompt_changes.clone());
        let server = Arc::new(server);
        self.inner.write().deployment.push(Arc::clone(&server));
        server
    }

    /// Adds a server that only session `session` sees.
    pub fn add_to_session(&self, session: &str, server: McpServer) -> Arc<McpServer> {
        server.tell_prompt_changes(self.prompt_changes.clone());
        server.belongs_to(session);
        let server = Arc::new(server);
        self.inner
            .write()
            .sessions
            .entry(session.to_owned())
            .or_default()
            .push(Arc::clone(&server));
        server
    }

    /// The deployment's servers.
    pub fn deployment_servers(&self) -> Vec<Arc<McpServer>> {
        self.inner.read().deployment.clone()
    }

    /// Puts `dirs` in place of the roots of session `session`'s servers
    /// (its working directory, then the editor's additional directories),
    /// telling each server whose roots changed.
    pub async fn set_session_roots(&self, session: &str, dirs: &[std::path::PathBuf]) {
        let servers = self.inner.read().sessions.get(session).cloned();
        for server in servers.unwrap_or_default() {
            server.set_roots(dirs.to_vec()).await;
        }
    }

    /// Records `dirs` as session `session`'s directories (its working
    /// directory, then the editor's additional ones) and puts the
    /// directories of every session that said them in place of the
    /// deployment's servers' roots, telling each server whose roots
    /// changed: a deployment's server serves the sessions, never the
    /// directory of the deployment's file.
    pub async fn set_session_dirs(&self, session: &str, dirs: &[std::path::PathBuf]) {
        let (servers, roots) = {
            let mut inner = self.inner.write();
            let known = (inner.session_dirs.iter()).any(|(id, own)| id == session && own == dirs);
            if known {
                return;
            }
            inner.session_dirs.retain(|(id, _)| id != session);
            inner.session_dirs.push((session.to_owned(), dirs.to_vec()));
            (inner.deployment.clone(), inner.all_session_dirs())
        };
        for server in servers {
            server.set_roots(roots.clone()).await;
        }
    }

    /// Stops and forgets the servers of session `session`; the
    /// deployment's servers' roots are the other sessions' directories
    /// from then on (kept as they are when no other session said any).
    pub async fn end_session(&self, session: &str) {
        let (servers, deployment, roots) = {
            let mut inner = self.inner.write();
            let servers = inner.sessions.remove(session);
            let before = inner.session_dirs.len();
            inner.session_dirs.retain(|(id, _)| id != session);
            let roots = inner.all_session_dirs();
            let changed = inner.session_dirs.len() != before && !roots.is_empty();
            let deployment = if changed {
                inner.deployment.clone()
            } else {
                Vec::new()
            };
            (servers, deployment, roots)
        };
        for server in servers.unwrap_or_default() {
            server.shutdown().await;
        }
        for server in deployment {
            server.set_roots(roots.clone()).await;
        }
    }

    /// Stops every server, the deployment's and the sessions'.
    pub async fn shutdown(&self) {
        let servers: Vec<Arc<McpServer>> = {
            let mut inner = self.inner.write();
            let mut servers = std::mem::take(&mut inner.deployment);
            servers.extend(inner.sessions.drain().flat_map(|(_, servers)| servers));
            servers
        };
        futures::future::join_all(servers.iter().map(|server| server.shutdown())).await;
    }

    /// The server whose tools include the exposed name `tool`, among those
    /// session `session` (or the deployment) has.
    pub fn server_of_tool(&self, session: Option<&str>, tool: &str) -> Option<Arc<McpServer>> {
        self.visible(session, None)
            .into_iter()
            .find(|server| server.tool_set().raw.contains_key(tool))
    }

    /// Whether a call of `tool` (an exposed name) in `session` asks a
    /// person first ([`McpServer::asks_first`]); `None` when no server of
    /// the session or the deployment has the tool.
    pub fn asks_first(&self, session: Option<&str>, tool: &str) -> Option<bool> {
        self.server_of_tool(session, tool)?.asks_first(tool)
    }

    /// What `tool` (an exposed name) in `session` says it is now
    /// ([`McpServer::print`]); `None` when no server has the tool.
    pub fn print(&self, session: Option<&str>, tool: &str) -> Option<crate::ToolPrint> {
        self.server_of_tool(session, tool)?.print(tool)
    }

    /// Whether `tool` (an exposed name) in `session` is annotated
    /// `readOnlyHint: true`; `None` when no server has the tool.
    pub fn is_read_only(&self, session: Option<&str>, tool: &str) -> Option<bool> {
        let server = self.server_of_tool(session, tool)?;
        Some(server.tool_set().read_only.contains(tool))
    }

    /// The prompts of the servers session `session` (or, `None`, a
    /// session without servers of its own) sees, by server: the
    /// session's servers first, then the deployment's; a server without
    /// the prompts capability is left out.
    pub fn prompts(&self, session: Option<&str>) -> Vec<(String, Arc<[crate::ServerPrompt]>)> {
        (self.visible(session, None).into_iter())
            .filter_map(|server| Some((server.name().to_owned(), server.prompts()?)))
            .collect()
    }

    /// The text of prompt `prompt` of server `server`, one of those
    /// `session` sees, with `arguments`, until `cancel`
    /// ([`McpServer::get_prompt`]).
    pub async fn get_prompt(
        &self,
        session: Option<&str>,
        (server, prompt): (&str, &str),
        arguments: &std::collections::BTreeMap<String, String>,
        cancel: &tokio_util::sync::CancellationToken,
    ) -> Result<String, crate::PromptError> {
        let found = (self.visible(session, None).into_iter()).find(|one| one.name() == server);
        let Some(found) = found else {
            return Err(crate::PromptError::UnknownServer {
                server: server.to_owned(),
            });
        };
        found.get_prompt(prompt, arguments, cancel).await
    }

    /// Reads again the tools of each server `session` sees whose list is
    /// past its `ttlMs` ([`McpServer::refresh_tools`]), all at once: what
    /// a session does before a turn, so the turn's first request has
    /// them as they are.
    pub async fn refresh_stale(&self, session: Option<&str>) {
        let servers = self.visible(session, None);
        futures::future::join_all(servers.iter().map(|server| server.refresh_tools())).await;
    }

    /// The servers an assembly for `session` with tool list `selection`
    /// sees: the session's, then the deployment's it selects.
    fn visible(
        &self,
        session: Option<&str>,
        selection: Option<&dsh_tools::ToolSelection>,
    ) -> Vec<Arc<McpServer>> {
        let inner = self.inner.read();
        let mut servers: Vec<Arc<McpServer>> = session
            .and_then(|session| inner.sessions.get(session))
            .cloned()
            .unwrap_or_default();
        servers.extend(
            inner
                .deployment
                .iter()
                .filter(|server| {
                    selection
                        .is_none_or(|selection| selection.contains(&selection_entry(server.name())))
                })
                .cloned(),
        );
        servers
    }

    /// Makes the servers part of `prompt`'s assemblies, and their tools
    /// callable through `tools`.
    ///
    /// At each assembly a waterfall listener adds, for every server the
    /// context sees, the schemas of its tools as they are now (a changed
    /// list shows at the next step), and, while at least one of them is in
    /// the assembly, its instructions as section `mcp:<server>` (order
    /// 150), owned by the server, bound to one of its tools that is there.
    /// Dropping the returned handle removes the listener.
    pub fn install(
        &self,
        prompt: &SystemPrompt,
        tools: &ToolRegistry,
    ) -> Result<Registration, RegistryError> {
        tools.add_resolver(Arc::new(Resolver {
            servers: self.clone(),
        }));
        let servers = self.clone();
        prompt.on_assemble("mcp-servers", move |cx, assembly| {
            servers.contribute(cx, assembly);
            ControlFlow::Continue(())
        })
    }

    fn contribute(&self, cx: &AssembleContext, assembly: &mut PromptAssembly) {
        for server in self.visible(ToolSession::of(cx), cx.tool_selection()) {
            let set = server.tool_set();
            let mut present = None;
            for schema in &set.schemas {
                if !assembly.has_tool(&schema.name) {
                    assembly.tools.push(Arc::clone(schema));
                }
                present.get_or_insert_with(|| schema.name.clone());
            }
            if let (Some(tool), Some(instructions)) = (present, server.instructions_section()) {
                (assembly.sections).insert(instructions.section.clone().bound_to_tool(tool));
            }
        }
    }
}

impl std::fmt::Debug for McpServers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let inner = self.inner.read();
        f.debug_struct("McpServers")
            .field("deployment", &inner.deployment)
            .field("sessions", &inner.sessions.len())
            .finish()
    }
}

/// Finds the server of a call's tool: the calling session's first, then
/// the deployment's.
struct Resolver {
    servers: McpServers,
}

impl ToolResolver for Resolver {
    fn resolve(&self, name: &str, cx: &ToolCallContext) -> Option<Arc<dyn Tool>> {
        let server = self.servers.server_of_tool(Some(&cx.session_id), name)?;
        let schema = server
            .tool_schemas()
            .into_iter()
            .find(|schema| schema.name == name)?;
        Some(Arc::new(McpTool { server, schema }))
    }
}

/// One tool of a server, for one call.
struct McpTool {
    server: Arc<McpServer>,
    schema: Arc<dsh_system_prompt::ToolSchema>,
}

#[async_trait]
impl Tool for McpTool {
    fn name(&self) -> &str {
        &self.schema.name
    }

    fn description(&self) -> String {
        self.schema.description.clone()
    }

    fn parameters(&self) -> serde_json::Value {
        self.schema.parameters.clone()
    }

    /// By the tool's hints: `readOnlyHint`, `destructiveHint` and
    /// `openWorldHint` choose read, edit or fetch (see the crate's
    /// documentation); the resource reader reads.
    fn kind(&self) -> dsh_tools::ToolKind {
        self.server
            .look(&self.schema.name)
            .map(|look| look.kind)
            .unwrap_or_default()
    }

    /// The tool's `title` (or its annotations'), else its exposed name;
    /// a resource read is titled by its URI.
    fn title(&self, arguments: &serde_json::Value) -> String {
        if self.server.resource_reader().as_deref() == Some(self.schema.name.as_str())
            && let Ok(uri) = crate::resources::read::uri_argument(arguments)
        {
            return format!("Read {uri}");
        }
        self.server
            .look(&self.schema.name)
            .and_then(|look| look.title)
            .unwrap_or_else(|| self.schema.name.clone())
    }

    async fn execute(
        &self,
        arguments: serde_json::Value,
        cx: &ToolCallContext,
    ) -> Result<ToolOutput, ToolError> {
        let _calling = self.server.calling(&cx.session_id, &cx.call_id, &cx.cancel);
        self.server
            .call_reporting(
                &self.schema.name,
                arguments,
                &cx.cancel,
                cx.get::<dsh_tools::ToolProgress>(),
            )
            .await
    }
}

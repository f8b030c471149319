//! A deployment brought to life: one `SystemPrompt` registry with every
//! linked crate's static contributions, one tool registry installed as its
//! tool provider, and the deployment's agents.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use dsh_agent_loop::AgentOptions;
use dsh_sandbox::{Sandbox, SandboxMode};
use dsh_system_prompt::{Owner, PromptSection, Registration, SystemPrompt};
use dsh_tool_mcp::ServerConfig;
use dsh_tool_subagent::{
    AcpProvider, ForkProvider, SpawnProvider, SubagentError, SubagentProviders, SubagentTool,
};
use dsh_tool_todo::TodoWriteTool;
use dsh_tools::{Tool, ToolRegistry};

use crate::facts::instructions::InstructionsConfig;
use crate::file::mcp::ServerRules;
use crate::file::tools::ToolInstance;
use crate::file::{AgentSpec, Deployment};
use crate::policy::environment::ChildEnvironment;
use crate::policy::modes::{MODE_CONTEXT, ModeSwitch};
use crate::problem::Problem;

mod layers;
pub mod logins;
pub mod mcp;
mod session;

pub use session::StartedSession;
pub(crate) use session::session_in;

// Crates whose only prompt contributions are static sections are linked
// here by name, or `inventory` would never see them. The tool crates are
// also used below, but the link must not depend on that.
use dsh_tool_bash as _;
use dsh_tool_fs as _;
use dsh_tool_todo as _;

/// The tools every deployment has without configuring them, in the order
/// the model is told about them; `todo` is the todo tool among them,
/// `bash_env_remove` what commands run without, and `roots` the
/// deployment's `roots` of the file tools, by tool. The file tools share
/// one memory of what each session has seen.
fn builtin_tools(
    todo: Arc<TodoWriteTool>,
    bash_env_remove: &[String],
    roots: &BTreeMap<String, Vec<PathBuf>>,
) -> Vec<Arc<dyn Tool>> {
    let observations = dsh_tool_fs::Observations::new();
    let roots_of = |tool: &str| roots.get(tool).cloned().unwrap_or_default();
    vec![
        Arc::new(dsh_tool_fs::ReadTool::new().with_observations(observations.clone())),
        Arc::new(
            dsh_tool_fs::WriteTool::new()
                .with_observations(observations.clone())
                .with_roots(roots_of(dsh_tool_fs::WRITE_TOOL_NAME)),
        ),
        Arc::new(
            dsh_tool_fs::EditTool::new()
                .with_observations(observations)
                .with_roots(roots_of(dsh_tool_fs::EDIT_TOOL_NAME)),
        ),
        Arc::new(dsh_tool_bash::BashTool::new().without_env(bash_env_remove)),
        todo,
    ]
}

/// The names of the built-in tools, as their crates define them.
pub fn builtin_tool_names() -> Vec<String> {
    builtin_tools(Arc::new(TodoWriteTool::new()), &[], &BTreeMap::new())
        .iter()
        .map(|tool| tool.name().to_owned())
        .collect()
}

/// Reads and checks a deployment file (or the embedded one).
pub fn load(path: Option<&Path>) -> Result<Deployment, Vec<Problem>> {
    let names = builtin_tool_names();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    Deployment::load(path, &names)
}

/// One agent of a deployment, with the deployment's registries built: what
/// a command about one agent (`dsh prompt`, `dsh run`, `dsh acp`) starts
/// from.
pub(crate) type LoadedAgent = (Deployment, AgentSpec, Runtime);

/// Reads and checks the deployment file at `config` (or the embedded
/// one), picks the agent or child `agent` names (`<agent>/<instance>`; the
/// first agent when none), and builds the registries, in that order,
/// failing at the first step that fails.
pub(crate) fn load_agent(
    config: Option<&Path>,
    agent: Option<&str>,
) -> Result<LoadedAgent, Vec<Problem>> {
    let deployment = load(config)?;
    let agent = deployment
        .agent(agent)
        .map_err(|problem| vec![problem])?
        .into_owned();
    let runtime = Runtime::new(&deployment)?;
    Ok((deployment, agent, runtime))
}

/// The registries of one deployment.
#[derive(Debug)]
pub struct Runtime {
    /// The prompt registry: every linked crate's statics, the tools, the
    /// deployment's layers.
    pub prompt: SystemPrompt,
    /// The tool registry, installed as the prompt's tool provider.
    pub tools: ToolRegistry,
    /// The MCP servers started for this command (none until a command
    /// starts them, see `runtime::mcp`).
    pub mcp: dsh_tool_mcp::McpServers,
    /// Keeps the tool registry installed as the prompt's tool provider.
    _installed: Registration,
    /// Keeps the MCP servers' tools and sections in the assemblies.
    _mcp_installed: Registration,
    /// Keeps the todo list installed as a runtime context.
    _todo_context: Registration,
    /// Keep the deployment's layers (sections, tool orders) registered.
    _layers: Vec<Registration>,
    /// Keeps the context that tells the model a session's mode.
    _mode_context: Registration,
    /// How each session finds its instruction files.
    pub instructions: InstructionsConfig,
    /// What each kind of child process may see of dsh's environment.
    pub environment: ChildEnvironment,
    /// The deployment's sandbox policy (`[sandbox]`), which an agent's own
    /// mode, or the command line's, may change.
    sandbox: Sandbox,
    /// The mode the command line forces, if any.
    forced_mode: Option<SandboxMode>,
    /// `[sandbox] mode` as written, if it is.
    written_mode: Option<SandboxMode>,
    /// Who answers the MCP servers' sampling and elicitation requests,
    /// once a front end says ([`answer_servers_with`](Self::answer_servers_with)).
    asker: parking_lot::Mutex<Option<dsh_tool_mcp::SharedAsker>>,
    /// Where what the MCP servers say for the person goes, once a front
    /// end says ([`show_servers_with`](Self::show_servers_with));
    /// discarded until then.
    output: parking_lot::Mutex<dsh_tool_mcp::ServerOutput>,
}

impl Runtime {
    /// Builds the registries: the static contributions of every linked
    /// crate, the built-in tools, and the deployment's tool instances.
    pub fn new(deployment: &Deployment) -> Result<Self, Vec<Problem>> {
        let prompt = SystemPrompt::new().map_err(|error| {
            vec![Problem::new(format!(
                "the prompt registry cannot be built: {error}"
            ))]
        })?;
        let tools = ToolRegistry::new();
        let todo = Arc::new(TodoWriteTool::new());
        let todo_context = todo.install_context(&prompt).map_err(|error| {
            vec![Problem::new(format!(
                "the todo list context cannot be registered: {error}"
            ))]
        })?;
        // What commands may see is the policy's decision (`policy::environment`).
        let environment = ChildEnvironment::of(deployment.secret_env_vars(), &deployment.bash);
        let bash_env_remove = environment.removed_for_command();
        for tool in builtin_tools(todo, &bash_env_remove, &deployment.roots) {
            let name = tool.name().to_owned();
            tools.register(tool).map_err(|error| {
                vec![Problem::new(format!(
                    "built-in tool `{name}` cannot be registered: {error}"
                ))]
            })?;
        }
        let problems = register_instances(&tools, deployment, &environment);
        if !problems.is_empty() {
            return Err(problems);
        }
        let installed = tools.install(&prompt).map_err(|error| {
            vec![Problem::new(format!(
                "the tool registry cannot be installed: {error}"
            ))]
        })?;
        let mcp = dsh_tool_mcp::McpServers::new();
        let mcp_installed = mcp.install(&prompt, &tools).map_err(|error| {
            vec![Problem::new(format!(
                "the MCP servers' contributions cannot be installed: {error}"
            ))]
        })?;
        let layers = layers::register_layers(&prompt, &tools, deployment)?;
        let mode_context = prompt.context(mode_context()).map_err(|error| {
            vec![Problem::new(format!(
                "the mode's context cannot be registered: {error}"
            ))]
        })?;
        Ok(Self {
            prompt,
            tools,
            mcp,
            _installed: installed,
            _mcp_installed: mcp_installed,
            _todo_context: todo_context,
            _layers: layers,
            _mode_context: mode_context,
            instructions: deployment.instructions.clone(),
            environment,
            sandbox: deployment.sandbox.clone(),
            forced_mode: None,
            written_mode: deployment.sandbox_ceiling,
            asker: parking_lot::Mutex::new(None),
            output: parking_lot::Mutex::default(),
        })
    }

    /// The agent loop's agent for `agent`, carrying the sandbox it runs in
    /// ([`sandbox_for`](Self::sandbox_for)) as a fact: its commands are
    /// confined by it, its file tools follow it, and its prompt's section
    /// `sandbox` says it.
    pub fn loop_agent(&self, agent: &AgentSpec) -> dsh_agent_loop::Agent {
        loop_agent(agent).with_fact(self.sandbox_for(agent))
    }

    /// The deployment's sandbox policy, with the mode the command line
    /// forces, if any.
    pub fn sandbox(&self) -> &Sandbox {
        &self.sandbox
    }

    /// The sandbox `agent` runs in: the mode the command line forces
    /// ([`force_sandbox`](Self::force_sandbox)), else the agent's own,
    /// else the deployment's, with the deployment's network and writable
    /// directories.
    pub fn sandbox_for(&self, agent: &AgentSpec) -> Sandbox {
        match self.forced_mode.or(agent.sandbox) {
            Some(mode) => self.sandbox.in_mode(mode),
            None => self.sandbox.clone(),
        }
    }

    /// The most a person's mode switch may grant `agent`'s sessions: the
    /// mode the command line forces, else the agent's own, else `[sandbox]
    /// mode` as written; where none is set, every mode.
    pub fn ceiling_for(&self, agent: &AgentSpec) -> SandboxMode {
        (self.forced_mode.or(agent.sandbox).or(self.written_mode))
            .unwrap_or(SandboxMode::FullAccess)
    }

    /// Makes every agent and every server without a mode of its own run
    /// in `mode` (`dsh run --sandbox`), whatever the deployment says.
    pub fn force_sandbox(&mut self, mode: SandboxMode) {
        self.forced_mode = Some(mode);
        self.sandbox = self.sandbox.in_mode(mode);
    }

    /// Lets `asker` answer the sampling and elicitation requests of every
    /// MCP server started from now on (under
    /// [`server_policy`](Self::server_policy)): a front end's, which asks
    /// its person.
    pub fn answer_servers_with(&self, asker: dsh_tool_mcp::SharedAsker) {
        *self.asker.lock() = Some(asker);
    }

    /// Whether someone answers the servers' questions
    /// ([`answer_servers_with`](Self::answer_servers_with)).
    pub fn answers_servers(&self) -> bool {
        self.asker.lock().is_some()
    }

    /// Hands what every MCP server started from now on says for the
    /// person (its stderr, its log messages, a question declined) to
    /// `output`: a front end's, which shows it.
    pub fn show_servers_with(&self, output: dsh_tool_mcp::ServerOutput) {
        *self.output.lock() = output;
    }

    /// `config`, a server's, under the host's policy for its process
    /// ([`server_policy`](Self::server_policy)).
    pub(crate) fn under_policy(&self, config: ServerConfig, rules: &ServerRules) -> ServerConfig {
        self.server_policy(rules).apply(config)
    }

    /// The host's policy for a stdio server whose table says `rules` (an
    /// editor's server has none: `ServerRules::default()`): it inherits
    /// only the base of dsh's environment and what `rules` keep, and runs
    /// in the sandbox of `rules`' mode (else the deployment's), reaching
    /// the network unless `rules` say not; its sampling and elicitation
    /// go to the front end's asker, if one was given, and what it says to
    /// the front end's output.
    pub fn server_policy(&self, rules: &ServerRules) -> ServerPolicy {
        let mode = rules.sandbox.unwrap_or(self.sandbox.mode());
        ServerPolicy {
            inherit: self.environment.inherited_by_server(&rules.env_keep),
            sandbox: (self.sandbox.in_mode(mode)).with_network(rules.network.unwrap_or(true)),
            asker: self.asker.lock().clone(),
            output: self.output.lock().clone(),
        }
    }
}

/// What the host lets a stdio MCP server's process see and change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerPolicy {
    /// The variables of dsh's environment it inherits.
    pub inherit: Vec<String>,
    /// The sandbox it runs in.
    pub sandbox: Sandbox,
    /// Who answers its sampling and elicitation requests.
    pub asker: Option<dsh_tool_mcp::SharedAsker>,
    /// Where what it says for the person goes.
    pub output: dsh_tool_mcp::ServerOutput,
}

impl ServerPolicy {
    /// `config` under the policy: its inherited environment and sandbox
    /// (which an HTTP server, no process of dsh's, does not use), and who
    /// answers its questions and hears what it says (an HTTP server's
    /// too).
    pub fn apply(&self, config: ServerConfig) -> ServerConfig {
        let config = config
            .inheriting_only(self.inherit.iter().cloned())
            .sandboxed(self.sandbox.clone())
            .with_output(self.output.clone());
        match &self.asker {
            Some(asker) => config.with_asker(asker.clone()),
            None => config,
        }
    }
}

/// Registers the deployment's tool instances into `tools`, then checks
/// that every tool an agent lists exists now, or the agent would run
/// without it and never know. Every problem, not the first.
fn register_instances(
    tools: &ToolRegistry,
    deployment: &Deployment,
    environment: &ChildEnvironment,
) -> Vec<Problem> {
    let providers = match subagent_providers() {
        Ok(providers) => providers,
        Err(error) => {
            return vec![Problem::new(format!(
                "the subagent providers cannot be registered: {error}"
            ))];
        }
    };
    let mut problems: Vec<Problem> = (deployment.tools.iter())
        .filter_map(|(name, instance)| {
            register_instance(tools, &providers, (deployment, environment), name, instance).err()
        })
        .collect();
    // `mcp:<server>` names a `[mcp.<name>]` table, checked with the file.
    let listed = (deployment.agents.iter())
        .flat_map(|agent| agent.tools.iter())
        .filter(|tool| !tool.get_ref().starts_with("mcp:"));
    for tool in listed {
        let registered = tools.get(tool.get_ref()).is_some();
        let failed = deployment.tools.contains_key(tool.get_ref());
        if !registered && !failed {
            problems.push(
                deployment
                    .file
                    .problem(format!(
                        "tool `{}` is not available in this build of dsh",
                        tool.get_ref()
                    ))
                    .label(tool.span(), "not registered"),
            );
        }
    }
    problems
}

/// The runtime context `host:mode`: the mode a session was switched to
/// ([`ModeSwitch`], a fact of the session's agent), said at the
/// conversation's tail, where a switch leaves the cached prefix whole;
/// nothing while the session runs in the mode it started in.
fn mode_context() -> PromptSection {
    PromptSection::provided(MODE_CONTEXT, 90, |cx| {
        cx.get::<ModeSwitch>()
            .map(|switch| switch.0.context())
            .unwrap_or_default()
    })
    .owned_by(Owner::new(
        env!("CARGO_PKG_NAME"),
        "dsh_deployment::runtime::mode_context",
        file!(),
        line!(),
    ))
}

/// The agent loop's agent for a deployment's agent, without the facts a
/// runtime attaches ([`Runtime::loop_agent`]): its id, model, persona,
/// tools and preset.
pub fn loop_agent(agent: &AgentSpec) -> dsh_agent_loop::Agent {
    let options = AgentOptions::new(agent.model.get_ref().as_str())
        .with_persona(agent.persona.get_ref().as_str());
    let loop_agent = dsh_agent_loop::Agent::new(agent.id.get_ref().as_str(), options)
        .with_tools(agent.tools.iter().map(|tool| tool.get_ref().clone()));
    match &agent.preset {
        Some(preset) => loop_agent.with_preset(preset.get_ref().as_str()),
        None => loop_agent,
    }
}

/// The subagent providers a deployment's `[tools.<name>]` instances may
/// bind to.
fn subagent_providers() -> Result<SubagentProviders, SubagentError> {
    let providers = SubagentProviders::new();
    providers.register(Arc::new(SpawnProvider::new()))?;
    providers.register(Arc::new(ForkProvider::new()))?;
    Ok(providers)
}

/// Registers one `[tools.<name>]` instance, checked with the file: bound
/// to a provider of its own when its table makes one (`child`,
/// `command`), in a registry of its own so other instances never see it,
/// else to the shared provider its `provider` names. A failure points at
/// its table.
fn register_instance(
    tools: &ToolRegistry,
    providers: &SubagentProviders,
    (deployment, environment): (&Deployment, &ChildEnvironment),
    name: &str,
    instance: &ToolInstance,
) -> Result<(), Problem> {
    let ToolInstance { table, places } = instance;
    let keep: Vec<String> = table
        .env_keep
        .iter()
        .map(|name| name.get_ref().clone())
        .collect();
    let env_removed = environment.removed_for_agent(&keep);
    let own_key = if table.child.is_some() {
        "child"
    } else {
        "command"
    };
    let own = table
        .own_provider(name, &env_removed)
        .and_then(|own| {
            own.map(|provider| {
                let own_providers = SubagentProviders::new();
                own_providers.register(provider).map(|()| own_providers)
            })
            .transpose()
        })
        .map_err(|error| {
            (deployment.file.problem(error.to_string())).label(places.key(own_key), own_key)
        })?;
    let config = table
        .tool_config(name)
        .with_max_depth(deployment.max_subagent_depth);
    SubagentTool::install(&config, own.as_ref().unwrap_or(providers), tools).map_err(|error| {
        let problem = deployment.file.problem(error.to_string());
        match error {
            SubagentError::UnknownProvider { .. } => problem
                .label(places.key("provider"), "unknown provider")
                .help(format!(
                    "an instance may also use `{}` with a `command`: the ACP agent it starts",
                    AcpProvider::NAME
                )),
            _ => problem.label(places.span(), "this tool"),
        }
    })
}

/// The async runtime of a command that talks to a model or starts
/// servers.
pub(crate) fn async_runtime() -> Result<tokio::runtime::Runtime, Vec<Problem>> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|error| {
            vec![Problem::new(format!(
                "cannot start the async runtime: {error}"
            ))]
        })
}

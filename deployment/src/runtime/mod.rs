//! A deployment brought to life: one `SystemPrompt` registry with every
//! linked crate's static contributions, one tool registry installed as its
//! tool provider, and the deployment's agents.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use dsh_agent_loop::AgentOptions;
use dsh_system_prompt::{Registration, SystemPrompt};
use dsh_tool_subagent::{
    AcpProvider, ChildAgentConfig, ForkProvider, SpawnProvider, SubagentError, SubagentProvider,
    SubagentProviders, SubagentTool, SubagentToolConfig,
};
use dsh_tool_todo::TodoWriteTool;
use dsh_tools::{Tool, ToolRegistry};

use crate::file::{AgentSpec, Deployment};
use crate::host::InstructionsConfig;
use crate::host::environment::{Child, ChildEnvironment};
use crate::problem::Problem;

mod layers;
pub mod mcp;

pub use crate::host::StartedSession;

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
pub type LoadedAgent = (Deployment, AgentSpec, Runtime);

/// Reads and checks the deployment file at `config` (or the embedded
/// one), picks the agent or child `agent` names (`<agent>/<instance>`; the
/// first agent when none), and builds the registries, in that order,
/// failing at the first step that fails.
pub fn load_agent(config: Option<&Path>, agent: Option<&str>) -> Result<LoadedAgent, Vec<Problem>> {
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
    pub prompt: SystemPrompt,
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
    /// How each session finds its instruction files.
    pub instructions: InstructionsConfig,
    /// What each kind of child process may see of dsh's environment.
    pub environment: ChildEnvironment,
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
        // What commands may see is the host's decision (`host::environment`).
        let environment = ChildEnvironment::of(deployment);
        let bash_env_remove = environment.removed_for(Child::Command);
        for tool in builtin_tools(todo, &bash_env_remove, &deployment.roots) {
            let name = tool.name().to_owned();
            tools.register(tool).map_err(|error| {
                vec![Problem::new(format!(
                    "built-in tool `{name}` cannot be registered: {error}"
                ))]
            })?;
        }
        let providers = subagent_providers().map_err(|error| {
            vec![Problem::new(format!(
                "the subagent providers cannot be registered: {error}"
            ))]
        })?;
        let mut problems = Vec::new();
        for (name, instance) in &deployment.tools {
            if let Err(problem) = register_instance(&tools, &providers, deployment, name, instance)
            {
                problems.push(problem);
            }
        }
        // Every tool an agent lists must exist now, or the agent would run
        // without it and never know.
        for agent in &deployment.agents {
            // `mcp:<server>` names a `[mcp.<name>]` table, checked with
            // the file.
            for tool in agent
                .tools
                .iter()
                .filter(|tool| !tool.get_ref().starts_with("mcp:"))
            {
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
        }
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
        Ok(Self {
            prompt,
            tools,
            mcp,
            _installed: installed,
            _mcp_installed: mcp_installed,
            _todo_context: todo_context,
            _layers: layers,
            instructions: deployment.instructions.clone(),
            environment,
        })
    }
}

/// The agent loop's agent for a deployment's agent.
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

/// What an instance's own key (`child`, `command`) says about its
/// provider: the key, where it is written, the provider it needs and why,
/// and how to build that provider.
struct OwnKey<'a> {
    /// The key, as a label: `child`.
    key: &'static str,
    /// The key, as the message names it: "a `child` table".
    what: &'static str,
    span: std::ops::Range<usize>,
    needs: &'static str,
    why: String,
    /// The provider, named after the instance.
    build: Box<dyn FnOnce() -> Result<Arc<dyn SubagentProvider>, SubagentError> + 'a>,
}

impl<'a> OwnKey<'a> {
    /// A `child` table makes a spawn provider whose children are the
    /// table's — so a child of `review` started by `coder` is the agent
    /// `coder/review`, the id `dsh prompt --agent` takes.
    fn child(
        name: &'a str,
        child: &'a toml::Spanned<ChildAgentConfig<toml::Spanned<String>>>,
    ) -> Self {
        Self {
            key: "child",
            what: "a `child` table",
            span: child.span(),
            needs: SpawnProvider::NAME,
            why: format!(
                "`child` says who the children of a spawn instance are: it needs \
                 `provider = \"{}\"`, or remove the table (a `fork` child is the calling agent itself)",
                SpawnProvider::NAME
            ),
            build: Box::new(move || {
                let child = child.get_ref().clone().map(toml::Spanned::into_inner);
                Ok(Arc::new(SpawnProvider::new().named(name).with_child(child)))
            }),
        }
    }

    /// A `command` makes an ACP provider whose children run that command.
    fn command(
        name: &'a str,
        command: &'a toml::Spanned<Vec<toml::Spanned<String>>>,
        timeout_secs: Option<u64>,
    ) -> Self {
        Self {
            key: "command",
            what: "a `command`",
            span: command.span(),
            needs: AcpProvider::NAME,
            why: format!(
                "`command` is the ACP agent an `{}` instance starts: set that provider, \
                 or remove the key",
                AcpProvider::NAME
            ),
            build: Box::new(move || {
                let argv = command.get_ref().iter().map(|arg| arg.get_ref().clone());
                let mut provider = AcpProvider::new(argv)?.named(name);
                if let Some(seconds) = timeout_secs {
                    provider = provider.with_timeout(std::time::Duration::from_secs(seconds));
                }
                Ok(Arc::new(provider))
            }),
        }
    }
}

/// The provider of an instance with a key of its own: a provider built
/// for the instance alone and named after it, in a registry of its own
/// that the instance binds to, so other instances never see it. The key
/// must go with the provider it configures.
fn own_provider(
    deployment: &Deployment,
    name: &str,
    provider: &toml::Spanned<String>,
    own: OwnKey<'_>,
) -> Result<SubagentProviders, Problem> {
    let OwnKey {
        key,
        what,
        span,
        needs,
        why,
        build,
    } = own;
    if provider.get_ref() != needs {
        return Err(deployment
            .file
            .problem(format!(
                "tool instance `{name}` has {what}, but its provider is `{}`",
                provider.get_ref()
            ))
            .label(span, key)
            .label(provider.span(), "provider")
            .help(why));
    }
    let providers = SubagentProviders::new();
    build()
        .and_then(|built| providers.register(built))
        .map_err(|error| deployment.file.problem(error.to_string()).label(span, key))?;
    Ok(providers)
}

/// Registers one `[tools.<name>]` instance; a failure points at its table.
fn register_instance(
    tools: &ToolRegistry,
    providers: &SubagentProviders,
    deployment: &Deployment,
    name: &str,
    instance: &toml::Spanned<crate::file::ToolInstance>,
) -> Result<(), Problem> {
    let crate::file::ToolKind::Subagent = instance.get_ref().kind;
    let provider = &instance.get_ref().provider;
    // An instance with a `child` table or a `command` binds to a provider
    // of its own.
    let own = match (&instance.get_ref().child, &instance.get_ref().command) {
        (Some(child), _) => Some(OwnKey::child(name, child)),
        (None, Some(command)) => Some(OwnKey::command(
            name,
            command,
            instance
                .get_ref()
                .timeout_secs
                .as_ref()
                .map(|seconds| *seconds.get_ref()),
        )),
        (None, None) if provider.get_ref() == AcpProvider::NAME => {
            return Err(deployment
                .file
                .problem(format!(
                    "subagent instance `{name}` has provider `acp` but no `command`"
                ))
                .label(provider.span(), "needs a command")
                .help(
                    "give the ACP agent to start, program first: \
                     `command = [\"dsh\", \"acp\", \"--config\", \"child.toml\"]`",
                ));
        }
        (None, None) => None,
    };
    let own_providers;
    let (binding, providers) = match own {
        Some(own) => {
            own_providers = own_provider(deployment, name, provider, own)?;
            (name, &own_providers)
        }
        None => (provider.get_ref().as_str(), providers),
    };
    let config = SubagentToolConfig::new(binding)
        .named(name)
        .with_max_depth(deployment.max_subagent_depth);
    SubagentTool::install(&config, providers, tools).map_err(|error| {
        let problem = deployment.file.problem(error.to_string());
        match error {
            SubagentError::UnknownProvider { .. } => problem
                .label(provider.span(), "unknown provider")
                .help(format!(
                    "an instance may also use `{}` with a `command`: the ACP agent it starts",
                    AcpProvider::NAME
                )),
            _ => problem.label(instance.span(), "this tool"),
        }
    })
}

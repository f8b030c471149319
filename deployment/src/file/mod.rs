//! The deployment file: one model adapter, the tool instances it
//! configures, and the agents it serves.
//!
//! ```toml
//! [adapter.openai]                  # or [adapter.anthropic], or [adapter.scripted] answers = "answers.toml"
//! base_url = "https://api.openai.com/v1"
//! model = "gpt-5"                   # the default model of every agent
//! api_key_env = "OPENAI_API_KEY"
//! tokenizer = "o200k_base"          # optional: how tokens are counted; left out, by each agent's model
//!
//! [tools.task]                      # a configured tool instance, named as the model calls it
//! kind = "subagent"
//! provider = "spawn"
//!
//! [tools.review]                    # a spawn instance whose children are someone else
//! kind = "subagent"
//! provider = "spawn"
//! [tools.review.child]              # each key optional: left out, the calling agent's
//! model = "gpt-5-mini"
//! persona = """You review changes on <<model>>. Report problems; change nothing."""
//! tools = ["read"]
//!
//! [tools.helper]                    # a child that is any ACP agent, run as a subprocess
//! kind = "subagent"
//! provider = "acp"
//! command = ["dsh", "acp", "--config", "helper.toml"]
//!
//! [tools.bash]                      # a built-in's table: only `permission`
//! permission = "ask"                # ask the user before each call (`dsh acp`); default "allow"
//!
//! [tools.write]                     # `write` and `edit` also take `roots`:
//! roots = ["/tmp"]                  # absolute directories outside the session's working
//!                                   # directory where they change files without asking
//!
//! [[agents]]
//! id = "coder"
//! model = "gpt-5"                   # optional: overrides the adapter's model
//! persona = """You are a coding agent running on <<model>>."""
//! tools = ["read", "bash", "task"]  # built-in tools by name, or a [tools.<name>] instance
//! max_prompt_tokens = 4000          # optional: `dsh check` fails when the prompt and tools exceed it
//! ```
//!
//! The project's own instruction files (`AGENTS.md`, `CLAUDE.md`), read
//! for each session from its working directory, are configured by
//! `[instructions]`, the agent loop's `InstructionsConfig`:
//!
//! ```toml
//! [instructions]
//! files = ["AGENTS.md", "CLAUDE.md"]   # the first name present in a directory is its file
//! max_bytes = 32768                    # the budget over all files, spent nearest first
//! enabled = true
//! ```
//!
//! Per-agent variants without copies — `preset = "…"` naming a
//! `[presets.<id>]`, an agent's `[[agents.sections]]` and `tool_order`,
//! and a deployment-wide `tool_order` — are described in
//! [`layers`].
//!
//! MCP servers — `[mcp.<name>]` with a `command` or a `url`, listed by an
//! agent as `"mcp:<name>"` in its `tools` — are described in
//! [`mcp`].
//!
//! `tokenizer` names the encoding tokens are counted with (`o200k_base`,
//! `cl100k_base`); left out, each agent's model selects it, and a model no
//! table knows is counted with `o200k_base`, which `dsh prompt --format
//! explain` says. Claude models, and every model of `[adapter.anthropic]`,
//! are counted with `o200k_base` as an estimate (Anthropic ships no
//! offline tokenizer), which `explain` says too. `max_prompt_tokens` is a budget for what an agent sends
//! before any message: its system prompt plus its tools' schemas, counted
//! with that tokenizer. `dsh check` fails at the key when they exceed it and
//! names the largest parts; it applies to the agent itself, not to the
//! children its subagent instances start.
//!
//! Two tables are schemas owned where they are used, deserialized here with
//! `toml::Spanned` strings so problems point at their keys: `[adapter.*]`
//! is `dsh_agent_loop::AdapterConfig`, and `[tools.<name>.child]` is
//! `dsh_tool_subagent::ChildAgentConfig`, whose `child_of` makes the child.
//!
//! Unknown keys and wrong types are errors with file, line and column (the
//! `toml` deserializer reports the first one; the checks after it report
//! every problem they find).

mod layers;
pub mod mcp;
mod sessions;
mod string_offsets;

use std::borrow::Cow;
use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};

use dsh_agent_loop::{AdapterConfig, ContextBudget, PERSONA_SECTION, Tokenizer, TokenizerRule};
use dsh_system_prompt::suggestion::closest;
use dsh_system_prompt::template::quoted_list;
use dsh_tool_subagent::{AgentFields, ChildAgentConfig, SpawnProvider};
use serde::Deserialize;
use toml::Spanned;

use crate::host::InstructionsConfig;
use crate::problem::{Problem, SourceFile};
use layers::{PresetFile, ToolOrderList, check_layer};

pub use layers::{LayerSpec, SectionSpec};
pub use sessions::SessionStore;
pub use string_offsets::{StringFileMap, string_file_range};

/// The built-in tool whose table takes `env_remove`.
const BASH_TOOL: &str = "bash";

/// The coding-agent deployment, built into the binary: what `dsh` runs
/// when no `--config` is given.
pub const EMBEDDED: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../examples/coding-agent/dsh.toml"
));

/// The name the embedded deployment goes by in diagnostics.
pub const EMBEDDED_NAME: &str = "built-in:examples/coding-agent/dsh.toml";

/// A deployment, parsed and checked.
#[derive(Debug)]
pub struct Deployment {
    /// The file it was read from, for diagnostics.
    pub file: SourceFile,
    /// Relative paths in the file (the scripted answers) are resolved
    /// against this directory; `None` for the embedded deployment.
    pub dir: Option<PathBuf>,
    /// `[adapter.<kind>]`, in the agent loop's schema, with places kept.
    pub adapter: AdapterConfig<Spanned<String>>,
    /// How every agent's tokens are counted: `[adapter.*] tokenizer`,
    /// checked, else each agent's model (an estimate for every model of
    /// `[adapter.anthropic]`).
    pub tokenizers: TokenizerRule,
    /// The `[tools.<name>]` tables that configure a tool instance.
    pub tools: BTreeMap<String, Spanned<ToolInstance>>,
    /// The tools whose calls must be approved first (`permission = "ask"`),
    /// built-ins and instances alike.
    pub ask_first: Vec<String>,
    /// The `roots` of `[tools.write]` and `[tools.edit]`, by tool.
    pub roots: BTreeMap<String, Vec<PathBuf>>,
    /// `[tools.bash] env_remove`: variables `bash` commands run without,
    /// besides the adapter's secrets (`secret_env_vars`).
    pub bash_env_remove: Vec<String>,
    /// `max_subagent_depth`: how deep subagents may nest, for every
    /// provider (`dsh_tool_subagent::DEFAULT_MAX_DEPTH` when left out).
    pub max_subagent_depth: u32,
    /// What the deployment adds to the global layer: its `tool_order`.
    pub global_layer: LayerSpec,
    /// The `[presets.<id>]`, checked.
    pub presets: BTreeMap<String, LayerSpec>,
    pub agents: Vec<AgentSpec>,
    /// The `[mcp.<name>]` servers, checked.
    pub mcp: Vec<mcp::McpSpec>,
    /// `[sessions]`: where its sessions are recorded.
    pub sessions: SessionStore,
    /// `[instructions]`, checked: how each session finds its instruction
    /// files.
    pub instructions: InstructionsConfig,
}

/// The deployment file as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct DeploymentFile {
    adapter: AdapterConfig<Spanned<String>>,
    #[serde(default)]
    tools: BTreeMap<String, Spanned<ToolTable>>,
    tool_order: Option<ToolOrderList>,
    /// How deep subagents may nest.
    max_subagent_depth: Option<u32>,
    #[serde(default)]
    presets: BTreeMap<String, PresetFile>,
    agents: Vec<AgentFile>,
    #[serde(default)]
    mcp: BTreeMap<String, Spanned<mcp::McpTable>>,
    #[serde(default)]
    sessions: sessions::SessionsTable,
    instructions: Option<Spanned<InstructionsConfig>>,
}

/// `[tools.<name>]` as written: a built-in tool's settings, or a tool
/// instance; the table's key is the name the model calls it by.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ToolTable {
    kind: Option<Spanned<ToolKind>>,
    provider: Option<Spanned<String>>,
    command: Option<Spanned<Vec<Spanned<String>>>>,
    child: Option<Spanned<ChildAgentConfig<Spanned<String>>>>,
    permission: Option<Spanned<Permission>>,
    roots: Option<Spanned<Vec<Spanned<String>>>>,
    /// For `[tools.bash]`: environment variables its commands run without.
    env_remove: Option<Spanned<Vec<Spanned<String>>>>,
    /// For `provider = "acp"`: how long a child may take to answer.
    timeout_secs: Option<Spanned<u64>>,
}

/// A configured tool instance, checked.
#[derive(Debug)]
pub struct ToolInstance {
    pub kind: ToolKind,
    /// For `kind = "subagent"`: the subagent provider the instance starts
    /// children with (`spawn`, `fork`, `acp`).
    pub provider: Spanned<String>,
    /// For `provider = "acp"`: the argv of the ACP agent to start.
    pub command: Option<Spanned<Vec<Spanned<String>>>>,
    /// For `provider = "acp"`: how long a child may take to answer, in
    /// seconds (`AcpProvider::DEFAULT_TIMEOUT` when left out).
    pub timeout_secs: Option<Spanned<u64>>,
    /// For `provider = "spawn"`: who the children are, where they differ
    /// from the calling agent — the spawn provider's own schema, with
    /// places kept.
    pub child: Option<Spanned<ChildAgentConfig<Spanned<String>>>>,
}

/// Whether a tool's calls run at once or after the user approves each.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Permission {
    /// Run without asking (the default).
    Allow,
    /// Ask the user before each call, where the front end can ask (an
    /// editor, over ACP); where it cannot, the call is refused.
    Ask,
}

/// What kind of tool a `[tools.<name>]` instance is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolKind {
    /// The subagent tool, bound to one provider.
    Subagent,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct AgentFile {
    id: Spanned<String>,
    model: Option<Spanned<String>>,
    persona: Spanned<String>,
    #[serde(default)]
    tools: Vec<Spanned<String>>,
    max_prompt_tokens: Option<Spanned<u64>>,
    preset: Option<Spanned<String>>,
    #[serde(default)]
    sections: Vec<SectionSpec>,
    tool_order: Option<ToolOrderList>,
}

/// One agent of a deployment as the file specifies it, each field with
/// its place in the file; the agent loop's `Agent` is built from it.
#[derive(Debug, Clone)]
pub struct AgentSpec {
    pub id: Spanned<String>,
    /// The agent's model: its own, or the adapter's default.
    pub model: Spanned<String>,
    /// The persona: a template fragment of this agent, rendered as section
    /// `agent:persona`.
    pub persona: Spanned<String>,
    /// The names of the tools the agent may call, as the model sees them.
    pub tools: Vec<Spanned<String>>,
    /// The most tokens its system prompt and tools' schemas may take
    /// together, when the file sets a budget; a child has none of its own.
    pub max_prompt_tokens: Option<Spanned<u64>>,
    /// The `[presets.<id>]` the agent joins; a child joins its parent's.
    pub preset: Option<Spanned<String>>,
    /// What the agent's own layer adds; a child's is empty.
    pub layer: LayerSpec,
}

impl AgentSpec {
    /// The text of the section named `section` this agent's prompt gets
    /// from the deployment, with whose it is: a section of its own layer,
    /// else of its preset's, else its persona. `None` for a section the
    /// deployment does not write.
    pub fn deployment_text<'d>(
        &'d self,
        deployment: &'d Deployment,
        section: &str,
    ) -> Option<(String, &'d Spanned<String>)> {
        // Nearest first, as the layers shadow: a layer's `agent:persona`
        // is rendered in place of the persona.
        let id = self.id.get_ref();
        if let Some(own) = self.layer.section(section) {
            return Some((format!("section `{section}` of agent `{id}`"), &own.text));
        }
        if let Some(preset) = &self.preset
            && let Some(shared) = deployment
                .presets
                .get(preset.get_ref())
                .and_then(|layer| layer.section(section))
        {
            return Some((
                format!("section `{section}` of preset `{}`", preset.get_ref()),
                &shared.text,
            ));
        }
        (section == PERSONA_SECTION)
            .then(|| (format!("the persona of agent `{id}`"), &self.persona))
    }
}

impl Deployment {
    /// Reads and checks the deployment at `path`, or the embedded one.
    /// `builtin_tools` are the tool names that need no `[tools]` entry.
    pub fn load(path: Option<&Path>, builtin_tools: &[&str]) -> Result<Self, Vec<Problem>> {
        let (file, dir) = match path {
            Some(path) => {
                // Only a regular file, and at most a cap: a FIFO would hang,
                // `/dev/zero` would fill memory.
                let text = dsh_tools::read_input_file(path, dsh_tools::MAX_INPUT_FILE_BYTES)
                    .map_err(|error| {
                        vec![Problem::new(match error {
                            dsh_tools::InputFileError::Io { source, .. } => {
                                format!("cannot read deployment `{}`: {source}", path.display())
                            }
                            other => format!("cannot read deployment: {other}"),
                        })]
                    })?;
                // `dsh.toml` has the parent `""`, which joins like `.`
                // without adding `./` to the paths shown.
                let dir = path.parent().map(Path::to_path_buf);
                (SourceFile::new(path.display().to_string(), text), dir)
            }
            None => (SourceFile::new(EMBEDDED_NAME, EMBEDDED), None),
        };
        Self::parse(file, dir, builtin_tools)
    }

    /// Parses and checks a deployment's text.
    pub fn parse(
        file: SourceFile,
        dir: Option<PathBuf>,
        builtin_tools: &[&str],
    ) -> Result<Self, Vec<Problem>> {
        let parsed: DeploymentFile = toml::from_str(file.text()).map_err(|error| {
            let problem = match error.span() {
                Some(span) => file
                    .problem(error.message().to_owned())
                    .label(span, label_for(error.message())),
                None => Problem::new(format!("{}: {}", file.name(), error.message())),
            };
            vec![problem]
        })?;
        let DeploymentFile {
            adapter,
            tools,
            tool_order,
            max_subagent_depth,
            presets,
            agents,
            mcp,
            sessions,
            instructions,
        } = parsed;
        let sessions = sessions.resolve(dir.as_deref());
        let mut checks = Checks {
            file: &file,
            builtin_tools,
            instances: BTreeMap::new(),
            roots: BTreeMap::new(),
            broken: HashSet::new(),
            mcp_servers: mcp.keys().cloned().collect(),
            problems: Vec::new(),
        };
        let mcp = mcp::check_servers(&file, dir.as_deref(), mcp, &mut checks.problems);
        let (ask_first, bash_env_remove) = checks.tool_tables(tools);
        let tokenizer = checks.tokenizer(&adapter);
        let global_layer = check_layer(
            &file,
            "the deployment",
            Vec::new(),
            tool_order,
            &mut checks.problems,
        );
        let presets: BTreeMap<String, LayerSpec> = presets
            .into_iter()
            .map(|(id, preset)| {
                let whose = format!("preset `{id}`");
                let layer = check_layer(
                    &file,
                    &whose,
                    preset.sections,
                    preset.tool_order,
                    &mut checks.problems,
                );
                (id, layer)
            })
            .collect();
        let agents = checks.agents(agents, &adapter, &presets);
        let instructions = match instructions {
            Some(table) => match table.get_ref().check() {
                Ok(()) => table.into_inner(),
                Err(error) => {
                    checks.problems.push(
                        file.problem(error.to_string())
                            .label(table.span(), "in this table"),
                    );
                    InstructionsConfig::default()
                }
            },
            None => InstructionsConfig::default(),
        };
        let Checks {
            instances: tools,
            roots,
            problems,
            ..
        } = checks;
        if problems.is_empty() {
            Ok(Self {
                file,
                dir,
                adapter,
                tokenizers: tokenizer,
                tools,
                ask_first,
                roots,
                bash_env_remove,
                max_subagent_depth: max_subagent_depth
                    .unwrap_or(dsh_tool_subagent::DEFAULT_MAX_DEPTH),
                global_layer,
                presets,
                agents,
                mcp,
                sessions,
                instructions,
            })
        } else {
            Err(problems)
        }
    }

    /// The children `agent` starts through the instances it lists that
    /// have a `[tools.<name>.child]` table, each as it runs.
    pub fn children_of(&self, agent: &AgentSpec) -> Vec<AgentSpec> {
        agent
            .tools
            .iter()
            .filter_map(|tool| self.child(agent, tool.get_ref()))
            .collect()
    }

    /// The child `parent` would start through `instance`, when the instance
    /// has a `[tools.<name>.child]` table. The spawn provider owns the rule
    /// (its id, and each field the table's or else the parent's); this
    /// applies it to the fields as written, so each keeps its place.
    pub fn child(&self, parent: &AgentSpec, instance: &str) -> Option<AgentSpec> {
        let child = self.tools.get(instance)?.get_ref().child.as_ref()?;
        let AgentFields {
            model,
            persona,
            tools,
            preset,
        } = child.get_ref().child_of(AgentFields {
            model: parent.model.clone(),
            persona: parent.persona.clone(),
            tools: Some(parent.tools.clone()),
            preset: parent.preset.clone(),
        });
        Some(AgentSpec {
            id: Spanned::new(
                child.span(),
                SpawnProvider::child_id(parent.id.get_ref(), instance),
            ),
            model,
            persona,
            tools: tools.unwrap_or_default(),
            max_prompt_tokens: None,
            preset,
            layer: LayerSpec::default(),
        })
    }

    /// The adapter's table as the file names it (`[adapter.openai]`).
    pub fn adapter_table(&self) -> &'static str {
        match &self.adapter {
            AdapterConfig::OpenAi { .. } => "[adapter.openai]",
            AdapterConfig::Anthropic { .. } => "[adapter.anthropic]",
            AdapterConfig::Scripted { .. } => "[adapter.scripted]",
            // A kind of adapter a later loop adds.
            _ => "the `[adapter.*]` table",
        }
    }

    /// The context budget of `agent`: the adapter table's `context_window`
    /// and `compact_at`, else its model's, counted with
    /// [`tokenizer_for`](Self::tokenizer_for).
    pub fn budget_for(&self, agent: &AgentSpec) -> ContextBudget {
        self.adapter
            .budget_with(agent.model.get_ref(), self.tokenizers)
    }

    /// How the tokens of `agent`'s prompt are counted: the file's
    /// `tokenizer`, else the one its model selects (an `o200k_base`
    /// estimate for every model of `[adapter.anthropic]`).
    pub fn tokenizer_for(&self, agent: &AgentSpec) -> Tokenizer {
        self.tokenizers.for_model(agent.model.get_ref())
    }

    /// The agent with id `id`, or the first agent. A child is found by its
    /// id too, `<agent>/<instance>` (see [`children_of`](Self::children_of)).
    pub fn agent(&self, id: Option<&str>) -> Result<Cow<'_, AgentSpec>, Problem> {
        let Some(id) = id else {
            return self
                .agents
                .first()
                .map(Cow::Borrowed)
                .ok_or_else(|| Problem::new("the deployment has no agents"));
        };
        if let Some(agent) = self.agents.iter().find(|agent| agent.id.get_ref() == id) {
            return Ok(Cow::Borrowed(agent));
        }
        let children: Vec<AgentSpec> = self
            .agents
            .iter()
            .flat_map(|agent| self.children_of(agent))
            .collect();
        if let Some(child) = children.iter().find(|child| child.id.get_ref() == id) {
            return Ok(Cow::Owned(child.clone()));
        }
        let ids = |agents: &[AgentSpec]| quoted_list(agents.iter().map(|agent| agent.id.get_ref()));
        let mut message = format!(
            "no agent `{id}` in {}; its agents are {}",
            self.file.name(),
            ids(&self.agents)
        );
        if !children.is_empty() {
            message.push_str(&format!(", and their children {}", ids(&children)));
        }
        Err(Problem::new(message))
    }
}

/// A short label for the span of a deserializer error.
fn label_for(message: &str) -> &'static str {
    if message.starts_with("unknown field") {
        "unknown key"
    } else if message.starts_with("unknown variant") {
        "unknown value"
    } else if message.starts_with("invalid type") {
        "wrong type"
    } else if message.starts_with("missing field") {
        "in this table"
    } else if message.starts_with("duplicate key") {
        "duplicate key"
    } else {
        "here"
    }
}

/// The checks the deserializer cannot make, each problem reported with its
/// place in the file. Every problem is collected, not just the first: each
/// phase pushes onto `problems` and goes on.
struct Checks<'a> {
    file: &'a SourceFile,
    /// The tool names that need no `[tools]` entry.
    builtin_tools: &'a [&'a str],
    /// The `[tools.<name>]` instances, checked.
    instances: BTreeMap<String, Spanned<ToolInstance>>,
    /// The `roots` of the tables that take them, checked.
    roots: BTreeMap<String, Vec<PathBuf>>,
    /// The instance tables with a problem, reported already.
    broken: HashSet<String>,
    /// The names of the `[mcp.<name>]` tables.
    mcp_servers: Vec<String>,
    problems: Vec<Problem>,
}

impl Checks<'_> {
    /// The `[tools.<name>]` tables: a built-in's has only `permission`; an
    /// instance's has a `kind` and a `provider`, and its child table's
    /// tools are tools; only `bash`'s has `env_remove`. Returns the tools
    /// that ask first, and the variables `bash` runs without.
    fn tool_tables(
        &mut self,
        tables: BTreeMap<String, Spanned<ToolTable>>,
    ) -> (Vec<String>, Vec<String>) {
        let mut ask_first = Vec::new();
        let mut bash_env_remove = Vec::new();
        for (name, table) in tables {
            let span = table.span();
            let ToolTable {
                kind,
                provider,
                command,
                child,
                permission,
                roots,
                env_remove,
                timeout_secs,
            } = table.into_inner();
            if let Some(env_remove) = env_remove {
                if name == BASH_TOOL {
                    bash_env_remove
                        .extend(env_remove.into_inner().into_iter().map(Spanned::into_inner));
                } else {
                    self.problems.push(
                        self.file
                            .problem(format!(
                                "`env_remove` is a setting of `[tools.{BASH_TOOL}]`, not of `[tools.{name}]`"
                            ))
                            .label(env_remove.span(), "here")
                            .help(format!(
                                "move it to `[tools.{BASH_TOOL}]`: the variables its commands run without"
                            )),
                    );
                }
            }
            if permission.is_some_and(|permission| *permission.get_ref() == Permission::Ask) {
                ask_first.push(name.clone());
            }
            if let Some(roots) = roots {
                self.roots(&name, roots);
            }
            if self.builtin_tools.contains(&name.as_str()) {
                // The built-in's guidance section is bound to its name.
                if let Some(kind) = &kind {
                    self.problems.push(
                        self.file
                            .problem(format!(
                                "tool instance `{name}` takes the name of the built-in tool `{name}`"
                            ))
                            .label(kind.span(), "an instance's `kind`")
                            .help(format!(
                                "name the instance differently, e.g. `[tools.{name}_agent]`; \
                                 a table named after a built-in sets only its `permission`"
                            )),
                    );
                }
                continue;
            }
            let Some(kind) = kind else {
                self.problems.push(
                    self.file
                        .problem(format!("tool instance `{name}` has no `kind`"))
                        .label(span, "this table")
                        .help(format!(
                            "set `kind = \"subagent\"` and a `provider`; the built-in tools, \
                             whose tables need no kind, are {}",
                            quoted_list(self.builtin_tools)
                        )),
                );
                self.broken.insert(name);
                continue;
            };
            let Some(provider) = provider else {
                self.problems.push(
                    self.file
                        .problem(format!("subagent instance `{name}` has no `provider`"))
                        .label(kind.span(), "a subagent")
                        .help("set `provider` to `spawn`, `fork` or `acp`"),
                );
                self.broken.insert(name);
                continue;
            };
            if let Some(timeout) = &timeout_secs
                && (provider.get_ref() != "acp" || *timeout.get_ref() == 0)
            {
                self.problems.push(
                    self.file
                        .problem(format!(
                            "`timeout_secs` of `[tools.{name}]` must be a positive number of \
                             seconds, for an `acp` instance"
                        ))
                        .label(timeout.span(), "here")
                        .label(provider.span(), "provider")
                        .help(
                            "it bounds how long an `acp` child may take to answer; \
                             in-process children are bounded by the turn's cancellation",
                        ),
                );
            }
            let instance = ToolInstance {
                kind: *kind.get_ref(),
                provider,
                command,
                timeout_secs,
                child,
            };
            self.instances.insert(name, Spanned::new(span, instance));
        }
        self.children_tools();
        (ask_first, bash_env_remove)
    }

    /// The tools the children of each instance list, once every instance
    /// is known (so one instance may list another, whatever their order),
    /// and the cycles among them: children that can start themselves, or
    /// each other, recurse without end.
    fn children_tools(&mut self) {
        let lists: Vec<(String, Vec<Spanned<String>>)> = self
            .instances
            .iter()
            .filter_map(|(name, instance)| {
                let tools = instance.get_ref().child.as_ref()?.get_ref().tools.clone()?;
                Some((name.clone(), tools))
            })
            .collect();
        for (name, tools) in &lists {
            self.tool_list(&format!("the children of `{name}`"), tools);
        }
        // Edges: an instance's children list another instance (or itself).
        let edges = |from: &str| -> Vec<&Spanned<String>> {
            lists
                .iter()
                .find(|(name, _)| name == from)
                .map(|(_, tools)| {
                    tools
                        .iter()
                        .filter(|tool| self.instances.contains_key(tool.get_ref()))
                        .collect()
                })
                .unwrap_or_default()
        };
        let mut reported: HashSet<Vec<String>> = HashSet::new();
        for (start, _) in &lists {
            // Depth-first from `start`, looking for a way back to it.
            let mut stack: Vec<(String, Vec<&Spanned<String>>)> = vec![(start.clone(), Vec::new())];
            let mut visited = HashSet::new();
            while let Some((at, path)) = stack.pop() {
                for edge in edges(&at) {
                    let next = edge.get_ref();
                    let mut path = path.clone();
                    path.push(edge);
                    if next == start {
                        let mut cycle: Vec<String> =
                            path.iter().map(|tool| tool.get_ref().clone()).collect();
                        cycle.sort();
                        if reported.insert(cycle) {
                            let problem = self.cycle(start, &path);
                            self.problems.push(problem);
                        }
                    } else if visited.insert(next.clone()) {
                        stack.push((next.clone(), path));
                    }
                }
            }
        }
    }

    /// The problem of children that start each other: `path` are the tool
    /// entries from `start`'s children back to `start`.
    fn cycle(&self, start: &str, path: &[&Spanned<String>]) -> Problem {
        let first = path[0];
        let message = if path.len() == 1 {
            format!(
                "the children of `{start}` list `{start}` itself: each child could start \
                 another without end"
            )
        } else {
            let mut chain = format!("`{start}`");
            for tool in path {
                chain.push_str(&format!(" → `{}`", tool.get_ref()));
            }
            format!(
                "subagents start each other in a cycle ({chain}): they could recurse without end"
            )
        };
        self.file
            .problem(message)
            .label(first.span(), "starts the cycle")
            .help(format!(
                "remove `{}` from the children's `tools`; a child that must delegate \
                 should use another instance whose children do not",
                first.get_ref()
            ))
    }

    /// A table's `roots`: only `write` and `edit` take them, and each is
    /// an absolute directory.
    fn roots(&mut self, name: &str, roots: Spanned<Vec<Spanned<String>>>) {
        const TAKE_ROOTS: [&str; 2] = [dsh_tool_fs::WRITE_TOOL_NAME, dsh_tool_fs::EDIT_TOOL_NAME];
        if !TAKE_ROOTS.contains(&name) {
            self.problems.push(
                self.file
                    .problem(format!("`[tools.{name}]` takes no `roots`"))
                    .label(roots.span(), "not for this tool")
                    .help(
                        "`roots` lists the directories outside the working directory where                          `write` and `edit` change files; set it in `[tools.write]` or                          `[tools.edit]`",
                    ),
            );
            return;
        }
        let mut checked = Vec::new();
        for root in roots.into_inner() {
            let path = PathBuf::from(root.get_ref());
            if path.is_absolute() {
                checked.push(path);
            } else {
                self.problems.push(
                    self.file
                        .problem(format!(
                            "root `{}` of `[tools.{name}]` is not an absolute path",
                            root.get_ref()
                        ))
                        .label(root.span(), "relative")
                        .help("write the directory's absolute path, like `/tmp`"),
                );
            }
        }
        self.roots.insert(name.to_owned(), checked);
    }

    /// The `[[agents]]`: at least one, each with a good id and a model,
    /// and tools that exist.
    fn agents(
        &mut self,
        agents: Vec<AgentFile>,
        adapter: &AdapterConfig<Spanned<String>>,
        presets: &BTreeMap<String, LayerSpec>,
    ) -> Vec<AgentSpec> {
        if agents.is_empty() {
            self.problems.push(
                self.file
                    .problem("the deployment has no agents")
                    .help("add an agent: `[[agents]]` with `id`, `persona` and `tools`"),
            );
        }
        let mut ids = HashSet::new();
        let mut checked = Vec::with_capacity(agents.len());
        for agent in agents {
            let AgentFile {
                id,
                model,
                persona,
                tools,
                max_prompt_tokens,
                preset,
                sections,
                tool_order,
            } = agent;
            self.agent_id(&id, &mut ids);
            let model = self.agent_model(&id, model.or_else(|| adapter.model().cloned()));
            let whose = format!("agent `{}`", id.get_ref());
            self.tool_list(&whose, &tools);
            if let Some(preset) = &preset {
                self.preset(&whose, preset, presets);
            }
            let layer = check_layer(self.file, &whose, sections, tool_order, &mut self.problems);
            checked.push(AgentSpec {
                id,
                model,
                persona,
                tools,
                max_prompt_tokens,
                preset,
                layer,
            });
        }
        checked
    }

    /// An agent's `preset`: one of the `[presets.<id>]`.
    fn preset(
        &mut self,
        whose: &str,
        preset: &Spanned<String>,
        presets: &BTreeMap<String, LayerSpec>,
    ) {
        let name = preset.get_ref().as_str();
        if presets.contains_key(name) {
            return;
        }
        let known: Vec<&str> = presets.keys().map(String::as_str).collect();
        let mut help = if known.is_empty() {
            format!("the deployment has no presets; add a `[presets.{name}]` table")
        } else {
            format!("the presets are {}", quoted_list(&known))
        };
        if let Some(closest) = closest(name, &known) {
            help = format!("did you mean `{closest}`? {help}");
        }
        self.problems.push(
            self.file
                .problem(format!(
                    "{whose} joins preset `{name}`, which the deployment does not declare"
                ))
                .label(preset.span(), "unknown preset")
                .help(help),
        );
    }

    /// The adapter's rule for tokenizers; its `tokenizer`, when set, an
    /// encoding of this build.
    fn tokenizer(&mut self, adapter: &AdapterConfig<Spanned<String>>) -> TokenizerRule {
        match adapter.tokenizer_rule() {
            Ok(rule) => rule,
            Err(error) => {
                let mut problem = self.file.problem(error.to_string());
                if let Some(name) = adapter.tokenizer_name() {
                    problem = problem.label(name.span(), "unknown tokenizer");
                }
                self.problems.push(problem);
                TokenizerRule::by_model()
            }
        }
    }

    /// An agent's id: not empty, without `/` (which names a child), and
    /// not one of `seen`.
    fn agent_id(&mut self, id: &Spanned<String>, seen: &mut HashSet<String>) {
        let problem = if id.get_ref().trim().is_empty() {
            self.file
                .problem("an agent's `id` is empty")
                .label(id.span(), "empty id")
        } else if id.get_ref().contains('/') {
            self.file
                .problem(format!("agent id `{}` contains `/`", id.get_ref()))
                .label(id.span(), "contains `/`")
                .help("`<agent>/<instance>` names the child an agent spawns; choose an id without `/`")
        } else if !seen.insert(id.get_ref().clone()) {
            self.file
                .problem(format!("agent `{}` is declared twice", id.get_ref()))
                .label(id.span(), "second declaration")
                .help("agent ids are unique within a deployment")
        } else {
            return;
        };
        self.problems.push(problem);
    }

    /// The agent's model: its own or the adapter's default, which must
    /// exist. Without one, a placeholder keeps the checks going.
    fn agent_model(
        &mut self,
        id: &Spanned<String>,
        model: Option<Spanned<String>>,
    ) -> Spanned<String> {
        model.unwrap_or_else(|| {
            self.problems.push(
                self.file
                    .problem(format!("agent `{}` has no model", id.get_ref()))
                    .label(id.span(), "this agent")
                    .help("set `model` on the agent, or a default `model` in `[adapter.*]`"),
            );
            Spanned::new(id.span(), String::new())
        })
    }

    /// A list of tool names, `whose` (``agent `coder` ``): each listed
    /// once, each a built-in or a `[tools.<name>]` instance.
    fn tool_list(&mut self, whose: &str, list: &[Spanned<String>]) {
        let mut seen = HashSet::new();
        for tool in list {
            let name = tool.get_ref().as_str();
            if !seen.insert(name) {
                self.problems.push(
                    self.file
                        .problem(format!("tool `{name}` is listed twice for {whose}"))
                        .label(tool.span(), "listed again"),
                );
            } else if let Some(server) = name.strip_prefix("mcp:") {
                if !self.mcp_servers.iter().any(|known| known == server) {
                    self.problems.push(
                        self.file
                            .problem(format!("unknown MCP server `{server}` in {whose}'s tools"))
                            .label(tool.span(), "no such [mcp.<name>] table")
                            .help(match self.mcp_servers.as_slice() {
                                [] => "declare it: `[mcp.NAME]` with a `command` or a `url`"
                                    .to_owned(),
                                known => format!(
                                    "the deployment's MCP servers are {}",
                                    quoted_list(
                                        &known.iter().map(String::as_str).collect::<Vec<_>>()
                                    )
                                ),
                            }),
                    );
                }
            } else if !self.builtin_tools.contains(&name)
                && !self.instances.contains_key(name)
                // A broken instance table is reported there already.
                && !self.broken.contains(name)
            {
                self.problems.push(self.unknown_tool(tool));
            }
        }
    }

    fn unknown_tool(&self, tool: &Spanned<String>) -> Problem {
        let name = tool.get_ref().as_str();
        let mut known: Vec<&str> = self.builtin_tools.to_vec();
        known.extend(self.instances.keys().map(String::as_str));
        known.sort_unstable();
        let mut help = format!(
            "the tools are the built-ins and the `[tools.<name>]` instances: {}",
            quoted_list(&known)
        );
        if let Some(closest) = closest(name, &known) {
            help = format!("did you mean `{closest}`? {help}");
        }
        self.file
            .problem(format!("unknown tool `{name}`"))
            .label(tool.span(), "unknown tool")
            .help(help)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BUILTINS: &[&str] = &["bash", "edit", "read", "todo_write", "write"];

    fn parse(text: &str) -> Result<Deployment, Vec<Problem>> {
        Deployment::parse(SourceFile::new("dsh.toml", text), None, BUILTINS)
    }

    fn messages(text: &str) -> Vec<String> {
        parse(text)
            .expect_err("a problem")
            .iter()
            .map(|problem| problem.message().to_owned())
            .collect()
    }

    const GOOD: &str = r#"
[adapter.openai]
base_url = "http://127.0.0.1:9/v1"
model = "gpt-test"
api_key_env = "TEST_KEY"

[tools.task]
kind = "subagent"
provider = "spawn"

[[agents]]
id = "coder"
persona = "You are <<model>>."
tools = ["read", "bash", "task"]

[[agents]]
id = "other"
model = "other-model"
persona = "x"
"#;

    /// [`GOOD`] with `added` written right after `anchor`.
    fn with_after(anchor: &str, added: &str) -> String {
        GOOD.replace(anchor, &format!("{anchor}{added}"))
    }

    /// [`GOOD`] with `keys` (and tables) written after the `task` instance's
    /// provider.
    fn with_task(keys: &str) -> String {
        with_after("provider = \"spawn\"\n", keys)
    }

    /// [`GOOD`] with `keys` written after the adapter's.
    fn with_adapter(keys: &str) -> String {
        with_after("api_key_env = \"TEST_KEY\"\n", keys)
    }

    /// [`GOOD`] with `keys` written after those of agent `other`.
    fn with_other(keys: &str) -> String {
        with_after("persona = \"x\"\n", keys)
    }

    #[test]
    fn a_good_deployment_parses() {
        let deployment = parse(GOOD).expect("valid");
        assert_eq!(deployment.agents.len(), 2);
        assert_eq!(deployment.agents[0].model.get_ref(), "gpt-test");
        assert_eq!(deployment.agents[1].model.get_ref(), "other-model");
        assert_eq!(
            deployment.tools["task"].get_ref().provider.get_ref(),
            "spawn"
        );
        assert_eq!(deployment.agent(None).expect("first").id.get_ref(), "coder");
        assert!(deployment.agent(Some("nobody")).is_err());
    }

    #[test]
    fn the_embedded_deployment_parses() {
        let deployment = Deployment::load(None, BUILTINS).expect("valid");
        assert!(!deployment.agents.is_empty());
    }

    #[test]
    fn unknown_keys_and_wrong_types_point_at_the_key() {
        let text = with_other("temperature = 1\n");
        let problems = parse(&text).expect_err("unknown key");
        assert!(
            problems[0]
                .message()
                .contains("unknown field `temperature`")
        );
        let text = GOOD.replace("persona = \"x\"", "persona = 3");
        assert!(messages(&text)[0].contains("invalid type"));
    }

    #[test]
    fn semantic_problems_are_all_reported() {
        let text = GOOD
            .replace(
                "\"read\", \"bash\", \"task\"",
                "\"raed\", \"bash\", \"bash\"",
            )
            .replace("id = \"other\"", "id = \"coder\"")
            .replace("model = \"gpt-test\"\n", "");
        let messages = messages(&text);
        assert_eq!(
            messages,
            [
                "agent `coder` has no model",
                "unknown tool `raed`",
                "tool `bash` is listed twice for agent `coder`",
                "agent `coder` is declared twice",
            ]
        );
    }

    #[test]
    fn an_instance_cannot_shadow_a_builtin() {
        let text = GOOD
            .replace("[tools.task]", "[tools.bash]")
            .replace("\"task\"]", "]");
        assert_eq!(
            messages(&text),
            ["tool instance `bash` takes the name of the built-in tool `bash`"]
        );
    }

    #[test]
    fn a_builtins_table_sets_its_permission_only() {
        let text = GOOD.replace(
            "[tools.task]",
            "[tools.bash]\npermission = \"ask\"\n[tools.read]\npermission = \"allow\"\n[tools.task]",
        );
        let deployment = parse(&text).expect("valid");
        assert_eq!(deployment.ask_first, ["bash"]);
        assert_eq!(
            deployment.tools.keys().collect::<Vec<_>>(),
            ["task"],
            "a built-in's table is no instance"
        );
        let text = with_task("permission = \"ask\"\n");
        assert_eq!(parse(&text).expect("valid").ask_first, ["task"]);
        let text = GOOD.replace(
            "[tools.task]",
            "[tools.bash]\npermission = \"sometimes\"\n[tools.task]",
        );
        assert!(messages(&text)[0].contains("unknown variant `sometimes`"));
    }

    #[test]
    fn the_acp_agent_example_asks_before_commands_and_file_changes() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/acp-agent/dsh.toml");
        let deployment = Deployment::load(Some(&path), BUILTINS).expect("valid");
        assert_eq!(deployment.ask_first, ["bash", "edit", "write"]);
        let tools: Vec<&str> = deployment.agents[0]
            .tools
            .iter()
            .map(|tool| tool.get_ref().as_str())
            .collect();
        assert!(
            tools.contains(&"write") && tools.contains(&"edit"),
            "{tools:?}"
        );
    }

    #[test]
    fn write_and_edit_take_absolute_roots() {
        let text = GOOD.replace(
            "[tools.task]",
            "[tools.write]\nroots = [\"/tmp\", \"/srv/data\"]\n[tools.edit]\nroots = []\n[tools.task]",
        );
        let deployment = parse(&text).expect("valid");
        assert_eq!(
            deployment.roots["write"],
            [PathBuf::from("/tmp"), PathBuf::from("/srv/data")]
        );
        assert!(deployment.roots["edit"].is_empty());
        let text = GOOD.replace(
            "[tools.task]",
            "[tools.write]\nroots = [\"tmp\"]\n[tools.bash]\nroots = [\"/tmp\"]\n[tools.task]",
        );
        assert_eq!(
            messages(&text),
            [
                "`[tools.bash]` takes no `roots`",
                "root `tmp` of `[tools.write]` is not an absolute path"
            ]
        );
    }

    #[test]
    fn an_instance_needs_a_kind_and_a_subagent_a_provider() {
        let text = GOOD.replace("kind = \"subagent\"\n", "");
        assert_eq!(
            messages(&text),
            ["tool instance `task` has no `kind`"],
            "and `task` in the agent's list is not reported again"
        );
        let text = GOOD.replace("provider = \"spawn\"\n", "");
        assert_eq!(
            messages(&text),
            ["subagent instance `task` has no `provider`"]
        );
    }

    #[test]
    fn a_childs_tools_are_checked_like_an_agents() {
        let text = with_task("[tools.task.child]\ntools = [\"raed\", \"bash\", \"bash\"]\n");
        assert_eq!(
            messages(&text),
            [
                "unknown tool `raed`",
                "tool `bash` is listed twice for the children of `task`",
            ]
        );
        let text = with_task("[tools.task.child]\ntemperature = 1\n");
        assert!(messages(&text)[0].contains("unknown field `temperature`"));
    }

    #[test]
    fn a_child_takes_what_its_table_leaves_out_from_the_caller() {
        let text = with_task("[tools.task.child]\nmodel = \"small\"\ntools = [\"read\"]\n");
        let deployment = parse(&text).expect("valid");
        let coder = deployment.agent(Some("coder")).expect("coder");
        let children = deployment.children_of(&coder);
        let [child] = &children[..] else {
            panic!("one child: {children:?}");
        };
        assert_eq!(child.id.get_ref(), "coder/task");
        assert_eq!(child.model.get_ref(), "small");
        assert_eq!(child.persona.get_ref(), coder.persona.get_ref());
        let tools: Vec<&str> = child
            .tools
            .iter()
            .map(|tool| tool.get_ref().as_str())
            .collect();
        assert_eq!(tools, ["read"]);
        let found = deployment
            .agent(Some("coder/task"))
            .expect("a child by its id");
        assert_eq!(found.model.get_ref(), "small");
        let missing = deployment.agent(Some("nobody")).expect_err("no such agent");
        assert!(
            missing
                .message()
                .ends_with("its agents are `coder`, `other`, and their children `coder/task`"),
            "{}",
            missing.message()
        );
        // `other` does not list `task`: no children.
        let other = deployment.agent(Some("other")).expect("other");
        assert!(deployment.children_of(&other).is_empty());
    }

    #[test]
    fn an_unknown_tokenizer_points_at_its_key() {
        let text = with_adapter("tokenizer = \"cl100k\"\n");
        let problems = parse(&text).expect_err("an unknown tokenizer");
        assert_eq!(problems.len(), 1);
        assert!(
            problems[0]
                .message()
                .starts_with("unknown tokenizer `cl100k` (did you mean `cl100k_base`?)"),
            "{}",
            problems[0].message()
        );
        let label = miette::Diagnostic::labels(&problems[0])
            .and_then(|mut labels| labels.next())
            .expect("a label");
        let file = problems[0].source().expect("a place in the file");
        assert_eq!(file.position(label.offset()), (6, 13));
    }

    #[test]
    fn the_tokenizer_is_the_files_or_the_agents_models() {
        let deployment = parse(GOOD).expect("valid");
        let coder = deployment.agent(Some("coder")).expect("coder");
        assert!(deployment.tokenizer_for(&coder).is_default(), "gpt-test");
        let text = with_adapter("tokenizer = \"cl100k_base\"\n");
        let deployment = parse(&text).expect("valid");
        let coder = deployment.agent(Some("coder")).expect("coder");
        assert_eq!(
            deployment.tokenizer_for(&coder),
            Tokenizer::configured(dsh_agent_loop::Encoding::Cl100kBase)
        );
    }

    #[test]
    fn an_agent_may_set_a_token_budget() {
        let text = with_other("max_prompt_tokens = 4000\n");
        let deployment = parse(&text).expect("valid");
        let other = deployment.agent(Some("other")).expect("other");
        assert_eq!(
            other.max_prompt_tokens.as_ref().map(|max| *max.get_ref()),
            Some(4000)
        );
        assert!(
            deployment
                .agent(Some("coder"))
                .expect("coder")
                .max_prompt_tokens
                .is_none()
        );
        let text = with_other("max_prompt_tokens = -1\n");
        assert!(
            messages(&text)[0].contains("invalid value"),
            "{:?}",
            messages(&text)
        );
    }

    #[test]
    fn an_agent_id_cannot_contain_a_slash() {
        let text = GOOD.replace("id = \"other\"", "id = \"coder/task\"");
        assert_eq!(messages(&text), ["agent id `coder/task` contains `/`"]);
    }
}

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
//! the `layers` module (`LayerSpec`, `SectionSpec`).
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
//! Each table is a schema owned where it is used, deserialized here with
//! `toml::Spanned` strings so problems point at their keys: `[adapter.*]`
//! is `dsh_agent_loop::AdapterConfig`; each `[tools.<name>]` is its tool
//! crate's table, chosen by name and `kind` ([`tools`]); `[mcp.<name>]`
//! is `dsh_tool_mcp::McpServerTable`; `[tools.<name>.child]` is
//! `dsh_tool_subagent::ChildAgentConfig`, whose `child_of` makes the
//! child. [`schema`] is the JSON Schema of the whole file, made from the
//! same types (`dsh schema` prints it).
//!
//! Unknown keys and wrong types are errors with file, line and column:
//! the first of the top-level keys, and the first of each `[tools.<name>]`
//! and `[mcp.<name>]` table, which are read one by one; the checks after
//! them report every problem they find.

mod layers;
pub mod mcp;
mod outputs;
mod places;
mod prompt_problems;
mod schema;
mod sessions;
mod string_offsets;
pub mod tools;

use std::borrow::Cow;
use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};

use dsh_agent_loop::{AdapterConfig, ContextBudget, PERSONA_SECTION, Tokenizer, TokenizerRule};
use dsh_system_prompt::suggestion::closest;
use dsh_system_prompt::template::quoted_list;
use dsh_tool_bash::BashTable;
use dsh_tool_subagent::{AgentFields, SpawnProvider};
use schemars::JsonSchema;
use serde::Deserialize;
use toml::Spanned;
use toml::de::DeTable;

use crate::facts::instructions::InstructionsConfig;
use crate::policy::environment::EnvironmentTable;
use crate::problem::{Problem, SourceFile};
use dsh_sandbox::{Sandbox, SandboxMode, SandboxTable};
use layers::{PresetFile, ToolOrderList, check_layer};
use places::{deserializer_problem, entries};
use tools::{ToolInstance, ToolTables, read_tool_tables};

pub use layers::{LayerSpec, SectionSpec};
pub(crate) use outputs::check_output;
pub use places::TablePlaces;
pub use prompt_problems::prompt_problems;
pub use schema::schema;
pub use sessions::SessionStore;
pub use string_offsets::{StringFileMap, string_file_range};

/// The coding-agent deployment, built into the binary: what `dsh` runs
/// when no `--config` is given.
pub(crate) const EMBEDDED: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../examples/coding-agent/dsh.toml"
));

/// The name the embedded deployment goes by in diagnostics.
pub(crate) const EMBEDDED_NAME: &str = "built-in:examples/coding-agent/dsh.toml";

/// The largest tool schema `dsh check` accepts unless the file sets
/// `max_tool_schema_bytes`: 256 KiB, far above any built-in tool's and
/// well-behaved server's, and below what makes every request pay for one
/// tool.
pub const DEFAULT_MAX_TOOL_SCHEMA_BYTES: u64 = 256 * 1024;

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
    pub tools: BTreeMap<String, ToolInstance>,
    /// The tools whose calls must be approved first (`permission = "ask"`),
    /// built-ins and instances alike.
    pub ask_first: Vec<String>,
    /// The `roots` of `[tools.write]` and `[tools.edit]`, by tool.
    pub roots: BTreeMap<String, Vec<PathBuf>>,
    /// `[tools.bash]`; its `env_remove` are variables `bash` commands run
    /// without, besides the adapter's secrets (`secret_env_vars`).
    pub bash: BashTable,
    /// `max_subagent_depth`: how deep subagents may nest, for every
    /// provider (`dsh_tool_subagent::DEFAULT_MAX_DEPTH` when left out).
    pub max_subagent_depth: u32,
    /// `max_tool_schema_bytes` as the file sets it, with its place; left
    /// out, [`DEFAULT_MAX_TOOL_SCHEMA_BYTES`]
    /// ([`max_tool_schema_bytes`](Self::max_tool_schema_bytes)).
    pub max_tool_schema_bytes: Option<Spanned<u64>>,
    /// What the deployment adds to the global layer: its `tool_order`.
    pub global_layer: LayerSpec,
    /// The `[presets.<id>]`, checked.
    pub presets: BTreeMap<String, LayerSpec>,
    /// The `[[agents]]`, checked, in the file's order.
    pub agents: Vec<AgentSpec>,
    /// The `[mcp.<name>]` servers, checked.
    pub mcp: Vec<mcp::McpSpec>,
    /// `[sessions]`: where its sessions are recorded.
    pub sessions: SessionStore,
    /// `[instructions]`, checked: how each session finds its instruction
    /// files.
    pub instructions: InstructionsConfig,
    /// `[sandbox]`, checked: the policy commands and MCP servers run in,
    /// unless an agent or the command line chooses another mode.
    pub sandbox: Sandbox,
    /// `[sandbox] mode` as written: the most a person's mode switch may
    /// grant, where neither the command line nor the agent says less.
    /// `None`: the file sets no ceiling.
    pub sandbox_ceiling: Option<SandboxMode>,
    /// `[environment]`: the secrets no child gets.
    pub environment: EnvironmentTable,
}

/// The deployment file as written, but for `[tools]` and `[mcp]`, whose
/// tables are read one by one ([`tools`], [`mcp`]). Its documentation is
/// the schema's: written for the file's reader.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct DeploymentFile {
    /// The model adapter, and the default model of every agent: one
    /// `[adapter.<kind>]` table, `openai`, `anthropic` or `scripted`.
    #[schemars(with = "AdapterConfig<String>")]
    adapter: AdapterConfig<Spanned<String>>,
    /// The order of the tools in every agent's tool list: tool names,
    /// and `"<unlisted-tools>"` once, where the tools not listed go, by
    /// name. An agent's or a preset's `tool_order` overrides it. Default:
    /// every tool by name.
    #[schemars(with = "Option<Vec<String>>")]
    tool_order: Option<ToolOrderList>,
    /// How deep subagents may nest, for every provider: a call that would
    /// start a child deeper than this is refused. Default: 4.
    max_subagent_depth: Option<u32>,
    /// The largest tool schema (name, description and input schema, as
    /// sent) `dsh check` accepts, in bytes: an MCP server's tool past it is
    /// a problem before any session pays for it. Default: 262144.
    #[schemars(with = "Option<u64>")]
    max_tool_schema_bytes: Option<Spanned<u64>>,
    /// Per-agent variants without copies: a preset is a layer of sections
    /// and a tool order that the agents naming it in `preset` share.
    #[serde(default)]
    presets: BTreeMap<String, PresetFile>,
    /// The agents the deployment serves; the first is the default of
    /// `--agent`.
    agents: Vec<AgentFile>,
    /// Where the deployment's sessions are recorded, or that they are not.
    #[serde(default)]
    sessions: sessions::SessionsTable,
    /// Which instruction files (`AGENTS.md`, `CLAUDE.md`) each session
    /// reads from its project, and how many bytes of them.
    #[schemars(with = "Option<InstructionsConfig>")]
    instructions: Option<Spanned<InstructionsConfig>>,
    /// What the commands and MCP servers dsh starts may change: a Landlock
    /// sandbox, its mode, network and writable directories.
    #[serde(default)]
    #[schemars(with = "SandboxTable")]
    sandbox: SandboxTable<Spanned<String>>,
    /// What no process dsh starts may see of its environment.
    #[serde(default)]
    environment: EnvironmentTable,
}

/// `[[agents]]`: one agent of the deployment.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct AgentFile {
    /// The agent's id, unique in the deployment and without `/`: what
    /// `--agent` takes.
    #[schemars(with = "String")]
    id: Spanned<String>,
    /// The agent's model. Default: the adapter's `model`.
    #[schemars(with = "Option<String>")]
    model: Option<Spanned<String>>,
    /// Who the agent is and how it behaves: a template rendered as the
    /// first section of its prompt, `agent:persona`; `<<model>>` and
    /// `<<cwd>>` are replaced.
    #[schemars(with = "String")]
    persona: Spanned<String>,
    /// The tools the agent may call: built-in tools by name (`read`,
    /// `write`, `edit`, `bash`, `todo_write`), `[tools.<name>]` instances,
    /// and `"mcp:<name>"` for every tool of an `[mcp.<name>]` server.
    /// Default: none.
    #[serde(default)]
    #[schemars(with = "Vec<String>")]
    tools: Vec<Spanned<String>>,
    /// The most tokens the agent's system prompt and tools' schemas may
    /// take together: `dsh check` fails above it. Default: no budget.
    #[schemars(with = "Option<u64>")]
    max_prompt_tokens: Option<Spanned<u64>>,
    /// The `[presets.<id>]` whose sections and tool order the agent
    /// shares.
    #[schemars(with = "Option<String>")]
    preset: Option<Spanned<String>>,
    /// Sections of the agent's own layer: new ones, or ones that shadow a
    /// section of the same name for this agent only.
    #[serde(default)]
    sections: Vec<SectionSpec>,
    /// The order of the agent's tools, as the top-level `tool_order`;
    /// nearest wins.
    #[schemars(with = "Option<Vec<String>>")]
    tool_order: Option<ToolOrderList>,
    /// The agent's sandbox mode, in place of `[sandbox] mode`:
    /// `"read-only"`, `"workspace-write"` or `"full-access"`.
    sandbox: Option<SandboxMode>,
}

/// One agent of a deployment as the file specifies it, each field with
/// its place in the file; the agent loop's `Agent` is built from it.
#[derive(Debug, Clone)]
pub struct AgentSpec {
    /// Its id (`<agent>/<instance>` for a child).
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
    /// Its own sandbox mode, in place of the deployment's; a child runs in
    /// its parent's.
    pub sandbox: Option<SandboxMode>,
}

impl AgentSpec {
    /// The text of the section named `section` this agent's prompt gets
    /// from the deployment, with whose it is: a section of its own layer,
    /// else of its preset's, else its persona. `None` for a section the
    /// deployment does not write.
    pub(crate) fn deployment_text<'d>(
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
        let mut deployment = Self::parse(file, dir, builtin_tools)?;
        if let Some(path) = path {
            // The file that says what every command may do is not theirs
            // to change, even inside the workspace.
            let real = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
            deployment.sandbox = deployment.sandbox.clone().with_protected([real]);
        }
        Ok(deployment)
    }

    /// Parses and checks a deployment's text.
    pub fn parse(
        file: SourceFile,
        dir: Option<PathBuf>,
        builtin_tools: &[&str],
    ) -> Result<Self, Vec<Problem>> {
        let (read, problems) = ReadFile::read(&file, dir.as_deref(), builtin_tools)?;
        let ReadFile {
            root,
            tools,
            mcp,
            mcp_servers,
        } = read;
        let ToolTables {
            instances,
            broken,
            ask_first,
            roots,
            bash,
        } = tools;
        let mut checks = Checks {
            file: &file,
            builtin_tools,
            instances,
            broken,
            mcp_servers,
            problems,
        };
        checks.children_tools();
        let checked = checks.root(root, dir.as_deref());
        let Checks {
            instances: tools,
            problems,
            ..
        } = checks;
        if !problems.is_empty() {
            return Err(problems);
        }
        Ok(Self {
            file,
            dir,
            adapter: checked.adapter,
            tokenizers: checked.tokenizers,
            tools,
            ask_first,
            roots,
            bash,
            max_subagent_depth: checked.max_subagent_depth,
            max_tool_schema_bytes: checked.max_tool_schema_bytes,
            global_layer: checked.global_layer,
            presets: checked.presets,
            agents: checked.agents,
            mcp,
            sessions: checked.sessions,
            instructions: checked.instructions,
            sandbox: checked.sandbox,
            sandbox_ceiling: checked.sandbox_ceiling,
            environment: checked.environment,
        })
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
        let table = self.tools.get(instance)?;
        let child = table.table.child.as_ref()?;
        let AgentFields {
            model,
            persona,
            tools,
            preset,
        } = child.child_of(AgentFields {
            model: parent.model.clone(),
            persona: parent.persona.clone(),
            tools: Some(parent.tools.clone()),
            preset: parent.preset.clone(),
        });
        Some(AgentSpec {
            id: Spanned::new(
                table.places.key("child"),
                SpawnProvider::child_id(parent.id.get_ref(), instance),
            ),
            model,
            persona,
            tools: tools.unwrap_or_default(),
            max_prompt_tokens: None,
            preset,
            layer: LayerSpec::default(),
            sandbox: parent.sandbox,
        })
    }

    /// The largest tool schema, as sent, that `dsh check` accepts: the
    /// file's `max_tool_schema_bytes`, else
    /// [`DEFAULT_MAX_TOOL_SCHEMA_BYTES`].
    pub fn max_tool_schema_bytes(&self) -> u64 {
        self.max_tool_schema_bytes
            .as_ref()
            .map_or(DEFAULT_MAX_TOOL_SCHEMA_BYTES, |max| *max.get_ref())
    }

    /// The variables no child process is ever given: the model adapter's
    /// key, every MCP server's `bearer_token_env`, and `[environment]
    /// secrets` (the secrets of
    /// [`ChildEnvironment`](crate::policy::environment::ChildEnvironment)).
    pub(crate) fn secret_env_vars(&self) -> Vec<String> {
        let tokens = (self.mcp.iter())
            .filter_map(|server| server.bearer_token_env.as_ref())
            .map(|var| var.get_ref().clone());
        (self.adapter.secret_env_vars().into_iter())
            .map(str::to_owned)
            .chain(tokens)
            .chain(self.environment.secrets.iter().cloned())
            .collect()
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

/// The file as read: its top-level keys deserialized, and each
/// `[tools.<name>]` and `[mcp.<name>]` table read as its own type.
struct ReadFile {
    root: DeploymentFile,
    tools: ToolTables,
    mcp: Vec<mcp::McpSpec>,
    /// The names of the `[mcp.<name>]` tables, good or not.
    mcp_servers: Vec<String>,
}

impl ReadFile {
    /// Reads `file`: `Ok` with the problems of the tables read one by one,
    /// or `Err` when the file is no TOML or its top-level keys are wrong
    /// (with the tables' problems after that one).
    fn read(
        file: &SourceFile,
        dir: Option<&Path>,
        builtin_tools: &[&str],
    ) -> Result<(Self, Vec<Problem>), Vec<Problem>> {
        let mut root = DeTable::parse(file.text())
            .map_err(|error| vec![deserializer_problem(file, &error)])?;
        let mut take = |key: &str| root.get_mut().remove(key);
        let (tools, mcp) = (take("tools"), take("mcp"));
        let mut problems = Vec::new();
        let tools = entries(file, "tools", tools, &mut problems);
        let tools = read_tool_tables(file, tools, builtin_tools, &mut problems);
        let mcp = entries(file, "mcp", mcp, &mut problems);
        let mcp_servers = mcp.keys().cloned().collect();
        let mcp = mcp::read_servers(file, dir, mcp, &mut problems);
        match DeploymentFile::deserialize(toml::de::Deserializer::from(root)) {
            Ok(root) => Ok((
                Self {
                    root,
                    tools,
                    mcp,
                    mcp_servers,
                },
                problems,
            )),
            Err(error) => {
                problems.insert(0, deserializer_problem(file, &error));
                Err(problems)
            }
        }
    }
}

/// The top-level keys, checked.
struct CheckedRoot {
    adapter: AdapterConfig<Spanned<String>>,
    sandbox: Sandbox,
    sandbox_ceiling: Option<SandboxMode>,
    environment: EnvironmentTable,
    tokenizers: TokenizerRule,
    max_subagent_depth: u32,
    max_tool_schema_bytes: Option<Spanned<u64>>,
    global_layer: LayerSpec,
    presets: BTreeMap<String, LayerSpec>,
    agents: Vec<AgentSpec>,
    sessions: SessionStore,
    instructions: InstructionsConfig,
}

/// The checks the deserializer cannot make, each problem reported with its
/// place in the file. Every problem is collected, not just the first: each
/// phase pushes onto `problems` and goes on.
struct Checks<'a> {
    file: &'a SourceFile,
    /// The tool names that need no `[tools]` entry.
    builtin_tools: &'a [&'a str],
    /// The `[tools.<name>]` instances, checked.
    instances: BTreeMap<String, ToolInstance>,
    /// The instance tables with a problem, reported already.
    broken: HashSet<String>,
    /// The names of the `[mcp.<name>]` tables.
    mcp_servers: Vec<String>,
    problems: Vec<Problem>,
}

impl Checks<'_> {
    /// The top-level keys: the adapter's tokenizer, the deployment's
    /// and the presets' layers, the agents, `[instructions]`.
    fn root(&mut self, root: DeploymentFile, dir: Option<&Path>) -> CheckedRoot {
        let DeploymentFile {
            adapter,
            tool_order,
            max_subagent_depth,
            max_tool_schema_bytes,
            presets,
            agents,
            sessions,
            instructions,
            sandbox,
            environment,
        } = root;
        let tokenizers = self.tokenizer(&adapter);
        let sandbox_ceiling = sandbox.mode;
        let sandbox = self.sandbox(sandbox);
        let global_layer = check_layer(
            self.file,
            "the deployment",
            Vec::new(),
            tool_order,
            &mut self.problems,
        );
        let presets: BTreeMap<String, LayerSpec> = presets
            .into_iter()
            .map(|(id, preset)| {
                let whose = format!("preset `{id}`");
                let layer = check_layer(
                    self.file,
                    &whose,
                    preset.sections,
                    preset.tool_order,
                    &mut self.problems,
                );
                (id, layer)
            })
            .collect();
        let agents = self.agents(agents, &adapter, &presets);
        CheckedRoot {
            tokenizers,
            max_subagent_depth: max_subagent_depth.unwrap_or(dsh_tool_subagent::DEFAULT_MAX_DEPTH),
            max_tool_schema_bytes,
            global_layer,
            presets,
            agents,
            sessions: sessions.resolve(dir),
            instructions: self.instructions(instructions),
            adapter,
            sandbox,
            sandbox_ceiling,
            environment,
        }
    }

    /// `[sandbox]`: its `writable` directories absolute.
    fn sandbox(&mut self, table: SandboxTable<Spanned<String>>) -> Sandbox {
        match table.policy() {
            Ok(policy) => policy,
            Err(relative) => {
                for path in relative {
                    self.problems.push(
                        self.file
                            .problem(format!(
                                "`[sandbox] writable` holds `{}`, which is not an absolute path",
                                path.get_ref()
                            ))
                            .label(path.span(), "relative")
                            .help("write the directory's whole path, from `/`"),
                    );
                }
                Sandbox::new(dsh_sandbox::DEFAULT_MODE)
            }
        }
    }

    /// `[instructions]`: its file names plain names.
    fn instructions(&mut self, table: Option<Spanned<InstructionsConfig>>) -> InstructionsConfig {
        let Some(table) = table else {
            return InstructionsConfig::default();
        };
        match table.get_ref().check() {
            Ok(()) => table.into_inner(),
            Err(error) => {
                self.problems.push(
                    self.file
                        .problem(error.to_string())
                        .label(table.span(), "in this table"),
                );
                InstructionsConfig::default()
            }
        }
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
                let tools = instance.table.child.as_ref()?.tools.clone()?;
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
            self.agent_id(&agent.id, &mut ids);
            let model = agent.model.or_else(|| adapter.model().cloned());
            let model = self.agent_model(&agent.id, model);
            let whose = format!("agent `{}`", agent.id.get_ref());
            self.tool_list(&whose, &agent.tools);
            if let Some(preset) = &agent.preset {
                self.preset(&whose, preset, presets);
            }
            let (sections, tool_order) = (agent.sections, agent.tool_order);
            let layer = check_layer(self.file, &whose, sections, tool_order, &mut self.problems);
            checked.push(AgentSpec {
                id: agent.id,
                model,
                persona: agent.persona,
                tools: agent.tools,
                max_prompt_tokens: agent.max_prompt_tokens,
                preset: agent.preset,
                layer,
                sandbox: agent.sandbox,
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

    /// [`GOOD`] with `tables` written before the `task` instance's.
    fn with_tables(tables: &str) -> String {
        GOOD.replace("[tools.task]", &format!("{tables}[tools.task]"))
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
        let provider = deployment.tools["task"].table.provider.as_ref();
        assert_eq!(provider.map(Spanned::get_ref).expect("a provider"), "spawn");
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
        let text = with_tables(
            "[tools.bash]\npermission = \"ask\"\n[tools.read]\npermission = \"allow\"\n",
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
        let text = with_tables("[tools.bash]\npermission = \"sometimes\"\n");
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
        let text = with_tables(
            "[tools.write]\nroots = [\"/tmp\", \"/srv/data\"]\n[tools.edit]\nroots = []\n",
        );
        let deployment = parse(&text).expect("valid");
        assert_eq!(
            deployment.roots["write"],
            [PathBuf::from("/tmp"), PathBuf::from("/srv/data")]
        );
        assert!(deployment.roots["edit"].is_empty());
        let text =
            with_tables("[tools.write]\nroots = [\"tmp\"]\n[tools.bash]\nroots = [\"/tmp\"]\n");
        assert_eq!(
            messages(&text),
            [
                "unknown field `roots`, expected one of `permission`, `env_remove`, `env_keep`",
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

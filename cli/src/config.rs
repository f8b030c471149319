//! The deployment file: one model adapter, the tool instances it
//! configures, and the agents it serves.
//!
//! ```toml
//! [adapter.openai]                  # or [adapter.scripted] answers = "answers.toml"
//! base_url = "https://api.openai.com/v1"
//! model = "gpt-5"                   # the default model of every agent
//! api_key_env = "OPENAI_API_KEY"
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
//! [[agents]]
//! id = "coder"
//! model = "gpt-5"                   # optional: overrides the adapter's model
//! persona = """You are a coding agent running on <<model>>."""
//! tools = ["read", "bash", "task"]  # built-in tools by name, or a [tools.<name>] instance
//! ```
//!
//! Unknown keys and wrong types are errors with file, line and column (the
//! `toml` deserializer reports the first one; the checks after it report
//! every problem they find).

mod string_offsets;

use std::borrow::Cow;
use std::collections::{BTreeMap, HashSet};
use std::ops::Range;
use std::path::{Path, PathBuf};

use dsh_system_prompt::closest;
use serde::Deserialize;
use toml::Spanned;

use crate::diagnostics::{Problem, SourceFile};
use string_offsets::StringOffsets;

/// The coding-agent deployment, built into the binary: what `dsh` runs
/// when no `--config` is given.
pub(crate) const EMBEDDED: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../examples/coding-agent/dsh.toml"
));

/// The name the embedded deployment goes by in diagnostics.
pub(crate) const EMBEDDED_NAME: &str = "built-in:examples/coding-agent/dsh.toml";

/// A deployment, parsed and checked.
#[derive(Debug)]
pub(crate) struct Deployment {
    /// The file it was read from, for diagnostics.
    pub(crate) file: SourceFile,
    /// Relative paths in the file (the scripted answers) are resolved
    /// against this directory; `None` for the embedded deployment.
    pub(crate) dir: Option<PathBuf>,
    pub(crate) adapter: Adapter,
    pub(crate) tools: BTreeMap<String, Spanned<ToolInstance>>,
    pub(crate) agents: Vec<Agent>,
}

/// The deployment file as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct DeploymentFile {
    adapter: Adapter,
    #[serde(default)]
    tools: BTreeMap<String, Spanned<ToolInstance>>,
    agents: Vec<AgentFile>,
}

/// The model adapter every agent of the deployment talks to.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub(crate) enum Adapter {
    /// An OpenAI-compatible chat-completions endpoint.
    Openai(OpenAiAdapter),
    /// Canned answers from a file: deterministic and offline.
    Scripted(ScriptedAdapter),
}

/// `[adapter.openai]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct OpenAiAdapter {
    /// The API's base URL, up to and without `/chat/completions`.
    pub(crate) base_url: Spanned<String>,
    /// The default model of the deployment's agents.
    pub(crate) model: Option<Spanned<String>>,
    /// The environment variable that holds the API key; without it no key
    /// is sent (a local server).
    pub(crate) api_key_env: Option<Spanned<String>>,
    /// How long one request may take, in milliseconds.
    pub(crate) timeout_ms: Option<u64>,
}

/// `[adapter.scripted]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ScriptedAdapter {
    /// The file of canned answers, relative to the deployment file.
    pub(crate) answers: Spanned<PathBuf>,
    /// The default model name the agents report as `<<model>>`.
    pub(crate) model: Option<Spanned<String>>,
}

impl Adapter {
    fn model(&self) -> Option<&Spanned<String>> {
        match self {
            Self::Openai(openai) => openai.model.as_ref(),
            Self::Scripted(scripted) => scripted.model.as_ref(),
        }
    }
}

/// `[tools.<name>]`: a configured tool instance; the table's key is the
/// name the model calls it by.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ToolInstance {
    pub(crate) kind: ToolKind,
    /// For `kind = "subagent"`: the subagent provider the instance starts
    /// children with (`spawn`, `fork`).
    pub(crate) provider: Spanned<String>,
    /// For `provider = "spawn"`: who the children are, where they differ
    /// from the calling agent.
    #[serde(default)]
    pub(crate) child: Option<Spanned<Child>>,
}

/// `[tools.<name>.child]`: a spawned child's model, persona and tools; each
/// left out is the calling agent's.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Child {
    pub(crate) model: Option<Spanned<String>>,
    /// A template fragment, like an agent's persona.
    pub(crate) persona: Option<Spanned<String>>,
    pub(crate) tools: Option<Vec<Spanned<String>>>,
}

/// What kind of tool a `[tools.<name>]` instance is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum ToolKind {
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
}

/// One agent of a deployment.
#[derive(Debug, Clone)]
pub(crate) struct Agent {
    pub(crate) id: Spanned<String>,
    /// The agent's model: its own, or the adapter's default.
    pub(crate) model: Spanned<String>,
    /// The persona: a template fragment of this agent, rendered as section
    /// `agent:persona`.
    pub(crate) persona: Spanned<String>,
    /// The names of the tools the agent may call, as the model sees them.
    pub(crate) tools: Vec<Spanned<String>>,
}

impl Agent {
    /// The file range of the persona text that decoded to `decoded`, a
    /// range inside the persona string. Falls back to the whole value when
    /// the string cannot be mapped.
    pub(crate) fn persona_file_range(
        &self,
        file: &SourceFile,
        decoded: Range<usize>,
    ) -> Range<usize> {
        let value = self.persona.span();
        let Some(raw) = file.text().get(value.clone()) else {
            return value;
        };
        match StringOffsets::new(raw, self.persona.get_ref()) {
            Some(offsets) => {
                let range = offsets.raw_range(decoded);
                value.start + range.start..value.start + range.end
            }
            None => value,
        }
    }
}

impl Deployment {
    /// Reads and checks the deployment at `path`, or the embedded one.
    /// `builtin_tools` are the tool names that need no `[tools]` entry.
    pub(crate) fn load(path: Option<&Path>, builtin_tools: &[&str]) -> Result<Self, Vec<Problem>> {
        let (file, dir) = match path {
            Some(path) => {
                let text = std::fs::read_to_string(path).map_err(|error| {
                    vec![Problem::new(format!(
                        "cannot read deployment `{}`: {error}",
                        path.display()
                    ))]
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
    pub(crate) fn parse(
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
            agents,
        } = parsed;
        let mut problems = Vec::new();
        let agents = check(
            &adapter,
            &tools,
            agents,
            &file,
            builtin_tools,
            &mut problems,
        );
        if problems.is_empty() {
            Ok(Self {
                file,
                dir,
                adapter,
                tools,
                agents,
            })
        } else {
            Err(problems)
        }
    }

    /// The children `agent` starts through the instances it lists that
    /// have a `[tools.<name>.child]` table, each as it runs.
    pub(crate) fn children_of(&self, agent: &Agent) -> Vec<Agent> {
        agent
            .tools
            .iter()
            .filter_map(|tool| self.child(agent, tool.get_ref()))
            .collect()
    }

    /// The child `parent` would start through `instance`, when the instance
    /// has a `[tools.<name>.child]` table: what the table leaves out is
    /// `parent`'s, and its id is `<parent>/<instance>`.
    pub(crate) fn child(&self, parent: &Agent, instance: &str) -> Option<Agent> {
        let child = self.tools.get(instance)?.get_ref().child.as_ref()?;
        let Child {
            model,
            persona,
            tools,
        } = child.get_ref();
        Some(Agent {
            id: Spanned::new(child.span(), format!("{}/{instance}", parent.id.get_ref())),
            model: model.clone().unwrap_or_else(|| parent.model.clone()),
            persona: persona.clone().unwrap_or_else(|| parent.persona.clone()),
            tools: tools.clone().unwrap_or_else(|| parent.tools.clone()),
        })
    }

    /// The agent with id `id`, or the first agent. A child is found by its
    /// id too, `<agent>/<instance>` (see [`children_of`](Self::children_of)).
    pub(crate) fn agent(&self, id: Option<&str>) -> Result<Cow<'_, Agent>, Problem> {
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
        let children: Vec<Agent> = self
            .agents
            .iter()
            .flat_map(|agent| self.children_of(agent))
            .collect();
        if let Some(child) = children.iter().find(|child| child.id.get_ref() == id) {
            return Ok(Cow::Owned(child.clone()));
        }
        let ids = |agents: &[Agent]| -> String {
            agents
                .iter()
                .map(|agent| format!("`{}`", agent.id.get_ref()))
                .collect::<Vec<_>>()
                .join(", ")
        };
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

    /// The scripted answers file, resolved against the deployment's
    /// directory.
    pub(crate) fn resolve(&self, path: &Path) -> PathBuf {
        match &self.dir {
            Some(dir) if path.is_relative() => dir.join(path),
            _ => path.to_path_buf(),
        }
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
/// place in the file. Every problem is collected, not just the first.
fn check(
    adapter: &Adapter,
    tools: &BTreeMap<String, Spanned<ToolInstance>>,
    agents: Vec<AgentFile>,
    file: &SourceFile,
    builtin_tools: &[&str],
    problems: &mut Vec<Problem>,
) -> Vec<Agent> {
    // A configured instance must not take a built-in tool's name: the
    // built-in's guidance section is bound to that name.
    for (name, instance) in tools {
        if builtin_tools.contains(&name.as_str()) {
            problems.push(
                file.problem(format!(
                    "tool instance `{name}` takes the name of the built-in tool `{name}`"
                ))
                .label(instance.span(), "declared here")
                .help(format!(
                    "name the instance differently, e.g. `[tools.{name}_agent]`"
                )),
            );
        }
        if let Some(child_tools) = instance
            .get_ref()
            .child
            .as_ref()
            .and_then(|child| child.get_ref().tools.as_ref())
        {
            check_tool_list(
                &format!("the children of `{name}`"),
                child_tools,
                tools,
                file,
                builtin_tools,
                problems,
            );
        }
    }

    if agents.is_empty() {
        problems.push(
            file.problem("the deployment has no agents")
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
            tools: agent_tools,
        } = agent;
        if id.get_ref().trim().is_empty() {
            problems.push(
                file.problem("an agent's `id` is empty")
                    .label(id.span(), "empty id"),
            );
        } else if id.get_ref().contains('/') {
            problems.push(
                file.problem(format!("agent id `{}` contains `/`", id.get_ref()))
                    .label(id.span(), "contains `/`")
                    .help("`<agent>/<instance>` names the child an agent spawns; choose an id without `/`"),
            );
        } else if !ids.insert(id.get_ref().clone()) {
            problems.push(
                file.problem(format!("agent `{}` is declared twice", id.get_ref()))
                    .label(id.span(), "second declaration")
                    .help("agent ids are unique within a deployment"),
            );
        }
        let model = match model.or_else(|| adapter.model().cloned()) {
            Some(model) => model,
            None => {
                problems.push(
                    file.problem(format!("agent `{}` has no model", id.get_ref()))
                        .label(id.span(), "this agent")
                        .help("set `model` on the agent, or a default `model` in `[adapter.*]`"),
                );
                Spanned::new(id.span(), String::new())
            }
        };
        check_tool_list(
            &format!("agent `{}`", id.get_ref()),
            &agent_tools,
            tools,
            file,
            builtin_tools,
            problems,
        );
        checked.push(Agent {
            id,
            model,
            persona,
            tools: agent_tools,
        });
    }

    checked
}

/// Checks a list of tool names, `whose` (`agent \`coder\``): each listed
/// once, each a built-in or a `[tools.<name>]` instance.
fn check_tool_list(
    whose: &str,
    list: &[Spanned<String>],
    tools: &BTreeMap<String, Spanned<ToolInstance>>,
    file: &SourceFile,
    builtin_tools: &[&str],
    problems: &mut Vec<Problem>,
) {
    let mut seen = HashSet::new();
    for tool in list {
        let name = tool.get_ref().as_str();
        if !seen.insert(name) {
            problems.push(
                file.problem(format!("tool `{name}` is listed twice for {whose}"))
                    .label(tool.span(), "listed again"),
            );
        } else if !builtin_tools.contains(&name) && !tools.contains_key(name) {
            let mut known: Vec<&str> = builtin_tools.to_vec();
            known.extend(tools.keys().map(String::as_str));
            known.sort_unstable();
            let mut help = format!(
                "the tools are the built-ins and the `[tools.<name>]` instances: {}",
                known
                    .iter()
                    .map(|name| format!("`{name}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
            if let Some(closest) = closest(name, &known) {
                help = format!("did you mean `{closest}`? {help}");
            }
            problems.push(
                file.problem(format!("unknown tool `{name}`"))
                    .label(tool.span(), "unknown tool")
                    .help(help),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BUILTINS: &[&str] = &["bash", "read", "todo_write"];

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
        let text = GOOD.replace("persona = \"x\"", "persona = \"x\"\ntemperature = 1");
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
    fn a_childs_tools_are_checked_like_an_agents() {
        let text = GOOD.replace(
            "provider = \"spawn\"\n",
            "provider = \"spawn\"\n[tools.task.child]\ntools = [\"raed\", \"bash\", \"bash\"]\n",
        );
        assert_eq!(
            messages(&text),
            [
                "unknown tool `raed`",
                "tool `bash` is listed twice for the children of `task`",
            ]
        );
        let text = GOOD.replace(
            "provider = \"spawn\"\n",
            "provider = \"spawn\"\n[tools.task.child]\ntemperature = 1\n",
        );
        assert!(messages(&text)[0].contains("unknown field `temperature`"));
    }

    #[test]
    fn a_child_takes_what_its_table_leaves_out_from_the_caller() {
        let text = GOOD.replace(
            "provider = \"spawn\"\n",
            "provider = \"spawn\"\n[tools.task.child]\nmodel = \"small\"\ntools = [\"read\"]\n",
        );
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
    fn an_agent_id_cannot_contain_a_slash() {
        let text = GOOD.replace("id = \"other\"", "id = \"coder/task\"");
        assert_eq!(messages(&text), ["agent id `coder/task` contains `/`"]);
    }
}

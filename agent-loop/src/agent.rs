//! Agents: an id, the options a deployment gives it, and the tools it may use.

use std::fmt;
use std::sync::Arc;

use dsh_system_prompt::{Extensions, Scope, ScopeId};
use dsh_tools::ToolSelection;
use serde::{Deserialize, Serialize};

use crate::{AgentId, ContextBudget};

/// What a deployment says about one agent: the model it runs and its
/// persona.
///
/// ```
/// use dsh_agent_loop::AgentOptions;
///
/// let options = AgentOptions::new("gpt-5").with_persona("You are a careful coding agent running <<model>>.");
/// assert_eq!(options.model, "gpt-5");
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentOptions {
    /// The model the agent runs, as its adapter names it (`gpt-5`). It is
    /// sent with every request, and it is the value of the prompt variable
    /// `model`.
    pub model: String,
    /// The agent's template fragment: its identity and behaviour, in the
    /// deployment's words. It renders as section `agent:persona` at order
    /// 0, before all tool guidance, and may reference prompt variables
    /// (`<<model>>`, `<<cwd>>`), which are checked strictly when the prompt
    /// is rendered.
    ///
    /// It is one section of the system prompt, not the system prompt: what
    /// the tools do and how to use them comes from the tools' own
    /// descriptions and sections, so a persona states only who the agent is
    /// and how it behaves. Empty renders nothing.
    #[serde(default)]
    pub persona: String,
    /// How much the model reasons before it answers, where its API takes
    /// a level (OpenAI's `reasoning_effort`); `None`: the API's default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effort: Option<String>,
}

impl AgentOptions {
    /// Options for an agent running `model`, with no persona.
    pub fn new(model: impl Into<String>) -> Self {
        Self {
            model: model.into(),
            persona: String::new(),
            effort: None,
        }
    }

    /// Sets the agent's persona (its template fragment).
    pub fn with_persona(mut self, persona: impl Into<String>) -> Self {
        self.persona = persona.into();
        self
    }
}

/// One agent: an id, its options, and the tools it may use.
///
/// Cheap to clone (the fields are shared), so a clone travels in every
/// [`AssembleContext`](dsh_system_prompt::AssembleContext) the agent's steps
/// assemble with.
///
/// ```
/// use dsh_agent_loop::{Agent, AgentOptions};
///
/// let agent = Agent::new("coder", AgentOptions::new("gpt-5")).with_tools(["read", "bash"]);
/// assert_eq!(agent.id().as_str(), "coder");
/// assert_eq!(agent.scope().to_string(), "global → agent:coder");
/// let reviewer = Agent::new("reviewer", AgentOptions::new("gpt-5")).with_preset("review");
/// assert_eq!(reviewer.scope().to_string(), "global → preset:review → agent:reviewer");
/// assert_eq!(agent.tools(), Some(&["read".to_owned(), "bash".to_owned()][..]));
/// ```
#[derive(Clone)]
pub struct Agent(Arc<AgentInner>);

#[derive(Clone)]
struct AgentInner {
    id: AgentId,
    options: AgentOptions,
    tools: Option<Arc<ToolSelection>>,
    /// The preset the agent joins, if any.
    preset: Option<String>,
    /// Derived from `id` and `preset`: the layers its assemblies see.
    scope: Scope,
    /// Its model's context budget.
    budget: ContextBudget,
    /// What the host attaches to the agent ([`Agent::with_fact`]).
    facts: Extensions,
    /// What the host attaches to its tool calls only
    /// ([`Agent::with_tool_fact`]).
    tool_facts: Extensions,
}

impl Agent {
    /// An agent that may use every installed tool.
    pub fn new(id: impl Into<AgentId>, options: AgentOptions) -> Self {
        let id = id.into();
        Self(Arc::new(AgentInner {
            scope: Scope::new([ScopeId::agent(id.as_str())]),
            budget: ContextBudget::for_model(&options.model, None, None),
            id,
            options,
            tools: None,
            preset: None,
            facts: Extensions::new(),
            tool_facts: Extensions::new(),
        }))
    }

    /// The agent reasoning at `effort` (its model's API's level), or at the
    /// API's default with `None`.
    pub fn with_effort(mut self, effort: Option<String>) -> Self {
        Arc::make_mut(&mut self.0).options.effort = effort;
        self
    }

    /// Attaches `fact`, a value of a type its owner defines (the sandbox
    /// policy in force), to the agent: every assembly of its prompt and
    /// every call of its tools carries it, in their typed extensions, and
    /// its owner reads it back there. A fact of the same type is replaced.
    ///
    /// ```
    /// use dsh_agent_loop::{Agent, AgentOptions};
    ///
    /// struct Mode(&'static str);
    /// let agent = Agent::new("coder", AgentOptions::new("gpt-5")).with_fact(Mode("read-only"));
    /// assert_eq!(agent.facts().get::<Mode>().map(|mode| mode.0), Some("read-only"));
    /// ```
    pub fn with_fact<T: Send + Sync + 'static>(mut self, fact: T) -> Self {
        Arc::make_mut(&mut self.0).facts.insert(fact);
        self
    }

    /// Attaches `fact` to the agent's tool calls only, over a fact of the
    /// same type [`with_fact`](Self::with_fact) attached: what changed in
    /// a session (a mode switched to another sandbox) reaches its tools
    /// while its prompt, and the provider's cache of it, stay as they
    /// were.
    pub fn with_tool_fact<T: Send + Sync + 'static>(mut self, fact: T) -> Self {
        Arc::make_mut(&mut self.0).tool_facts.insert(fact);
        self
    }

    /// The facts attached to the agent's tool calls only.
    pub fn tool_facts(&self) -> &Extensions {
        &self.0.tool_facts
    }

    /// The agent with every fact of `facts` attached (a child's, from its
    /// parent's: it runs under the same policy).
    pub fn with_facts(mut self, facts: &Extensions) -> Self {
        Arc::make_mut(&mut self.0).facts.extend_from(facts);
        self
    }

    /// The facts attached to the agent.
    pub fn facts(&self) -> &Extensions {
        &self.0.facts
    }

    /// Makes the agent join the preset `preset`: its assemblies see the
    /// global layer, then `preset:<preset>`, then its own `agent:<id>`,
    /// the nearest winning. Children a subagent provider starts for it
    /// join the same preset.
    pub fn with_preset(mut self, preset: impl Into<String>) -> Self {
        let preset = preset.into();
        let inner = Arc::make_mut(&mut self.0);
        inner.scope = Scope::new([ScopeId::preset(&preset), ScopeId::agent(inner.id.as_str())]);
        inner.preset = Some(preset);
        self
    }

    /// The preset the agent joins, if any.
    pub fn preset(&self) -> Option<&str> {
        self.0.preset.as_deref()
    }

    /// The layers the agent's assemblies see: global → its preset, if it
    /// has one → `agent:<id>`.
    pub fn scope(&self) -> &Scope {
        &self.0.scope
    }

    /// Restricts the agent to the tools named: the model is told about
    /// those only, guidance bound to the others does not render, and a call
    /// to any other tool is refused.
    pub fn with_tools<I, S>(mut self, tools: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let selection = ToolSelection {
            tools: tools.into_iter().map(Into::into).collect(),
        };
        Arc::make_mut(&mut self.0).tools = Some(Arc::new(selection));
        self
    }

    /// Lets the agent use every installed tool again.
    pub fn with_all_tools(mut self) -> Self {
        Arc::make_mut(&mut self.0).tools = None;
        self
    }

    /// Sets the agent's context budget (by default its model's, from
    /// [`ContextBudget::for_model`]): the loop compacts a request that
    /// reaches its [`threshold`](ContextBudget::threshold).
    pub fn with_budget(mut self, budget: ContextBudget) -> Self {
        Arc::make_mut(&mut self.0).budget = budget;
        self
    }

    /// The agent's context budget.
    pub fn budget(&self) -> &ContextBudget {
        &self.0.budget
    }

    /// The agent's id.
    pub fn id(&self) -> &AgentId {
        &self.0.id
    }

    /// The agent's options.
    pub fn options(&self) -> &AgentOptions {
        &self.0.options
    }

    /// The model the agent runs.
    pub fn model(&self) -> &str {
        &self.0.options.model
    }

    /// The agent's persona (its template fragment).
    pub fn persona(&self) -> &str {
        &self.0.options.persona
    }

    /// The names of the tools the agent may use; `None` means all.
    pub fn tools(&self) -> Option<&[String]> {
        self.0
            .tools
            .as_deref()
            .map(|selection| &selection.tools[..])
    }

    /// The agent's tool set as the tool registry reads it from the context.
    pub fn tool_selection(&self) -> Option<&Arc<ToolSelection>> {
        self.0.tools.as_ref()
    }
}

impl fmt::Debug for Agent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Agent")
            .field("id", &self.0.id)
            .field("model", &self.0.options.model)
            .field("persona", &self.0.options.persona)
            .field("tools", &self.tools())
            .field("preset", &self.preset())
            .field("facts", &self.0.facts)
            .finish()
    }
}

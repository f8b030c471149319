//! The in-process providers: spawn (a fresh child) and fork (a child that
//! continues from the caller's completed turns).

use async_trait::async_trait;
use dsh_agent_loop::{
    Agent, AgentLoop, AgentOptions, CallingTurn, Session, SessionId, TurnError, TurnSummary,
};
use dsh_tools::panic_message;
use serde::{Deserialize, Serialize};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::{SubagentCapabilities, SubagentError, SubagentProvider, SubagentRun, SubagentTask};

/// Who a spawned child is. Each field left out is the parent's.
///
/// ```toml
/// model = "gpt-5-mini"
/// persona = "You are a reviewer. Report problems, change nothing."
/// tools = ["read"]
/// ```
///
/// `S` is how the config holds a string: `String`, or a type that also
/// keeps where the string was written (`toml::Spanned<String>`), so that a
/// front end deserializes this one schema and still points into its file.
/// [`child_of`](Self::child_of) is the rule that makes a child from its
/// parent, whatever `S` is; [`SpawnProvider`] starts its children by it.
///
/// It is also the `[tools.<name>.child]` table of a deployment's
/// [`SubagentTable`](crate::SubagentTable), so its field documentation is
/// written for the file's reader.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ChildAgentConfig<S = String> {
    /// The model the children run on. Default: the calling agent's model.
    pub model: Option<S>,
    /// The children's persona, a template like an agent's (`<<model>>` is
    /// the child's model). Default: the calling agent's persona.
    pub persona: Option<S>,
    /// The tools the children may call, by name: built-in tools,
    /// `[tools.<name>]` instances, `mcp:<server>`. Default: the calling
    /// agent's tools.
    pub tools: Option<Vec<S>>,
}

impl<S> Default for ChildAgentConfig<S> {
    fn default() -> Self {
        Self {
            model: None,
            persona: None,
            tools: None,
        }
    }
}

/// The fields of an agent the child rule reads from a parent and gives a
/// child: see [`ChildAgentConfig::child_of`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AgentFields<S = String> {
    /// The model.
    pub model: S,
    /// The persona (a template fragment).
    pub persona: S,
    /// The tools it may use; `None` means every installed tool.
    pub tools: Option<Vec<S>>,
    /// The preset it joins, if any. A child always joins its parent's.
    pub preset: Option<S>,
}

impl AgentFields {
    /// The fields of `agent`.
    pub fn of(agent: &Agent) -> Self {
        Self {
            model: agent.model().to_owned(),
            persona: agent.persona().to_owned(),
            tools: agent.tools().map(<[String]>::to_vec),
            preset: agent.preset().map(str::to_owned),
        }
    }
}

impl<S: Clone> ChildAgentConfig<S> {
    /// The child of a parent with the fields `parent`: each field the
    /// config gives, or else the parent's — the tools too, so a child of a
    /// parent with every tool has every tool. The child joins the parent's
    /// preset, so it sees what the preset adds; its own persona still
    /// shadows the parent's.
    pub fn child_of(&self, parent: AgentFields<S>) -> AgentFields<S> {
        AgentFields {
            model: self.model.clone().unwrap_or(parent.model),
            persona: self.persona.clone().unwrap_or(parent.persona),
            tools: self.tools.clone().or(parent.tools),
            preset: parent.preset,
        }
    }
}

impl<S> ChildAgentConfig<S> {
    /// The same config with every string mapped by `f` (a front end drops
    /// the places it kept: `config.map(Spanned::into_inner)`).
    pub fn map<T>(self, mut f: impl FnMut(S) -> T) -> ChildAgentConfig<T> {
        ChildAgentConfig {
            model: self.model.map(&mut f),
            persona: self.persona.map(&mut f),
            tools: self
                .tools
                .map(|tools| tools.into_iter().map(&mut f).collect()),
        }
    }
}

/// Runs each task in a fresh child agent and session in this process: the
/// child does not see the caller's conversation
/// (`inherits_parent_context` is `false`). It works in the caller's
/// working directory, through the caller's agent loop.
#[derive(Clone, Debug)]
pub struct SpawnProvider {
    name: String,
    child: ChildAgentConfig,
}

impl Default for SpawnProvider {
    fn default() -> Self {
        Self::new()
    }
}

impl SpawnProvider {
    /// The name the provider registers under unless [`named`](Self::named)
    /// gives another.
    pub const NAME: &'static str = "spawn";

    /// A provider named `spawn` whose children are like their parent.
    pub fn new() -> Self {
        Self {
            name: Self::NAME.to_owned(),
            child: ChildAgentConfig::default(),
        }
    }

    /// Renames the provider, to register a second one (a reviewer, say).
    pub fn named(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// Says who the children are.
    pub fn with_child(mut self, child: ChildAgentConfig) -> Self {
        self.child = child;
        self
    }

    /// The id of the child an agent `parent` starts through a spawn
    /// provider named `provider`: `<parent>/<provider>` (a deployment names
    /// the provider after its tool instance, so `coder/review`).
    pub fn child_id(parent: &str, provider: &str) -> String {
        format!("{parent}/{provider}")
    }

    /// The child this provider starts for `parent`: its id
    /// ([`child_id`](Self::child_id)), and its fields by
    /// [`ChildAgentConfig::child_of`]. What a front end shows as the
    /// child's prompt is the prompt of this agent.
    pub fn child_agent(&self, parent: &Agent) -> Agent {
        let AgentFields {
            model,
            persona,
            tools,
            preset,
        } = self.child.child_of(AgentFields::of(parent));
        let id = Self::child_id(parent.id().as_str(), &self.name);
        // The parent's context budget is its model's as the deployment
        // configures it: a child on the same model has the same window.
        let same_model = model == parent.model();
        // The facts a host attached to the parent (the sandbox it runs in)
        // hold for its child too.
        let mut agent = Agent::new(id, AgentOptions::new(model).with_persona(persona))
            .with_facts(parent.facts());
        if same_model {
            agent = agent.with_budget(*parent.budget());
        }
        if let Some(preset) = preset {
            agent = agent.with_preset(preset);
        }
        match tools {
            Some(tools) => agent.with_tools(tools),
            None => agent,
        }
    }
}

#[async_trait]
impl SubagentProvider for SpawnProvider {
    fn name(&self) -> &str {
        &self.name
    }

    fn capabilities(&self) -> SubagentCapabilities {
        match &self.child.tools {
            Some(tools) if tools.is_empty() => SubagentCapabilities::TEXT_ONLY,
            _ => SubagentCapabilities::WITH_TOOLS,
        }
    }

    fn inherits_parent_context(&self) -> bool {
        false
    }

    async fn start(&self, task: SubagentTask) -> Result<Box<dyn SubagentRun>, SubagentError> {
        let parent = calling_turn(&self.name, &task)?;
        let agent = self.child_agent(parent.agent());
        let session = child_session(&self.name, parent, &task);
        Ok(Box::new(InProcessRun::start(
            &self.name,
            parent.agent_loop().clone(),
            agent,
            session,
            task,
        )))
    }
}

/// Runs each task in a child that continues from the caller: the same
/// agent, seeded with the caller's completed turns — not the turn in
/// flight, which is still being written (`inherits_parent_context` is
/// `true`).
#[derive(Clone, Debug)]
pub struct ForkProvider {
    name: String,
}

impl Default for ForkProvider {
    fn default() -> Self {
        Self::new()
    }
}

impl ForkProvider {
    /// The name the provider registers under unless [`named`](Self::named)
    /// gives another.
    pub const NAME: &'static str = "fork";

    /// A provider named `fork`.
    pub fn new() -> Self {
        Self {
            name: Self::NAME.to_owned(),
        }
    }

    /// Renames the provider.
    pub fn named(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }
}

#[async_trait]
impl SubagentProvider for ForkProvider {
    fn name(&self) -> &str {
        &self.name
    }

    fn capabilities(&self) -> SubagentCapabilities {
        SubagentCapabilities::WITH_TOOLS
    }

    fn inherits_parent_context(&self) -> bool {
        true
    }

    async fn start(&self, task: SubagentTask) -> Result<Box<dyn SubagentRun>, SubagentError> {
        let parent = calling_turn(&self.name, &task)?;
        let session = child_session(&self.name, parent, &task)
            .with_history(parent.completed_turns().iter().cloned());
        Ok(Box::new(InProcessRun::start(
            &self.name,
            parent.agent_loop().clone(),
            parent.agent().clone(),
            session,
            task,
        )))
    }
}

fn calling_turn<'a>(
    provider: &str,
    task: &'a SubagentTask,
) -> Result<&'a CallingTurn, SubagentError> {
    task.parent
        .as_ref()
        .ok_or_else(|| SubagentError::NoCallingTurn {
            provider: provider.to_owned(),
        })
}

/// A fresh session for a child, named after its parent's, in the caller's
/// working directory.
fn child_session(provider: &str, parent: &CallingTurn, task: &SubagentTask) -> Session {
    let id = format!(
        "{}/{provider}-{}",
        parent.session().id,
        SessionId::generate()
    );
    let session = Session::with_id(id);
    match task.cwd.clone().or_else(|| parent.session().cwd.clone()) {
        Some(cwd) => session.with_cwd(cwd),
        None => session,
    }
}

/// A child turn running on its own task, so that nothing it does can take
/// the caller down; disposing cancels and aborts it.
struct InProcessRun {
    provider: String,
    cancel: CancellationToken,
    turn: Option<JoinHandle<Result<TurnSummary, TurnError>>>,
}

impl InProcessRun {
    fn start(
        provider: &str,
        agent_loop: AgentLoop,
        agent: Agent,
        mut session: Session,
        task: SubagentTask,
    ) -> Self {
        // A child of the call's token: cancelling the parent's turn
        // cancels the child, and disposing the child leaves the parent be.
        let cancel = task.cancel.child_token();
        // The child's turn, and the subagent calls it makes, run at its
        // depth.
        let turn = tokio::spawn(crate::depth::at_depth(task.depth, {
            let cancel = cancel.clone();
            async move {
                agent_loop
                    .run_turn(&agent, &mut session, task.prompt, &cancel)
                    .await
            }
        }));
        Self {
            provider: provider.to_owned(),
            cancel,
            turn: Some(turn),
        }
    }
}

#[async_trait]
impl SubagentRun for InProcessRun {
    async fn finish(&mut self) -> Result<String, SubagentError> {
        let provider = self.provider.clone();
        let Some(turn) = self.turn.as_mut() else {
            return Err(SubagentError::ChildFailed {
                provider,
                message: "the run was already finished or disposed".to_owned(),
            });
        };
        let outcome = turn.await;
        self.turn = None;
        match outcome {
            Ok(Ok(summary)) => Ok(summary.answer),
            Ok(Err(TurnError::Cancelled)) => Err(SubagentError::Cancelled { provider }),
            Ok(Err(error)) => Err(SubagentError::ChildFailed {
                provider,
                message: error.to_string(),
            }),
            Err(error) if error.is_panic() => Err(SubagentError::ChildPanicked {
                provider,
                message: panic_message(error.into_panic().as_ref()),
            }),
            Err(_) => Err(SubagentError::Cancelled { provider }),
        }
    }

    fn dispose(&mut self) {
        self.cancel.cancel();
        if let Some(turn) = self.turn.take() {
            turn.abort();
        }
    }
}

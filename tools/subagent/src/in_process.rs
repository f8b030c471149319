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
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChildAgentConfig {
    /// The child's model.
    #[serde(default)]
    pub model: Option<String>,
    /// The child's persona (its template fragment).
    #[serde(default)]
    pub persona: Option<String>,
    /// The tools the child may use.
    #[serde(default)]
    pub tools: Option<Vec<String>>,
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

    fn child_agent(&self, parent: &Agent) -> Agent {
        let options = AgentOptions {
            model: self
                .child
                .model
                .clone()
                .unwrap_or_else(|| parent.model().to_owned()),
            persona: self
                .child
                .persona
                .clone()
                .unwrap_or_else(|| parent.persona().to_owned()),
        };
        let id = format!("{}/{}", parent.id(), self.name);
        let tools = self
            .child
            .tools
            .clone()
            .or_else(|| parent.tools().map(<[String]>::to_vec));
        match tools {
            Some(tools) => Agent::new(id, options).with_tools(tools),
            None => Agent::new(id, options),
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
        let turn = tokio::spawn({
            let cancel = cancel.clone();
            async move {
                agent_loop
                    .run_turn(&agent, &mut session, task.prompt, &cancel)
                    .await
            }
        });
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

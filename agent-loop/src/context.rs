//! The loop's fields of an `AssembleContext`: the agent, and the facts of
//! its session.

use std::path::{Path, PathBuf};

use dsh_system_prompt::{AssembleContext, Scope, ScopeId};
use dsh_tools::ToolSession;

use crate::{Agent, Session, SessionId};

/// The facts of a session an assembly may need: its id and working
/// directory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SessionFacts {
    /// The session's id.
    pub id: SessionId,
    /// The session's working directory, if it has one.
    pub cwd: Option<PathBuf>,
}

impl SessionFacts {
    /// The facts of `session`.
    pub fn of(session: &Session) -> Self {
        Self {
            id: session.id().clone(),
            cwd: session.cwd().map(Path::to_path_buf),
        }
    }
}

/// Reads (and adds) the agent loop's fields of an [`AssembleContext`]: the
/// agent the prompt is for, and its session.
///
/// Every provider tolerates their absence: on a bare
/// `AssembleContext::default()` the persona is empty and `model` and `cwd`
/// have no value.
///
/// ```
/// use dsh_agent_loop::{Agent, AgentContextExt, AgentOptions, Session};
/// use dsh_system_prompt::{AssembleContext, Scope, ScopeId};
///
/// let agent = Agent::new("coder", AgentOptions::new("gpt-5"));
/// let session = Session::new().with_cwd("/work");
/// let cx = AssembleContext::new().with_agent(agent).with_session(&session);
/// assert_eq!(cx.agent().map(|agent| agent.model()), Some("gpt-5"));
/// assert_eq!(cx.session().and_then(|session| session.cwd.as_deref()), Some(std::path::Path::new("/work")));
/// assert!(AssembleContext::default().agent().is_none());
/// ```
pub trait AgentContextExt {
    /// The agent this assembly is for.
    fn agent(&self) -> Option<&Agent>;
    /// The session this assembly is for.
    fn session(&self) -> Option<&SessionFacts>;
    /// Adds the agent, and with it the agent's tool set and its scope
    /// ([`Agent::scope`]), followed by the session's layer when the
    /// session is already added.
    fn with_agent(self, agent: Agent) -> Self;
    /// Adds the facts of the session, its key for tools' state
    /// ([`ToolSession`]), and its layer ([`ScopeId::session`]) as the
    /// nearest of the scope: what the session brings (its instruction
    /// files, a client's system prompt) is seen by its assemblies only.
    fn with_session(self, session: &Session) -> Self;
}

impl AgentContextExt for AssembleContext {
    fn agent(&self) -> Option<&Agent> {
        self.get::<Agent>()
    }

    fn session(&self) -> Option<&SessionFacts> {
        self.get::<SessionFacts>()
    }

    fn with_agent(self, agent: Agent) -> Self {
        let selection = agent.tool_selection().cloned();
        let scope = match self.session() {
            Some(session) => with_session_layer(agent.scope(), &session.id),
            None => agent.scope().clone(),
        };
        let cx = self.with_scope(scope).with_all(agent.facts()).with(agent);
        match selection {
            Some(selection) => cx.with_shared(selection),
            None => cx,
        }
    }

    fn with_session(self, session: &Session) -> Self {
        let scope = with_session_layer(self.scope(), session.id());
        self.with_scope(scope)
            .with(SessionFacts::of(session))
            .with(ToolSession::new(session.id().as_str()))
    }
}

/// `scope` with the layer of session `id` as its nearest, in place of any
/// other session's.
fn with_session_layer(scope: &Scope, id: &SessionId) -> Scope {
    let own = ScopeId::session(id.as_str());
    Scope::new(
        scope
            .layers()
            .iter()
            .filter(|layer| !layer.as_str().starts_with("session:"))
            .cloned()
            .chain([own]),
    )
}

//! What a subagent provider is, what it is asked to do, and the registry of
//! providers.

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;
use dsh_agent_loop::CallingTurn;
use dsh_tools::ToolProgress;
use parking_lot::RwLock;
use tokio_util::sync::CancellationToken;

use crate::SubagentError;

/// What a provider's children can do. The subagent tool tells the model,
/// so the description is true of the provider it is bound to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct SubagentCapabilities {
    /// The child may call tools.
    pub tools: bool,
}

impl SubagentCapabilities {
    /// A child that may call tools.
    pub const WITH_TOOLS: Self = Self { tools: true };

    /// A child that only writes text.
    pub const TEXT_ONLY: Self = Self { tools: false };
}

/// One task for a child: the model's prompt and what the call knows about
/// its caller.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct SubagentTask {
    /// The prompt the model wrote for the child.
    pub prompt: String,
    /// The turn that made the call, when it came from the agent loop: the
    /// loop to run an in-process child on, the parent agent, and the
    /// parent's completed turns.
    pub parent: Option<CallingTurn>,
    /// The caller's working directory; the child works there too.
    pub cwd: Option<PathBuf>,
    /// The calling session's id.
    pub session_id: String,
    /// The model's id for the call.
    pub call_id: String,
    /// Fires when the call is cancelled; a child run stops then.
    pub cancel: CancellationToken,
    /// Where the child's progress goes, when the caller shows it.
    pub progress: Option<ToolProgress>,
    /// How deep the child is: its parent's depth plus one (see
    /// [`current_depth`](crate::current_depth)).
    pub depth: u32,
}

impl SubagentTask {
    /// A task with no parent turn, no working directory and a fresh token.
    pub fn new(prompt: impl Into<String>) -> Self {
        Self {
            prompt: prompt.into(),
            parent: None,
            cwd: None,
            session_id: String::new(),
            call_id: String::new(),
            cancel: CancellationToken::new(),
            progress: None,
            depth: 1,
        }
    }
}

/// One running child.
///
/// The subagent tool calls [`finish`](Self::finish) at most once, then
/// [`dispose`](Self::dispose) exactly once on every path — success, error,
/// cancellation, a panic, or the call being dropped — so a run must release
/// everything it holds (tasks, processes, connections) in `dispose`.
#[async_trait]
pub trait SubagentRun: Send {
    /// Waits for the child's final answer.
    async fn finish(&mut self) -> Result<String, SubagentError>;

    /// Stops the child if it still runs and releases what the run holds.
    fn dispose(&mut self);
}

/// A way to run subagents: in this process, forked from the caller, over a
/// protocol to another agent, …
///
/// `inherits_parent_context` says whether the child sees the caller's
/// conversation. The subagent tool derives its wording from it, so the
/// model writes the prompt the child needs: a complete brief for a fresh
/// child, only what is new for an inheriting one.
#[async_trait]
pub trait SubagentProvider: Send + Sync + 'static {
    /// The provider's name, as a subagent tool's config names it.
    fn name(&self) -> &str;

    /// What its children can do.
    fn capabilities(&self) -> SubagentCapabilities;

    /// Whether a child starts with the caller's completed turns (`true`)
    /// or fresh (`false`).
    fn inherits_parent_context(&self) -> bool;

    /// Starts a child on `task`.
    async fn start(&self, task: SubagentTask) -> Result<Box<dyn SubagentRun>, SubagentError>;
}

/// The subagent providers of a process, by name.
///
/// Cheap to clone (clones share one registry). Register a provider before
/// installing a subagent tool bound to it.
///
/// ```
/// use dsh_tool_subagent::{ForkProvider, SpawnProvider, SubagentProviders};
/// use std::sync::Arc;
///
/// let providers = SubagentProviders::new();
/// providers.register(Arc::new(SpawnProvider::new()))?;
/// providers.register(Arc::new(ForkProvider::new()))?;
/// assert!(providers.register(Arc::new(ForkProvider::new())).is_err()); // one provider per name
/// assert_eq!(providers.names(), ["spawn", "fork"]);
/// # Ok::<(), dsh_tool_subagent::SubagentError>(())
/// ```
#[derive(Clone, Default)]
pub struct SubagentProviders {
    providers: Arc<RwLock<Vec<Arc<dyn SubagentProvider>>>>,
}

impl SubagentProviders {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers `provider`; fails, leaving the registry unchanged, when a
    /// provider of that name is registered.
    pub fn register(&self, provider: Arc<dyn SubagentProvider>) -> Result<(), SubagentError> {
        let mut providers = self.providers.write();
        if providers
            .iter()
            .any(|existing| existing.name() == provider.name())
        {
            return Err(SubagentError::DuplicateProvider {
                name: provider.name().to_owned(),
            });
        }
        providers.push(provider);
        Ok(())
    }

    /// The provider named `name`.
    pub fn get(&self, name: &str) -> Option<Arc<dyn SubagentProvider>> {
        self.providers
            .read()
            .iter()
            .find(|provider| provider.name() == name)
            .cloned()
    }

    /// The providers' names, in registration order.
    pub fn names(&self) -> Vec<String> {
        self.providers
            .read()
            .iter()
            .map(|provider| provider.name().to_owned())
            .collect()
    }
}

impl fmt::Debug for SubagentProviders {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SubagentProviders")
            .field("providers", &self.names())
            .finish()
    }
}

//! The errors of providers, runs and the subagent tool.

use dsh_tools::ToolRegistryError;

/// A subagent could not be installed, started or finished.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SubagentError {
    /// A subagent tool is bound to a provider nobody registered.
    #[error(
        "subagent tool `{tool}` is bound to provider `{provider}`, which is not registered; \
         register the provider before installing the tool{}",
        registered_list(.registered)
    )]
    UnknownProvider {
        /// The tool's name.
        tool: String,
        /// The provider it names.
        provider: String,
        /// The registered providers.
        registered: Vec<String>,
    },
    /// Two providers of the same name.
    #[error("subagent provider `{name}` is already registered; provider names are unique")]
    DuplicateProvider {
        /// The name registered twice.
        name: String,
    },
    /// The subagent tool itself could not be registered as a tool.
    #[error("cannot register the subagent tool: {0}")]
    Tool(#[from] ToolRegistryError),
    /// An in-process provider was called outside the agent loop.
    #[error(
        "subagent provider `{provider}` runs its children in the agent loop, \
         but this call did not come from an agent loop turn"
    )]
    NoCallingTurn {
        /// The provider.
        provider: String,
    },
    /// A provider that starts a program was given none.
    #[error(
        "subagent provider `{provider}` needs a command to start its children, and it is empty; \
         give the program and its arguments, e.g. `[\"dsh\", \"acp\", \"--config\", \"child.toml\"]`"
    )]
    EmptyCommand {
        /// The provider.
        provider: String,
    },
    /// The child's turn failed.
    #[error("the subagent ({provider}) failed: {message}")]
    ChildFailed {
        /// The provider.
        provider: String,
        /// What went wrong, in the child's words.
        message: String,
    },
    /// The child panicked.
    #[error("the subagent ({provider}) panicked: {message}")]
    ChildPanicked {
        /// The provider.
        provider: String,
        /// The panic's message.
        message: String,
    },
    /// The child was cancelled before it answered.
    #[error("the subagent ({provider}) was cancelled before it answered")]
    Cancelled {
        /// The provider.
        provider: String,
    },
}

fn registered_list(registered: &[String]) -> String {
    if registered.is_empty() {
        return " (no subagent providers are registered)".to_owned();
    }
    format!(
        " (registered providers: {})",
        dsh_system_prompt::template::quoted_list(registered)
    )
}

//! The lifecycle both front ends share, and the rules they both need.
//!
//! [`Host`] hosts one agent for a front end: loaded and checked, its
//! sessions opened (new, continued, resumed) and recorded, its trace
//! attached, served with the ending signals, its servers and children
//! stopped. Beside it, one owner each for what a person types
//! ([`parse_input`]), what a child process may see ([`environment`]), what needs a person's
//! yes ([`approval`]), a
//! session's working directory ([`cwd`], [`session_in`]), the instruction
//! files and the client's prompt a session brings, and the prompt an
//! agent's session gets ([`AgentPrompt`]).

mod agent_prompt;
pub mod approval;
pub mod attach;
mod client_prompt;
pub mod cwd;
pub mod environment;
mod input;
mod instructions;
pub mod modes;
pub mod sampling;
mod serve;
pub mod session;
pub mod signals;
pub mod store;

pub use agent_prompt::{AgentPrompt, McpServers};
pub use approval::ApprovalPolicy;
pub use client_prompt::{
    CLIENT_PROMPT_ORDER, CLIENT_PROMPT_SECTION, ClientPrompt, ClientPromptMode,
    is_workspace_context,
};
pub use input::{
    CommandError, Commands, Input, ListedCommand, PromptCall, SLASH_COMMANDS, SlashCommand,
    parse_input,
};
pub use instructions::{
    INSTRUCTIONS_ORDER, ImportSite, InstructionFile, InstructionSource, Instructions,
    InstructionsConfig, InstructionsError, LEFT_OUT_SECTION, LeftOut, LeftOutFile,
    MAX_IMPORT_DEPTH, MIN_MAX_BYTES, PROJECT_INSTRUCTIONS_PREFIX, SessionInstructions, SkipReason,
    SkippedFile, USER_INSTRUCTIONS_SECTION,
};
pub use serve::{Host, HostOptions, OpenedSession, Resume};
pub use session::{StartedSession, session_in};

use crate::Problem;

/// The async runtime of a command that talks to a model or starts
/// servers.
pub fn async_runtime() -> Result<tokio::runtime::Runtime, Vec<Problem>> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|error| {
            vec![Problem::new(format!(
                "cannot start the async runtime: {error}"
            ))]
        })
}

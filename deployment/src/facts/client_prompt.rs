//! The front end's own system-level instructions for one session (an
//! editor's, sent with ACP's `session/new`): one more owner of the
//! session's prompt, registered into the session's layer.
//!
//! - [`ClientPromptMode::Append`]: the client's text is section
//!   `client:system-prompt` ([`CLIENT_PROMPT_SECTION`]), owned by the
//!   client, at order 0, right after the persona (`agent:persona` sorts
//!   before it).
//! - [`ClientPromptMode::Override`]: the client's text takes the persona's
//!   place, and the agent's own instructions — the persona, the tool
//!   crates' guidance, the deployment's sections — are left out for that
//!   session: the client takes responsibility for them, as the protocol
//!   says. Context the workspace supplies stays: the instruction files
//!   (`project:…`, `user:…`) and MCP servers' instructions (`mcp:…`); see
//!   [`is_workspace_context`]. The tools stay too: overriding instructions
//!   does not change what the agent can do. An agent with an active
//!   complete section ([`PromptSection::complete`]) keeps it: a complete
//!   section is the whole prompt by the deployment's decision, rendered as
//!   resolved, before any listener.
//!
//! Either way the text is inserted verbatim, never read as a template.
//!
//! ```
//! use dsh_agent_loop::{Agent, AgentLoop, AgentOptions, Session};
//! use dsh_deployment::facts::client_prompt::{ClientPrompt, ClientPromptMode};
//! use dsh_system_prompt::{SystemPrompt, render_prompt};
//!
//! let prompt = SystemPrompt::new()?;
//! let agent = Agent::new("coder", AgentOptions::new("m").with_persona("You are dsh."));
//! let session = Session::new();
//! let client = ClientPrompt::new("zed", ClientPromptMode::Append, "Answer in <<French>>.");
//! let _kept = client.register(&prompt, session.id())?;
//! let text = render_prompt(&prompt.assemble(&AgentLoop::context(&agent, &session)))?;
//! assert_eq!(text, "You are dsh.\n\nAnswer in <<French>>.");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::ops::ControlFlow;

use dsh_system_prompt::{Owner, PromptSection, Registration, RegistryError, ScopeId, SystemPrompt};

use dsh_agent_loop::SessionId;

use super::instructions::{PROJECT_INSTRUCTIONS_PREFIX, USER_INSTRUCTIONS_SECTION};

/// The section of a client's own instructions.
pub const CLIENT_PROMPT_SECTION: &str = "client:system-prompt";

/// The order of [`CLIENT_PROMPT_SECTION`]: the persona's, which sorts
/// first by name, so the client's text is right after it (append) or in
/// its place (override).
pub(crate) const CLIENT_PROMPT_ORDER: i32 = 0;

/// The prefixes of the sections that are context the workspace supplies:
/// what an override keeps. MCP servers' instructions are `mcp:<server>`.
const WORKSPACE_CONTEXT: [&str; 3] = [PROJECT_INSTRUCTIONS_PREFIX, "user:", "mcp:"];

/// Whether the section named `name` is context the workspace supplies
/// (instruction files, MCP servers' instructions), which a client's
/// override keeps.
///
/// ```
/// use dsh_deployment::facts::client_prompt::is_workspace_context;
///
/// assert!(is_workspace_context("project:sub/AGENTS.md"));
/// assert!(is_workspace_context("user:AGENTS.md"));
/// assert!(is_workspace_context("mcp:github"));
/// assert!(!is_workspace_context("tool:bash"));
/// assert!(!is_workspace_context("agent:persona"));
/// ```
pub fn is_workspace_context(name: &str) -> bool {
    name == USER_INSTRUCTIONS_SECTION
        || WORKSPACE_CONTEXT
            .iter()
            .any(|prefix| name.starts_with(prefix))
}

/// How a client's text combines with the agent's own instructions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ClientPromptMode {
    /// After the persona, with everything else kept.
    Append,
    /// In place of the persona and the agent's own instructions; the
    /// workspace's context stays.
    Override,
}

/// A client's own instructions for one session.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClientPrompt {
    client: String,
    mode: ClientPromptMode,
    text: String,
}

impl ClientPrompt {
    /// The instructions `text` of the client named `client` (its name, as
    /// it introduced itself), combined as `mode` says.
    pub fn new(client: impl Into<String>, mode: ClientPromptMode, text: impl Into<String>) -> Self {
        Self {
            client: client.into(),
            mode,
            text: text.into(),
        }
    }

    /// The mode.
    pub fn mode(&self) -> ClientPromptMode {
        self.mode
    }

    /// The client's text, as it sent it.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The section's owner: the client.
    pub fn owner(&self) -> Owner {
        Owner::new(
            "client",
            format!("{} system prompt", self.client),
            self.client.clone(),
            0,
        )
    }

    /// Registers the client's text (and, for an override, the listener
    /// that leaves the agent's own instructions out) into the layer of
    /// `session`. Keep the handles as long as the session lives.
    pub fn register(
        &self,
        prompt: &SystemPrompt,
        session: &SessionId,
    ) -> Result<Vec<Registration>, RegistryError> {
        let layer = prompt.in_scope(ScopeId::session(session.as_str()));
        let section =
            PromptSection::verbatim(CLIENT_PROMPT_SECTION, CLIENT_PROMPT_ORDER, &self.text)
                .owned_by(self.owner());
        let mut registrations = vec![layer.section(section)?];
        if self.mode == ClientPromptMode::Override {
            // A waterfall listener of the session's layer, not shadows of
            // each section: it also leaves out what registers later (a
            // deployment's section), and explain shows the sections as
            // absent, not as empty texts owned by the client.
            registrations.push(layer.on_assemble(CLIENT_PROMPT_SECTION, |_, assembly| {
                assembly.sections.retain(|section| {
                    let name = section.name();
                    *name == CLIENT_PROMPT_SECTION || is_workspace_context(name)
                });
                ControlFlow::Continue(())
            })?);
        }
        Ok(registrations)
    }
}

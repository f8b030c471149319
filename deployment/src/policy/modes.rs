//! Modes: how much an agent may do in a session, as a person switches it
//! — the sandbox its commands run in and which calls ask first. One list
//! for both front ends: `dsh acp` offers it to the editor (a config option
//! of category `mode`, and `session/set_mode`), `dsh run` takes `--mode`
//! and `/mode`.
//!
//! A mode is a fact with an owner: what the model may do in it reaches
//! the model as a runtime context at the conversation's tail ([`Mode`]
//! attached to the session's agent, rendered by the context the runtime
//! registers), so switching modes leaves the cached system prompt as it
//! was.

use dsh_sandbox::SandboxMode;

/// Which calls ask a person first in a mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Asking {
    /// None: every call runs at once.
    Never,
    /// Every call with side effects: a tool that does not only read (a
    /// command, a change, a subagent, an MCP tool not annotated
    /// read-only), whatever the deployment's tables say.
    SideEffects,
    /// What the deployment's policy says
    /// ([`ApprovalPolicy`](super::approval::ApprovalPolicy)): `permission = "ask"`
    /// tables and MCP tools
    /// by their annotations.
    Policy,
}

/// A mode of a session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mode {
    /// Its id, as `--mode` and `session/set_mode` take it.
    pub id: &'static str,
    /// Its name, as an editor's picker shows it.
    pub name: &'static str,
    /// What it lets the agent do, for the person and for the model.
    pub description: &'static str,
    /// The sandbox commands and the file tools run in.
    pub sandbox: SandboxMode,
    /// Which calls ask first.
    pub asking: Asking,
}

/// The modes every deployment has, least allowed first.
pub const MODES: [Mode; 4] = [
    Mode {
        id: "read-only",
        name: "Read only",
        description: "Reads files and runs commands in a read-only sandbox; changes no file.",
        sandbox: SandboxMode::ReadOnly,
        asking: Asking::Policy,
    },
    Mode {
        id: "ask",
        name: "Ask",
        description: "Works in the workspace sandbox; every command, change or other call \
                      with side effects asks first.",
        sandbox: SandboxMode::WorkspaceWrite,
        asking: Asking::SideEffects,
    },
    Mode {
        id: "auto",
        name: "Auto",
        description: "Works in the workspace sandbox without asking; asks only for what \
                      leaves it, as the deployment says.",
        sandbox: SandboxMode::WorkspaceWrite,
        asking: Asking::Policy,
    },
    Mode {
        id: "full-access",
        name: "Full access",
        description: "Runs without a sandbox and without asking: it can change anything \
                      you can.",
        sandbox: SandboxMode::FullAccess,
        asking: Asking::Never,
    },
];

/// The mode with id `id`; `Err` names the modes there are.
pub fn mode(id: &str) -> Result<&'static Mode, String> {
    MODES.iter().find(|mode| mode.id == id).ok_or_else(|| {
        let ids: Vec<&str> = MODES.iter().map(|mode| mode.id).collect();
        format!("`{id}` is no mode; the modes are {}", ids.join(", "))
    })
}

/// The mode a session starts in when the deployment's sandbox is
/// `sandbox`: the mode that runs in it without asking more than the
/// deployment does.
pub(crate) fn default_mode(sandbox: SandboxMode) -> &'static Mode {
    match sandbox {
        SandboxMode::ReadOnly => &MODES[0],
        SandboxMode::WorkspaceWrite => &MODES[2],
        SandboxMode::FullAccess => &MODES[3],
    }
}

/// The mode a session was switched to, attached to its agent as a fact
/// (`Agent::with_fact`): the runtime's context `host:mode` tells the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ModeSwitch(pub &'static Mode);

/// The name of the runtime context that tells the model the mode a
/// session was switched to.
pub(crate) const MODE_CONTEXT: &str = "host:mode";

impl Mode {
    /// What the model is told of the mode, at the conversation's tail.
    pub fn context(&self) -> String {
        format!(
            "The person switched this session to the mode `{}` ({}): {} Earlier turns ran \
             under another mode; what the sandbox section of the system prompt says is \
             overridden by this.",
            self.id, self.name, self.description
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_are_found_by_id_and_an_unknown_one_names_them_all() {
        assert_eq!(mode("ask").map(|mode| mode.asking), Ok(Asking::SideEffects));
        assert_eq!(
            mode("yolo"),
            Err("`yolo` is no mode; the modes are read-only, ask, auto, full-access".to_owned())
        );
        assert_eq!(default_mode(SandboxMode::WorkspaceWrite).id, "auto");
        assert_eq!(default_mode(SandboxMode::ReadOnly).id, "read-only");
    }
}

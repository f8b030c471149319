//! What a child process may see of dsh's environment: one decision for
//! every kind of child dsh starts — a `bash` command, an MCP server, a
//! child agent — asked by each where it is started.
//!
//! Today's policy:
//!
//! - a command (`bash`) runs without the model adapter's secrets (its API
//!   key) and without what `[tools.bash] env_remove` lists;
//! - an MCP server runs without the adapter's secrets: it is a tool
//!   provider, never the model's client (an HTTP server's bearer token is
//!   read by dsh, not by a process of the server's);
//! - a child agent (the ACP subagent provider's process) keeps them: it
//!   talks to a model of its own, with the key the parent was given (the
//!   ACP SDK's process configuration can add variables but not remove
//!   them: a policy that removes some for child agents starts them
//!   through a wrapper of its own).

use crate::Deployment;

/// A kind of process dsh starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Child {
    /// A command of the `bash` tool.
    Command,
    /// An MCP server started on stdio (the deployment's or an editor's).
    McpServer,
    /// A child agent of the ACP subagent provider.
    Agent,
}

/// The environment policy of a deployment: built once, asked for each
/// kind of child.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ChildEnvironment {
    /// The adapter's secrets: the variables its API key is read from.
    secrets: Vec<String>,
    /// `[tools.bash] env_remove`.
    command_extra: Vec<String>,
}

impl ChildEnvironment {
    /// The policy of `deployment`.
    pub fn of(deployment: &Deployment) -> Self {
        Self {
            secrets: (deployment.adapter.secret_env_vars().into_iter())
                .map(str::to_owned)
                .collect(),
            command_extra: deployment.bash.env_remove.clone(),
        }
    }

    /// The variables of dsh's environment `child` runs without.
    pub fn removed_for(&self, child: Child) -> Vec<String> {
        match child {
            Child::Command => self
                .secrets
                .iter()
                .chain(&self.command_extra)
                .cloned()
                .collect(),
            Child::McpServer => self.secrets.clone(),
            Child::Agent => Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_and_servers_never_see_the_api_key_and_child_agents_do() {
        let text = "[adapter.openai]\nbase_url = \"http://localhost:1\"\nmodel = \"m\"\n\
                    api_key_env = \"MY_KEY\"\n[tools.bash]\nenv_remove = [\"AWS_SECRET\"]\n\
                    [[agents]]\nid = \"a\"\npersona = \"p\"\n";
        let deployment =
            Deployment::parse(crate::SourceFile::new("dsh.toml", text), None, &["bash"])
                .expect("a valid deployment");
        let policy = ChildEnvironment::of(&deployment);
        assert_eq!(policy.removed_for(Child::Command), ["MY_KEY", "AWS_SECRET"]);
        assert_eq!(policy.removed_for(Child::McpServer), ["MY_KEY"]);
        assert!(policy.removed_for(Child::Agent).is_empty());
    }
}

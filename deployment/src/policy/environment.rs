//! What a child process may see of dsh's environment: one decision for
//! every kind of child dsh starts — a `bash` command, a stdio MCP server
//! (the deployment's or an editor's), a child agent of the ACP subagent
//! provider — asked by each where it is started.
//!
//! The policy:
//!
//! - **Secrets never pass**: the model adapter's key variable, every
//!   MCP server's `bearer_token_env`, and the names `[environment]
//!   secrets` lists. (A child agent is a model client of its own: its
//!   table's `env_keep` may name the key it needs.)
//! - **Names that look secret** — containing `KEY`, `SECRET`, `TOKEN` or
//!   `PASSWORD`, in any case — are removed too, unless the child's table
//!   keeps them (`env_keep = ["GITHUB_TOKEN"]`).
//! - **A command** inherits the rest, without what `[tools.bash]
//!   env_remove` lists.
//! - **A stdio MCP server** inherits only the small base the MCP SDKs
//!   give theirs (`HOME`, `LOGNAME`, `PATH`, `SHELL`, `TERM`, `USER`,
//!   and the locale: `LANG`, `LANGUAGE`, `LC_*`), its table's `env_keep`,
//!   and its own `env`.
//! - **A child agent** inherits the rest: it runs commands of its own
//!   under its own policy.

use std::collections::BTreeSet;

use dsh_tool_bash::BashTable;
use schemars::JsonSchema;
use serde::Deserialize;

/// What every stdio MCP server inherits of dsh's environment: the
/// variables the MCP SDKs' own clients pass (`DEFAULT_INHERITED_ENV_VARS`
/// in the TypeScript and Python SDKs), the locale aside.
pub(crate) const SERVER_BASE_ENV: [&str; 6] = ["HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER"];

/// The words that make a variable's name look secret, matched in any
/// case anywhere in the name.
pub(crate) const SECRET_WORDS: [&str; 4] = ["KEY", "SECRET", "TOKEN", "PASSWORD"];

/// `[environment]`: what no process dsh starts may see.
///
/// ```toml
/// [environment]
/// secrets = ["DATABASE_URL"]
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EnvironmentTable {
    /// Variables no command, MCP server or child agent dsh starts ever
    /// gets, by name, besides the model adapter's key and the MCP
    /// servers' `bearer_token_env`, which are never passed either; a
    /// table's `env_keep` does not bring them back. Default: none.
    #[serde(default)]
    pub secrets: Vec<String>,
}

/// Whether `name` looks like it holds a secret ([`SECRET_WORDS`]).
pub(crate) fn looks_secret(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    SECRET_WORDS.iter().any(|word| upper.contains(word))
}

/// The environment policy of a deployment: built once, asked for each
/// kind of child.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ChildEnvironment {
    /// Never passed: the adapter's key, the bearer tokens, `[environment]
    /// secrets`.
    secrets: BTreeSet<String>,
    /// The names of dsh's environment (when the policy was made).
    names: Vec<String>,
    /// `[tools.bash] env_remove`.
    command_remove: Vec<String>,
    /// `[tools.bash] env_keep`.
    command_keep: Vec<String>,
}

impl ChildEnvironment {
    /// The policy of a deployment whose `secrets` never pass (its
    /// `Deployment::secret_env_vars`) and whose `[tools.bash]` table is
    /// `bash`, for dsh's environment as it is now.
    pub fn of(secrets: Vec<String>, bash: &BashTable) -> Self {
        let names = std::env::vars_os()
            .filter_map(|(name, _)| name.into_string().ok())
            .collect();
        Self::with_names(secrets, bash, names)
    }

    /// The policy of [`of`](Self::of) for an environment with `names`.
    pub(crate) fn with_names(secrets: Vec<String>, bash: &BashTable, names: Vec<String>) -> Self {
        Self {
            secrets: secrets.into_iter().collect(),
            names,
            command_remove: bash.env_remove.clone(),
            command_keep: bash.env_keep.clone(),
        }
    }

    /// The names that look secret and that `keep` does not keep.
    fn secret_looking<'a>(&'a self, keep: &'a [String]) -> impl Iterator<Item = &'a String> {
        (self.names.iter()).filter(move |name| looks_secret(name) && !keep.contains(name))
    }

    /// The variables a `bash` command runs without.
    pub(crate) fn removed_for_command(&self) -> Vec<String> {
        let removed: BTreeSet<&String> = (self.secrets.iter())
            .chain(&self.command_remove)
            .chain(self.secret_looking(&self.command_keep))
            .collect();
        removed.into_iter().cloned().collect()
    }

    /// The variables of dsh's environment a stdio MCP server inherits,
    /// besides its own `env`: the base, the locale, and what its table
    /// keeps (`env_keep`), never a secret.
    pub(crate) fn inherited_by_server(&self, keep: &[String]) -> Vec<String> {
        let locale = (self.names.iter())
            .filter(|name| *name == "LANG" || *name == "LANGUAGE" || name.starts_with("LC_"))
            .cloned();
        let inherited: BTreeSet<String> = (SERVER_BASE_ENV.iter().map(|name| (*name).to_owned()))
            .chain(locale)
            .chain(keep.iter().cloned())
            .filter(|name| !self.secrets.contains(name))
            .collect();
        inherited.into_iter().collect()
    }

    /// The variables a child agent runs without: the secrets and the
    /// names that look secret, but what its table keeps (`env_keep`).
    pub(crate) fn removed_for_agent(&self, keep: &[String]) -> Vec<String> {
        let removed: BTreeSet<&String> = (self.secrets.iter())
            .filter(|name| !keep.contains(name))
            .chain(self.secret_looking(keep))
            .collect();
        removed.into_iter().cloned().collect()
    }

    /// Whether `name` is a secret no command or server is given.
    pub fn is_secret(&self, name: &str) -> bool {
        self.secrets.contains(name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::file::Deployment;

    fn policy(extra: &str, names: &[&str]) -> ChildEnvironment {
        let text = format!(
            "[adapter.openai]\nbase_url = \"http://localhost:1\"\nmodel = \"m\"\n\
             api_key_env = \"MY_KEY\"\n{extra}\n[[agents]]\nid = \"a\"\npersona = \"p\"\n"
        );
        let deployment =
            Deployment::parse(crate::SourceFile::new("dsh.toml", text), None, &["bash"])
                .expect("a valid deployment");
        let names = names.iter().map(|n| (*n).to_owned()).collect();
        ChildEnvironment::with_names(deployment.secret_env_vars(), &deployment.bash, names)
    }

    const NAMES: &[&str] = &[
        "PATH",
        "HOME",
        "LANG",
        "LC_ALL",
        "MY_KEY",
        "GITHUB_TOKEN",
        "db_password",
        "MCP_TOKEN",
        "DATABASE_URL",
        "EDITOR",
    ];

    #[test]
    fn commands_lose_secrets_and_secret_looking_names_unless_kept() {
        let policy = policy(
            "[tools.bash]\nenv_remove = [\"EDITOR\"]\nenv_keep = [\"GITHUB_TOKEN\", \"MY_KEY\"]\n\
             [environment]\nsecrets = [\"DATABASE_URL\"]\n\
             [mcp.docs]\nurl = \"http://localhost:2/mcp\"\nbearer_token_env = \"MCP_TOKEN\"",
            NAMES,
        );
        // `env_keep` keeps a secret-looking name, never a secret.
        assert_eq!(
            policy.removed_for_command(),
            [
                "DATABASE_URL",
                "EDITOR",
                "MCP_TOKEN",
                "MY_KEY",
                "db_password"
            ]
        );
    }

    #[test]
    fn servers_inherit_the_base_the_locale_and_what_they_keep_never_a_secret() {
        let policy = policy("", NAMES);
        assert_eq!(
            policy.inherited_by_server(&["EDITOR".to_owned(), "MY_KEY".to_owned()]),
            [
                "EDITOR", "HOME", "LANG", "LC_ALL", "LOGNAME", "PATH", "SHELL", "TERM", "USER"
            ]
        );
    }

    #[test]
    fn a_child_agent_keeps_what_its_table_names_even_the_key() {
        let policy = policy("", NAMES);
        assert_eq!(
            policy.removed_for_agent(&[]),
            ["GITHUB_TOKEN", "MCP_TOKEN", "MY_KEY", "db_password"]
        );
        assert_eq!(
            policy.removed_for_agent(&["MY_KEY".to_owned()]),
            ["GITHUB_TOKEN", "MCP_TOKEN", "db_password"]
        );
    }

    #[test]
    fn secret_words_match_in_any_case() {
        for name in [
            "OPENAI_API_KEY",
            "aws_secret_access_key",
            "Npm_Token",
            "PGPASSWORD",
        ] {
            assert!(looks_secret(name), "{name}");
        }
        for name in ["PATH", "HOME", "EDITOR", "TERM"] {
            assert!(!looks_secret(name), "{name}");
        }
    }
}

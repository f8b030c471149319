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
//! - **Names that look secret** — containing `KEY`, `SECRET`, `TOKEN`,
//!   `PASSWORD`, `PASSWD`, `CREDENTIAL`, `DSN` or `WEBHOOK`, or with a word
//!   `AUTH` (`SSH_AUTH_SOCK`, `NPM_AUTH`, not `GIT_AUTHOR_NAME`), in any
//!   case — and **values that carry a password** (a URL with one:
//!   `postgres://u:pw@h/db`) are removed too, unless the child's table
//!   keeps them (`env_keep = ["GITHUB_TOKEN"]`).
//! - `secrets` and `env_keep` take globs: `MY_*` is every name that
//!   starts `MY_`.
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
pub(crate) const SECRET_WORDS: [&str; 8] = [
    "KEY",
    "SECRET",
    "TOKEN",
    "PASSWORD",
    "PASSWD",
    "CREDENTIAL",
    "DSN",
    "WEBHOOK",
];

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

/// Whether `name` looks like it holds a secret: a [`SECRET_WORDS`] word
/// anywhere, or a word (between `_`) that is `AUTH`, ends with it
/// (`OAUTH`) or starts with it but for `AUTHOR`.
pub(crate) fn looks_secret(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    SECRET_WORDS.iter().any(|word| upper.contains(word))
        || upper.split('_').any(|word| {
            word.ends_with("AUTH") || (word.starts_with("AUTH") && !word.starts_with("AUTHOR"))
        })
}

/// Whether `value` carries a password: a URL whose user part has one
/// (`scheme://user:password@host`).
pub(crate) fn carries_password(value: &str) -> bool {
    value.match_indices("://").any(|(at, _)| {
        let authority = value[at + 3..]
            .split(['/', '?', '#', ' '])
            .next()
            .unwrap_or("");
        authority
            .rsplit_once('@')
            .and_then(|(user, _)| user.split_once(':'))
            .is_some_and(|(_, password)| !password.is_empty())
    })
}

/// Whether `name` is one of `patterns`: a name, or a glob (`MY_*`).
fn matches(patterns: &[String], name: &str) -> bool {
    patterns.iter().any(|pattern| {
        pattern == name || glob::Pattern::new(pattern).is_ok_and(|glob| glob.matches(name))
    })
}

/// Why a child does not see a variable of dsh's environment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Withheld {
    /// The adapter's key, a bearer token, or `[environment] secrets`.
    Secret,
    /// `[tools.bash] env_remove`.
    Removed,
    /// Its name looks secret.
    SecretName,
    /// Its value is a URL with a password.
    PasswordValue,
}

impl Withheld {
    /// Why, in a few words for a person.
    pub fn reason(self) -> &'static str {
        match self {
            Self::Secret => {
                "a secret: the adapter's key, a bearer token or `[environment] secrets`"
            }
            Self::Removed => "`[tools.bash] env_remove`",
            Self::SecretName => "its name looks secret; `env_keep` keeps it",
            Self::PasswordValue => "its value is a URL with a password; `env_keep` keeps it",
        }
    }
}

/// The environment policy of a deployment: built once, asked for each
/// kind of child.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ChildEnvironment {
    /// Never passed: the adapter's key, the bearer tokens, `[environment]
    /// secrets` (names or globs).
    secrets: Vec<String>,
    /// The names of dsh's environment (when the policy was made).
    names: Vec<String>,
    /// Those whose value carries a password.
    password_valued: BTreeSet<String>,
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
        let vars = std::env::vars_os()
            .filter_map(|(name, value)| Some((name.into_string().ok()?, value.into_string().ok()?)))
            .collect();
        Self::with_vars(secrets, bash, vars)
    }

    /// The policy of [`of`](Self::of) for an environment of `vars`.
    pub(crate) fn with_vars(
        secrets: Vec<String>,
        bash: &BashTable,
        vars: Vec<(String, String)>,
    ) -> Self {
        let password_valued = (vars.iter())
            .filter(|(_, value)| carries_password(value))
            .map(|(name, _)| name.clone())
            .collect();
        Self {
            secrets,
            names: vars.into_iter().map(|(name, _)| name).collect(),
            password_valued,
            command_remove: bash.env_remove.clone(),
            command_keep: bash.env_keep.clone(),
        }
    }

    /// The secrets: each listed name, and each name of the environment a
    /// glob of them matches.
    fn secret_names(&self) -> impl Iterator<Item = &String> {
        let listed = (self.secrets.iter()).filter(|name| glob::Pattern::escape(name) == **name);
        listed.chain(
            self.names
                .iter()
                .filter(|name| matches(&self.secrets, name)),
        )
    }

    /// The names that look secret, or whose value carries a password, and
    /// that `keep` does not keep.
    fn secret_looking<'a>(&'a self, keep: &'a [String]) -> impl Iterator<Item = &'a String> {
        (self.names.iter()).filter(move |name| {
            (looks_secret(name) || self.password_valued.contains(*name)) && !matches(keep, name)
        })
    }

    /// The variables a `bash` command runs without.
    pub(crate) fn removed_for_command(&self) -> Vec<String> {
        let removed: BTreeSet<&String> = (self.secret_names())
            .chain(
                self.names
                    .iter()
                    .filter(|name| matches(&self.command_remove, name)),
            )
            .chain(&self.command_remove)
            .chain(self.secret_looking(&self.command_keep))
            .collect();
        removed.into_iter().cloned().collect()
    }

    /// The variables of dsh's environment a `bash` command does not see,
    /// each with why (`dsh check`).
    pub fn withheld_from_commands(&self) -> Vec<(String, Withheld)> {
        (self.removed_for_command().into_iter())
            .filter(|name| self.names.contains(name))
            .map(|name| {
                let why = if matches(&self.secrets, &name) {
                    Withheld::Secret
                } else if matches(&self.command_remove, &name) {
                    Withheld::Removed
                } else if self.password_valued.contains(&name) {
                    Withheld::PasswordValue
                } else {
                    Withheld::SecretName
                };
                (name, why)
            })
            .collect()
    }

    /// What `dsh check` says of the environment: what a command does not
    /// see of dsh's, and why; what a server sees.
    pub fn on_this_machine(&self) -> String {
        let withheld = self.withheld_from_commands();
        if withheld.is_empty() {
            return "environment: commands see all of dsh's; MCP servers a small base".to_owned();
        }
        let lines: Vec<String> = (withheld.iter())
            .map(|(name, why)| format!("  {name}: {}", why.reason()))
            .collect();
        format!(
            "environment: commands and child agents do not see\n{}\nMCP servers see only \
             HOME, LOGNAME, PATH, SHELL, TERM, USER, the locale and what their `env_keep` names",
            lines.join("\n")
        )
    }

    /// The variables of dsh's environment a stdio MCP server inherits,
    /// besides its own `env`: the base, the locale, and what its table
    /// keeps (`env_keep`), never a secret.
    pub(crate) fn inherited_by_server(&self, keep: &[String]) -> Vec<String> {
        let locale = (self.names.iter())
            .filter(|name| *name == "LANG" || *name == "LANGUAGE" || name.starts_with("LC_"))
            .cloned();
        let kept = (self.names.iter())
            .filter(|name| matches(keep, name))
            .cloned();
        let listed = (keep.iter())
            .filter(|name| glob::Pattern::escape(name) == **name)
            .cloned();
        let inherited: BTreeSet<String> = (SERVER_BASE_ENV.iter().map(|name| (*name).to_owned()))
            .chain(locale)
            .chain(kept)
            .chain(listed)
            .filter(|name| !self.is_secret(name))
            .collect();
        inherited.into_iter().collect()
    }

    /// The variables a child agent runs without: the secrets and the
    /// names that look secret, but what its table keeps (`env_keep`).
    pub(crate) fn removed_for_agent(&self, keep: &[String]) -> Vec<String> {
        let removed: BTreeSet<&String> = (self.secret_names())
            .filter(|name| !matches(keep, name))
            .chain(self.secret_looking(keep))
            .collect();
        removed.into_iter().cloned().collect()
    }

    /// Whether `name` is a secret no command or server is given.
    pub fn is_secret(&self, name: &str) -> bool {
        matches(&self.secrets, name)
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
        let vars = (names.iter())
            .map(|name| match name.split_once('=') {
                Some((name, value)) => (name.to_owned(), value.to_owned()),
                None => ((*name).to_owned(), "x".to_owned()),
            })
            .collect();
        ChildEnvironment::with_vars(deployment.secret_env_vars(), &deployment.bash, vars)
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

    #[test]
    fn globs_and_credentials_in_values_are_withheld_and_kept_on_request() {
        let names = [
            "PATH",
            "GIT_AUTHOR_NAME",
            "MY_DB_PASS",
            "MY_HOST",
            "GH_TOKEN",
            "GH_HOST",
            "DATABASE_URL=postgres://u:pw@h/db",
            "PLAIN_URL=https://example.com/a:b@c",
            "SENTRY_DSN",
            "SLACK_WEBHOOK_URL",
            "SSH_AUTH_SOCK",
            "FTP_PASSWD",
            "GOOGLE_APPLICATION_CREDENTIALS",
            "NPM_AUTH",
        ];
        let withheld = policy("[environment]\nsecrets = [\"MY_*\"]", &names);
        let removed = withheld.removed_for_command();
        for name in [
            "MY_DB_PASS",
            "MY_HOST",
            "GH_TOKEN",
            "DATABASE_URL",
            "SENTRY_DSN",
            "SLACK_WEBHOOK_URL",
            "SSH_AUTH_SOCK",
            "FTP_PASSWD",
            "GOOGLE_APPLICATION_CREDENTIALS",
            "NPM_AUTH",
        ] {
            assert!(
                removed.contains(&name.to_owned()),
                "{name} passes: {removed:?}"
            );
        }
        for name in ["PATH", "GIT_AUTHOR_NAME", "GH_HOST", "PLAIN_URL"] {
            assert!(
                !removed.contains(&name.to_owned()),
                "{name} withheld: {removed:?}"
            );
        }
        let why = withheld.withheld_from_commands();
        assert!(why.contains(&("MY_DB_PASS".to_owned(), Withheld::Secret)));
        assert!(why.contains(&("DATABASE_URL".to_owned(), Withheld::PasswordValue)));
        assert!(why.contains(&("SSH_AUTH_SOCK".to_owned(), Withheld::SecretName)));
        assert!(
            withheld
                .on_this_machine()
                .contains("DATABASE_URL: its value is a URL")
        );
        // `env_keep` globs keep what only looks secret, never a secret.
        let kept = policy(
            "[environment]\nsecrets = [\"MY_*\"]\n[tools.bash]\nenv_keep = [\"GH_*\", \"MY_*\", \"DATABASE_URL\"]",
            &names,
        )
        .removed_for_command();
        assert!(!kept.contains(&"GH_TOKEN".to_owned()), "{kept:?}");
        assert!(!kept.contains(&"DATABASE_URL".to_owned()), "{kept:?}");
        assert!(kept.contains(&"MY_DB_PASS".to_owned()), "{kept:?}");
        assert_eq!(
            withheld.inherited_by_server(&["GH_*".to_owned(), "MY_*".to_owned()]),
            [
                "GH_HOST", "GH_TOKEN", "HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER"
            ]
        );
    }
}

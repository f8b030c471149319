//! `[tools.<name>]` with `kind = "subagent"`: a subagent tool instance's
//! table in a deployment file, its checks, and the provider and tool
//! configuration it makes.

use std::borrow::Borrow;
use std::sync::Arc;
use std::time::Duration;

use dsh_tools::{Permission, ProblemPlace, TableProblem};
use schemars::JsonSchema;
use serde::Deserialize;

use crate::{
    AcpProvider, ChildAgentConfig, ForkProvider, SpawnProvider, SubagentError, SubagentProvider,
    SubagentToolConfig,
};

/// The `kind` of a subagent instance's table: the one value `"subagent"`.
/// A deployment reads a table's `kind` to choose its type; this field
/// makes the type refuse a table of another kind on its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize, JsonSchema)]
pub enum SubagentKind {
    /// A subagent tool, bound to one provider.
    #[serde(rename = "subagent")]
    Subagent,
}

/// `[tools.<name>]` with `kind = "subagent"`: a subagent tool the model
/// calls by the table's key, bound to one provider.
///
/// ```toml
/// [tools.review]                 # a spawn instance whose children are someone else
/// kind = "subagent"
/// provider = "spawn"
/// [tools.review.child]           # each key optional: left out, the calling agent's
/// model = "gpt-5-mini"
/// tools = ["read"]
///
/// [tools.helper]                 # a child that is any ACP agent, run as a subprocess
/// kind = "subagent"
/// provider = "acp"
/// command = ["dsh", "acp", "--config", "helper.toml"]
/// timeout_secs = 600
/// ```
///
/// `S` is how the table holds a string: `String`, or a type that also
/// keeps where the string was written (`toml::Spanned<String>`), so a
/// front end deserializes this one schema and still points into its file.
/// [`check`](Self::check) finds what the deserializer cannot;
/// [`own_provider`](Self::own_provider) and
/// [`tool_config`](Self::tool_config) make the instance.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, bound(deserialize = "S: Deserialize<'de>"))]
pub struct SubagentTable<S = String> {
    /// `"subagent"`: the table configures a subagent tool, not a built-in
    /// tool's settings; the table's key is the tool's name.
    pub kind: SubagentKind,
    /// Who runs the children: `"spawn"` (a fresh agent in this process,
    /// who does not see the conversation; `child` says who it is),
    /// `"fork"` (the calling agent itself, seeing the completed turns) or
    /// `"acp"` (any ACP agent, started as `command`).
    // Optional to the deserializer, so that a table without it gets the
    // check's own message; required in the schema, which is the truth.
    #[schemars(required, with = "S")]
    pub provider: Option<S>,
    /// `"allow"` (the default) starts each child at once; `"ask"` asks the
    /// user before each call where the front end can ask (`dsh acp`, in an
    /// editor) and refuses it where it cannot.
    #[serde(default)]
    pub permission: Permission,
    /// For `provider = "acp"`, and required there: the ACP agent each
    /// child is, the program then its arguments (`["dsh", "acp",
    /// "--config", "child.toml"]`).
    pub command: Option<Vec<S>>,
    /// For `provider = "acp"`: how many seconds a child may take to
    /// answer before it is cancelled and stopped; more than 0. Default:
    /// 1800 (30 minutes).
    pub timeout_secs: Option<u64>,
    /// For `provider = "spawn"`: who the children are, where they differ
    /// from the calling agent.
    pub child: Option<ChildAgentConfig<S>>,
    /// For `provider = "acp"`: variables of dsh's environment the child
    /// agent keeps that it would otherwise run without — the secrets
    /// (the model adapter's key, MCP bearer tokens, `[environment]
    /// secrets`) and names that look secret (`KEY`, `SECRET`, `TOKEN`,
    /// `PASSWORD`). A child agent is a model client of its own: name the
    /// key it needs (`["ANTHROPIC_API_KEY"]`). Default: none.
    #[serde(default)]
    pub env_keep: Vec<S>,
}

impl SubagentTable {
    /// The `kind` of a subagent instance's table, as written.
    pub const KIND: &'static str = "subagent";
}

impl<S: Borrow<str> + Clone> SubagentTable<S> {
    /// The problems of the instance `tool` (the table's key) that the
    /// deserializer cannot see: a provider, and each key with the provider
    /// it goes with (`child` with `spawn`; `command` and `timeout_secs`
    /// with `acp`, which needs a `command`). Which providers exist is the
    /// registry's to say, when the tool is installed.
    ///
    /// ```
    /// use dsh_tool_subagent::SubagentTable;
    ///
    /// let table: SubagentTable = serde_json::from_str(r#"{"kind": "subagent", "provider": "acp"}"#)?;
    /// let errors = table.check("helper").expect_err("no command");
    /// assert_eq!(errors[0].to_string(), "subagent instance `helper` has provider `acp` but no `command`");
    /// # Ok::<(), serde_json::Error>(())
    /// ```
    pub fn check(&self, tool: &str) -> Result<(), Vec<SubagentTableError<S>>> {
        let Some(provider) = &self.provider else {
            return Err(vec![SubagentTableError::NoProvider {
                tool: tool.to_owned(),
            }]);
        };
        let is_acp = provider.borrow() == AcpProvider::NAME;
        let mismatch =
            |needs: &'static str, key: &'static str| SubagentTableError::KeyNeedsProvider {
                tool: tool.to_owned(),
                key,
                needs,
                provider: provider.clone(),
            };
        let mut errors = Vec::new();
        if let Some(timeout) = self.timeout_secs
            && (!is_acp || timeout == 0)
        {
            errors.push(SubagentTableError::BadTimeout {
                tool: tool.to_owned(),
                provider: provider.clone(),
            });
        }
        if self.child.is_some() && provider.borrow() != SpawnProvider::NAME {
            errors.push(mismatch(SpawnProvider::NAME, "child"));
        }
        match &self.command {
            Some(_) if !is_acp => errors.push(mismatch(AcpProvider::NAME, "command")),
            Some(command)
                if command
                    .first()
                    .is_none_or(|program| program.borrow().trim().is_empty()) =>
            {
                errors.push(SubagentTableError::EmptyCommand {
                    tool: tool.to_owned(),
                });
            }
            None if is_acp => errors.push(SubagentTableError::AcpNeedsCommand {
                tool: tool.to_owned(),
                provider: provider.clone(),
            }),
            _ => {}
        }
        if errors.is_empty() {
            Ok(())
        } else {
            Err(errors)
        }
    }

    /// The provider made for the instance `tool` alone, named after it,
    /// when its table has a key of its own: a spawn provider whose
    /// children are its `child`, or an ACP provider running its `command`
    /// within its `timeout_secs`. `None` when the instance binds to the
    /// registered provider its `provider` names. An ACP child runs without
    /// the variables `env_removed` names (the host's policy). A caller registers it in
    /// a registry of its own, so other instances never see it. Call it on
    /// a table that passed [`check`](Self::check).
    pub fn own_provider(
        &self,
        tool: &str,
        env_removed: &[String],
    ) -> Result<Option<Arc<dyn SubagentProvider>>, SubagentError> {
        if let Some(child) = &self.child {
            let child = child.clone().map(|text| text.borrow().to_owned());
            return Ok(Some(Arc::new(
                SpawnProvider::new().named(tool).with_child(child),
            )));
        }
        let Some(command) = &self.command else {
            return Ok(None);
        };
        let mut provider = AcpProvider::new(command.iter().map(|arg| arg.borrow().to_owned()))?
            .named(tool)
            .without_env(env_removed.iter().cloned());
        if let Some(seconds) = self.timeout_secs {
            provider = provider.with_timeout(Duration::from_secs(seconds));
        }
        Ok(Some(Arc::new(provider)))
    }

    /// The subagent tool of the instance `tool`: named `tool`, bound to
    /// its own provider (named `tool` too, see
    /// [`own_provider`](Self::own_provider)) when it has one, else to its
    /// `provider`. The caller adds the deployment's
    /// [`with_max_depth`](SubagentToolConfig::with_max_depth).
    pub fn tool_config(&self, tool: &str) -> SubagentToolConfig {
        let binding = match (&self.child, &self.command, &self.provider) {
            (None, None, Some(provider)) => provider.borrow(),
            _ => tool,
        };
        SubagentToolConfig::new(binding).named(tool)
    }
}

impl<S> SubagentTable<S> {
    /// The same table with every string mapped by `f` (a front end drops
    /// the places it kept: `table.map(Spanned::into_inner)`).
    pub fn map<T>(self, mut f: impl FnMut(S) -> T) -> SubagentTable<T> {
        SubagentTable {
            kind: self.kind,
            provider: self.provider.map(&mut f),
            permission: self.permission,
            command: self
                .command
                .map(|command| command.into_iter().map(&mut f).collect()),
            timeout_secs: self.timeout_secs,
            env_keep: self.env_keep.into_iter().map(&mut f).collect(),
            child: self.child.map(|child| child.map(f)),
        }
    }
}

/// The providers every subagent instance may name without a key of its
/// own, in the words of a problem's help.
const PROVIDERS: [&str; 3] = [SpawnProvider::NAME, ForkProvider::NAME, AcpProvider::NAME];

/// A problem of a [`SubagentTable`] that the deserializer cannot see. Each
/// message names the instance.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SubagentTableError<S: Borrow<str>> {
    /// The table has no `provider`.
    #[error("subagent instance `{tool}` has no `provider`")]
    NoProvider {
        /// The instance's name.
        tool: String,
    },
    /// `timeout_secs` on an instance that is not `acp`, or zero.
    #[error(
        "`timeout_secs` of `[tools.{tool}]` must be a positive number of seconds, \
         for an `acp` instance"
    )]
    BadTimeout {
        /// The instance's name.
        tool: String,
        /// The provider as written.
        provider: S,
    },
    /// A key that configures another provider than the table's: `child`
    /// (spawn's) or `command` (acp's).
    #[error(
        "tool instance `{tool}` has {}, but its provider is `{}`",
        key_phrase(key),
        .provider.borrow()
    )]
    KeyNeedsProvider {
        /// The instance's name.
        tool: String,
        /// The key: `child` or `command`.
        key: &'static str,
        /// The provider the key goes with.
        needs: &'static str,
        /// The provider as written.
        provider: S,
    },
    /// `provider = "acp"` without a `command`.
    #[error("subagent instance `{tool}` has provider `acp` but no `command`")]
    AcpNeedsCommand {
        /// The instance's name.
        tool: String,
        /// The provider as written.
        provider: S,
    },
    /// A `command` with no program.
    #[error("subagent instance `{tool}` has an empty `command`")]
    EmptyCommand {
        /// The instance's name.
        tool: String,
    },
}

/// How a message names `key`: "a `child` table", "a `command`".
fn key_phrase(key: &str) -> String {
    if key == "child" {
        "a `child` table".to_owned()
    } else {
        format!("a `{key}`")
    }
}

impl<S: Borrow<str> + std::fmt::Debug> TableProblem<S> for SubagentTableError<S> {
    fn places(&self) -> Vec<ProblemPlace<'_, S>> {
        match self {
            Self::NoProvider { .. } => vec![ProblemPlace::key("kind", "a subagent")],
            Self::BadTimeout { provider, .. } => vec![
                ProblemPlace::key("timeout_secs", "here"),
                ProblemPlace::value("provider", provider, "provider"),
            ],
            Self::KeyNeedsProvider { key, provider, .. } => vec![
                ProblemPlace::key(key, key),
                ProblemPlace::value("provider", provider, "provider"),
            ],
            Self::AcpNeedsCommand { provider, .. } => {
                vec![ProblemPlace::value("provider", provider, "needs a command")]
            }
            Self::EmptyCommand { .. } => vec![ProblemPlace::key("command", "empty")],
        }
    }

    fn help(&self) -> Option<String> {
        Some(match self {
            Self::NoProvider { .. } => {
                let [spawn, fork, acp] = PROVIDERS;
                format!("set `provider` to `{spawn}`, `{fork}` or `{acp}`")
            }
            Self::BadTimeout { .. } => "it bounds how long an `acp` child may take to answer; \
                 in-process children are bounded by the turn's cancellation"
                .to_owned(),
            Self::KeyNeedsProvider { key, needs, .. } if *key == "child" => format!(
                "`child` says who the children of a spawn instance are: it needs \
                 `provider = \"{needs}\"`, or remove the table (a `fork` child is the calling \
                 agent itself)"
            ),
            Self::KeyNeedsProvider { key, needs, .. } => format!(
                "`{key}` is the ACP agent an `{needs}` instance starts: set that provider, \
                 or remove the key"
            ),
            Self::AcpNeedsCommand { .. } | Self::EmptyCommand { .. } => {
                "give the ACP agent to start, program first: \
                 `command = [\"dsh\", \"acp\", \"--config\", \"child.toml\"]`"
                    .to_owned()
            }
        })
    }
}

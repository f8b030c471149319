//! `[mcp.<name>]`: the MCP servers of a deployment.
//!
//! ```toml
//! [mcp.docs]                                 # a server named `docs`: [a-z][a-z0-9_]*, no `__`
//! command = ["python3", "docs_server.py"]    # stdio; runs in the session's working directory,
//! cwd = "."                                  # or here, relative to the deployment file
//! env = { DOCS_ROOT = "/srv/docs" }          # optional
//! # url = "https://example.com/mcp"          # or streamable HTTP, with optional
//! # headers = { X-Team = "core" }            # headers and
//! # bearer_token_env = "DOCS_TOKEN"          # a bearer token read from the environment
//! tools = ["search", "fetch_page"]           # optional allow-list of the server's tool names
//! permission = "ask"                         # optional: every tool asks ("allow": none does);
//!                                            # left out, a tool asks unless annotated read-only
//! allow = ["search"]                         # optional: tools that never ask (`ask` = always ask)
//! env_keep = ["DOCS_API_TOKEN"]              # optional: variables it gets besides HOME, PATH, …
//! sandbox = "read-only"                      # optional: default the deployment's [sandbox] mode
//! network = true                             # default: a sandboxed server reaches the network
//! required = false                           # default: a failed start leaves the session without it
//! startup_timeout_secs = 10                  # defaults as shown
//! call_timeout_secs = 60
//! log_level = "warning"                      # the server's log messages shown: this level and above
//! ```
//!
//! An agent lists `"mcp:docs"` in its `tools` to get every (allowed) tool
//! of the server, each as `docs__<tool>`.

use std::collections::BTreeMap;
use std::ops::Range;
use std::path::Path;

use dsh_sandbox::SandboxMode;
use dsh_tool_mcp::{McpServerTable, ServerConfig};
use toml::Spanned;
use toml::de::DeValue;

use super::places::{TablePlaces, deserialize};
use crate::problem::{Problem, SourceFile};

/// One server of the deployment, checked.
#[derive(Debug, Clone)]
pub struct McpSpec {
    /// The server's configuration, but for the bearer token, which is
    /// read from the environment when the server starts.
    pub config: ServerConfig,
    /// The `[mcp.<name>]` table.
    pub span: Range<usize>,
    /// The variable holding the bearer token.
    pub bearer_token_env: Option<Spanned<String>>,
    /// The allow-list as written, to point at an unknown name.
    pub allowed: Vec<Spanned<String>>,
    /// What the host's policy takes from the table: `env_keep`, `sandbox`,
    /// `network`.
    pub rules: ServerRules,
}

/// What a server's table says of the host's policy for its process.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ServerRules {
    /// `env_keep`: variables it inherits besides the base.
    pub env_keep: Vec<String>,
    /// `sandbox`: its sandbox mode, in place of the deployment's.
    pub sandbox: Option<SandboxMode>,
    /// `network`: whether it reaches the network when sandboxed (default
    /// `true`).
    pub network: Option<bool>,
}

impl McpSpec {
    /// The configuration to start the server with: the bearer token read
    /// now. `Err` names the variable that is not set.
    pub(crate) fn server_config(&self, file: &SourceFile) -> Result<ServerConfig, Problem> {
        // The logins kept by `dsh mcp login` (used when no token is set).
        let config = match logins() {
            Some(logins) => self.config.clone().with_logins(logins),
            None => self.config.clone(),
        };
        let Some(var) = &self.bearer_token_env else {
            return Ok(config);
        };
        match std::env::var(var.get_ref()) {
            Ok(token) => Ok(config.with_bearer_token(token)),
            Err(_) => Err(file
                .problem(format!(
                    "MCP server `{}`: the environment variable `{}` is not set",
                    self.config.name,
                    var.get_ref()
                ))
                .label(var.span(), "its bearer token")
                .help("set it, or remove `bearer_token_env` if the server needs no token")),
        }
    }
}

/// Where dsh keeps the logins to MCP servers: `logins/mcp` in its state
/// directory (`dsh_session_store::state_dir`); `None` when it has none
/// (neither `XDG_STATE_HOME` nor `HOME` is set).
pub fn logins() -> Option<dsh_tool_mcp::Logins> {
    let state = dsh_session_store::state_dir().ok()?;
    Some(dsh_tool_mcp::Logins::in_dir(
        state.join("logins").join("mcp"),
    ))
}

/// Reads each `[mcp.<name>]` table as the MCP crate's
/// [`McpServerTable`], and checks it by that crate's rule, pushing each
/// problem.
pub(super) fn read_servers(
    file: &SourceFile,
    dir: Option<&Path>,
    tables: BTreeMap<String, Spanned<DeValue<'_>>>,
    problems: &mut Vec<Problem>,
) -> Vec<McpSpec> {
    let mut specs = Vec::new();
    for (name, value) in tables {
        let places = TablePlaces::of(&value);
        let table: McpServerTable<Spanned<String>> = match deserialize(file, value) {
            Ok(table) => table,
            Err(problem) => {
                problems.push(problem);
                continue;
            }
        };
        match table.server_config(&name, dir) {
            Ok(config) => {
                let (line, _) = file.position(places.span().start);
                let line = u32::try_from(line).unwrap_or(u32::MAX);
                specs.push(McpSpec {
                    config: config.declared_at(file.name(), line),
                    span: places.span(),
                    bearer_token_env: table.bearer_token_env,
                    allowed: table.tools.unwrap_or_default(),
                    rules: ServerRules {
                        env_keep: table
                            .env_keep
                            .into_iter()
                            .map(Spanned::into_inner)
                            .collect(),
                        sandbox: table.sandbox,
                        network: table.network,
                    },
                });
            }
            Err(errors) => {
                problems.extend(errors.iter().map(|error| places.problem(file, error)));
            }
        }
    }
    specs
}

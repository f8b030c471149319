//! `[mcp.<name>]`: the MCP servers of a deployment.
//!
//! ```toml
//! [mcp.docs]                                 # a server named `docs`: [a-z][a-z0-9_]*, no `__`
//! command = ["python3", "docs_server.py"]    # stdio; runs in the deployment file's directory
//! env = { DOCS_ROOT = "/srv/docs" }          # optional
//! # url = "https://example.com/mcp"          # or streamable HTTP, with optional
//! # headers = { X-Team = "core" }            # headers and
//! # bearer_token_env = "DOCS_TOKEN"          # a bearer token read from the environment
//! tools = ["search", "fetch_page"]           # optional allow-list of the server's tool names
//! required = false                           # default: a failed start leaves the session without it
//! startup_timeout_secs = 10                  # defaults as shown
//! call_timeout_secs = 60
//! ```
//!
//! An agent lists `"mcp:docs"` in its `tools` to get every (allowed) tool
//! of the server, each as `docs__<tool>`.

use std::collections::BTreeMap;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::time::Duration;

use dsh_tool_mcp::{MAX_SERVER_NAME, ServerConfig, is_server_name};
use serde::Deserialize;
use toml::Spanned;

use crate::problem::{Problem, SourceFile};

/// `[mcp.<name>]` as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpTable {
    command: Option<Spanned<Vec<String>>>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    url: Option<Spanned<String>>,
    #[serde(default)]
    headers: BTreeMap<String, String>,
    bearer_token_env: Option<Spanned<String>>,
    tools: Option<Vec<Spanned<String>>>,
    #[serde(default)]
    required: bool,
    startup_timeout_secs: Option<Spanned<f64>>,
    call_timeout_secs: Option<Spanned<f64>>,
}

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
}

impl McpSpec {
    /// The configuration to start the server with: the bearer token read
    /// now. `Err` names the variable that is not set.
    pub fn server_config(&self, file: &SourceFile) -> Result<ServerConfig, Problem> {
        let Some(var) = &self.bearer_token_env else {
            return Ok(self.config.clone());
        };
        match std::env::var(var.get_ref()) {
            Ok(token) => Ok(self.config.clone().with_bearer_token(token)),
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

/// Checks the `[mcp.<name>]` tables, pushing each problem.
pub fn check_servers(
    file: &SourceFile,
    dir: Option<&Path>,
    tables: BTreeMap<String, Spanned<McpTable>>,
    problems: &mut Vec<Problem>,
) -> Vec<McpSpec> {
    let mut specs = Vec::new();
    for (name, table) in tables {
        let span = table.span();
        let before = problems.len();
        if !is_server_name(&name) {
            problems.push(
                file.problem(format!("`{name}` is not an MCP server name"))
                    .label(span.clone(), "this server")
                    .help(format!(
                        "a server name is `[a-z][a-z0-9_]*`, at most {MAX_SERVER_NAME} bytes, \
                         with no `__` and no trailing `_`: the model sees its tools as \
                         `<server>__<tool>`"
                    )),
            );
        }
        let table = table.into_inner();
        let transport = match (&table.command, &table.url) {
            (Some(command), None) if command.get_ref().is_empty() => {
                problems.push(
                    file.problem(format!("MCP server `{name}` has an empty `command`"))
                        .label(command.span(), "empty")
                        .help("give the program, then its arguments: `command = [\"python3\", \"server.py\"]`"),
                );
                None
            }
            (Some(command), None) => Some(stdio(&name, command.get_ref(), &table.env, dir)),
            (None, Some(url)) => {
                if !(url.get_ref().starts_with("http://") || url.get_ref().starts_with("https://"))
                {
                    problems.push(
                        file.problem(format!("MCP server `{name}`: `url` is not an http(s) URL"))
                            .label(url.span(), "not http or https")
                            .help("MCP servers over the network speak streamable HTTP"),
                    );
                }
                Some(
                    ServerConfig::http(name.clone(), url.get_ref().clone())
                        .with_env(table.headers.clone()),
                )
            }
            (Some(command), Some(url)) => {
                problems.push(
                    file.problem(format!("MCP server `{name}` has both `command` and `url`"))
                        .label(command.span(), "a process")
                        .label(url.span(), "a URL")
                        .help("keep one: `command` starts a server, `url` reaches one"),
                );
                None
            }
            (None, None) => {
                problems.push(
                    file.problem(format!("MCP server `{name}` has neither `command` nor `url`"))
                        .label(span.clone(), "this server")
                        .help("add `command = [\"program\", \"arg\"]` (stdio) or `url = \"https://…/mcp\"`"),
                );
                None
            }
        };
        if table.url.is_none() {
            for (key, value) in [
                ("headers", (!table.headers.is_empty()).then_some(())),
                (
                    "bearer_token_env",
                    table.bearer_token_env.as_ref().map(|_| ()),
                ),
            ] {
                if value.is_some() {
                    problems.push(
                        file.problem(format!("MCP server `{name}`: `{key}` needs a `url`"))
                            .label(span.clone(), "this server")
                            .help("headers and tokens are sent to HTTP servers only"),
                    );
                }
            }
        }
        let seconds = |value: &Option<Spanned<f64>>, key: &str, problems: &mut Vec<Problem>| {
            let value = value.as_ref()?;
            let secs = *value.get_ref();
            if secs.is_finite() && secs > 0.0 && secs <= 86_400.0 {
                Some(Duration::from_secs_f64(secs))
            } else {
                problems.push(
                    file.problem(format!(
                        "MCP server `{name}`: `{key}` must be a positive number of seconds"
                    ))
                    .label(value.span(), "not a timeout")
                    .help("at most a day, 86400"),
                );
                None
            }
        };
        let startup = seconds(
            &table.startup_timeout_secs,
            "startup_timeout_secs",
            problems,
        );
        let call = seconds(&table.call_timeout_secs, "call_timeout_secs", problems);
        let Some(mut config) = transport else {
            continue;
        };
        if problems.len() > before {
            continue;
        }
        if let Some(timeout) = startup {
            config = config.with_startup_timeout(timeout);
        }
        if let Some(timeout) = call {
            config = config.with_call_timeout(timeout);
        }
        if let Some(tools) = &table.tools {
            config = config.with_allowed_tools(tools.iter().map(|tool| tool.get_ref().clone()));
        }
        if table.required {
            config = config.required();
        }
        let (line, _) = file.position(span.start);
        config = config.declared_at(file.name(), u32::try_from(line).unwrap_or(u32::MAX));
        specs.push(McpSpec {
            config,
            span,
            bearer_token_env: table.bearer_token_env,
            allowed: table.tools.unwrap_or_default(),
        });
    }
    specs
}

/// A stdio server: a program given as a relative path (`./server.py`,
/// `bin/server`) is the deployment file's, and the server runs in the
/// file's directory, so its own relative paths are the file's too.
fn stdio(
    name: &str,
    command: &[String],
    env: &BTreeMap<String, String>,
    dir: Option<&Path>,
) -> ServerConfig {
    let mut argv = command.to_vec();
    if let (Some(dir), Some(program)) = (dir, argv.first_mut())
        && program.contains('/')
        && Path::new(program.as_str()).is_relative()
    {
        *program = absolute(dir).join(&*program).display().to_string();
    }
    let config = ServerConfig::stdio(name, argv).with_env(env.clone());
    match dir {
        Some(dir) => config.with_cwd(absolute(dir)),
        None => config,
    }
}

/// `dir` made absolute (`""`, the parent of `dsh.toml`, is the current
/// directory).
fn absolute(dir: &Path) -> PathBuf {
    let dir = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf())
}

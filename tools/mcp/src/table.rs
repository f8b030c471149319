//! `[mcp.<name>]`: an MCP server's table in a deployment file, and the
//! rule that makes a [`ServerConfig`] of it.

use std::borrow::Borrow;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use dsh_sandbox::SandboxMode;
use dsh_tools::{Permission, ProblemPlace, TableProblem};
use schemars::JsonSchema;
use serde::Deserialize;

use crate::tools::naming::{MAX_SERVER_NAME, is_server_name};
use crate::{McpApproval, ServerConfig};

/// The longest timeout a table may set: a day, in seconds.
pub const MAX_TIMEOUT_SECS: f64 = 86_400.0;

/// `[mcp.<name>]`: one MCP server of a deployment, named by the table's
/// key. An agent lists `"mcp:<name>"` in its `tools` to get every allowed
/// tool of the server, each as `<name>__<tool>`.
///
/// ```toml
/// [mcp.docs]                                 # a server named `docs`: [a-z][a-z0-9_]*, no `__`
/// command = ["python3", "docs_server.py"]    # stdio; runs in the session's working directory,
/// cwd = "."                                  # or here, relative to the deployment file
/// env = { DOCS_ROOT = "/srv/docs" }          # optional
/// # url = "https://example.com/mcp"          # or streamable HTTP, with optional
/// # headers = { X-Team = "core" }            # headers and
/// # bearer_token_env = "DOCS_TOKEN"          # a bearer token read from the environment
/// tools = ["search", "fetch_page"]           # optional allow-list of the server's tool names
/// required = false                           # default: a failed start leaves the session without it
/// startup_timeout_secs = 10                  # defaults as shown
/// call_timeout_secs = 60
/// log_level = "warning"                      # the server's log messages shown: this level and above
/// ```
///
/// `S` is how the table holds a string: `String`, or a type that also
/// keeps where the string was written (`toml::Spanned<String>`), so a
/// front end deserializes this one schema and still points into its file.
/// [`server_config`](Self::server_config) checks it and makes the
/// server's configuration.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
// The bound is stated: serde's own would ask `S: Default` for the
// defaulted maps, which a spanned string is not.
#[serde(deny_unknown_fields, bound(deserialize = "S: Deserialize<'de>"))]
pub struct McpServerTable<S = String> {
    /// A server dsh starts, speaking MCP on its standard input and output:
    /// the program, then its arguments. A program written as a relative
    /// path with a `/` (`./server.py`) is relative to the deployment
    /// file's directory. The server runs in the session's working
    /// directory unless `cwd` says otherwise. Give either `command` or
    /// `url`.
    pub command: Option<Vec<S>>,
    /// The directory a `command` server runs in, and where its sandbox
    /// lets it write: relative to the deployment file's directory (`"."`
    /// is that directory). Default: the session's working directory, with
    /// the session's writable set, as for `bash`.
    pub cwd: Option<S>,
    /// Variables added to the environment of a `command` server. Default:
    /// none.
    #[serde(default)]
    pub env: BTreeMap<String, S>,
    /// A server over the network, at this `http://` or `https://` URL,
    /// speaking MCP's streamable HTTP. Give either `command` or `url`.
    pub url: Option<S>,
    /// Headers sent with every request to a `url` server. Default: none.
    #[serde(default)]
    pub headers: BTreeMap<String, S>,
    /// The environment variable holding a bearer token for a `url`
    /// server's `Authorization` header, read when the server starts; a
    /// session does not start the server when it is not set.
    pub bearer_token_env: Option<S>,
    /// The server's tools the model may see, by the server's own names.
    /// Default: every tool of the server.
    pub tools: Option<Vec<S>>,
    /// `true`: a session does not start when the server fails to.
    /// `false` (the default): the session goes on without its tools.
    #[serde(default)]
    pub required: bool,
    /// How many seconds the server has to start, answer `initialize` and
    /// list its tools; more than 0, at most 86400. Default: 10.
    pub startup_timeout_secs: Option<f64>,
    /// How many seconds one call of a tool may take; more than 0, at most
    /// 86400. Default: 60.
    pub call_timeout_secs: Option<f64>,
    /// `"ask"`: every tool of the server asks the user before each call;
    /// `"allow"`: none does. Left out, a tool asks unless its annotations
    /// say `readOnlyHint: true` (the MCP specification treats an
    /// unannotated tool as possibly destructive). `ask` and `allow` name
    /// exceptions.
    pub permission: Option<Permission>,
    /// Tools, by the server's names, that ask before each call whatever
    /// `permission` says. Default: none.
    #[serde(default)]
    pub ask: Vec<S>,
    /// Tools, by the server's names, that run without asking whatever
    /// `permission` and their annotations say. Default: none.
    #[serde(default)]
    pub allow: Vec<S>,
    /// Variables of dsh's environment a `command` server gets besides the
    /// base every server gets (`HOME`, `LOGNAME`, `PATH`, `SHELL`, `TERM`,
    /// `USER`, the locale). The model adapter's key, any
    /// `bearer_token_env` and `[environment] secrets` are never passed.
    /// Default: none.
    #[serde(default)]
    pub env_keep: Vec<S>,
    /// The sandbox a `command` server runs in: `"read-only"`,
    /// `"workspace-write"` or `"full-access"`. Default: the deployment's
    /// `[sandbox] mode`.
    pub sandbox: Option<SandboxMode>,
    /// Whether a sandboxed `command` server may reach the network.
    /// Default: `true`.
    pub network: Option<bool>,
    /// The least severe of the server's log messages
    /// (`notifications/message`) dsh shows on its stderr, with the
    /// server's name: `"debug"`, `"info"`, `"notice"`, `"warning"`,
    /// `"error"`, `"critical"`, `"alert"` or `"emergency"`. A server with
    /// the logging capability is asked for this level and above
    /// (`logging/setLevel`). Default: `"warning"`.
    pub log_level: Option<crate::McpLogLevel>,
    /// The most sampling requests (`sampling/createMessage`: the server
    /// using the person's model) during one tool call of the server, in
    /// every mode; past it, a request is refused, the server told with an
    /// error and the person once. `0`: none. Default: 8.
    pub sampling_requests_per_call: Option<u32>,
    /// The most sampling requests for one session. Default: 32.
    pub sampling_requests_per_session: Option<u32>,
    /// The most tokens the sampling requests of one tool call may ask for
    /// (each its `maxTokens`, at most 4096). Default: 16384.
    pub sampling_tokens_per_call: Option<u64>,
    /// The most tokens the sampling requests of one session may ask for.
    /// Default: 65536.
    pub sampling_tokens_per_session: Option<u64>,
}

impl<S> Default for McpServerTable<S> {
    fn default() -> Self {
        Self {
            command: None,
            cwd: None,
            env: BTreeMap::new(),
            url: None,
            headers: BTreeMap::new(),
            bearer_token_env: None,
            tools: None,
            required: false,
            startup_timeout_secs: None,
            call_timeout_secs: None,
            permission: None,
            ask: Vec::new(),
            allow: Vec::new(),
            env_keep: Vec::new(),
            sandbox: None,
            network: None,
            log_level: None,
            sampling_requests_per_call: None,
            sampling_requests_per_session: None,
            sampling_tokens_per_call: None,
            sampling_tokens_per_session: None,
        }
    }
}

impl<S: Borrow<str> + Clone> McpServerTable<S> {
    /// The configuration of server `name` (the table's key) as the table
    /// says, for a deployment file in `dir` (`None`: relative programs are
    /// left as written, and the server runs in dsh's directory). The
    /// bearer token is not read: the caller reads
    /// [`bearer_token_env`](Self::bearer_token_env) when the server starts
    /// ([`ServerConfig::with_bearer_token`]), and records where the table is
    /// ([`ServerConfig::declared_at`]). `Err` has every problem.
    ///
    /// ```
    /// use dsh_tool_mcp::{McpServerTable, Transport};
    ///
    /// let table = McpServerTable { url: Some("https://example.com/mcp".to_owned()), ..Default::default() };
    /// let config = table.server_config("docs", None)?;
    /// assert!(matches!(config.transport, Transport::Http { .. }));
    /// let both = McpServerTable { command: Some(vec!["server".to_owned()]), ..table };
    /// let errors = both.server_config("docs", None).expect_err("two transports");
    /// assert_eq!(errors[0].to_string(), "MCP server `docs` has both `command` and `url`");
    /// # Ok::<(), Vec<dsh_tool_mcp::McpTableError<String>>>(())
    /// ```
    pub fn server_config(
        &self,
        name: &str,
        dir: Option<&Path>,
    ) -> Result<ServerConfig, Vec<McpTableError<S>>> {
        let mut errors = Vec::new();
        if !is_server_name(name) {
            errors.push(McpTableError::BadName {
                server: name.to_owned(),
            });
        }
        let config = self.transport(name, dir, &mut errors);
        self.needs_url(name, &mut errors);
        let startup = self.seconds(name, "startup_timeout_secs", self.startup_timeout_secs);
        let call = self.seconds(name, "call_timeout_secs", self.call_timeout_secs);
        let (startup, call) = match (startup, call) {
            (Ok(startup), Ok(call)) => (startup, call),
            (startup, call) => {
                errors.extend(startup.err());
                errors.extend(call.err());
                return Err(errors);
            }
        };
        let Some(mut config) = config.filter(|_| errors.is_empty()) else {
            return Err(errors);
        };
        if let Some(timeout) = startup {
            config = config.with_startup_timeout(timeout);
        }
        if let Some(timeout) = call {
            config = config.with_call_timeout(timeout);
        }
        if let Some(tools) = &self.tools {
            config = config.with_allowed_tools(tools.iter().map(|tool| tool.borrow().to_owned()));
        }
        if self.required {
            config = config.required();
        }
        if let Some(level) = self.log_level {
            config = config.with_log_level(level);
        }
        let names = |names: &[S]| names.iter().map(|name| name.borrow().to_owned()).collect();
        let config = config.with_sampling_limits(self.sampling_limits());
        Ok(config.with_approval(McpApproval {
            permission: self.permission,
            ask: names(&self.ask),
            allow: names(&self.allow),
        }))
    }

    /// The bounds of the server's sampling: the defaults, but for the
    /// keys the table sets.
    fn sampling_limits(&self) -> crate::SamplingLimits {
        let mut limits = crate::SamplingLimits::default();
        if let Some(requests) = self.sampling_requests_per_call {
            limits = limits.with_requests_per_call(requests);
        }
        if let Some(requests) = self.sampling_requests_per_session {
            limits = limits.with_requests_per_session(requests);
        }
        if let Some(tokens) = self.sampling_tokens_per_call {
            limits = limits.with_tokens_per_call(tokens);
        }
        if let Some(tokens) = self.sampling_tokens_per_session {
            limits = limits.with_tokens_per_session(tokens);
        }
        limits
    }

    /// The server's transport: exactly one of `command` (not empty) and
    /// `url` (http or https).
    fn transport(
        &self,
        name: &str,
        dir: Option<&Path>,
        errors: &mut Vec<McpTableError<S>>,
    ) -> Option<ServerConfig> {
        let server = || name.to_owned();
        match (&self.command, &self.url) {
            (Some(command), None) if command.is_empty() => {
                errors.push(McpTableError::EmptyCommand { server: server() });
                None
            }
            (Some(command), None) => {
                let cwd = self.cwd.as_ref().map(|cwd| cwd.borrow());
                Some(stdio(name, command, &self.env, dir, cwd))
            }
            (None, Some(url)) => {
                let text = url.borrow();
                if !(text.starts_with("http://") || text.starts_with("https://")) {
                    errors.push(McpTableError::NotHttp {
                        server: server(),
                        url: url.clone(),
                    });
                }
                Some(ServerConfig::http(name, text).with_env(strings(&self.headers)))
            }
            (Some(_), Some(url)) => {
                errors.push(McpTableError::CommandAndUrl {
                    server: server(),
                    url: url.clone(),
                });
                None
            }
            (None, None) => {
                errors.push(McpTableError::NoTransport { server: server() });
                None
            }
        }
    }

    /// Headers and a token are sent to HTTP servers only: without a `url`
    /// they would be silently unused.
    fn needs_url(&self, name: &str, errors: &mut Vec<McpTableError<S>>) {
        if self.url.is_some() {
            if let Some(cwd) = &self.cwd {
                errors.push(McpTableError::NeedsCommand {
                    server: name.to_owned(),
                    key: "cwd",
                    value: cwd.clone(),
                });
            }
            return;
        }
        if !self.headers.is_empty() {
            errors.push(McpTableError::NeedsUrl {
                server: name.to_owned(),
                key: "headers",
                value: None,
            });
        }
        if let Some(var) = &self.bearer_token_env {
            errors.push(McpTableError::NeedsUrl {
                server: name.to_owned(),
                key: "bearer_token_env",
                value: Some(var.clone()),
            });
        }
    }

    /// A timeout key's value as a duration: positive, finite, at most
    /// [`MAX_TIMEOUT_SECS`].
    fn seconds(
        &self,
        name: &str,
        key: &'static str,
        value: Option<f64>,
    ) -> Result<Option<Duration>, McpTableError<S>> {
        let Some(seconds) = value else {
            return Ok(None);
        };
        if seconds.is_finite() && seconds > 0.0 && seconds <= MAX_TIMEOUT_SECS {
            Ok(Some(Duration::from_secs_f64(seconds)))
        } else {
            Err(McpTableError::BadTimeout {
                server: name.to_owned(),
                key,
                seconds,
            })
        }
    }
}

impl<S> McpServerTable<S> {
    /// The same table with every string mapped by `f` (a front end drops
    /// the places it kept: `table.map(Spanned::into_inner)`).
    pub fn map<T>(self, mut f: impl FnMut(S) -> T) -> McpServerTable<T> {
        let map_all = |list: Vec<S>, f: &mut dyn FnMut(S) -> T| list.into_iter().map(f).collect();
        let map_values = |pairs: BTreeMap<String, S>, f: &mut dyn FnMut(S) -> T| {
            pairs
                .into_iter()
                .map(|(key, value)| (key, f(value)))
                .collect()
        };
        McpServerTable {
            command: self.command.map(|command| map_all(command, &mut f)),
            cwd: self.cwd.map(&mut f),
            env: map_values(self.env, &mut f),
            url: self.url.map(&mut f),
            headers: map_values(self.headers, &mut f),
            bearer_token_env: self.bearer_token_env.map(&mut f),
            tools: self.tools.map(|tools| map_all(tools, &mut f)),
            required: self.required,
            startup_timeout_secs: self.startup_timeout_secs,
            call_timeout_secs: self.call_timeout_secs,
            permission: self.permission,
            ask: map_all(self.ask, &mut f),
            allow: map_all(self.allow, &mut f),
            env_keep: map_all(self.env_keep, &mut f),
            sandbox: self.sandbox,
            network: self.network,
            log_level: self.log_level,
            sampling_requests_per_call: self.sampling_requests_per_call,
            sampling_requests_per_session: self.sampling_requests_per_session,
            sampling_tokens_per_call: self.sampling_tokens_per_call,
            sampling_tokens_per_session: self.sampling_tokens_per_session,
        }
    }
}

/// The pairs of `map` as owned strings.
fn strings<S: Borrow<str>>(map: &BTreeMap<String, S>) -> Vec<(String, String)> {
    map.iter()
        .map(|(key, value)| (key.clone(), value.borrow().to_owned()))
        .collect()
}

/// A stdio server: a program given as a relative path (`./server.py`,
/// `bin/server`) is the deployment file's. The server runs in `cwd`,
/// relative to the file's directory, if the table gives one, else in the
/// session's working directory (none set here).
fn stdio<S: Borrow<str>>(
    name: &str,
    command: &[S],
    env: &BTreeMap<String, S>,
    dir: Option<&Path>,
    cwd: Option<&str>,
) -> ServerConfig {
    let mut argv: Vec<String> = command.iter().map(|arg| arg.borrow().to_owned()).collect();
    if let (Some(dir), Some(program)) = (dir, argv.first_mut())
        && program.contains('/')
        && Path::new(program.as_str()).is_relative()
    {
        *program = absolute(dir).join(&*program).display().to_string();
    }
    let config = ServerConfig::stdio(name, argv).with_env(strings(env));
    match cwd {
        Some(cwd) => config.with_cwd(absolute(&dir.unwrap_or(Path::new("")).join(cwd))),
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

/// A problem of an [`McpServerTable`] that the deserializer cannot see.
/// Each message names the server.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum McpTableError<S: Borrow<str>> {
    /// The table's key cannot prefix the names of the server's tools.
    #[error("`{server}` is not an MCP server name")]
    BadName {
        /// The table's key.
        server: String,
    },
    /// `command` is an empty list.
    #[error("MCP server `{server}` has an empty `command`")]
    EmptyCommand {
        /// The server's name.
        server: String,
    },
    /// `url` is not an `http://` or `https://` URL.
    #[error("MCP server `{server}`: `url` is not an http(s) URL")]
    NotHttp {
        /// The server's name.
        server: String,
        /// The URL as written.
        url: S,
    },
    /// Both `command` and `url`: one server has one transport.
    #[error("MCP server `{server}` has both `command` and `url`")]
    CommandAndUrl {
        /// The server's name.
        server: String,
        /// The URL as written.
        url: S,
    },
    /// Neither `command` nor `url`.
    #[error("MCP server `{server}` has neither `command` nor `url`")]
    NoTransport {
        /// The server's name.
        server: String,
    },
    /// `headers` or `bearer_token_env` without a `url`.
    #[error("MCP server `{server}`: `{key}` needs a `url`")]
    NeedsUrl {
        /// The server's name.
        server: String,
        /// The key: `headers` or `bearer_token_env`.
        key: &'static str,
        /// The value as written, when it is a string.
        value: Option<S>,
    },
    /// `cwd` with a `url`: only a server dsh starts runs somewhere.
    #[error("MCP server `{server}`: `{key}` needs a `command`")]
    NeedsCommand {
        /// The server's name.
        server: String,
        /// The key: `cwd`.
        key: &'static str,
        /// The value as written.
        value: S,
    },
    /// A timeout that is not a positive number of seconds, at most a day.
    #[error("MCP server `{server}`: `{key}` must be a positive number of seconds")]
    BadTimeout {
        /// The server's name.
        server: String,
        /// The key: `startup_timeout_secs` or `call_timeout_secs`.
        key: &'static str,
        /// The value as written.
        seconds: f64,
    },
}

impl<S: Borrow<str> + std::fmt::Debug> TableProblem<S> for McpTableError<S> {
    fn places(&self) -> Vec<ProblemPlace<'_, S>> {
        match self {
            Self::BadName { .. } | Self::NoTransport { .. } => {
                vec![ProblemPlace::table("this server")]
            }
            Self::EmptyCommand { .. } => vec![ProblemPlace::key("command", "empty")],
            Self::NotHttp { url, .. } => vec![ProblemPlace::value("url", url, "not http or https")],
            Self::CommandAndUrl { url, .. } => vec![
                ProblemPlace::key("command", "a process"),
                ProblemPlace::value("url", url, "a URL"),
            ],
            Self::NeedsUrl {
                key,
                value: Some(value),
                ..
            } => vec![ProblemPlace::value(key, value, "without a `url`")],
            Self::NeedsUrl { key, .. } => vec![ProblemPlace::key(key, "without a `url`")],
            Self::NeedsCommand { key, value, .. } => {
                vec![ProblemPlace::value(key, value, "with a `url`")]
            }
            Self::BadTimeout { key, .. } => vec![ProblemPlace::key(key, "not a timeout")],
        }
    }

    fn help(&self) -> Option<String> {
        Some(match self {
            Self::BadName { .. } => format!(
                "a server name is `[a-z][a-z0-9_]*`, at most {MAX_SERVER_NAME} bytes, \
                 with no `__` and no trailing `_`: the model sees its tools as \
                 `<server>__<tool>`"
            ),
            Self::EmptyCommand { .. } => {
                "give the program, then its arguments: `command = [\"python3\", \"server.py\"]`"
                    .to_owned()
            }
            Self::NotHttp { .. } => "MCP servers over the network speak streamable HTTP".to_owned(),
            Self::CommandAndUrl { .. } => {
                "keep one: `command` starts a server, `url` reaches one".to_owned()
            }
            Self::NoTransport { .. } => {
                "add `command = [\"program\", \"arg\"]` (stdio) or `url = \"https://…/mcp\"`"
                    .to_owned()
            }
            Self::NeedsUrl { .. } => "headers and tokens are sent to HTTP servers only".to_owned(),
            Self::NeedsCommand { .. } => {
                "a server over HTTP runs elsewhere: remove `cwd`, or start it with `command`"
                    .to_owned()
            }
            Self::BadTimeout { .. } => "at most a day, 86400".to_owned(),
        })
    }
}

#[cfg(test)]
mod tests {
    use dsh_tools::table_testing::{assert_described, assert_refused, table_schema};

    use super::*;
    use crate::Transport;

    type Spanned = toml::Spanned<String>;

    fn errors(text: &str, name: &str) -> Vec<String> {
        let table: McpServerTable = toml::from_str(text).expect("deserializes");
        table
            .server_config(name, None)
            .expect_err("a problem")
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    #[test]
    fn cwd_is_the_files_directory_relative_and_needs_a_command() {
        let table: McpServerTable =
            toml::from_str("command = [\"server\"]\ncwd = \".\"").expect("valid");
        let config = table
            .server_config("docs", Some(Path::new("/etc/dsh")))
            .expect("good");
        let Transport::Stdio { cwd, .. } = &config.transport else {
            panic!("a stdio server: {config:?}");
        };
        assert_eq!(cwd.as_deref(), Some(Path::new("/etc/dsh")));
        assert_eq!(
            errors("url = \"https://example.com/mcp\"\ncwd = \"srv\"", "docs"),
            ["MCP server `docs`: `cwd` needs a `command`"]
        );
    }

    #[test]
    fn a_stdio_table_makes_a_server_of_the_files_program_in_the_sessions_directory() {
        let text = r#"
command = ["./server.py", "--verbose"]
env = { DOCS_ROOT = "/srv/docs" }
tools = ["search"]
required = true
startup_timeout_secs = 2.5
"#;
        let table: McpServerTable<Spanned> = toml::from_str(text).expect("valid");
        let config = table
            .server_config("docs", Some(Path::new("/etc/dsh")))
            .expect("good");
        let Transport::Stdio {
            command, env, cwd, ..
        } = &config.transport
        else {
            panic!("a stdio server: {config:?}");
        };
        assert_eq!(command, &["/etc/dsh/./server.py", "--verbose"]);
        assert_eq!(env, &[("DOCS_ROOT".to_owned(), "/srv/docs".to_owned())]);
        // No `cwd`: the session's working directory, set when it starts.
        assert_eq!(cwd.as_deref(), None);
        assert_eq!(config.allowed_tools, Some(vec!["search".to_owned()]));
        assert!(config.required);
        assert_eq!(config.startup_timeout, Duration::from_millis(2500));
        assert_eq!(config.call_timeout, crate::DEFAULT_CALL_TIMEOUT);
    }

    #[test]
    fn an_http_table_sends_its_headers() {
        let text = "url = \"https://example.com/mcp\"\nheaders = { X-Team = \"core\" }\n\
                    bearer_token_env = \"TOKEN\"";
        let table: McpServerTable = toml::from_str(text).expect("valid");
        let config = table.server_config("web", None).expect("good");
        let Transport::Http { url, headers, .. } = &config.transport else {
            panic!("an HTTP server: {config:?}");
        };
        assert_eq!(url, "https://example.com/mcp");
        assert_eq!(headers, &[("X-Team".to_owned(), "core".to_owned())]);
        assert_eq!(table.bearer_token_env.as_deref(), Some("TOKEN"));
    }

    #[test]
    fn every_problem_of_a_table_is_reported() {
        assert_eq!(
            errors(
                "headers = { A = \"b\" }\nstartup_timeout_secs = 0\ncall_timeout_secs = 1e9",
                "Bad__name"
            ),
            [
                "`Bad__name` is not an MCP server name",
                "MCP server `Bad__name` has neither `command` nor `url`",
                "MCP server `Bad__name`: `headers` needs a `url`",
                "MCP server `Bad__name`: `startup_timeout_secs` must be a positive number of seconds",
                "MCP server `Bad__name`: `call_timeout_secs` must be a positive number of seconds",
            ]
        );
        assert_eq!(
            errors("command = []", "docs"),
            ["MCP server `docs` has an empty `command`"]
        );
        assert_eq!(
            errors("url = \"ftp://example.com\"", "docs"),
            ["MCP server `docs`: `url` is not an http(s) URL"]
        );
    }

    #[test]
    fn a_problem_points_at_its_string() {
        let text = "command = [\"a\"]\nurl = \"https://example.com/mcp\"";
        let table: McpServerTable<Spanned> = toml::from_str(text).expect("valid");
        let errors = table
            .server_config("docs", None)
            .expect_err("two transports");
        let places = errors[0].places();
        assert_eq!(places[0].key, Some("command"));
        let span = places[1].value.expect("the url").span();
        assert_eq!(&text[span], "\"https://example.com/mcp\"");
    }

    #[test]
    fn the_sampling_keys_bound_the_servers_sampling_and_the_rest_keep_their_defaults() {
        let text = "command = [\"s\"]\nsampling_requests_per_call = 2\n\
                    sampling_tokens_per_session = 100\n";
        let table: McpServerTable = toml::from_str(text).expect("valid");
        let config = table.server_config("docs", None).expect("a config");
        let expected = crate::SamplingLimits::default()
            .with_requests_per_call(2)
            .with_tokens_per_session(100);
        assert_eq!(config.sampling, expected);
        let plain: McpServerTable = toml::from_str("command = [\"s\"]\n").expect("valid");
        let config = plain.server_config("docs", None).expect("a config");
        assert_eq!(config.sampling, crate::SamplingLimits::default());
    }

    #[test]
    fn a_misspelled_key_is_refused_by_name() {
        assert_refused::<McpServerTable>("comand = [\"a\"]", "unknown field `comand`");
    }

    #[test]
    fn the_schema_has_the_keys_and_refuses_others() {
        let schema = table_schema::<McpServerTable>(&[
            "command",
            "cwd",
            "env",
            "url",
            "headers",
            "bearer_token_env",
            "tools",
            "required",
            "startup_timeout_secs",
            "call_timeout_secs",
            "permission",
            "ask",
            "allow",
            "env_keep",
            "sandbox",
            "network",
            "log_level",
            "sampling_requests_per_call",
            "sampling_requests_per_session",
            "sampling_tokens_per_call",
            "sampling_tokens_per_session",
        ]);
        assert_described(&schema, "call_timeout_secs", "Default: 60");
        assert_described(&schema, "sampling_requests_per_call", "Default: 8");
        assert_described(&schema, "log_level", "Default: `\"warning\"`");
        assert_described(&schema, "permission", "readOnlyHint");
        assert_described(&schema, "cwd", "Default: the session's working directory");
    }
}

//! What starts a server: its name, its transport, and the deployment's
//! rules for it.

use std::path::PathBuf;
use std::time::Duration;

use dsh_sandbox::Sandbox;
use dsh_tools::Permission;

/// The default of [`ServerConfig::startup_timeout`]: 10 s for the server
/// to start, answer `initialize` and list its tools.
pub const DEFAULT_STARTUP_TIMEOUT: Duration = Duration::from_secs(10);

/// The default of [`ServerConfig::call_timeout`]: 60 s for one call.
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(60);

/// One MCP server as a deployment (or an editor's session) configures it.
///
/// ```
/// use dsh_tool_mcp::ServerConfig;
///
/// let docs = ServerConfig::stdio("docs", ["python3", "docs_server.py"])
///     .with_env([("DOCS_ROOT", "/srv/docs")])
///     .with_allowed_tools(["search"]);
/// assert_eq!(docs.origin(), "python3 docs_server.py");
/// let web = ServerConfig::http("web", "https://example.com/mcp").required();
/// assert_eq!(web.origin(), "https://example.com/mcp");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ServerConfig {
    /// The server's name, the prefix of its tools' names (see
    /// [`is_server_name`](crate::is_server_name)).
    pub name: String,
    /// How to reach it.
    pub transport: Transport,
    /// The server's tools the model may see, by the server's names; all
    /// when `None`.
    pub allowed_tools: Option<Vec<String>>,
    /// Whether a session may not go on without it.
    pub required: bool,
    /// How long the server has to start, answer `initialize` and list its
    /// tools.
    pub startup_timeout: Duration,
    /// How long one call may take.
    pub call_timeout: Duration,
    /// Where the server is declared (`dsh.toml`, line 12), for the owner
    /// of its instructions; `None` for a server an editor sent.
    pub declared_at: Option<(String, u32)>,
    /// Which of its tools ask before each call ([`McpApproval::asks`]).
    pub approval: McpApproval,
    /// The directories the server may work in, as `roots/list` answers
    /// (a `file://` URI each); when empty, the server's working directory
    /// ([`roots`](Self::roots)).
    pub roots: Vec<PathBuf>,
    /// Who answers the server's sampling and elicitation requests for the
    /// person; no one when `None`, and dsh advertises neither.
    pub asker: Option<crate::SharedAsker>,
    /// The least severe of the server's log messages dsh shows (and asks
    /// it for, with `logging/setLevel`).
    pub log_level: crate::McpLogLevel,
    /// Where what the server says for the person goes (its stderr, its
    /// log messages, a question declined, what failed with it): the
    /// host's to show; discarded by default.
    pub output: crate::ServerOutput,
    /// Where the OAuth logins to servers are kept: an HTTP server with a
    /// login there sends its token, refreshed before it expires; `None`:
    /// no login is used.
    pub logins: Option<crate::Logins>,
    /// How much of the person's model its sampling may spend.
    pub sampling: crate::SamplingLimits,
}

/// Which tools of a server need a person's yes before each call.
///
/// A tool listed in `allow` never asks, one in `ask` always does; the
/// others follow `permission`, and left unset, a tool asks unless its
/// annotations say `readOnlyHint: true` — the MCP specification's own
/// defaults treat an unannotated tool as possibly destructive.
///
/// ```
/// use dsh_tool_mcp::McpApproval;
/// use dsh_tools::Permission;
///
/// let approval = McpApproval { allow: vec!["search".into()], ..McpApproval::default() };
/// assert!(!approval.asks("search", false));
/// assert!(approval.asks("write_file", false));
/// assert!(!approval.asks("read_file", true));
/// let trusted = McpApproval { permission: Some(Permission::Allow), ..McpApproval::default() };
/// assert!(!trusted.asks("write_file", false));
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct McpApproval {
    /// `permission`: every tool asks (`ask`) or none does (`allow`); by
    /// its annotations when `None`.
    pub permission: Option<Permission>,
    /// Tools, by the server's names, that always ask.
    pub ask: Vec<String>,
    /// Tools, by the server's names, that never ask.
    pub allow: Vec<String>,
}

impl McpApproval {
    /// Whether a call of the server's tool `tool` asks first; `read_only`
    /// is its `readOnlyHint` annotation.
    pub fn asks(&self, tool: &str, read_only: bool) -> bool {
        if self.allow.iter().any(|name| name == tool) {
            return false;
        }
        if self.ask.iter().any(|name| name == tool) {
            return true;
        }
        match self.permission {
            Some(permission) => permission.asks(),
            None => !read_only,
        }
    }
}

/// How a server is reached.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Transport {
    /// A process dsh starts, speaking MCP on its stdin and stdout.
    Stdio {
        /// The program, then its arguments.
        command: Vec<String>,
        /// Variables added to the process's environment.
        env: Vec<(String, String)>,
        /// The variables of dsh's environment the process inherits, by
        /// name: these alone, or every one when `None` (a host decides:
        /// dsh gives a server the small base the MCP SDKs give theirs).
        inherit_env: Option<Vec<String>>,
        /// The sandbox the process runs in; none when `None`.
        sandbox: Option<Sandbox>,
        /// Its working directory; dsh's when `None`.
        cwd: Option<PathBuf>,
    },
    /// A server at a URL, over MCP's streamable HTTP.
    Http {
        /// The endpoint.
        url: String,
        /// Headers sent with every request.
        headers: Vec<(String, String)>,
        /// A bearer token for the `Authorization` header.
        bearer_token: Option<String>,
    },
}

impl ServerConfig {
    fn new(name: impl Into<String>, transport: Transport) -> Self {
        Self {
            name: name.into(),
            transport,
            allowed_tools: None,
            required: false,
            startup_timeout: DEFAULT_STARTUP_TIMEOUT,
            call_timeout: DEFAULT_CALL_TIMEOUT,
            declared_at: None,
            approval: McpApproval::default(),
            roots: Vec::new(),
            asker: None,
            log_level: crate::McpLogLevel::default(),
            output: crate::ServerOutput::default(),
            logins: None,
            sampling: crate::SamplingLimits::default(),
        }
    }

    /// A server started as `command` (the program, then its arguments).
    pub fn stdio<I, S>(name: impl Into<String>, command: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Self::new(
            name,
            Transport::Stdio {
                command: command.into_iter().map(Into::into).collect(),
                env: Vec::new(),
                inherit_env: None,
                sandbox: None,
                cwd: None,
            },
        )
    }

    /// A server at `url`, over streamable HTTP.
    pub fn http(name: impl Into<String>, url: impl Into<String>) -> Self {
        Self::new(
            name,
            Transport::Http {
                url: url.into(),
                headers: Vec::new(),
                bearer_token: None,
            },
        )
    }

    /// Adds environment variables (stdio) or headers (HTTP).
    pub fn with_env<I, K, V>(mut self, pairs: I) -> Self
    where
        I: IntoIterator<Item = (K, V)>,
        K: Into<String>,
        V: Into<String>,
    {
        let pairs = pairs.into_iter().map(|(k, v)| (k.into(), v.into()));
        match &mut self.transport {
            Transport::Stdio { env, .. } => env.extend(pairs),
            Transport::Http { headers, .. } => headers.extend(pairs),
        }
        self
    }

    /// Starts a stdio server with only these variables of dsh's
    /// environment, besides its own (an HTTP server is no process of
    /// dsh's: nothing to pass).
    pub fn inheriting_only<I, S>(mut self, names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        if let Transport::Stdio { inherit_env, .. } = &mut self.transport {
            *inherit_env = Some(names.into_iter().map(Into::into).collect());
        }
        self
    }

    /// Starts a stdio server in `sandbox`, confined for its working
    /// directory (an HTTP server is no process of dsh's).
    pub fn sandboxed(mut self, policy: Sandbox) -> Self {
        if let Transport::Stdio { sandbox, .. } = &mut self.transport {
            *sandbox = Some(policy);
        }
        self
    }

    /// Sets which of its tools ask before each call.
    pub fn with_approval(mut self, approval: McpApproval) -> Self {
        self.approval = approval;
        self
    }

    /// Lets `asker` answer the server's sampling and elicitation
    /// requests (and advertises what it answers).
    pub fn with_asker(mut self, asker: crate::SharedAsker) -> Self {
        self.asker = Some(asker);
        self
    }

    /// Sets the working directory of a stdio server.
    pub fn with_cwd(mut self, dir: impl Into<PathBuf>) -> Self {
        if let Transport::Stdio { cwd, .. } = &mut self.transport {
            *cwd = Some(dir.into());
        }
        self
    }

    /// Sets the working directory of a stdio server that has none yet:
    /// the session's, for a server whose table does not say where it runs.
    pub fn with_default_cwd(mut self, dir: &std::path::Path) -> Self {
        if let Transport::Stdio {
            cwd: cwd @ None, ..
        } = &mut self.transport
        {
            *cwd = Some(dir.to_path_buf());
        }
        self
    }

    /// Sets the directories the server may work in (`roots/list`): a
    /// session's working directory, then the editor's additional
    /// directories.
    pub fn with_roots<I, P>(mut self, dirs: I) -> Self
    where
        I: IntoIterator<Item = P>,
        P: Into<PathBuf>,
    {
        self.roots = dirs.into_iter().map(Into::into).collect();
        self
    }

    /// The directories `roots/list` answers at the start: those set with
    /// [`with_roots`](Self::with_roots), else a stdio server's working
    /// directory, else dsh's (an HTTP server's too: it works for the
    /// session in dsh's directory).
    pub fn roots(&self) -> Vec<PathBuf> {
        if !self.roots.is_empty() {
            return self.roots.clone();
        }
        let cwd = match &self.transport {
            Transport::Stdio { cwd: Some(cwd), .. } => Some(cwd.clone()),
            _ => std::env::current_dir().ok(),
        };
        cwd.into_iter().collect()
    }

    /// Sets the bearer token of an HTTP server.
    pub fn with_bearer_token(mut self, token: impl Into<String>) -> Self {
        if let Transport::Http { bearer_token, .. } = &mut self.transport {
            *bearer_token = Some(token.into());
        }
        self
    }

    /// Uses the OAuth logins kept in `logins` (`dsh mcp login`).
    pub fn with_logins(mut self, logins: crate::Logins) -> Self {
        self.logins = Some(logins);
        self
    }

    /// Lets the model see only these of the server's tools.
    pub fn with_allowed_tools<I, S>(mut self, tools: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.allowed_tools = Some(tools.into_iter().map(Into::into).collect());
        self
    }

    /// Whether the model may see the server's tool `tool`: the
    /// allow-list names it, or there is none.
    pub fn allows(&self, tool: &str) -> bool {
        (self.allowed_tools.as_ref()).is_none_or(|allowed| allowed.iter().any(|name| name == tool))
    }

    /// Makes the server required: a session does not start without it.
    pub fn required(mut self) -> Self {
        self.required = true;
        self
    }

    /// Sets the startup timeout.
    pub fn with_startup_timeout(mut self, timeout: Duration) -> Self {
        self.startup_timeout = timeout;
        self
    }

    /// Sets the call timeout.
    pub fn with_call_timeout(mut self, timeout: Duration) -> Self {
        self.call_timeout = timeout;
        self
    }

    /// Sets the least severe log message of the server shown.
    pub fn with_log_level(mut self, level: crate::McpLogLevel) -> Self {
        self.log_level = level;
        self
    }

    /// Hands what the server says for the person to `output`.
    pub fn with_output(mut self, output: crate::ServerOutput) -> Self {
        self.output = output;
        self
    }

    /// Bounds the server's sampling by `limits`.
    pub fn with_sampling_limits(mut self, limits: crate::SamplingLimits) -> Self {
        self.sampling = limits;
        self
    }

    /// Records where the server is declared.
    pub fn declared_at(mut self, file: impl Into<String>, line: u32) -> Self {
        self.declared_at = Some((file.into(), line));
        self
    }

    /// What the server is, for its owner and for messages: its command
    /// line, or its URL.
    pub fn origin(&self) -> String {
        match &self.transport {
            Transport::Stdio { command, .. } => command.join(" "),
            Transport::Http { url, .. } => url.clone(),
        }
    }
}

//! What starts a server: its name, its transport, and the deployment's
//! rules for it.

use std::path::PathBuf;
use std::time::Duration;

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
        /// Variables of dsh's environment the process runs without (the
        /// model API's key: a server is not the model's client).
        env_remove: Vec<String>,
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
                env_remove: Vec::new(),
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

    /// Starts a stdio server without these variables of dsh's
    /// environment (an HTTP server is no process of dsh's: nothing to
    /// remove).
    pub fn without_env<I, S>(mut self, names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        if let Transport::Stdio { env_remove, .. } = &mut self.transport {
            env_remove.extend(names.into_iter().map(Into::into));
        }
        self
    }

    /// Sets the working directory of a stdio server.
    pub fn with_cwd(mut self, dir: impl Into<PathBuf>) -> Self {
        if let Transport::Stdio { cwd, .. } = &mut self.transport {
            *cwd = Some(dir.into());
        }
        self
    }

    /// Sets the bearer token of an HTTP server.
    pub fn with_bearer_token(mut self, token: impl Into<String>) -> Self {
        if let Transport::Http { bearer_token, .. } = &mut self.transport {
            *bearer_token = Some(token.into());
        }
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

//! Why a server did not start.

/// Why an MCP server did not start. Every message names the server and
/// its command or URL.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum McpError {
    /// The configuration cannot start anything (an empty command, a bad
    /// header).
    #[error("MCP server `{server}` ({origin}) is misconfigured: {message}")]
    Config {
        /// The server's name.
        server: String,
        /// Its command line or URL.
        origin: String,
        /// What is wrong.
        message: String,
    },
    /// The process could not be started.
    #[error("MCP server `{server}` could not be started as `{origin}`: {message}")]
    Spawn {
        /// The server's name.
        server: String,
        /// Its command line.
        origin: String,
        /// The system's reason.
        message: String,
    },
    /// It did not answer `initialize` and `tools/list` in time.
    #[error(
        "MCP server `{server}` ({origin}) did not start within {seconds} s; \
         raise its `startup_timeout_secs` if it is slow to start"
    )]
    StartupTimeout {
        /// The server's name.
        server: String,
        /// Its command line or URL.
        origin: String,
        /// The timeout.
        seconds: f64,
    },
    /// The handshake or the tool list failed (the server exited, answered
    /// wrongly, or could not be reached).
    #[error("MCP server `{server}` ({origin}) failed to start: {message}")]
    Handshake {
        /// The server's name.
        server: String,
        /// Its command line or URL.
        origin: String,
        /// What failed.
        message: String,
    },
    /// Its tool list is longer than dsh reads from one server
    /// ([`MAX_TOOLS`](crate::MAX_TOOLS) tools,
    /// [`MAX_TOOL_PAGES`](crate::MAX_TOOL_PAGES) pages).
    #[error("MCP server `{server}` ({origin}) failed to start: {message}")]
    ToolListTooLong {
        /// The server's name.
        server: String,
        /// Its command line or URL.
        origin: String,
        /// Which bound it passed.
        message: String,
    },
    /// It answered 401: it needs an OAuth login (`dsh mcp login`), or a
    /// new one.
    #[error("MCP server `{server}` ({origin}) needs a login: run `dsh mcp login {server}`{why}")]
    LoginNeeded {
        /// The server's name.
        server: String,
        /// Its URL.
        origin: String,
        /// Why, when more than a 401 is known (`; the login kept was
        /// refused`), with its leading `; `.
        why: String,
    },
}

impl McpError {
    /// The name of the server that failed.
    pub fn server(&self) -> &str {
        match self {
            Self::Config { server, .. }
            | Self::Spawn { server, .. }
            | Self::StartupTimeout { server, .. }
            | Self::Handshake { server, .. }
            | Self::ToolListTooLong { server, .. }
            | Self::LoginNeeded { server, .. } => server,
        }
    }
}

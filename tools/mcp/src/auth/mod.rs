//! OAuth for MCP servers over HTTP, on rmcp's `auth`: a login
//! ([`login`]: PKCE, discovery of the server's authorization server,
//! dynamic client registration, the code received on 127.0.0.1), kept per
//! server in a private file ([`Logins`]), used and refreshed before it
//! expires while a server runs (`authorized`), forgotten by
//! [`Logins::forget`]; and what a front end says of each server
//! ([`auth_status`], [`AuthStatus`]).
//!
//! A server that answers 401 to a client without a login fails to start
//! with [`McpError::LoginNeeded`](crate::McpError::LoginNeeded), whose
//! message says which command logs in; so does a call once the server
//! refuses the token and it cannot be refreshed.

mod browser;
mod login;
mod status;
mod store;

pub use browser::{NO_BROWSER_VAR, open_browser};
pub use login::{LOGIN_TIMEOUT, login};
pub use status::{AuthStatus, LoggedIn, auth_status};
pub use store::Logins;

use rmcp::transport::auth::{AuthError, AuthorizationManager, AuthorizationMetadataSource};

use crate::{ServerConfig, Transport};

/// The command that logs in to server `server`, as messages name it.
pub fn login_command(server: &str) -> String {
    format!("dsh mcp login {server}")
}

/// Why a login, a logout or a status could not be had.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LoginError {
    /// The server is not reached over HTTP: only a server with a `url`
    /// logs in.
    #[error(
        "MCP server `{server}` is started as a command, not reached at a `url`: it needs no login"
    )]
    NotHttp {
        /// The server's name.
        server: String,
    },
    /// The server publishes no OAuth metadata: it takes no login.
    #[error(
        "MCP server `{server}` ({url}) publishes no OAuth metadata (neither protected resource \
         nor authorization server metadata), so it takes no login; if it needs a token, give it \
         with `bearer_token_env` or `headers`"
    )]
    NoOAuth {
        /// The server's name.
        server: String,
        /// Its URL.
        url: String,
    },
    /// The file of the login could not be read or written.
    #[error("the login of MCP server `{server}` at {path}: {message}")]
    Store {
        /// The server's name.
        server: String,
        /// The file.
        path: String,
        /// What went wrong.
        message: String,
    },
    /// The callback on 127.0.0.1 could not listen or read.
    #[error("the login to MCP server `{server}` could not receive the browser's answer: {message}")]
    Callback {
        /// The server's name.
        server: String,
        /// What went wrong.
        message: String,
    },
    /// No answer came to the callback in time.
    #[error(
        "the login to MCP server `{server}` got no answer from the browser within {seconds} s; \
         run `dsh mcp login {server}` again and open the URL it prints"
    )]
    TimedOut {
        /// The server's name.
        server: String,
        /// How long it waited.
        seconds: u64,
    },
    /// The authorization server refused.
    #[error("the authorization server of MCP server `{server}` refused the login: {reason}")]
    Denied {
        /// The server's name.
        server: String,
        /// Its `error` and `error_description`.
        reason: String,
    },
    /// A step of OAuth failed (discovery, registration, the exchange).
    #[error("the login to MCP server `{server}` failed: {message}")]
    OAuth {
        /// The server's name.
        server: String,
        /// rmcp's error and its causes.
        message: String,
    },
    /// The tokens came, but were not kept.
    #[error("the login to MCP server `{server}` got tokens that were not kept")]
    NotKept {
        /// The server's name.
        server: String,
    },
}

impl LoginError {
    pub(crate) fn store(
        server: &str,
        path: &std::path::Path,
        error: impl std::fmt::Display,
    ) -> Self {
        Self::Store {
            server: server.to_owned(),
            path: path.display().to_string(),
            message: error.to_string(),
        }
    }

    pub(crate) fn callback(server: &str, error: std::io::Error) -> Self {
        Self::Callback {
            server: server.to_owned(),
            message: error.to_string(),
        }
    }

    pub(crate) fn oauth(server: &str, error: &AuthError) -> Self {
        Self::OAuth {
            server: server.to_owned(),
            message: dsh_http::chain(error),
        }
    }
}

/// The URL of an HTTP server; a stdio server's login is an error.
pub(crate) fn server_url(config: &ServerConfig) -> Result<&str, LoginError> {
    match &config.transport {
        Transport::Http { url, .. } => Ok(url),
        _ => Err(LoginError::NotHttp {
            server: config.name.clone(),
        }),
    }
}

/// rmcp's authorization manager for server `config` at `url`: its login
/// kept in `logins`, its authorization server's metadata discovered
/// (RFC 9728, then RFC 8414 / OpenID Connect). rmcp's own HTTP client
/// makes these requests: it refuses a metadata URL that resolves to a
/// loopback or private address unless the server's own URL is one.
pub(crate) async fn manager(
    config: &ServerConfig,
    url: &str,
    logins: &Logins,
) -> Result<AuthorizationManager, LoginError> {
    let server = config.name.as_str();
    // rmcp builds reqwest clients of its own, which need a provider.
    dsh_http::install_crypto_provider();
    let mut manager = AuthorizationManager::new(url)
        .await
        .map_err(|error| LoginError::oauth(server, &error))?;
    manager.set_credential_store(logins.of(server, url));
    let resolution =
        (manager.resolve_metadata().await).map_err(|error| LoginError::oauth(server, &error))?;
    if resolution.source == AuthorizationMetadataSource::LegacyEndpointFallback {
        return Err(LoginError::NoOAuth {
            server: server.to_owned(),
            url: url.to_owned(),
        });
    }
    manager.set_metadata(resolution.metadata);
    Ok(manager)
}

/// The authorization manager a running server's requests go through,
/// when a login to it is kept in `logins`: its token is sent with each
/// request and refreshed shortly before it expires (and once when the
/// server refuses it). `None` without a login.
pub(crate) async fn authorized(
    config: &ServerConfig,
    url: &str,
    logins: &Logins,
) -> Result<Option<AuthorizationManager>, LoginError> {
    if logins.saved(&config.name, url)?.is_none() {
        return Ok(None);
    }
    let mut manager = manager(config, url, logins).await?;
    // `false`: the login was the authorization server's before it changed
    // (rmcp dropped it); the server's 401 will say to log in again.
    let kept = (manager.initialize_from_store().await)
        .map_err(|error| LoginError::oauth(&config.name, &error))?;
    Ok(kept.then_some(manager))
}

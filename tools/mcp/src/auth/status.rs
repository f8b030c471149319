//! What `dsh mcp list` says of a server: how it authenticates, and
//! whether a login is needed.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::{LoginError, Logins, login_command};
use crate::{ServerConfig, Transport};

/// How long the probe of a server without a login waits for its answer.
const PROBE_TIMEOUT: Duration = Duration::from_secs(10);

/// A login kept for a server.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct LoggedIn {
    /// The authorization server that gave the tokens.
    pub issuer: Option<String>,
    /// The seconds the access token has left, when the server said how
    /// long it lives.
    pub expires_in: Option<u64>,
    /// Whether a refresh token was given: the access token is renewed
    /// shortly before it expires, without a new login.
    pub refreshes: bool,
}

/// How a server authenticates.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum AuthStatus {
    /// A process dsh starts: no login.
    Process,
    /// A bearer token from the environment (`bearer_token_env`).
    BearerToken,
    /// An `Authorization` header of the table's `headers`.
    Header,
    /// An OAuth login is kept.
    LoggedIn(LoggedIn),
    /// It answers 401 to a request without a login: `dsh mcp login`.
    LoginNeeded,
    /// It answers a request without a login.
    Open,
    /// It could not be asked.
    Unreachable(String),
}

impl AuthStatus {
    /// Whether a login is needed before the server can be used.
    pub fn login_needed(&self) -> bool {
        matches!(self, Self::LoginNeeded)
    }

    /// The status in a few words, for server `server`
    /// (`OAuth: login needed: run \`dsh mcp login docs\``).
    pub fn describe(&self, server: &str) -> String {
        match self {
            Self::Process => "a process: no login".to_owned(),
            Self::BearerToken => "a bearer token from `bearer_token_env`".to_owned(),
            Self::Header => "an `Authorization` header from `headers`".to_owned(),
            Self::LoggedIn(login) => {
                let mut words = "OAuth: logged in".to_owned();
                if let Some(issuer) = &login.issuer {
                    words.push_str(&format!(" at {issuer}"));
                }
                match login.expires_in {
                    Some(0) => words.push_str(", access token expired"),
                    Some(seconds) => {
                        words.push_str(&format!(", access token good for {seconds} s"))
                    }
                    None => {}
                }
                if login.refreshes {
                    words.push_str(", refreshed before it expires");
                }
                words
            }
            Self::LoginNeeded => format!("OAuth: login needed: run `{}`", login_command(server)),
            Self::Open => "no login: it answers without one".to_owned(),
            Self::Unreachable(why) => format!("not reached: {why}"),
        }
    }
}

/// The login kept for server `config`, if one is.
pub(crate) fn logged_in(
    config: &ServerConfig,
    logins: &Logins,
) -> Result<Option<LoggedIn>, LoginError> {
    let url = super::server_url(config)?;
    let Some(saved) = logins.saved(&config.name, url)? else {
        return Ok(None);
    };
    // The token's fields as the token endpoint sent them (rmcp keeps
    // oauth2's type, whose accessors are a trait of that crate).
    let token = saved
        .token_response
        .as_ref()
        .and_then(|token| serde_json::to_value(token).ok())
        .unwrap_or_default();
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |now| now.as_secs());
    let expires_in = token["expires_in"].as_u64().map(|lives| {
        let received = saved.token_received_at.unwrap_or(now);
        (received + lives).saturating_sub(now)
    });
    Ok(Some(LoggedIn {
        issuer: saved.issuer.clone(),
        expires_in,
        refreshes: token["refresh_token"].is_string(),
    }))
}

/// How server `config` authenticates: a process; a token or header it is
/// configured with; a login kept in `logins`; else what it answers to an
/// `initialize` sent without one, by `http` (401: a login is needed).
pub async fn auth_status(
    config: &ServerConfig,
    logins: &Logins,
    http: &reqwest::Client,
) -> Result<AuthStatus, LoginError> {
    let Transport::Http {
        url,
        headers,
        bearer_token,
    } = &config.transport
    else {
        return Ok(AuthStatus::Process);
    };
    if bearer_token.is_some() {
        return Ok(AuthStatus::BearerToken);
    }
    if headers
        .iter()
        .any(|(name, _)| name.eq_ignore_ascii_case("authorization"))
    {
        return Ok(AuthStatus::Header);
    }
    if let Some(login) = logged_in(config, logins)? {
        return Ok(AuthStatus::LoggedIn(login));
    }
    Ok(probe(url, headers, http).await)
}

/// What a server answers to an `initialize` without a login.
async fn probe(url: &str, headers: &[(String, String)], http: &reqwest::Client) -> AuthStatus {
    let initialize = serde_json::json!({
        "jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {
            "protocolVersion": rmcp::model::ProtocolVersion::LATEST_WITH_INITIALIZE,
            "capabilities": {},
            "clientInfo": {"name": "dsh", "version": env!("CARGO_PKG_VERSION")}
        }
    });
    let mut request = http
        .post(url)
        .timeout(PROBE_TIMEOUT)
        .header("accept", "application/json, text/event-stream")
        .json(&initialize);
    for (name, value) in headers {
        request = request.header(name, value);
    }
    match request.send().await {
        Ok(answer) if answer.status() == reqwest::StatusCode::UNAUTHORIZED => {
            AuthStatus::LoginNeeded
        }
        Ok(_) => AuthStatus::Open,
        Err(error) => AuthStatus::Unreachable(dsh_http::chain(&error)),
    }
}

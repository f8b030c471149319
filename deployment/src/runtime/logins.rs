//! `dsh mcp login`, `logout` and `list` as data: the deployment's servers
//! found by name, their OAuth logins kept in dsh's state directory
//! (`$XDG_STATE_HOME/dsh/logins/mcp`, one private file a server), and how
//! each authenticates. The flow itself is `dsh_tool_mcp::auth`'s.

use dsh_tool_mcp::auth::{self, AuthStatus, LoggedIn};
use dsh_tool_mcp::{Logins, ServerConfig};

use crate::file::Deployment;
use crate::file::mcp::{McpSpec, logins};
use crate::problem::Problem;

/// One server, as `dsh mcp list` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ServerAuth {
    /// Its name, as `[mcp.<name>]` gives it.
    pub name: String,
    /// Its command line or URL.
    pub origin: String,
    /// How it authenticates, or why that could not be told.
    pub status: Result<AuthStatus, String>,
}

impl ServerAuth {
    /// The line `dsh mcp list` prints: `docs (https://…/mcp): OAuth: …`.
    pub fn line(&self) -> String {
        let status = match &self.status {
            Ok(status) => status.describe(&self.name),
            Err(why) => why.clone(),
        };
        format!("{} ({}): {status}", self.name, self.origin)
    }
}

/// How each server of `deployment` authenticates, in its order; a server
/// with a URL and nothing configured is asked (an `initialize` without a
/// login: 401 means one is needed).
pub fn server_auths(deployment: &Deployment) -> Result<Vec<ServerAuth>, Vec<Problem>> {
    let logins = state_logins()?;
    let http = dsh_tool_mcp::http_client().map_err(|error| {
        vec![Problem::new(format!(
            "cannot build the HTTP client: {}",
            dsh_http::chain(&error)
        ))]
    })?;
    let tokio = super::async_runtime()?;
    let auths = deployment.mcp.iter().map(|spec| {
        let config = &spec.config;
        let status = if spec.bearer_token_env.is_some() {
            Ok(AuthStatus::BearerToken)
        } else {
            tokio
                .block_on(auth::auth_status(config, &logins, &http))
                .map_err(|error| error.to_string())
        };
        ServerAuth {
            name: config.name.clone(),
            origin: config.origin(),
            status,
        }
    });
    Ok(auths.collect())
}

/// Logs in to server `name` of `deployment` (`dsh_tool_mcp::auth::login`),
/// handing the authorization URL to `show`; the login kept.
pub fn login(
    deployment: &Deployment,
    name: &str,
    show: impl FnOnce(&str),
) -> Result<LoggedIn, Vec<Problem>> {
    let config = server(deployment, name)?;
    let logins = state_logins()?;
    let tokio = super::async_runtime()?;
    tokio
        .block_on(auth::login(&config, &logins, show))
        .map_err(|error| vec![Problem::new(error.to_string())])
}

/// Forgets the login to server `name` of `deployment`; whether one was
/// kept.
pub fn logout(deployment: &Deployment, name: &str) -> Result<bool, Vec<Problem>> {
    let config = server(deployment, name)?;
    let logins = state_logins()?;
    (logins.forget(&config.name)).map_err(|error| vec![Problem::new(error.to_string())])
}

/// Server `name`'s configuration; an unknown name is a problem naming
/// the closest.
fn server(deployment: &Deployment, name: &str) -> Result<ServerConfig, Vec<Problem>> {
    let spec: Option<&McpSpec> = (deployment.mcp.iter()).find(|spec| spec.config.name == name);
    if let Some(spec) = spec {
        return Ok(spec.config.clone());
    }
    let names: Vec<&str> = (deployment.mcp.iter())
        .map(|spec| spec.config.name.as_str())
        .collect();
    let problem = Problem::new(format!(
        "{} has no MCP server `{name}`",
        deployment.file.name()
    ));
    let help = match dsh_system_prompt::suggestion::closest(name, &names) {
        Some(closest) => format!("did you mean `{closest}`? `dsh mcp list` lists the servers"),
        None if names.is_empty() => "its file has no `[mcp.<name>]` table".to_owned(),
        None => format!("its servers: `{}`", names.join("`, `")),
    };
    Err(vec![problem.help(help)])
}

fn state_logins() -> Result<Logins, Vec<Problem>> {
    logins().ok_or_else(|| {
        vec![
            Problem::new("no place to keep MCP logins: neither `XDG_STATE_HOME` nor `HOME` is set")
                .help("set `XDG_STATE_HOME` to an absolute directory"),
        ]
    })
}

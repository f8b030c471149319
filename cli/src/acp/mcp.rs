//! MCP under ACP: the deployment's servers, started once when `dsh acp`
//! starts, and the servers an editor sends in the `mcpServers` of
//! `session/new`, `session/load` or `session/resume`, started for that
//! session alone, all at once.
//!
//! A client's server name is made a server name
//! ([`sanitize_server_name`]: lower case, other characters `_`, a suffix
//! on collision with the deployment's or the session's other servers);
//! every tool of every client server is offered to the session's agent.
//! Their roots (`roots/list`) are the session's working directory, then
//! its `additionalDirectories`. A server that fails is said once, as a
//! message in the session; a
//! deployment server that is `required` and failed makes every
//! `session/new`, `session/load` and `session/resume` fail, naming it.

use std::path::{Path, PathBuf};

use agent_client_protocol::v1::schema::{self, McpServer as ClientServer};
use agent_client_protocol::{Error, ErrorCode};
use dsh_deployment::runtime::ServerPolicy;
use dsh_tool_mcp::{McpServers, ServerConfig, sanitize_server_name};

/// The MCP side of `dsh acp`: the servers of the process and what the
/// deployment's start came to.
#[derive(Debug)]
pub(crate) struct AcpMcp {
    pub(crate) servers: McpServers,
    /// The failures of the deployment's optional servers, said in each new
    /// session.
    pub(crate) optional_failures: Vec<String>,
    /// The failures of its required servers: no session starts.
    pub(crate) required_failures: Vec<String>,
    /// What a client's stdio server may see and change, by the host's
    /// policy.
    pub(crate) editor_servers: ServerPolicy,
}

impl AcpMcp {
    /// The JSON-RPC error of `session/new` while a required server is
    /// down.
    pub(crate) fn required_error(&self) -> Option<Error> {
        if self.required_failures.is_empty() {
            return None;
        }
        Some(
            Error::new(
                ErrorCode::INTERNAL_ERROR,
                format!(
                    "a required MCP server is not running: {}",
                    self.required_failures.join("; ")
                ),
            )
            .data(serde_json::json!({ "mcpServers": self.required_failures })),
        )
    }

    /// Starts the client's `servers` for session `session` (working in
    /// `cwd`, with the editor's additional directories `more`: together
    /// the roots the servers are given), at once; returns the failures,
    /// one message each.
    pub(crate) async fn start_session_servers(
        &self,
        session: &str,
        (cwd, more): (&Path, &[PathBuf]),
        servers: Vec<ClientServer>,
    ) -> Vec<String> {
        let roots: Vec<PathBuf> = std::iter::once(cwd.to_owned())
            .chain(more.iter().cloned())
            .collect();
        let mut taken: Vec<String> = self
            .servers
            .deployment_servers()
            .iter()
            .map(|server| server.name().to_owned())
            .collect();
        let mut failures = Vec::new();
        let mut configs = Vec::new();
        for server in servers {
            let config = client_config(server, cwd, &taken)
                .map(|config| self.editor_servers.apply(config.with_roots(roots.clone())));
            match config {
                Ok(config) => {
                    taken.push(config.name.clone());
                    configs.push(config);
                }
                Err(message) => failures.push(message),
            }
        }
        if configs.is_empty() {
            return failures;
        }
        let http = match dsh_tool_mcp::http_client() {
            Ok(http) => http,
            Err(error) => {
                failures.push(format!(
                    "the HTTP client for MCP servers cannot be built: {error}"
                ));
                return failures;
            }
        };
        for outcome in McpServers::start_all(&configs, &http).await {
            match outcome {
                Ok(server) => {
                    self.servers.add_to_session(session, server);
                }
                Err(error) => failures.push(error.to_string()),
            }
        }
        failures
    }
}

/// A client's server as dsh starts it: its name sanitized, a stdio
/// server in the session's directory.
fn client_config(
    server: ClientServer,
    cwd: &Path,
    taken: &[String],
) -> Result<ServerConfig, String> {
    match server {
        ClientServer::Stdio(stdio) => {
            let name = sanitize_server_name(&stdio.name, taken);
            let mut command = vec![stdio.command.display().to_string()];
            command.extend(stdio.args);
            Ok(ServerConfig::stdio(name, command)
                .with_env(stdio.env.into_iter().map(|var| (var.name, var.value)))
                .with_cwd(cwd))
        }
        ClientServer::Http(http) => {
            let name = sanitize_server_name(&http.name, taken);
            Ok(ServerConfig::http(name, http.url).with_env(
                http.headers
                    .into_iter()
                    .map(|header| (header.name, header.value)),
            ))
        }
        ClientServer::Sse(sse) => Err(format!(
            "MCP server `{}` ({}) was not started: dsh speaks streamable HTTP, not the \
             older SSE transport (it advertises `mcpCapabilities.sse = false`)",
            sse.name, sse.url
        )),
        _ => Err("an MCP server of a transport dsh does not know was not started".to_owned()),
    }
}

/// The message a session shows for the servers that failed.
pub(crate) fn failure_message(failures: &[String]) -> String {
    let mut message = String::from("dsh: this session goes on without these MCP servers:\n");
    for failure in failures {
        message.push_str("- ");
        message.push_str(failure);
        message.push('\n');
    }
    message
}

/// The update that says `failures` in the session.
pub(crate) fn failure_update(failures: &[String]) -> schema::SessionUpdate {
    schema::SessionUpdate::AgentMessageChunk(schema::ContentChunk::new(schema::ContentBlock::from(
        failure_message(failures),
    )))
}

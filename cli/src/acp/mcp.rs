//! MCP under ACP: what the deployment's servers' start came to (a
//! required server down refuses every `session/new`, `session/load` and
//! `session/resume`, naming it; an optional one is said in each session),
//! and the servers an editor sends in the `mcpServers` of a session as
//! the host starts them ([`HostedSession::start_servers`], which names
//! them, gives them their roots and their policy).
//!
//! [`HostedSession::start_servers`]: dsh_deployment::session::HostedSession::start_servers

use agent_client_protocol::v1::schema::{self, McpServer as ClientServer};
use agent_client_protocol::{Error, ErrorCode};
use dsh_tool_mcp::ServerConfig;

/// What the deployment's servers' start came to.
#[derive(Debug)]
pub(crate) struct AcpMcp {
    /// The failures of the deployment's optional servers, said in each new
    /// session.
    pub(crate) optional_failures: Vec<String>,
    /// The failures of its required servers: no session starts.
    pub(crate) required_failures: Vec<String>,
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
}

/// The editor's servers as the host starts them, or why one cannot start.
pub(crate) fn client_configs(servers: Vec<ClientServer>) -> Vec<Result<ServerConfig, String>> {
    servers.into_iter().map(client_config).collect()
}

/// A client's server as it sent it.
fn client_config(server: ClientServer) -> Result<ServerConfig, String> {
    match server {
        ClientServer::Stdio(stdio) => {
            let mut command = vec![stdio.command.display().to_string()];
            command.extend(stdio.args);
            Ok(ServerConfig::stdio(stdio.name, command)
                .with_env(stdio.env.into_iter().map(|var| (var.name, var.value))))
        }
        ClientServer::Http(http) => Ok(ServerConfig::http(http.name, http.url).with_env(
            http.headers
                .into_iter()
                .map(|header| (header.name, header.value)),
        )),
        ClientServer::Sse(sse) => Err(format!(
            "MCP server `{}` ({}) was not started: dsh speaks streamable HTTP, not the \
             older SSE transport (it advertises `mcpCapabilities.sse = false`)",
            sse.name, sse.url
        )),
        _ => Err("an MCP server of a transport dsh does not know was not started".to_owned()),
    }
}

/// The update that says `failures` in the session.
pub(crate) fn failure_update(failures: &[String]) -> schema::SessionUpdate {
    schema::SessionUpdate::AgentMessageChunk(schema::ContentChunk::new(schema::ContentBlock::from(
        dsh_deployment::session::failure_message(failures),
    )))
}

//! The MCP servers a front end brings for one session (an editor's
//! `mcpServers`), started for that session alone, all at once.
//!
//! A server's name is made a server name ([`sanitize_server_name`]:
//! lower case, other characters `_`, a suffix on collision with the
//! deployment's or the session's other servers); a stdio server runs in
//! the session's working directory under the host's policy for an
//! editor's server (`ServerRules::default()`), its sandbox writable in
//! the session's directories; every server's roots are the session's
//! directories.

use dsh_tool_mcp::{McpServers, ServerConfig, sanitize_server_name};

use super::hosted::HostedSession;
use crate::file::mcp::ServerRules;

impl HostedSession {
    /// Starts `servers` for this session — each a server's configuration
    /// as its front end sent it, or why it cannot start — and returns the
    /// failures, one message each.
    pub async fn start_servers(&self, servers: Vec<Result<ServerConfig, String>>) -> Vec<String> {
        let mcp = &self.host().runtime.mcp;
        let mut policy = self.host().runtime.server_policy(&ServerRules::default());
        let dirs = self.dirs();
        // The session's writable set: its working directory (the server's
        // own) and its other directories.
        let others = dirs.iter().filter(|dir| Some(dir.as_path()) != self.cwd());
        policy.sandbox = policy.sandbox.with_writable(others.cloned());
        let mut taken: Vec<String> = (mcp.deployment_servers().iter())
            .map(|server| server.name().to_owned())
            .collect();
        let (mut configs, mut failures) = (Vec::new(), Vec::new());
        for server in servers {
            match server {
                Ok(mut config) => {
                    config.name = sanitize_server_name(&config.name, &taken);
                    taken.push(config.name.clone());
                    if let Some(cwd) = self.cwd() {
                        config = config.with_cwd(cwd);
                    }
                    configs.push(policy.apply(config.with_roots(dirs.clone())));
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
                    mcp.add_to_session(self.id().as_str(), server);
                }
                Err(error) => failures.push(error.to_string()),
            }
        }
        failures
    }
}

/// The message a session shows for the servers that failed.
pub fn failure_message(failures: &[String]) -> String {
    let mut message = String::from("dsh: this session goes on without these MCP servers:\n");
    for failure in failures {
        message.push_str("- ");
        message.push_str(failure);
        message.push('\n');
    }
    message
}

//! The tools of an assembly by MCP server, with each server's schema
//! bytes and tokens — the schemas of MCP servers are what makes real
//! prompts large. `dsh prompt --format explain` shows them as a table
//! ([`Explanation::servers`](crate::reports::explain::Explanation::servers)),
//! and its dump as `mcp_servers`
//! ([`write_dump`](crate::reports::diff::write_dump)).

use dsh_system_prompt::PromptAssembly;
use dsh_tool_mcp::McpServers;

use crate::measure::canonical_request;
use crate::measure::tokens::PromptTokens;

/// One MCP server's share of the tools an assembly sends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerShare {
    /// The server's name, as `[mcp.<name>]` gives it.
    pub name: String,
    /// Its command line or URL.
    pub origin: String,
    /// Its tools sent, by the name the model calls them, in the order
    /// they are sent.
    pub tools: Vec<String>,
    /// The bytes of those tools' canonical JSON, as a request carries it.
    pub schema_bytes: usize,
    /// Their tokens, as `tokens` counted them.
    pub schema_tokens: usize,
}

/// The tools of `assembly` by the server of `servers` that brings each,
/// the servers in the order their first tool is sent; `tokens` is the
/// assembly's count. The tools of no server are left out.
pub fn server_shares(
    servers: &McpServers,
    assembly: &PromptAssembly,
    tokens: &PromptTokens,
) -> Vec<ServerShare> {
    let mut shares: Vec<ServerShare> = Vec::new();
    for (tool, schema_tokens) in assembly.tools.iter().zip(&tokens.tools) {
        let Some(server) = servers.server_of_tool(None, &tool.name) else {
            continue;
        };
        let at = match shares.iter().position(|share| share.name == server.name()) {
            Some(at) => at,
            None => {
                shares.push(ServerShare {
                    name: server.name().to_owned(),
                    origin: server.config().origin(),
                    tools: Vec::new(),
                    schema_bytes: 0,
                    schema_tokens: 0,
                });
                shares.len() - 1
            }
        };
        let share = &mut shares[at];
        share.tools.push(tool.name.clone());
        share.schema_bytes += canonical_request::tool_json(tool).len();
        share.schema_tokens += schema_tokens;
    }
    shares
}

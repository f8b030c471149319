//! What the MCP test binaries share.

use dsh_tool_mcp::McpServer;

/// The names of the tools `server` offers, as the model sees them.
pub(crate) fn tool_names(server: &McpServer) -> Vec<String> {
    server
        .tool_schemas()
        .iter()
        .map(|schema| schema.name.clone())
        .collect()
}

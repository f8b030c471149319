//! The tools of an explanation: each schema sent beside the prompt, in
//! bytes and tokens, and what an MCP server's tools became on the way to
//! the model (a name fixed, a tool not sent).

use std::fmt;

use dsh_system_prompt::PromptAssembly;
use dsh_tool_mcp::{LeftOut, McpServers, NameFix};

use crate::measure::canonical_request;
use crate::measure::tokens::{PromptTokens, Size};

/// One tool schema sent beside the system prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolRow {
    /// The name the model calls it by.
    pub name: String,
    /// The bytes of its description.
    pub description_bytes: usize,
    /// The bytes of the JSON of its parameters' schema.
    pub parameters_bytes: usize,
    /// Its canonical JSON, as a request carries it: bytes and tokens.
    pub schema: Size,
}

/// What an MCP server's tool became on the way to the model, when it is
/// not simply sent as `<server>__<tool>`. `Display`: the sentence that
/// says it (`` `dotted.name` of `docs` is sent as `docs__dotted_name`:
/// … ``), so a note a later version adds is never left unsaid.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ServerNote {
    /// Sent under another name than `<server>__<tool>`.
    Renamed {
        /// The server.
        server: String,
        /// The tool's name on the server.
        tool: String,
        /// The name the model calls it by.
        exposed: String,
        /// The rule that made that name.
        fix: NameFix,
    },
    /// Not sent, for a reason other than the deployment's allow-list
    /// (whose choices are the deployment's own, not worth saying).
    NotSent {
        /// The server.
        server: String,
        /// The tool's name on the server.
        tool: String,
        /// Why.
        why: LeftOut,
    },
}

impl fmt::Display for ServerNote {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Renamed {
                server,
                tool,
                exposed,
                fix,
            } => write!(f, "`{tool}` of `{server}` is sent as `{exposed}`: {fix}"),
            Self::NotSent { server, tool, why } => {
                write!(f, "`{tool}` of `{server}` is not sent: {why}")
            }
        }
    }
}

/// The tool schemas of `assembly`, counted as `tokens`.
pub(super) fn tool_rows(assembly: &PromptAssembly, tokens: &PromptTokens) -> Vec<ToolRow> {
    (assembly.tools.iter().zip(&tokens.tools))
        .map(|(tool, schema_tokens)| ToolRow {
            name: tool.name.clone(),
            description_bytes: tool.description.len(),
            parameters_bytes: serde_json::to_string(&tool.parameters).map_or(0, |json| json.len()),
            schema: Size {
                bytes: canonical_request::tool_json(tool).len(),
                tokens: *schema_tokens,
            },
        })
        .collect()
}

/// The notes of each of the deployment's servers, server by server: its
/// renamed tools, then its tools not sent.
pub(super) fn server_notes(servers: &McpServers) -> Vec<ServerNote> {
    let mut notes = Vec::new();
    for server in servers.deployment_servers() {
        let name = server.name();
        notes.extend(server.exposed_names().into_iter().filter_map(|exposed| {
            Some(ServerNote::Renamed {
                server: name.to_owned(),
                fix: exposed.fix?,
                tool: exposed.tool,
                exposed: exposed.exposed,
            })
        }));
        notes.extend(
            (server.left_out().into_iter())
                .filter(|(_, why)| *why != LeftOut::NotAllowed)
                .map(|(tool, why)| ServerNote::NotSent {
                    server: name.to_owned(),
                    tool,
                    why,
                }),
        );
    }
    notes
}

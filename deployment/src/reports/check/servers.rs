//! What `dsh check` says of each MCP server of a deployment: whether it
//! started, what it brings to a request (tools, their schemas' bytes and
//! tokens, instructions), what else it has (resources, prompts), and what
//! the model does not see of it, and why.

use dsh_agent_loop::Tokenizer;
use dsh_tool_mcp::{MAX_INSTRUCTIONS, McpServer};
use serde::Serialize;

use crate::file::Deployment;
use crate::measure::canonical_request;

/// One server, as `dsh check` reports it (`--format json` prints these).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ServerReport {
    /// Its name, as `[mcp.<name>]` gives it.
    pub name: String,
    /// Its command line or URL.
    pub origin: String,
    /// Whether it started.
    pub started: bool,
    /// Why it did not start; `None` when it did.
    pub failure: Option<String>,
    /// How many tools the model sees of it (the resource reader
    /// included).
    pub tools: usize,
    /// The bytes of those tools' schemas, as a request carries them.
    pub schema_bytes: usize,
    /// Their tokens, with [`tokenizer`](Self::tokenizer).
    pub schema_tokens: usize,
    /// The encoding the tokens were counted with: the first agent's that
    /// lists the server (else the first agent's).
    pub tokenizer: String,
    /// The bytes of instructions it sent; `None` when it sent none.
    pub instructions_bytes: Option<usize>,
    /// Whether those were cut at [`MAX_INSTRUCTIONS`] bytes.
    pub instructions_cut: bool,
    /// How many resources it lists; `None` without the resources
    /// capability.
    pub resources: Option<usize>,
    /// How many resource templates it lists (`recipe://{name}`), shown
    /// to the model in the reader's description; `None` without the
    /// resources capability.
    pub resource_templates: Option<usize>,
    /// The tool that reads them, as the model sees it.
    pub resource_reader: Option<String>,
    /// Its prompts, by name; `None` without the prompts capability.
    pub prompts: Option<Vec<String>>,
    /// The tools it lists that the model does not see.
    pub left_out: Vec<ToolLeftOut>,
    /// The MCP version the connection speaks (`2026-07-28`,
    /// `2025-11-25`); `None` when it did not start.
    pub protocol: Option<String>,
}

/// A tool of a server the model does not see.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ToolLeftOut {
    /// The server's name of the tool.
    pub tool: String,
    /// Why.
    pub reason: String,
}

impl ServerReport {
    /// The report of a server that did not start.
    pub(crate) fn failed(
        name: &str,
        origin: String,
        failure: String,
        tokenizer: Tokenizer,
    ) -> Self {
        Self {
            name: name.to_owned(),
            origin,
            started: false,
            failure: Some(failure),
            tools: 0,
            schema_bytes: 0,
            schema_tokens: 0,
            tokenizer: tokenizer.encoding().to_string(),
            instructions_bytes: None,
            instructions_cut: false,
            resources: None,
            resource_templates: None,
            resource_reader: None,
            prompts: None,
            left_out: Vec::new(),
            protocol: None,
        }
    }

    /// The report of a running server, its schemas counted with
    /// `tokenizer`.
    pub(crate) fn started(server: &McpServer, tokenizer: Tokenizer) -> Self {
        let schemas = server.tool_schemas();
        let json: Vec<String> = schemas
            .iter()
            .map(|schema| canonical_request::tool_json(schema))
            .collect();
        let instructions_bytes = server.instructions_sent_bytes();
        Self {
            name: server.name().to_owned(),
            origin: server.config().origin(),
            started: true,
            failure: None,
            tools: schemas.len(),
            schema_bytes: json.iter().map(String::len).sum(),
            schema_tokens: json.iter().map(|json| tokenizer.count(json)).sum(),
            tokenizer: tokenizer.encoding().to_string(),
            instructions_bytes,
            instructions_cut: instructions_bytes.is_some_and(|bytes| bytes > MAX_INSTRUCTIONS),
            resources: server.resources().map(|resources| resources.len()),
            resource_templates: (server.resources()).map(|_| server.resource_templates().len()),
            resource_reader: server.resource_reader(),
            prompts: server.prompt_names(),
            left_out: (server.left_out().into_iter())
                .map(|(tool, why)| ToolLeftOut {
                    tool,
                    reason: why.to_string(),
                })
                .collect(),
            protocol: server.protocol_version(),
        }
    }

    /// The report in one line, as `dsh check` prints it:
    /// `mcp docs (cmd): 5 tools, 2310 bytes of schemas (612 tokens, o200k_base); …`.
    pub fn line(&self) -> String {
        let head = format!("mcp {} ({})", self.name, self.origin);
        if let Some(failure) = &self.failure {
            return format!("{head}: not started: {failure}");
        }
        let mut parts = vec![format!(
            "{} {}, {} bytes of schemas ({} tokens, {})",
            self.tools,
            if self.tools == 1 { "tool" } else { "tools" },
            self.schema_bytes,
            self.schema_tokens,
            self.tokenizer
        )];
        parts.push(match self.instructions_bytes {
            None => "no instructions".to_owned(),
            Some(bytes) if self.instructions_cut => {
                format!("instructions {bytes} bytes, cut to {MAX_INSTRUCTIONS}")
            }
            Some(bytes) => format!("instructions {bytes} bytes"),
        });
        let templates = match self.resource_templates {
            Some(1) => " and 1 resource template".to_owned(),
            Some(count @ 2..) => format!(" and {count} resource templates"),
            _ => String::new(),
        };
        if let (Some(count), Some(reader)) = (self.resources, &self.resource_reader) {
            parts.push(format!(
                "{count} resources{templates} (read with `{reader}`)"
            ));
        } else if let Some(count) = self.resources {
            parts.push(format!("{count} resources{templates}"));
        }
        if let Some(prompts) = &self.prompts {
            let names: Vec<String> = prompts.iter().map(|name| format!("`{name}`")).collect();
            parts.push(
                format!("{} prompts {}", prompts.len(), names.join(", "))
                    .trim_end()
                    .to_owned(),
            );
        }
        for left_out in &self.left_out {
            parts.push(format!("left out `{}`: {}", left_out.tool, left_out.reason));
        }
        format!("{head}: {}", parts.join("; "))
    }
}

/// The tokenizer a server's schemas are counted with: that of the first
/// agent that lists `mcp:<server>`, else of the first agent.
pub(crate) fn tokenizer_for_server(deployment: &Deployment, server: &str) -> Tokenizer {
    let entry = dsh_tool_mcp::selection_entry(server);
    let agent = (deployment.agents.iter())
        .find(|agent| agent.tools.iter().any(|tool| *tool.get_ref() == entry))
        .or_else(|| deployment.agents.first());
    agent.map_or_else(
        || Tokenizer::for_model(""),
        |agent| deployment.tokenizer_for(agent),
    )
}

/// The warning for server `server` (its table at `span`), whose tools
/// came in order `first` at its start and `again` when listed once more:
/// `None` when the tools both lists have are in the same order. A
/// server whose order changes breaks the provider's prompt cache at the
/// first tool that moved, for every session that starts after it
/// changed.
pub(crate) fn tool_order_warning(
    deployment: &Deployment,
    (server, span): (&str, std::ops::Range<usize>),
    first: &[String],
    again: &[String],
) -> Option<crate::problem::Problem> {
    let in_both = |list: &[String], other: &[String]| -> Vec<String> {
        (list.iter())
            .filter(|name| other.contains(name))
            .cloned()
            .collect()
    };
    let (first, again) = (in_both(first, again), in_both(again, first));
    let (place, (was, now)) = (first.iter().zip(&again))
        .enumerate()
        .find(|(_, (was, now))| was != now)?;
    Some(
        deployment
            .file
            .problem(format!(
                "MCP server `{server}` lists its tools in a different order on two calls: \
                 tool {} was `{was}` the first time and `{now}` the second",
                place + 1
            ))
            .label(span, "this server")
            .help(
                "a session keeps the order it first sent, but each new session starts from \
                 the server's order, and the provider's prompt cache breaks where it differs; \
                 ask the server's authors to list tools in a deterministic order (MCP \
                 2026-07-28: servers SHOULD)",
            )
            .warning(),
    )
}

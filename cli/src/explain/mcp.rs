//! `dsh prompt`'s part of MCP: the agent's servers started so their tools
//! and instructions are in the prompt shown, and the tools grouped by
//! server with each server's schema bytes and tokens — the schemas of MCP
//! servers are what makes real prompts large.

use std::fmt::Write as _;

use dsh_system_prompt::PromptAssembly;
use serde_json::{Value, json};

use dsh_deployment::measure::canonical_request;
use dsh_deployment::measure::tokens::PromptTokens;
use dsh_deployment::runtime::Runtime;
use dsh_tool_mcp::LeftOut;

/// One server's share of the tools sent.
struct ServerShare {
    name: String,
    origin: String,
    tools: Vec<String>,
    schema_bytes: usize,
    schema_tokens: usize,
}

/// The assembly's tools by MCP server, in the order their first tool is
/// sent; tools of no server are left out.
fn shares(runtime: &Runtime, assembly: &PromptAssembly, tokens: &PromptTokens) -> Vec<ServerShare> {
    let mut shares: Vec<ServerShare> = Vec::new();
    for (tool, schema_tokens) in assembly.tools.iter().zip(&tokens.tools) {
        let Some(server) = runtime.mcp.server_of_tool(None, &tool.name) else {
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

/// The explain table of the tools by server; nothing without servers.
pub(super) fn explain_servers(
    out: &mut String,
    runtime: &Runtime,
    assembly: &PromptAssembly,
    tokens: &PromptTokens,
) {
    let shares = shares(runtime, assembly, tokens);
    if shares.is_empty() {
        return;
    }
    let _ = writeln!(out, "\ntools by MCP server\n");
    let mut rows = vec![super::row([
        "server",
        "tools",
        "schema bytes",
        "schema tokens",
        "command or URL",
    ])];
    for share in shares {
        rows.push(super::row([
            share.name,
            share.tools.len().to_string(),
            share.schema_bytes.to_string(),
            share.schema_tokens.to_string(),
            share.origin,
        ]));
    }
    super::table(out, &rows, &[1, 2, 3]);
    // Every name that is not `<server>__<tool>` as the server wrote it,
    // with the rule that made it; every tool not sent, with why.
    for server in runtime.mcp.deployment_servers() {
        for name in server.exposed_names() {
            if let Some(fix) = name.fix {
                let _ = writeln!(
                    out,
                    "  `{}` of `{}` is sent as `{}`: {fix}",
                    name.tool,
                    server.name(),
                    name.exposed
                );
            }
        }
        // The allow-list's choices are the deployment's own: not said.
        for (tool, why) in server.left_out() {
            if why != LeftOut::NotAllowed {
                let _ = writeln!(out, "  `{tool}` of `{}` is not sent: {why}", server.name());
            }
        }
    }
}

/// The same, for `--format json`: `mcp_servers`, one object a server.
pub(super) fn servers_json(
    runtime: &Runtime,
    assembly: &PromptAssembly,
    tokens: &PromptTokens,
) -> Value {
    Value::Array(
        shares(runtime, assembly, tokens)
            .into_iter()
            .map(|share| {
                let left_out: Vec<Value> = (runtime.mcp.deployment_servers().iter())
                    .filter(|server| server.name() == share.name)
                    .flat_map(|server| server.left_out())
                    .map(|(tool, why)| json!({"tool": tool, "reason": why.to_string()}))
                    .collect();
                json!({
                    "name": share.name,
                    "origin": share.origin,
                    "tools": share.tools,
                    "schema_bytes": share.schema_bytes,
                    "schema_tokens": share.schema_tokens,
                    "left_out": left_out,
                })
            })
            .collect(),
    )
}

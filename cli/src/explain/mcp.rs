//! `dsh prompt --format explain`'s part of MCP: the tools grouped by
//! server with each server's schema bytes and tokens
//! (`dsh_deployment::measure::server_shares::server_shares`) — the schemas of MCP servers
//! are what makes real prompts large.

use std::fmt::Write as _;

use dsh_system_prompt::PromptAssembly;

use dsh_deployment::measure::server_shares::server_shares;
use dsh_deployment::measure::tokens::PromptTokens;
use dsh_deployment::runtime::Runtime;
use dsh_tool_mcp::LeftOut;

/// The explain table of the tools by server; nothing without servers.
pub(super) fn explain_servers(
    out: &mut String,
    runtime: &Runtime,
    assembly: &PromptAssembly,
    tokens: &PromptTokens,
) {
    let shares = server_shares(&runtime.mcp, assembly, tokens);
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

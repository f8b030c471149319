//! `dsh prompt --format explain`'s part of MCP: the tools grouped by
//! server with each server's schema bytes and tokens — the schemas of MCP
//! servers are what makes real prompts large — and what became of a
//! server's tools on the way to the model.

use std::fmt::Write as _;

use dsh_deployment::reports::explain::Explanation;

/// The explain table of the tools by server; nothing without servers.
pub(super) fn explain_servers(out: &mut String, explained: &Explanation<'_>) {
    if explained.servers.is_empty() {
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
    for share in &explained.servers {
        rows.push(super::row([
            share.name.clone(),
            share.tools.len().to_string(),
            share.schema_bytes.to_string(),
            share.schema_tokens.to_string(),
            share.origin.clone(),
        ]));
    }
    super::table(out, &rows, &[1, 2, 3]);
    for note in &explained.server_notes {
        let _ = writeln!(out, "  {note}");
    }
}

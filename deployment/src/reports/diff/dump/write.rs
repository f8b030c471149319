//! Writing a dump: the assembly, with its tokens, its instruction files
//! and its MCP servers, and the request prefix `dsh diff` reads back.

use dsh_system_prompt::PromptAssembly;
use dsh_system_prompt::inspect::{RenderedPrompt, render_prompt_with_spans};
use dsh_tool_mcp::McpServers;
use serde_json::{Value, json};

use super::DUMP_FORMAT_VERSION;
use crate::Problem;
use crate::measure::server_shares::server_shares;
use crate::measure::tokens::PromptTokens;
use crate::reports::agent_prompt::AgentPrompt;
use crate::reports::check::instruction_report::InstructionsReport;
use crate::reports::diff::Prefix;
use crate::reports::explain::TokenizerOrigin;

/// The dump of `shown`'s `assembly`, as `dsh prompt --format json` prints
/// it (a final newline included): its `format_version`, the assembly,
/// then `tokens`, `instructions`, `mcp_servers` and, last, `prefix`
/// (`tokens` and `prefix` are `null`, and `mcp_servers` absent, when the
/// prompt does not render: the assembly is still written, to see why).
pub fn write_dump(shown: &AgentPrompt, assembly: &PromptAssembly) -> Result<String, Vec<Problem>> {
    let mut dump = serde_json::to_value(assembly).map_err(cannot_serialize)?;
    let origin = TokenizerOrigin::of(&shown.deployment, &shown.agent);
    let tokenizer = shown.deployment.tokenizer_for(&shown.agent);
    let rendered = render_prompt_with_spans(assembly).ok();
    let tokens =
        (rendered.as_ref()).map(|prompt| PromptTokens::count(tokenizer, prompt, &assembly.tools));
    let counted = rendered.as_ref().zip(tokens.as_ref());
    if let Value::Object(object) = &mut dump {
        object.insert("tokens".to_owned(), tokens_json(&origin, assembly, counted));
        object.insert(
            "instructions".to_owned(),
            instructions_json(&InstructionsReport::new(
                shown.started.instructions.found(),
                &shown.runtime.instructions,
                counted,
            )),
        );
        if let Some((_, tokens)) = counted {
            object.insert(
                "mcp_servers".to_owned(),
                servers_json(&shown.runtime.mcp, assembly, tokens),
            );
        }
        let prefix = counted.map(|(prompt, tokens)| Prefix::new(shown, assembly, prompt, tokens));
        object.insert(
            "prefix".to_owned(),
            serde_json::to_value(prefix).map_err(cannot_serialize)?,
        );
        let version = ("format_version".to_owned(), json!(DUMP_FORMAT_VERSION));
        *object = std::iter::once(version)
            .chain(std::mem::take(object))
            .collect();
    }
    // Pretty, two spaces an indent: where the reader looks for a key it
    // reports a problem at.
    let dump = serde_json::to_string_pretty(&dump).map_err(cannot_serialize)?;
    Ok(format!("{dump}\n"))
}

/// The problem of a dump serde cannot write.
fn cannot_serialize(error: serde_json::Error) -> Vec<Problem> {
    vec![Problem::new(format!(
        "cannot serialize the assembly: {error}"
    ))]
}

/// `tokens`: the tokenizer and how it was chosen ([`TokenizerOrigin`]),
/// each rendered section's (by name), the separators', the system
/// prompt's, each tool schema's, and the total; `null` when the prompt
/// does not render.
fn tokens_json(
    origin: &TokenizerOrigin,
    assembly: &PromptAssembly,
    counted: Option<(&RenderedPrompt, &PromptTokens)>,
) -> Value {
    let Some((prompt, tokens)) = counted else {
        return Value::Null;
    };
    let sections: Vec<Value> = prompt
        .sections
        .iter()
        .zip(&tokens.sections)
        .map(|(section, tokens)| json!({"name": section.name.as_str(), "tokens": tokens}))
        .collect();
    let tools: Vec<Value> = assembly
        .tools
        .iter()
        .zip(&tokens.tools)
        .map(|(tool, tokens)| json!({"name": tool.name, "tokens": tokens}))
        .collect();
    json!({
        "tokenizer": origin.encoding.name(),
        "tokenizer_choice": origin.choice_name(),
        "sections": sections,
        "separators": tokens.separators,
        "system_prompt": tokens.system,
        "tools": tools,
        "tools_total": tokens.tools_total(),
        "total": tokens.total(),
    })
}

/// `instructions`: the session's instruction files as the reports show
/// them ([`InstructionsReport`]), with their share of the prompt when it
/// rendered, and the files skipped.
fn instructions_json(report: &InstructionsReport<'_>) -> Value {
    let files: Vec<Value> = (report.files.iter())
        .map(|file_report| {
            let file = file_report.file;
            json!({
                "section": file.section,
                "source": file_report.source(),
                "path": file.path.display().to_string(),
                "order": file.order,
                "bytes": file.bytes,
                "kept": file.kept,
                "cut": file.is_cut(),
                "imported_by": file.imported_by,
                "prompt_bytes": file_report.in_prompt.map(|size| size.bytes),
                "tokens": file_report.in_prompt.map(|size| size.tokens),
            })
        })
        .collect();
    let left_out = report.left_out.as_ref().map(|left_out| {
        json!({
            "section": left_out.files.section,
            "order": left_out.files.order,
            "files": left_out.files.files,
            "prompt_bytes": left_out.in_prompt.map(|size| size.bytes),
            "tokens": left_out.in_prompt.map(|size| size.tokens),
        })
    });
    let skipped: Vec<Value> = (report.skipped().iter())
        .map(|skipped| {
            json!({
                "path": skipped.path.display().to_string(),
                "imported_by": skipped.imported_by,
                "reason": skipped.reason,
                "message": skipped.to_string(),
            })
        })
        .collect();
    let rules: Vec<Value> = (report.rules.iter())
        .map(|rule_report| {
            let rule = &rule_report.rule;
            json!({
                "name": rule.name,
                "path": rule.path.display().to_string(),
                "format": rule.format,
                "applies": rule.applies,
                "delivered": rule_report.delivered(),
                "description": rule.description,
                "line": rule.line,
                "bytes": rule.text.len(),
                "tokens": rule_report.tokens,
            })
        })
        .collect();
    let config = report.config;
    json!({
        "enabled": config.enabled,
        "names": config.files,
        "max_bytes": config.max_bytes,
        "root": report.found.root().map(|root| root.display().to_string()),
        "files": files,
        "left_out": left_out,
        "skipped": skipped,
        "rules": rules,
        "rule_problems": report.found.rules().problems(),
    })
}

/// `mcp_servers`: the assembly's tools by server
/// ([`server_shares`]), one object a server, with the tools it lists
/// that are not sent, and why.
fn servers_json(servers: &McpServers, assembly: &PromptAssembly, tokens: &PromptTokens) -> Value {
    let deployment_servers = servers.deployment_servers();
    Value::Array(
        server_shares(servers, assembly, tokens)
            .into_iter()
            .map(|share| {
                let left_out: Vec<Value> = (deployment_servers.iter())
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

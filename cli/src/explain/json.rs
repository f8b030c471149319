//! `dsh prompt --format json`: its format's version, the assembly, with
//! its tokens, its instruction files and its MCP servers, and the request
//! prefix `dsh diff` reads back (`dsh_deployment::reports::diff::Prefix`).

use dsh_agent_loop::{Tokenizer, TokenizerChoice};
use dsh_deployment::Problem;
use dsh_deployment::measure::tokens::PromptTokens;
use dsh_deployment::reports::agent_prompt::AgentPrompt;
use dsh_deployment::reports::check::instruction_report;
use dsh_deployment::reports::diff::{DUMP_FORMAT_VERSION, Prefix};
use dsh_system_prompt::PromptAssembly;
use dsh_system_prompt::inspect::{RenderedPrompt, render_prompt_with_spans};
use serde_json::{Value, json};

use super::mcp;

/// The assembly as JSON, after its `format_version`, with `tokens`,
/// `instructions`, `mcp_servers` and, last, `prefix` (`null` when the
/// prompt does not render).
pub(crate) fn json(shown: &AgentPrompt, assembly: &PromptAssembly) -> Result<String, Vec<Problem>> {
    let runtime = &shown.runtime;
    let cannot = |error: serde_json::Error| {
        vec![Problem::new(format!(
            "cannot serialize the assembly: {error}"
        ))]
    };
    let mut json = serde_json::to_value(assembly).map_err(cannot)?;
    let tokenizer = shown.deployment.tokenizer_for(&shown.agent);
    let rendered = render_prompt_with_spans(assembly).ok();
    let counted = rendered.as_ref().map(|prompt| {
        (
            prompt,
            PromptTokens::count(tokenizer, prompt, &assembly.tools),
        )
    });
    let counted = counted.as_ref().map(|(prompt, tokens)| (*prompt, tokens));
    if let Value::Object(object) = &mut json {
        object.insert(
            "tokens".to_owned(),
            tokens_json(tokenizer, assembly, counted),
        );
        object.insert(
            "instructions".to_owned(),
            instruction_report::json(
                shown.started.instructions.found(),
                &runtime.instructions,
                counted,
            ),
        );
        if let Some((_, tokens)) = counted {
            object.insert(
                "mcp_servers".to_owned(),
                mcp::servers_json(runtime, assembly, tokens),
            );
        }
        let prefix = counted.map(|(prompt, tokens)| Prefix::new(shown, assembly, prompt, tokens));
        object.insert(
            "prefix".to_owned(),
            serde_json::to_value(prefix).map_err(cannot)?,
        );
        let version = ("format_version".to_owned(), json!(DUMP_FORMAT_VERSION));
        *object = std::iter::once(version)
            .chain(std::mem::take(object))
            .collect();
    }
    let json = serde_json::to_string_pretty(&json).map_err(cannot)?;
    Ok(format!("{json}\n"))
}

/// The assembly's tokens for `--format json`: the tokenizer and how it
/// was chosen, each rendered section's (by name), the separators', the
/// system prompt's, each tool schema's, and the total; `null` when the
/// prompt does not render (the assembly is still printed, to see why).
fn tokens_json(
    tokenizer: Tokenizer,
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
        "tokenizer": tokenizer.encoding().name(),
        "tokenizer_choice": choice_name(tokenizer.choice()),
        "sections": sections,
        "separators": tokens.separators,
        "system_prompt": tokens.system,
        "tools": tools,
        "tools_total": tokens.tools_total(),
        "total": tokens.total(),
    })
}

/// How a tokenizer was chosen, as JSON says it.
fn choice_name(choice: TokenizerChoice) -> &'static str {
    match choice {
        TokenizerChoice::Configured => "configured",
        TokenizerChoice::Model => "model",
        TokenizerChoice::Estimate => "estimate",
        // `Default`, and any way of choosing a later loop adds.
        _ => "default",
    }
}

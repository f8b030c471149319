//! `dsh prompt`: the system prompt of one agent, as text, explained, or as
//! the assembly in JSON. The two last count tokens too (`PromptTokens`);
//! the text does not.

use std::fmt::Write as _;
use std::io::IsTerminal;

use dsh_agent_loop::{
    COMPACTION_SECTION, ContextBudget, Tokenizer, TokenizerChoice, compaction_context,
};
use dsh_system_prompt::inspect::{
    RenderedPrompt, SEPARATOR_OWNER, SectionOrigin, render_prompt_with_spans, section_origins,
};
use dsh_system_prompt::{Owner, PromptAssembly, Scope, ScopeId, SystemPrompt, render_context};
use serde_json::{Value, json};

use crate::args::{Format, PromptArgs};
use crate::commands::{Outcome, print, session_cwd};
use crate::diagnostics::Reporter;
use dsh_deployment::Problem;
use dsh_deployment::check::instruction_report::{self, FileReport};
use dsh_deployment::check::prompt_problems::prompt_problems;
use dsh_deployment::file::{AgentSpec, Deployment};
use dsh_deployment::host::{AgentPrompt, McpServers};
use dsh_deployment::measure::canonical_request;
use dsh_deployment::measure::tokens::PromptTokens;
use dsh_deployment::runtime;

pub(crate) fn run(args: &PromptArgs) -> Outcome {
    let cwd = session_cwd(&args.cwd)?;
    // The agent's MCP servers run while the prompt is assembled: their
    // tools and instructions are part of it (unless `--no-mcp`).
    let mcp = if args.no_mcp {
        McpServers::Leave
    } else {
        McpServers::Start
    };
    let shown = AgentPrompt::load(
        args.target.deployment.config.as_deref(),
        args.target.agent.as_deref(),
        cwd.as_deref(),
        mcp,
    )?;
    Reporter::for_stderr().report(shown.server_failures());
    let AgentPrompt {
        deployment,
        agent,
        runtime,
        started,
        ..
    } = &shown;
    let assembly = shown.assemble();
    match args.format {
        Format::Text => {
            let text = shown.render()?;
            // The prompt byte for byte; a terminal also gets a final newline
            // so the shell's prompt does not stick to the last line.
            if std::io::stdout().is_terminal() && !text.ends_with('\n') {
                print(&format!("{text}\n"))
            } else {
                print(&text)
            }
        }
        Format::Explain => {
            let prompt = render_prompt_with_spans(&assembly)
                .map_err(|errors| prompt_problems(deployment, agent, &errors))?;
            let tokens =
                PromptTokens::count(deployment.tokenizer_for(agent), &prompt, &assembly.tools);
            let scope = runtime::loop_agent(agent).scope().clone();
            let origins = section_origins(&runtime.prompt, &scope);
            let found = started.instructions.found();
            let files = instruction_report::reports(found, Some((&prompt, &tokens)));
            let none = instruction_report::none_found(found, &runtime.instructions);
            let mut out = String::new();
            explain_agent(&mut out, deployment, agent, &prompt, &tokens);
            explain_layers(&mut out, &scope, &origins);
            explain(&mut out, &assembly, &prompt, &tokens, (&files, &none));
            explain_compaction(&mut out, &runtime.prompt, deployment.budget_for(agent));
            super::prompt_mcp::explain_servers(&mut out, runtime, &assembly, &tokens);
            print(&out)
        }
        Format::Json => {
            let cannot = |error: serde_json::Error| {
                vec![Problem::new(format!(
                    "cannot serialize the assembly: {error}"
                ))]
            };
            let mut json = serde_json::to_value(&assembly).map_err(cannot)?;
            let tokenizer = deployment.tokenizer_for(agent);
            let rendered = render_prompt_with_spans(&assembly).ok();
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
                    tokens_json(tokenizer, &assembly, counted),
                );
                object.insert(
                    "instructions".to_owned(),
                    instruction_report::json(
                        started.instructions.found(),
                        &runtime.instructions,
                        counted,
                    ),
                );
                if let Some((_, tokens)) = counted {
                    object.insert(
                        "mcp_servers".to_owned(),
                        super::prompt_mcp::servers_json(runtime, &assembly, tokens),
                    );
                }
            }
            let json = serde_json::to_string_pretty(&json).map_err(cannot)?;
            print(&format!("{json}\n"))
        }
    }
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

/// The explain tables after the agent and its layers: its sections,
/// variables and tools, then the total.
fn explain(
    out: &mut String,
    assembly: &PromptAssembly,
    prompt: &RenderedPrompt,
    tokens: &PromptTokens,
    instructions: (&[FileReport<'_>], &str),
) {
    explain_sections(out, assembly, prompt, tokens);
    explain_instructions(out, instructions.0, instructions.1);
    explain_variables(out, assembly);
    explain_tools(out, assembly, tokens);
    explain_contexts(out, assembly);
    let bytes = prompt.text.len()
        + assembly
            .tools
            .iter()
            .map(|tool| canonical_request::tool_json(tool).len())
            .sum::<usize>();
    let _ = writeln!(
        out,
        "\nsystem prompt and tools: {bytes} bytes, {} tokens, sent before any message",
        tokens.total()
    );
}

/// An owner as the explain tables name it: item and crate, without the
/// line, which moves with every edit.
fn owner_name(owner: &Owner) -> String {
    format!("`{}` of {}", owner.item, owner.krate)
}

/// The agent's chain of layers and, for each section a scope gives it,
/// the layer it came from and what it shadows; nothing when every section
/// is the global layer's.
fn explain_layers(out: &mut String, scope: &Scope, origins: &[SectionOrigin]) {
    let layer = |layer: &Option<ScopeId>| match layer {
        Some(layer) => layer.to_string(),
        None => "global".to_owned(),
    };
    let scoped: Vec<&SectionOrigin> = origins
        .iter()
        .filter(|origin| origin.layer.is_some())
        .collect();
    if scoped.is_empty() {
        return;
    }
    let _ = writeln!(out, "layers     {scope}, the nearest winning");
    let mut rows = vec![row(["section", "layer", "owner", "shadows"])];
    for origin in scoped {
        let shadows: Vec<String> = origin
            .shadows
            .iter()
            .map(|(shadowed, owner)| format!("{} ({})", owner_name(owner), layer(shadowed)))
            .collect();
        rows.push(row([
            origin.name.to_string(),
            layer(&origin.layer),
            owner_name(&origin.owner),
            if shadows.is_empty() {
                "nothing (a new section)".to_owned()
            } else {
                shadows.join("; ")
            },
        ]));
    }
    table(out, &rows, &[]);
    out.push('\n');
}

/// The agent, where the file declares it, its tokenizer, and the prompt's
/// size.
fn explain_agent(
    out: &mut String,
    deployment: &Deployment,
    agent: &AgentSpec,
    prompt: &RenderedPrompt,
    tokens: &PromptTokens,
) {
    let file = &deployment.file;
    let place = |offset: usize| {
        let (line, column) = file.position(offset);
        format!("{}:{line}:{column}", file.name())
    };
    let sections = prompt.sections.len();
    let _ = writeln!(
        out,
        "agent      {} ({})",
        agent.id.get_ref(),
        place(agent.id.span().start)
    );
    let _ = writeln!(out, "model      {}", agent.model.get_ref());
    let _ = writeln!(out, "persona    {}", place(agent.persona.span().start));
    let _ = writeln!(
        out,
        "tokenizer  {}",
        tokenizer_origin(deployment, agent, tokens.tokenizer)
    );
    let _ = writeln!(
        out,
        "prompt     {} bytes, {} tokens in {sections} section{}\n",
        prompt.text.len(),
        tokens.system,
        if sections == 1 { "" } else { "s" }
    );
}

/// The tokenizer's encoding and how it was chosen; a default says that
/// it is one, and how to choose.
fn tokenizer_origin(deployment: &Deployment, agent: &AgentSpec, tokenizer: Tokenizer) -> String {
    let encoding = tokenizer.encoding();
    let model = agent.model.get_ref();
    let table = deployment.adapter_table();
    match tokenizer.choice() {
        TokenizerChoice::Configured => format!("{encoding} (`tokenizer` in {table})"),
        TokenizerChoice::Model => format!("{encoding} (selected by model `{model}`)"),
        TokenizerChoice::Estimate => format!(
            "{encoding} (an estimate: Anthropic ships no offline tokenizer for model `{model}`, \
             so these counts are {encoding} estimates; the API's own counts are in `dsh run --trace`)"
        ),
        _ => format!(
            "{encoding} (the default: no tokenizer is known for model `{model}`; \
             set `tokenizer` in {table} to choose one)"
        ),
    }
}

/// Every rendered section with its owner, its share of the bytes and its
/// tokens, the separators, the total; then each section that did not
/// render, and why.
fn explain_sections(
    out: &mut String,
    assembly: &PromptAssembly,
    prompt: &RenderedPrompt,
    tokens: &PromptTokens,
) {
    let total = prompt.text.len();
    let mut rows = vec![row([
        "order",
        "section",
        "owner crate",
        "owner item",
        "tool",
        "bytes",
        "share",
        "tokens",
    ])];
    let mut section_bytes = 0;
    let mut skipped = Vec::new();
    for section in &assembly.sections {
        let Some((index, rendered)) = prompt
            .sections
            .iter()
            .enumerate()
            .find(|(_, rendered)| rendered.name == *section.name())
        else {
            skipped.push(section);
            continue;
        };
        let bytes = rendered.range.len();
        section_bytes += bytes;
        rows.push(row([
            section.order().to_string(),
            section.name().to_string(),
            section.owner().krate.to_string(),
            section.owner().item.to_string(),
            section
                .tool()
                .map_or_else(|| "-".to_owned(), ToString::to_string),
            bytes.to_string(),
            share(bytes, total),
            tokens.sections[index].to_string(),
        ]));
    }
    let separators = total - section_bytes;
    rows.push(row([
        String::new(),
        "(separators)".to_owned(),
        SEPARATOR_OWNER.krate.to_string(),
        SEPARATOR_OWNER.item.to_string(),
        "-".to_owned(),
        separators.to_string(),
        share(separators, total),
        tokens.separators.to_string(),
    ]));
    rows.push(row([
        "",
        "total",
        "",
        "",
        "",
        &total.to_string(),
        &share(total, total),
        &tokens.system.to_string(),
    ]));
    // Numeric: order, bytes, share, tokens.
    table(out, &rows, &[0, 5, 6, 7]);
    for section in skipped {
        let why = match section.tool() {
            Some(tool) if !assembly.has_tool(tool) => {
                format!("bound to tool `{tool}`, which this agent does not have")
            }
            _ if section.name().as_ref() == COMPACTION_SECTION => {
                "the compaction request's prompt, not this agent's (see below)".to_owned()
            }
            _ => "empty after interpolation".to_owned(),
        };
        let _ = writeln!(
            out,
            "not rendered: `{}` ({}): {why}",
            section.name(),
            section.owner().krate
        );
    }
}

/// The session's instruction files: each one's section, file, size,
/// what the budget kept, and its bytes and tokens in the prompt.
fn explain_instructions(out: &mut String, files: &[FileReport<'_>], none: &str) {
    let _ = writeln!(
        out,
        "\ninstruction files (read when the session starts; the budget is spent nearest first)\n"
    );
    if files.is_empty() {
        let _ = writeln!(out, "{none}");
        return;
    }
    let mut rows = vec![row([
        "section",
        "source",
        "file",
        "bytes",
        "kept",
        "prompt bytes",
        "tokens",
    ])];
    for report in files {
        let (bytes, tokens) = report.in_prompt.map_or_else(
            || ("-".to_owned(), "-".to_owned()),
            |(bytes, tokens)| (bytes.to_string(), tokens.to_string()),
        );
        rows.push(row([
            report.file.section.clone(),
            report.source().to_owned(),
            report.file.path.display().to_string(),
            report.file.bytes.to_string(),
            report.kept(),
            bytes,
            tokens,
        ]));
    }
    // Numeric: bytes, prompt bytes, tokens.
    table(out, &rows, &[3, 5, 6]);
}

/// Every variable, its value for this assembly, and its owner.
fn explain_variables(out: &mut String, assembly: &PromptAssembly) {
    let _ = writeln!(out, "\nvariables\n");
    let mut rows = vec![row(["name", "value", "owner crate", "owner item"])];
    for variable in assembly.variables.iter() {
        rows.push(row([
            variable.name.to_owned(),
            variable
                .value
                .map_or_else(|| "(no value)".to_owned(), |value| format!("{value:?}")),
            variable
                .owner
                .map_or_else(|| "-".to_owned(), |owner| owner.krate.to_string()),
            variable
                .owner
                .map_or_else(|| "-".to_owned(), |owner| owner.item.to_string()),
        ]));
    }
    table(out, &rows, &[]);
}

/// The size of every tool schema sent beside the prompt, in bytes and
/// tokens of its canonical JSON.
fn explain_tools(out: &mut String, assembly: &PromptAssembly, tokens: &PromptTokens) {
    let _ = writeln!(out, "\ntools (sent beside the system prompt)\n");
    let mut rows = vec![row([
        "name",
        "description bytes",
        "parameters bytes",
        "schema bytes",
        "schema tokens",
    ])];
    let mut schema_total = 0;
    for (tool, schema_tokens) in assembly.tools.iter().zip(&tokens.tools) {
        let parameters = serde_json::to_string(&tool.parameters).map_or(0, |json| json.len());
        let schema = canonical_request::tool_json(tool).len();
        schema_total += schema;
        rows.push(row([
            tool.name.clone(),
            tool.description.len().to_string(),
            parameters.to_string(),
            schema.to_string(),
            schema_tokens.to_string(),
        ]));
    }
    rows.push(row([
        "total",
        "",
        "",
        &schema_total.to_string(),
        &tokens.tools_total().to_string(),
    ]));
    // Numeric: the sizes.
    table(out, &rows, &[1, 2, 3, 4]);
}

/// The runtime contexts: not part of the system prompt, sent as a message
/// at the conversation's tail when they change; each with what it renders
/// to now (a fresh session: the todo list is still empty).
fn explain_contexts(out: &mut String, assembly: &PromptAssembly) {
    let _ = writeln!(
        out,
        "\nruntime contexts (not in the system prompt: a message at the conversation's tail, \
         sent when it changes)\n"
    );
    if assembly.contexts.is_empty() {
        let _ = writeln!(out, "(none)");
        return;
    }
    let mut rows = vec![row([
        "order",
        "name",
        "tool",
        "owner crate",
        "owner item",
        "bytes now",
    ])];
    for context in &assembly.contexts {
        let mut alone = assembly.clone();
        alone.contexts = vec![context.clone()];
        let now = match render_context(&alone) {
            Ok(text) => text.len().to_string(),
            Err(_) => "does not render".to_owned(),
        };
        rows.push(row([
            context.order().to_string(),
            context.name().to_string(),
            context
                .tool()
                .map_or_else(|| "-".to_owned(), ToString::to_string),
            context.owner().krate.to_string(),
            context.owner().item.to_string(),
            now,
        ]));
    }
    // Numeric: order, bytes now.
    table(out, &rows, &[0, 5]);
}

/// The agent's context budget, and what the compaction request is told:
/// the section(s) of an assembly made for it, which never render into the
/// agent's prompt.
fn explain_compaction(out: &mut String, prompt: &SystemPrompt, budget: ContextBudget) {
    let _ = write!(out, "\ncontext budget: {budget}");
    if budget.window().is_none() {
        let _ = write!(
            out,
            "; compacting only on request (`/compact`): set `context_window` in the adapter's table"
        );
    }
    out.push('\n');
    let _ = writeln!(
        out,
        "\ncompaction request (what the model is told when it summarizes old turns; \
         not in the system prompt)\n"
    );
    let assembly = prompt.assemble(&compaction_context());
    let Ok(rendered) = render_prompt_with_spans(&assembly) else {
        let _ = writeln!(out, "(does not render)");
        return;
    };
    let tokenizer = budget.tokenizer();
    let mut rows = vec![row([
        "order",
        "section",
        "owner crate",
        "owner item",
        "bytes",
        "tokens",
    ])];
    for section in &rendered.sections {
        let Some(part) = assembly.sections.get(&section.name) else {
            continue;
        };
        rows.push(row([
            part.order().to_string(),
            section.name.to_string(),
            part.owner().krate.to_string(),
            part.owner().item.to_string(),
            section.range.len().to_string(),
            tokenizer
                .count(&rendered.text[section.range.clone()])
                .to_string(),
        ]));
    }
    // Numeric: order, bytes, tokens.
    table(out, &rows, &[0, 4, 5]);
}

pub(super) fn row<const N: usize>(cells: [impl Into<String>; N]) -> Vec<String> {
    cells.into_iter().map(Into::into).collect()
}

fn share(bytes: usize, total: usize) -> String {
    if total == 0 {
        return "-".to_owned();
    }
    // Tenths of a percent, rounded, in integers: the same digits everywhere.
    let tenths = (bytes * 1000 + total / 2) / total;
    format!("{}.{}%", tenths / 10, tenths % 10)
}

/// Writes `rows` as aligned columns, two spaces apart, with a rule under
/// the header row: the `numeric` columns (by index) aligned right, the
/// others left.
pub(super) fn table(out: &mut String, rows: &[Vec<String>], numeric: &[usize]) {
    let columns = rows[0].len();
    let widths: Vec<usize> = (0..columns)
        .map(|column| {
            rows.iter()
                .map(|row| row[column].chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    for (index, row) in rows.iter().enumerate() {
        let mut line = String::new();
        for (column, cell) in row.iter().enumerate() {
            if column > 0 {
                line.push_str("  ");
            }
            let pad = std::iter::repeat_n(' ', widths[column] - cell.chars().count());
            if numeric.contains(&column) {
                line.extend(pad);
                line.push_str(cell);
            } else {
                line.push_str(cell);
                line.extend(pad);
            }
        }
        let _ = writeln!(out, "{}", line.trim_end());
        if index == 0 {
            let rule: usize = widths.iter().sum::<usize>() + 2 * (columns - 1);
            let _ = writeln!(out, "{}", "-".repeat(rule));
        }
    }
}

//! The tables of `--format explain`, one function a part.

use std::fmt::Write as _;

use dsh_agent_loop::{
    COMPACTION_SECTION, ContextBudget, Tokenizer, TokenizerChoice, compaction_context,
};
use dsh_deployment::facts::instructions::{FilesLeftOut, SkippedFile};
use dsh_deployment::file::{AgentSpec, Deployment};
use dsh_deployment::measure::canonical_request;
use dsh_deployment::measure::tokens::PromptTokens;
use dsh_deployment::reports::check::instruction_report::FileReport;
use dsh_system_prompt::inspect::{
    RenderedPrompt, SEPARATOR_OWNER, SectionOrigin, render_prompt_with_spans,
};
use dsh_system_prompt::{
    AssembledSection, Owner, PromptAssembly, Scope, ScopeId, SystemPrompt, render_context,
};

use super::{row, share, table};

/// A session's instruction files as explain shows them.
pub(super) struct InstructionsShown<'a> {
    /// Each file in the prompt.
    pub(super) files: Vec<FileReport<'a>>,
    /// The files left out, their marker, and its bytes and tokens.
    pub(super) left_out: Option<(&'a FilesLeftOut, Option<(usize, usize)>)>,
    /// The files skipped.
    pub(super) skipped: &'a [SkippedFile],
    /// What to say when there is no file.
    pub(super) none: String,
}

/// How many paths of the files left out explain lists; JSON lists every
/// one.
const LEFT_OUT_LISTED: usize = 10;

/// The explain tables after the agent and its layers: its sections,
/// variables and tools, then the total.
pub(super) fn explain(
    out: &mut String,
    assembly: &PromptAssembly,
    prompt: &RenderedPrompt,
    tokens: &PromptTokens,
    instructions: &InstructionsShown<'_>,
) {
    explain_sections(out, assembly, prompt, tokens);
    explain_instructions(out, instructions);
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
pub(super) fn explain_layers(out: &mut String, scope: &Scope, origins: &[SectionOrigin]) {
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
pub(super) fn explain_agent(
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
    let total_row = [
        "",
        "total",
        "",
        "",
        "",
        &total.to_string(),
        &share(total, total),
    ];
    let mut total_row = row(total_row);
    total_row.push(tokens.system.to_string());
    rows.push(total_row);
    // Numeric: order, bytes, share, tokens.
    table(out, &rows, &[0, 5, 6, 7]);
    for section in skipped {
        let _ = writeln!(
            out,
            "not rendered: `{}` ({}): {}",
            section.name(),
            section.owner().krate,
            why_not_rendered(assembly, section)
        );
    }
}

/// Why a section of the assembly is not in the rendered prompt.
fn why_not_rendered(assembly: &PromptAssembly, section: &AssembledSection) -> String {
    match section.tool() {
        Some(tool) if !assembly.has_tool(tool) => {
            format!("bound to tool `{tool}`, which this agent does not have")
        }
        _ if section.name().as_ref() == COMPACTION_SECTION => {
            "the compaction request's prompt, not this agent's (see below)".to_owned()
        }
        _ => "empty after interpolation".to_owned(),
    }
}

/// The session's instruction files: each one's section, file, size,
/// what the budget kept, what imported it, and its bytes and tokens in the
/// prompt; then the files left out, and the files skipped and why.
fn explain_instructions(out: &mut String, shown: &InstructionsShown<'_>) {
    let _ = writeln!(
        out,
        "\ninstruction files (read when the session starts; the budget is spent nearest first)\n"
    );
    if shown.files.is_empty() && shown.left_out.is_none() {
        let _ = writeln!(out, "{}", shown.none);
    } else {
        explain_instruction_files(out, shown);
    }
    if let Some((left_out, _)) = shown.left_out {
        let count = left_out.files.len();
        let _ = writeln!(
            out,
            "\nleft out to fit the budget ({count} file{}, said by section `{}`):",
            if count == 1 { "" } else { "s" },
            left_out.section
        );
        for file in left_out.files.iter().take(LEFT_OUT_LISTED) {
            let _ = writeln!(out, "  {} ({} bytes)", file.path.display(), file.bytes);
        }
        if count > LEFT_OUT_LISTED {
            let _ = writeln!(
                out,
                "  and {} more (`--format json` lists every one)",
                count - LEFT_OUT_LISTED
            );
        }
    }
    if !shown.skipped.is_empty() {
        let _ = writeln!(out, "\nskipped:");
        for skipped in shown.skipped {
            let _ = writeln!(out, "  {skipped}");
        }
    }
}

/// The table of the files in the prompt, and the marker of those left out.
fn explain_instruction_files(out: &mut String, shown: &InstructionsShown<'_>) {
    let mut rows = vec![row([
        "section",
        "source",
        "file",
        "bytes",
        "kept",
        "imported by",
        "prompt bytes",
        "tokens",
    ])];
    let in_prompt = |in_prompt: Option<(usize, usize)>| {
        in_prompt.map_or_else(
            || ("-".to_owned(), "-".to_owned()),
            |(bytes, tokens)| (bytes.to_string(), tokens.to_string()),
        )
    };
    if let Some((left_out, shown)) = shown.left_out {
        let (bytes, tokens) = in_prompt(shown);
        let total: usize = left_out.files.iter().map(|file| file.bytes).sum();
        rows.push(row([
            left_out.section.clone(),
            "budget".to_owned(),
            format!(
                "({} file{} left out)",
                left_out.files.len(),
                if left_out.files.len() == 1 { "" } else { "s" }
            ),
            total.to_string(),
            "none".to_owned(),
            "-".to_owned(),
            bytes,
            tokens,
        ]));
    }
    for report in &shown.files {
        let (bytes, tokens) = in_prompt(report.in_prompt);
        rows.push(row([
            report.file.section.clone(),
            report.source().to_owned(),
            report.file.path.display().to_string(),
            report.file.bytes.to_string(),
            report.kept(),
            report.imported_by(),
            bytes,
            tokens,
        ]));
    }
    // Numeric: bytes, prompt bytes, tokens.
    table(out, &rows, &[3, 6, 7]);
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
pub(super) fn explain_compaction(out: &mut String, prompt: &SystemPrompt, budget: ContextBudget) {
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

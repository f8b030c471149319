//! The tables of `--format explain`, one function a part.

use std::fmt::Write as _;

use dsh_deployment::reports::check::instruction_report::InstructionsReport;
use dsh_deployment::reports::explain::{
    Compaction, ContextRow, Explanation, Layers, Rendered, VariableRow, WhyNot,
};

use super::{row, table};

/// How many paths of the files left out explain lists; JSON lists every
/// one.
const LEFT_OUT_LISTED: usize = 10;

/// `-` for a part that has none.
fn or_dash(cell: Option<impl ToString>) -> String {
    cell.map_or_else(|| "-".to_owned(), |cell| cell.to_string())
}

/// `s` unless there is one.
fn plural(count: usize) -> &'static str {
    if count == 1 { "" } else { "s" }
}

/// The agent, where the file declares it, its tokenizer, and the prompt's
/// size.
pub(super) fn explain_agent(out: &mut String, explained: &Explanation<'_>) {
    let agent = &explained.agent;
    let prompt = explained.prompt.size;
    let sections = explained.rendered_sections();
    let _ = writeln!(out, "agent      {} ({})", agent.id, agent.declared_at);
    let _ = writeln!(out, "model      {}", agent.model);
    let _ = writeln!(out, "persona    {}", agent.persona_at);
    let _ = writeln!(out, "tokenizer  {}", agent.tokenizer);
    let _ = writeln!(
        out,
        "prompt     {} bytes, {} tokens in {sections} section{}\n",
        prompt.bytes,
        prompt.tokens,
        plural(sections)
    );
}

/// The agent's chain of layers and, for each section a layer gives it,
/// the layer and what it shadows; nothing when every section is the
/// global layer's.
pub(super) fn explain_layers(out: &mut String, layers: &Layers) {
    if layers.sections.is_empty() {
        return;
    }
    let _ = writeln!(out, "layers     {}, the nearest winning", layers.chain);
    let mut rows = vec![row(["section", "layer", "owner", "shadows"])];
    for section in &layers.sections {
        let shadows: Vec<String> = (section.shadows.iter())
            .map(|(layer, owner)| format!("{owner} ({layer})"))
            .collect();
        rows.push(row([
            section.section.clone(),
            section.layer.clone(),
            section.owner.to_string(),
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

/// Every rendered section with its owner, its share of the bytes and its
/// tokens, the separators, the total; then each section that did not
/// render, and why.
pub(super) fn explain_sections(out: &mut String, explained: &Explanation<'_>) {
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
    let mut push = |cells: [String; 5], Rendered { size, share }: Rendered| {
        let sized = [
            size.bytes.to_string(),
            share.to_string(),
            size.tokens.to_string(),
        ];
        rows.push(cells.into_iter().chain(sized).collect());
    };
    for section in &explained.sections {
        if let Ok(rendered) = section.rendered {
            let cells = [
                section.order.to_string(),
                section.name.clone(),
                section.owner.krate.clone(),
                section.owner.item.clone(),
                or_dash(section.tool.as_ref()),
            ];
            push(cells, rendered);
        }
    }
    let separators = &explained.separators;
    let cells = [
        "",
        "(separators)",
        &separators.owner.krate,
        &separators.owner.item,
        "-",
    ];
    push(cells.map(str::to_owned), separators.rendered);
    push(
        ["", "total", "", "", ""].map(str::to_owned),
        explained.prompt,
    );
    // Numeric: order, bytes, share, tokens.
    table(out, &rows, &[0, 5, 6, 7]);
    for section in &explained.sections {
        if let Err(why) = &section.rendered {
            // The compaction request's prompt is the last table's.
            let see_below = if *why == WhyNot::CompactionPrompt {
                " (see below)"
            } else {
                ""
            };
            let (name, krate) = (&section.name, &section.owner.krate);
            let _ = writeln!(out, "not rendered: `{name}` ({krate}): {why}{see_below}");
        }
    }
}

/// The session's instruction files: each one's section, file, size,
/// what the budget kept, what imported it, and its bytes and tokens in the
/// prompt; then the files left out, and the files skipped and why.
pub(super) fn explain_instructions(out: &mut String, report: &InstructionsReport<'_>) {
    let _ = writeln!(
        out,
        "\ninstruction files (read when the session starts; the budget is spent nearest first)\n"
    );
    match report.none_found() {
        Some(none) => {
            let _ = writeln!(out, "{none}");
        }
        None => explain_instruction_files(out, report),
    }
    if let Some(left_out) = &report.left_out {
        let files = &left_out.files.files;
        let count = files.len();
        let _ = writeln!(
            out,
            "\nleft out to fit the budget ({count} file{}, said by section `{}`):",
            plural(count),
            left_out.files.section
        );
        for file in files.iter().take(LEFT_OUT_LISTED) {
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
    let skipped = report.skipped();
    if !skipped.is_empty() {
        let _ = writeln!(out, "\nskipped:");
        for skipped in skipped {
            let _ = writeln!(out, "  {skipped}");
        }
    }
}

/// The table of the files in the prompt, and the marker of those left out.
/// The project's rule files: each one's format, when it applies, how it
/// reaches the model, and its tokens.
pub(super) fn explain_rules(out: &mut String, report: &InstructionsReport<'_>) {
    if report.rules.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "\nrules (path rules reach the model after the first call that touches a file they cover)\n"
    );
    let mut rows = vec![row([
        "rule",
        "format",
        "applies",
        "delivered",
        "bytes",
        "tokens",
    ])];
    for rule in &report.rules {
        rows.push(row([
            rule.rule.name.clone(),
            rule.rule.format.to_string(),
            rule.applies(),
            rule.delivered().to_owned(),
            rule.rule.text.len().to_string(),
            or_dash(rule.tokens),
        ]));
    }
    table(out, &rows, &[4, 5]);
}

fn explain_instruction_files(out: &mut String, report: &InstructionsReport<'_>) {
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
    let in_prompt = |in_prompt: Option<dsh_deployment::measure::tokens::Size>| {
        [
            or_dash(in_prompt.map(|size| size.bytes)),
            or_dash(in_prompt.map(|size| size.tokens)),
        ]
    };
    if let Some(left_out) = &report.left_out {
        let count = left_out.files.files.len();
        let mut cells = row([
            left_out.files.section.clone(),
            "budget".to_owned(),
            format!("({count} file{} left out)", plural(count)),
            left_out.bytes().to_string(),
            "none".to_owned(),
            "-".to_owned(),
        ]);
        cells.extend(in_prompt(left_out.in_prompt));
        rows.push(cells);
    }
    for file in &report.files {
        let mut cells = row([
            file.file.section.clone(),
            file.source().to_owned(),
            file.file.path.display().to_string(),
            file.file.bytes.to_string(),
            file.kept(),
            file.imported_by(),
        ]);
        cells.extend(in_prompt(file.in_prompt));
        rows.push(cells);
    }
    // Numeric: bytes, prompt bytes, tokens.
    table(out, &rows, &[3, 6, 7]);
}

/// Every variable, its value for this assembly, and its owner.
pub(super) fn explain_variables(out: &mut String, variables: &[VariableRow]) {
    let _ = writeln!(out, "\nvariables\n");
    let mut rows = vec![row(["name", "value", "owner crate", "owner item"])];
    for variable in variables {
        rows.push(row([
            variable.name.clone(),
            (variable.value.as_ref())
                .map_or_else(|| "(no value)".to_owned(), |value| format!("{value:?}")),
            or_dash(variable.owner.as_ref().map(|owner| &owner.krate)),
            or_dash(variable.owner.as_ref().map(|owner| &owner.item)),
        ]));
    }
    table(out, &rows, &[]);
}

/// The size of every tool schema sent beside the prompt, in bytes and
/// tokens of its canonical JSON.
pub(super) fn explain_tools(out: &mut String, explained: &Explanation<'_>) {
    let _ = writeln!(out, "\ntools (sent beside the system prompt)\n");
    let mut rows = vec![row([
        "name",
        "description bytes",
        "parameters bytes",
        "schema bytes",
        "schema tokens",
    ])];
    for tool in &explained.tools {
        rows.push(row([
            tool.name.clone(),
            tool.description_bytes.to_string(),
            tool.parameters_bytes.to_string(),
            tool.schema.bytes.to_string(),
            tool.schema.tokens.to_string(),
        ]));
    }
    let total = explained.tools_size();
    rows.push(row([
        "total",
        "",
        "",
        &total.bytes.to_string(),
        &total.tokens.to_string(),
    ]));
    // Numeric: the sizes.
    table(out, &rows, &[1, 2, 3, 4]);
}

/// The runtime contexts: not part of the system prompt, sent as a message
/// at the conversation's tail when they change; each with what it renders
/// to now.
pub(super) fn explain_contexts(out: &mut String, contexts: &[ContextRow]) {
    let _ = writeln!(
        out,
        "\nruntime contexts (not in the system prompt: a message at the conversation's tail, \
         sent when it changes)\n"
    );
    if contexts.is_empty() {
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
    for context in contexts {
        rows.push(row([
            context.order.to_string(),
            context.name.clone(),
            or_dash(context.tool.as_ref()),
            context.owner.krate.clone(),
            context.owner.item.clone(),
            (context.bytes_now)
                .map_or_else(|| "does not render".to_owned(), |bytes| bytes.to_string()),
        ]));
    }
    // Numeric: order, bytes now.
    table(out, &rows, &[0, 5]);
}

/// The agent's context budget, and what the compaction request is told.
pub(super) fn explain_compaction(out: &mut String, compaction: &Compaction) {
    let _ = write!(out, "\ncontext budget: {}", compaction.budget);
    if compaction.on_request_only() {
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
    let Some(sections) = &compaction.sections else {
        let _ = writeln!(out, "(does not render)");
        return;
    };
    let mut rows = vec![row([
        "order",
        "section",
        "owner crate",
        "owner item",
        "bytes",
        "tokens",
    ])];
    for section in sections {
        rows.push(row([
            section.order.to_string(),
            section.name.clone(),
            section.owner.krate.clone(),
            section.owner.item.clone(),
            section.size.bytes.to_string(),
            section.size.tokens.to_string(),
        ]));
    }
    // Numeric: order, bytes, tokens.
    table(out, &rows, &[0, 4, 5]);
}

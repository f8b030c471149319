//! The renderer of `dsh prompt --format explain`: who owns each part of
//! the prompt, in bytes and tokens. (`--format json` is the host's dump,
//! `dsh_deployment::diff::write_dump`, which `dsh diff` reads back.)

mod mcp;
mod parts;

use std::fmt::Write as _;

use dsh_deployment::Problem;
use dsh_deployment::file::prompt_problems;
use dsh_deployment::measure::tokens::PromptTokens;
use dsh_deployment::reports::agent_prompt::AgentPrompt;
use dsh_deployment::reports::check::instruction_report;
use dsh_deployment::runtime;
use dsh_system_prompt::PromptAssembly;
use dsh_system_prompt::inspect::{render_prompt_with_spans, section_origins};

/// `--format explain`: the agent, its layers, its sections, instruction
/// files, variables, tools and contexts, its compaction and its servers.
pub(crate) fn explain(
    shown: &AgentPrompt,
    assembly: &PromptAssembly,
) -> Result<String, Vec<Problem>> {
    let AgentPrompt {
        deployment,
        agent,
        runtime,
        started,
        ..
    } = shown;
    let prompt = render_prompt_with_spans(assembly)
        .map_err(|errors| prompt_problems(deployment, agent, &errors))?;
    let tokens = PromptTokens::count(deployment.tokenizer_for(agent), &prompt, &assembly.tools);
    let scope = runtime::loop_agent(agent).scope().clone();
    let origins = section_origins(&runtime.prompt, &scope);
    let found = started.instructions.found();
    let instructions = parts::InstructionsShown {
        files: instruction_report::reports(found, Some((&prompt, &tokens))),
        left_out: instruction_report::left_out_report(found, Some((&prompt, &tokens))),
        skipped: found.skipped(),
        none: instruction_report::none_found(found, &runtime.instructions),
    };
    let mut out = String::new();
    parts::explain_agent(&mut out, deployment, agent, &prompt, &tokens);
    parts::explain_layers(&mut out, &scope, &origins);
    parts::explain(&mut out, assembly, &prompt, &tokens, &instructions);
    parts::explain_compaction(&mut out, &runtime.prompt, deployment.budget_for(agent));
    mcp::explain_servers(&mut out, runtime, assembly, &tokens);
    Ok(out)
}

pub(crate) fn row<const N: usize>(cells: [impl Into<String>; N]) -> Vec<String> {
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
pub(crate) fn table(out: &mut String, rows: &[Vec<String>], numeric: &[usize]) {
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

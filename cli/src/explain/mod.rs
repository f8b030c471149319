//! The renderer of `dsh prompt --format explain`: who owns each part of
//! the prompt, in bytes and tokens, laid out as tables. The facts are the
//! host's (`dsh_deployment::reports::explain`); `--format json` is the
//! host's dump (`dsh_deployment::reports::diff::write_dump`), which `dsh
//! diff` reads back.

mod mcp;
mod parts;

use std::fmt::Write as _;

use dsh_deployment::Problem;
use dsh_deployment::reports::agent_prompt::AgentPrompt;
use dsh_deployment::reports::explain::Explanation;
use dsh_system_prompt::PromptAssembly;

/// `--format explain`: the agent, its layers, its sections, instruction
/// files, variables, tools and contexts, its compaction and its servers,
/// as the host explains them ([`Explanation`]).
pub(crate) fn explain(
    shown: &AgentPrompt,
    assembly: &PromptAssembly,
) -> Result<String, Vec<Problem>> {
    let explained = Explanation::new(shown, assembly)?;
    let mut out = String::new();
    parts::explain_agent(&mut out, &explained);
    parts::explain_layers(&mut out, &explained.layers);
    parts::explain_sections(&mut out, &explained);
    parts::explain_instructions(&mut out, &explained.instructions);
    parts::explain_rules(&mut out, &explained.instructions);
    parts::explain_variables(&mut out, &explained.variables);
    parts::explain_tools(&mut out, &explained);
    parts::explain_contexts(&mut out, &explained.contexts);
    let sent = explained.before_any_message();
    let _ = writeln!(
        out,
        "\nsystem prompt and tools: {} bytes, {} tokens, sent before any message",
        sent.bytes, sent.tokens
    );
    parts::explain_compaction(&mut out, &explained.compaction);
    mcp::explain_servers(&mut out, &explained);
    Ok(out)
}

/// One row of a table, from cells that are text.
pub(crate) fn row<const N: usize>(cells: [impl Into<String>; N]) -> Vec<String> {
    cells.into_iter().map(Into::into).collect()
}

/// Writes `rows` as aligned columns, two spaces apart, with a rule under
/// the header row: the `numeric` columns (by index) aligned right, the
/// others left.
pub(crate) fn table(out: &mut String, rows: &[Vec<String>], numeric: &[usize]) {
    lay_out(out, rows, numeric, true);
}

/// Writes `rows` as aligned columns, two spaces apart, left aligned,
/// without a rule.
pub(crate) fn columns(out: &mut String, rows: &[Vec<String>]) {
    lay_out(out, rows, &[], false);
}

fn lay_out(out: &mut String, rows: &[Vec<String>], numeric: &[usize], rule: bool) {
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
        if index == 0 && rule {
            let rule: usize = widths.iter().sum::<usize>() + 2 * (columns - 1);
            let _ = writeln!(out, "{}", "-".repeat(rule));
        }
    }
}

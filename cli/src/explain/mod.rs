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
pub(crate) use dsh_deployment::reports::table::{columns, row, table};
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

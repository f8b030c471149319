//! `dsh prompt`: the system prompt of one agent, as text, explained
//! (`crate::explain`), or as the host's dump in JSON (`write_dump`, which
//! `dsh diff` reads back). The two last count tokens too
//! (`PromptTokens`); the text does not.

use std::io::IsTerminal;

use dsh_deployment::reports::agent_prompt::{AgentPrompt, ServerStart};
use dsh_deployment::reports::diff::write_dump;

use crate::args::{Format, PromptArgs};
use crate::commands::{Outcome, print, server_output, session_cwd};
use crate::diagnostics::Reporter;
use crate::explain;

pub(crate) fn run(args: &PromptArgs) -> Outcome {
    let cwd = session_cwd(&args.cwd)?;
    // The agent's MCP servers run while the prompt is assembled: their
    // tools and instructions are part of it (unless `--no-mcp`).
    let mcp = if args.no_mcp {
        ServerStart::Leave
    } else {
        ServerStart::Start(server_output())
    };
    let shown = AgentPrompt::load(
        args.target.deployment.config.as_deref(),
        args.target.agent.as_deref(),
        cwd.as_deref(),
        mcp,
    )?;
    Reporter::for_stderr().report(shown.server_failures());
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
        Format::Explain => print(&explain::explain(&shown, &shown.assemble())?),
        Format::Json => print(&write_dump(&shown, &shown.assemble())?),
    }
}

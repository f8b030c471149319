//! Prints the system prompt of an agent, byte for byte as `dsh prompt`
//! does: `cargo run -p dsh-deployment --example print_prompt -- --config
//! FILE [--agent ID]`.

#![allow(
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "a command line program: it prints the prompt, or what is wrong"
)]

use std::path::PathBuf;
use std::process::ExitCode;

use dsh_deployment::facts::cwd::{Relative, working_directory};
use dsh_deployment::reports::agent_prompt::{AgentPrompt, ServerStart};
use dsh_tool_mcp::ServerOutput;

fn main() -> ExitCode {
    match print_prompt() {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::FAILURE
        }
    }
}

fn print_prompt() -> Result<(), String> {
    let (mut config, mut agent) = (None, None);
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        match (flag.as_str(), args.next()) {
            ("--config", Some(file)) => config = Some(PathBuf::from(file)),
            ("--agent", Some(id)) => agent = Some(id),
            _ => return Err("usage: print_prompt [--config FILE] [--agent ID]".to_owned()),
        }
    }
    let cwd = working_directory(None, Relative::ToCurrent).map_err(|error| error.to_string())?;
    let said = |problems: Vec<dsh_deployment::Problem>| {
        let messages: Vec<&str> = problems.iter().map(|problem| problem.message()).collect();
        messages.join("\n")
    };
    // What the servers say (their stderr, their log messages) is shown
    // on stderr, as `dsh prompt` shows it.
    let output = ServerOutput::new(|line| eprintln!("{line}"));
    let shown = AgentPrompt::load(
        config.as_deref(),
        agent.as_deref(),
        Some(&cwd),
        ServerStart::Start(output),
    )
    .map_err(said)?;
    print!("{}", shown.render().map_err(said)?);
    Ok(())
}

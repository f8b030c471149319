//! `dsh`: see, check and run the system prompt of a deployment.
//!
//! - `dsh prompt` prints the full system prompt of an agent (`--format
//!   explain` attributes every byte to its owner, `--format json` prints the
//!   assembly);
//! - `dsh check` renders every agent of a deployment and reports every
//!   problem, pointing into the TOML file;
//! - `dsh run` runs an agent through the agent loop;
//! - `dsh acp` serves an agent to an editor over the Agent Client Protocol;
//! - `dsh sessions` lists (and deletes) the sessions the store recorded,
//!   which `dsh run --continue`/`--resume` and `session/load` bring back;
//! - `dsh diff` compares an agent's request prefix in two deployments or
//!   dumps, by owner, in tokens and in what it costs the cache.
//!
//! Exit status: 0 on success, 1 on a prompt, config or run error, 2 on a
//! usage error; `dsh diff` exits as `diff(1)` does: 0 the same, 1
//! different, 2 trouble.

mod acp;
mod args;
mod commands;
mod diagnostics;
mod explain;
#[cfg(test)]
mod property_tests;

mod terminal;

use std::process::ExitCode;

use clap::Parser;

use crate::args::{Cli, Command};
use {crate::diagnostics::Reporter, dsh_deployment::Problem};

fn main() -> ExitCode {
    // Usage errors exit here, with clap's status 2; `--help` with 0.
    let cli = Cli::parse();
    let reporter = Reporter::for_stderr();
    quiet_panics();
    let success = |()| ExitCode::SUCCESS;
    let outcome = std::panic::catch_unwind(|| match &cli.command {
        Command::Prompt(args) => commands::prompt::run(args).map(success),
        Command::Check(args) => commands::check::run(args).map(success),
        Command::Run(args) => commands::run::run(args).map(success),
        Command::Acp(args) => commands::acp::run(args).map(success),
        Command::Sessions(args) => commands::sessions::run(args).map(success),
        Command::Schema => commands::schema::run().map(success),
        Command::Diff(args) => commands::diff::run(args),
        Command::Mcp(args) => commands::mcp::run(args).map(success),
    })
    .unwrap_or_else(|_| {
        Err(vec![Problem::new(
            "dsh stopped on an internal error (a bug; the message is above)",
        )])
    });
    match outcome {
        Ok(status) => status,
        Err(problems) => {
            reporter.report(&problems);
            match cli.command {
                // Trouble, as diff(1) says it: 1 means "different".
                Command::Diff(_) => ExitCode::from(2),
                _ => ExitCode::FAILURE,
            }
        }
    }
}

/// A panic is a bug: report it in one line, without a backtrace dump.
fn quiet_panics() {
    std::panic::set_hook(Box::new(|info| {
        let message = dsh_tools::panic_message(info.payload());
        let place = info
            .location()
            .map(|location| format!(" at {}:{}", location.file(), location.line()))
            .unwrap_or_default();
        let line = format!("error: internal error{place}: {message}\n");
        let _ = std::io::Write::write_all(&mut std::io::stderr(), line.as_bytes());
    }));
}

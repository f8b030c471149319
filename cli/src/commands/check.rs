//! `dsh check`: load the deployment, render the prompt of every agent, of
//! every child it spawns and of every preset, and report every problem
//! found (`dsh_deployment::reports::check::check_deployment`) — also an agent whose
//! prompt and tools take more tokens than its `max_prompt_tokens`.

use dsh_deployment::reports::check::{WithServers, check_deployment};
use dsh_deployment::runtime::{self, Runtime};

use crate::args::{CheckArgs, CheckFormat};
use crate::commands::{Outcome, print, server_output, session_cwd};
use crate::diagnostics::Reporter;

pub(crate) fn run(args: &CheckArgs) -> Outcome {
    let deployment = runtime::load(args.deployment.config.as_deref())?;
    let runtime = Runtime::new(&deployment)?;
    runtime.show_servers_with(server_output());
    let cwd = session_cwd(&args.cwd)?;
    let servers = if args.no_mcp {
        WithServers::No
    } else {
        WithServers::Yes
    };
    let findings = check_deployment(&deployment, &runtime, cwd.as_deref(), servers)?;
    // Warnings are reported and do not fail the check.
    if !findings.warnings.is_empty() {
        Reporter::for_stderr().report(&findings.warnings);
    }
    if args.format == CheckFormat::Json {
        // Scripts read the servers' reports whether or not the check
        // passed; the problems go to stderr, and fail it.
        print(&format!("{}\n", findings.json()))?;
    }
    if !findings.problems.is_empty() {
        return Err(findings.problems);
    }
    if args.format == CheckFormat::Json {
        return Ok(());
    }
    let servers: String = (findings.servers.iter())
        .map(|server| format!("{}\n", server.line()))
        .collect();
    print(&format!(
        "{}: {} checked, every prompt renders\n{}\n{}\n{servers}",
        deployment.file.name(),
        findings.checked(),
        runtime.sandbox().on_this_machine(),
        runtime.environment.on_this_machine(),
    ))
}

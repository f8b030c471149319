//! `dsh check`'s part of MCP: start every server of the deployment, and
//! report each that fails, at its `[mcp.<name>]` table.

use crate::commands::async_runtime;
use dsh_deployment::Problem;
use dsh_deployment::file::Deployment;
use dsh_deployment::runtime::Runtime;
use dsh_deployment::runtime::mcp::{Which, start_deployment_servers};

/// Starts the deployment's servers into `runtime`, pushing every failure
/// (optional or required) and every unknown name of an allow-list onto
/// `problems`. The returned async runtime keeps the servers running.
pub(super) fn start(
    deployment: &Deployment,
    runtime: &Runtime,
    problems: &mut Vec<Problem>,
) -> Result<tokio::runtime::Runtime, Vec<Problem>> {
    let tokio = async_runtime()?;
    tokio.block_on(async { dsh_deployment::runtime::mcp::stop_servers_on_signals() });
    let started = tokio.block_on(start_deployment_servers(
        deployment,
        &runtime.mcp,
        Which::All,
    ));
    problems.extend(started.required_failures);
    problems.extend(started.optional_failures);
    Ok(tokio)
}

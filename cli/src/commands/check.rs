//! `dsh check`: load the deployment, render the prompt of every agent, of
//! every child it spawns and of every preset, and report every problem
//! found (`dsh_deployment::reports::check::check_deployment`) — also an agent whose
//! prompt and tools take more tokens than its `max_prompt_tokens`.

use dsh_deployment::reports::check::{Findings, WithServers, check_deployment};
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
        print(&format!("{}\n", json(&findings)))?;
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
        "{}: {} checked, every prompt renders\n{}\n{servers}",
        deployment.file.name(),
        checked(&findings),
        sandbox(runtime.sandbox()),
    ))
}

/// What `--format json` prints: whether the check passed, the counts, and
/// each MCP server's report.
fn json(findings: &Findings) -> serde_json::Value {
    serde_json::json!({
        "ok": findings.problems.is_empty(),
        "agents": findings.agents,
        "children": findings.children,
        "presets": findings.presets,
        "problems": findings.problems.len(),
        "warnings": findings.warnings.len(),
        "mcp_servers": findings.servers,
    })
}

/// The sandbox line: the deployment's mode, and what this machine's
/// kernel enforces of it.
fn sandbox(sandbox: &dsh_sandbox::Sandbox) -> String {
    let mode = sandbox.mode();
    if mode == dsh_sandbox::SandboxMode::FullAccess {
        return format!("sandbox: {mode} (commands and servers are not confined)");
    }
    let network = if sandbox.network() { "on" } else { "off" };
    let support = dsh_sandbox::support();
    let unenforced = if support.filesystem || !sandbox.required() {
        ""
    } else {
        "; every command will fail here: set `[sandbox] mode = \"full-access\"` or \
         `required = false`"
    };
    format!("sandbox: {mode}, network {network}; this kernel: {support}{unenforced}")
}

/// What was checked, in words: `2 agents and 1 child (1 preset)`.
fn checked(findings: &Findings) -> String {
    let plural = |count: usize, one: &str, many: &str| {
        format!("{count} {}", if count == 1 { one } else { many })
    };
    let agents = plural(findings.agents, "agent", "agents");
    let checked = match findings.children {
        0 => agents,
        children => format!("{agents} and {}", plural(children, "child", "children")),
    };
    match findings.presets {
        0 => checked,
        presets => format!("{checked} ({})", plural(presets, "preset", "presets")),
    }
}

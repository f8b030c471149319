//! The tools an agent sends, checked before a session pays for them: how
//! many (a provider refuses a request with more than it accepts), whether
//! each input schema is an object (model APIs take a tool's parameters as
//! one), how large each schema is (every request carries it), and whether
//! a deployment's tool instance takes the name of an MCP server's tool
//! (the assembly keeps the instance, and the server's tool is never seen).

use std::collections::HashSet;
use std::ops::Range;

use dsh_system_prompt::{PromptAssembly, ToolSchema};
use dsh_tool_mcp::selection_entry;

use crate::file::{AgentSpec, Deployment};
use crate::measure::canonical_request::tool_json;
use crate::problem::Problem;
use crate::runtime::Runtime;

/// The most tools one request may carry: OpenAI's chat completions accept
/// 128, and a request with more is refused before the model reads it.
pub const MAX_TOOLS: usize = 128;

/// Who a tool is, for a message: its name, and the MCP server it comes
/// from when it does.
fn tool_name(runtime: &Runtime, tool: &ToolSchema) -> String {
    match runtime.mcp.server_of_tool(None, &tool.name) {
        Some(server) => format!("tool `{}` of MCP server `{}`", tool.name, server.name()),
        None => format!("tool `{}`", tool.name),
    }
}

/// The place of the `[mcp.<name>]` table of the server of `tool`, if it
/// has one.
fn server_table(deployment: &Deployment, runtime: &Runtime, tool: &str) -> Option<Range<usize>> {
    let server = runtime.mcp.server_of_tool(None, tool)?;
    deployment
        .mcp
        .iter()
        .find(|spec| spec.config.name == server.name())
        .map(|spec| spec.span.clone())
}

/// The problems of the tools of `agent`'s `assembly`: too many, a schema
/// that is not an object, a schema over `max_tool_schema_bytes`. A tool's
/// own problem is said once, for the first agent that sends it (`seen`).
pub(super) fn tool_problems(
    deployment: &Deployment,
    runtime: &Runtime,
    agent: &AgentSpec,
    assembly: &PromptAssembly,
    seen: &mut HashSet<String>,
) -> Vec<Problem> {
    let mut problems = Vec::new();
    let count = assembly.tools.len();
    if count > MAX_TOOLS {
        problems.push(
            deployment
                .file
                .problem(format!(
                    "agent `{}` sends {count} tools, more than the {MAX_TOOLS} OpenAI's API \
                     accepts in one request",
                    agent.id.get_ref()
                ))
                .label(agent.id.span(), "this agent")
                .help(
                    "list fewer tools in its `tools`, or fewer of an MCP server's with the \
                     server's `tools = [...]` allow-list",
                ),
        );
    }
    for tool in &assembly.tools {
        if !seen.insert(tool.name.clone()) {
            continue;
        }
        let who = tool_name(runtime, tool);
        let server = server_table(deployment, runtime, &tool.name).map(|span| (span, "the server"));
        if tool.parameters.get("type").and_then(|kind| kind.as_str()) != Some("object") {
            let top = match tool.parameters.get("type") {
                Some(kind) => format!("`\"type\": {kind}`"),
                None => "no `\"type\"`".to_owned(),
            };
            problems.push(located(
                deployment,
                format!(
                    "the input schema of {who} is not an object: it has {top} at its top, \
                     where model APIs take `\"type\": \"object\"`"
                ),
                server.iter().cloned(),
                "a request that carries it is refused; leave the tool out with the server's \
                 `tools = [...]` allow-list, or fix the server",
            ));
        }
        let bytes = tool_json(tool).len();
        let max = deployment.max_tool_schema_bytes();
        if u64::try_from(bytes).is_ok_and(|bytes| bytes > max) {
            let limit = deployment
                .max_tool_schema_bytes
                .as_ref()
                .map(|set| (set.span(), "the limit"));
            problems.push(located(
                deployment,
                format!(
                    "the schema of {who} is {bytes} bytes, over the {max} of \
                     `max_tool_schema_bytes`: every request would carry it"
                ),
                server.iter().cloned().chain(limit),
                "leave the tool out with the server's `tools = [...]` allow-list, or raise \
                 `max_tool_schema_bytes` (a top-level key)",
            ));
        }
    }
    problems
}

/// A problem with `help`, labelled at each of `labels` in the deployment
/// file; without any, a problem of no place.
fn located<'l>(
    deployment: &Deployment,
    message: String,
    labels: impl IntoIterator<Item = (Range<usize>, &'l str)>,
    help: &str,
) -> Problem {
    let mut labels = labels.into_iter().peekable();
    let mut problem = if labels.peek().is_some() {
        deployment.file.problem(message)
    } else {
        Problem::new(message)
    };
    for (span, label) in labels {
        problem = problem.label(span, label);
    }
    problem.help(help)
}

/// The tool instances of `agent` (`[tools.<name>]`) whose names an MCP
/// server it lists also gives one of its tools: the assembly keeps the
/// instance, and the server's tool never reaches the model. Each pair is
/// said once (`seen`).
pub(super) fn hidden_mcp_tools(
    deployment: &Deployment,
    runtime: &Runtime,
    agent: &AgentSpec,
    seen: &mut HashSet<String>,
) -> Vec<Problem> {
    let listed = |entry: &str| agent.tools.iter().any(|tool| tool.get_ref() == entry);
    let mut problems = Vec::new();
    for server in runtime.mcp.deployment_servers() {
        if !listed(&selection_entry(server.name())) {
            continue;
        }
        for name in server.exposed_names() {
            let Some(instance) = deployment.tools.get(&name.exposed) else {
                continue;
            };
            if !listed(&name.exposed) || !seen.insert(name.exposed.clone()) {
                continue;
            }
            problems.push(
                deployment
                    .file
                    .problem(format!(
                        "tool instance `{}` hides tool `{}` of MCP server `{}`, which the model \
                         would see by the same name: agent `{}` gets the instance only",
                        name.exposed,
                        name.tool,
                        server.name(),
                        agent.id.get_ref()
                    ))
                    .label(instance.places.span(), "this instance")
                    .help(format!(
                        "rename the `[tools.{}]` instance, or leave `{}` out with the server's \
                         `tools = [...]` allow-list",
                        name.exposed, name.tool
                    )),
            );
        }
    }
    problems
}

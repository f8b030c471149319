//! Starting a deployment's MCP servers for a command, and stopping them
//! whatever way dsh ends.

use dsh_tool_mcp::{McpServer, McpServers, ServerConfig, selection_entry};

use crate::file::Deployment;
use crate::file::mcp::McpSpec;
use crate::problem::Problem;
use crate::runtime::Runtime;

/// What starting a deployment's servers came to.
#[derive(Debug, Default)]
pub struct Started {
    /// The failures of servers a session may go without, each located at
    /// its `[mcp.<name>]` table: to say once, and go on.
    pub optional_failures: Vec<Problem>,
    /// The failures of `required = true` servers: the command cannot go on.
    pub required_failures: Vec<Problem>,
    /// Each server that did not start, by name: its command or URL, and
    /// why (for `dsh check`'s report of each server).
    pub not_started: Vec<NotStarted>,
}

/// A server that did not start.
#[derive(Debug, Clone)]
pub struct NotStarted {
    /// Its name.
    pub name: String,
    /// Its command line or URL.
    pub origin: String,
    /// Why it did not start.
    pub message: String,
}

/// Which of a deployment's servers to start.
#[derive(Debug)]
pub(crate) enum Which<'a> {
    /// Every server (`dsh check`).
    All,
    /// The servers these agents list as `mcp:<name>`.
    ListedBy(Vec<&'a crate::file::AgentSpec>),
}

/// Starts the servers `which` picks, all at once, and adds each that
/// started to `servers`: a stdio server whose table gives no `cwd` in
/// `cwd`, the front end's working directory (else dsh's). Watches the signals that end dsh from then on, so
/// that no server outlives it.
pub(crate) async fn start_deployment_servers(
    deployment: &Deployment,
    runtime: &Runtime,
    which: Which<'_>,
    cwd: Option<&std::path::Path>,
) -> Started {
    let servers = &runtime.mcp;
    let picked: Vec<&McpSpec> = deployment
        .mcp
        .iter()
        .filter(|spec| match &which {
            Which::All => true,
            Which::ListedBy(agents) => agents.iter().any(|agent| {
                let entry = selection_entry(&spec.config.name);
                agent.tools.iter().any(|tool| *tool.get_ref() == entry)
            }),
        })
        .collect();
    let mut started = Started::default();
    if picked.is_empty() {
        return started;
    }
    let mut configs: Vec<(&McpSpec, ServerConfig)> = Vec::new();
    for spec in picked {
        match spec.server_config(&deployment.file) {
            Ok(config) => {
                let config = match cwd {
                    Some(cwd) => config.with_default_cwd(cwd),
                    None => config,
                };
                configs.push((spec, runtime.under_policy(config, &spec.rules)));
            }
            Err(problem) => failed(&mut started, spec, problem),
        }
    }
    let http = match dsh_tool_mcp::http_client() {
        Ok(http) => http,
        Err(error) => {
            started.required_failures.push(Problem::new(format!(
                "the HTTP client for MCP servers cannot be built: {error}"
            )));
            return started;
        }
    };
    let just_configs: Vec<ServerConfig> =
        configs.iter().map(|(_, config)| config.clone()).collect();
    let outcomes = McpServers::start_all(&just_configs, &http).await;
    for ((spec, _), outcome) in configs.into_iter().zip(outcomes) {
        match outcome {
            Ok(server) => {
                for problem in unknown_allowed(deployment, spec, &server) {
                    started.optional_failures.push(problem);
                }
                servers.add(server);
            }
            Err(error) => {
                started.not_started.push(NotStarted {
                    name: spec.config.name.clone(),
                    origin: spec.config.origin(),
                    message: error.to_string(),
                });
                let problem = deployment
                    .file
                    .problem(error.to_string())
                    .label(spec.span.clone(), "this server")
                    .help(if spec.config.required {
                        "the server is `required`: dsh does not start a session without it"
                    } else {
                        "sessions go on without it (`required = false`)"
                    });
                failed(&mut started, spec, problem);
            }
        }
    }
    started
}

fn failed(started: &mut Started, spec: &McpSpec, problem: Problem) {
    if spec.config.required {
        started.required_failures.push(problem);
    } else {
        started.optional_failures.push(problem);
    }
}

/// Each name of the allow-list the server does not have, answered with
/// the names the server does have.
fn unknown_allowed(deployment: &Deployment, spec: &McpSpec, server: &McpServer) -> Vec<Problem> {
    let unknown = server.unknown_allowed_tools();
    let names = server.listed_tools();
    spec.allowed
        .iter()
        .filter(|allowed| unknown.contains(allowed.get_ref()))
        .map(|allowed| {
            deployment
                .file
                .problem(format!(
                    "MCP server `{}` has no tool `{}`",
                    spec.config.name,
                    allowed.get_ref()
                ))
                .label(allowed.span(), "not one of its tools")
                .help(tools_hint(allowed.get_ref(), &names))
        })
        .collect()
}

/// How many of a server's tools a hint names; the rest are counted.
const HINTED_TOOLS: usize = 20;

/// The help for an allow-list entry `wrong` that is none of the server's
/// tools `names` (the server's own names, in its order): the closest
/// name first, when one is close enough to be meant, then the others,
/// at most [`HINTED_TOOLS`] of them.
fn tools_hint(wrong: &str, names: &[String]) -> String {
    if names.is_empty() {
        return "the server lists no tools".to_owned();
    }
    let closest = dsh_system_prompt::suggestion::closest(wrong, names);
    let ordered: Vec<&str> = closest
        .iter()
        .map(|name| name.as_str())
        .chain(
            names
                .iter()
                .map(String::as_str)
                .filter(|name| closest.is_none_or(|closest| closest != name)),
        )
        .collect();
    let shown = dsh_system_prompt::template::quoted_list(ordered.iter().take(HINTED_TOOLS));
    let more = match ordered.len().saturating_sub(HINTED_TOOLS) {
        0 => String::new(),
        more => format!(" and {more} more"),
    };
    let list = format!("its tools are {shown}{more}");
    match closest {
        Some(closest) => format!("did you mean `{closest}`? {list}"),
        None => list,
    }
}

/// For a command without signal handling of its own (`dsh check`, `dsh
/// prompt`; `dsh run` and `dsh acp` end gracefully on their signals and
/// stop their servers on the way out): from its first server on, the
/// signals that end dsh (`SIGTERM`, `SIGHUP`, `SIGQUIT`, and Ctrl-C's
/// `SIGINT`) first kill every server's process group — the servers run in
/// groups of their own, which no signal to dsh reaches — and then end dsh
/// as the signal would (exit status 128 and the signal's number).
pub(crate) fn stop_servers_on_signals() {
    use std::sync::Once;
    use tokio::signal::unix::{SignalKind, signal};
    static WATCHING: Once = Once::new();
    WATCHING.call_once(|| {
        for (kind, number) in [
            (SignalKind::terminate(), 15),
            (SignalKind::hangup(), 1),
            (SignalKind::quit(), 3),
            (SignalKind::interrupt(), 2),
        ] {
            let Ok(mut stream) = signal(kind) else {
                continue;
            };
            tokio::spawn(async move {
                if stream.recv().await.is_some() {
                    dsh_tool_mcp::stop_all_servers();
                    std::process::exit(128 + number);
                }
            });
        }
    });
}

/// The servers `which` picks, started for a command without a loop of its
/// own (`dsh prompt`, `dsh check`), with the signal watch that stops them
/// (`stop_servers_on_signals`): the returned [`Servers`] keep them
/// running, and dropping it stops them; [`Started`] says which failed.
pub(crate) fn start_for_command(
    deployment: &Deployment,
    runtime: &Runtime,
    which: Which<'_>,
) -> Result<(Servers, Started), Vec<Problem>> {
    // The servers see what a session would advertise (sampling, forms,
    // URLs), so they offer what they offer a session: a tool offered only
    // to a client that samples is there for `check` to find.
    if !runtime.answers_servers() {
        runtime.answer_servers_with(dsh_tool_mcp::SharedAsker(std::sync::Arc::new(CommandAsker)));
    }
    let tokio = super::async_runtime()?;
    tokio.block_on(async { stop_servers_on_signals() });
    let started = tokio.block_on(start_deployment_servers(deployment, runtime, which, None));
    let servers = Servers {
        tokio,
        servers: runtime.mcp.clone(),
    };
    Ok((servers, started))
}

/// Servers running for a command, on their async runtime; stopped when
/// dropped.
#[derive(Debug)]
pub(crate) struct Servers {
    tokio: tokio::runtime::Runtime,
    servers: McpServers,
}

impl Servers {
    /// Each deployment server's tools, as listed at its start and as
    /// listed once more now, asked of the server itself, by its name:
    /// what `dsh check` compares to find a server whose order changes.
    /// A server whose second list fails is left out (its calls will say
    /// what is wrong).
    pub(crate) fn listed_twice(&self) -> Vec<(String, Vec<String>, Vec<String>)> {
        self.tokio.block_on(async {
            let mut twice = Vec::new();
            for server in self.servers.deployment_servers() {
                if let Ok(again) = server.list_again().await {
                    twice.push((server.name().to_owned(), server.listed_tools(), again));
                }
            }
            twice
        })
    }
}

impl Drop for Servers {
    fn drop(&mut self) {
        self.tokio.block_on(self.servers.shutdown());
    }
}

/// The trace's namer of a tool's MCP server: the deployment server whose
/// prefix (`<server>__`) the tool has — a server name has no `__`, so the
/// prefix is exact — even for a tool the server no longer lists.
pub(crate) fn tool_server(servers: &McpServers) -> crate::measure::trace::ToolServer {
    let servers = servers.clone();
    Box::new(move |tool: &str| {
        servers
            .deployment_servers()
            .iter()
            .map(|server| server.name().to_owned())
            .find(|name| {
                tool.strip_prefix(name.as_str())
                    .is_some_and(|rest| rest.starts_with(dsh_tool_mcp::SEPARATOR))
            })
    })
}

/// What answers the servers a command without a session starts (`dsh
/// check`, `dsh prompt`): it advertises what a session's asker may
/// (sampling, both kinds of elicitation), so a server offers the same
/// tools, and refuses every request, saying why: no person is there.
struct CommandAsker;

#[dsh_agent_loop::async_trait]
impl dsh_tool_mcp::Asker for CommandAsker {
    fn samples(&self) -> bool {
        true
    }

    fn elicits(&self) -> dsh_tool_mcp::Elicits {
        dsh_tool_mcp::Elicits::ALL
    }

    async fn sample(
        &self,
        _request: dsh_tool_mcp::SamplingRequest,
    ) -> Result<dsh_tool_mcp::Sampled, dsh_tool_mcp::AskError> {
        Err(dsh_tool_mcp::AskError::Refused(
            "this dsh command starts servers only to see what they offer; no session is \
             there to answer a sampling request"
                .to_owned(),
        ))
    }

    async fn elicit(&self, _request: dsh_tool_mcp::Elicitation) -> dsh_tool_mcp::ElicitAnswer {
        dsh_tool_mcp::ElicitAnswer::Decline
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(names: &[&str]) -> Vec<String> {
        names.iter().map(|name| (*name).to_owned()).collect()
    }

    #[test]
    fn a_misspelled_tool_is_answered_with_the_servers_names_closest_first() {
        let tools = names(&["echo", "search", "fetch_page"]);
        assert_eq!(
            tools_hint("serch", &tools),
            "did you mean `search`? its tools are `search`, `echo`, `fetch_page`"
        );
        assert_eq!(
            tools_hint("zzz", &tools),
            "its tools are `echo`, `search`, `fetch_page`"
        );
        assert_eq!(tools_hint("zzz", &[]), "the server lists no tools");
        let many: Vec<String> = (0..25).map(|n| format!("tool{n}")).collect();
        let hint = tools_hint("zzz", &many);
        assert!(hint.ends_with("`tool19` and 5 more"), "{hint}");
    }
}

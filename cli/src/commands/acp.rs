//! `dsh acp`: serve an agent of the deployment to an editor over the Agent
//! Client Protocol, on stdin and stdout.
//!
//! stdout carries protocol messages and nothing else; problems before the
//! server starts go to stderr, like every command's.
//!
//! The editor closing stdin, `SIGTERM` and `SIGHUP` all end the server the
//! same way (`crate::acp::transport`, `crate::acp::shutdown`): running
//! turns are cancelled and answer `cancelled`, the processes they started
//! are stopped, and dsh exits with status 0.

use agent_client_protocol::ConnectTo;
use dsh_agent_loop::AgentLoop;
use dsh_system_prompt::render_prompt;
use dsh_tool_subagent::AcpProvider;
use tokio_util::sync::CancellationToken;

use crate::acp::transport::StdioTransport;
use crate::acp::{AcpMcp, Server};
use crate::args::AcpArgs;
use crate::commands::{Outcome, async_runtime, command_line_cwd};
use dsh_deployment::Problem;
use dsh_deployment::adapter;
use dsh_deployment::check::prompt_problems::prompt_problems;
use dsh_deployment::host::signals::EndingSignals;
use dsh_deployment::host::store;
use dsh_deployment::runtime;

pub(crate) fn run(args: &AcpArgs) -> Outcome {
    let (deployment, agent, runtime) = &runtime::load_agent(
        args.target.deployment.config.as_deref(),
        args.target.agent.as_deref(),
    )?;

    // Each session brings its own `cwd`; a persona that does not render
    // with one would fail every session: say so now, with the place in the
    // file, before an editor connects.
    // Instruction files are each session's own, read when it starts.
    let bare = runtime::Runtime::without_instructions(Some(&command_line_cwd(None)?));
    let assembly = runtime.assemble(agent, &bare);
    if let Err(errors) = render_prompt(&assembly) {
        return Err(prompt_problems(deployment, agent, &errors));
    }

    let model = adapter::for_running(deployment, args.record_requests.as_deref())
        .map_err(|problem| vec![problem])?;
    let recording = store::open(deployment, args.store.no_store)
        .map_err(|problem| vec![problem])?
        .map(|store| store::Recording::new(store, deployment, agent));
    let agent_loop = AgentLoop::new(runtime.prompt.clone(), runtime.tools.clone(), model);
    let tokio = async_runtime()?;
    // Listening before any server starts: a signal that comes while they
    // start ends dsh the gentle way, which stops them too.
    let mut signals = {
        let _runtime = tokio.enter();
        EndingSignals::listen()?
    };
    // The agent's deployment servers start once, for every session.
    let started = tokio.block_on(runtime::mcp::start_deployment_servers(
        deployment,
        &runtime.mcp,
        runtime::mcp::Which::ListedBy(vec![agent]),
    ));
    let said = |problems: Vec<Problem>| problems.iter().map(|p| p.message().to_owned()).collect();
    let mcp = AcpMcp {
        servers: runtime.mcp.clone(),
        optional_failures: said(started.optional_failures),
        required_failures: said(started.required_failures),
    };
    let server = Server::new(
        agent_loop,
        runtime::loop_agent(agent).with_budget(deployment.budget_for(agent)),
        deployment.ask_first.clone(),
        mcp,
        deployment.instructions.clone(),
        recording,
    );

    let served = tokio.block_on(async {
        let stop = CancellationToken::new();
        tokio::spawn({
            let stop = stop.clone();
            async move {
                signals.recv().await;
                stop.cancel();
            }
        });
        let winding = server.clone();
        let transport =
            StdioTransport::new(stop).on_input_end(async move || winding.wind_down().await);
        let served = server.agent().connect_to(transport).await;
        // A connection that failed dropped its turns: their commands were
        // killed with them, and their child agents are being stopped.
        AcpProvider::wait_for_children(AcpProvider::STOP_GRACE).await;
        // Every MCP server, the deployment's and the sessions', ends with dsh.
        server.stop_mcp_servers().await;
        served.map_err(|error| {
            vec![Problem::new(format!(
                "the ACP connection failed: {}",
                error.message
            ))]
        })
    });
    // Reading stdin blocks a thread that cannot be interrupted; do not wait
    // for it.
    tokio.shutdown_background();
    served
}

//! `dsh acp`: serve an agent of the deployment to an editor over the Agent
//! Client Protocol, on stdin and stdout.
//!
//! stdout carries protocol messages and nothing else; problems before the
//! server starts go to stderr, like every command's.

use agent_client_protocol::{ConnectTo, Stdio};
use dsh_agent_loop::AgentLoop;
use dsh_system_prompt::render_prompt;

use crate::acp::Server;
use crate::adapter;
use crate::args::AcpArgs;
use crate::commands::{Outcome, absolute_cwd, async_runtime};
use crate::diagnostics::Problem;
use crate::prompt_problems::prompt_problems;
use crate::runtime;
use crate::store;

pub(crate) fn run(args: &AcpArgs) -> Outcome {
    let (deployment, agent, runtime) = &runtime::load_agent(&args.target)?;

    // Each session brings its own `cwd`; a persona that does not render
    // with one would fail every session: say so now, with the place in the
    // file, before an editor connects.
    // Instruction files are each session's own, read when it starts.
    let bare = runtime::Runtime::without_instructions(Some(&absolute_cwd(None)?));
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
    let server = Server::new(
        agent_loop,
        runtime::loop_agent(agent),
        deployment.ask_first.clone(),
        deployment.instructions.clone(),
        recording,
    );

    let tokio = async_runtime()?;
    let served = tokio.block_on(server.agent().connect_to(Stdio::new()));
    // The client closed stdin: its turns are over. A turn that ran a
    // subagent over ACP leaves that child a moment to stop its own work.
    if server.cancel_all() {
        tokio.block_on(tokio::time::sleep(AgentLoop::DEFAULT_CANCEL_GRACE));
    }
    // Reading stdin blocks a thread that cannot be interrupted; do not wait
    // for it.
    tokio.shutdown_background();
    served.map_err(|error| {
        vec![Problem::new(format!(
            "the ACP connection failed: {}",
            error.message
        ))]
    })
}

//! `dsh acp`: serve an agent of the deployment to an editor over the Agent
//! Client Protocol, on stdin and stdout.
//!
//! stdout carries protocol messages and nothing else; problems before the
//! server starts go to stderr, like every command's.
//!
//! The editor closing stdin, `SIGTERM`, `SIGHUP` and `SIGINT` all end the
//! server the same way (`crate::acp::transport`, `crate::acp::shutdown`):
//! running turns are cancelled and answer `cancelled`, the processes they
//! started are stopped, and dsh exits with status 0. A signal while the
//! deployment's MCP servers start ends dsh at once, with the signal's
//! status (the host's rule).

use std::sync::Arc;

use agent_client_protocol::ConnectTo;
use dsh_deployment::Problem;
use dsh_deployment::host::Host;
use dsh_deployment::session::Sessions;
use tokio_util::sync::CancellationToken;

use crate::acp::transport::StdioTransport;
use crate::acp::{AcpMcp, Server};
use crate::args::AcpArgs;
use crate::commands::{Outcome, command_line_cwd, server_output};

pub(crate) fn run(args: &AcpArgs) -> Outcome {
    let options = args.host.options();
    // Each session brings its own `cwd`: the prompt is checked in the
    // current directory, before an editor connects.
    let host = Arc::new(Host::load(&options, &command_line_cwd(None)?)?);
    // The servers' sampling and elicitation go to the editor: until it
    // says which it shows, both kinds.
    let elicits = dsh_tool_mcp::Elicits::ALL;
    let sessions = Sessions::new(Arc::clone(&host), Server::reach(elicits));
    // What they say goes to stderr: stdout is the protocol's.
    sessions.show_servers_with(server_output());
    let served = host.serve(async |started, mut signals| {
        let said =
            |problems: Vec<Problem>| problems.iter().map(|p| p.message().to_owned()).collect();
        let mcp = AcpMcp {
            optional_failures: said(started.optional_failures),
            required_failures: said(started.required_failures),
        };
        let server = Server::new(sessions, mcp);
        let stop = CancellationToken::new();
        tokio::spawn({
            let stop = stop.clone();
            async move {
                // Ctrl-C has no turn of its own to cancel here: it ends
                // the server like the other signals.
                signals.recv_or_interrupt().await;
                stop.cancel();
            }
        });
        let winding = server.clone();
        let transport =
            StdioTransport::new(stop).on_input_end(async move || winding.wind_down().await);
        // A connection that failed dropped its turns: their commands were
        // killed with them, and the host stops their child agents and
        // every MCP server, the deployment's and the sessions'.
        server.agent().connect_to(transport).await.map_err(|error| {
            vec![Problem::new(format!(
                "the ACP connection failed: {}",
                error.message
            ))]
        })
    });
    host.finish(served, None).1
}

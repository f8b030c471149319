//! [`AgentPrompt`]: the system prompt of one agent as a session in a
//! working directory gets it — what `dsh prompt` prints, and what a
//! program that embeds dsh shows.

use std::path::Path;

use dsh_system_prompt::{PromptAssembly, render_prompt};

use crate::file::{AgentSpec, Deployment, prompt_problems};
use crate::problem::Problem;
use crate::runtime::mcp::{self, Servers, Which};
use crate::runtime::{self, Runtime, StartedSession};

/// One agent of a deployment, loaded, with a session started in its
/// working directory (its instruction files read) and, unless left out,
/// the agent's MCP servers running, so their tools and instructions are
/// part of the prompt. Dropping it stops the servers.
///
/// ```
/// use dsh_deployment::reports::agent_prompt::{AgentPrompt, ServerStart};
/// use dsh_tool_mcp::ServerOutput;
///
/// // What the servers say is discarded: a front end shows it instead.
/// let mcp = ServerStart::Start(ServerOutput::discarded());
/// let shown = AgentPrompt::load(None, None, Some(std::path::Path::new("/")), mcp)
///     .expect("the embedded deployment loads");
/// let prompt = shown.render().expect("its prompt renders");
/// assert!(prompt.starts_with("You are dsh"));
/// ```
#[derive(Debug)]
pub struct AgentPrompt {
    /// The checked deployment file.
    pub deployment: Deployment,
    /// The agent shown.
    pub agent: AgentSpec,
    /// The deployment's registries.
    pub runtime: Runtime,
    /// The session the prompt is a prompt of, with its instruction files.
    pub started: StartedSession,
    /// The optional servers that failed to start.
    server_failures: Vec<Problem>,
    /// The agent's servers, running while this lives.
    _servers: Option<Servers>,
}

/// Whether an [`AgentPrompt`] starts the agent's MCP servers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerStart {
    /// Start them: their tools and instructions are in the prompt; what
    /// they say for the person (their stderr, their log messages) goes to
    /// the output.
    Start(dsh_tool_mcp::ServerOutput),
    /// Leave them unstarted (`--no-mcp`): the prompt is shown without
    /// their parts.
    Leave,
}

impl AgentPrompt {
    /// Loads the deployment file at `config` (`None`: the embedded coding
    /// agent) and the agent `agent` names (`None`: its first), starts its
    /// MCP servers (unless `mcp` says to leave them) and a session in
    /// `cwd` (`None`: a session without a working directory).
    pub fn load(
        config: Option<&Path>,
        agent: Option<&str>,
        cwd: Option<&Path>,
        mcp: ServerStart,
    ) -> Result<Self, Vec<Problem>> {
        let (deployment, agent, runtime) = runtime::load_agent(config, agent)?;
        let listed = (agent.tools.iter()).any(|tool| tool.get_ref().starts_with("mcp:"));
        let (servers, server_failures) = match mcp {
            ServerStart::Start(output) if listed => {
                runtime.show_servers_with(output);
                let which = Which::ListedBy(vec![&agent]);
                let (servers, started) = mcp::start_for_command(&deployment, &runtime, which)?;
                if !started.required_failures.is_empty() {
                    return Err(started.required_failures);
                }
                (Some(servers), started.optional_failures)
            }
            ServerStart::Start(_) | ServerStart::Leave => (None, Vec::new()),
        };
        let started = runtime.start_session(cwd)?;
        Ok(Self {
            deployment,
            agent,
            runtime,
            started,
            server_failures,
            _servers: servers,
        })
    }

    /// The optional MCP servers that failed to start: the prompt is shown
    /// without them, and a front end says so.
    pub fn server_failures(&self) -> &[Problem] {
        &self.server_failures
    }

    /// The agent's assembly in the session, as the loop's first step
    /// assembles it.
    pub fn assemble(&self) -> PromptAssembly {
        self.runtime.assemble(&self.agent, &self.started)
    }

    /// The system prompt, byte for byte as the loop sends it; its problems
    /// located in the deployment file when it does not render.
    pub fn render(&self) -> Result<String, Vec<Problem>> {
        render_prompt(&self.assemble())
            .map_err(|errors| prompt_problems(&self.deployment, &self.agent, &errors))
    }
}

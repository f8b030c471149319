//! [`Host`]: one agent of a deployment, hosted for a front end. `dsh run`
//! (a terminal) and `dsh acp` (an editor) both load through it, start
//! their sessions through it, and run on [`Host::serve`], so they differ
//! only in how they talk to a person.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use dsh_agent_loop::{Agent, AgentLoop, LoopObserver, ModelAdapter, Session};
use dsh_session_store::RequestPrefix;
use dsh_session_store::StoreError;
use dsh_system_prompt::render_prompt;
use dsh_tool_subagent::AcpProvider;

use super::signals::{EndingSignals, end_now};
use super::store::{self, Recorded, Recording};
use crate::adapter;
use crate::facts::instructions::SessionInstructions;
use crate::file::{AgentSpec, Deployment, check_output, prompt_problems};
use crate::measure::trace::{Counting, Summary, Trace};
use crate::policy::approval::ApprovalPolicy;
use crate::policy::modes::{self, Mode, ModeSwitch};
use crate::policy::sampling::Sampler;
use crate::problem::Problem;
use crate::runtime::mcp::{self, Started, Which};
use crate::runtime::{self, Runtime, async_runtime};

/// What a front end asks of its host: the deployment's command-line
/// options every front end shares.
#[derive(Debug, Clone, Default)]
pub struct HostOptions {
    /// The deployment file (`--config`); `None`: the embedded coding agent.
    pub config: Option<PathBuf>,
    /// The agent, or `<agent>/<instance>` for a child; `None`: the first.
    pub agent: Option<String>,
    /// Records no session, whatever the deployment says (`--no-store`).
    pub no_store: bool,
    /// Appends every request and answer to this file
    /// (`--record-requests`).
    pub record_requests: Option<PathBuf>,
    /// Writes one JSON line per request to this file (`--trace`).
    pub trace: Option<PathBuf>,
    /// Runs commands and servers in this sandbox mode, whatever the
    /// deployment says (`--sandbox`).
    pub sandbox: Option<dsh_sandbox::SandboxMode>,
}

/// One agent of a deployment, loaded and checked, with its registries,
/// its model adapter, its session store and its trace.
pub struct Host {
    /// The checked deployment file.
    pub deployment: Deployment,
    /// The agent hosted.
    pub agent: AgentSpec,
    /// The deployment's registries.
    pub runtime: Runtime,
    loop_agent: dsh_agent_loop::Agent,
    model: Arc<dyn ModelAdapter>,
    recording: Option<Recording>,
    trace: Arc<Trace>,
    /// The front end's working directory.
    cwd: std::path::PathBuf,
}

impl std::fmt::Debug for Host {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Host")
            .field("agent", &self.agent.id.get_ref())
            .field("recording", &self.recording)
            .field("trace", &self.trace)
            .finish_non_exhaustive()
    }
}

impl Host {
    /// Loads the deployment and the agent `options` name, builds the
    /// registries, and checks that the agent's prompt renders in `cwd`,
    /// the front end's working directory (a persona that does not would fail every turn: it is
    /// said now, with its place in the file, before the model is
    /// contacted); then builds the model adapter, opens the store and the
    /// trace. Instruction files are each session's own: the check reads
    /// none. The deployment's stdio MCP servers run in `cwd` unless their
    /// table says where.
    pub fn load(options: &HostOptions, cwd: &Path) -> Result<Self, Vec<Problem>> {
        let (deployment, agent, mut runtime) =
            runtime::load_agent(options.config.as_deref(), options.agent.as_deref())?;
        if let Some(mode) = options.sandbox {
            runtime.force_sandbox(mode);
        }
        let bare = Runtime::without_instructions(Some(cwd));
        if let Err(errors) = render_prompt(&runtime.assemble(&agent, &bare)) {
            return Err(prompt_problems(&deployment, &agent, &errors));
        }
        let model = adapter::for_running(&deployment, options.record_requests.as_deref())
            .map_err(|problem| vec![problem])?;
        let recording = store::open(&deployment, options.no_store)
            .map_err(|problem| vec![problem])?
            .map(|store| Recording::new(store, &deployment, &agent));
        let trace = match &options.trace {
            Some(path) => {
                check_output(&deployment, path, "--trace").map_err(|problem| vec![problem])?;
                Trace::to_file(path, deployment.tokenizers).map_err(|problem| vec![problem])?
            }
            None => Trace::summary_only(Counting::Bytes),
        }
        .with_tool_server(mcp::tool_server(&runtime.mcp));
        let loop_agent = runtime
            .loop_agent(&agent)
            .with_budget(deployment.budget_for(&agent));
        let trace = Arc::new(trace);
        Ok(Self {
            deployment,
            agent,
            runtime,
            loop_agent,
            model,
            recording,
            trace,
            cwd: cwd.to_path_buf(),
        })
    }

    /// The agent loop's agent: the hosted agent, with its context budget.
    pub fn loop_agent(&self) -> &dsh_agent_loop::Agent {
        &self.loop_agent
    }

    /// Where sessions are recorded; `None` with the store off.
    pub fn recording(&self) -> Option<&Recording> {
        self.recording.as_ref()
    }

    /// The mode a session starts in: the one of the deployment's sandbox
    /// (`--sandbox`, `[sandbox] mode`).
    pub fn start_mode(&self) -> &'static Mode {
        modes::default_mode(self.runtime.sandbox_for(&self.agent).mode())
    }

    /// The most a person's mode switch may grant: `--sandbox` over the
    /// agent's `sandbox` over `[sandbox] mode` as written (every mode
    /// where none is set). A mode whose sandbox allows more is neither
    /// offered nor taken.
    pub fn ceiling(&self) -> dsh_sandbox::SandboxMode {
        self.runtime.ceiling_for(&self.agent)
    }

    /// The models a person may pick for a session: `[adapter] models`,
    /// the agent's own model first, or that alone.
    pub fn models(&self) -> Vec<String> {
        let own = self.loop_agent.model().to_owned();
        let listed = self.deployment.adapter.models().iter();
        let mut models = vec![own.clone()];
        models.extend(
            listed
                .map(|model| model.get_ref().clone())
                .filter(|m| *m != own),
        );
        models
    }

    /// The reasoning efforts a person may pick for a session
    /// (`[adapter.openai] efforts`, the first the default); none where the
    /// API has no such level.
    pub fn efforts(&self) -> Vec<String> {
        (self.deployment.adapter.efforts().iter())
            .map(|effort| effort.get_ref().clone())
            .collect()
    }

    /// The agent a session switched to `mode`, `model` and `effort` runs:
    /// `model` is its `<<model>>` and what requests name; `effort`, one of
    /// [`efforts`](Self::efforts), how much it reasons; a mode other than
    /// the one sessions start in confines its tools by the mode's sandbox
    /// and is said at the conversation's tail, its system prompt
    /// unchanged. `Err` says the model or the effort is not one there is.
    pub fn agent_for(
        &self,
        mode: &'static Mode,
        model: &str,
        effort: Option<&str>,
    ) -> Result<Agent, String> {
        let efforts = self.efforts();
        if let Some(effort) = effort
            && !efforts.iter().any(|known| known == effort)
        {
            return Err(if efforts.is_empty() {
                format!(
                    "`{effort}` cannot be picked: the deployment offers no reasoning efforts \
                     (`[adapter.openai] efforts` lists them)"
                )
            } else {
                format!(
                    "`{effort}` is no effort of this deployment; the efforts are {}",
                    efforts.join(", ")
                )
            });
        }
        let models = self.models();
        if !models.iter().any(|known| known == model) {
            return Err(format!(
                "`{model}` is not a model of this deployment; the models are {} \
                 (`[adapter] models` lists them)",
                models.join(", ")
            ));
        }
        let mut agent = if model == self.loop_agent.model() {
            self.loop_agent.clone()
        } else {
            let mut spec = self.agent.clone();
            spec.model = toml::Spanned::new(spec.model.span(), model.to_owned());
            (self.runtime.loop_agent(&spec)).with_budget(self.deployment.budget_for(&spec))
        };
        if mode != self.start_mode() {
            let sandbox = self.runtime.sandbox().in_mode(mode.sandbox);
            agent = agent.with_tool_fact(sandbox).with_fact(ModeSwitch(mode));
        }
        Ok(agent.with_effort(effort.map(str::to_owned)))
    }

    /// What needs a person's yes before it runs: the tables that ask, and
    /// the MCP servers' tools by their tables and annotations.
    pub fn approval_policy(&self) -> ApprovalPolicy {
        ApprovalPolicy::new(
            self.deployment.ask_first.clone(),
            self.runtime.mcp.clone(),
            self.runtime.tools.clone(),
        )
    }

    /// Answers the MCP servers' sampling requests with the host's model
    /// adapter, counted in its trace.
    pub fn sampler(&self) -> Sampler {
        Sampler::new(
            Arc::clone(&self.model),
            self.loop_agent.model().to_owned(),
            Arc::clone(&self.trace),
        )
    }

    /// The trace of every request of every session, for a front end that
    /// resumes a session (its recorded prefix) or records prefixes.
    pub fn trace(&self) -> &Arc<Trace> {
        &self.trace
    }

    /// The agent loop on the deployment's registries and model, with the
    /// trace its first observer: every request of every session is
    /// measured, the front end's own observers added after it.
    pub fn agent_loop(&self) -> AgentLoop {
        AgentLoop::new(
            self.runtime.prompt.clone(),
            self.runtime.tools.clone(),
            Arc::clone(&self.model),
        )
        .observed_by(Arc::clone(&self.trace) as Arc<dyn LoopObserver>)
    }

    /// A new session in `cwd`, recorded when the store is on: the loop's
    /// session, and the store's side of it ([`store::new_session`]).
    pub fn new_session(&self, cwd: &Path) -> Result<(Session, Option<Recorded>), StoreError> {
        store::new_session(self.recording.as_ref(), cwd)
    }

    /// Traces `session` across processes: a resumed session's first
    /// request compares with the `prefix` its last one recorded (so a
    /// changed deployment says where it broke), and a recorded session
    /// keeps each changed prefix in the store, for the next resume;
    /// `warn` is told, once, when the store failed to (the session goes
    /// on).
    pub fn trace_session(
        &self,
        session: &Session,
        recorded: Option<&Recorded>,
        prefix: Option<&RequestPrefix>,
        warn: impl Fn(String) + Send + Sync + 'static,
    ) {
        if let Some(prefix) = prefix {
            let (id, model) = (session.id().as_str(), self.loop_agent.model());
            self.trace.resume(id, model, prefix, &session.messages());
        }
        let Some(recorded) = recorded else {
            return;
        };
        let writer = Arc::clone(&recorded.writer);
        let warned = AtomicBool::new(false);
        self.trace.record_prefixes(
            recorded.writer.id(),
            Box::new(move |prefix| {
                if let Err(error) = writer.record_prefix(prefix)
                    && !warned.swap(true, Ordering::Relaxed)
                {
                    warn(format!("the request prefix was not recorded: {error}"));
                }
            }),
        );
    }

    /// Reads the instruction files of `session`'s working directory and
    /// registers them into its layer, where they stay while the returned
    /// value lives: the ones of the session that runs (a resumed one reads
    /// its own directory's).
    pub fn instructions_of(&self, session: &Session) -> Result<SessionInstructions, Vec<Problem>> {
        (self.runtime.instructions_of(session))
            .map_err(|error| vec![Problem::new(error.to_string())])
    }

    /// Runs a front end on the host's async runtime, with the lifecycle
    /// every front end shares: the ending signals are listened to before
    /// any server starts; the agent's MCP servers start, all at once, and
    /// an ending signal or `SIGINT` while they do ends dsh at once (their
    /// process groups killed, the exit status the signal's:
    /// [`signals::end_now`](super::signals::end_now)), since no session
    /// runs that could end gently; `front` runs with what started and the
    /// signals; then the child agents of the last turns stop gently (so
    /// that they stop their own tools' processes), and every MCP server
    /// stops. Reading stdin blocks a thread that cannot be interrupted:
    /// the runtime is not waited for.
    pub fn serve<T>(
        &self,
        front: impl AsyncFnOnce(Started, EndingSignals) -> Result<T, Vec<Problem>>,
    ) -> Result<T, Vec<Problem>> {
        let tokio = async_runtime()?;
        let signals = {
            let _runtime = tokio.enter();
            EndingSignals::listen()?
        };
        let outcome = tokio.block_on(async {
            let mut signals = signals;
            let start = mcp::start_deployment_servers(
                &self.deployment,
                &self.runtime,
                Which::ListedBy(vec![&self.agent]),
                Some(&self.cwd),
            );
            let started = tokio::select! {
                started = start => started,
                ending = signals.recv_or_interrupt() => end_now(ending),
            };
            let outcome = front(started, signals).await;
            AcpProvider::wait_for_children(AcpProvider::STOP_GRACE).await;
            self.runtime.mcp.shutdown().await;
            outcome
        });
        tokio.shutdown_background();
        outcome
    }

    /// Ends the trace: writes the lines still waiting for an answer.
    /// Returns the summary of every session, and `outcome` failed by what
    /// was not written: the trace's lines, or a session's events
    /// (`unrecorded`).
    pub fn finish(
        &self,
        outcome: Result<(), Vec<Problem>>,
        unrecorded: Option<Problem>,
    ) -> (Summary, Result<(), Vec<Problem>>) {
        let (summary, incomplete) = self.trace.finish();
        let outcome = match (outcome, incomplete.or(unrecorded)) {
            (Ok(()), Some(problem)) => Err(vec![problem]),
            (Err(mut problems), Some(problem)) => {
                problems.push(problem);
                Err(problems)
            }
            (outcome, None) => outcome,
        };
        (summary, outcome)
    }
}

//! [`HostedSession`]: one session, from the moment a front end opens it
//! to the moment it closes it, owned by the host.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use dsh_agent_loop::{AgentLoop, FinishReason, Image, Session, SessionId, ToolCall, TurnError};
use dsh_session_store::StoreError;
use dsh_system_prompt::{Registration, render_prompt};
use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;

use super::SessionShared;
use super::approval::SessionApproval;
use super::boundary::Boundary;
use super::changed_tools::ChangedTools;
use super::events::RecordedShown;
use super::events::SessionEvent;
use super::input::{Commands, Input, SlashCommand};
use super::person::Person;
use super::questions::Questions;
use super::rules::SessionRules;
use super::steering::{Knob, Steering};
use super::tool_order::StickyTools;
use crate::Problem;
use crate::facts::attach;
use crate::facts::client_prompt::ClientPrompt;
use crate::facts::instructions::SessionInstructions;
use crate::host::Host;
use crate::host::store::{Recorded, ResumeError};

/// How a front end opens a session.
#[derive(Debug, Clone)]
pub struct Opening {
    which: Which,
    /// The working directory: a new session's; a recorded one's in
    /// place of the one it recorded, when given.
    cwd: Option<PathBuf>,
    roots: Vec<PathBuf>,
    client_prompt: Option<ClientPrompt>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Which {
    New,
    Latest,
    Recorded(String),
    /// A new session with the recorded one's history.
    Fork(String),
}

impl Opening {
    /// A new session in `cwd`, recorded when the store is on.
    pub fn new(cwd: &Path) -> Self {
        Self::of(Which::New, Some(cwd))
    }

    /// The agent's latest recorded session in `cwd` (`--continue`).
    pub fn latest(cwd: &Path) -> Self {
        Self::of(Which::Latest, Some(cwd))
    }

    /// A new session whose history is the recorded session `parent`'s
    /// (`dsh run --fork`, `session/fork`): in `cwd` if given, else in
    /// the parent's directory, with its mode, model and remembered
    /// answers; its first request's system prompt and tools are the
    /// parent's last, byte for byte, so a provider's cache of the
    /// parent's prefix serves it (the trace compares the two).
    pub fn fork(parent: &str, cwd: Option<&Path>) -> Self {
        Self::of(Which::Fork(parent.to_owned()), cwd)
    }

    /// The recorded session `id`, in `cwd` if given, else in the
    /// directory it recorded (`--resume`, `session/load`).
    pub fn recorded(id: &str, cwd: Option<&Path>) -> Self {
        Self::of(Which::Recorded(id.to_owned()), cwd)
    }

    fn of(which: Which, cwd: Option<&Path>) -> Self {
        Self {
            which,
            cwd: cwd.map(Path::to_path_buf),
            roots: Vec::new(),
            client_prompt: None,
        }
    }

    /// The session's other directories (an editor's
    /// `additionalDirectories`): where its file tools change files
    /// without asking, and the roots its servers see after its working
    /// directory.
    pub fn with_roots(mut self, roots: Vec<PathBuf>) -> Self {
        self.roots = roots;
        self
    }

    /// The front end's own instructions for the session's prompt.
    pub fn with_client_prompt(mut self, client_prompt: Option<ClientPrompt>) -> Self {
        self.client_prompt = client_prompt;
        self
    }
}

/// Why a session could not be opened.
#[derive(Debug)]
pub enum OpenError {
    /// There is no such recorded session of this agent.
    NotFound(Problem),
    /// The session is open for writing elsewhere, or running a turn here.
    InUse(Problem),
    /// Anything else: the store failed, the prompt does not render.
    Failed(Vec<Problem>),
}

impl OpenError {
    /// The problems to say.
    pub fn problems(self) -> Vec<Problem> {
        match self {
            Self::NotFound(problem) | Self::InUse(problem) => vec![problem],
            Self::Failed(problems) => problems,
        }
    }
}

/// Why a prompt ran no turn.
#[derive(Debug, thiserror::Error)]
pub enum PromptError {
    /// A turn of the session is running.
    #[error("session `{0}` is already running a turn; wait for its answer, or cancel it first")]
    Busy(SessionId),
    /// The session's steering names an agent there is not (a model the
    /// deployment no longer offers).
    #[error("{0}")]
    Steering(String),
    /// The turn failed (it is over; the session serves the next prompt).
    #[error(transparent)]
    Turn(#[from] TurnError),
}

/// What a prompt came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Prompted {
    /// A turn ran, and the model's last answer ended so.
    Turn(FinishReason),
    /// No turn: a command ran; the session said what it did.
    NoTurn,
    /// No turn: the input was refused (an unknown command, a server's
    /// prompt that could not be got, a choice there is not); the session
    /// said why.
    Refused,
}

/// What a person attached to a prompt (`dsh run --attach`), which only a
/// turn takes: a command leaves it for the next turn.
#[derive(Debug, Default)]
pub struct Attachments {
    /// Texts, after the prompt's own.
    pub texts: Vec<String>,
    /// Images, after the text.
    pub images: Vec<Image>,
}

impl Attachments {
    /// Attaches the file at `path`, one of the session's `dirs`' (by the
    /// one rule: [`attach::attach`]).
    pub fn file(&mut self, path: &Path, dirs: &[PathBuf]) -> Result<(), attach::AttachError> {
        match attach::attach(path, dirs)? {
            attach::Attached::Text(inline) => self.texts.push(inline),
            attach::Attached::Image(image) => self.images.push(image),
        }
        Ok(())
    }
}

/// A turn of a session, begun: the session is held, and the turn can be
/// cancelled ([`HostedSession::cancel`]), until it drops. A front end
/// that answers before the turn ends (an editor's handler) begins it
/// where it handles the request and runs it on a task.
pub struct Running {
    session: tokio::sync::OwnedMutexGuard<Session>,
    hosted: Arc<HostedSession>,
    cancel: CancellationToken,
}

impl std::fmt::Debug for Running {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Running")
            .field("session", self.hosted.id())
            .finish_non_exhaustive()
    }
}

impl Running {
    /// Runs what a person typed: a command (`/mode`, `/model`,
    /// `/compact`), a server's prompt, or a turn with `text` and what is
    /// `attached`, until it ends or is cancelled (then it ends itself).
    pub async fn run(
        mut self,
        text: &str,
        attached: &mut Attachments,
    ) -> Result<Prompted, PromptError> {
        let hosted = Arc::clone(&self.hosted);
        // The deployment's servers work for the sessions: their roots are
        // the sessions' directories (said once a session, before its first
        // turn), not the directory of the deployment's file.
        let mcp = &hosted.host().runtime.mcp;
        mcp.set_session_dirs(hosted.id().as_str(), &hosted.dirs())
            .await;
        hosted
            .run(&mut self.session, text, attached, &self.cancel)
            .await
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        *self.hosted.running.lock() = None;
    }
}

/// One session of a hosted agent, driven by a front end: its turns, its
/// steering, its questions, its person.
pub struct HostedSession {
    host: Arc<Host>,
    shared: Arc<SessionShared>,
    /// The loop's session, held by the running turn.
    session: Arc<tokio::sync::Mutex<Session>>,
    running: Mutex<Option<CancellationToken>>,
    agent_loop: AgentLoop,
    cwd: Option<PathBuf>,
    roots: Vec<PathBuf>,
    recorded: Option<Recorded>,
    /// What the session brought to its prompt, registered while it lives.
    _brought: (SessionInstructions, Vec<Registration>),
}

impl std::fmt::Debug for HostedSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostedSession")
            .field("id", &self.shared.id)
            .field("cwd", &self.cwd)
            .finish_non_exhaustive()
    }
}

impl HostedSession {
    /// Opens a session of `host` ([`Sessions::open`](super::Sessions::open)),
    /// its servers' questions put to its person by `questions`.
    pub(crate) fn open(
        host: &Arc<Host>,
        questions: &Questions,
        opening: Opening,
        person: Arc<dyn Person>,
    ) -> Result<(Arc<Self>, Vec<String>), OpenError> {
        let opened = host.start_or_resume(&opening)?;
        let Started {
            session,
            recorded,
            settings,
            notes,
            prefix,
        } = opened;
        let cwd = session.cwd().map(Path::to_path_buf);
        let brought = match bring(host, &session, opening.client_prompt.as_ref()) {
            Ok(brought) => brought,
            Err(problems) => {
                if matches!(opening.which, Which::New | Which::Fork(_)) {
                    forget_new(host, session, recorded);
                }
                return Err(OpenError::Failed(problems));
            }
        };
        let shared = SessionShared::new(host, &session, recorded.as_ref(), &settings, person);
        let mut notes = notes;
        let mode = shared.steering.lock().mode;
        if opening.which != Which::New && mode != host.start_mode() {
            // Nothing else would say that calls no longer ask, or that
            // the sandbox is another.
            notes.push(format!(
                "the session is in mode `{}`, as it was left: {}",
                mode.id, mode.description
            ));
        }
        host.trace_session(&session, recorded.as_ref(), prefix.as_ref(), {
            let shared = Arc::clone(&shared);
            move |warning| shared.warn(warning)
        });
        questions.opened(&shared);
        let outside = questions.reached().outside;
        let rules = SessionRules {
            rules: brought.0.found().rules().clone(),
            budget: host.runtime.instructions.max_bytes,
            narrator: shared.narrator.clone(),
        };
        let agent_loop = session_loop(host, &shared, (&opening.roots, outside))
            .with_result_notes(Arc::new(rules));
        let hosted = Arc::new(Self {
            host: Arc::clone(host),
            shared,
            session: Arc::new(tokio::sync::Mutex::new(session)),
            running: Mutex::new(None),
            agent_loop,
            cwd,
            roots: opening.roots,
            recorded,
            _brought: brought,
        });
        hosted.warm_tokenizer();
        Ok((hosted, notes))
    }

    /// The host of the session.
    pub fn host(&self) -> &Arc<Host> {
        &self.host
    }

    /// The session's id.
    pub fn id(&self) -> &SessionId {
        &self.shared.id
    }

    /// Its working directory.
    pub fn cwd(&self) -> Option<&Path> {
        self.cwd.as_deref()
    }

    /// Its working directory, then its other directories: what a prompt
    /// may attach files of, and the roots its servers see.
    pub fn dirs(&self) -> Vec<PathBuf> {
        (self.cwd.iter().cloned())
            .chain(self.roots.iter().cloned())
            .collect()
    }

    /// Its steering now.
    pub fn steering(&self) -> Steering {
        self.shared.steering.lock().clone()
    }

    /// The commands a person may type in it now: the built-in ones, and
    /// its servers' prompts.
    pub fn commands(&self) -> Commands {
        Commands::of(&self.host.runtime.mcp, self.id().as_str())
    }

    /// Sets `knob` to `value` for the session's next turn, records it,
    /// and shows [`SessionEvent::Steered`]; `Err` says why not.
    pub fn steer(&self, knob: Knob, value: &str) -> Result<Steering, String> {
        let steering = {
            let mut steering = self.shared.steering.lock();
            steering.set(&self.host, knob, value)?;
            steering.clone()
        };
        self.shared.record(knob.id(), value);
        self.shared.show(SessionEvent::Steered {
            steering: steering.clone(),
        });
        Ok(steering)
    }

    /// Cancels the running turn, if there is one; it then ends itself.
    pub fn cancel(&self) -> bool {
        match &*self.running.lock() {
            Some(turn) => {
                turn.cancel();
                true
            }
            None => false,
        }
    }

    /// Whether a turn runs.
    pub fn is_running(&self) -> bool {
        self.running.lock().is_some()
    }

    /// Begins a turn that `cancel` cancels ([`Running`]); `Err` while
    /// another runs.
    pub fn begin(self: &Arc<Self>, cancel: &CancellationToken) -> Result<Running, PromptError> {
        let session = (Arc::clone(&self.session).try_lock_owned())
            .map_err(|_| PromptError::Busy(self.id().clone()))?;
        *self.running.lock() = Some(cancel.clone());
        Ok(Running {
            session,
            hosted: Arc::clone(self),
            cancel: cancel.clone(),
        })
    }

    /// Runs what a person typed ([`Running::run`]), until it ends or
    /// `cancel` fires (then it ends itself); `Err` while another runs.
    pub async fn prompt(
        self: &Arc<Self>,
        text: &str,
        attached: &mut Attachments,
        cancel: &CancellationToken,
    ) -> Result<Prompted, PromptError> {
        self.begin(cancel)?.run(text, attached).await
    }

    async fn run(
        &self,
        session: &mut Session,
        input: &str,
        attached: &mut Attachments,
        cancel: &CancellationToken,
    ) -> Result<Prompted, PromptError> {
        let text = match self.commands().parse(input) {
            Input::Command(command, argument) => {
                return self.command(session, command, argument, cancel).await;
            }
            Input::ServerPrompt(call) => {
                let servers = &self.host.runtime.mcp;
                match call.text(servers, self.id().as_str(), cancel).await {
                    Ok(text) => text,
                    Err(error) => return Ok(self.refuse(error.to_string())),
                }
            }
            Input::Invalid(error) => return Ok(self.refuse(error.to_string())),
            // An empty prompt is the front end's to send: a turn.
            Input::Empty | Input::Prompt(_) => input.to_owned(),
        };
        let agent = self.agent().map_err(PromptError::Steering)?;
        let Attachments { texts, images } = std::mem::take(attached);
        let text = std::iter::once(text)
            .chain(texts)
            .collect::<Vec<_>>()
            .join("\n\n");
        // A server's list past its `ttlMs` is read again first.
        (self.host.runtime.mcp)
            .refresh_stale(Some(self.id().as_str()))
            .await;
        let summary = (self.agent_loop)
            .run_turn_with(&agent, session, (text, images), cancel)
            .await?;
        Ok(Prompted::Turn(summary.finish))
    }

    /// A built-in command.
    async fn command(
        &self,
        session: &mut Session,
        command: SlashCommand,
        argument: &str,
        cancel: &CancellationToken,
    ) -> Result<Prompted, PromptError> {
        let knob = match command {
            SlashCommand::Compact => {
                let agent = self.agent().map_err(PromptError::Steering)?;
                let report = self.agent_loop.compact(&agent, session, cancel).await?;
                if report.is_none() {
                    self.shared.show(SessionEvent::Notice {
                        text: "nothing to compact".to_owned(),
                    });
                }
                return Ok(Prompted::NoTurn);
            }
            SlashCommand::Mode => Knob::Mode,
            SlashCommand::Model => Knob::Model,
        };
        if argument.is_empty() {
            let offered = self.steering().offered(&self.host, knob);
            self.shared.show(SessionEvent::Notice { text: offered });
            return Ok(Prompted::NoTurn);
        }
        let steering = match self.steer(knob, argument) {
            Ok(steering) => steering,
            Err(why) => return Ok(self.refuse(why)),
        };
        let said = match knob {
            Knob::Mode => format!("mode: {} — {}", steering.mode.id, steering.mode.description),
            _ => format!("{}: {argument}", knob.id()),
        };
        self.shared.show(SessionEvent::Notice { text: said });
        Ok(Prompted::NoTurn)
    }

    /// Says why an input ran nothing.
    fn refuse(&self, why: String) -> Prompted {
        self.shared.show(SessionEvent::Refused { text: why });
        Prompted::Refused
    }

    /// The agent the session's steering runs.
    fn agent(&self) -> Result<dsh_agent_loop::Agent, String> {
        self.steering().agent(&self.host)
    }

    /// What the store failed to record of the session, once: the events
    /// after it were not recorded.
    pub fn unrecorded(&self) -> Option<Problem> {
        self.recorded.as_ref().and_then(Recorded::failure)
    }

    /// Shows the session's history as its turns showed it live (the
    /// files its calls changed, as recorded, with them); `Err` while a
    /// turn runs.
    pub fn replay(&self) -> Result<(), PromptError> {
        let session =
            (self.session.try_lock()).map_err(|_| PromptError::Busy(self.id().clone()))?;
        let mut recorded = RecordedShown::default();
        if let Some(recording) = self.host.recording() {
            let (store, id) = (recording.store(), self.id().as_str());
            recorded.changes = store.changes(id).unwrap_or_else(|error| {
                self.shared
                    .warn(format!("{error}: the replay of the session shows no diffs"));
                Default::default()
            });
            recorded.questions = store.questions(id).unwrap_or_else(|error| {
                self.shared.warn(format!(
                    "{error}: the replay of the session shows no sampling requests"
                ));
                Default::default()
            });
            recorded.title = Some(store.clone());
        }
        self.shared.narrator.replay(session.events(), recorded);
        Ok(())
    }

    /// Loads the agent's tokenizer on a thread of its own when the session
    /// will count its context (its window is known: a load shows the
    /// count at once, and an answer without the API's usage is counted),
    /// so that the first count does not wait for it
    /// ([`Encoding::warm`](dsh_agent_loop::Encoding::warm)).
    fn warm_tokenizer(&self) {
        if let Ok(agent) = self.agent()
            && agent.budget().window().is_some()
        {
            agent.budget().tokenizer().encoding().warm();
        }
    }

    /// Shows the context the session holds now, of its agent's window
    /// ([`SessionEvent::Usage`]), counted with the agent's tokenizer: what
    /// an editor's meter shows after a load, since the store keeps no
    /// API counts. Nothing while a turn runs, or when the window is
    /// unknown or the prompt does not render.
    pub fn show_usage(&self) {
        let Ok(session) = self.session.try_lock() else {
            return;
        };
        if let Ok(agent) = self.agent()
            && let Some(window) = agent.budget().window()
            && let Some(used) = self.agent_loop.context_tokens(&agent, &session)
        {
            self.shared.show(SessionEvent::Usage { used, window });
        }
    }

    /// Closes the session: its running turn is cancelled; the returned
    /// future stops the servers it started for itself, and holds nothing
    /// of the session, so that its recorder (whose writer holds its lock
    /// in the store) goes when the caller drops its last handle.
    pub fn close(&self) -> impl Future<Output = ()> + Send + 'static {
        self.cancel();
        let (servers, id) = (self.host.runtime.mcp.clone(), self.id().to_string());
        async move { servers.end_session(&id).await }
    }
}

/// The session leaves the process: the trace lets go of it (and of its
/// writer, which holds the session's lock in the store).
impl Drop for HostedSession {
    fn drop(&mut self) {
        self.host.trace().forget(self.id().as_str());
    }
}

/// A session started or brought back, before it is hosted.
struct Started {
    session: Session,
    recorded: Option<Recorded>,
    settings: std::collections::BTreeMap<String, String>,
    notes: Vec<String>,
    prefix: Option<dsh_session_store::RequestPrefix>,
}

impl Host {
    /// The loop's session `opening` asks for: new (recorded when the
    /// store is on), or a recorded one brought back.
    fn start_or_resume(&self, opening: &Opening) -> Result<Started, OpenError> {
        let failed = |problem: Problem| OpenError::Failed(vec![problem]);
        let cwd = opening.cwd.as_deref();
        let id = match (&opening.which, cwd) {
            (Which::New, Some(cwd)) => {
                let (session, recorded) = (self.new_session(cwd))
                    .map_err(|error| failed(crate::host::store::problem(error)))?;
                return Ok(Started {
                    session,
                    recorded,
                    settings: Default::default(),
                    notes: Vec::new(),
                    prefix: None,
                });
            }
            (Which::New, None) => {
                return Err(failed(Problem::new(
                    "a new session needs a working directory",
                )));
            }
            (Which::Latest, cwd) => {
                let cwd = cwd.unwrap_or(Path::new("."));
                crate::session::latest(self.store_for_resume()?, cwd).map_err(OpenError::Failed)?
            }
            (Which::Recorded(id), _) => id.clone(),
            (Which::Fork(parent), cwd) => {
                let forked = (self.store_for_resume()?.fork(parent, cwd))
                    .map_err(|error| self.reopen_error(parent, error))?;
                return Ok(Started {
                    session: forked.session,
                    recorded: Some(forked.recorded),
                    settings: forked.loaded.settings,
                    notes: forked.notes,
                    prefix: forked.loaded.prefix,
                });
            }
        };
        let recording = self.store_for_resume()?;
        let resumed =
            (recording.resume(&id, cwd)).map_err(|error| self.reopen_error(&id, error))?;
        Ok(Started {
            session: resumed.session,
            recorded: Some(resumed.recorded),
            settings: resumed.loaded.settings,
            notes: resumed.notes,
            prefix: resumed.loaded.prefix,
        })
    }

    /// Why the recorded session `id` could not be brought back (or
    /// forked).
    fn reopen_error(&self, id: &str, error: ResumeError) -> OpenError {
        let failed = |problem: Problem| OpenError::Failed(vec![problem]);
        let agent = self.recording().map_or("", |recording| recording.agent());
        match error {
            ResumeError::Store(StoreError::NotFound { .. }) | ResumeError::OtherAgent { .. } => {
                OpenError::NotFound(Problem::new(format!(
                    "no session `{id}` of agent `{agent}` in the session store"
                )))
            }
            ResumeError::Store(error @ StoreError::InUse { .. }) => {
                OpenError::InUse(crate::host::store::problem(error))
            }
            error => failed(error.problem(agent)),
        }
    }

    /// The store, for a session brought back.
    fn store_for_resume(&self) -> Result<&crate::host::store::Recording, OpenError> {
        self.recording().ok_or_else(|| {
            OpenError::Failed(vec![
                Problem::new("`--continue` and `--resume` need the session store, which is off")
                    .help("drop `--no-store`, or `[sessions] enabled = false` from the deployment"),
            ])
        })
    }
}

/// Registers what `session` brings to its prompt — its instruction files,
/// the front end's prompt — and checks that the prompt renders now, not
/// at the first turn.
fn bring(
    host: &Host,
    session: &Session,
    client_prompt: Option<&ClientPrompt>,
) -> Result<(SessionInstructions, Vec<Registration>), Vec<Problem>> {
    let instructions = host.instructions_of(session)?;
    let client = match client_prompt {
        Some(client_prompt) => (client_prompt.register(&host.runtime.prompt, session.id()))
            .map_err(|error| {
                vec![Problem::new(format!(
                    "the client's system prompt cannot be registered: {error}"
                ))]
            })?,
        None => Vec::new(),
    };
    let assembly = host.agent_loop().assemble(host.loop_agent(), session);
    if let Err(errors) = render_prompt(&assembly) {
        return Err(vec![Problem::new(format!(
            "the agent's prompt does not render:\n{errors}"
        ))]);
    }
    Ok((instructions, client))
}

/// A new session that could not open leaves none in the store either.
fn forget_new(host: &Host, session: Session, recorded: Option<Recorded>) {
    if let (Some(recording), Some(recorded)) = (host.recording(), recorded) {
        let id = recorded.writer.id().to_owned();
        // The session's recorder holds the writer, and the writer the
        // lock: both go first.
        drop((session, recorded));
        let _ = recording.store().delete(&id);
    }
}

/// The sandbox of a call that starts now, under the session's mode now:
/// a switch applies to the running turn's next call too. The session's
/// own calls run in the mode's sandbox; a child agent's (whose sandbox is
/// its own) only ever in less. The session's other directories (an
/// editor's additional ones, `roots`) are writable as its working
/// directory is.
fn steer_sandbox(
    mode: &'static crate::policy::modes::Mode,
    (own, roots): (bool, &[PathBuf]),
    cx: &mut dsh_tools::ToolCallContext,
) {
    let Some(sandbox) = cx.get::<dsh_sandbox::Sandbox>() else {
        return;
    };
    let mut steered = sandbox.clone();
    if sandbox.mode() != mode.sandbox && (own || sandbox.mode() > mode.sandbox) {
        steered = sandbox.in_mode(mode.sandbox);
    }
    if !roots.is_empty() {
        steered = steered.with_writable(roots.iter().cloned());
    }
    if steered != *sandbox {
        cx.extensions.insert(steered);
    }
}

/// The host's loop, as one session's: what it does shown to the
/// session's person, its calls approved by the session's rule.
fn session_loop(
    host: &Host,
    shared: &Arc<SessionShared>,
    (roots, asks_outside): (&[PathBuf], bool),
) -> AgentLoop {
    let changed = Arc::new(ChangedTools::new(
        host.approval_policy(),
        Arc::clone(shared),
        Arc::clone(host.trace()),
    ));
    let approval = SessionApproval::new(
        host.approval_policy(),
        Arc::clone(shared),
        Arc::clone(&changed),
    );
    let (lending, narrator) = (Arc::clone(shared), shared.narrator.clone());
    let roots = roots.to_vec();
    // Without a boundary, a change outside the working directory is
    // refused by the tool (a front end that cannot ask, and no roots).
    let boundary = (asks_outside || !roots.is_empty()).then(|| {
        Arc::new(Boundary {
            roots: roots.to_vec(),
            shared: Arc::clone(shared),
        }) as Arc<dyn dsh_tool_fs::OutsideWorkspace>
    });
    let sticky = StickyTools::new(
        host.agent_loop().prompt().clone(),
        narrator.clone(),
        changed,
    );
    host.agent_loop()
        .observed_by(Arc::new(super::observer::SessionObserver(narrator)))
        .observed_by(Arc::new(sticky))
        .on_tool_call_context(move |facts, call: &ToolCall, cx| {
            let own = lending.narrator.is_for(&facts.id);
            if own {
                lending.narrator.attach(call, cx);
            }
            steer_sandbox(lending.steering.lock().mode, (own, &roots), cx);
            if let Some(boundary) = &boundary {
                cx.extensions.insert(Arc::clone(boundary));
            }
            lending.person.lend(call, cx);
        })
        .with_approval(Arc::new(approval))
}

//! The `acp` provider: each child is another agent, started as a
//! subprocess and spoken to over the Agent Client Protocol.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    CancelNotification, ContentBlock, InitializeRequest, NewSessionRequest, PermissionOptionKind,
    PromptRequest, RequestPermissionOutcome, RequestPermissionRequest, RequestPermissionResponse,
    SelectedPermissionOutcome, SessionNotification, SessionUpdate, StopReason,
};
use agent_client_protocol::{AcpAgent, AcpAgentConfig, Agent, Client, Error};
use async_trait::async_trait;
use dsh_tools::ToolProgress;
use parking_lot::Mutex;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::{SubagentCapabilities, SubagentError, SubagentProvider, SubagentRun, SubagentTask};

/// How long a cancelled child may take to answer `cancelled` before it is
/// stopped.
const CANCEL_GRACE: Duration = Duration::from_secs(2);

/// How many child agents of this process are running: a child counts from
/// its start until its connection is closed and its process stopped.
static LIVE_CHILDREN: AtomicUsize = AtomicUsize::new(0);

/// Counts one running child while it lives.
struct LiveChild;

impl LiveChild {
    fn new() -> Self {
        LIVE_CHILDREN.fetch_add(1, Ordering::AcqRel);
        Self
    }
}

impl Drop for LiveChild {
    fn drop(&mut self) {
        LIVE_CHILDREN.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Runs each task in an ACP agent started as a subprocess
/// (`["dsh", "acp", "--config", "child.toml"]`, or any other agent that
/// speaks ACP): one process and one session per task, in the caller's
/// working directory; the task is the session's prompt, and the child's
/// final message is the result. The child sees only that prompt
/// (`inherits_parent_context` is `false`).
///
/// A child that fails to start, exits, or breaks the protocol is a failed
/// call naming the command. Cancelling the call sends `session/cancel`;
/// when the run is disposed the child's process group is stopped. A
/// child's permission requests are refused: a subagent has no user to ask.
#[derive(Clone, Debug)]
pub struct AcpProvider {
    name: String,
    command: Vec<String>,
    timeout: Duration,
    env_remove: Vec<String>,
}

impl AcpProvider {
    /// The name the provider registers under unless [`named`](Self::named)
    /// gives another.
    pub const NAME: &'static str = "acp";

    /// A provider named `acp` whose children run `command` (the program,
    /// then its arguments); fails when `command` is empty.
    pub fn new(
        command: impl IntoIterator<Item = impl Into<String>>,
    ) -> Result<Self, SubagentError> {
        let command: Vec<String> = command.into_iter().map(Into::into).collect();
        if command
            .first()
            .is_none_or(|program| program.trim().is_empty())
        {
            return Err(SubagentError::EmptyCommand {
                provider: Self::NAME.to_owned(),
            });
        }
        Ok(Self {
            name: Self::NAME.to_owned(),
            command,
            timeout: Self::DEFAULT_TIMEOUT,
            env_remove: Vec::new(),
        })
    }

    /// Starts each child without these variables of dsh's environment
    /// (the host's policy: secrets a child agent is not given), added to
    /// those removed already. The ACP SDK's process configuration can add
    /// variables but not remove them, so the child is started through
    /// `env -u NAME … --`.
    pub fn without_env(mut self, names: impl IntoIterator<Item = String>) -> Self {
        self.env_remove.extend(names);
        self
    }

    /// The variables its children run without.
    pub fn env_removed(&self) -> &[String] {
        &self.env_remove
    }

    /// How long a child may take to answer its task, from its start,
    /// unless [`with_timeout`](Self::with_timeout) says otherwise.
    pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30 * 60);

    /// Gives each child at most `timeout` to answer: past it, the child is
    /// sent `session/cancel`, then stopped, and the call fails saying so.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Renames the provider (a deployment names it after its instance).
    pub fn named(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// The command its children run.
    pub fn command(&self) -> &[String] {
        &self.command
    }

    /// How long a disposed child may take, at most, to stop on its own
    /// (answer `session/cancel`, then exit when its stdin closes) before
    /// its process group is killed.
    pub const STOP_GRACE: Duration = Duration::from_secs(5);

    /// Waits until no child agent of this process runs, at most `within`;
    /// returns whether none does. A front end calls it before it exits:
    /// a child stopped gently stops its own tools' processes, which a
    /// child killed outright cannot.
    pub async fn wait_for_children(within: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + within;
        while LIVE_CHILDREN.load(Ordering::Acquire) > 0 {
            if tokio::time::Instant::now() >= deadline {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        true
    }
}

#[async_trait]
impl SubagentProvider for AcpProvider {
    fn name(&self) -> &str {
        &self.name
    }

    /// An ACP agent has tools of its own, which the caller does not see.
    fn capabilities(&self) -> SubagentCapabilities {
        SubagentCapabilities::WITH_TOOLS
    }

    fn inherits_parent_context(&self) -> bool {
        false
    }

    async fn start(&self, task: SubagentTask) -> Result<Box<dyn SubagentRun>, SubagentError> {
        let cwd = match task
            .cwd
            .clone()
            .or_else(|| task.parent.as_ref()?.session().cwd.clone())
        {
            Some(cwd) => cwd,
            None => std::env::current_dir().map_err(|error| self.failed(error.to_string()))?,
        };
        let (program, args) = match self.command.split_first() {
            Some(_) if !self.env_remove.is_empty() => without_env(&self.env_remove, &self.command),
            Some((program, args)) => (program.clone(), args.to_vec()),
            None => return Err(self.failed("the command is empty".to_owned())),
        };
        let child = Child {
            program,
            args,
            progress: task.progress.clone(),
            cwd,
            prompt: task.prompt,
            cancel: task.cancel.child_token(),
            depth: task.depth,
            timeout: self.timeout,
        };
        let cancel = child.cancel.clone();
        Ok(Box::new(AcpRun {
            provider: self.name.clone(),
            command: self.command.join(" "),
            cancel,
            run: Some(tokio::spawn(child.run())),
        }))
    }
}

impl AcpProvider {
    fn failed(&self, message: String) -> SubagentError {
        SubagentError::ChildFailed {
            provider: self.name.clone(),
            message: format!("`{}`: {message}", self.command.join(" ")),
        }
    }
}

/// `command` started by `env(1)` without the variables `names`: `env -u
/// A -u B -- program args…` as the program and its arguments.
fn without_env(names: &[String], command: &[String]) -> (String, Vec<String>) {
    let mut args: Vec<String> = names
        .iter()
        .flat_map(|name| ["-u".to_owned(), name.clone()])
        .collect();
    args.push("--".to_owned());
    args.extend(command.iter().cloned());
    ("env".to_owned(), args)
}

/// How a child's turn ended, before it is a tool result.
enum Ended {
    Answered(String),
    Cancelled,
    Stopped(StopReason),
    Failed(String),
}

/// One child: its process, its session, its prompt.
struct Child {
    program: String,
    args: Vec<String>,
    progress: Option<ToolProgress>,
    cwd: PathBuf,
    prompt: String,
    cancel: CancellationToken,
    /// The child's subagent depth, which its process inherits.
    depth: u32,
    /// How long it may take to answer.
    timeout: Duration,
}

impl Child {
    async fn run(self) -> Ended {
        let _live = LiveChild::new();
        let agent = AcpAgent::new(
            AcpAgentConfig::new(&self.program)
                .args(self.args.iter().cloned())
                .env(crate::DEPTH_ENV, self.depth.to_string()),
        );
        // The text of the child's answer since its last tool call: what it
        // ends with is its final message.
        let answer = Arc::new(Mutex::new(String::new()));
        let collect = Arc::clone(&answer);
        let progress = self.progress.clone();
        let report = move |text: &str| {
            if let Some(progress) = &progress {
                progress.report(text);
            }
        };
        let connected = Client
            .v1()
            .on_receive_notification(
                async move |notification: SessionNotification, _cx| {
                    // What the child says or runs is its progress.
                    match notification.update {
                        SessionUpdate::AgentMessageChunk(chunk) => {
                            if let ContentBlock::Text(text) = chunk.content {
                                let mut answer = collect.lock();
                                answer.push_str(&text.text);
                                report(&answer);
                            }
                        }
                        SessionUpdate::ToolCall(call) => {
                            collect.lock().clear();
                            report(&format!("→ {}", call.title));
                        }
                        _ => {}
                    }
                    Ok(())
                },
                agent_client_protocol::on_receive_notification!(),
            )
            .on_receive_request(
                async |request: RequestPermissionRequest, responder, _cx| {
                    responder.respond(refuse(&request))
                },
                agent_client_protocol::on_receive_request!(),
            )
            .connect_with(agent, async |cx: ConnectionTo<Agent>| {
                self.session(&cx).await
            })
            .await;
        match connected {
            Ok(StopReason::EndTurn) => Ended::Answered(std::mem::take(&mut *answer.lock())),
            Ok(StopReason::Cancelled) => Ended::Cancelled,
            Ok(stop) => Ended::Stopped(stop),
            Err(_) if self.cancel.is_cancelled() => Ended::Cancelled,
            Err(error) => Ended::Failed(describe(&error)),
        }
    }

    /// Initializes the child, opens a session in the caller's directory and
    /// sends the task; cancelling sends `session/cancel` and waits a moment
    /// for the child to answer.
    async fn session(&self, cx: &ConnectionTo<Agent>) -> Result<StopReason, Error> {
        let deadline = tokio::time::sleep(self.timeout);
        tokio::pin!(deadline);
        let timed_out = || {
            Error::internal_error().data(format!(
                "the agent did not answer within {} s (`timeout_secs`); it was stopped",
                self.timeout.as_secs_f64()
            ))
        };
        let started = async {
            cx.send_request(InitializeRequest::new(ProtocolVersion::V1))
                .block_task()
                .await?;
            cx.send_request(NewSessionRequest::new(&self.cwd))
                .block_task()
                .await
        };
        let session = tokio::select! {
            started = started => started?.session_id,
            () = &mut deadline => return Err(timed_out()),
        };
        let prompt = PromptRequest::new(
            session.clone(),
            vec![ContentBlock::from(self.prompt.as_str())],
        );
        let turn = cx.send_request(prompt).block_task();
        tokio::pin!(turn);
        tokio::select! {
            response = &mut turn => Ok(response?.stop_reason),
            () = &mut deadline => {
                cx.send_notification(CancelNotification::new(session))?;
                let _ = tokio::time::timeout(CANCEL_GRACE, &mut turn).await;
                Err(timed_out())
            }
            () = self.cancel.cancelled() => {
                cx.send_notification(CancelNotification::new(session))?;
                match tokio::time::timeout(CANCEL_GRACE, &mut turn).await {
                    Ok(response) => Ok(response?.stop_reason),
                    Err(_) => Ok(StopReason::Cancelled),
                }
            }
        }
    }
}

/// A child's permission request: refused, with the least lasting answer
/// it offers.
fn refuse(request: &RequestPermissionRequest) -> RequestPermissionResponse {
    let reject = [
        PermissionOptionKind::RejectOnce,
        PermissionOptionKind::RejectAlways,
    ]
    .iter()
    .find_map(|kind| {
        request
            .options
            .iter()
            .find(|option| option.kind == *kind)
            .map(|option| option.option_id.clone())
    });
    RequestPermissionResponse::new(match reject {
        Some(option) => RequestPermissionOutcome::Selected(SelectedPermissionOutcome::new(option)),
        None => RequestPermissionOutcome::Cancelled,
    })
}

/// A protocol error in one line: its message, and its data when it says
/// more.
fn describe(error: &Error) -> String {
    match &error.data {
        Some(serde_json::Value::String(data)) => format!("{}: {data}", error.message),
        Some(data) if !data.is_null() => format!("{}: {data}", error.message),
        _ => error.message.clone(),
    }
}

/// A running child; disposing it cancels its turn and stops its process.
struct AcpRun {
    provider: String,
    command: String,
    cancel: CancellationToken,
    run: Option<JoinHandle<Ended>>,
}

#[async_trait]
impl SubagentRun for AcpRun {
    async fn finish(&mut self) -> Result<String, SubagentError> {
        let provider = self.provider.clone();
        let failed = |message: String| SubagentError::ChildFailed {
            provider: provider.clone(),
            message: format!("`{}`: {message}", self.command),
        };
        let Some(run) = self.run.as_mut() else {
            return Err(failed(
                "the run was already finished or disposed".to_owned(),
            ));
        };
        let ended = run.await;
        self.run = None;
        match ended {
            Ok(Ended::Answered(answer)) => Ok(answer),
            Ok(Ended::Cancelled) => Err(SubagentError::Cancelled { provider }),
            Ok(Ended::Stopped(stop)) => Err(failed(format!(
                "the agent stopped before it finished (stop reason `{}`)",
                serde_json::to_value(stop)
                    .ok()
                    .and_then(|value| value.as_str().map(str::to_owned))
                    .unwrap_or_else(|| format!("{stop:?}"))
            ))),
            Ok(Ended::Failed(message)) => Err(failed(message)),
            Err(error) => Err(failed(format!("the client task failed: {error}"))),
        }
    }

    fn dispose(&mut self) {
        self.cancel.cancel();
        let Some(run) = self.run.take() else {
            return;
        };
        // The cancelled run sends `session/cancel` and gives the child a
        // moment to stop its own work (its tools' processes are not in its
        // process group). Past that, aborting drops the connection, whose
        // process guard stops the child's process group.
        let abort = run.abort_handle();
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                runtime.spawn(async move {
                    if tokio::time::timeout(2 * CANCEL_GRACE, run).await.is_err() {
                        abort.abort();
                    }
                });
            }
            Err(_) => abort.abort(),
        }
    }
}

//! Running one command: its own process group, a deadline that kills the
//! group, capped output, and the marker that says how it ended.

use std::os::fd::OwnedFd;
use std::path::Path;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use dsh_sandbox::Confinement;
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use tokio::io::AsyncReadExt;
use tokio::net::unix::pipe;
use tokio::process::{Child, Command};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use dsh_tools::{CommandExit, CommandOutput};

use crate::live::LiveStream;
use crate::output::CappedOutput;

/// How long output is still read after the shell exits, for a background
/// process that still holds the output pipe. Past it, that output is
/// discarded and the call returns.
const DRAIN_GRACE: Duration = Duration::from_millis(500);

/// How a command ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ending {
    /// It exited with this code.
    Exited(i32),
    /// A signal ended it.
    Signalled(i32),
    /// The deadline passed and its process group was killed.
    TimedOut(Duration),
}

impl Ending {
    fn of(status: ExitStatus) -> Self {
        use std::os::unix::process::ExitStatusExt;
        match (status.code(), status.signal()) {
            (Some(code), _) => Self::Exited(code),
            (None, Some(signal)) => Self::Signalled(signal),
            // Neither code nor signal does not happen on Unix for a reaped
            // process; report it as a failure rather than as success.
            (None, None) => Self::Exited(-1),
        }
    }

    /// How a terminal says it ended: a timed-out command was killed with
    /// `SIGKILL`.
    pub(crate) fn exit(self) -> CommandExit {
        match self {
            Self::Exited(code) => CommandExit {
                code: Some(code),
                signal: None,
            },
            Self::Signalled(signal) => CommandExit {
                code: None,
                signal: Some(signal_name(signal)),
            },
            Self::TimedOut(_) => CommandExit {
                code: None,
                signal: Some(signal_name(Signal::SIGKILL as i32)),
            },
        }
    }

    /// The marker the result ends with, if any: `None` for success.
    pub(crate) fn marker(self) -> Option<String> {
        match self {
            Self::Exited(0) => None,
            Self::Exited(code) => Some(format!("[exit code: {code}]")),
            Self::Signalled(signal) => Some(format!("[killed by signal: {}]", signal_name(signal))),
            Self::TimedOut(after) => Some(format!("[timed out after {} ms]", after.as_millis())),
        }
    }
}

fn signal_name(signal: i32) -> String {
    Signal::try_from(signal)
        .map(|signal| signal.as_str().to_owned())
        .unwrap_or_else(|_| format!("signal {signal}"))
}

/// Why a command produced no result.
#[derive(Debug, thiserror::Error)]
pub(crate) enum RunError {
    /// `bash` could not be started.
    #[error("could not start `bash`: {0}")]
    Spawn(#[source] std::io::Error),
    /// Waiting for the command or reading its output failed.
    #[error("could not read the command's output or exit status: {0}")]
    Io(#[source] std::io::Error),
    /// The caller gave up on the call.
    #[error("the call was cancelled")]
    Cancelled,
}

/// What a finished command left.
#[derive(Debug)]
pub(crate) struct Finished {
    pub(crate) output: CappedOutput,
    pub(crate) ending: Ending,
}

/// Kills a process group with `SIGKILL` when dropped, unless disarmed: so
/// a timeout, a cancellation, or the caller dropping the call's future
/// never leaves the command's processes behind.
struct GroupKiller {
    group: Option<Pid>,
}

impl GroupKiller {
    fn kill(&mut self) {
        if let Some(group) = self.group.take() {
            // ESRCH (the group is already gone) is the outcome we want.
            let _ = killpg(group, Signal::SIGKILL);
        }
    }

    fn disarm(&mut self) {
        self.group = None;
    }
}

impl Drop for GroupKiller {
    fn drop(&mut self) {
        self.kill();
    }
}

/// One command to run: what, where, for how long, with what kept of its
/// output and its environment, confined how.
pub(crate) struct Spec<'a> {
    pub(crate) command: &'a str,
    /// The process's working directory when `None`.
    pub(crate) dir: Option<&'a Path>,
    pub(crate) timeout: Duration,
    pub(crate) output_cap: usize,
    pub(crate) env_remove: &'a [String],
    pub(crate) confinement: Confinement,
}

/// Runs `bash -c command` in a new process group; what it writes also
/// goes to `live` as it runs, when the caller attached one.
pub(crate) async fn run(
    spec: Spec<'_>,
    live: Option<&CommandOutput>,
    cancel: &CancellationToken,
) -> Result<Finished, RunError> {
    let (child, output_pipe) = spawn(spec.command, spec.dir, spec.env_remove, spec.confinement)?;
    let mut running = Running::new(child, output_pipe, spec.timeout, spec.output_cap);
    running.live = live.cloned().map(LiveStream::new);
    running.wait(cancel).await
}

/// Starts the shell in `confinement`, its stdout and stderr one pipe
/// whose read end is returned.
fn spawn(
    command: &str,
    dir: Option<&Path>,
    env_remove: &[String],
    confinement: Confinement,
) -> Result<(Child, pipe::Receiver), RunError> {
    // One pipe for both streams, as `2>&1` would: the model reads stdout
    // and stderr interleaved in the order they were written, which two
    // pipes read concurrently cannot guarantee.
    let (reader, writer) = std::io::pipe().map_err(RunError::Spawn)?;
    let output_pipe =
        pipe::Receiver::from_owned_fd(OwnedFd::from(reader)).map_err(RunError::Spawn)?;
    let mut shell = Command::new("bash");
    shell
        .arg("-c")
        .arg(command)
        .stdin(Stdio::null())
        .stdout(writer.try_clone().map_err(RunError::Spawn)?)
        .stderr(writer)
        // Its own process group, so a timeout can kill everything the
        // command started, not only the shell.
        .process_group(0)
        .kill_on_drop(true);
    if let Some(dir) = dir {
        shell.current_dir(dir);
    }
    for name in env_remove {
        shell.env_remove(name);
    }
    confinement.apply_to(shell.as_std_mut());
    let spawned = shell.spawn();
    // The command holds this process's copies of the pipe's write end:
    // close them, or the output never reaches end-of-file.
    drop(shell);
    let child = spawned.map_err(RunError::Spawn)?;
    Ok((child, output_pipe))
}

/// A started shell, watched until it exits and its output is read: the
/// output kept within its cap, the group killed at the timeout or on
/// cancellation.
struct Running {
    /// Declared first, so that it is dropped first: a run ended early kills
    /// the command's group while its shell, not yet reaped, still holds the
    /// group's id.
    killer: GroupKiller,
    child: Child,
    output_pipe: pipe::Receiver,
    output: CappedOutput,
    buffer: Vec<u8>,
    timeout: Duration,
    deadline: Instant,
    /// Until when output is still read once the shell has exited or been
    /// killed: a background process may hold the pipe open.
    drain_until: Option<Instant>,
    status: Option<ExitStatus>,
    timed_out: bool,
    /// The caller's live view of the output, if it has one.
    live: Option<LiveStream>,
}

impl Running {
    fn new(
        child: Child,
        output_pipe: pipe::Receiver,
        timeout: Duration,
        output_cap: usize,
    ) -> Self {
        // The group's id is the shell's pid (`process_group(0)`). It is
        // taken before the shell is reaped, and the group is no longer
        // killed once the shell has exited on its own, so the id cannot
        // have been reused.
        let killer = GroupKiller {
            group: child
                .id()
                .and_then(|pid| i32::try_from(pid).ok())
                .map(Pid::from_raw),
        };
        Self {
            killer,
            child,
            output_pipe,
            output: CappedOutput::new(output_cap),
            buffer: vec![0; 16 * 1024],
            timeout,
            deadline: Instant::now() + timeout,
            drain_until: None,
            status: None,
            timed_out: false,
            live: None,
        }
    }

    /// Reads the output and waits for the shell until both are done, the
    /// drain after an exit or a kill is over, or `cancel` fires.
    async fn wait(mut self, cancel: &CancellationToken) -> Result<Finished, RunError> {
        let mut output_open = true;
        while output_open || self.status.is_none() {
            let stop_at = self.drain_until.unwrap_or(self.deadline);
            let live_due = self.live.as_ref().and_then(LiveStream::due);
            tokio::select! {
                read = self.output_pipe.read(&mut self.buffer), if output_open => {
                    match read.map_err(RunError::Io)? {
                        0 => output_open = false,
                        n => {
                            self.output.push(&self.buffer[..n]);
                            if let Some(live) = &mut self.live {
                                live.push(&self.buffer[..n], Instant::now());
                            }
                        }
                    }
                },
                () = tokio::time::sleep_until(live_due.unwrap_or(stop_at)), if live_due.is_some() => {
                    if let Some(live) = &mut self.live {
                        live.flush(Instant::now());
                    }
                },
                exited = self.child.wait(), if self.status.is_none() => {
                    self.status = Some(exited.map_err(RunError::Io)?);
                    if !self.timed_out {
                        // The shell is done; what it left running in the
                        // background stays (it may be a server the model
                        // started on purpose), so stop owning the group.
                        self.killer.disarm();
                        self.drain_until = Some(Instant::now() + DRAIN_GRACE);
                    }
                },
                () = tokio::time::sleep_until(stop_at) => {
                    if self.status.is_some() {
                        // A background process still holds the output pipe.
                        break;
                    }
                    self.timed_out = true;
                    self.killer.kill();
                    self.drain_until = Some(Instant::now() + DRAIN_GRACE);
                },
                () = cancel.cancelled() => {
                    self.killer.kill();
                    return Err(RunError::Cancelled);
                },
            }
        }
        // The loop ends only once the shell is reaped, so `status` is set.
        let ending = match self.status {
            Some(status) if !self.timed_out => Ending::of(status),
            _ => Ending::TimedOut(self.timeout),
        };
        if let Some(live) = self.live.take() {
            live.finish(ending.exit());
        }
        Ok(Finished {
            output: self.output,
            ending,
        })
    }
}

//! Running one command: its own process group, a deadline that kills the
//! group, capped output, and the marker that says how it ended.

use std::os::fd::OwnedFd;
use std::path::Path;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use tokio::io::AsyncReadExt;
use tokio::process::Command;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

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

/// Runs `bash -c command` in `dir` (the process's working directory when
/// `None`) in a new process group.
pub(crate) async fn run(
    command: &str,
    dir: Option<&Path>,
    timeout: Duration,
    output_cap: usize,
    env_remove: &[String],
    cancel: &CancellationToken,
) -> Result<Finished, RunError> {
    // One pipe for both streams, as `2>&1` would: the model reads stdout
    // and stderr interleaved in the order they were written, which two
    // pipes read concurrently cannot guarantee.
    let (reader, writer) = std::io::pipe().map_err(RunError::Spawn)?;
    let mut output_pipe = tokio::net::unix::pipe::Receiver::from_owned_fd(OwnedFd::from(reader))
        .map_err(RunError::Spawn)?;
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
    let spawned = shell.spawn();
    // The command holds this process's copies of the pipe's write end:
    // close them, or the output never reaches end-of-file.
    drop(shell);
    let mut child = spawned.map_err(RunError::Spawn)?;
    // The group's id is the shell's pid (`process_group(0)`). It is taken
    // before the shell is reaped, and the group is no longer killed once
    // the shell has exited on its own, so the id cannot have been reused.
    let mut killer = GroupKiller {
        group: child
            .id()
            .and_then(|pid| i32::try_from(pid).ok())
            .map(Pid::from_raw),
    };

    let mut output = CappedOutput::new(output_cap);
    let mut buffer = vec![0; 16 * 1024];
    let mut output_open = true;
    let deadline = Instant::now() + timeout;
    let mut drain_until: Option<Instant> = None;
    let mut status: Option<ExitStatus> = None;
    let mut timed_out = false;

    while output_open || status.is_none() {
        let stop_at = drain_until.unwrap_or(deadline);
        tokio::select! {
            read = output_pipe.read(&mut buffer), if output_open => match read.map_err(RunError::Io)? {
                0 => output_open = false,
                n => output.push(&buffer[..n]),
            },
            exited = child.wait(), if status.is_none() => {
                status = Some(exited.map_err(RunError::Io)?);
                if !timed_out {
                    // The shell is done; what it left running in the
                    // background stays (it may be a server the model
                    // started on purpose), so stop owning the group.
                    killer.disarm();
                    drain_until = Some(Instant::now() + DRAIN_GRACE);
                }
            },
            () = tokio::time::sleep_until(stop_at) => {
                if status.is_some() {
                    // A background process still holds the output pipe.
                    break;
                }
                timed_out = true;
                killer.kill();
                drain_until = Some(Instant::now() + DRAIN_GRACE);
            },
            () = cancel.cancelled() => {
                killer.kill();
                return Err(RunError::Cancelled);
            },
        }
    }
    // The loop ends only once the shell is reaped, so `status` is set.
    let ending = match status {
        Some(status) if !timed_out => Ending::of(status),
        _ => Ending::TimedOut(timeout),
    };
    Ok(Finished { output, ending })
}

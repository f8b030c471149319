//! A stdio server's process started: the leader of a process group of
//! its own, with the environment and in the sandbox its transport says.

use std::process::Stdio;
use std::sync::Arc;

use dsh_sandbox::Sandbox;

use crate::connection::process::{ProcessGroup, StdioTransport};
use crate::tasks::TaskOnly;
use crate::{McpError, ServerConfig, Transport};

/// Whether the process `pid` exists (and is not a zombie we reaped).
pub(crate) fn process_exists(pid: u32) -> bool {
    i32::try_from(pid)
        .is_ok_and(|pid| nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None).is_ok())
}

pub(crate) type Spawned = (StdioTransport, Option<ProcessGroup>, Option<u32>);

/// A stdio server's process, as its transport describes it.
pub(crate) struct Child<'a> {
    command: &'a [String],
    env: &'a [(String, String)],
    inherit_env: Option<&'a [String]>,
    sandbox: Option<&'a Sandbox>,
    cwd: Option<&'a std::path::Path>,
}

impl<'a> Child<'a> {
    /// The process of a stdio transport (an HTTP one has none: an empty
    /// command, which [`spawn`] refuses).
    pub(crate) fn of(transport: &'a Transport) -> Self {
        match transport {
            Transport::Stdio {
                command,
                env,
                inherit_env,
                sandbox,
                cwd,
            } => Self {
                command,
                env,
                inherit_env: inherit_env.as_deref(),
                sandbox: sandbox.as_ref(),
                cwd: cwd.as_deref(),
            },
            Transport::Http { .. } => Self {
                command: &[],
                env: &[],
                inherit_env: None,
                sandbox: None,
                cwd: None,
            },
        }
    }
}

/// Starts a stdio server as the leader of a new process group, with the
/// environment and in the sandbox its transport says, its stderr drained
/// onto dsh's.
pub(crate) fn spawn(
    config: &ServerConfig,
    child: &Child<'_>,
    task_only: &Arc<TaskOnly>,
) -> Result<Spawned, McpError> {
    let Child {
        command,
        env,
        inherit_env,
        sandbox,
        cwd,
    } = *child;
    let Some((program, args)) = command.split_first() else {
        return Err(McpError::Config {
            server: config.name.clone(),
            origin: config.origin(),
            message: "the command is empty; give the program, then its arguments".to_owned(),
        });
    };
    let mut cmd = tokio::process::Command::new(program);
    if let Some(names) = inherit_env {
        cmd.env_clear();
        for name in names {
            if let Some(value) = std::env::var_os(name) {
                cmd.env(name, value);
            }
        }
    }
    cmd.args(args)
        .envs(env.iter().map(|(k, v)| (k, v)))
        // A group of its own: stopping the server stops its children, and
        // a terminal's Ctrl-C goes to dsh alone, which stops it in order.
        .process_group(0)
        // Should everything else fail, tokio kills the child when the
        // handle is dropped, synchronously.
        .kill_on_drop(true);
    if let Some(cwd) = cwd {
        cmd.current_dir(cwd);
    }
    if let Some(sandbox) = sandbox {
        let cwd = cwd
            .map(std::path::Path::to_path_buf)
            .or_else(|| std::env::current_dir().ok());
        let confinement = sandbox
            .confine(cwd.as_deref())
            .map_err(|error| McpError::Spawn {
                server: config.name.clone(),
                origin: config.origin(),
                message: error.to_string(),
            })?;
        confinement.apply_to(cmd.as_std_mut());
    }
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut process = cmd.spawn().map_err(|error| McpError::Spawn {
        server: config.name.clone(),
        origin: config.origin(),
        message: if error.kind() == std::io::ErrorKind::NotFound {
            format!("`{program}` was not found: {error}")
        } else {
            error.to_string()
        },
    })?;
    let pid = process.id();
    let group = pid.and_then(ProcessGroup::led_by);
    if let Some(stderr) = process.stderr.take() {
        // Always drained: a server blocks once a full pipe is not read.
        crate::connection::stderr::copy_to_output(&config.name, config.output.clone(), stderr);
    }
    let transport =
        StdioTransport::new(process, Arc::clone(task_only)).ok_or_else(|| McpError::Spawn {
            server: config.name.clone(),
            origin: config.origin(),
            message: "its stdin and stdout could not be connected".to_owned(),
        })?;
    Ok((transport, group, pid))
}

//! The process groups of stdio servers: each server runs as the leader of
//! a group of its own, so stopping it stops what it started too (`npx` and
//! `uvx` launchers run the real server as a grandchild). And their
//! connection ([`StdioTransport`]).

use std::future::Future;
use std::sync::{Arc, Mutex};

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use rmcp::RoleClient;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::transport::async_rw::AsyncRwTransport;
use tokio::process::{Child, ChildStdin, ChildStdout};

use crate::tasks::{Tap, TaskOnly};

/// The groups of the servers running now, for [`stop_all_servers`].
static LIVE: Mutex<Vec<i32>> = Mutex::new(Vec::new());

/// A server's process group: killed (`SIGKILL`) when dropped, whatever
/// else happened, and never left behind by dsh.
#[derive(Debug)]
pub(crate) struct ProcessGroup {
    pgid: i32,
}

impl ProcessGroup {
    /// The group that the process `pid`, started as a group leader, leads.
    pub(crate) fn led_by(pid: u32) -> Option<Self> {
        let pgid = i32::try_from(pid).ok()?;
        live().push(pgid);
        Some(Self { pgid })
    }

    /// Sends `signal` to every process of the group.
    pub(crate) fn signal(&self, signal: Signal) {
        // ESRCH (the group is gone) is the outcome we want.
        let _ = killpg(Pid::from_raw(self.pgid), signal);
    }
}

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        self.signal(Signal::SIGKILL);
        live().retain(|&pgid| pgid != self.pgid);
    }
}

fn live() -> std::sync::MutexGuard<'static, Vec<i32>> {
    LIVE.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Kills (`SIGKILL`) the process group of every stdio server still
/// running in this process: for a front end about to exit on a signal,
/// when no destructor will run. Servers stopped the ordinary way
/// ([`McpServer::shutdown`](crate::McpServer::shutdown), or dropping
/// them) need no call.
pub fn stop_all_servers() {
    for &pgid in live().iter() {
        let _ = killpg(Pid::from_raw(pgid), Signal::SIGKILL);
    }
}

/// A stdio server's connection: its stdin and its stdout (read through a
/// [`Tap`], for what rmcp cannot read) as rmcp's transport, and its
/// process, killed when this is dropped (`kill_on_drop`).
pub(crate) struct StdioTransport {
    transport: AsyncRwTransport<RoleClient, Tap<ChildStdout>, ChildStdin>,
    child: Child,
}

impl StdioTransport {
    /// The connection to `child`, started with piped stdin and stdout;
    /// `None` when either was not piped.
    pub(crate) fn new(mut child: Child, task_only: Arc<TaskOnly>) -> Option<Self> {
        let stdin = child.stdin.take()?;
        let stdout = child.stdout.take()?;
        Some(Self {
            transport: AsyncRwTransport::new_client(Tap::new(stdout, task_only), stdin),
            child,
        })
    }
}

impl Transport<RoleClient> for StdioTransport {
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.transport.send(item)
    }

    fn receive(&mut self) -> impl Future<Output = Option<RxJsonRpcMessage<RoleClient>>> + Send {
        self.transport.receive()
    }

    /// Closes the server's stdin, the sign to exit, and waits for it to
    /// exit: unbounded, the caller sets the deadline (the server's
    /// `shutdown` then signals its group).
    async fn close(&mut self) -> Result<(), Self::Error> {
        self.transport.close().await?;
        self.child.wait().await.map(drop)
    }
}

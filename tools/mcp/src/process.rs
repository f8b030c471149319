//! The process groups of stdio servers: each server runs as the leader of
//! a group of its own, so stopping it stops what it started too (`npx` and
//! `uvx` launchers run the real server as a grandchild).

use std::sync::Mutex;

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

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

//! The signals that end dsh: `SIGTERM` (a supervisor, `kill`) and `SIGHUP`
//! (the terminal or the editor went away). Without handlers they kill dsh
//! on the spot, and the process groups of running commands and the child
//! agents outlive it; with them, a command ends the way closing its input
//! does — turns cancelled, children stopped — and then exits.
//!
//! `SIGINT` (Ctrl-C) is listened to as well, but is an ending signal only
//! where nothing runs that it could cancel: while the MCP servers start
//! ([`EndingSignals::recv_or_interrupt`]; every command) and in `dsh acp`.
//! `dsh run` gives it its own meaning once its session runs (cancel the
//! running turn, or end the session between turns).

use tokio::signal::unix::{Signal, SignalKind, signal};

use crate::problem::Problem;

/// A signal that ends dsh.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Ending {
    /// `SIGTERM`.
    Terminate,
    /// `SIGHUP`.
    HangUp,
    /// `SIGINT`.
    Interrupt,
}

impl Ending {
    /// The signal's name, `SIGTERM`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Terminate => "SIGTERM",
            Self::HangUp => "SIGHUP",
            Self::Interrupt => "SIGINT",
        }
    }

    /// The exit status a shell gives a process this signal ended: 128 and
    /// the signal's number (the same on every Unix for these three).
    pub fn exit_status(self) -> i32 {
        128 + match self {
            Self::HangUp => 1,
            Self::Interrupt => 2,
            Self::Terminate => 15,
        }
    }
}

/// The ending signals, listened to from the moment this value exists.
#[derive(Debug)]
pub struct EndingSignals {
    terminate: Signal,
    hang_up: Signal,
    interrupt: Signal,
}

impl EndingSignals {
    /// Starts listening; must run inside the async runtime. From then on
    /// `SIGINT` no longer ends the process by itself: whoever holds this
    /// value says what it does.
    pub(crate) fn listen() -> Result<Self, Vec<Problem>> {
        let install = |kind: SignalKind, name: &str| {
            signal(kind).map_err(|error| {
                vec![Problem::new(format!(
                    "cannot listen for {name}, which must stop dsh's commands cleanly: {error}"
                ))]
            })
        };
        Ok(Self {
            terminate: install(SignalKind::terminate(), "SIGTERM")?,
            hang_up: install(SignalKind::hangup(), "SIGHUP")?,
            interrupt: install(SignalKind::interrupt(), "SIGINT")?,
        })
    }

    /// Waits for the first ending signal, `SIGINT` aside; returns its
    /// name.
    pub async fn recv(&mut self) -> &'static str {
        tokio::select! {
            _ = self.terminate.recv() => Ending::Terminate.name(),
            _ = self.hang_up.recv() => Ending::HangUp.name(),
        }
    }

    /// Waits for the first ending signal or `SIGINT`: for a time when
    /// Ctrl-C has nothing to cancel, and ends dsh like the others.
    pub async fn recv_or_interrupt(&mut self) -> Ending {
        tokio::select! {
            _ = self.terminate.recv() => Ending::Terminate,
            _ = self.hang_up.recv() => Ending::HangUp,
            _ = self.interrupt.recv() => Ending::Interrupt,
        }
    }
}

/// Ends dsh at once, as `ending` would have: kills the process group of
/// every MCP server still running (a group of its own, which no signal to
/// dsh reaches), then exits with [`Ending::exit_status`]. For a signal
/// that comes while there is nothing to end gently: servers starting, no
/// session yet.
pub fn end_now(ending: Ending) -> ! {
    dsh_tool_mcp::stop_all_servers();
    std::process::exit(ending.exit_status())
}

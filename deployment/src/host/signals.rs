//! The signals that end dsh: `SIGTERM` (a supervisor, `kill`) and `SIGHUP`
//! (the terminal or the editor went away). Without handlers they kill dsh
//! on the spot, and the process groups of running commands and the child
//! agents outlive it; with them, a command ends the way closing its input
//! does — turns cancelled, children stopped — and then exits.
//!
//! `SIGINT` (Ctrl-C) is not among them: `dsh run` gives it its own meaning
//! (cancel the running turn, or end the session between turns).

use tokio::signal::unix::{Signal, SignalKind, signal};

use crate::problem::Problem;

/// The ending signals, listened to from the moment this value exists.
#[derive(Debug)]
pub struct EndingSignals {
    terminate: Signal,
    hang_up: Signal,
}

impl EndingSignals {
    /// Starts listening; must run inside the async runtime.
    pub fn listen() -> Result<Self, Vec<Problem>> {
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
        })
    }

    /// Waits for the first ending signal; returns its name.
    pub async fn recv(&mut self) -> &'static str {
        tokio::select! {
            _ = self.terminate.recv() => "SIGTERM",
            _ = self.hang_up.recv() => "SIGHUP",
        }
    }
}

//! Ending `dsh acp` cleanly: when the editor closes stdin, or a signal
//! asks dsh to stop, every running turn is cancelled and given the time
//! its cancellation needs (a tool's process group is killed, a child
//! agent is sent `session/cancel` and then closed), while the connection
//! still runs, so each turn answers `cancelled` and no process dsh started
//! outlives it.

use std::time::Duration;

use dsh_agent_loop::AgentLoop;
use dsh_tool_subagent::AcpProvider;

use super::Server;

/// How often the wind-down looks whether the turns have ended.
const POLL: Duration = Duration::from_millis(20);

impl Server {
    /// Cancels every running turn, waits for the turns to end (at most the
    /// loop's cancel grace, and a little more), then for the child agents
    /// they started to stop.
    pub(crate) async fn wind_down(&self) {
        if self.cancel_all() {
            let deadline = tokio::time::Instant::now() + 2 * AgentLoop::DEFAULT_CANCEL_GRACE;
            while self.running_turns() > 0 && tokio::time::Instant::now() < deadline {
                tokio::time::sleep(POLL).await;
            }
        }
        AcpProvider::wait_for_children(AcpProvider::STOP_GRACE).await;
    }

    /// How many turns are running.
    fn running_turns(&self) -> usize {
        (self.inner.sessions.lock().values())
            .filter(|session| session.is_running())
            .count()
    }
}

//! How deep subagents nest, and the limit that keeps a child that starts
//! children like itself from forking without end.
//!
//! Every agent has a depth: a process's top-level agents are at the depth
//! its environment says ([`DEPTH_ENV`], `0` when unset), and each child
//! is one deeper. An in-process child (`spawn`, `fork`) runs its turn with
//! its depth in a task-local value; an `acp` child is a process, started
//! with [`DEPTH_ENV`] set to its depth, so the count survives the process
//! boundary whatever the child runs (`dsh acp` on the same deployment
//! included). A subagent tool refuses a call that would start a child
//! deeper than its limit ([`SubagentToolConfig::max_depth`](crate::SubagentToolConfig::max_depth),
//! [`DEFAULT_MAX_DEPTH`] unless configured), for every provider alike.

use std::future::Future;

/// The environment variable that carries a process's subagent depth to
/// an `acp` child.
pub const DEPTH_ENV: &str = "DSH_SUBAGENT_DEPTH";

/// How deep subagents may nest unless configured: a child of a child of a
/// child of a child.
pub const DEFAULT_MAX_DEPTH: u32 = 4;

tokio::task_local! {
    static DEPTH: u32;
}

/// The depth of the agent whose turn runs here: the task's, inside an
/// in-process child; else this process's ([`DEPTH_ENV`], `0` when unset or
/// not a number).
pub fn current_depth() -> u32 {
    DEPTH
        .try_with(|depth| *depth)
        .unwrap_or_else(|_| process_depth())
}

/// This process's depth, from [`DEPTH_ENV`].
fn process_depth() -> u32 {
    std::env::var(DEPTH_ENV)
        .ok()
        .and_then(|depth| depth.trim().parse().ok())
        .unwrap_or(0)
}

/// Runs `future` (a child's turn) at `depth`.
pub(crate) fn at_depth<F: Future>(depth: u32, future: F) -> impl Future<Output = F::Output> {
    DEPTH.scope(depth, future)
}

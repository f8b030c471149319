//! A session as a command starts it: in its working directory, with its
//! instruction files read once and registered into its layer, where they
//! stay while the session lives. `dsh prompt` and `dsh check` start one
//! the way `dsh run` does, so what they show is what a session gets.

use std::path::Path;

use dsh_agent_loop::{AgentLoop, Session};

use dsh_system_prompt::PromptAssembly;

use super::Runtime;
use crate::facts::instructions::{InstructionsError, SessionInstructions};
use crate::file::AgentSpec;
use crate::problem::Problem;

/// `session` in `cwd`, or with no working directory: the one place a
/// session gets its `<<cwd>>`.
pub(crate) fn session_in(session: Session, cwd: Option<&Path>) -> Session {
    match cwd {
        Some(cwd) => session.with_cwd(cwd),
        None => session,
    }
}

/// A started session and what it brings to its prompt.
#[derive(Debug)]
pub struct StartedSession {
    /// The loop's session.
    pub session: Session,
    /// Its instruction files: registered while this lives.
    pub instructions: SessionInstructions,
}

impl Runtime {
    /// Starts a session in `cwd` (or with no working directory): reads
    /// its instruction files and registers them into its layer.
    pub(crate) fn start_session(&self, cwd: Option<&Path>) -> Result<StartedSession, Vec<Problem>> {
        let session = session_in(Session::new(), cwd);
        let instructions = self
            .instructions_of(&session)
            .map_err(|error| vec![Problem::new(error.to_string())])?;
        Ok(StartedSession {
            session,
            instructions,
        })
    }

    /// Reads the instruction files of `session`'s working directory and
    /// registers them into its layer, where they stay while the returned
    /// value lives: every session's, however it started.
    pub fn instructions_of(
        &self,
        session: &Session,
    ) -> Result<SessionInstructions, InstructionsError> {
        SessionInstructions::start(&self.instructions, &self.prompt, session)
    }

    /// A session in `cwd` that reads no instruction file: to check, before
    /// any session starts, what every session's prompt has in common.
    pub(crate) fn without_instructions(cwd: Option<&Path>) -> StartedSession {
        StartedSession {
            session: session_in(Session::new(), cwd),
            instructions: SessionInstructions::none(),
        }
    }

    /// Assembles the prompt of `agent` in `started`, with the context the
    /// loop's steps assemble with, so what `dsh prompt` prints is what
    /// `dsh run` sends.
    pub fn assemble(&self, agent: &AgentSpec, started: &StartedSession) -> PromptAssembly {
        let cx = AgentLoop::context(&self.loop_agent(agent), &started.session);
        self.prompt.assemble(&cx)
    }
}

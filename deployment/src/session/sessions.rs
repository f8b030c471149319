//! [`Sessions`]: the sessions of one hosted agent, where a front end
//! opens them.

use std::sync::Arc;

use dsh_tool_mcp::{ServerOutput, SharedAsker};

use super::hosted::{HostedSession, OpenError, Opening};
use super::person::Person;
use super::questions::{Questions, Reach};
use crate::host::Host;

/// The sessions of one hosted agent: where a front end opens them, and
/// who answers the MCP servers' questions — the person of the session
/// whose call a server serves.
#[derive(Clone)]
pub struct Sessions {
    host: Arc<Host>,
    questions: Arc<Questions>,
}

impl std::fmt::Debug for Sessions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sessions")
            .field("host", &self.host)
            .field("questions", &self.questions)
            .finish()
    }
}

impl Sessions {
    /// The sessions of `host`, whose servers' sampling and elicitation
    /// reach people as `reach` says. The servers are told what they may
    /// ask when they start: a front end makes this before
    /// [`Host::serve`].
    pub fn new(host: Arc<Host>, reach: Reach) -> Self {
        let questions = Arc::new(Questions::new(host.sampler(), reach));
        (host.runtime).answer_servers_with(SharedAsker(questions.clone()));
        Self { host, questions }
    }

    /// The host.
    pub fn host(&self) -> &Arc<Host> {
        &self.host
    }

    /// Says who can answer the servers' questions from now on (an
    /// editor, once it says which elicitations it shows).
    pub fn reach(&self, reach: Reach) {
        self.questions.reach(reach);
    }

    /// Says what the MCP servers say for the person (their stderr, their
    /// log messages, a question declined unasked) through `output`: the
    /// front end's, since the host prints nothing.
    pub fn show_servers_with(&self, output: ServerOutput) {
        self.questions.show_with(output.clone());
        self.host.runtime.show_servers_with(output);
    }

    /// Opens a session as `opening` says, for `person`: a new one, or a
    /// recorded one with its steering and remembered answers as they
    /// were. It brings its instruction files and the front end's prompt,
    /// and its prompt renders (or it is not opened); the notes are what
    /// bringing a recorded session back found worth saying.
    pub fn open(
        &self,
        opening: Opening,
        person: Arc<dyn Person>,
    ) -> Result<(Arc<HostedSession>, Vec<String>), OpenError> {
        HostedSession::open(&self.host, &self.questions, opening, person)
    }
}

//! Opening a session: a new one, or a recorded one brought back with its
//! history (`--continue`, `--resume ID`), the same way for every front
//! end.

use std::path::Path;

use dsh_agent_loop::{Event, Session};
use dsh_session_store::RequestPrefix;

use crate::host::Host;
use crate::host::store::{self, Recorded, Recording};
use crate::problem::Problem;

impl Host {
    /// The session a front end opens in `cwd`: a new one (recorded when
    /// the store is on), or a recorded one brought back with its history
    /// (`--continue`, `--resume ID`).
    pub fn open_session(&self, cwd: &Path, resume: Resume) -> Result<OpenedSession, Vec<Problem>> {
        let recording = match (self.recording(), &resume) {
            (_, Resume::New) => {
                let (session, recorded) = self
                    .new_session(cwd)
                    .map_err(|error| vec![store::problem(error)])?;
                return Ok(OpenedSession::new(session, recorded));
            }
            (Some(recording), _) => recording,
            (None, _) => {
                return Err(vec![
                    Problem::new(
                        "`--continue` and `--resume` need the session store, which is off",
                    )
                    .help("drop `--no-store`, or `[sessions] enabled = false` from the deployment"),
                ]);
            }
        };
        let id = match resume {
            Resume::Id(id) => id,
            _ => latest(recording, cwd)?,
        };
        let resumed = recording
            .resume(&id, None)
            .map_err(|error| vec![error.problem(recording.agent())])?;
        Ok(OpenedSession {
            session: resumed.session,
            recorded: Some(resumed.recorded),
            history: resumed.loaded.events,
            prefix: resumed.loaded.prefix,
            notes: resumed.notes,
        })
    }
}

/// Which session a front end opens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resume {
    /// A new one.
    New,
    /// The agent's latest recorded session in the working directory.
    Latest,
    /// The recorded session with this id.
    Id(String),
}

/// A session a front end opened, with what it brings from before.
#[derive(Debug)]
pub struct OpenedSession {
    /// The loop's session.
    pub session: Session,
    /// The store's side, when the store is on.
    pub recorded: Option<Recorded>,
    /// What a resumed session said and did before.
    pub history: Vec<Event>,
    /// The prefix of a resumed session's last request, if recorded.
    pub prefix: Option<RequestPrefix>,
    /// What bringing it back found worth telling: skipped records, a
    /// cut-off turn, a changed deployment.
    pub notes: Vec<String>,
}

impl OpenedSession {
    fn new(session: Session, recorded: Option<Recorded>) -> Self {
        Self {
            session,
            recorded,
            history: Vec::new(),
            prefix: None,
            notes: Vec::new(),
        }
    }
}

/// The id of the agent's latest recorded session in `cwd`
/// (`--continue`).
fn latest(recording: &Recording, cwd: &Path) -> Result<String, Vec<Problem>> {
    let latest = recording
        .store()
        .latest_in(cwd, Some(recording.agent()))
        .map_err(|error| vec![store::problem(error)])?;
    latest.map(|latest| latest.id).ok_or_else(|| {
        vec![
            Problem::new(format!(
                "no recorded session of agent `{}` in `{}` to continue",
                recording.agent(),
                cwd.display()
            ))
            .help("`dsh sessions` lists the recorded sessions; `--resume ID` continues one"),
        ]
    })
}

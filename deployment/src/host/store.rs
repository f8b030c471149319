//! The deployment's session store, wired to the loop: which file
//! (`[sessions]`, `--no-store`), and loop sessions that record into it —
//! new ones, and recorded ones brought back with their history.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use dsh_agent_loop::{Event, Session, TurnEndReason};
use dsh_session_store::{LoadedSession, NewSession, SessionWriter, Store, StoreError};
use sha2::{Digest, Sha256};

use crate::file::{AgentSpec, Deployment, SessionStore};
use crate::measure::trace::hex;
use crate::problem::Problem;
use crate::runtime::session_in;

/// Opens the deployment's store, or `None` when it is off (`[sessions]
/// enabled = false`, or `--no-store`).
pub(crate) fn open(deployment: &Deployment, no_store: bool) -> Result<Option<Store>, Problem> {
    if no_store {
        return Ok(None);
    }
    let path = match &deployment.sessions {
        SessionStore::Off => return Ok(None),
        SessionStore::Default => Store::default_path().map_err(problem)?,
        SessionStore::At(path) => path.clone(),
    };
    Store::open(path).map(Some).map_err(problem)
}

/// The store `dsh sessions` reads: the deployment's; when the deployment
/// turned it off, there is nothing to list, and the problem says so.
pub fn open_for_listing(deployment: &Deployment) -> Result<Store, Problem> {
    open(deployment, false)?.ok_or_else(|| {
        Problem::new(format!(
            "the deployment `{}` records no sessions (`[sessions] enabled = false`)",
            deployment.file.name()
        ))
        .help("remove `enabled = false` from its `[sessions]` table to record them")
    })
}

/// The store's side of a loop session recorded as it runs: its writer,
/// which holds the session's lock while it lives.
#[derive(Debug)]
pub struct Recorded {
    /// The session's writer: it holds the session's lock.
    pub writer: Arc<SessionWriter>,
}

impl Recorded {
    /// The store's failure to record, once, as a problem to report.
    pub fn failure(&self) -> Option<Problem> {
        self.writer.take_failure().map(|error| {
            problem(error).help(format!(
                "events of session `{}` after this one were not recorded",
                self.writer.id()
            ))
        })
    }
}

/// One agent's sessions in a store: what a new one records about itself,
/// and how a recorded one comes back.
#[derive(Clone, Debug)]
pub struct Recording {
    store: Store,
    /// What each new session records: the agent, its model, the
    /// deployment and its hash.
    template: NewSession,
}

/// Why a recorded session cannot come back.
#[derive(Debug)]
pub enum ResumeError {
    /// The store said no (unknown, open elsewhere, failed).
    Store(StoreError),
    /// It is another agent's session.
    OtherAgent {
        /// The session.
        id: String,
        /// Its agent.
        agent: String,
    },
    /// A fork at `<session>/<n>` where `n` starts no message of the
    /// session.
    NotAMessage {
        /// The id as given.
        id: String,
        /// How many events the session has.
        events: usize,
    },
}

impl ResumeError {
    /// The error as a problem for a front end to say; `agent` is the
    /// agent that asked.
    pub fn problem(self, agent: &str) -> Problem {
        match self {
            Self::Store(error) => problem(error),
            Self::OtherAgent { id, agent: other } => Problem::new(format!(
                "session `{id}` is a session of agent `{other}`, not of `{agent}`"
            ))
            .help(format!("pass `--agent {other}`")),
            Self::NotAMessage { id, events } => {
                Problem::new(format!("`{id}` is no message of its session")).help(format!(
                    "a message id is `<session>/<n>`, as the editor got it on a message \
                     (its `messageId`); the session has {events} events, and a message \
                     starts at the person's text or at a step of an answer"
                ))
            }
        }
    }
}

impl Recording {
    /// Sessions of `agent` of `deployment`, in `store`.
    pub fn new(store: Store, deployment: &Deployment, agent: &AgentSpec) -> Self {
        let template = NewSession::new(agent.id.get_ref().as_str(), agent.model.get_ref().as_str())
            .with_deployment(deployment_path(deployment), deployment_hash(deployment));
        Self { store, template }
    }

    /// The store the sessions are in.
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// The agent whose sessions these are.
    pub fn agent(&self) -> &str {
        &self.template.agent
    }

    /// Starts a new recorded session in `cwd`: the loop's session (the
    /// store's id, its recorder installed), and the store's side.
    pub fn start(&self, cwd: Option<&Path>) -> Result<(Session, Recorded), StoreError> {
        let mut new = self.template.clone();
        new.cwd = cwd.map(Path::to_path_buf);
        let writer = Arc::new(self.store.create(&new)?);
        let session = Session::with_id(writer.session_id()).with_recorder(writer.recorder());
        let session = session_in(session, cwd);
        Ok((session, Recorded { writer }))
    }

    /// Brings the recorded session `id` back: its history, its working
    /// directory (`cwd` if given, else the recorded one), and a recorder
    /// appending to it.
    pub fn resume(&self, id: &str, cwd: Option<&Path>) -> Result<Resumed, ResumeError> {
        let info = self.store.info(id).map_err(ResumeError::Store)?;
        if info.agent != self.template.agent {
            return Err(ResumeError::OtherAgent {
                id: id.to_owned(),
                agent: info.agent,
            });
        }
        let (loaded, writer) = self.store.resume(id).map_err(ResumeError::Store)?;
        let writer = Arc::new(writer);
        let mut notes: Vec<String> = loaded.skipped.iter().map(ToString::to_string).collect();
        if !loaded.closed.is_empty() {
            notes.push(format!(
                "session `{id}` was cut off mid-turn (dsh stopped); its open tool calls are \
                 marked interrupted"
            ));
        }
        if loaded.info.deployment_hash != self.template.deployment_hash {
            notes.push(format!(
                "the deployment changed since session `{id}` was recorded: it continues on \
                 the new prompt"
            ));
        }
        let session = Session::with_id(writer.session_id())
            .with_recorder(writer.recorder())
            .with_history(loaded.events.iter().cloned());
        let session = session_in(session, cwd.or(loaded.info.cwd.as_deref()));
        Ok(Resumed {
            session,
            recorded: Recorded { writer },
            loaded,
            notes,
        })
    }
}

impl Recording {
    /// A new recorded session whose history is the recorded session
    /// `parent`'s as far as it is recorded (`dsh run --fork`,
    /// `session/fork`): its events, settings (mode, model, effort,
    /// remembered answers), shown changes and last request prefix copied,
    /// in `cwd` if given, else the parent's. The parent is only read: it
    /// may be open in another process, and it goes on as it was.
    ///
    /// `parent` may be a message of the session (`<session>/<n>`, a
    /// [`MessageId`](crate::session::MessageId)): the fork then takes the
    /// history up to that message — before the person's message it names
    /// (to send it again, changed), or through the answer it names with
    /// its calls' results.
    pub fn fork(&self, parent: &str, cwd: Option<&Path>) -> Result<Resumed, ResumeError> {
        let (parent, at) = match parent.split_once('/') {
            Some((session, at)) => (session, Some(at)),
            None => (parent, None),
        };
        let info = self.store.info(parent).map_err(ResumeError::Store)?;
        if info.agent != self.template.agent {
            return Err(ResumeError::OtherAgent {
                id: parent.to_owned(),
                agent: info.agent,
            });
        }
        let mut loaded = self.store.load(parent).map_err(ResumeError::Store)?;
        if let Some(at) = at {
            let end = message_end(&loaded.events, at).ok_or_else(|| ResumeError::NotAMessage {
                id: format!("{parent}/{at}"),
                events: loaded.events.len(),
            })?;
            loaded.events.truncate(end);
            // Cut after a step that called tools: the turn ends there.
            if !matches!(loaded.events.last(), None | Some(Event::TurnEnd { .. })) {
                loaded.events.push(Event::TurnEnd {
                    reason: TurnEndReason::Cancelled,
                    error: None,
                });
            }
        }
        let changes = self.store.changes(parent).map_err(ResumeError::Store)?;
        let cwd = cwd.or(loaded.info.cwd.as_deref());
        let (session, recorded) = self.start(cwd).map_err(ResumeError::Store)?;
        let writer = &recorded.writer;
        let copied = (loaded
            .events
            .iter()
            .try_for_each(|event| writer.append(event)))
        .and_then(|()| (loaded.settings.iter()).try_for_each(|(key, value)| writer.set(key, value)))
        .and_then(|()| {
            (changes.iter()).try_for_each(|(call, shown)| {
                shown
                    .iter()
                    .try_for_each(|change| writer.record_change(call, change))
            })
        })
        .and_then(|()| {
            loaded
                .prefix
                .as_ref()
                .map_or(Ok(()), |prefix| writer.record_prefix(prefix))
        });
        if let Err(error) = copied {
            let id = writer.id().to_owned();
            drop((session, recorded));
            let _ = self.store.delete(&id);
            return Err(ResumeError::Store(error));
        }
        let session = session.with_history(loaded.events.iter().cloned());
        let mut notes: Vec<String> = loaded.skipped.iter().map(ToString::to_string).collect();
        notes.push(format!("forked from session `{parent}`"));
        Ok(Resumed {
            session,
            recorded,
            loaded,
            notes,
        })
    }
}

/// Where a fork at the message starting at event `at` (a number) of
/// `events` ends: before the person's message, or after the step of an
/// answer with its calls' results (and its turn's end, if the step was
/// the turn's last; else the fork ends the turn there). `None` when `at` starts no message.
fn message_end(events: &[Event], at: &str) -> Option<usize> {
    let at: usize = at.parse().ok()?;
    match events.get(at)? {
        Event::UserMessage { .. } => Some(at),
        Event::StepStart { .. } => {
            let next = (at + 1..events.len()).find(|&i| {
                matches!(
                    events[i],
                    Event::StepStart { .. } | Event::UserMessage { .. } | Event::TurnEnd { .. }
                )
            });
            Some(match next {
                Some(i) if matches!(events[i], Event::TurnEnd { .. }) => i + 1,
                Some(i) => i,
                None => events.len(),
            })
        }
        _ => None,
    }
}

/// A new session in `cwd`, recorded when `recording` is there (the store
/// is on): the loop's session, and the store's side of it. Every front
/// end starts its sessions here.
pub fn new_session(
    recording: Option<&Recording>,
    cwd: &Path,
) -> Result<(Session, Option<Recorded>), StoreError> {
    match recording {
        Some(recording) => {
            let (session, recorded) = recording.start(Some(cwd))?;
            Ok((session, Some(recorded)))
        }
        None => Ok((session_in(Session::new(), Some(cwd)), None)),
    }
}

/// What bringing a session back found worth telling.
#[derive(Debug)]
pub struct Resumed {
    /// The loop's session, with its history and recorder.
    pub session: Session,
    /// The store's side of it.
    pub recorded: Recorded,
    /// What the store loaded: its events, info and last request prefix.
    pub loaded: LoadedSession,
    /// Lines to show the user: skipped records, a cut-off turn, a changed
    /// deployment.
    pub notes: Vec<String>,
}

/// The deployment's file as a session records it: absolute, or the
/// built-in's name.
fn deployment_path(deployment: &Deployment) -> PathBuf {
    let name = Path::new(deployment.file.name());
    match deployment.dir {
        Some(_) => std::fs::canonicalize(name).unwrap_or_else(|_| name.to_owned()),
        None => name.to_owned(),
    }
}

/// SHA-256 of the deployment's text: what tells a resumed session its
/// prompt may have changed.
pub(crate) fn deployment_hash(deployment: &Deployment) -> String {
    hex(&Sha256::digest(deployment.file.text().as_bytes()))
}

/// A store's error as a problem for a front end to say.
pub fn problem(error: StoreError) -> Problem {
    Problem::new(error.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_ends_before_the_persons_text_or_after_its_step() {
        let user = || Event::UserMessage { text: "hi".into() };
        let step = |step| Event::StepStart { step };
        let answer = || Event::AssistantMessage {
            text: "ok".into(),
            thoughts: Vec::new(),
        };
        let end = || Event::TurnEnd {
            reason: TurnEndReason::Completed,
            error: None,
        };
        let events = [
            user(),  // 0
            step(1), // 1: a step that called tools, say
            answer(),
            step(2), // 3: the turn's last step
            answer(),
            end(),
            user(), // 6
            step(1),
        ];
        let ends: Vec<Option<usize>> = ["0", "1", "3", "6", "7", "2", "8", "x", "-1"]
            .iter()
            .map(|at| message_end(&events, at))
            .collect();
        assert_eq!(
            ends,
            [
                Some(0),
                Some(3),
                Some(6),
                Some(6),
                Some(8),
                None,
                None,
                None,
                None
            ]
        );
    }
}

//! A session's life, owned by the host: what happens between a front end
//! opening a session and closing it, written once for every front end.
//!
//! A front end implements one trait, [`Person`] — show a
//! [`SessionEvent`], ask a [`Question`], fill in a form — and drives a
//! [`HostedSession`], opened from the host's [`Sessions`]:
//!
//! 1. [`Sessions::open`] — new, the latest in a directory
//!    (`--continue`), or a recorded one (`--resume`, `session/load`),
//!    with its steering and remembered answers restored; it brings its
//!    instruction files and the front end's prompt, and its prompt is
//!    checked to render.
//! 2. [`HostedSession::prompt`] — what the person typed: a command
//!    (`/mode`, `/model`, `/compact`), a server's prompt, or a turn. While
//!    it runs, the session shows what happens as [`SessionEvent`]s, asks
//!    before the calls its mode and policy ask about (remembering an
//!    "always" by the rule of [`crate::policy::always`]), and puts its servers'
//!    sampling and elicitation to the person.
//! 3. [`HostedSession::steer`] — the mode, the model, the effort; recorded
//!    with the session, restored with it by every front end.
//! 4. [`HostedSession::replay`] — a recorded session's history, as its
//!    turns showed it live; [`HostedSession::close`].
//!
//! `deployment/examples/headless.rs` is a third front end on this API.

mod approval;
mod boundary;
mod changed_tools;
mod events;
mod form;
mod hosted;
mod input;
mod observer;
mod person;
mod questions;
mod rules;
mod servers;
mod sessions;
mod steering;
mod tool_order;

use std::collections::BTreeMap;
use std::sync::Arc;

use dsh_agent_loop::{Session, SessionId};
use dsh_session_store::SessionWriter;
use parking_lot::Mutex;

pub use events::{CallEnd, CallView, CommandEnd, MessageId, PlanEntry, ResultBrief, SessionEvent};
pub use form::{Form, FormError, Lines, MAX_TRIES};
pub use hosted::{Attachments, HostedSession, OpenError, Opening, PromptError, Prompted, Running};
pub use input::{
    CommandError, Commands, Input, ListedCommand, PromptCall, SlashCommand, parse_input,
};
pub use person::{Answer, Person, Question};
pub use questions::Reach;
pub use servers::failure_message;
pub use sessions::Sessions;
pub use steering::{Choice, Knob, Steering};

use crate::Problem;
use crate::host::Host;
use crate::host::store::Recorded;
use crate::policy::always::{Remembered, Said, Scope};
use events::Narrator;

/// What a session shares with its approval, its questions and its
/// events: its person, its steering, its remembered answers.
pub(crate) struct SessionShared {
    pub(crate) id: SessionId,
    pub(crate) person: Arc<dyn Person>,
    pub(crate) steering: Mutex<Steering>,
    pub(crate) remembered: Mutex<Remembered>,
    /// What it knows its MCP tools by ([`changed_tools`]).
    pub(crate) prints: Mutex<changed_tools::Prints>,
    /// Where its choices are recorded, when it is.
    writer: Option<Arc<SessionWriter>>,
    pub(crate) narrator: Narrator,
}

/// The store's key prefix of a remembered answer, and its values.
const ALWAYS_PREFIX: &str = "always:";
const ALLOW: &str = "allow";
const REJECT: &str = "reject";

impl SessionShared {
    /// The shared state of `session` of `host`, for `person`: its
    /// steering and remembered answers restored from `settings` (a
    /// recorded session's), else a new session's.
    fn new(
        host: &Host,
        session: &Session,
        recorded: Option<&Recorded>,
        settings: &BTreeMap<String, String>,
        person: Arc<dyn Person>,
    ) -> Arc<Self> {
        let writer = recorded.map(|recorded| Arc::clone(&recorded.writer));
        let title = (host.recording().map(|recording| recording.store().clone())).filter(|store| {
            (store.info(session.id().as_str())).is_ok_and(|info| info.title.is_empty())
        });
        let shown = Arc::clone(&person);
        let narrator = Narrator::new(
            (session.id().clone(), session.events().len()),
            (host.runtime.tools.clone(), session.cwd()),
            (writer.clone(), title),
            Arc::new(move |event| shown.show(event)),
        );
        let mut remembered = Remembered::default();
        for (key, value) in settings {
            let scope = key.strip_prefix(ALWAYS_PREFIX).and_then(Scope::from_key);
            if let Some(scope) = scope {
                let said = match value.as_str() {
                    ALLOW => Said::Allowed,
                    _ => Said::Rejected,
                };
                remembered.remember(scope, said);
            }
        }
        Arc::new(Self {
            id: session.id().clone(),
            person,
            steering: Mutex::new(Steering::restore(host, settings)),
            remembered: Mutex::new(remembered),
            prints: Mutex::new(changed_tools::Prints::restore(settings)),
            writer,
            narrator,
        })
    }

    /// Shows `event` to the person.
    pub(crate) fn show(&self, event: SessionEvent) {
        self.narrator.show(event);
    }

    /// Says `warning` to the person.
    pub(crate) fn warn(&self, warning: String) {
        self.show(SessionEvent::Problem {
            problem: Problem::new(warning).warning(),
        });
    }

    /// Records setting `key` of the session, when it is recorded; a
    /// failure is said, the choice holding for this process.
    pub(crate) fn record(&self, key: &str, value: &str) {
        if let Some(writer) = &self.writer
            && let Err(error) = writer.set(key, value)
        {
            self.warn(format!(
                "the session's choice `{key}` = `{value}` was not recorded: {error}"
            ));
        }
    }

    /// Records `question`, shown while tool call `call_id` ran, for a
    /// load to show again; a failure is said.
    pub(crate) fn record_question(
        &self,
        call_id: &str,
        question: &dsh_session_store::RecordedQuestion,
    ) {
        if let Some(writer) = &self.writer
            && let Err(error) = writer.record_question(call_id, question)
        {
            self.warn(format!(
                "the sampling request `{}` of call `{call_id}` was not recorded, and a load \
                 will not show it: {error}",
                question.id
            ));
        }
    }

    /// Records a remembered answer under its scope's key.
    pub(crate) fn record_always(&self, scope_key: &str, said: Said) {
        let value = match said {
            Said::Allowed => ALLOW,
            Said::Rejected => REJECT,
        };
        self.record(&format!("{ALWAYS_PREFIX}{scope_key}"), value);
    }
}

/// The id of the agent's latest recorded session in `cwd`
/// (`--continue`).
pub(crate) fn latest(
    recording: &crate::host::store::Recording,
    cwd: &std::path::Path,
) -> Result<String, Vec<Problem>> {
    let latest = (recording.store().latest_in(cwd, Some(recording.agent())))
        .map_err(|error| vec![crate::host::store::problem(error)])?;
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

//! The session store of dsh: every session and its events in one embedded
//! SQLite file, written as they happen, so a session survives its process.
//!
//! ```
//! use std::sync::Arc;
//!
//! use dsh_agent_types::Event;
//! use dsh_session_store::{NewSession, Store};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # let dir = tempfile::tempdir()?;
//! let store = Store::open(dir.path().join("sessions.db"))?;
//! let writer = Arc::new(store.create(&NewSession::new("coder", "gpt-5").with_cwd("/work"))?);
//! // The loop's session passes each event it appends to the recorder
//! // (`Session::with_id(writer.session_id()).with_recorder(record)` in
//! // `dsh-agent-loop`), which writes it.
//! let record = writer.recorder();
//! record(&Event::UserMessage { text: "Fix the build.".into() });
//! assert!(writer.take_failure().is_none());
//! drop((record, writer));
//!
//! let info = store.latest_in("/work".as_ref(), None)?.expect("the session");
//! assert_eq!(info.title, "Fix the build.");
//! let (loaded, _writer) = store.resume(&info.id)?;
//! // A turn with no end (the process died) is closed on loading.
//! assert_eq!(loaded.events.len(), 2);
//! assert!(matches!(loaded.events[1], Event::TurnEnd { .. }));
//! # Ok(())
//! # }
//! ```
//!
//! # The file
//!
//! [`Store::default_path`] is `$XDG_STATE_HOME/dsh/sessions.db`
//! (`~/.local/state/dsh/sessions.db` when unset). [`Store::open`] creates
//! the directory with mode 0700 and the file with mode 0600 — it holds
//! conversations — and puts SQLite in WAL mode with a busy timeout, so
//! several dsh processes share one store: readers never wait, writers
//! queue. The schema has a version; an older store is migrated forward in
//! one transaction, and a store a newer dsh wrote is refused
//! ([`StoreError::TooNew`]) and never rewritten.
//!
//! What is at the path is checked before SQLite opens it. A FIFO, a
//! directory or a device there, or at the `-wal` and `-shm` files beside
//! it, is refused at once ([`StoreError::NotARegularFile`]): SQLite would
//! wait on a FIFO forever. A store file that group or others may open —
//! made by hand, or by an older dsh — is made private (0644 becomes 0600),
//! its `-wal` and `-shm` files too; one this user cannot change (another
//! user's) is refused, saying whose it is ([`StoreError::NotPrivate`]). A
//! file that is no SQLite database, or one damaged, is
//! [`StoreError::Damaged`] wherever SQLite finds it, and says how to go
//! on: move it aside, or run without the store.
//!
//! # Sessions and events
//!
//! A session row holds its id (a random UUID), agent, working directory,
//! deployment file and a hash of its content, model, created and updated
//! times, and title (its first prompt, shortened). Its events are the
//! loop's [`Event`](dsh_agent_types::Event)s, each a JSON record tagged
//! with its kind, each written in its own transaction when the loop
//! appends it ([`SessionWriter::recorder`]).
//!
//! # Nothing lost
//!
//! A killed process loses at most what its step in flight had not yet
//! appended: the model's answer is appended whole once it arrived, each
//! tool result once the tool returned. [`Store::load`] makes the log whole
//! again — each call with no result gets a failed one saying it was
//! interrupted ([`INTERRUPTED_CALL`]), the turn an end — so the session
//! resumes as a model and its API accept it. A record that cannot be read
//! (torn, or of a kind a newer dsh wrote) is skipped and reported in
//! [`LoadedSession::skipped`], never fatal to the rest.
//!
//! # The last request's prefix
//!
//! Beside its events, a session keeps the prefix of its last model
//! request — the system prompt, its sections and the tools
//! ([`RequestPrefix`]), replaced when it changes — so that a session
//! resumed by another process, perhaps on a changed deployment, can say
//! where its first request's prefix broke. A prefix that does not read is
//! skipped like any other record.
//!
//! # What the calls changed
//!
//! A front end that shows the files a tool call changed records each
//! change as it showed it ([`SessionWriter::record_change`], a
//! [`RecordedChange`]: the changed region before and after), so that a
//! session loaded later shows them again ([`Store::changes`]); the events
//! alone hold neither a file's text before a change nor after it. A
//! question a call's server put to the person meanwhile (a sampling
//! request, shown as a call of its own) is kept beside its changes
//! ([`SessionWriter::record_question`], [`Store::questions`]).
//!
//! # One writer per session
//!
//! [`Store::create`] and [`Store::resume`] hold the session's lock (an
//! advisory `flock` beside the store, which the kernel drops when the
//! process ends, however it ends) for as long as the [`SessionWriter`]
//! lives. Another process may [`load`](Store::load) it — reading never
//! writes — but not resume or delete it ([`StoreError::InUse`]).
#![deny(missing_docs)]

mod error;
mod file;
mod recover;
mod schema;
mod store;
mod title;

pub use error::StoreError;
pub use recover::{INTERRUPTED_CALL, INTERRUPTED_TURN};
pub use store::{
    ListQuery, LoadedSession, NewSession, RecordedChange, RecordedQuestion, RequestPrefix,
    SessionInfo, SessionWriter, SkippedRecord, Store, now_ms,
};

/// dsh's state directory, where what it keeps for the user lives (the
/// session store, MCP logins): `$XDG_STATE_HOME/dsh`, or
/// `~/.local/state/dsh` when `XDG_STATE_HOME` is unset (or not absolute,
/// which the XDG spec says to ignore). The one rule of where it is.
pub fn state_dir() -> Result<std::path::PathBuf, StoreError> {
    let absolute = |name| {
        std::env::var_os(name)
            .map(std::path::PathBuf::from)
            .filter(|path| path.is_absolute())
    };
    let state = match absolute("XDG_STATE_HOME") {
        Some(state) => state,
        None => absolute("HOME")
            .ok_or(StoreError::NoDefaultPath)?
            .join(".local/state"),
    };
    Ok(state.join("dsh"))
}

//! [`Store`]: one SQLite file of sessions; [`SessionWriter`]: one
//! session's events, written as they happen.

use std::collections::BTreeMap;
use std::fmt;
use std::fs::{DirBuilder, File, OpenOptions};
use std::ops::Range;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use dsh_agent_types::{Event, SessionId};
use nix::fcntl::{Flock, FlockArg};
use parking_lot::Mutex;
use rusqlite::config::DbConfig;
use rusqlite::{Connection, OptionalExtension, TransactionBehavior};
use serde::{Deserialize, Serialize};

use crate::StoreError;
use crate::file;
use crate::recover::close_open_turns;
use crate::schema;
use crate::title::title_of;

/// How long a write waits for another process's write to finish before
/// failing: far longer than any one event takes.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// A session store: one SQLite file, shared safely by every dsh process
/// that opens it (WAL, a busy timeout, one writer per session).
///
/// Cheap to clone: clones share one connection.
#[derive(Clone)]
pub struct Store {
    inner: Arc<Inner>,
}

struct Inner {
    path: PathBuf,
    conn: Mutex<Connection>,
}

impl fmt::Debug for Store {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Store")
            .field("path", &self.inner.path)
            .finish_non_exhaustive()
    }
}

/// What a new session is: who runs it, where, on what.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct NewSession {
    /// The agent's id.
    pub agent: String,
    /// The session's working directory.
    pub cwd: Option<PathBuf>,
    /// The deployment file the agent came from.
    pub deployment: Option<PathBuf>,
    /// A hash of the deployment file's content, to tell later whether it
    /// changed.
    pub deployment_hash: Option<String>,
    /// The agent's model.
    pub model: String,
}

impl NewSession {
    /// A session of `agent` running `model`.
    pub fn new(agent: impl Into<String>, model: impl Into<String>) -> Self {
        Self {
            agent: agent.into(),
            model: model.into(),
            ..Self::default()
        }
    }

    /// Sets the working directory.
    pub fn with_cwd(mut self, cwd: impl Into<PathBuf>) -> Self {
        self.cwd = Some(cwd.into());
        self
    }

    /// Sets the deployment file and the hash of its content.
    pub fn with_deployment(mut self, path: impl Into<PathBuf>, hash: impl Into<String>) -> Self {
        self.deployment = Some(path.into());
        self.deployment_hash = Some(hash.into());
        self
    }
}

/// A stored session, without its events.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct SessionInfo {
    /// The session's id.
    pub id: String,
    /// The agent's id.
    pub agent: String,
    /// The working directory.
    pub cwd: Option<PathBuf>,
    /// The deployment file.
    pub deployment: Option<PathBuf>,
    /// The hash of the deployment file's content when the session began.
    pub deployment_hash: Option<String>,
    /// The model.
    pub model: String,
    /// When the session began, in milliseconds since the Unix epoch.
    pub created_at_ms: i64,
    /// When its last event was written, likewise.
    pub updated_at_ms: i64,
    /// Its first prompt, shortened; empty before the first prompt.
    pub title: String,
}

/// Which sessions [`Store::list`] returns.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct ListQuery {
    /// Only sessions of this working directory.
    pub cwd: Option<PathBuf>,
    /// Only sessions of this agent.
    pub agent: Option<String>,
    /// Only sessions updated before this (the cursor of the page before:
    /// its last session's `(updated_at_ms, id)`).
    pub before: Option<(i64, String)>,
    /// At most this many; `None`: all.
    pub limit: Option<usize>,
}

/// A stored session with its events, made whole (see
/// [`Store::load`]).
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct LoadedSession {
    /// The session.
    pub info: SessionInfo,
    /// Its events, oldest first, each turn a crash left open closed.
    pub events: Vec<Event>,
    /// The events added at the end to close a turn a crash left open.
    pub closed: Vec<Event>,
    /// The records that could not be read, skipped.
    pub skipped: Vec<SkippedRecord>,
    /// The prefix of the session's last request, if one was recorded
    /// ([`SessionWriter::record_prefix`]).
    pub prefix: Option<RequestPrefix>,
    /// What a person chose for the session, by key
    /// ([`SessionWriter::set`]).
    pub settings: std::collections::BTreeMap<String, String>,
}

/// The start of a model request that a provider's prompt cache can serve —
/// its system prompt and its tools — as dsh sent it. A session keeps the
/// prefix of its last request ([`SessionWriter::record_prefix`]), so that
/// the first request of the session resumed in another process can be
/// compared with it: when the deployment changed in between, a trace then
/// shows where the prefix broke.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct RequestPrefix {
    /// The system prompt.
    pub system_prompt: String,
    /// Its sections, in order: each one's name and byte range in
    /// [`system_prompt`](Self::system_prompt).
    pub sections: Vec<(String, Range<usize>)>,
    /// The tools, in order: each one's name and its schema as the request
    /// carried it.
    pub tools: Vec<(String, String)>,
}

impl RequestPrefix {
    /// A prefix of a system prompt, its sections and its tools.
    pub fn new(
        system_prompt: impl Into<String>,
        sections: Vec<(String, Range<usize>)>,
        tools: Vec<(String, String)>,
    ) -> Self {
        Self {
            system_prompt: system_prompt.into(),
            sections,
            tools,
        }
    }
}

/// A file a tool call changed, as a front end showed it
/// ([`SessionWriter::record_change`]): the changed region of its text
/// before and after, and where it starts.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct RecordedChange {
    /// The file, absolute.
    pub path: PathBuf,
    /// The region before; `None` when the call created the file.
    pub old_text: Option<String>,
    /// The region after.
    pub new_text: String,
    /// The first line of the file that changed, from 1.
    pub line: u32,
}

impl RecordedChange {
    /// The change of `path` from `old_text` to `new_text` at `line`.
    pub fn new(path: PathBuf, old_text: Option<String>, new_text: String, line: u32) -> Self {
        Self {
            path,
            old_text,
            new_text,
            line,
        }
    }
}

/// A question a tool call's server put to the person while the call ran
/// (a sampling request, shown as a call of its own), as a front end
/// showed it ([`SessionWriter::record_question`]): kept with the files the
/// call changed, so that a session loaded later shows it again
/// ([`Store::questions`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct RecordedQuestion {
    /// The id of the call that showed it (`sampling-…`).
    pub id: String,
    /// Its title.
    pub title: String,
    /// What it showed (what the server sends the model, escaped, cut).
    pub text: String,
    /// Its input, as a front end shows it.
    pub input: serde_json::Value,
    /// Whether it was answered (the model answered) or failed (declined,
    /// withdrawn, the model failed).
    pub answered: bool,
}

impl RecordedQuestion {
    /// The question `id`, titled `title`, showing `text` and `input`,
    /// `answered` or not.
    pub fn new(
        id: String,
        title: String,
        text: String,
        input: serde_json::Value,
        answered: bool,
    ) -> Self {
        Self {
            id,
            title,
            text,
            input,
            answered,
        }
    }
}

/// A question's record in the table of what the calls showed: wrapped,
/// so that it never reads as a [`RecordedChange`] (and a dsh that knows no
/// questions skips it).
#[derive(Serialize, Deserialize)]
struct QuestionRecord {
    question: RecordedQuestion,
}

/// A record of the store that could not be read as an event: torn,
/// unreadable, or of a kind this dsh does not know.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct SkippedRecord {
    /// The session.
    pub session: String,
    /// The record's position in the session, from 1 (0: the request
    /// prefix, which has none).
    pub seq: i64,
    /// The kind it claims.
    pub kind: String,
    /// Why it could not be read.
    pub reason: String,
}

impl fmt::Display for SkippedRecord {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "record {} (`{}`) of session `{}` was skipped: {}",
            self.seq, self.kind, self.session, self.reason
        )
    }
}

impl Store {
    /// The default file: `$XDG_STATE_HOME/dsh/sessions.db`, or
    /// `~/.local/state/dsh/sessions.db` when `XDG_STATE_HOME` is unset
    /// (or not absolute, which the XDG spec says to ignore): the file
    /// `sessions.db` of [`state_dir`](crate::state_dir).
    pub fn default_path() -> Result<PathBuf, StoreError> {
        Ok(crate::state_dir()?.join("sessions.db"))
    }

    /// Opens the store at `path`, creating it (and its directory, mode
    /// 0700; the file is mode 0600: it holds conversations) if need be,
    /// and migrating an older schema forward. A store written by a newer
    /// dsh is an error, and is left untouched.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, StoreError> {
        let path = path.as_ref().to_owned();
        // Create the file before SQLite does, with the mode it must have
        // (SQLite gives its `-wal` and `-shm` files the same), and refuse
        // one SQLite must not open.
        file::prepare(&path)?;
        let mut conn =
            Connection::open(&path).map_err(StoreError::sqlite(&path, "while opening the file"))?;
        conn.busy_timeout(BUSY_TIMEOUT)
            .map_err(StoreError::sqlite(&path, "while setting the busy timeout"))?;
        schema::migrate(&mut conn, &path)?;
        // In WAL mode, NORMAL loses nothing when the process dies (the
        // log is in the file system's hands); only a power cut may lose
        // the last transactions. FULL would sync every event to disk.
        conn.pragma_update(None, "synchronous", "NORMAL")
            .map_err(StoreError::sqlite(&path, "while setting `synchronous`"))?;
        // The last connection to close would checkpoint the WAL into the
        // file and sync it: ~0.1 s of every `dsh run`'s exit on a busy
        // disk. The WAL is as safe as the file; SQLite checkpoints it as
        // it grows (every 1,000 pages), and the next process reads it.
        conn.set_db_config(DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, true)
            .map_err(StoreError::sqlite(&path, "while configuring checkpoints"))?;
        Ok(Self {
            inner: Arc::new(Inner {
                path,
                conn: Mutex::new(conn),
            }),
        })
    }

    /// The store's file.
    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// Starts a new session with a fresh id, open for writing in this
    /// process.
    pub fn create(&self, new: &NewSession) -> Result<SessionWriter, StoreError> {
        let id = uuid::Uuid::new_v4().to_string();
        let lock = self.lock(&id)?;
        let now = now_ms();
        self.inner
            .conn
            .lock()
            .execute(
                "INSERT INTO sessions \
                 (id, agent, cwd, deployment, deployment_hash, model, created_at, updated_at, title) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?7, '')",
                (
                    &id,
                    &new.agent,
                    new.cwd.as_deref().map(path_text),
                    new.deployment.as_deref().map(path_text),
                    &new.deployment_hash,
                    &new.model,
                    now,
                ),
            )
            .map_err(self.failed("while creating a session"))?;
        Ok(SessionWriter::new(self.clone(), id, lock, 1))
    }

    /// Opens the session `id` for writing in this process: its history,
    /// made whole (the events that close a turn a crash left open are
    /// written back), and its writer. A session another process has open
    /// is [`StoreError::InUse`].
    pub fn resume(&self, id: &str) -> Result<(LoadedSession, SessionWriter), StoreError> {
        self.info(id)?;
        let lock = self.lock(id)?;
        // Loaded under the lock: nobody else writes it now.
        let loaded = self.load(id)?;
        let next = self.next_seq(id)?;
        let writer = SessionWriter::new(self.clone(), id.to_owned(), lock, next);
        for event in &loaded.closed {
            writer.append(event)?;
        }
        Ok((loaded, writer))
    }

    /// The session `id`, without its events.
    pub fn info(&self, id: &str) -> Result<SessionInfo, StoreError> {
        self.inner
            .conn
            .lock()
            .query_row(
                &format!("SELECT {INFO_COLUMNS} FROM sessions WHERE id = ?1"),
                [id],
                info_of_row,
            )
            .optional()
            .map_err(self.failed("while reading a session"))?
            .ok_or_else(|| self.not_found(id))
    }

    /// The session `id` with its events, oldest first, as a resumed
    /// session continues it: each turn a crash left open is closed — its
    /// calls without result get a failed one saying they were interrupted
    /// ([`INTERRUPTED_CALL`](crate::INTERRUPTED_CALL)), the turn an end. A
    /// record that cannot be read is skipped and reported in
    /// [`skipped`](LoadedSession::skipped), never fatal to the rest.
    ///
    /// Reading never writes: a session open in another process loads as
    /// far as it was written.
    pub fn load(&self, id: &str) -> Result<LoadedSession, StoreError> {
        let info = self.info(id)?;
        let conn = self.inner.conn.lock();
        let mut query = conn
            .prepare("SELECT seq, kind, body FROM events WHERE session_id = ?1 ORDER BY seq")
            .map_err(self.failed("while loading a session"))?;
        let rows = query
            .query_map([id], |row| {
                Ok((
                    row.get::<_, i64>(0)?,
                    row.get::<_, String>(1)?,
                    // A body that is not text (a torn write by something
                    // else) reads as an error below, not here.
                    row.get::<_, rusqlite::types::Value>(2)?,
                ))
            })
            .map_err(self.failed("while loading a session"))?;
        let mut events = Vec::new();
        let mut skipped = Vec::new();
        for row in rows {
            let (seq, kind, body) = row.map_err(self.failed("while loading a session"))?;
            let skip = |reason: String| SkippedRecord {
                session: id.to_owned(),
                seq,
                kind: kind.clone(),
                reason,
            };
            let rusqlite::types::Value::Text(body) = body else {
                skipped.push(skip("its body is not text".to_owned()));
                continue;
            };
            match serde_json::from_str::<Event>(&body) {
                Ok(event) => events.push(event),
                Err(error) if error.is_data() && !is_known_kind(&kind) => skipped.push(skip(
                    format!("this dsh does not know the kind `{kind}` (a newer dsh wrote it)"),
                )),
                Err(error) => skipped.push(skip(format!("it does not read as an event: {error}"))),
            }
        }
        let closed = close_open_turns(&mut events);
        let prefix = match self.prefix_of(&conn, id)? {
            Some(Ok(prefix)) => Some(prefix),
            Some(Err(reason)) => {
                skipped.push(SkippedRecord {
                    session: id.to_owned(),
                    seq: 0,
                    kind: PREFIX_KIND.to_owned(),
                    reason,
                });
                None
            }
            None => None,
        };
        let settings = self.settings_of(&conn, id)?;
        Ok(LoadedSession {
            info,
            events,
            closed,
            skipped,
            prefix,
            settings,
        })
    }

    /// The sessions `query` selects, the most recently updated first.
    pub fn list(&self, query: &ListQuery) -> Result<Vec<SessionInfo>, StoreError> {
        let conn = self.inner.conn.lock();
        let mut sql = format!("SELECT {INFO_COLUMNS} FROM sessions WHERE 1");
        let mut params: Vec<Box<dyn rusqlite::ToSql>> = Vec::new();
        if let Some(cwd) = &query.cwd {
            params.push(Box::new(path_text(cwd)));
            sql.push_str(&format!(" AND cwd = ?{}", params.len()));
        }
        if let Some(agent) = &query.agent {
            params.push(Box::new(agent.clone()));
            sql.push_str(&format!(" AND agent = ?{}", params.len()));
        }
        if let Some((updated, id)) = &query.before {
            params.push(Box::new(*updated));
            params.push(Box::new(id.clone()));
            let (u, i) = (params.len() - 1, params.len());
            sql.push_str(&format!(
                " AND (updated_at < ?{u} OR (updated_at = ?{u} AND id < ?{i}))"
            ));
        }
        sql.push_str(" ORDER BY updated_at DESC, id DESC");
        if let Some(limit) = query.limit {
            sql.push_str(&format!(" LIMIT {limit}"));
        }
        let mut select = conn
            .prepare(&sql)
            .map_err(self.failed("while listing sessions"))?;
        let rows = select
            .query_map(rusqlite::params_from_iter(params.iter()), info_of_row)
            .map_err(self.failed("while listing sessions"))?;
        rows.collect::<rusqlite::Result<_>>()
            .map_err(self.failed("while listing sessions"))
    }

    /// The most recently updated session of the working directory `cwd`
    /// (of `agent`'s, if given).
    pub fn latest_in(
        &self,
        cwd: &Path,
        agent: Option<&str>,
    ) -> Result<Option<SessionInfo>, StoreError> {
        let query = ListQuery {
            cwd: Some(cwd.to_owned()),
            agent: agent.map(str::to_owned),
            limit: Some(1),
            ..ListQuery::default()
        };
        Ok(self.list(&query)?.into_iter().next())
    }

    /// Deletes the session `id` and its events. A session another process
    /// has open is [`StoreError::InUse`], and stays.
    pub fn delete(&self, id: &str) -> Result<(), StoreError> {
        self.info(id)?;
        let lock = self.lock(id)?;
        // Deleted by another process while this one waited for the lock?
        self.info(id)?;
        {
            let mut conn = self.inner.conn.lock();
            let tx = conn
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .map_err(self.failed("while deleting a session"))?;
            tx.execute("DELETE FROM events WHERE session_id = ?1", [id])
                .and_then(|_| tx.execute("DELETE FROM prefixes WHERE session_id = ?1", [id]))
                .and_then(|_| tx.execute("DELETE FROM settings WHERE session_id = ?1", [id]))
                .and_then(|_| tx.execute("DELETE FROM changes WHERE session_id = ?1", [id]))
                .and_then(|_| tx.execute("DELETE FROM sessions WHERE id = ?1", [id]))
                .and_then(|_| tx.commit())
                .map_err(self.failed("while deleting a session"))?;
        }
        // Held: nobody else can be using the file. One that opened it
        // before the unlink finds the session gone once it holds it.
        let _ = std::fs::remove_file(self.lock_path(id));
        drop(lock);
        Ok(())
    }

    /// Deletes every session no other process has open; returns the ids
    /// of those left because one has.
    pub fn delete_all(&self) -> Result<Vec<String>, StoreError> {
        let mut in_use = Vec::new();
        for info in self.list(&ListQuery::default())? {
            match self.delete(&info.id) {
                Ok(()) | Err(StoreError::NotFound { .. }) => {}
                Err(StoreError::InUse { id }) => in_use.push(id),
                Err(error) => return Err(error),
            }
        }
        Ok(in_use)
    }

    /// Appends one event to the session `id`, in its own transaction,
    /// with the session's `updated_at` (and its title, at its first
    /// prompt).
    fn append(&self, id: &str, seq: i64, event: &Event) -> Result<(), StoreError> {
        let body = serde_json::to_value(event).map_err(|source| StoreError::Serialize {
            id: id.to_owned(),
            source,
        })?;
        let kind = body
            .get("type")
            .and_then(serde_json::Value::as_str)
            .unwrap_or("unknown")
            .to_owned();
        let title = match event {
            Event::UserMessage { text } => title_of(text),
            _ => String::new(),
        };
        let now = now_ms();
        let mut conn = self.inner.conn.lock();
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(self.failed("while recording an event"))?;
        tx.execute(
            "INSERT INTO events (session_id, seq, kind, body, at) VALUES (?1, ?2, ?3, ?4, ?5)",
            (id, seq, &kind, body.to_string(), now),
        )
        .and_then(|_| {
            tx.execute(
                "UPDATE sessions SET updated_at = ?2, \
                 title = CASE WHEN title = '' THEN ?3 ELSE title END WHERE id = ?1",
                (id, now, title),
            )
        })
        .and_then(|_| tx.commit())
        .map_err(self.failed("while recording an event"))
    }

    /// The recorded prefix of session `id`: `None` when there is none,
    /// the reason when its record does not read.
    fn prefix_of(
        &self,
        conn: &Connection,
        id: &str,
    ) -> Result<Option<Result<RequestPrefix, String>>, StoreError> {
        let body = conn
            .query_row(
                "SELECT body FROM prefixes WHERE session_id = ?1",
                [id],
                |row| row.get::<_, rusqlite::types::Value>(0),
            )
            .optional()
            .map_err(self.failed("while loading a session"))?;
        Ok(body.map(|body| match body {
            rusqlite::types::Value::Text(body) => serde_json::from_str(&body)
                .map_err(|error| format!("it does not read as a request prefix: {error}")),
            _ => Err("its body is not text".to_owned()),
        }))
    }

    /// The settings of session `id`.
    fn settings_of(
        &self,
        conn: &Connection,
        id: &str,
    ) -> Result<std::collections::BTreeMap<String, String>, StoreError> {
        const DOING: &str = "while loading a session's settings";
        let mut query = conn
            .prepare("SELECT key, value FROM settings WHERE session_id = ?1")
            .map_err(self.failed(DOING))?;
        let rows = query
            .query_map([id], |row| {
                Ok((row.get::<_, String>(0)?, row.get::<_, String>(1)?))
            })
            .map_err(self.failed(DOING))?;
        rows.collect::<Result<_, _>>().map_err(self.failed(DOING))
    }

    /// The files the tool calls of session `id` changed, by call, each
    /// call's in order ([`SessionWriter::record_change`]); a record that
    /// does not read is left out.
    pub fn changes(&self, id: &str) -> Result<BTreeMap<String, Vec<RecordedChange>>, StoreError> {
        self.by_call(id, "while loading a session's file changes", |body| {
            serde_json::from_str(body).ok()
        })
    }

    /// The questions the servers of the tool calls of session `id` put
    /// to the person, by call, each call's in order
    /// ([`SessionWriter::record_question`]); a record that does not read
    /// is left out.
    pub fn questions(
        &self,
        id: &str,
    ) -> Result<BTreeMap<String, Vec<RecordedQuestion>>, StoreError> {
        self.by_call(id, "while loading a session's questions", |body| {
            serde_json::from_str::<QuestionRecord>(body)
                .ok()
                .map(|record| record.question)
        })
    }

    /// The records of the `changes` table of session `id` that `read`
    /// reads, by call, each call's in order. (A file change and a
    /// question share the table; each reads only its own.)
    fn by_call<T>(
        &self,
        id: &str,
        doing: &'static str,
        read: impl Fn(&str) -> Option<T>,
    ) -> Result<BTreeMap<String, Vec<T>>, StoreError> {
        let conn = self.inner.conn.lock();
        let mut query = conn
            .prepare(
                "SELECT call_id, body FROM changes WHERE session_id = ?1 ORDER BY call_id, seq",
            )
            .map_err(self.failed(doing))?;
        let rows = query
            .query_map([id], |row| {
                Ok((row.get::<_, String>(0)?, row.get::<_, String>(1)?))
            })
            .map_err(self.failed(doing))?;
        let mut records: BTreeMap<String, Vec<T>> = BTreeMap::new();
        for row in rows {
            let (call, body) = row.map_err(self.failed(doing))?;
            if let Some(record) = read(&body) {
                records.entry(call).or_default().push(record);
            }
        }
        Ok(records)
    }

    /// Appends `change` to what call `call_id` of session `id` changed.
    fn record_change(
        &self,
        id: &str,
        call_id: &str,
        change: &RecordedChange,
    ) -> Result<(), StoreError> {
        let body = serde_json::to_string(change).map_err(|source| StoreError::Serialize {
            id: id.to_owned(),
            source,
        })?;
        self.record_shown(id, call_id, body)
    }

    /// Appends `question` to what call `call_id` of session `id` showed.
    fn record_question(
        &self,
        id: &str,
        call_id: &str,
        question: &RecordedQuestion,
    ) -> Result<(), StoreError> {
        let record = QuestionRecord {
            question: question.clone(),
        };
        let body = serde_json::to_string(&record).map_err(|source| StoreError::Serialize {
            id: id.to_owned(),
            source,
        })?;
        self.record_shown(id, call_id, body)
    }

    /// Appends `body` to what call `call_id` of session `id` showed.
    fn record_shown(&self, id: &str, call_id: &str, body: String) -> Result<(), StoreError> {
        self.inner
            .conn
            .lock()
            .execute(
                "INSERT INTO changes (session_id, call_id, seq, body, at) \
                 SELECT ?1, ?2, COALESCE(MAX(seq), 0) + 1, ?3, ?4 FROM changes \
                 WHERE session_id = ?1 AND call_id = ?2",
                (id, call_id, body, now_ms()),
            )
            .map(drop)
            .map_err(self.failed("while recording a file change"))
    }

    /// Sets setting `key` of session `id` to `value`.
    fn set(&self, id: &str, key: &str, value: &str) -> Result<(), StoreError> {
        self.inner
            .conn
            .lock()
            .execute(
                "INSERT INTO settings (session_id, key, value, at) VALUES (?1, ?2, ?3, ?4) \
                 ON CONFLICT (session_id, key) DO UPDATE SET value = excluded.value, at = excluded.at",
                (id, key, value, now_ms()),
            )
            .map(drop)
            .map_err(self.failed("while recording a session's setting"))
    }

    /// Replaces the recorded prefix of session `id`.
    fn record_prefix(&self, id: &str, prefix: &RequestPrefix) -> Result<(), StoreError> {
        let body = serde_json::to_string(prefix).map_err(|source| StoreError::Serialize {
            id: id.to_owned(),
            source,
        })?;
        self.inner
            .conn
            .lock()
            .execute(
                "INSERT INTO prefixes (session_id, body, at) VALUES (?1, ?2, ?3) \
                 ON CONFLICT (session_id) DO UPDATE SET body = excluded.body, at = excluded.at",
                (id, body, now_ms()),
            )
            .map(drop)
            .map_err(self.failed("while recording a request prefix"))
    }

    fn next_seq(&self, id: &str) -> Result<i64, StoreError> {
        self.inner
            .conn
            .lock()
            .query_row(
                "SELECT COALESCE(MAX(seq), 0) + 1 FROM events WHERE session_id = ?1",
                [id],
                |row| row.get(0),
            )
            .map_err(self.failed("while reading a session"))
    }

    /// Where the lock of session `id` lives: beside the store, like its
    /// `-wal` and `-shm` files.
    fn lock_path(&self, id: &str) -> PathBuf {
        let mut dir = self.inner.path.clone().into_os_string();
        dir.push("-locks");
        PathBuf::from(dir).join(id)
    }

    /// Takes the session's lock: an advisory `flock`, which the kernel
    /// releases when the process ends however it ends, so a killed dsh
    /// never leaves a session locked.
    fn lock(&self, id: &str) -> Result<Flock<File>, StoreError> {
        // Ids are uuids (or, from a client, checked to exist first); keep
        // anything else out of the file system anyway.
        if id.is_empty() || !id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') {
            return Err(self.not_found(id));
        }
        let path = self.lock_path(id);
        if let Some(dir) = path.parent() {
            DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir)
                .map_err(StoreError::io(dir))?;
        }
        // Read and write, without blocking: a FIFO put there opens at once
        // (opened only for writing, it would wait for a reader), and is
        // refused.
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .read(true)
            .write(true)
            .mode(0o600)
            .custom_flags(nix::libc::O_NONBLOCK | nix::libc::O_NOCTTY)
            .open(&path)
            .map_err(StoreError::io(&path))?;
        let opened = file.metadata().map_err(StoreError::io(&path))?;
        file::refuse_special(&path, opened.file_type())?;
        Flock::lock(file, FlockArg::LockExclusiveNonblock).map_err(|(_, errno)| {
            if errno == nix::errno::Errno::EWOULDBLOCK {
                StoreError::InUse { id: id.to_owned() }
            } else {
                StoreError::Io {
                    path,
                    source: std::io::Error::from(errno),
                }
            }
        })
    }

    fn failed(&self, doing: &'static str) -> impl FnOnce(rusqlite::Error) -> StoreError {
        StoreError::sqlite(&self.inner.path, doing)
    }

    fn not_found(&self, id: &str) -> StoreError {
        StoreError::NotFound {
            id: id.to_owned(),
            path: self.inner.path.clone(),
        }
    }
}

/// One session open for writing in this process: it holds the session's
/// lock until dropped, and writes each event in its own transaction.
pub struct SessionWriter {
    store: Store,
    id: String,
    _lock: Flock<File>,
    next: Mutex<i64>,
    /// Whether [`recorder`](Self::recorder) failed.
    failure: Mutex<Failure>,
}

impl fmt::Debug for SessionWriter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SessionWriter")
            .field("store", &self.store)
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

impl SessionWriter {
    fn new(store: Store, id: String, lock: Flock<File>, next: i64) -> Self {
        Self {
            store,
            id,
            _lock: lock,
            next: Mutex::new(next),
            failure: Mutex::new(Failure::None),
        }
    }

    /// The session's id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The session's id, as the loop names sessions.
    pub fn session_id(&self) -> SessionId {
        SessionId::new(self.id.as_str())
    }

    /// The store.
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// Writes `event` after the session's last, in its own transaction.
    pub fn append(&self, event: &Event) -> Result<(), StoreError> {
        let mut next = self.next.lock();
        self.store.append(&self.id, *next, event)?;
        *next += 1;
        Ok(())
    }

    /// Records `prefix` as the prefix of the session's last request,
    /// replacing the one recorded before. Call it when a request's prefix
    /// differs from the last one recorded: once per process, when the
    /// prompt does not change.
    pub fn record_prefix(&self, prefix: &RequestPrefix) -> Result<(), StoreError> {
        self.store.record_prefix(&self.id, prefix)
    }

    /// Records what a person chose for the session: setting `key` is
    /// `value` (replacing what it was), restored with the session
    /// ([`LoadedSession::settings`]).
    pub fn set(&self, key: &str, value: &str) -> Result<(), StoreError> {
        self.store.set(&self.id, key, value)
    }

    /// Records that tool call `call_id` changed a file as `change` shows
    /// it, after what it changed before; [`Store::changes`] reads them
    /// back.
    pub fn record_change(&self, call_id: &str, change: &RecordedChange) -> Result<(), StoreError> {
        self.store.record_change(&self.id, call_id, change)
    }

    /// Records that while tool call `call_id` ran, its server put
    /// `question` to the person, after what it showed before;
    /// [`Store::questions`] reads them back.
    pub fn record_question(
        &self,
        call_id: &str,
        question: &RecordedQuestion,
    ) -> Result<(), StoreError> {
        self.store.record_question(&self.id, call_id, question)
    }

    /// A recorder for the loop's `Session::with_recorder`
    /// (`dsh-agent-loop`): appends each event. The first failure is kept for
    /// [`take_failure`](Self::take_failure), and once one happened the
    /// rest are not tried: a log with a hole would resume wrong.
    pub fn recorder(self: &Arc<Self>) -> impl Fn(&Event) + Send + Sync + 'static {
        let writer = Arc::clone(self);
        move |event| {
            let mut failure = writer.failure.lock();
            if matches!(*failure, Failure::None)
                && let Err(error) = writer.append(event)
            {
                *failure = Failure::Unreported(error);
            }
        }
    }

    /// The recorder's failure, once: later calls return `None`, and
    /// recording stays off.
    pub fn take_failure(&self) -> Option<StoreError> {
        let mut failure = self.failure.lock();
        match std::mem::replace(&mut *failure, Failure::Reported) {
            Failure::Unreported(error) => Some(error),
            Failure::None => {
                *failure = Failure::None;
                None
            }
            Failure::Reported => None,
        }
    }
}

/// Whether a recorder failed, and whether it was told.
enum Failure {
    None,
    Unreported(StoreError),
    Reported,
}

/// The kind a skipped prefix record is reported with.
const PREFIX_KIND: &str = "request_prefix";

fn is_known_kind(kind: &str) -> bool {
    const KNOWN: &[&str] = &[
        "user_message",
        "step_start",
        "context",
        "assistant_message",
        "tool_call",
        "tool_result",
        "turn_end",
        "compacted",
    ];
    KNOWN.contains(&kind)
}

const INFO_COLUMNS: &str =
    "id, agent, cwd, deployment, deployment_hash, model, created_at, updated_at, title";

fn info_of_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<SessionInfo> {
    Ok(SessionInfo {
        id: row.get(0)?,
        agent: row.get(1)?,
        cwd: row.get::<_, Option<String>>(2)?.map(PathBuf::from),
        deployment: row.get::<_, Option<String>>(3)?.map(PathBuf::from),
        deployment_hash: row.get(4)?,
        model: row.get(5)?,
        created_at_ms: row.get(6)?,
        updated_at_ms: row.get(7)?,
        title: row.get(8)?,
    })
}

/// A path as the store keeps it. Non-UTF-8 bytes are replaced: the path
/// is for showing and for matching a `cwd` written the same way.
fn path_text(path: &Path) -> String {
    path.to_string_lossy().into_owned()
}

/// Now, on the store's clock: milliseconds since the Unix epoch, as
/// [`SessionInfo::created_at_ms`] and [`SessionInfo::updated_at_ms`] are
/// written.
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| {
            i64::try_from(since.as_millis()).unwrap_or(i64::MAX)
        })
}

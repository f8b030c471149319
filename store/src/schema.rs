//! The store's schema, its version (SQLite's `user_version`), and the
//! forward migrations from every older version.
//!
//! A migration runs in one `IMMEDIATE` transaction that re-reads the
//! version first, so two processes opening an old store at once migrate it
//! once. A store newer than [`CURRENT`] is refused before anything is
//! written to it: not even the journal mode is changed.

use std::path::Path;

use rusqlite::{Connection, TransactionBehavior};

use crate::StoreError;
use crate::title::title_of;

/// The schema version this binary writes.
pub(crate) const CURRENT: i64 = 5;

/// Version 1: sessions and their events.
pub(crate) const V1: &str = "
CREATE TABLE sessions (
    id TEXT PRIMARY KEY NOT NULL,
    agent TEXT NOT NULL,
    cwd TEXT,
    deployment TEXT,
    deployment_hash TEXT,
    model TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);
CREATE TABLE events (
    session_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    kind TEXT NOT NULL,
    body TEXT NOT NULL,
    at INTEGER NOT NULL,
    PRIMARY KEY (session_id, seq)
) WITHOUT ROWID;
";

/// Version 2: a session's title (its first prompt, shortened), and the
/// index `dsh run --continue` and `session/list` read by.
const V2: &str = "
ALTER TABLE sessions ADD COLUMN title TEXT NOT NULL DEFAULT '';
CREATE INDEX sessions_by_cwd ON sessions (cwd, updated_at DESC);
";

/// Version 3: each session's last request prefix (its system prompt and
/// tools), which the first request of a resumed session is compared with.
const V3: &str = "
CREATE TABLE prefixes (
    session_id TEXT PRIMARY KEY NOT NULL,
    body TEXT NOT NULL,
    at INTEGER NOT NULL
) WITHOUT ROWID;
";

/// Version 4: what a person chose for a session (its mode, its model, the
/// answers given "always"), by key, restored when it is opened again.
const V4: &str = "
CREATE TABLE settings (
    session_id TEXT NOT NULL,
    key TEXT NOT NULL,
    value TEXT NOT NULL,
    at INTEGER NOT NULL,
    PRIMARY KEY (session_id, key)
) WITHOUT ROWID;
";

/// Version 5: the files each tool call changed, as a front end showed
/// them (the changed region), by call, in order; replayed when the session
/// is loaded. The questions its server put to the person meanwhile
/// (sampling requests) are kept here too, each body wrapped
/// (`{"question": …}`) so it never reads as a change.
const V5: &str = "
CREATE TABLE changes (
    session_id TEXT NOT NULL,
    call_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    body TEXT NOT NULL,
    at INTEGER NOT NULL,
    PRIMARY KEY (session_id, call_id, seq)
) WITHOUT ROWID;
";

/// Brings the database at `path` to [`CURRENT`], or says why not.
pub(crate) fn migrate(conn: &mut Connection, path: &Path) -> Result<(), StoreError> {
    let found = version(conn, path)?;
    if found > CURRENT {
        return Err(too_new(path, found));
    }
    if found == 0 && has_tables(conn, path)? {
        return Err(StoreError::NotAStore {
            path: path.to_owned(),
        });
    }
    // WAL: readers never wait for the writer, and several processes share
    // the file. Persistent, so set once; harmless to repeat.
    conn.pragma_update(None, "journal_mode", "WAL")
        .map_err(StoreError::sqlite(path, "while turning on WAL"))?;
    if found == CURRENT {
        return Ok(());
    }
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(StoreError::sqlite(path, "while starting a migration"))?;
    // Another process may have migrated while this one waited.
    let found = version(&tx, path)?;
    if found > CURRENT {
        return Err(too_new(path, found));
    }
    let failed = StoreError::sqlite(path, "while migrating the schema");
    let step = |tx: &rusqlite::Transaction<'_>, from: i64| -> rusqlite::Result<()> {
        match from {
            0 => tx.execute_batch(V1),
            1 => {
                tx.execute_batch(V2)?;
                backfill_titles(tx)
            }
            2 => tx.execute_batch(V3),
            3 => tx.execute_batch(V4),
            4 => tx.execute_batch(V5),
            _ => Ok(()),
        }
    };
    let mut from = found;
    let migrated = (|| {
        while from < CURRENT {
            step(&tx, from)?;
            from += 1;
        }
        tx.pragma_update(None, "user_version", CURRENT)?;
        tx.commit()
    })();
    migrated.map_err(failed)
}

/// Titles for the sessions of a version-1 store, from their first prompt.
fn backfill_titles(tx: &rusqlite::Transaction<'_>) -> rusqlite::Result<()> {
    let firsts: Vec<(String, String)> = {
        let mut first = tx.prepare(
            "SELECT session_id, body FROM events WHERE kind = 'user_message' \
             AND seq = (SELECT MIN(seq) FROM events AS e \
                        WHERE e.session_id = events.session_id AND e.kind = 'user_message')",
        )?;
        first
            .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))?
            .collect::<rusqlite::Result<_>>()?
    };
    for (id, body) in firsts {
        // A record that does not read gives no title; loading reports it.
        let text = serde_json::from_str::<serde_json::Value>(&body)
            .ok()
            .and_then(|value| value.get("text")?.as_str().map(title_of));
        if let Some(title) = text {
            tx.execute("UPDATE sessions SET title = ?1 WHERE id = ?2", (title, id))?;
        }
    }
    Ok(())
}

fn version(conn: &Connection, path: &Path) -> Result<i64, StoreError> {
    conn.pragma_query_value(None, "user_version", |row| row.get(0))
        .map_err(StoreError::sqlite(path, "while reading the schema version"))
}

fn has_tables(conn: &Connection, path: &Path) -> Result<bool, StoreError> {
    conn.query_row(
        "SELECT EXISTS (SELECT 1 FROM sqlite_schema WHERE type = 'table')",
        [],
        |row| row.get(0),
    )
    .map_err(StoreError::sqlite(path, "while reading the schema"))
}

fn too_new(path: &Path, found: i64) -> StoreError {
    StoreError::TooNew {
        path: path.to_owned(),
        found,
        supported: CURRENT,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A store as the first dsh that had one wrote it: version 1, no
    /// titles.
    #[test]
    fn a_version_1_store_migrates_forward() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sessions.db");
        {
            let conn = Connection::open(&path).unwrap();
            conn.execute_batch(V1).unwrap();
            conn.execute_batch(
                "PRAGMA user_version = 1;
                 INSERT INTO sessions VALUES ('s1', 'coder', '/w', NULL, NULL, 'm', 1, 2);
                 INSERT INTO events VALUES ('s1', 1, 'user_message', '{\"type\":\"user_message\",\"text\":\"first words\"}', 1);
                 INSERT INTO events VALUES ('s1', 2, 'user_message', '{\"type\":\"user_message\",\"text\":\"later\"}', 2);",
            )
            .unwrap();
        }
        let store = crate::Store::open(&path).unwrap();
        let conn = Connection::open(&path).unwrap();
        assert_eq!(
            conn.pragma_query_value(None, "user_version", |row| row.get::<_, i64>(0))
                .unwrap(),
            CURRENT
        );
        assert_eq!(store.info("s1").unwrap().title, "first words");
        assert_eq!(store.load("s1").unwrap().events.len(), 4);
        // Opening again is a no-op.
        drop(store);
        crate::Store::open(&path).unwrap();
    }
}

//! What can go wrong with a session store, each error naming the store's
//! file, the session, and what to do.

use std::path::PathBuf;

/// A session store's failure.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// No default place for the store: neither `XDG_STATE_HOME` nor
    /// `HOME` is set.
    #[error(
        "no place for the session store: neither `XDG_STATE_HOME` nor `HOME` is set; \
         set one, name a file with `[sessions] path`, or turn the store off with \
         `[sessions] enabled = false` or `--no-store`"
    )]
    NoDefaultPath,
    /// The store's directory or file could not be created or opened.
    #[error("cannot open the session store `{path}`: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A file of the store (the store itself, its `-wal` or `-shm` file,
    /// a session's lock) is not a regular file: opening a FIFO would wait
    /// for a writer, forever.
    #[error(
        "the session store's file `{path}` is {kind}, not a regular file; move it away, or \
         name another store with `[sessions] path`"
    )]
    NotARegularFile {
        /// The file.
        path: PathBuf,
        /// What it is: `a directory`, `a FIFO (named pipe)`, ….
        kind: &'static str,
    },
    /// The store's file, or its `-wal` or `-shm` file, is open to other
    /// users, and this user cannot make it private (it is another user's).
    #[error(
        "the session store's file `{path}` is open to other users (mode {mode:04o}) and \
         cannot be made private: {source}; it belongs to uid {owner}, who can `chmod 600` it, \
         or name another store with `[sessions] path`"
    )]
    NotPrivate {
        /// The file.
        path: PathBuf,
        /// Its permission bits.
        mode: u32,
        /// The user id of its owner.
        owner: u32,
        /// Why its mode could not be changed.
        source: std::io::Error,
    },
    /// The store's file is not an SQLite database, or one damaged past
    /// reading: every session would fail on it, so the message says how
    /// to go on without it.
    #[error(
        "the session store `{path}` is damaged ({source}, {doing}); move it aside with its \
         `-wal` and `-shm` files, and dsh starts a new store there, or run without the \
         store: `--no-store`, or `[sessions] enabled = false`"
    )]
    Damaged {
        /// The store's file.
        path: PathBuf,
        /// What the store was doing when SQLite found the damage.
        doing: &'static str,
        /// SQLite's error.
        source: rusqlite::Error,
    },
    /// SQLite failed.
    #[error("the session store `{path}` failed {doing}: {source}")]
    Sqlite {
        /// The store's file.
        path: PathBuf,
        /// What the store was doing (`while recording an event`).
        doing: &'static str,
        /// SQLite's error.
        source: rusqlite::Error,
    },
    /// The file was written by a newer dsh: its schema is one this binary
    /// does not know, so it is left as it is.
    #[error(
        "the session store `{path}` has schema version {found}, newer than the {supported} \
         this dsh knows; it was written by a newer dsh and is left untouched: upgrade dsh, \
         or name another file with `[sessions] path`"
    )]
    TooNew {
        /// The store's file.
        path: PathBuf,
        /// The schema version the file has.
        found: i64,
        /// The newest schema version this binary knows.
        supported: i64,
    },
    /// The file is an SQLite database, but not a session store.
    #[error(
        "`{path}` is not a dsh session store (it has tables of its own and no schema \
         version); name another file with `[sessions] path`"
    )]
    NotAStore {
        /// The file.
        path: PathBuf,
    },
    /// No session has this id.
    #[error("no session `{id}` in the session store `{path}`; `dsh sessions` lists them")]
    NotFound {
        /// The id asked for.
        id: String,
        /// The store's file.
        path: PathBuf,
    },
    /// Another dsh process has the session open for writing.
    #[error(
        "session `{id}` is open in another dsh process; close it there first \
         (its history can still be read)"
    )]
    InUse {
        /// The session.
        id: String,
    },
    /// An event could not be serialized (it cannot happen with the
    /// loop's events; reported rather than assumed).
    #[error("cannot serialize an event of session `{id}`: {source}")]
    Serialize {
        /// The session.
        id: String,
        /// Why.
        source: serde_json::Error,
    },
}

impl StoreError {
    pub(crate) fn sqlite(
        path: impl Into<PathBuf>,
        doing: &'static str,
    ) -> impl FnOnce(rusqlite::Error) -> Self {
        let path = path.into();
        move |source| {
            // A file that is no database, or one damaged: said as such,
            // wherever SQLite finds it (a damaged page may be found long
            // after opening).
            let damaged = matches!(
                source.sqlite_error_code(),
                Some(rusqlite::ErrorCode::DatabaseCorrupt | rusqlite::ErrorCode::NotADatabase)
            );
            if damaged {
                Self::Damaged {
                    path,
                    doing,
                    source,
                }
            } else {
                Self::Sqlite {
                    path,
                    doing,
                    source,
                }
            }
        }
    }

    pub(crate) fn io(path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> Self {
        let path = path.into();
        move |source| Self::Io { path, source }
    }
}

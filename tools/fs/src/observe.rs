//! The observation policy: an existing file is changed only if the
//! session has seen it — read it, or written it — as it is now.
//!
//! What a session saw of a file is its length and SHA-256 digest, taken on
//! the text `read` returned (the disk's, or the editor's buffer) or that
//! `write`/`edit` left. Before a change, the file's current text is
//! compared with it: equal, or the change is refused with the fix (read it
//! again). A digest, not a modification time: times are coarse, and a
//! file can change and keep its time.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use parking_lot::Mutex;
use sha2::{Digest, Sha256};

/// What a session saw of one file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Seen {
    /// Its length in bytes.
    pub(crate) bytes: u64,
    digest: [u8; 32],
}

impl Seen {
    /// What seeing `text` records.
    pub(crate) fn of(text: &[u8]) -> Self {
        let mut seeing = Seeing::default();
        seeing.update(text);
        seeing.finish()
    }
}

/// A [`Seen`] taken while the text streams by, for `read`, which never
/// holds a whole file.
#[derive(Clone, Debug, Default)]
pub(crate) struct Seeing {
    bytes: u64,
    hasher: Sha256,
}

impl Seeing {
    pub(crate) fn update(&mut self, bytes: &[u8]) {
        self.bytes += bytes.len() as u64;
        self.hasher.update(bytes);
    }

    pub(crate) fn finish(self) -> Seen {
        Seen {
            bytes: self.bytes,
            digest: self.hasher.finalize().into(),
        }
    }
}

/// What each session has seen of each file: the memory of the
/// observation policy, shared by the `read`, `write` and `edit` tools of
/// a process and kept per session, by the calls'
/// [`session_id`](dsh_tools::ToolCallContext::session_id) (the
/// [`ToolSession`](dsh_tools::ToolSession) key).
///
/// Cheap to clone: clones share one memory. Give the same one to the tools
/// that must agree:
///
/// ```
/// use dsh_tool_fs::{EditTool, Observations, ReadTool, WriteTool};
///
/// let observations = Observations::new();
/// let read = ReadTool::new().with_observations(observations.clone());
/// let write = WriteTool::new().with_observations(observations.clone());
/// let edit = EditTool::new().with_observations(observations);
/// # let _ = (read, write, edit);
/// ```
#[derive(Clone, Debug, Default)]
pub struct Observations {
    sessions: Arc<Mutex<HashMap<String, HashMap<PathBuf, Seen>>>>,
}

/// Why a change is refused by the observation policy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Unseen {
    /// The session never read the file.
    NeverRead,
    /// The file changed since the session last saw it.
    Changed {
        /// Its length then.
        was: u64,
        /// Its length now.
        now: u64,
    },
}

impl Observations {
    /// An empty memory.
    pub fn new() -> Self {
        Self::default()
    }

    /// Records that `session` saw `path` as `seen`.
    pub(crate) fn record(&self, session: &str, path: &Path, seen: Seen) {
        self.sessions
            .lock()
            .entry(session.to_owned())
            .or_default()
            .insert(path.to_owned(), seen);
    }

    /// Whether `session` saw `path` as it is now (`now`).
    pub(crate) fn check(&self, session: &str, path: &Path, now: Seen) -> Result<(), Unseen> {
        let sessions = self.sessions.lock();
        match sessions.get(session).and_then(|files| files.get(path)) {
            None => Err(Unseen::NeverRead),
            Some(seen) if *seen == now => Ok(()),
            Some(seen) => Err(Unseen::Changed {
                was: seen.bytes,
                now: now.bytes,
            }),
        }
    }

    /// Whether `session` has seen any version of `path`.
    pub fn has_seen(&self, session: &str, path: &Path) -> bool {
        self.sessions
            .lock()
            .get(session)
            .is_some_and(|files| files.contains_key(path))
    }

    /// Forgets what `session` saw (when the session ends).
    pub fn forget(&self, session: &str) {
        self.sessions.lock().remove(session);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_is_seen_only_as_it_was_read() {
        let observations = Observations::new();
        let path = Path::new("/work/a.txt");
        assert_eq!(
            observations.check("s", path, Seen::of(b"a\n")),
            Err(Unseen::NeverRead)
        );
        observations.record("s", path, Seen::of(b"a\n"));
        assert_eq!(observations.check("s", path, Seen::of(b"a\n")), Ok(()));
        assert_eq!(
            observations.check("s", path, Seen::of(b"b\n")),
            Err(Unseen::Changed { was: 2, now: 2 })
        );
        // Another session saw nothing.
        assert_eq!(
            observations.check("t", path, Seen::of(b"a\n")),
            Err(Unseen::NeverRead)
        );
        observations.forget("s");
        assert!(!observations.has_seen("s", path));
    }

    #[test]
    fn streaming_sees_what_a_whole_read_sees() {
        let mut seeing = Seeing::default();
        seeing.update(b"line 1\n");
        seeing.update(b"line 2");
        assert_eq!(seeing.finish(), Seen::of(b"line 1\nline 2"));
    }
}

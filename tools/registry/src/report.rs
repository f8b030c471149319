//! What a call shows a front end beyond its text: the places it is about
//! ([`ToolLocation`], from the arguments, before it runs) and the files it
//! changed ([`FileChange`], reported while it runs), so an editor can
//! follow the agent and review its changes as diffs.

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

/// A place a call reads or changes: a file, and a line of it when one is
/// known. The path is the model's, as the call gives it: relative paths
/// are relative to the session's working directory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolLocation {
    /// The file.
    pub path: PathBuf,
    /// The line, counting from 1, if the call names one.
    pub line: Option<u32>,
}

impl ToolLocation {
    /// The file at `path`, no line.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self {
            path: path.into(),
            line: None,
        }
    }

    /// Sets the line (counting from 1).
    pub fn with_line(mut self, line: u32) -> Self {
        self.line = Some(line);
        self
    }
}

/// A change a call made to one text file: what it was and what it is now,
/// whole, so a front end can show a diff.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileChange {
    /// The file, absolute.
    pub path: PathBuf,
    /// Its text before; `None` when the call created it.
    pub old_text: Option<String>,
    /// Its text after.
    pub new_text: String,
    /// The first line that differs, counting from 1.
    pub first_changed_line: u32,
}

/// Where a call reports the files it changed, for a front end that shows
/// them (an editor's diff view). The caller attaches one to the
/// [`ToolCallContext`](crate::ToolCallContext)'s extensions when it has a
/// display; a tool reports through
/// [`ToolCallContext::report_change`](crate::ToolCallContext::report_change).
///
/// ```
/// use std::sync::{Arc, Mutex};
/// use dsh_tools::{FileChange, FileChanges, ToolCallContext};
///
/// let seen = Arc::new(Mutex::new(Vec::new()));
/// let sink = Arc::clone(&seen);
/// let cx = ToolCallContext::new("s").with(FileChanges::new(move |change| {
///     sink.lock().unwrap().push(change.path.clone())
/// }));
/// cx.report_change(&FileChange {
///     path: "/work/a.txt".into(),
///     old_text: None,
///     new_text: "a\n".into(),
///     first_changed_line: 1,
/// });
/// assert_eq!(*seen.lock().unwrap(), [std::path::PathBuf::from("/work/a.txt")]);
/// ```
#[derive(Clone)]
pub struct FileChanges {
    sink: Arc<dyn Fn(&FileChange) + Send + Sync>,
}

impl FileChanges {
    /// Changes that go to `sink`. It runs inline: keep it quick.
    pub fn new(sink: impl Fn(&FileChange) + Send + Sync + 'static) -> Self {
        Self {
            sink: Arc::new(sink),
        }
    }

    /// Reports `change`.
    pub fn report(&self, change: &FileChange) {
        (self.sink)(change);
    }
}

impl fmt::Debug for FileChanges {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FileChanges").finish_non_exhaustive()
    }
}

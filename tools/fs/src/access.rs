//! How the file tools reach a session's files: [`FileAccess`], the disk
//! ([`DiskFiles`], with atomic replacement), or whatever a front end
//! attaches to a call's context (an editor's buffers, over ACP).

use std::fmt;
use std::io::{self, Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use dsh_tools::{ToolCallContext, async_trait};

use crate::read::{BINARY_SNIFF_BYTES, ReadError, open_regular};

/// The largest file `write` and `edit` work on, and that a read through a
/// [`FileAccess`] returns: they hold the whole text in memory.
pub const MAX_FILE_BYTES: u64 = 10 * 1024 * 1024;

/// Where the file tools read and write whole text files.
///
/// Without one in a call's context, `read` streams the disk and `write` and
/// `edit` go through [`DiskFiles`]. A front end that owns the truth about
/// files (an editor with unsaved buffers) attaches its own to every call's
/// [`ToolCallContext`], as an `Arc<dyn FileAccess>`:
///
/// ```
/// use std::sync::Arc;
/// use dsh_tool_fs::{DiskFiles, FileAccess};
/// use dsh_tools::ToolCallContext;
///
/// let files: Arc<dyn FileAccess> = Arc::new(DiskFiles::new());
/// let cx = ToolCallContext::new("session-1").with(files);
/// assert!(dsh_tool_fs::file_access(&cx).is_some());
/// ```
///
/// Paths are absolute, with symbolic links and `..` resolved. What `read`
/// shows and what `write` and `edit` start from is what
/// [`read_text`](Self::read_text) returns, and the session's observations
/// (a file changes only if the session has seen it as it is) are taken on
/// that text.
#[async_trait]
pub trait FileAccess: Send + Sync + fmt::Debug + 'static {
    /// The whole text of the file at `path`; [`FileError::NotFound`] when
    /// there is none.
    async fn read_text(&self, path: &Path) -> Result<String, FileError>;

    /// Replaces the whole text of the file at `path`, creating it (and its
    /// missing parent directories) when there is none.
    async fn write_text(&self, path: &Path, text: &str) -> Result<(), FileError>;
}

/// The [`FileAccess`] a call's context carries, if any.
pub fn file_access(cx: &ToolCallContext) -> Option<&Arc<dyn FileAccess>> {
    cx.get::<Arc<dyn FileAccess>>()
}

/// Why a whole text file could not be read or written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FileError {
    /// Nothing exists at the path.
    #[error("`{path}` does not exist")]
    NotFound {
        /// The path.
        path: PathBuf,
    },
    /// The path is a directory, FIFO, socket or device.
    #[error("`{path}` is {kind}, not a regular file; only regular text files can be changed")]
    NotARegularFile {
        /// The path.
        path: PathBuf,
        /// What it is: `a directory`, `a FIFO (named pipe)`, ….
        kind: &'static str,
    },
    /// A NUL byte near the start: not text.
    #[error(
        "`{path}` looks like a binary file (a NUL byte at byte {at}); only UTF-8 text files can be read or changed"
    )]
    Binary {
        /// The path.
        path: PathBuf,
        /// The offset of the first NUL byte.
        at: usize,
    },
    /// The text is not UTF-8.
    #[error(
        "line {line} of `{path}` is not valid UTF-8 (at byte {at} of the line); only UTF-8 text files can be read or changed"
    )]
    InvalidUtf8 {
        /// The path.
        path: PathBuf,
        /// The line, counting from 1.
        line: u64,
        /// The offset of the first invalid byte in the line.
        at: usize,
    },
    /// The file is larger than [`MAX_FILE_BYTES`].
    #[error(
        "`{path}` has {bytes} bytes, more than the {limit} a whole-file change holds; change it with a command instead"
    )]
    TooLarge {
        /// The path.
        path: PathBuf,
        /// Its size.
        bytes: u64,
        /// The limit.
        limit: u64,
    },
    /// The operating system failed.
    #[error("cannot {action} `{path}`: {source}")]
    Io {
        /// What was being done: `read`, `write`, `create the directories of`.
        action: &'static str,
        /// The path.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: io::Error,
    },
    /// Whoever holds the file (an editor) refused or failed.
    #[error("cannot {action} `{path}` through the editor: {message}")]
    Access {
        /// What was being done: `read`, `write`.
        action: &'static str,
        /// The path.
        path: PathBuf,
        /// What the file's holder said.
        message: String,
    },
}

impl FileError {
    /// Text that is not a text file's, as [`DiskFiles`] refuses it: a NUL
    /// byte near the start, or a line that is not UTF-8. For a
    /// [`FileAccess`] that gets bytes from elsewhere.
    pub fn check_text(path: &Path, bytes: Vec<u8>) -> Result<String, FileError> {
        let head = &bytes[..bytes.len().min(BINARY_SNIFF_BYTES)];
        if let Some(at) = memchr::memchr(0, head) {
            return Err(FileError::Binary {
                path: path.to_owned(),
                at,
            });
        }
        String::from_utf8(bytes).map_err(|error| {
            let bytes = error.as_bytes();
            let bad = error.utf8_error().valid_up_to();
            let line_start = memchr::memrchr(b'\n', &bytes[..bad]).map_or(0, |at| at + 1);
            FileError::InvalidUtf8 {
                path: path.to_owned(),
                line: memchr::memchr_iter(b'\n', &bytes[..bad]).count() as u64 + 1,
                at: bad - line_start,
            }
        })
    }
}

impl From<ReadError> for FileError {
    fn from(error: ReadError) -> Self {
        match error {
            ReadError::NotFound { path } => Self::NotFound { path },
            ReadError::NotARegularFile { path, kind, .. } => Self::NotARegularFile { path, kind },
            ReadError::Binary { path, at } => Self::Binary { path, at },
            ReadError::InvalidUtf8 { path, line, at } => Self::InvalidUtf8 { path, line, at },
            ReadError::Io { path, source } => Self::Io {
                action: "read",
                path,
                source,
            },
            // A whole-file read has no window to be past; should one
            // be reported, it is said as it is.
            ReadError::OffsetPastEnd {
                path,
                offset,
                lines,
            } => Self::Io {
                action: "read",
                path,
                source: io::Error::other(format!(
                    "line {offset} is past the end, which has {lines} lines"
                )),
            },
        }
    }
}

/// The disk: reads refuse what `read` refuses, and a write replaces the
/// file atomically (a temporary file in the same directory, then a
/// rename), keeping its permissions, so a crash or a full disk never
/// leaves half a file.
#[derive(Clone, Debug, Default)]
pub struct DiskFiles {
    _private: (),
}

impl DiskFiles {
    /// The disk, as a constant.
    pub(crate) const DISK: DiskFiles = DiskFiles { _private: () };

    /// The disk.
    pub fn new() -> Self {
        Self::default()
    }
}

#[async_trait]
impl FileAccess for DiskFiles {
    async fn read_text(&self, path: &Path) -> Result<String, FileError> {
        let owned = path.to_owned();
        blocking("read", path, move || read_whole(&owned)).await
    }

    async fn write_text(&self, path: &Path, text: &str) -> Result<(), FileError> {
        let (owned, text) = (path.to_owned(), text.to_owned());
        blocking("write", path, move || {
            replace_file(&owned, |file| file.write_all(text.as_bytes()))
        })
        .await
    }
}

/// Runs blocking work on the file at `path` where blocking is allowed.
async fn blocking<T: Send + 'static>(
    action: &'static str,
    path: &Path,
    work: impl FnOnce() -> Result<T, FileError> + Send + 'static,
) -> Result<T, FileError> {
    tokio::task::spawn_blocking(work)
        .await
        .unwrap_or_else(|error| {
            Err(FileError::Io {
                action,
                path: path.to_owned(),
                source: io::Error::other(format!("the file task failed: {error}")),
            })
        })
}

/// The whole text of a regular file, never blocking on a special one.
fn read_whole(path: &Path) -> Result<String, FileError> {
    let file = open_regular(path)?;
    let io_error = |source| FileError::Io {
        action: "read",
        path: path.to_owned(),
        source,
    };
    let bytes = file.metadata().map_err(io_error)?.len();
    if bytes > MAX_FILE_BYTES {
        return Err(FileError::TooLarge {
            path: path.to_owned(),
            bytes,
            limit: MAX_FILE_BYTES,
        });
    }
    let mut content = Vec::with_capacity(bytes as usize);
    // The file may grow meanwhile: never hold more than the limit.
    file.take(MAX_FILE_BYTES + 1)
        .read_to_end(&mut content)
        .map_err(io_error)?;
    if content.len() as u64 > MAX_FILE_BYTES {
        return Err(FileError::TooLarge {
            path: path.to_owned(),
            bytes: content.len() as u64,
            limit: MAX_FILE_BYTES,
        });
    }
    FileError::check_text(path, content)
}

/// Replaces (or creates) the file at `path` with what `fill` writes:
/// into a temporary file in the same directory, flushed to disk, then
/// renamed over `path`. When anything fails, the temporary file is
/// removed and `path` is as it was. An existing file keeps its
/// permissions; a new one gets the usual `0o666` less the umask.
pub(crate) fn replace_file(
    path: &Path,
    fill: impl FnOnce(&mut std::fs::File) -> io::Result<()>,
) -> Result<(), FileError> {
    let io_error = |action| {
        move |source| FileError::Io {
            action,
            path: path.to_owned(),
            source,
        }
    };
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    std::fs::create_dir_all(dir).map_err(io_error("create the directories of"))?;
    let existing = match std::fs::metadata(path) {
        Ok(metadata) => Some(metadata.permissions()),
        Err(error) if error.kind() == io::ErrorKind::NotFound => None,
        Err(error) => return Err(io_error("write")(error)),
    };
    let name = path.file_name().map_or_else(
        || ".dsh-write".to_owned(),
        |name| format!(".{}.", name.to_string_lossy()),
    );
    let mut temporary = tempfile::Builder::new()
        .prefix(&name)
        .suffix(".tmp")
        .permissions(std::fs::Permissions::from_mode(0o666))
        .tempfile_in(dir)
        .map_err(io_error("write"))?;
    if let Some(permissions) = existing {
        // Set on the open file, which the umask does not narrow.
        temporary
            .as_file()
            .set_permissions(permissions)
            .map_err(io_error("keep the permissions of"))?;
    }
    fill(temporary.as_file_mut()).map_err(io_error("write"))?;
    temporary.as_file().sync_all().map_err(io_error("write"))?;
    temporary
        .persist(path)
        .map_err(|error| io_error("replace")(error.error))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_write_leaves_the_original_and_no_temporary_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("kept.txt");
        std::fs::write(&path, "original\n").expect("write");
        // A disk that fills up half-way through the new text.
        let result = replace_file(&path, |file| {
            file.write_all(b"half of the new")?;
            Err(io::Error::from(io::ErrorKind::StorageFull))
        });
        assert!(
            matches!(
                &result,
                Err(FileError::Io {
                    action: "write",
                    ..
                })
            ),
            "{result:?}"
        );
        assert_eq!(std::fs::read_to_string(&path).expect("read"), "original\n");
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .expect("list")
            .map(|entry| entry.expect("entry").file_name())
            .collect();
        assert_eq!(names, ["kept.txt"]);
    }

    #[test]
    fn a_replaced_file_keeps_its_permissions() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("script.sh");
        std::fs::write(&path, "#!/bin/sh\n").expect("write");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o754)).expect("chmod");
        replace_file(&path, |file| file.write_all(b"#!/bin/sh\necho hi\n")).expect("replace");
        let mode = std::fs::metadata(&path).expect("stat").permissions().mode();
        assert_eq!(mode & 0o7777, 0o754);
        assert_eq!(
            std::fs::read_to_string(&path).expect("read"),
            "#!/bin/sh\necho hi\n"
        );
    }

    #[test]
    fn text_checks_name_the_line_of_invalid_utf8() {
        let error = FileError::check_text(Path::new("/f"), b"ok\nbad \xff here\n".to_vec());
        assert_eq!(
            error.map_err(|error| error.to_string()),
            Err("line 2 of `/f` is not valid UTF-8 (at byte 4 of the line); only UTF-8 text files can be read or changed".to_owned())
        );
    }
}

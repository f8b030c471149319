//! How the file tools reach a session's files: [`FileAccess`], the disk
//! ([`DiskFiles`], with atomic replacement, refusing what the user may not
//! write), or whatever a front end attaches to a call's context (an
//! editor's buffers, over ACP).

use std::fmt;
use std::fs::{File, Metadata};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use dsh_tools::{ToolCallContext, async_trait};
use nix::errno::Errno;
use nix::unistd::AccessFlags;

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
    /// The file's mode gives no one write permission (0444, 0555): dsh
    /// keeps to it, as root too (whom a mode does not stop), since the
    /// user set it to keep the file as it is.
    #[error(
        "`{path}` is read-only (mode {mode:04o}); dsh does not change a file its mode keeps from \
         writing, not even as root: make it writable first (`chmod u+w`) if it should change"
    )]
    ReadOnly {
        /// The path.
        path: PathBuf,
        /// Its permission bits.
        mode: u32,
    },
    /// The file's mode and owner do not let this user write it (another
    /// user's, without write permission for others).
    #[error(
        "`{path}` is not writable by this user: it belongs to uid {owner}, with mode \
         {mode:04o}; dsh changes only files the user may write"
    )]
    NotWritable {
        /// The path.
        path: PathBuf,
        /// Its permission bits.
        mode: u32,
        /// The user id of its owner.
        owner: u32,
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
/// rename), keeping its permissions, owner and group, so a crash or a full
/// disk never leaves half a file.
///
/// A file the user may not write is refused, never replaced (renaming
/// over it needs only the directory's permission): one whose mode gives no
/// one write permission ([`FileError::ReadOnly`]; root included, whom
/// `access(2)` would let write anything), and one the user's write access
/// check fails ([`FileError::NotWritable`]: another user's file). A file
/// with other hard links is written in place, so that every link sees the
/// new text, and so is a file whose owner or group the replacement cannot
/// be given (another user's, written by a user other than root): the new
/// text is prepared in a temporary file first, so a failure to produce it
/// leaves the file as it was, but a failure while copying it over (a full
/// disk) can leave the file half-written.
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
/// removed and `path` is as it was. An existing file must be writable
/// ([`writable`]); it keeps its permissions, owner and group, and is
/// written in place when renaming over it would lose a hard link or its
/// owner ([`Replacement`]). A new one gets the usual `0o666` less the
/// umask.
pub(crate) fn replace_file(
    path: &Path,
    fill: impl FnOnce(&mut std::fs::File) -> io::Result<()>,
) -> Result<(), FileError> {
    let io_error = |action| io_error(action, path);
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    std::fs::create_dir_all(dir).map_err(io_error("create the directories of"))?;
    let existing = writable(path)?;
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
    fill(temporary.as_file_mut()).map_err(io_error("write"))?;
    temporary.as_file().sync_all().map_err(io_error("write"))?;
    let replacement = match &existing {
        Some(existing) => Replacement::like(path, temporary.as_file(), existing)?,
        None => Replacement::Rename,
    };
    match (replacement, &existing) {
        (Replacement::InPlace, Some(existing)) => {
            write_in_place(path, existing, temporary.as_file_mut())
        }
        _ => temporary
            .persist(path)
            .map(drop)
            .map_err(|error| io_error("replace")(error.error)),
    }
}

/// An I/O error while doing `action` to the file at `path`.
fn io_error<'a>(action: &'static str, path: &'a Path) -> impl Fn(io::Error) -> FileError + 'a {
    move |source| FileError::Io {
        action,
        path: path.to_owned(),
        source,
    }
}

/// The file at `path` as it is, if there is one and the user may write
/// it; `None` when there is none. Its mode is kept to, as the user set
/// it: a file no one may write is [`FileError::ReadOnly`] (for root too,
/// whom `access(2)` lets write anything), and one the user's write access
/// check fails is [`FileError::NotWritable`].
fn writable(path: &Path) -> Result<Option<Metadata>, FileError> {
    let metadata = match std::fs::metadata(path) {
        Ok(metadata) => metadata,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(error) => return Err(io_error("write", path)(error)),
    };
    let mode = metadata.permissions().mode() & 0o7777;
    if mode & 0o222 == 0 {
        return Err(FileError::ReadOnly {
            path: path.to_owned(),
            mode,
        });
    }
    match nix::unistd::access(path, AccessFlags::W_OK) {
        Ok(()) => Ok(Some(metadata)),
        Err(Errno::EACCES | Errno::EPERM) => Err(FileError::NotWritable {
            path: path.to_owned(),
            mode,
            owner: metadata.uid(),
        }),
        Err(errno) => Err(io_error("write", path)(io::Error::from(errno))),
    }
}

/// How the new text takes the place of an existing file.
enum Replacement {
    /// The temporary file, given the file's permissions, owner and group,
    /// is renamed over it: atomic.
    Rename,
    /// The new text is copied over the file's own: every hard link sees it,
    /// and the owner stays.
    InPlace,
}

impl Replacement {
    /// How `temporary` replaces the file at `path`, as `existing`
    /// describes it: renamed, once it has the file's owner, group and
    /// permissions; written in place when the file has other hard links,
    /// or when this user cannot give it the file's owner and group.
    fn like(path: &Path, temporary: &File, existing: &Metadata) -> Result<Self, FileError> {
        if existing.nlink() > 1 {
            return Ok(Self::InPlace);
        }
        let made = temporary.metadata().map_err(io_error("write", path))?;
        if (made.uid(), made.gid()) != (existing.uid(), existing.gid()) {
            match std::os::unix::fs::fchown(temporary, Some(existing.uid()), Some(existing.gid())) {
                Ok(()) => {}
                Err(error) if error.kind() == io::ErrorKind::PermissionDenied => {
                    return Ok(Self::InPlace);
                }
                Err(error) => return Err(io_error("keep the owner of", path)(error)),
            }
        }
        // After the owner: changing it clears the set-user-ID bit. Set on
        // the open file, which the umask does not narrow.
        temporary
            .set_permissions(existing.permissions())
            .map_err(io_error("keep the permissions of", path))?;
        Ok(Self::Rename)
    }
}

/// Copies the text of `temporary` over the file at `path` (the file
/// `existing` describes, checked to be the one opened), then cuts it to
/// that length and flushes it to disk.
fn write_in_place(path: &Path, existing: &Metadata, temporary: &mut File) -> Result<(), FileError> {
    let io_error = |source| io_error("write", path)(source);
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .custom_flags(nix::libc::O_NONBLOCK | nix::libc::O_NOCTTY)
        .open(path)
        .map_err(io_error)?;
    let opened = file.metadata().map_err(io_error)?;
    if (opened.dev(), opened.ino()) != (existing.dev(), existing.ino()) {
        return Err(io_error(io::Error::other(
            "the file was replaced while it was being written; read it again",
        )));
    }
    temporary.seek(SeekFrom::Start(0)).map_err(io_error)?;
    let length = io::copy(temporary, &mut file).map_err(io_error)?;
    file.set_len(length).map_err(io_error)?;
    file.sync_all().map_err(io_error)
}

#[cfg(test)]
mod tests {
    use std::os::unix::process::CommandExt;

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

    fn mode_of(path: &Path) -> u32 {
        std::fs::metadata(path).expect("stat").permissions().mode() & 0o7777
    }

    fn files_in(dir: &Path) -> Vec<std::ffi::OsString> {
        let mut names: Vec<_> = std::fs::read_dir(dir)
            .expect("list")
            .map(|entry| entry.expect("entry").file_name())
            .collect();
        names.sort();
        names
    }

    /// The tests run as root on CI, whom a mode does not stop: the file
    /// is refused for its mode all the same.
    #[test]
    fn a_read_only_file_is_refused_and_unchanged() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("frozen.txt");
        std::fs::write(&path, "as it was\n").expect("write");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o444)).expect("chmod");
        let result = replace_file(&path, |file| file.write_all(b"changed\n"));
        let Err(error) = result else {
            panic!("a read-only file was replaced");
        };
        assert!(
            matches!(&error, FileError::ReadOnly { mode: 0o444, .. }),
            "{error:?}"
        );
        assert_eq!(
            error.to_string(),
            format!(
                "`{}` is read-only (mode 0444); dsh does not change a file its mode keeps from \
                 writing, not even as root: make it writable first (`chmod u+w`) if it should \
                 change",
                path.display()
            )
        );
        assert_eq!(std::fs::read_to_string(&path).expect("read"), "as it was\n");
        assert_eq!(mode_of(&path), 0o444);
        assert_eq!(
            files_in(dir.path()),
            ["frozen.txt"],
            "no temporary file left"
        );
    }

    /// Renaming over one link would leave the other with the old text.
    #[test]
    fn a_hard_linked_file_is_written_in_place_and_every_link_sees_it() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("notes.txt");
        let other = dir.path().join("link.txt");
        std::fs::write(&path, "a longer text than the new one\n").expect("write");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).expect("chmod");
        std::fs::hard_link(&path, &other).expect("link");
        let inode = std::fs::metadata(&path).expect("stat").ino();
        replace_file(&path, |file| file.write_all(b"short\n")).expect("written");
        assert_eq!(std::fs::read_to_string(&other).expect("read"), "short\n");
        assert_eq!(std::fs::read_to_string(&path).expect("read"), "short\n");
        let metadata = std::fs::metadata(&path).expect("stat");
        assert_eq!((metadata.ino(), metadata.nlink()), (inode, 2));
        assert_eq!(mode_of(&path), 0o640);
        assert_eq!(
            files_in(dir.path()),
            ["link.txt", "notes.txt"],
            "no temporary file left"
        );
    }

    /// Root changing a user's file: the replacement is given the file's
    /// owner and group, and its mode.
    #[test]
    fn another_users_file_keeps_its_owner_when_root_replaces_it() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("theirs.txt");
        std::fs::write(&path, "before\n").expect("write");
        if std::fs::metadata(&path).expect("stat").uid() != 0 {
            // Not root: this user can give no file to another user.
            return;
        }
        std::os::unix::fs::chown(&path, Some(NOBODY), Some(NOBODY)).expect("chown");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o604)).expect("chmod");
        replace_file(&path, |file| file.write_all(b"after\n")).expect("written");
        let metadata = std::fs::metadata(&path).expect("stat");
        assert_eq!((metadata.uid(), metadata.gid()), (NOBODY, NOBODY));
        assert_eq!(mode_of(&path), 0o604);
        assert_eq!(std::fs::read_to_string(&path).expect("read"), "after\n");
    }

    /// The user the tests below write as, in a child process.
    const NOBODY: u32 = 65534;

    /// The file [`nobody_writes`] writes, in the child.
    const NOBODY_ENV: &str = "DSH_FS_TEST_NOBODY_WRITES";

    /// The child side of the tests below: writes `new` to the file named
    /// by the environment, and leaves what came of it beside the file, in
    /// `outcome` (`written`, or the error).
    #[test]
    fn nobody_writes() {
        let Some(path) = std::env::var_os(NOBODY_ENV) else {
            return;
        };
        let path = PathBuf::from(path);
        let outcome = match replace_file(&path, |file| file.write_all(b"new\n")) {
            Ok(()) => "written".to_owned(),
            Err(error) => error.to_string(),
        };
        std::fs::write(path.with_file_name("outcome"), outcome).expect("the outcome");
    }

    /// Root's file `name` in a directory anyone may write in, holding
    /// `old\n` with `mode` and group `group`, written by `nobody` in a
    /// child process: what came of it. `None` when not root, who alone can
    /// run a child as another user.
    fn written_by_nobody(mode: u32, group: u32) -> Option<(tempfile::TempDir, PathBuf, String)> {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("roots.txt");
        std::fs::write(&path, "old\n").expect("write");
        if std::fs::metadata(&path).expect("stat").uid() != 0 {
            return None;
        }
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777))
            .expect("chmod");
        std::os::unix::fs::chown(&path, Some(0), Some(group)).expect("chown");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).expect("chmod");
        let status = std::process::Command::new(std::env::current_exe().expect("the test binary"))
            .args(["--exact", "access::tests::nobody_writes", "--quiet"])
            .env(NOBODY_ENV, &path)
            .uid(NOBODY)
            .gid(NOBODY)
            .stdout(std::process::Stdio::null())
            .status()
            .expect("the child runs");
        assert!(status.success(), "the child failed: {status}");
        let outcome = std::fs::read_to_string(dir.path().join("outcome")).expect("the outcome");
        Some((dir, path, outcome))
    }

    /// Root's 0644 file in a directory `nobody` may write in: renaming
    /// over it would have worked, and made it nobody's.
    #[test]
    fn a_file_the_user_may_not_write_is_refused_though_its_directory_is_writable() {
        let Some((_dir, path, outcome)) = written_by_nobody(0o644, 0) else {
            return;
        };
        assert_eq!(
            outcome,
            format!(
                "`{}` is not writable by this user: it belongs to uid 0, with mode 0644; dsh \
                 changes only files the user may write",
                path.display()
            )
        );
        assert_eq!(std::fs::read_to_string(&path).expect("read"), "old\n");
        assert_eq!(std::fs::metadata(&path).expect("stat").uid(), 0);
    }

    /// Root's file that `nobody`'s group may write: `nobody` cannot give a
    /// replacement root's ownership, so the file is written in place and
    /// stays root's.
    #[test]
    fn a_file_whose_owner_the_user_cannot_give_is_written_in_place() {
        let Some((_dir, path, outcome)) = written_by_nobody(0o664, NOBODY) else {
            return;
        };
        assert_eq!(outcome, "written");
        assert_eq!(std::fs::read_to_string(&path).expect("read"), "new\n");
        let metadata = std::fs::metadata(&path).expect("stat");
        assert_eq!((metadata.uid(), metadata.gid()), (0, NOBODY));
        assert_eq!(mode_of(&path), 0o664);
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

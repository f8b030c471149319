//! The store's files on disk, made safe before SQLite opens them: each one
//! a regular file, and private.
//!
//! A FIFO at the store's path would hang the open until a writer came,
//! and a directory or a device is a mistake: each is refused at once,
//! saying what it is. The store holds conversations, so its file and the
//! `-wal` and `-shm` files SQLite keeps beside it are for their owner
//! alone: one that group or others may open is tightened (0644 becomes
//! 0600), and one this user cannot tighten (another user's) is refused,
//! saying why. SQLite gives the `-wal` and `-shm` files it creates the
//! store file's mode, so a private store stays private.

use std::fs::{DirBuilder, File, FileType, Metadata, OpenOptions, Permissions};
use std::io;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use dsh_agent_types::special_kind;

use crate::StoreError;

/// The files SQLite keeps beside the store in WAL mode, by suffix.
const COMPANIONS: [&str; 2] = ["-wal", "-shm"];

/// The permission bits of group and others: none of them is set on a
/// store's file.
const OPEN_TO_OTHERS: u32 = 0o077;

/// Readies the store's files at `path` for SQLite: its directory (created
/// with mode 0700 if need be), the file (created with mode 0600 if need
/// be), and its `-wal` and `-shm` files if they exist — each checked to be
/// a regular file and tightened to its owner alone.
pub(crate) fn prepare(path: &Path) -> Result<(), StoreError> {
    if let Some(dir) = path.parent().filter(|dir| !dir.as_os_str().is_empty()) {
        DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(StoreError::io(dir))?;
    }
    make_private(path, true)?;
    for suffix in COMPANIONS {
        make_private(&companion(path, suffix), false)?;
    }
    Ok(())
}

/// The file beside the store named by its path and `suffix`, as SQLite
/// names its `-wal` and `-shm` files.
fn companion(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// Checks that the file at `path` is a regular file and makes it private;
/// creates it with mode 0600 when it does not exist and `create` is set.
fn make_private(path: &Path, create: bool) -> Result<(), StoreError> {
    // `metadata` follows symbolic links, as SQLite does: a link to a FIFO
    // is refused before anything opens it.
    let exists = match std::fs::metadata(path) {
        Ok(metadata) => {
            refuse_special(path, metadata.file_type())?;
            true
        }
        Err(error) if error.kind() == io::ErrorKind::NotFound && !create => return Ok(()),
        Err(error) if error.kind() == io::ErrorKind::NotFound => false,
        Err(source) => return Err(StoreError::io(path)(source)),
    };
    // The path may have been replaced since: open without blocking
    // (`O_NONBLOCK` makes opening a FIFO return at once) and check what
    // was opened. An existing file is only read here; its mode changes
    // through the open file.
    let file = OpenOptions::new()
        .read(true)
        .write(!exists)
        .create(!exists)
        .mode(0o600)
        .custom_flags(nix::libc::O_NONBLOCK | nix::libc::O_NOCTTY)
        .open(path)
        .map_err(StoreError::io(path))?;
    let opened = file.metadata().map_err(StoreError::io(path))?;
    refuse_special(path, opened.file_type())?;
    tighten(path, &file, &opened)
}

/// Takes every permission of group and others from the open `file`, if
/// it has any; refuses it, saying why, when it cannot.
fn tighten(path: &Path, file: &File, opened: &Metadata) -> Result<(), StoreError> {
    let mode = opened.permissions().mode() & 0o7777;
    if mode & OPEN_TO_OTHERS == 0 {
        return Ok(());
    }
    file.set_permissions(Permissions::from_mode(mode & !OPEN_TO_OTHERS))
        .map_err(|source| StoreError::NotPrivate {
            path: path.to_owned(),
            mode,
            owner: opened.uid(),
            source,
        })
}

/// Refuses anything but a regular file, naming what it is in the words
/// every refusal of one uses ([`special_kind`]).
pub(crate) fn refuse_special(path: &Path, file_type: FileType) -> Result<(), StoreError> {
    match special_kind(file_type) {
        Some(kind) => Err(StoreError::NotARegularFile {
            path: path.to_owned(),
            kind,
        }),
        None => Ok(()),
    }
}

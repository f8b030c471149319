//! Reading a configuration file a user names (a deployment, a script of
//! answers): only a regular file, never blocking, and never more than a
//! cap. A FIFO would hang the reader until a writer appears, `/dev/zero`
//! would fill memory, a directory is a mistake; each is refused with what
//! it is.

use std::fs::{File, OpenOptions};
use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

// The one wording of every refusal of a non-regular file, here, in the
// `read` tool and in the session store: its owner is the lowest crate
// they share.
pub use dsh_agent_types::special_kind;

/// The largest input file [`read_input_file`] reads: far more than any
/// hand-written configuration, far less than memory.
pub const MAX_INPUT_FILE_BYTES: u64 = 16 * 1024 * 1024;

/// Why an input file was not read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum InputFileError {
    /// The path is a directory, FIFO, socket or device.
    #[error("`{path}` is {kind}, not a regular file; give the path of a file")]
    NotARegularFile {
        /// The path as given.
        path: PathBuf,
        /// What it is: `a directory`, `a FIFO (named pipe)`, ….
        kind: &'static str,
    },
    /// The file is larger than the cap.
    #[error("`{path}` is larger than {max} bytes, the most dsh reads of a configuration file")]
    TooLarge {
        /// The path as given.
        path: PathBuf,
        /// The cap.
        max: u64,
    },
    /// The file is not UTF-8 text.
    #[error("`{path}` is not UTF-8 text: {source}")]
    NotUtf8 {
        /// The path as given.
        path: PathBuf,
        /// Where the first invalid byte is.
        #[source]
        source: std::str::Utf8Error,
    },
    /// Opening or reading it failed.
    #[error("cannot read `{path}`: {source}")]
    Io {
        /// The path as given.
        path: PathBuf,
        /// What the system said.
        #[source]
        source: std::io::Error,
    },
}

/// Reads the UTF-8 text of `path`, which must be a regular file of at most
/// `max` bytes (use [`MAX_INPUT_FILE_BYTES`]).
///
/// ```
/// use dsh_tools::{InputFileError, MAX_INPUT_FILE_BYTES, read_input_file};
/// let error = read_input_file("/dev/zero".as_ref(), MAX_INPUT_FILE_BYTES).unwrap_err();
/// assert!(matches!(error, InputFileError::NotARegularFile { kind: "a character device", .. }));
/// ```
pub fn read_input_file(path: &Path, max: u64) -> Result<String, InputFileError> {
    let io = |source| InputFileError::Io {
        path: path.to_owned(),
        source,
    };
    let file = open_regular(path).map_err(|error| match error {
        NotRegular::Io(source) => io(source),
        NotRegular::Kind(kind) => InputFileError::NotARegularFile {
            path: path.to_owned(),
            kind,
        },
    })?;
    let mut bytes = Vec::new();
    file.take(max.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(io)?;
    if u64::try_from(bytes.len()).unwrap_or(u64::MAX) > max {
        return Err(InputFileError::TooLarge {
            path: path.to_owned(),
            max,
        });
    }
    String::from_utf8(bytes).map_err(|error| InputFileError::NotUtf8 {
        path: path.to_owned(),
        source: error.utf8_error(),
    })
}

/// Why [`open_regular`] opened nothing.
#[derive(Debug)]
pub enum NotRegular {
    /// The path is not a regular file: it is this ([`special_kind`]).
    Kind(&'static str),
    /// Reading its metadata or opening it failed.
    Io(std::io::Error),
}

/// Opens `path` for reading only if it is a regular file (after symbolic
/// links), without ever blocking: opening a FIFO for reading blocks until
/// a writer appears, and reading a device may never end. The one way dsh
/// opens a file a user or a model names, for reading.
pub fn open_regular(path: &Path) -> Result<File, NotRegular> {
    // `metadata` follows symbolic links: a link to a FIFO is refused before
    // anything opens it.
    let metadata = std::fs::metadata(path).map_err(NotRegular::Io)?;
    if let Some(kind) = special_kind(metadata.file_type()) {
        return Err(NotRegular::Kind(kind));
    }
    // The path may have been replaced since: open without blocking
    // (`O_NONBLOCK` makes opening a FIFO return at once) and check what was
    // opened.
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
        .map_err(NotRegular::Io)?;
    let opened = file.metadata().map_err(NotRegular::Io)?;
    match special_kind(opened.file_type()) {
        Some(kind) => Err(NotRegular::Kind(kind)),
        None => Ok(file),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_regular_file_is_read_and_a_large_one_refused() {
        let dir = std::env::temp_dir().join(format!("dsh-input-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let path = dir.join("f.toml");
        std::fs::write(&path, "a = 1\n").expect("write");
        assert_eq!(read_input_file(&path, 100).expect("read"), "a = 1\n");
        assert!(matches!(
            read_input_file(&path, 3),
            Err(InputFileError::TooLarge { max: 3, .. })
        ));
        assert!(matches!(
            read_input_file(&dir, 100),
            Err(InputFileError::NotARegularFile {
                kind: "a directory",
                ..
            })
        ));
        std::fs::remove_dir_all(&dir).expect("clean up");
    }
}

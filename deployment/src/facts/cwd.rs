//! The one rule for a session's working directory, for `dsh prompt`,
//! `dsh check`, `dsh run` and `dsh acp` alike: an absolute path to an
//! existing directory, since tools run in it and its instruction files
//! are part of the prompt. Where a person types it (`--cwd`), a relative
//! path is taken against the current directory and none at all is the
//! current directory; an editor's `cwd` must be absolute, as ACP says.

use std::io;
use std::path::{Path, PathBuf};

/// What a relative path means where it was given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Relative {
    /// The command line: relative to the current directory.
    ToCurrent,
    /// ACP: refused.
    Refused,
}

/// Why a working directory was refused.
#[derive(Debug, thiserror::Error)]
pub enum CwdError {
    /// The current directory (the default) cannot be read.
    #[error("cannot read the current directory: {0}")]
    Current(#[source] io::Error),
    /// A relative path where only an absolute one is taken (over ACP).
    #[error("the working directory must be an absolute path, got `{}`", .0.display())]
    Relative(PathBuf),
    /// The path cannot be read.
    #[error("the working directory `{}` cannot be read: {source}", path.display())]
    Unreadable {
        /// The path.
        path: PathBuf,
        /// Why.
        #[source]
        source: io::Error,
    },
    /// The path is there, and is no directory.
    #[error("the working directory `{}` is not a directory", .0.display())]
    NotADirectory(PathBuf),
}

/// The session's working directory `requested` (the current directory
/// when `None`), by the one rule: made absolute as `relative` says, and an
/// existing directory. The path is kept as given, not canonicalized, so
/// `<<cwd>>` shows what the user wrote.
pub fn working_directory(
    requested: Option<&Path>,
    relative: Relative,
) -> Result<PathBuf, CwdError> {
    let path = match requested {
        Some(path) if path.is_absolute() => path.to_path_buf(),
        Some(path) if relative == Relative::Refused => {
            return Err(CwdError::Relative(path.to_path_buf()));
        }
        Some(path) => std::env::current_dir()
            .map_err(CwdError::Current)?
            .join(path),
        None => std::env::current_dir().map_err(CwdError::Current)?,
    };
    match std::fs::metadata(&path) {
        Ok(metadata) if metadata.is_dir() => Ok(path),
        Ok(_) => Err(CwdError::NotADirectory(path)),
        Err(source) => Err(CwdError::Unreadable { path, source }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rule() {
        let dir = tempfile::tempdir().unwrap();
        let here = std::env::current_dir().unwrap();
        assert_eq!(
            working_directory(Some(dir.path()), Relative::Refused).unwrap(),
            dir.path()
        );
        assert_eq!(working_directory(None, Relative::ToCurrent).unwrap(), here);
        assert_eq!(
            working_directory(Some(Path::new(".")), Relative::ToCurrent).unwrap(),
            here.join(".")
        );
        let relative = working_directory(Some(Path::new("src")), Relative::Refused).unwrap_err();
        assert_eq!(
            relative.to_string(),
            "the working directory must be an absolute path, got `src`"
        );
        let file = dir.path().join("file");
        std::fs::write(&file, "").unwrap();
        let error = working_directory(Some(&file), Relative::ToCurrent).unwrap_err();
        assert!(matches!(error, CwdError::NotADirectory(_)), "{error}");
        let missing = dir.path().join("missing");
        let error = working_directory(Some(&missing), Relative::ToCurrent).unwrap_err();
        assert!(
            error.to_string().contains("cannot be read: No such file"),
            "{error}"
        );
    }
}

//! One module per subcommand. Each returns the problems it found; `main`
//! reports them and picks the exit status.

pub(crate) mod acp;
pub(crate) mod check;
mod check_mcp;
pub(crate) mod prompt;
mod prompt_mcp;
pub(crate) mod run;
pub(crate) mod sessions;

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::args::CwdArgs;
use crate::diagnostics::Problem;

/// What a command returns: success, or every problem it found.
pub(crate) type Outcome = Result<(), Vec<Problem>>;

/// The session working directory the arguments ask for: the one given
/// (made absolute), none with `--no-cwd`, else the current directory.
pub(crate) fn session_cwd(args: &CwdArgs) -> Result<Option<PathBuf>, Vec<Problem>> {
    if args.no_cwd {
        return Ok(None);
    }
    absolute_cwd(args.cwd.as_deref()).map(Some)
}

/// The one rule for a session's working directory, for every command:
/// `cwd` made absolute against the current directory, or the current
/// directory itself.
pub(crate) fn absolute_cwd(cwd: Option<&Path>) -> Result<PathBuf, Vec<Problem>> {
    let current = || {
        std::env::current_dir().map_err(|error| {
            vec![
                Problem::new(format!("cannot read the current directory: {error}"))
                    .help("pass the session's working directory with `--cwd DIR`"),
            ]
        })
    };
    match cwd {
        Some(cwd) if cwd.is_absolute() => Ok(cwd.to_path_buf()),
        Some(cwd) => Ok(current()?.join(cwd)),
        None => current(),
    }
}

/// The async runtime of a command that talks to a model.
pub(crate) fn async_runtime() -> Result<tokio::runtime::Runtime, Vec<Problem>> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|error| {
            vec![Problem::new(format!(
                "cannot start the async runtime: {error}"
            ))]
        })
}

/// Writes `text` to stdout. A closed pipe (`dsh prompt | head`) is not an
/// error: the reader has what it wanted.
pub(crate) fn print(text: &str) -> Outcome {
    let mut stdout = std::io::stdout().lock();
    match stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
    {
        Ok(()) => Ok(()),
        Err(error) if error.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        Err(error) => Err(vec![Problem::new(format!(
            "cannot write to stdout: {error}"
        ))]),
    }
}

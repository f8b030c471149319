//! One module per subcommand. Each returns the problems it found; `main`
//! reports them and picks the exit status.

pub(crate) mod acp;
pub(crate) mod check;
pub(crate) mod diff;
pub(crate) mod mcp;
pub(crate) mod prompt;
pub(crate) mod run;
pub(crate) mod schema;
pub(crate) mod sessions;

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::args::CwdArgs;
use dsh_deployment::Problem;
use dsh_deployment::facts::cwd::{Relative, working_directory};
use dsh_tool_mcp::{ServerLine, ServerOutput};

/// What a command returns: success, or every problem it found.
pub(crate) type Outcome = Result<(), Vec<Problem>>;

/// The session working directory the arguments ask for, by the one rule
/// ([`working_directory`]): the one given, or the current directory; none
/// with `--no-cwd`.
pub(crate) fn session_cwd(args: &CwdArgs) -> Result<Option<PathBuf>, Vec<Problem>> {
    if args.no_cwd {
        return Ok(None);
    }
    command_line_cwd(args.cwd.as_deref()).map(Some)
}

/// A working directory given on the command line (`None`: the current
/// one), by the one rule ([`working_directory`]).
pub(crate) fn command_line_cwd(cwd: Option<&Path>) -> Result<PathBuf, Vec<Problem>> {
    working_directory(cwd, Relative::ToCurrent).map_err(|error| {
        vec![Problem::new(error.to_string()).help("pass an existing directory with `--cwd DIR`")]
    })
}

/// Where what MCP servers say for the person goes in every command that
/// starts them (`dsh run`, `dsh acp`, `dsh check`, `dsh prompt`, `dsh
/// diff`): stderr ([`show_server_line`]), so stdout keeps the answer, the
/// prompt or (`dsh acp`) the protocol alone.
pub(crate) fn server_output() -> ServerOutput {
    ServerOutput::new(show_server_line)
}

/// Writes `line` of a server's on stderr, `[mcp <name>] …`.
pub(crate) fn show_server_line(line: ServerLine) {
    // A closed stderr leaves no one to tell.
    let _ = writeln!(std::io::stderr().lock(), "{line}");
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

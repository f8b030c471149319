//! The `bash` tool of dsh agents: runs a command with `bash -c`.
//!
//! - The command runs in the model's `workdir` (a relative one is resolved
//!   against the session's working directory) or in the session's working
//!   directory, with standard input empty.
//! - It runs in a process group of its own; a timeout (or a cancelled
//!   call, or a dropped call future) kills the whole group with `SIGKILL`,
//!   so a child that ignores `SIGTERM` dies too.
//! - Standard output and standard error are captured together, in arrival
//!   order, capped at [`OUTPUT_CAP_BYTES`]: the head and the tail are kept,
//!   with a notice saying how many bytes were omitted between them.
//! - What the command writes also goes, as it runs, to the caller's
//!   [`CommandOutput`] if the call's context has one (at most ten reports
//!   a second, whole characters, then how it ended): a front end shows it
//!   live. The model reads only the result.
//! - A failed command is a result, not a tool error: the text ends with
//!   `[exit code: N]`, `[killed by signal: SIGKILL]` or
//!   `[timed out after N ms]`; success has no marker. Only a failure to
//!   start `bash`, and cancellation, are tool errors.
//! - It inherits the process's environment except the variables named by
//!   [`BashTool::without_env`]: a front end names its model adapter's API
//!   key there, so a command cannot print the key into the conversation.
//! - It runs in the [`Sandbox`] a front end attaches
//!   to the call's context, if any (Landlock: what it may write, whether
//!   it reaches the network); the sandbox crate's section `sandbox` tells
//!   the model that policy.
//!
//! The crate owns prompt section `tool:bash` ([`EXIT_CODE_HABIT`], order
//! 105, bound to the `bash` tool): the habit across calls of checking
//! that marker. It is a static contribution, so a binary must link the
//! crate (`use dsh_tool_bash as _;` if it names nothing else of it).
//!
//! ```
//! use dsh_tool_bash::BashTool;
//! use dsh_tools::{ToolCallContext, ToolRegistry};
//! use std::sync::Arc;
//!
//! # tokio::runtime::Runtime::new()?.block_on(async {
//! let tools = ToolRegistry::new();
//! tools.register(Arc::new(BashTool::new()))?;
//! let cx = ToolCallContext::new("session-1").with_cwd("/");
//!
//! let result = tools.call("bash", r#"{"command": "pwd"}"#, &cx).await;
//! assert_eq!((result.text.as_str(), result.is_error), ("/\n", false));
//!
//! let result = tools.call("bash", r#"{"command": "echo oops >&2; exit 3"}"#, &cx).await;
//! assert_eq!((result.text.as_str(), result.is_error), ("oops\n[exit code: 3]", false));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # })?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![deny(missing_docs)]

mod live;
mod output;
mod run;
mod table;

use std::path::PathBuf;
use std::time::Duration;

use dsh_tools::{
    CommandExit, CommandOutput, Tool, ToolCallContext, ToolError, ToolKind, ToolOutput,
    async_trait, parse_arguments,
};
use schemars::JsonSchema;
use serde::Deserialize;

use dsh_sandbox::{Confinement, Sandbox};

use crate::run::RunError;

pub use crate::table::BashTable;

/// The tool's name.
pub const TOOL_NAME: &str = "bash";

/// The timeout of a call that gives no `timeout_ms`.
pub const DEFAULT_TIMEOUT_MS: u64 = 120_000;

/// The largest `timeout_ms` a call may give.
pub const MAX_TIMEOUT_MS: u64 = 600_000;

/// How many bytes of output a result keeps: the first and the last half.
pub const OUTPUT_CAP_BYTES: usize = 30 * 1024;

/// Section `tool:bash`: the habit across calls that no single result's
/// description can carry.
#[dsh_system_prompt::prompt_section(name = "tool:bash", order = 105, tool = "bash")]
pub const EXIT_CODE_HABIT: &str = "Check every bash result for an `[exit code: N]` marker before you \
rely on its output. When a command failed, find out why before you move on; do not build the next step on \
a failed one.";

/// The arguments of one call.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BashArgs {
    /// The command line, run with `bash -c`.
    pub command: String,
    /// The directory to run in: absolute, or relative to the session's
    /// working directory. Defaults to the session's working directory.
    pub workdir: Option<String>,
    /// Kill the command, and every process it started, after this many
    /// milliseconds. Defaults to 120000.
    #[schemars(range(min = 1, max = 600_000))]
    pub timeout_ms: Option<u64>,
}

/// The `bash` tool. Register it in a [`ToolRegistry`](dsh_tools::ToolRegistry).
#[derive(Debug, Clone, Default)]
pub struct BashTool {
    /// Variables removed from each command's environment.
    env_remove: std::sync::Arc<[String]>,
}

impl BashTool {
    /// The tool.
    pub fn new() -> Self {
        Self::default()
    }

    /// The tool, running its commands without the environment variables
    /// `names` (secrets: an API key, a token), added to those removed
    /// already.
    ///
    /// ```
    /// use dsh_tool_bash::BashTool;
    /// let tool = BashTool::new().without_env(["OPENAI_API_KEY"]);
    /// assert_eq!(tool.env_removed(), ["OPENAI_API_KEY"]);
    /// ```
    pub fn without_env(self, names: impl IntoIterator<Item = impl Into<String>>) -> Self {
        let mut all: Vec<String> = self.env_remove.to_vec();
        for name in names {
            let name = name.into();
            if !all.contains(&name) {
                all.push(name);
            }
        }
        Self {
            env_remove: all.into(),
        }
    }

    /// The variables removed from each command's environment.
    pub fn env_removed(&self) -> &[String] {
        &self.env_remove
    }

    async fn run(&self, args: BashArgs, cx: &ToolCallContext) -> Result<ToolOutput, ToolError> {
        let dir = working_directory(&args, cx).await?;
        let timeout = Duration::from_millis(
            args.timeout_ms
                .unwrap_or(DEFAULT_TIMEOUT_MS)
                .clamp(1, MAX_TIMEOUT_MS),
        );
        // The sandbox in force is the host's, attached to the call; it
        // confines writes to the session's directory, not to `workdir`.
        let confinement = match cx.get::<Sandbox>() {
            Some(sandbox) => sandbox
                .confine(cx.cwd.as_deref())
                .map_err(|error| ToolError::failed(TOOL_NAME, error.to_string()))?,
            None => Confinement::none(),
        };
        let spec = run::Spec {
            command: &args.command,
            dir: dir.as_deref(),
            timeout,
            output_cap: OUTPUT_CAP_BYTES,
            env_remove: &self.env_remove,
            confinement,
        };
        let finished = run::run(spec, cx.get::<CommandOutput>(), &cx.cancel)
            .await
            .map_err(|error| match error {
                RunError::Cancelled => ToolError::cancelled(TOOL_NAME),
                error => ToolError::failed(TOOL_NAME, error.to_string()),
            })?;
        let mut text = finished.output.into_text();
        match finished.ending.marker() {
            Some(marker) => {
                if !text.is_empty() && !text.ends_with('\n') {
                    text.push('\n');
                }
                text.push_str(&marker);
            }
            None if text.is_empty() => text.push_str(NO_OUTPUT),
            None => {}
        }
        Ok(ToolOutput::new(text))
    }
}

/// What a result of a call says of its command, for a front end that
/// replays a recorded call as the terminal it showed live: the output the
/// model read (empty for `(no output)`), and how the command ended, read
/// from its marker (none is exit code 0).
///
/// ```
/// use dsh_tool_bash::split_result;
///
/// let (output, exit) = split_result("checking\n[exit code: 3]");
/// assert_eq!((output, exit.code, exit.signal), ("checking\n", Some(3), None));
/// let (output, exit) = split_result("done\n");
/// assert_eq!((output, exit.code), ("done\n", Some(0)));
/// let (_, exit) = split_result("[killed by signal: SIGTERM]");
/// assert_eq!(exit.signal.as_deref(), Some("SIGTERM"));
/// ```
pub fn split_result(text: &str) -> (&str, CommandExit) {
    if text == NO_OUTPUT {
        return (
            "",
            CommandExit {
                code: Some(0),
                signal: None,
            },
        );
    }
    let start = text.rfind('\n').map_or(0, |at| at + 1);
    let (output, last) = text.split_at(start);
    let marker = last
        .strip_prefix('[')
        .and_then(|rest| rest.strip_suffix(']'));
    let exit = match marker {
        Some(marker) => {
            if let Some(code) = marker.strip_prefix("exit code: ") {
                code.parse().ok().map(|code| CommandExit {
                    code: Some(code),
                    signal: None,
                })
            } else if let Some(signal) = marker.strip_prefix("killed by signal: ") {
                Some(CommandExit {
                    code: None,
                    signal: Some(signal.to_owned()),
                })
            } else if marker.starts_with("timed out after ") {
                run::Ending::TimedOut(Duration::ZERO).exit().into()
            } else {
                None
            }
        }
        None => None,
    };
    match exit {
        Some(exit) => (output, exit),
        None => (
            text,
            CommandExit {
                code: Some(0),
                signal: None,
            },
        ),
    }
}

/// The result of a command that succeeded without writing anything.
const NO_OUTPUT: &str = "(no output)";

/// The directory a call runs in: `workdir` resolved against the session's
/// working directory, or that directory; `None` (the process's own) when
/// neither is given.
async fn working_directory(
    args: &BashArgs,
    cx: &ToolCallContext,
) -> Result<Option<PathBuf>, ToolError> {
    let (dir, field) = match &args.workdir {
        Some(workdir) => (cx.resolve_path(workdir), "workdir"),
        None => match &cx.cwd {
            Some(cwd) => (cwd.clone(), ""),
            None => return Ok(None),
        },
    };
    let problem = match tokio::fs::metadata(&dir).await {
        Ok(metadata) if metadata.is_dir() => return Ok(Some(dir)),
        Ok(_) => "is not a directory".to_owned(),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => "does not exist".to_owned(),
        Err(error) => format!("cannot be used: {error}"),
    };
    let message = format!("`{}` {problem}", dir.display());
    Err(if field.is_empty() {
        ToolError::failed(
            TOOL_NAME,
            format!("the session's working directory {message}"),
        )
    } else {
        ToolError::invalid_arguments(TOOL_NAME, field, message)
    })
}

#[async_trait]
impl Tool for BashTool {
    fn name(&self) -> &str {
        TOOL_NAME
    }

    fn description(&self) -> String {
        format!(
            "Runs a command with `bash -c` and returns its standard output and standard error, \
             interleaved as they were written.\n\
             - It runs in `workdir` (absolute, or relative to the session's working directory), by \
             default in the session's working directory. Each call starts a fresh shell: `cd`, \
             variables and functions do not carry over to the next call.\n\
             - Standard input is empty: a command that waits for input gets end-of-file.\n\
             - After `timeout_ms` (default {DEFAULT_TIMEOUT_MS}, at most {MAX_TIMEOUT_MS}) the \
             command and every process it started are killed.\n\
             - Output beyond {OUTPUT_CAP_BYTES} bytes is cut: the first and the last \
             {half} bytes are kept, with a notice saying how many bytes were omitted between them. \
             Filter long output (`grep`, `head`, `tail`) rather than paging through it.\n\
             - The result ends with a marker when the command did not succeed: \
             `[exit code: N]` for a non-zero exit, `[killed by signal: SIGNAME]` when a signal \
             ended it, `[timed out after N ms]` when the timeout killed it. A successful command \
             has no marker.\n\
             - The call returns when the shell exits. To leave a process running (a server), \
             start it in the background with its output redirected \
             (`server > server.log 2>&1 &`); a background process that still writes to the \
             call's output loses that output when the call returns.",
            half = OUTPUT_CAP_BYTES / 2,
        )
    }

    fn parameters(&self) -> serde_json::Value {
        dsh_tools::parameters_for::<BashArgs>()
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Execute
    }

    /// What the command writes goes to the caller's
    /// [`CommandOutput`] as it runs.
    fn streams_output(&self) -> bool {
        true
    }

    /// The command itself.
    fn title(&self, arguments: &serde_json::Value) -> String {
        match arguments.get("command").and_then(serde_json::Value::as_str) {
            Some(command) => command.to_owned(),
            None => TOOL_NAME.to_owned(),
        }
    }

    async fn execute(
        &self,
        arguments: serde_json::Value,
        cx: &ToolCallContext,
    ) -> Result<ToolOutput, ToolError> {
        let args: BashArgs = parse_arguments(TOOL_NAME, arguments)?;
        self.run(args, cx).await
    }
}

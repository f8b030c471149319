//! What a running command writes, as it writes it: for a front end that
//! shows a call as a terminal while it runs.

use std::fmt;
use std::sync::Arc;

/// One report of a running command: a piece of its output, or how it
/// ended.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum CommandReport<'a> {
    /// Text the command wrote since the last report (standard output and
    /// standard error as they were interleaved), whole characters only.
    Output(&'a str),
    /// The command ended; no report follows.
    Exit(CommandExit),
}

/// How a command ended, as a terminal says it: an exit code, or the
/// signal that ended it.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct CommandExit {
    /// Its exit code, when it exited.
    pub code: Option<i32>,
    /// The signal that ended it (`SIGKILL`), when one did.
    pub signal: Option<String>,
}

/// Where a call that runs a command reports what the command writes while
/// it runs, for a front end that shows it live (an editor's terminal, the
/// last lines under a call in `dsh run`). The caller attaches one to the
/// [`ToolCallContext`](crate::ToolCallContext)'s extensions; a tool whose
/// [`Tool::streams_output`](crate::Tool::streams_output) is `true` reports
/// through [`ToolCallContext::report_output`](crate::ToolCallContext::report_output)
/// and [`ToolCallContext::report_exit`](crate::ToolCallContext::report_exit).
/// What the model reads is the call's result, never these reports.
///
/// ```
/// use std::sync::{Arc, Mutex};
/// use dsh_tools::{CommandExit, CommandOutput, CommandReport, ToolCallContext};
///
/// let seen = Arc::new(Mutex::new(Vec::new()));
/// let sink = Arc::clone(&seen);
/// let cx = ToolCallContext::new("s").with(CommandOutput::new(move |report| {
///     sink.lock().unwrap().push(match report {
///         CommandReport::Output(text) => text.to_owned(),
///         CommandReport::Exit(exit) => format!("exit {:?}", exit.code),
///         _ => String::new(),
///     })
/// }));
/// cx.report_output("one\n");
/// cx.report_exit(CommandExit { code: Some(0), signal: None });
/// assert_eq!(*seen.lock().unwrap(), ["one\n", "exit Some(0)"]);
/// ```
#[derive(Clone)]
pub struct CommandOutput {
    sink: Arc<dyn Fn(CommandReport<'_>) + Send + Sync>,
}

impl CommandOutput {
    /// Reports that go to `sink`. It runs inline, on the command's task:
    /// keep it quick.
    pub fn new(sink: impl Fn(CommandReport<'_>) + Send + Sync + 'static) -> Self {
        Self {
            sink: Arc::new(sink),
        }
    }

    /// Reports `report`.
    pub fn report(&self, report: CommandReport<'_>) {
        (self.sink)(report);
    }
}

impl fmt::Debug for CommandOutput {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CommandOutput").finish_non_exhaustive()
    }
}

//! The file tools of dsh agents: `read` (a window of a UTF-8 text file,
//! with line numbers), `write` (a whole file) and `edit` (exact text
//! replaced).
//!
//! # `read`
//!
//! - `file_path` is absolute, or relative to the session's working
//!   directory; `offset` (the first line, from 1) and `limit` (how many
//!   lines, default [`DEFAULT_LIMIT`], at most [`MAX_LIMIT`]) choose the
//!   window.
//! - Each line is shown as its right-aligned number, a tab, and its text,
//!   like `cat -n`. A line over [`MAX_LINE_BYTES`] is cut with a marker,
//!   and the whole result stops before [`MAX_OUTPUT_BYTES`]; when lines
//!   remain, a last line says which `offset` continues.
//! - Directories, FIFOs, sockets and devices, also behind symbolic links,
//!   are refused before they are opened, so a call never blocks on one.
//!   Files with a NUL byte in their first 8 KiB (binary files) and lines
//!   that are not UTF-8 are refused with a clear error.
//! - The file is streamed: a window near the start of a huge file reads
//!   little of it, and memory stays bounded by the caps.
//!
//! # `write` and `edit`
//!
//! [`WriteTool`] creates a file or replaces its whole text; [`EditTool`]
//! replaces text that occurs exactly once (or everywhere, with
//! `replace_all`). Both:
//!
//! - change an existing file only if the session has seen it as it is
//!   now — read it with `read`, or written it — (the observation policy,
//!   kept per session in [`Observations`], which the three tools of a
//!   process share); otherwise the error says to read it first;
//! - keep a file's line endings (CRLF stays CRLF), its final newline or
//!   its absence, and its permissions; refuse binary and non-UTF-8 files
//!   as `read` does; and on disk replace a file atomically (a temporary
//!   file in the same directory, then a rename), so a crash or a full disk
//!   never leaves half a file;
//! - change files inside the session's working directory, or in the
//!   tool's [`roots`](WriteTool::with_roots); anywhere else (after `..`
//!   and symbolic links are resolved) only when the front end's
//!   [`OutsideWorkspace`] allows it — without one, they refuse;
//! - answer with the changed lines, numbered as `read` numbers them, and
//!   report the change ([`FileChange`](dsh_tools::FileChange)) to the
//!   caller's [`FileChanges`](dsh_tools::FileChanges), for a diff view.
//!
//! # Through an editor
//!
//! A front end that owns the truth about files attaches a [`FileAccess`]
//! to every call's context: `read` then shows what it returns (unsaved
//! changes included) and `write` and `edit` start from it and write
//! through it. Without one, the tools use the disk ([`DiskFiles`]).
//!
//! # Prompt sections
//!
//! The crate owns sections `tool:read` ([`READ_HABIT`], order 100),
//! `tool:write` ([`WRITE_HABIT`], 101) and `tool:edit` ([`EDIT_HABIT`],
//! 102), each bound to its tool. They are static contributions, so a
//! binary must link the crate (`use dsh_tool_fs as _;` if it names nothing
//! else of it).
//!
//! ```
//! use dsh_tool_fs::ReadTool;
//! use dsh_tools::{ToolCallContext, ToolRegistry};
//! use std::sync::Arc;
//!
//! # tokio::runtime::Runtime::new()?.block_on(async {
//! let dir = tempfile::tempdir()?;
//! std::fs::write(dir.path().join("notes.txt"), "alpha\nbeta\ngamma\n")?;
//!
//! let tools = ToolRegistry::new();
//! tools.register(Arc::new(ReadTool::new()))?;
//! let cx = ToolCallContext::new("session-1").with_cwd(dir.path());
//! let result = tools
//!     .call("read", r#"{"file_path": "notes.txt", "offset": 2, "limit": 1}"#, &cx)
//!     .await;
//! assert_eq!(
//!     result.text,
//!     "     2\tbeta\n[showing lines 2-2 of 3; call read with offset=3 to see more]"
//! );
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # })?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![deny(missing_docs)]

mod access;
mod change;
mod edit;
mod observe;
mod read;
mod table;
mod text;
mod workspace;
mod write;

use std::io::Cursor;

use dsh_tools::{
    Tool, ToolCallContext, ToolError, ToolKind, ToolLocation, ToolOutput, async_trait,
    parse_arguments,
};
use schemars::JsonSchema;
use serde::Deserialize;

pub use crate::access::{DiskFiles, FileAccess, FileError, MAX_FILE_BYTES, file_access};
pub use crate::change::ChangeError;
pub use crate::edit::{EDIT_TOOL_NAME, EditArgs, EditTool};
pub use crate::observe::Observations;
pub use crate::read::ReadError;
use crate::read::{Limits, read_window, window_of};
pub use crate::table::{ChangeToolTable, ChangeToolTableError};
pub use crate::workspace::{OutsideWorkspace, outside_workspace};
pub use crate::write::{WRITE_TOOL_NAME, WriteArgs, WriteTool};

/// The tool's name.
pub const TOOL_NAME: &str = "read";

/// How many lines a call shows when it gives no `limit`.
pub const DEFAULT_LIMIT: u64 = 2000;

/// The largest `limit` a call may give.
pub const MAX_LIMIT: u64 = 10_000;

/// The bytes of one line shown; the rest of a longer line is replaced by a
/// marker.
pub const MAX_LINE_BYTES: usize = 2000;

/// The bytes of one result, line numbers included.
pub const MAX_OUTPUT_BYTES: usize = 100 * 1024;

/// How many bytes past the window are read to count the remaining lines
/// for the pagination hint; past them the hint says "more than".
const COUNT_BYTES: u64 = 256 * 1024 * 1024;

/// Section `tool:read`: the habit across calls that no single result's
/// description can carry.
#[dsh_system_prompt::prompt_section(name = "tool:read", order = 100, tool = "read")]
pub const READ_HABIT: &str = "Use read, not shell commands like cat, head or tail, to look at text \
files. Its results have line numbers; page through long files with offset and limit.";

/// Section `tool:write`: the habit across calls of the changing tools.
#[dsh_system_prompt::prompt_section(name = "tool:write", order = 101, tool = "write")]
pub const WRITE_HABIT: &str = "Read a file before you change it, and read it again when it may \
have changed since: changes to a file this session has not seen as it is now are refused.";

/// Section `tool:edit`: the habits across calls of `edit`.
#[dsh_system_prompt::prompt_section(name = "tool:edit", order = 102, tool = "edit")]
pub const EDIT_HABIT: &str = "To change part of an existing file, use edit rather than rewriting \
the whole file. After an edit fails, read the file again before the next attempt instead of \
guessing its text.";

/// The arguments of one call.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadArgs {
    /// The file to read: absolute, or relative to the session's working
    /// directory.
    pub file_path: String,
    /// The first line to show, counting from 1. Defaults to 1.
    #[schemars(range(min = 1))]
    pub offset: Option<u64>,
    /// How many lines to show. Defaults to 2000; at most 10000.
    #[schemars(range(min = 1, max = 10_000))]
    pub limit: Option<u64>,
}

/// The `read` tool. Register it in a [`ToolRegistry`](dsh_tools::ToolRegistry).
///
/// What it reads is recorded in its [`Observations`]: share them with
/// [`WriteTool`] and [`EditTool`], which change only files the session
/// has read.
#[derive(Debug, Clone, Default)]
pub struct ReadTool {
    observations: Observations,
}

impl ReadTool {
    /// The tool, with a memory of its own.
    pub fn new() -> Self {
        Self::default()
    }

    /// Records what it reads in `observations` (shared with `write` and
    /// `edit`).
    pub fn with_observations(mut self, observations: Observations) -> Self {
        self.observations = observations;
        self
    }
}

/// The `file_path` argument of a call, if the model gave one.
fn path_argument(arguments: &serde_json::Value) -> Option<&str> {
    arguments
        .get("file_path")
        .and_then(serde_json::Value::as_str)
}

/// The file a call is about, as the front end's location of it (none
/// without a path).
fn file_location(arguments: &serde_json::Value) -> Vec<ToolLocation> {
    path_argument(arguments)
        .map(ToolLocation::new)
        .into_iter()
        .collect()
}

/// `<tool> <file_path>`, or the tool's name without a path.
fn titled(tool: &str, arguments: &serde_json::Value) -> String {
    match path_argument(arguments) {
        Some(path) => format!("{tool} {path}"),
        None => tool.to_owned(),
    }
}

#[async_trait]
impl Tool for ReadTool {
    fn name(&self) -> &str {
        TOOL_NAME
    }

    fn description(&self) -> String {
        format!(
            "Reads a UTF-8 text file and returns a window of its lines, each as its line number, \
             a tab, and the line.\n\
             - `file_path` is absolute, or relative to the session's working directory.\n\
             - `offset` is the first line to show, counting from 1 (default 1); `limit` is how \
             many lines (default {DEFAULT_LIMIT}, at most {MAX_LIMIT}).\n\
             - A line longer than {MAX_LINE_BYTES} bytes is cut, ending in \
             `… [line truncated: N more bytes]`. A result stops before {MAX_OUTPUT_BYTES} bytes.\n\
             - When lines remain after the window, the result ends with \
             `[showing lines A-B of N; call read with offset=B+1 to see more]`.\n\
             - Only regular files: a directory, FIFO, socket or device (also through a symbolic \
             link) is refused, and so is a binary file (a NUL byte in its first 8 KiB) or a line \
             that is not UTF-8."
        )
    }

    fn parameters(&self) -> serde_json::Value {
        dsh_tools::parameters_for::<ReadArgs>()
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Read
    }

    /// `read <file_path>`.
    fn title(&self, arguments: &serde_json::Value) -> String {
        titled(TOOL_NAME, arguments)
    }

    /// The file, at `offset` when the call gives one.
    fn locations(&self, arguments: &serde_json::Value) -> Vec<ToolLocation> {
        let Some(path) = path_argument(arguments) else {
            return Vec::new();
        };
        let location = ToolLocation::new(path);
        let offset = arguments
            .get("offset")
            .and_then(serde_json::Value::as_u64)
            .and_then(|offset| u32::try_from(offset).ok());
        vec![match offset {
            Some(line) => location.with_line(line),
            None => location,
        }]
    }

    async fn execute(
        &self,
        arguments: serde_json::Value,
        cx: &ToolCallContext,
    ) -> Result<ToolOutput, ToolError> {
        let args: ReadArgs = parse_arguments(TOOL_NAME, arguments)?;
        let path = cx.resolve_path(&args.file_path);
        let offset = args.offset.unwrap_or(1).max(1);
        let limit = args.limit.unwrap_or(DEFAULT_LIMIT).clamp(1, MAX_LIMIT);
        let limits = Limits {
            line_bytes: MAX_LINE_BYTES,
            output_bytes: MAX_OUTPUT_BYTES,
            count_bytes: COUNT_BYTES,
        };
        // What the session saw is keyed by where the file really is.
        let real = workspace::real_path(&path);
        let read = match file_access(cx) {
            // The front end's text (an editor's buffer), windowed in memory.
            Some(files) => match files.read_text(&real).await {
                Ok(text) => window_of(&path, Cursor::new(text), offset, limit, limits),
                Err(error) => return Err(ToolError::failed(TOOL_NAME, error.to_string())),
            },
            // File reads block: run them where blocking is allowed.
            None => tokio::task::spawn_blocking(move || read_window(&path, offset, limit, limits))
                .await
                .map_err(|error| {
                    ToolError::failed(TOOL_NAME, format!("the read task failed: {error}"))
                })?,
        };
        let read = read.map(|(text, seen)| {
            if let Some(seen) = seen {
                self.observations.record(&cx.session_id, &real, seen);
            }
            text
        });
        match read {
            Ok(text) => Ok(ToolOutput::new(text)),
            Err(error @ ReadError::OffsetPastEnd { .. }) => Err(ToolError::invalid_arguments(
                TOOL_NAME,
                "offset",
                error.to_string(),
            )),
            Err(error) => Err(ToolError::failed(TOOL_NAME, error.to_string())),
        }
    }
}

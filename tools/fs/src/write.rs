//! The `write` tool: a whole file, created or replaced.

use std::path::PathBuf;

use dsh_tools::{
    Tool, ToolCallContext, ToolError, ToolKind, ToolLocation, ToolOutput, async_trait,
    parse_arguments,
};
use schemars::JsonSchema;
use serde::Deserialize;

use crate::change::ChangeSetup;
use crate::observe::Observations;
use crate::text::keep_style;
use crate::{file_location, titled};

/// The `write` tool's name.
pub const WRITE_TOOL_NAME: &str = "write";

/// The arguments of one `write` call.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WriteArgs {
    /// The file to write: absolute, or relative to the session's working
    /// directory. Missing parent directories are created.
    pub file_path: String,
    /// The file's whole new text. An existing file keeps its line endings
    /// (CRLF stays CRLF) and its final newline or its absence.
    pub content: String,
}

/// The `write` tool: creates a file, or replaces the whole text of one
/// the session has read. Register it in a
/// [`ToolRegistry`](dsh_tools::ToolRegistry); give it the
/// [`Observations`] of the session's `read` tool, or it sees no reads.
#[derive(Clone, Debug, Default)]
pub struct WriteTool {
    setup: ChangeSetup,
}

impl WriteTool {
    /// The tool, with a memory of its own.
    pub fn new() -> Self {
        Self::default()
    }

    /// Shares `observations` (with `read` and `edit`).
    pub fn with_observations(mut self, observations: Observations) -> Self {
        self.setup.observations = observations;
        self
    }

    /// Directories outside the working directory where it may write
    /// without asking (the deployment's `[tools.write] roots`).
    pub fn with_roots(mut self, roots: Vec<PathBuf>) -> Self {
        self.setup.roots = roots;
        self
    }
}

#[async_trait]
impl Tool for WriteTool {
    fn name(&self) -> &str {
        WRITE_TOOL_NAME
    }

    fn description(&self) -> String {
        "Writes a whole text file: creates it, or replaces all of its text.\n\
         - `file_path` is absolute, or relative to the session's working directory; missing \
         parent directories are created.\n\
         - An existing file must have been read in this session (with `read`, or written by \
         `write` or `edit`) and be unchanged since; otherwise the call fails and says to read it.\n\
         - An existing file keeps its line endings (CRLF stays CRLF), its final newline or its \
         absence, and its permissions. Binary and non-UTF-8 files are refused.\n\
         - A file outside the working directory is written only where the deployment allows it, \
         or after the user agrees.\n\
         - The file is replaced in one step: it is never left half written.\n\
         - The result shows the changed lines with their numbers, as `read` shows lines."
            .to_owned()
    }

    fn parameters(&self) -> serde_json::Value {
        dsh_tools::parameters_for::<WriteArgs>()
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Edit
    }

    /// `write <file_path>`.
    fn title(&self, arguments: &serde_json::Value) -> String {
        titled(WRITE_TOOL_NAME, arguments)
    }

    fn locations(&self, arguments: &serde_json::Value) -> Vec<ToolLocation> {
        file_location(arguments)
    }

    async fn execute(
        &self,
        arguments: serde_json::Value,
        cx: &ToolCallContext,
    ) -> Result<ToolOutput, ToolError> {
        let args: WriteArgs = parse_arguments(WRITE_TOOL_NAME, arguments)?;
        let error = |error: crate::ChangeError| error.into_tool_error(WRITE_TOOL_NAME);
        let (change, old) = self
            .setup
            .begin(WRITE_TOOL_NAME, &args.file_path, cx)
            .await
            .map_err(error)?;
        let new = match &old {
            Some(old) => keep_style(old, &args.content),
            None => args.content,
        };
        let shown = change.given.display().to_string();
        if old.as_deref() == Some(new.as_str()) {
            return Ok(ToolOutput::new(format!(
                "`{shown}` already holds this text; nothing changed"
            )));
        }
        let lines = new.lines().count();
        let what = match old {
            Some(_) => format!("Replaced the text of `{shown}` ({lines} lines)"),
            None => format!("Created `{shown}` ({lines} lines)"),
        };
        change.commit(old, new, &what).await.map_err(error)
    }
}

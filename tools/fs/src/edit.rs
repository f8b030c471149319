//! The `edit` tool: exact text replaced in a file the session has read.

use std::path::PathBuf;

use dsh_tools::{
    Tool, ToolCallContext, ToolError, ToolKind, ToolLocation, ToolOutput, async_trait,
    parse_arguments,
};
use schemars::JsonSchema;
use serde::Deserialize;

use crate::ChangeError;
use crate::change::ChangeSetup;
use crate::observe::Observations;
use crate::text::{LineEndings, line_of, to_lf};
use crate::{file_location, titled};

/// The `edit` tool's name.
pub const EDIT_TOOL_NAME: &str = "edit";

/// The arguments of one `edit` call.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EditArgs {
    /// The file to change: absolute, or relative to the session's working
    /// directory. It must exist.
    pub file_path: String,
    /// The exact text to replace, as the file has it (indentation
    /// included; without the line numbers `read` adds). It must occur
    /// exactly once unless `replace_all` is true: include enough
    /// surrounding lines to make it unique.
    #[schemars(length(min = 1))]
    pub old_string: String,
    /// The text to put in its place; it must differ from `old_string`.
    pub new_string: String,
    /// Replace every occurrence of `old_string` instead of exactly one.
    /// Defaults to false.
    #[serde(default)]
    pub replace_all: bool,
}

/// The `edit` tool: replaces exact text in a file the session has read.
/// Register it in a [`ToolRegistry`](dsh_tools::ToolRegistry); give it the
/// [`Observations`] of the session's `read` tool, or it sees no reads.
#[derive(Clone, Debug, Default)]
pub struct EditTool {
    setup: ChangeSetup,
}

impl EditTool {
    /// The tool, with a memory of its own.
    pub fn new() -> Self {
        Self::default()
    }

    /// Shares `observations` (with `read` and `write`).
    pub fn with_observations(mut self, observations: Observations) -> Self {
        self.setup.observations = observations;
        self
    }

    /// Directories outside the working directory where it may edit
    /// without asking (the deployment's `[tools.edit] roots`).
    pub fn with_roots(mut self, roots: Vec<PathBuf>) -> Self {
        self.setup.roots = roots;
        self
    }
}

#[async_trait]
impl Tool for EditTool {
    fn name(&self) -> &str {
        EDIT_TOOL_NAME
    }

    fn description(&self) -> String {
        "Replaces exact text in an existing text file.\n\
         - `old_string` must occur in the file exactly once, unless `replace_all` is true; when \
         it occurs nowhere or more than once, the call fails, says how often and on which lines, \
         and changes nothing. Copy the text exactly as `read` shows it, without the line numbers \
         and the tab after them.\n\
         - `new_string` replaces it and must differ from it.\n\
         - The file must have been read in this session (with `read`, or written by `write` or \
         `edit`) and be unchanged since; otherwise the call fails and says to read it.\n\
         - The file keeps its line endings (CRLF stays CRLF, and your `\\n` become CRLF there), \
         its final newline or its absence, and its permissions. Binary and non-UTF-8 files are \
         refused.\n\
         - A file outside the working directory is changed only where the deployment allows it, \
         or after the user agrees.\n\
         - The result shows the changed lines with their numbers, as `read` shows lines."
            .to_owned()
    }

    fn parameters(&self) -> serde_json::Value {
        dsh_tools::parameters_for::<EditArgs>()
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Edit
    }

    /// `edit <file_path>`.
    fn title(&self, arguments: &serde_json::Value) -> String {
        titled(EDIT_TOOL_NAME, arguments)
    }

    fn locations(&self, arguments: &serde_json::Value) -> Vec<ToolLocation> {
        file_location(arguments)
    }

    async fn execute(
        &self,
        arguments: serde_json::Value,
        cx: &ToolCallContext,
    ) -> Result<ToolOutput, ToolError> {
        let args: EditArgs = parse_arguments(EDIT_TOOL_NAME, arguments)?;
        self.edit(args, cx)
            .await
            .map_err(|error| error.into_tool_error(EDIT_TOOL_NAME))
    }
}

impl EditTool {
    async fn edit(&self, args: EditArgs, cx: &ToolCallContext) -> Result<ToolOutput, ChangeError> {
        if args.old_string.is_empty() {
            return Err(ChangeError::EmptyOldString);
        }
        if args.old_string == args.new_string {
            return Err(ChangeError::Unchanged);
        }
        let (change, current) = self
            .setup
            .begin(EDIT_TOOL_NAME, &args.file_path, cx)
            .await?;
        let Some(current) = current else {
            return Err(ChangeError::Missing { path: change.given });
        };

        // A CRLF file is matched as the model sees it, with `\n` line
        // ends, and written back with CRLF.
        let endings = LineEndings::of(&current);
        let (text, old, new) = match endings {
            LineEndings::Crlf => (
                to_lf(&current),
                to_lf(&args.old_string),
                to_lf(&args.new_string),
            ),
            LineEndings::Lf => (
                current.clone(),
                args.old_string.clone(),
                args.new_string.clone(),
            ),
        };
        let at: Vec<usize> = text.match_indices(&old).map(|(at, _)| at).collect();
        if at.is_empty() {
            return Err(ChangeError::NoMatch { path: change.given });
        }
        if at.len() > 1 && !args.replace_all {
            return Err(ChangeError::Ambiguous {
                path: change.given,
                count: at.len(),
                lines: at.iter().map(|&at| line_of(&text, at)).collect(),
            });
        }
        let replaced = if args.replace_all {
            text.replace(&old, &new)
        } else {
            text.replacen(&old, &new, 1)
        };
        if replaced == text {
            return Err(ChangeError::Unchanged);
        }
        let new_text = endings.apply(&replaced);
        let count = at.len();
        let what = format!(
            "Edited `{}`: replaced {count} occurrence{}",
            change.given.display(),
            if count == 1 { "" } else { "s" }
        );
        change.commit(Some(current), new_text, &what).await
    }
}

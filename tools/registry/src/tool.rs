//! What a tool is, what it learns about its caller, and what it returns.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use dsh_agent_types::Image;
use dsh_system_prompt::Extensions;
use tokio_util::sync::CancellationToken;

use crate::{
    CommandExit, CommandOutput, CommandReport, FileChange, FileChanges, ToolError, ToolLocation,
};

/// A tool the model can call.
///
/// A tool owns its whole per-call contract: [`description`](Tool::description)
/// says what it does and when to use it, and
/// [`parameters`](Tool::parameters) is the JSON schema of its arguments,
/// best derived from an argument struct with
/// [`parameters_for`](crate::parameters_for). A habit that spans calls
/// belongs in a prompt section bound to the tool, not here.
///
/// The [`ToolRegistry`](crate::ToolRegistry) asks for the name, the
/// description and the parameters once, when the tool is registered.
#[async_trait]
pub trait Tool: Send + Sync + 'static {
    /// The name the model calls it by.
    fn name(&self) -> &str;

    /// The tool's whole per-call contract: what it does, when to use it,
    /// what its result looks like.
    fn description(&self) -> String;

    /// The JSON-schema object of the arguments.
    fn parameters(&self) -> serde_json::Value;

    /// What a call does, for a front end that shows calls (an editor's
    /// tool-call list). [`ToolKind::Other`] unless the tool says.
    fn kind(&self) -> ToolKind {
        ToolKind::Other
    }

    /// A short title of one call, for display: what it does to what
    /// (`ls -la`, `src/lib.rs`). The tool's name unless the tool says;
    /// `arguments` are the model's, not yet validated.
    fn title(&self, arguments: &serde_json::Value) -> String {
        let _ = arguments;
        self.name().to_owned()
    }

    /// The places one call is about, for a front end that follows the
    /// agent (an editor opening the file a call reads or edits). None
    /// unless the tool says; `arguments` are the model's, not yet
    /// validated, and paths in them are as the model wrote them.
    fn locations(&self, arguments: &serde_json::Value) -> Vec<ToolLocation> {
        let _ = arguments;
        Vec::new()
    }

    /// Whether a call reports what it runs writes, as it writes it,
    /// through the caller's [`CommandOutput`] (a command's output, which
    /// a front end shows as a terminal). `false` unless the tool says.
    fn streams_output(&self) -> bool {
        false
    }

    /// Runs one call. `arguments` has already been validated against
    /// [`parameters`](Tool::parameters); turn it into the argument struct
    /// with [`parse_arguments`](crate::parse_arguments).
    ///
    /// A tool should return soon after `cx.cancel` fires; the registry
    /// stops waiting for it then in any case and drops the future, so any
    /// cleanup must also happen on drop.
    async fn execute(
        &self,
        arguments: serde_json::Value,
        cx: &ToolCallContext,
    ) -> Result<ToolOutput, ToolError>;
}

/// What a call of a tool does, as a front end shows it. The kinds are the
/// Agent Client Protocol's, which editors display.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ToolKind {
    /// Reads files or data.
    Read,
    /// Changes files or content.
    Edit,
    /// Deletes files or data.
    Delete,
    /// Moves or renames files.
    Move,
    /// Searches for information.
    Search,
    /// Runs commands or code.
    Execute,
    /// Thinks or plans, changing nothing outside the conversation.
    Think,
    /// Fetches data from the network.
    Fetch,
    /// Anything else.
    #[default]
    Other,
}

/// What a tool learns about its caller, without depending on the agent
/// loop.
///
/// ```
/// use dsh_tools::ToolCallContext;
///
/// let cx = ToolCallContext::new("session-1").with_cwd("/work").with_call_id("call_7");
/// assert_eq!(cx.resolve_path("src/lib.rs"), std::path::Path::new("/work/src/lib.rs"));
/// assert_eq!(cx.resolve_path("/etc/hosts"), std::path::Path::new("/etc/hosts"));
/// ```
#[derive(Clone, Debug)]
pub struct ToolCallContext {
    /// The session's working directory, if it has one. Relative paths of
    /// a call are resolved against it.
    pub cwd: Option<PathBuf>,
    /// The calling session: tools that keep state between calls key it by
    /// this.
    pub session_id: String,
    /// The model's id for this tool call.
    pub call_id: String,
    /// Fires when the caller gives up on the call.
    pub cancel: CancellationToken,
    /// Typed data the caller attaches for tools that know its type.
    pub extensions: Extensions,
}

impl ToolCallContext {
    /// A context for a call of session `session_id`, with no working
    /// directory, an empty call id and a fresh cancellation token.
    pub fn new(session_id: impl Into<String>) -> Self {
        Self {
            cwd: None,
            session_id: session_id.into(),
            call_id: String::new(),
            cancel: CancellationToken::new(),
            extensions: Extensions::new(),
        }
    }

    /// Sets the working directory.
    pub fn with_cwd(mut self, cwd: impl Into<PathBuf>) -> Self {
        self.cwd = Some(cwd.into());
        self
    }

    /// Sets the model's tool-call id.
    pub fn with_call_id(mut self, call_id: impl Into<String>) -> Self {
        self.call_id = call_id.into();
        self
    }

    /// Attaches a typed value, replacing one of the same type.
    pub fn with<T: Send + Sync + 'static>(mut self, value: T) -> Self {
        self.extensions.insert(value);
        self
    }

    /// The attached value of type `T`, if any.
    pub fn get<T: Send + Sync + 'static>(&self) -> Option<&T> {
        self.extensions.get()
    }

    /// Reports progress to the caller's [`ToolProgress`], if it attached
    /// one; does nothing otherwise.
    pub fn report_progress(&self, text: &str) {
        if let Some(progress) = self.get::<ToolProgress>() {
            progress.report(text);
        }
    }

    /// Reports a file the call changed to the caller's [`FileChanges`],
    /// if it attached one; does nothing otherwise.
    pub fn report_change(&self, change: &FileChange) {
        if let Some(changes) = self.get::<FileChanges>() {
            changes.report(change);
        }
    }

    /// Reports text the call's command wrote to the caller's
    /// [`CommandOutput`], if it attached one; does nothing otherwise.
    pub fn report_output(&self, text: &str) {
        if let Some(output) = self.get::<CommandOutput>() {
            output.report(CommandReport::Output(text));
        }
    }

    /// Reports how the call's command ended to the caller's
    /// [`CommandOutput`], if it attached one; does nothing otherwise.
    pub fn report_exit(&self, exit: CommandExit) {
        if let Some(output) = self.get::<CommandOutput>() {
            output.report(CommandReport::Exit(exit));
        }
    }

    /// `path` resolved against the working directory: an absolute path is
    /// kept; a relative one is joined to [`cwd`](Self::cwd), or kept
    /// relative (to the process's working directory) when the session has
    /// none.
    pub fn resolve_path(&self, path: impl AsRef<Path>) -> PathBuf {
        let path = path.as_ref();
        match &self.cwd {
            Some(cwd) if path.is_relative() => cwd.join(path),
            _ => path.to_path_buf(),
        }
    }
}

/// Where a long-running call reports how it is getting on (a subagent's
/// latest step), for a front end to show while the call runs. The caller
/// attaches one to the [`ToolCallContext`]'s extensions when it has a
/// display; a tool reports through
/// [`ToolCallContext::report_progress`].
///
/// ```
/// use std::sync::{Arc, Mutex};
/// use dsh_tools::{ToolCallContext, ToolProgress};
///
/// let seen = Arc::new(Mutex::new(Vec::new()));
/// let sink = Arc::clone(&seen);
/// let cx = ToolCallContext::new("s").with(ToolProgress::new(move |text| {
///     sink.lock().unwrap().push(text.to_owned())
/// }));
/// cx.report_progress("half way");
/// assert_eq!(*seen.lock().unwrap(), ["half way"]);
/// ```
#[derive(Clone)]
pub struct ToolProgress {
    sink: Arc<dyn Fn(&str) + Send + Sync>,
}

impl ToolProgress {
    /// Progress that goes to `sink`. It runs inline: keep it quick.
    pub fn new(sink: impl Fn(&str) + Send + Sync + 'static) -> Self {
        Self {
            sink: Arc::new(sink),
        }
    }

    /// Reports `text`: what the call is doing now, replacing what it
    /// reported before.
    pub fn report(&self, text: &str) {
        (self.sink)(text);
    }
}

impl fmt::Debug for ToolProgress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolProgress").finish_non_exhaustive()
    }
}

/// The successful output of a tool: the text the model reads (for bash,
/// the output and any `[exit code: N]` marker), and any images it
/// returned (an MCP tool's).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolOutput {
    /// The text the model reads.
    pub text: String,
    /// Images, after the text: sent to a model whose API takes images in
    /// a tool result, described to another, shown by an editor.
    pub images: Vec<Image>,
}

impl ToolOutput {
    /// An output of `text`.
    pub fn new(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            images: Vec::new(),
        }
    }

    /// The same output with `images` after its text.
    pub fn with_images(mut self, images: Vec<Image>) -> Self {
        self.images = images;
        self
    }
}

impl From<String> for ToolOutput {
    fn from(text: String) -> Self {
        Self::new(text)
    }
}

impl From<&str> for ToolOutput {
    fn from(text: &str) -> Self {
        Self::new(text)
    }
}

/// What goes back to the model for one call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolResult {
    /// The text the model reads.
    pub text: String,
    /// Whether the call failed: the text is then an error message.
    pub is_error: bool,
    /// Images the tool returned, after the text (none when it failed).
    pub images: Vec<Image>,
}

impl ToolResult {
    /// A successful result.
    pub fn ok(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            is_error: false,
            images: Vec::new(),
        }
    }

    /// A failed result whose text is `error`'s message.
    pub fn error(error: &ToolError) -> Self {
        Self {
            text: error.to_string(),
            is_error: true,
            images: Vec::new(),
        }
    }
}

impl From<Result<ToolOutput, ToolError>> for ToolResult {
    fn from(result: Result<ToolOutput, ToolError>) -> Self {
        match result {
            Ok(output) => Self {
                images: output.images,
                ..Self::ok(output.text)
            },
            Err(error) => Self::error(&error),
        }
    }
}

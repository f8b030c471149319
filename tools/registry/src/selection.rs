//! Per-agent tool sets, as an extension of `AssembleContext`.

use dsh_system_prompt::AssembleContext;

/// Which tools one agent may see: an [`AssembleContext`] extension read by
/// the tool provider that [`ToolRegistry::install`](crate::ToolRegistry::install)
/// registers. Without one, an assembly gets every registered tool.
///
/// Names that no registered tool has select nothing;
/// [`ToolRegistry::check_selection`](crate::ToolRegistry::check_selection)
/// reports them, for config validation.
///
/// ```
/// use dsh_system_prompt::AssembleContext;
/// use dsh_tools::{ToolSelection, ToolSelectionExt};
///
/// let cx = AssembleContext::new().with(ToolSelection::new(["read", "bash"]));
/// assert!(cx.tool_selection().is_some_and(|selection| selection.contains("bash")));
/// assert!(AssembleContext::default().tool_selection().is_none());
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ToolSelection {
    /// The selected tools' names. Their order does not matter: assemblies
    /// list tools in registration order.
    pub tools: Vec<String>,
}

impl ToolSelection {
    /// A selection of the named tools.
    pub fn new<I>(tools: I) -> Self
    where
        I: IntoIterator,
        I::Item: Into<String>,
    {
        Self {
            tools: tools.into_iter().map(Into::into).collect(),
        }
    }

    /// Whether the tool named `name` is selected.
    pub fn contains(&self, name: &str) -> bool {
        self.tools.iter().any(|tool| tool == name)
    }
}

/// The key a tool keeps per-session state under — the
/// [`session_id`](crate::ToolCallContext::session_id) of its calls — as an
/// [`AssembleContext`] extension, so that what a tool contributes to a
/// prompt (the todo list as a runtime context) reads the state its calls
/// wrote. The agent loop attaches it to every step's context.
///
/// ```
/// use dsh_system_prompt::AssembleContext;
/// use dsh_tools::ToolSession;
///
/// let cx = AssembleContext::new().with(ToolSession::new("session-1"));
/// assert_eq!(ToolSession::of(&cx), Some("session-1"));
/// assert_eq!(ToolSession::of(&AssembleContext::default()), None);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolSession(String);

impl ToolSession {
    /// The key of session `id`.
    pub fn new(id: impl Into<String>) -> Self {
        Self(id.into())
    }

    /// The session key of `cx`, if it has one.
    pub fn of(cx: &AssembleContext) -> Option<&str> {
        cx.get::<Self>().map(|session| session.0.as_str())
    }
}

/// Reads the [`ToolSelection`] of a context.
pub trait ToolSelectionExt {
    /// The context's tool selection; `None` selects every tool.
    fn tool_selection(&self) -> Option<&ToolSelection>;
}

impl ToolSelectionExt for AssembleContext {
    fn tool_selection(&self) -> Option<&ToolSelection> {
        self.get::<ToolSelection>()
    }
}

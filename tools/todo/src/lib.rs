//! The `todo_write` tool of dsh agents: the session's task list, replaced
//! whole on every call.
//!
//! Each call sends the complete list — every task with its `content` and
//! `status` (`pending`, `in_progress` or `completed`) — and the list
//! replaces the session's previous one. At most one task may be
//! `in_progress`; a call that breaks that rule, or sends a task without
//! content, changes nothing and gets an error naming the task. Lists are
//! kept per session (by [`ToolCallContext::session_id`]), and the result
//! echoes the list the session now has.
//!
//! The description carries the whole contract, so the crate has no prompt
//! section. The list itself is a runtime context
//! ([`TodoWriteTool::install_context`]): the model sees it as it stands,
//! at the conversation's tail, and the system prompt does not change with
//! it.
//!
//! ```
//! use dsh_tool_todo::{TodoStatus, TodoWriteTool};
//! use dsh_tools::{ToolCallContext, ToolRegistry};
//! use std::sync::Arc;
//!
//! # tokio::runtime::Runtime::new()?.block_on(async {
//! let todo = Arc::new(TodoWriteTool::new());
//! let tools = ToolRegistry::new();
//! tools.register(todo.clone())?;
//!
//! let cx = ToolCallContext::new("session-1");
//! let arguments = r#"{"todos": [
//!     {"content": "Write the parser", "status": "completed"},
//!     {"content": "Test the parser", "status": "in_progress"},
//!     {"content": "Document it", "status": "pending"}
//! ]}"#;
//! let result = tools.call("todo_write", arguments, &cx).await;
//! assert_eq!(
//!     result.text,
//!     "Todo list updated: 3 tasks (1 completed, 1 in progress, 1 pending).\n\
//!      1. [x] Write the parser\n\
//!      2. [>] Test the parser\n\
//!      3. [ ] Document it"
//! );
//! assert_eq!(todo.list("session-1")[1].status, TodoStatus::InProgress);
//! assert!(todo.list("session-2").is_empty());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # })?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![deny(missing_docs)]

use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::Arc;

use dsh_system_prompt::template::escape_literal;
use dsh_system_prompt::{Owner, PromptSection, Registration, RegistryError, SystemPrompt};
use dsh_tools::{
    Tool, ToolCallContext, ToolError, ToolKind, ToolOutput, ToolSession, async_trait,
    parse_arguments,
};
use parking_lot::Mutex;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The tool's name.
pub const TOOL_NAME: &str = "todo_write";

/// Where a task stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TodoStatus {
    /// Not started.
    Pending,
    /// Being worked on; at most one task at a time.
    InProgress,
    /// Done.
    Completed,
}

impl TodoStatus {
    fn checkbox(self) -> &'static str {
        match self {
            Self::Pending => "[ ]",
            Self::InProgress => "[>]",
            Self::Completed => "[x]",
        }
    }
}

/// One task of the list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TodoItem {
    /// What the task is, as an imperative sentence.
    pub content: String,
    /// Where it stands: `pending`, `in_progress` or `completed`.
    pub status: TodoStatus,
}

/// The arguments of one call.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TodoWriteArgs {
    /// The complete list, in order; it replaces the previous list.
    pub todos: Vec<TodoItem>,
}

/// The most tasks a list may have: a plan, not a database. The state is
/// kept per session and shown to the model after every change, so an
/// unbounded list would grow both without end.
pub const MAX_TODOS: usize = 100;

/// The longest a task's `content` may be, in bytes: one imperative
/// sentence, with room to spare.
pub const MAX_TODO_BYTES: usize = 1000;

/// A list that breaks a rule of the tool.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TodoError {
    /// More than one task is `in_progress`.
    #[error(
        "at most one task may be `in_progress`, but tasks {} are; keep one in progress and \
         mark the others `pending` or `completed`",
        dsh_system_prompt::template::series(.tasks, "and")
    )]
    SeveralInProgress {
        /// The 1-based numbers of the tasks in progress.
        tasks: Vec<usize>,
    },
    /// A task whose content is empty.
    #[error("task {task} has no content; say what the task is")]
    EmptyContent {
        /// The 1-based number of the task.
        task: usize,
    },
    /// More tasks than [`MAX_TODOS`].
    #[error(
        "the list has {count} tasks, more than the {max} it may have; group small steps \
         into larger tasks"
    )]
    TooMany {
        /// How many tasks were sent.
        count: usize,
        /// The limit.
        max: usize,
    },
    /// A task longer than [`MAX_TODO_BYTES`].
    #[error(
        "task {task} is {bytes} bytes long, more than the {max} a task may have; say what \
         to do in one sentence"
    )]
    TooLong {
        /// The 1-based number of the task.
        task: usize,
        /// Its length.
        bytes: usize,
        /// The limit.
        max: usize,
    },
}

impl TodoError {
    /// The argument the error is about, as a path into the arguments.
    pub fn field(&self) -> String {
        match self {
            Self::SeveralInProgress { .. } => "todos".to_owned(),
            Self::EmptyContent { task } | Self::TooLong { task, .. } => {
                format!("todos[{}].content", task - 1)
            }
            Self::TooMany { .. } => "todos".to_owned(),
        }
    }
}

/// Checks the rules a list must keep.
pub fn check_list(todos: &[TodoItem]) -> Result<(), TodoError> {
    if todos.len() > MAX_TODOS {
        return Err(TodoError::TooMany {
            count: todos.len(),
            max: MAX_TODOS,
        });
    }
    if let Some((at, item)) =
        (todos.iter().enumerate()).find(|(_, item)| item.content.len() > MAX_TODO_BYTES)
    {
        return Err(TodoError::TooLong {
            task: at + 1,
            bytes: item.content.len(),
            max: MAX_TODO_BYTES,
        });
    }
    if let Some(at) = todos.iter().position(|item| item.content.trim().is_empty()) {
        return Err(TodoError::EmptyContent { task: at + 1 });
    }
    let in_progress: Vec<usize> = todos
        .iter()
        .enumerate()
        .filter(|(_, item)| item.status == TodoStatus::InProgress)
        .map(|(at, _)| at + 1)
        .collect();
    if in_progress.len() > 1 {
        return Err(TodoError::SeveralInProgress { tasks: in_progress });
    }
    Ok(())
}

/// The `todo_write` tool, holding every session's list. Register it in a
/// [`ToolRegistry`](dsh_tools::ToolRegistry), and keep an `Arc` to it to
/// read the lists (say, for a UI).
#[derive(Debug, Default)]
pub struct TodoWriteTool {
    lists: Arc<Mutex<HashMap<String, Vec<TodoItem>>>>,
}

/// The name of the runtime context that carries a session's todo list.
pub const CONTEXT_NAME: &str = "todo";

/// Where the todo list renders among runtime contexts.
pub const CONTEXT_ORDER: i32 = 100;

impl TodoWriteTool {
    /// The tool, with no lists.
    pub fn new() -> Self {
        Self::default()
    }

    /// Session `session_id`'s list; empty when it has none.
    pub fn list(&self, session_id: &str) -> Vec<TodoItem> {
        self.lists
            .lock()
            .get(session_id)
            .cloned()
            .unwrap_or_default()
    }

    /// Forgets session `session_id`'s list (when the session ends).
    pub fn forget(&self, session_id: &str) {
        self.lists.lock().remove(session_id);
    }

    /// Registers the session's current list as runtime context
    /// [`CONTEXT_NAME`], bound to this tool: the model sees the list as it
    /// stands in the snapshot at the conversation's tail, without the
    /// system prompt changing when the list does. Empty while the session
    /// has no list. Keep the registration as long as the tool is in use.
    ///
    /// ```
    /// use dsh_system_prompt::{AssembleContext, SystemPrompt, ToolSchema, render_context};
    /// use dsh_tool_todo::{TodoItem, TodoStatus, TodoWriteTool};
    /// use dsh_tools::ToolSession;
    /// use std::sync::Arc;
    ///
    /// let prompt = SystemPrompt::empty();
    /// let todo = TodoWriteTool::new();
    /// let _context = todo.install_context(&prompt)?;
    /// let _tools = prompt.tools("tools", |_| vec![Arc::new(ToolSchema::new("todo_write", "", serde_json::json!({})))])?;
    /// todo.replace("s1", vec![TodoItem { content: "Fix <<it>>".into(), status: TodoStatus::InProgress }])?;
    ///
    /// let cx = AssembleContext::new().with(ToolSession::new("s1"));
    /// assert_eq!(render_context(&prompt.assemble(&cx))?, "Todo list:\n1. [>] Fix <<it>>");
    /// let other = AssembleContext::new().with(ToolSession::new("s2"));
    /// assert_eq!(render_context(&prompt.assemble(&other))?, "");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn install_context(&self, prompt: &SystemPrompt) -> Result<Registration, RegistryError> {
        let lists = Arc::clone(&self.lists);
        let context = PromptSection::provided(CONTEXT_NAME, CONTEXT_ORDER, move |cx| {
            let Some(session) = ToolSession::of(cx) else {
                return String::new();
            };
            match lists.lock().get(session) {
                Some(todos) if !todos.is_empty() => {
                    // The items are the model's words, not template text.
                    escape_literal(&format!("Todo list:\n{}", lines(todos))).into_owned()
                }
                _ => String::new(),
            }
        })
        .bound_to_tool(TOOL_NAME)
        .owned_by(Owner::new(
            env!("CARGO_PKG_NAME"),
            "dsh_tool_todo::TodoWriteTool::install_context",
            file!(),
            line!(),
        ));
        prompt.context(context)
    }

    /// Replaces session `session_id`'s list, if it keeps the rules.
    pub fn replace(&self, session_id: &str, todos: Vec<TodoItem>) -> Result<(), TodoError> {
        check_list(&todos)?;
        self.lists.lock().insert(session_id.to_owned(), todos);
        Ok(())
    }
}

/// The list as the model reads it back.
fn render(todos: &[TodoItem]) -> String {
    if todos.is_empty() {
        return "Todo list cleared: no tasks.".to_owned();
    }
    let count = |status| todos.iter().filter(|item| item.status == status).count();
    let mut text = format!(
        "Todo list updated: {} task{} ({} completed, {} in progress, {} pending).",
        todos.len(),
        if todos.len() == 1 { "" } else { "s" },
        count(TodoStatus::Completed),
        count(TodoStatus::InProgress),
        count(TodoStatus::Pending),
    );
    text.push('\n');
    text.push_str(&lines(todos));
    text
}

/// One line a task: `1. [x] Write the parser`.
fn lines(todos: &[TodoItem]) -> String {
    let mut text = String::new();
    for (at, item) in todos.iter().enumerate() {
        if at > 0 {
            text.push('\n');
        }
        // Writing to a String cannot fail.
        let _ = write!(
            text,
            "{}. {} {}",
            at + 1,
            item.status.checkbox(),
            item.content
        );
    }
    text
}

#[async_trait]
impl Tool for TodoWriteTool {
    fn name(&self) -> &str {
        TOOL_NAME
    }

    fn description(&self) -> String {
        "Writes this session's task list, to plan and track multi-step work.\n\
         - Each call sends the complete list, in order: it replaces the previous list whole. \
         To change one task, send every task again with that one changed; to clear the list, \
         send an empty list.\n\
         - Each task has `content` (what to do, as an imperative sentence) and `status`: \
         `pending`, `in_progress` or `completed`.\n\
         - At most one task is `in_progress` at a time: mark a task `in_progress` before \
         starting it and `completed` as soon as it is done. A list with two tasks in progress, \
         or a task without content, is refused and changes nothing.\n\
         - The result echoes the list as it now stands: `[x]` completed, `[>]` in progress, \
         `[ ]` pending.\n\
         - Use it for work of three or more steps, or when asked to; not for a single \
         simple step."
            .to_owned()
    }

    fn parameters(&self) -> serde_json::Value {
        dsh_tools::parameters_for::<TodoWriteArgs>()
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Think
    }

    async fn execute(
        &self,
        arguments: serde_json::Value,
        cx: &ToolCallContext,
    ) -> Result<ToolOutput, ToolError> {
        let args: TodoWriteArgs = parse_arguments(TOOL_NAME, arguments)?;
        // Refused before anything is rendered from it.
        check_list(&args.todos).map_err(|error| {
            ToolError::invalid_arguments(TOOL_NAME, error.field(), error.to_string())
        })?;
        let text = render(&args.todos);
        self.replace(&cx.session_id, args.todos).map_err(|error| {
            ToolError::invalid_arguments(TOOL_NAME, error.field(), error.to_string())
        })?;
        Ok(ToolOutput::new(text))
    }
}

#[cfg(test)]
mod tests {
    use super::{MAX_TODO_BYTES, MAX_TODOS, TodoError, TodoItem, TodoStatus, check_list};

    fn item(content: &str, status: TodoStatus) -> TodoItem {
        TodoItem {
            content: content.to_owned(),
            status,
        }
    }

    #[test]
    fn several_in_progress_tasks_are_listed() {
        let todos = [
            item("a", TodoStatus::InProgress),
            item("b", TodoStatus::Pending),
            item("c", TodoStatus::InProgress),
            item("d", TodoStatus::InProgress),
        ];
        let error = check_list(&todos).err();
        assert_eq!(
            error,
            Some(TodoError::SeveralInProgress {
                tasks: vec![1, 3, 4]
            })
        );
        assert!(
            error
                .map(|e| e.to_string())
                .is_some_and(|message| message.contains("tasks 1, 3 and 4 are")),
        );
    }

    #[test]
    fn one_in_progress_task_is_fine() {
        let todos = [
            item("a", TodoStatus::Completed),
            item("b", TodoStatus::InProgress),
        ];
        assert_eq!(check_list(&todos), Ok(()));
        assert_eq!(check_list(&[]), Ok(()));
    }

    #[test]
    fn ten_thousand_tasks_are_refused() {
        let todos: Vec<TodoItem> = (0..10_000)
            .map(|n| item(&format!("task {n}"), TodoStatus::Pending))
            .collect();
        let error = check_list(&todos).expect_err("too many");
        assert_eq!(
            error,
            TodoError::TooMany {
                count: 10_000,
                max: MAX_TODOS
            }
        );
        assert_eq!(error.field(), "todos");
        assert!(error.to_string().contains("more than the 100"), "{error}");
        assert_eq!(check_list(&todos[..MAX_TODOS]), Ok(()));
    }

    #[test]
    fn a_task_of_any_size_is_refused() {
        let todos = [
            item("fine", TodoStatus::Pending),
            item(&"x".repeat(1_000_000), TodoStatus::Pending),
        ];
        let error = check_list(&todos).expect_err("too long");
        assert_eq!(error.field(), "todos[1].content");
        assert!(
            error.to_string().contains("task 2 is 1000000 bytes long"),
            "{error}"
        );
        assert_eq!(
            check_list(&[item(&"x".repeat(MAX_TODO_BYTES), TodoStatus::Pending)]),
            Ok(())
        );
    }
}

//! The todo_write tool's contract, exercised through the tool registry as
//! the agent loop calls it.

use std::sync::Arc;

use dsh_tool_todo::{TodoItem, TodoStatus, TodoWriteTool};
use dsh_tools::{ToolCallContext, ToolRegistry, ToolResult};
use serde_json::json;

struct Fixture {
    todo: Arc<TodoWriteTool>,
    tools: ToolRegistry,
}

impl Fixture {
    fn new() -> Self {
        let todo = Arc::new(TodoWriteTool::new());
        let tools = ToolRegistry::new();
        tools.register(todo.clone()).expect("todo_write registers");
        Self { todo, tools }
    }

    /// Calls the tool in `session` with `todos`, each `(content, status)`.
    async fn write(&self, session: &str, todos: &[(&str, &str)]) -> ToolResult {
        let todos: Vec<_> = todos
            .iter()
            .map(|(content, status)| json!({"content": content, "status": status}))
            .collect();
        let arguments = json!({ "todos": todos }).to_string();
        self.tools
            .call("todo_write", &arguments, &ToolCallContext::new(session))
            .await
    }
}

fn item(content: &str, status: TodoStatus) -> TodoItem {
    TodoItem {
        content: content.to_owned(),
        status,
    }
}

#[tokio::test]
async fn each_call_replaces_the_whole_list() {
    let fixture = Fixture::new();
    let first = fixture
        .write(
            "s",
            &[
                ("Parse", "in_progress"),
                ("Test", "pending"),
                ("Ship", "pending"),
            ],
        )
        .await;
    assert!(!first.is_error, "{first:?}");

    let second = fixture
        .write("s", &[("Parse", "completed"), ("Test", "in_progress")])
        .await;
    assert_eq!(
        second,
        ToolResult::ok(
            "Todo list updated: 2 tasks (1 completed, 1 in progress, 0 pending).\n\
             1. [x] Parse\n\
             2. [>] Test"
        )
    );
    // "Ship" is gone: the list was replaced, not merged.
    assert_eq!(
        fixture.todo.list("s"),
        [
            item("Parse", TodoStatus::Completed),
            item("Test", TodoStatus::InProgress)
        ]
    );

    let cleared = fixture.write("s", &[]).await;
    assert_eq!(cleared, ToolResult::ok("Todo list cleared: no tasks."));
    assert!(fixture.todo.list("s").is_empty());
}

#[tokio::test]
async fn two_tasks_in_progress_are_rejected_and_change_nothing() {
    let fixture = Fixture::new();
    assert!(
        !fixture
            .write("s", &[("Parse", "in_progress")])
            .await
            .is_error
    );

    let result = fixture
        .write("s", &[("Parse", "in_progress"), ("Test", "in_progress")])
        .await;
    assert!(result.is_error);
    assert_eq!(
        result.text,
        "invalid arguments for tool `todo_write`: `todos`: at most one task may be `in_progress`, \
         but tasks 1 and 2 are; keep one in progress and mark the others `pending` or `completed`"
    );
    assert_eq!(
        fixture.todo.list("s"),
        [item("Parse", TodoStatus::InProgress)]
    );
}

#[tokio::test]
async fn lists_are_kept_per_session() {
    let fixture = Fixture::new();
    assert!(!fixture.write("alice", &[("A", "pending")]).await.is_error);
    assert!(!fixture.write("bob", &[("B", "completed")]).await.is_error);
    assert_eq!(fixture.todo.list("alice"), [item("A", TodoStatus::Pending)]);
    assert_eq!(fixture.todo.list("bob"), [item("B", TodoStatus::Completed)]);
    assert!(fixture.todo.list("carol").is_empty());

    fixture.todo.forget("alice");
    assert!(fixture.todo.list("alice").is_empty());
    assert_eq!(fixture.todo.list("bob"), [item("B", TodoStatus::Completed)]);
}

#[tokio::test]
async fn a_bad_task_is_an_error_naming_its_field() {
    let fixture = Fixture::new();
    let result = fixture
        .write("s", &[("Parse", "pending"), ("Test", "doing")])
        .await;
    assert!(result.is_error);
    assert!(
        result
            .text
            .starts_with("invalid arguments for tool `todo_write`: `todos[1].status`: "),
        "{}",
        result.text
    );

    let result = fixture.write("s", &[("  ", "pending")]).await;
    assert_eq!(
        result.text,
        "invalid arguments for tool `todo_write`: `todos[0].content`: task 1 has no content; say what the task is"
    );
    assert!(fixture.todo.list("s").is_empty());
}

#[test]
fn the_description_carries_the_contract() {
    use dsh_tools::Tool;
    let description = TodoWriteTool::new().description();
    for needle in [
        "replaces the previous list",
        "pending",
        "in_progress",
        "completed",
        "At most one task",
        "echoes the list",
    ] {
        assert!(description.contains(needle), "missing {needle:?}");
    }
}

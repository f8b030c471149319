//! The todo list reaches the model as runtime context at the tail of the
//! conversation, and the system prompt stays the same while it changes.

use crate::common;

#[test]
fn the_todo_list_is_runtime_context_not_system_prompt() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        dir.path().join("answers.toml"),
        "[[answers]]\n[[answers.tool_calls]]\nname = \"todo_write\"\n\
         arguments = { todos = [{ content = \"Read <<the>> code\", status = \"in_progress\" }] }\n\
         [[answers]]\n[[answers.tool_calls]]\nname = \"todo_write\"\n\
         arguments = { todos = [{ content = \"Read <<the>> code\", status = \"completed\" }] }\n\
         [[answers]]\ntext = \"done\"\n",
    )
    .expect("answers");
    let config = dir.path().join("dsh.toml");
    std::fs::write(
        &config,
        "[adapter.scripted]\nanswers = \"answers.toml\"\nmodel = \"m\"\n\
         [[agents]]\nid = \"a\"\ntools = [\"todo_write\"]\npersona = \"You plan.\"\n",
    )
    .expect("deployment");
    let (_, requests) = common::run_prompt(dir.path(), &config.display().to_string(), None, "plan");
    assert_eq!(requests.len(), 3);
    assert!(
        requests
            .iter()
            .all(|request| request["system"] == requests[0]["system"]),
        "the system prompt does not change with the list"
    );
    let tail = |at: usize| {
        let messages = requests[at]["messages"].as_array().expect("messages");
        messages.last().cloned().expect("a message")
    };
    assert_eq!(tail(0)["text"], "plan", "no list yet: no snapshot");
    assert_eq!(tail(1)["role"], "user");
    assert_eq!(
        tail(1)["text"],
        "Current runtime context. It supersedes earlier runtime-context snapshots.\n\n\
         Todo list:\n1. [>] Read <<the>> code"
    );
    assert_eq!(
        tail(2)["text"],
        "Current runtime context. It supersedes earlier runtime-context snapshots.\n\n\
         Todo list:\n1. [x] Read <<the>> code"
    );
}

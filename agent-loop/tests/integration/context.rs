//! Runtime contexts: a snapshot message at the conversation's tail when
//! the rendered contexts change, nothing when they do not, a clear marker
//! when they empty; the system prompt never changes for them.

use crate::support;

use std::sync::Arc;

use dsh_agent_loop::{
    Agent, AgentOptions, CONTEXT_CLEARED, CONTEXT_HEADER, Event, LoopEvent, Message, ModelResponse,
    ScriptedAdapter, Session, ToolCall,
};
use dsh_system_prompt::PromptSection;
use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;

fn echo(id: &str, text: &str) -> ModelResponse {
    ModelResponse::default().with_tool_call(ToolCall::new(
        id,
        "echo",
        serde_json::json!({ "text": text }).to_string(),
    ))
}

#[tokio::test]
async fn a_snapshot_goes_to_the_tail_only_when_the_context_changes()
-> Result<(), Box<dyn std::error::Error>> {
    let (agent_loop, _installed, adapter) = support::echo_loop([
        echo("c1", "A"),
        echo("c2", "A"),
        echo("c3", ""),
        ModelResponse::text("done"),
    ])?;
    // The context is the last text `echo` returned: what a tool's state
    // (a todo list) looks like to its context provider.
    let state = Arc::new(Mutex::new(String::new()));
    let _context = support::shared_context(&agent_loop, "last-echo", 10, &state)?;
    let agent_loop = {
        let state = Arc::clone(&state);
        agent_loop.observed_by(Arc::new(move |event: LoopEvent<'_>| {
            if let LoopEvent::Recorded {
                event: Event::ToolResult { text, .. },
                ..
            } = event
            {
                *state.lock() = text.clone();
            }
        }))
    };
    let agent = Agent::new("a", AgentOptions::new("m").with_persona("You echo."));
    let mut session = Session::new();
    support::turn(&agent_loop, &agent, &mut session, "go").await?;

    let requests = adapter.requests();
    assert_eq!(requests.len(), 4);
    assert!(
        requests
            .iter()
            .all(|request| request.system == requests[0].system),
        "the system prompt is the same at every step"
    );
    let tail = |at: usize| requests[at].messages.last().cloned();
    assert_eq!(
        tail(0),
        Some(Message::User { text: "go".into() }),
        "an empty context sends nothing"
    );
    assert_eq!(
        tail(1),
        Some(Message::User {
            text: format!("{CONTEXT_HEADER}\n\nA")
        })
    );
    assert!(
        matches!(tail(2), Some(Message::Tool { .. })),
        "unchanged: no second snapshot"
    );
    assert_eq!(
        tail(3),
        Some(Message::User {
            text: CONTEXT_CLEARED.to_owned()
        }),
        "emptied: the clear marker"
    );
    let snapshots: Vec<&str> = session
        .events()
        .iter()
        .filter_map(|event| match event {
            Event::Context { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(snapshots, ["A", ""]);
    assert_eq!(session.context(), Some(""));
    Ok(())
}

#[tokio::test]
async fn a_context_that_does_not_render_fails_the_turn_naming_it()
-> Result<(), Box<dyn std::error::Error>> {
    let adapter = Arc::new(ScriptedAdapter::new([ModelResponse::text("never")]));
    let (agent_loop, _installed) = support::agent_loop(vec![], adapter.clone())?;
    let _context = agent_loop
        .prompt()
        .context(PromptSection::provided("todo", 10, |_| {
            "in <<cwdir>>".to_owned()
        }))?;
    let agent = Agent::new("a", AgentOptions::new("m"));
    let error = agent_loop
        .run_turn(&agent, &mut Session::new(), "go", &CancellationToken::new())
        .await
        .expect_err("the context does not render");
    assert!(error.to_string().contains("context `todo`"), "{error}");
    assert!(adapter.requests().is_empty(), "nothing was sent");
    Ok(())
}

//! Turns: tool calls and their results, what a tool may run, contained
//! panics, cancellation, the step limit, and what a tool learns about the
//! turn that calls it.

use crate::support;

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use dsh_agent_loop::{
    Agent, AgentLoop, AgentOptions, Event, LoopEvent, Message, ModelAdapter, ModelError,
    ModelRequest, ModelResponse, ScriptedAdapter, Session, TextSink, ToolCall, TurnEndReason,
    TurnError, TurnSummary, Usage, async_trait,
};
use dsh_system_prompt::PromptSection;
use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;

use support::{Echo, TestTool};

type TestResult = Result<(), Box<dyn std::error::Error>>;

fn agent() -> Agent {
    Agent::new("coder", AgentOptions::new("m"))
}

fn call(id: &str, name: &str, arguments: &str) -> ModelResponse {
    ModelResponse::default().with_tool_call(ToolCall::new(id, name, arguments))
}

/// One answer calling `echo` twice, as `c1` and `c2`, with these
/// arguments.
fn echo_twice(first: &str, second: &str) -> ModelResponse {
    call("c1", "echo", first).with_tool_call(ToolCall::new("c2", "echo", second))
}

fn last_turn_end(session: &Session) -> Option<(TurnEndReason, Option<String>)> {
    match session.events().last() {
        Some(Event::TurnEnd { reason, error }) => Some((*reason, error.clone())),
        _ => None,
    }
}

/// Asserts that the last event of `session` ends a turn for `reason`.
#[track_caller]
fn assert_turn_ended(session: &Session, reason: TurnEndReason) {
    assert_eq!(last_turn_end(session).map(|end| end.0), Some(reason));
}

/// Runs a turn of `agent` that is meant to fail; its error, or `None` if
/// it succeeded after all.
/// A turn of [`agent`] in a fresh session, never cancelled.
async fn fresh_turn(agent_loop: &AgentLoop, input: &str) -> Result<TurnSummary, TurnError> {
    support::turn(agent_loop, &agent(), &mut Session::new(), input).await
}

async fn failed_turn(
    agent_loop: &AgentLoop,
    agent: &Agent,
    session: &mut Session,
    input: &str,
) -> Option<TurnError> {
    support::turn(agent_loop, agent, session, input).await.err()
}

#[tokio::test]
async fn a_tool_call_runs_and_its_result_goes_back_to_the_model() -> TestResult {
    let (agent_loop, _installed, adapter, echo) = support::counting_echo_loop([
        echo_twice(r#"{"text": "pong"}"#, r#"{"text": 5}"#),
        ModelResponse::text("all done"),
    ])?;
    let (agent_loop, events) = support::recording_events(agent_loop);
    let mut session = Session::new();
    let summary = support::turn(&agent_loop, &agent(), &mut session, "ping").await?;

    assert_eq!(summary.answer, "all done");
    assert_eq!(summary.steps, 2);
    assert_eq!(
        echo.calls.load(Ordering::SeqCst),
        1,
        "the bad call must not run"
    );
    assert_eq!(
        &*events.lock(),
        session.events(),
        "the observer sees every event"
    );
    let kinds: Vec<&str> = session
        .events()
        .iter()
        .map(|event| match event {
            Event::UserMessage { .. } => "user",
            Event::StepStart { .. } => "step",
            Event::AssistantMessage { .. } => "assistant",
            Event::ToolCall { .. } => "call",
            Event::ToolResult { .. } => "result",
            Event::TurnEnd { .. } => "end",
            _ => "other",
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "user",
            "step",
            "assistant",
            "call",
            "call",
            "result",
            "result",
            "step",
            "assistant",
            "end"
        ]
    );

    let second = &adapter.requests()[1];
    assert_eq!(second.messages.len(), 4);
    assert_eq!(
        second.messages[2],
        Message::Tool {
            call_id: "c1".into(),
            name: "echo".into(),
            text: "pong".into(),
            is_error: false,
            images: Vec::new(),
        }
    );
    let Message::Tool { text, is_error, .. } = &second.messages[3] else {
        return Err("expected the second tool result".into());
    };
    assert!(*is_error);
    assert!(
        text.starts_with("invalid arguments for tool `echo`: `text`"),
        "the registry's message, naming the field, goes to the model as is: {text}"
    );
    assert_eq!(
        last_turn_end(&session),
        Some((TurnEndReason::Completed, None))
    );
    Ok(())
}

#[tokio::test]
async fn a_tools_images_no_model_api_takes_are_described_not_sent() -> TestResult {
    let adapter = Arc::new(ScriptedAdapter::new([
        call("c1", "picture", "{}"),
        ModelResponse::text("seen"),
    ]));
    let (agent_loop, _installed) =
        support::agent_loop(vec![Arc::new(TestTool::Picture)], adapter.clone())?;
    let mut session = Session::new();
    support::turn(&agent_loop, &agent(), &mut session, "look").await?;

    let expected_text = "pictures:\n\
        [image: image/svg+xml, 6 bytes, not shown: the model APIs take only image/png, \
        image/jpeg, image/gif, image/webp]\n\
        [image: image/png, 6 bytes, not shown: its bytes are not of the type it declares]\n\
        [image: image/png, 6 bytes, not shown: its data is not valid base64]";
    let recorded = session.events().iter().find_map(|event| match event {
        Event::ToolResult { text, images, .. } => Some((text.clone(), images.clone())),
        _ => None,
    });
    let (text, images) = recorded.ok_or("expected a result")?;
    assert_eq!(text, expected_text);
    assert_eq!(images, support::pictures()[..1]);
    // The model is sent what was recorded: the PNG alone.
    let sent = adapter.requests()[1]
        .messages
        .iter()
        .find_map(|message| match message {
            Message::Tool { text, images, .. } => Some((text.clone(), images.len())),
            _ => None,
        });
    assert_eq!(sent, Some((expected_text.to_owned(), 1)));
    Ok(())
}

#[tokio::test]
async fn only_tools_of_the_final_assembly_may_run() -> TestResult {
    let (agent_loop, _installed, adapter, echo) = support::counting_echo_loop([
        call("c1", "echo", r#"{"text": "x"}"#),
        ModelResponse::text("ok"),
    ])?;
    let agent = agent().with_tools(Vec::<String>::new());
    let mut session = Session::new();
    support::turn(&agent_loop, &agent, &mut session, "hi").await?;

    assert_eq!(echo.calls.load(Ordering::SeqCst), 0);
    assert!(adapter.requests()[0].tools.is_empty());
    let refusal = session.events().iter().find_map(|event| match event {
        Event::ToolResult {
            text,
            is_error: true,
            ..
        } => Some(text.clone()),
        _ => None,
    });
    let refusal = refusal.ok_or("expected an error result")?;
    assert!(refusal.contains("`echo` is not available"), "{refusal}");

    // A waterfall listener that removes the tool removes it from the turn.
    let _no_echo = agent_loop
        .prompt()
        .on_assemble("listener#176", |_, assembly| {
            assembly.remove_tool("echo");
            std::ops::ControlFlow::Continue(())
        })?;
    adapter.push(call("c2", "echo", r#"{"text": "x"}"#));
    adapter.push(ModelResponse::text("ok"));
    agent_loop
        .run_turn(
            &agent.with_all_tools(),
            &mut session,
            "again",
            &CancellationToken::new(),
        )
        .await?;
    assert_eq!(echo.calls.load(Ordering::SeqCst), 0);
    Ok(())
}

#[tokio::test]
async fn a_panicking_tool_fails_only_its_turn() -> TestResult {
    let adapter =
        Arc::new(ScriptedAdapter::new([call("c1", "boom", "{}")
            .with_tool_call(ToolCall::new(
                "c2",
                "echo",
                r#"{"text": "x"}"#,
            ))]));
    let echo = Arc::new(Echo::default());
    let (agent_loop, _installed) = support::agent_loop(
        vec![Arc::new(TestTool::Boom), echo.clone()],
        adapter.clone(),
    )?;
    let mut session = Session::new();
    let error = failed_turn(&agent_loop, &agent(), &mut session, "hi")
        .await
        .ok_or("the turn should fail")?;
    assert!(
        matches!(&error, TurnError::Panicked { what, message, .. }
            if what == "tool `boom`" && message.contains("always panics")),
        "{error:?}"
    );
    assert_eq!(
        echo.calls.load(Ordering::SeqCst),
        0,
        "calls after the panic do not run"
    );
    let results: Vec<&str> = session
        .events()
        .iter()
        .filter_map(|event| match event {
            Event::ToolResult {
                call_id,
                is_error: true,
                ..
            } => Some(call_id.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(results, ["c1", "c2"], "every call gets a result");
    assert_turn_ended(&session, TurnEndReason::Error);

    // The same agent and session serve the next turn.
    adapter.push(ModelResponse::text("recovered"));
    let summary = support::turn(&agent_loop, &agent(), &mut session, "again").await?;
    assert_eq!(summary.answer, "recovered");
    Ok(())
}

/// A model adapter of one fixed behaviour.
enum Stub {
    /// Panics when asked for model `bad`, answers `fine` otherwise.
    Fragile,
    /// Never answers.
    Silent,
}

#[async_trait]
impl ModelAdapter for Stub {
    async fn complete(
        &self,
        request: &ModelRequest,
        _on_text: TextSink<'_>,
        _cancel: &CancellationToken,
    ) -> Result<ModelResponse, ModelError> {
        match self {
            Self::Fragile => {
                tokio::time::sleep(Duration::from_millis(10)).await;
                assert_ne!(request.model, "bad", "this adapter has a bug");
                Ok(ModelResponse::text("fine"))
            }
            Self::Silent => futures::future::pending().await,
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panicking_adapter_fails_only_that_turn_not_other_agents() -> TestResult {
    let (agent_loop, _installed) = support::agent_loop(Vec::new(), Arc::new(Stub::Fragile))?;
    let bad = Agent::new("bad", AgentOptions::new("bad"));
    let good = Agent::new("good", AgentOptions::new("good"));
    let (bad_turn, good_turn) = {
        let (bad_loop, good_loop) = (agent_loop.clone(), agent_loop.clone());
        tokio::join!(
            tokio::spawn(async move {
                let mut session = Session::new();
                let result = support::turn(&bad_loop, &bad, &mut session, "hi").await;
                (result, session)
            }),
            tokio::spawn(async move {
                good_loop
                    .run_turn(&good, &mut Session::new(), "hi", &CancellationToken::new())
                    .await
            }),
        )
    };
    let (bad_result, bad_session) = bad_turn?;
    let error = bad_result.err().ok_or("the bad turn should fail")?;
    assert!(
        matches!(&error, TurnError::Panicked { what, .. } if what == "the model adapter"),
        "{error:?}"
    );
    assert_turn_ended(&bad_session, TurnEndReason::Error);
    assert_eq!(good_turn??.answer, "fine");
    Ok(())
}

#[tokio::test]
async fn a_panicking_prompt_provider_fails_only_that_agents_turn() -> TestResult {
    let adapter = Arc::new(ScriptedAdapter::new([ModelResponse::text("ok")]));
    let (agent_loop, _installed) = support::agent_loop(Vec::new(), adapter.clone())?;
    let _fragile =
        agent_loop
            .prompt()
            .section(PromptSection::provided("test:fragile", 50, |cx| {
                use dsh_agent_loop::AgentContextExt;
                let agent = cx.agent().map(|agent| agent.id().to_string());
                assert_ne!(agent.as_deref(), Some("victim"), "this provider has a bug");
                String::new()
            }))?;
    let victim = Agent::new("victim", AgentOptions::new("m"));
    let error = failed_turn(&agent_loop, &victim, &mut Session::new(), "hi")
        .await
        .ok_or("the turn should fail")?;
    assert!(
        matches!(&error, TurnError::Panicked { what, .. } if what == "a prompt provider"),
        "{error:?}"
    );
    assert!(adapter.requests().is_empty());
    fresh_turn(&agent_loop, "hi").await?;
    Ok(())
}

/// Runs a turn of `agent()` in a new session, cancelled `after` it starts;
/// fails the test if the turn does not end within ten seconds.
async fn run_cancelled_after(
    agent_loop: &AgentLoop,
    after: Duration,
) -> Result<(Result<TurnSummary, TurnError>, Session), Box<dyn std::error::Error>> {
    let (cancel, canceller) = support::cancel_after(after);
    let mut session = Session::new();
    let result = tokio::time::timeout(
        Duration::from_secs(10),
        agent_loop.run_turn(&agent(), &mut session, "hi", &cancel),
    )
    .await?;
    canceller.await?;
    Ok((result, session))
}

#[tokio::test]
async fn cancelling_while_the_model_thinks_ends_the_turn_as_cancelled() -> TestResult {
    let (agent_loop, _installed) = support::agent_loop(Vec::new(), Arc::new(Stub::Silent))?;
    let (result, session) = run_cancelled_after(&agent_loop, Duration::from_millis(50)).await?;
    assert!(matches!(result, Err(TurnError::Cancelled)), "{result:?}");
    assert_eq!(
        last_turn_end(&session),
        Some((
            TurnEndReason::Cancelled,
            Some("the turn was cancelled".into())
        ))
    );
    Ok(())
}

#[tokio::test]
async fn cancelling_a_running_tool_ends_the_turn_and_answers_the_call() -> TestResult {
    let adapter = Arc::new(ScriptedAdapter::new([call("c1", "slow", "{}")]));
    let (agent_loop, _installed) = support::agent_loop(vec![Arc::new(TestTool::Slow)], adapter)?;
    let agent_loop = agent_loop.with_cancel_grace(Duration::from_millis(100));
    let (result, session) = run_cancelled_after(&agent_loop, Duration::from_millis(50)).await?;
    assert!(matches!(result, Err(TurnError::Cancelled)), "{result:?}");
    assert!(session.events().iter().any(|event| matches!(
        event,
        Event::ToolResult { call_id, is_error: true, .. } if call_id == "c1"
    )));
    assert_turn_ended(&session, TurnEndReason::Cancelled);
    Ok(())
}

#[tokio::test]
async fn a_cancelled_token_runs_no_step() -> TestResult {
    let adapter = Arc::new(ScriptedAdapter::new([ModelResponse::text("ok")]));
    let (agent_loop, _installed) = support::agent_loop(Vec::new(), adapter.clone())?;
    let cancel = CancellationToken::new();
    cancel.cancel();
    let result = agent_loop
        .run_turn(&agent(), &mut Session::new(), "hi", &cancel)
        .await;
    assert!(matches!(result, Err(TurnError::Cancelled)), "{result:?}");
    assert!(adapter.requests().is_empty());
    Ok(())
}

#[tokio::test]
async fn the_step_limit_stops_a_model_that_keeps_calling_tools() -> TestResult {
    let (agent_loop, _installed, adapter, echo) = support::counting_echo_loop(
        (0..5).map(|at| call(&format!("c{at}"), "echo", r#"{"text": "again"}"#)),
    )?;
    let agent_loop = agent_loop.with_max_steps(2);
    let mut session = Session::new();
    let error = failed_turn(&agent_loop, &agent(), &mut session, "loop")
        .await
        .ok_or("the turn should hit the step limit")?;
    assert!(
        matches!(error, TurnError::StepLimit { limit: 2 }),
        "{error:?}"
    );
    assert!(error.to_string().contains("step limit"), "{error}");
    assert_eq!(adapter.requests().len(), 2);
    assert_eq!(echo.calls.load(Ordering::SeqCst), 2);
    assert_turn_ended(&session, TurnEndReason::Error);
    Ok(())
}

#[tokio::test]
async fn an_adapter_error_ends_the_turn_with_its_message() -> TestResult {
    let adapter = Arc::new(ScriptedAdapter::default());
    let (agent_loop, _installed) = support::agent_loop(Vec::new(), adapter)?;
    let mut session = Session::new();
    let error = failed_turn(&agent_loop, &agent(), &mut session, "hi")
        .await
        .ok_or("an empty script cannot answer")?;
    assert!(
        matches!(
            error,
            TurnError::Model {
                step: 1,
                source: ModelError::ScriptExhausted { .. }
            }
        ),
        "{error:?}"
    );
    assert_turn_ended(&session, TurnEndReason::Error);
    Ok(())
}

#[tokio::test]
async fn a_tool_learns_the_calling_turn_but_not_the_turn_in_flight() -> TestResult {
    let adapter = Arc::new(ScriptedAdapter::new([
        ModelResponse::text("first"),
        call("c1", "inspect", "{}"),
        ModelResponse::text("second"),
    ]));
    let (agent_loop, _installed) = support::agent_loop(vec![Arc::new(TestTool::Inspect)], adapter)?;
    let mut session = Session::with_id("parent").with_cwd("/p");
    support::turn(&agent_loop, &agent(), &mut session, "one").await?;
    let completed = session.events().len();
    support::turn(&agent_loop, &agent(), &mut session, "two").await?;
    let report = session.events().iter().find_map(|event| match event {
        Event::ToolResult { text, .. } => Some(text.clone()),
        _ => None,
    });
    assert_eq!(
        report.as_deref(),
        Some(format!(r#"agent=coder session=parent same_session=true cwd=Some("/p") completed_events={completed}"#).as_str())
    );
    Ok(())
}

/// Lets `echo` run once, then refuses it; records what it was asked.
#[derive(Debug, Default)]
struct OnceOnly {
    asked: Mutex<Vec<String>>,
}

#[async_trait]
impl dsh_agent_loop::ToolApproval for OnceOnly {
    async fn approve(
        &self,
        call: &ToolCall,
        _: &dsh_agent_loop::SessionFacts,
        _: &CancellationToken,
    ) -> dsh_agent_loop::Approval {
        let mut asked = self.asked.lock();
        asked.push(call.id.clone());
        if asked.len() == 1 {
            dsh_agent_loop::Approval::Allow
        } else {
            dsh_agent_loop::Approval::Deny {
                reason: "the user declined".into(),
            }
        }
    }
}

#[tokio::test]
async fn a_denied_call_does_not_run_and_the_model_reads_why() -> TestResult {
    let adapter = Arc::new(ScriptedAdapter::new([
        echo_twice(r#"{"text": "one"}"#, r#"{"text": "two"}"#),
        ModelResponse::text("understood"),
    ]));
    let echo = Arc::new(Echo::default());
    let approval = Arc::new(OnceOnly::default());
    let (agent_loop, _installed) = support::agent_loop(vec![echo.clone()], adapter.clone())?;
    let agent_loop = agent_loop.with_approval(approval.clone());
    let mut session = Session::new();
    let summary = support::turn(&agent_loop, &agent(), &mut session, "go").await?;

    assert_eq!(
        summary.answer, "understood",
        "a refusal does not fail the turn"
    );
    assert_eq!(
        *approval.asked.lock(),
        ["c1", "c2"],
        "asked before each call"
    );
    assert_eq!(
        echo.calls.load(Ordering::SeqCst),
        1,
        "the denied call must not run"
    );
    let results: Vec<(String, bool)> = session
        .events()
        .iter()
        .filter_map(|event| match event {
            Event::ToolResult { text, is_error, .. } => Some((text.clone(), *is_error)),
            _ => None,
        })
        .collect();
    assert_eq!(results[1], ("not run: the user declined".to_owned(), true));
    assert!(!results[0].1, "the allowed call ran: {results:?}");
    Ok(())
}

#[tokio::test]
async fn streamed_text_reaches_the_observers_before_the_answer_is_recorded() -> TestResult {
    let adapter = Arc::new(ScriptedAdapter::new([ModelResponse::text("hello there")]));
    let (agent_loop, _installed) = support::agent_loop(vec![], adapter)?;
    let seen = Arc::new(Mutex::new(Vec::<String>::new()));
    let agent_loop = {
        let seen = Arc::clone(&seen);
        agent_loop.observed_by(Arc::new(move |event: LoopEvent<'_>| match event {
            LoopEvent::Text { piece, .. } => seen.lock().push(format!("text:{piece}")),
            LoopEvent::Recorded {
                event: Event::AssistantMessage { text, .. },
                ..
            } => seen.lock().push(format!("answer:{text}")),
            _ => {}
        }))
    };
    fresh_turn(&agent_loop, "hi").await?;
    assert_eq!(*seen.lock(), ["text:hello there", "answer:hello there"]);
    Ok(())
}

/// What an observer named `name` writes of `event`: every kind, so a kind
/// added to the loop fails to compile here until the test says it.
fn seen_by(name: &str, event: LoopEvent<'_>) -> String {
    let what = match event {
        LoopEvent::Step(step) => format!("step {}", step.step),
        LoopEvent::Response(answer) => format!("response {}", answer.step),
        LoopEvent::Recorded { event, .. } => format!("recorded {}", event_kind(event)),
        LoopEvent::Text { piece, .. } => format!("text {piece}"),
        LoopEvent::Thought { piece, .. } => format!("thought {piece}"),
        LoopEvent::Progress { call, text, .. } => format!("progress {} {text}", call.id),
    };
    format!("{name}: {what}")
}

fn event_kind(event: &Event) -> &'static str {
    match event {
        Event::UserMessage { .. } => "user",
        Event::StepStart { .. } => "step-start",
        Event::AssistantMessage { .. } => "assistant",
        Event::ToolCall { .. } => "call",
        Event::ToolResult { .. } => "result",
        Event::TurnEnd { .. } => "turn-end",
        _ => "other",
    }
}

/// Observers add up: each sees every kind of event, in the order the
/// loop shows them, the one installed first before the other.
#[tokio::test]
async fn observers_add_up_and_each_sees_every_kind_of_event() -> TestResult {
    let thought = dsh_agent_loop::Thought::Text {
        text: "Report.".into(),
        signature: None,
    };
    let adapter = Arc::new(ScriptedAdapter::new([
        call("c1", "report", "{}").with_thought(thought),
        ModelResponse::text("done"),
    ]));
    let (agent_loop, _installed) = support::agent_loop(vec![Arc::new(TestTool::Report)], adapter)?;
    let seen = Arc::new(Mutex::new(Vec::new()));
    let observer = |name: &'static str| {
        let seen = Arc::clone(&seen);
        Arc::new(move |event: LoopEvent<'_>| seen.lock().push(seen_by(name, event)))
    };
    let agent_loop = agent_loop
        .observed_by(observer("first"))
        .observed_by(observer("second"));
    fresh_turn(&agent_loop, "go").await?;

    let seen = seen.lock();
    let mut shown = Vec::new();
    for pair in seen.chunks(2) {
        let first = pair[0].strip_prefix("first: ");
        let second = pair.get(1).and_then(|seen| seen.strip_prefix("second: "));
        assert!(first.is_some() && first == second, "{seen:?}");
        shown.extend(first);
    }
    assert_eq!(
        shown,
        [
            "recorded user",
            "recorded step-start",
            "step 1",
            "thought Report.",
            "response 1",
            "recorded assistant",
            "recorded call",
            "progress c1 half way",
            "recorded result",
            "recorded step-start",
            "step 2",
            "text done",
            "response 2",
            "recorded assistant",
            "recorded turn-end",
        ]
    );
    Ok(())
}

/// A panic inside an observer of a step's prompt fails that turn before
/// its request is sent, as one of an answer does.
#[tokio::test]
async fn a_panic_observing_a_steps_prompt_fails_the_turn() -> TestResult {
    let (agent_loop, _installed, adapter) = support::echo_loop([ModelResponse::text("unsent")])?;
    let panicking = agent_loop.observed_by(Arc::new(|event: LoopEvent<'_>| {
        if let LoopEvent::Step(_) = event {
            panic!("the observer has a bug");
        }
    }));
    let mut session = Session::new();
    let error = failed_turn(&panicking, &agent(), &mut session, "ping")
        .await
        .ok_or("expected the turn to fail")?;
    assert!(
        matches!(&error, TurnError::Panicked { step: 1, what, message }
            if what == "a loop observer of the step's prompt"
                && message.contains("the observer has a bug")),
        "{error:?}"
    );
    assert!(adapter.requests().is_empty(), "no request was sent");
    assert_turn_ended(&session, TurnEndReason::Error);
    Ok(())
}

/// An observer sees each answer whole, before its tool calls run, with
/// its step; a panic inside it fails that turn like a tool's.
#[tokio::test]
async fn an_observer_sees_each_answer_and_its_panic_fails_the_turn() -> TestResult {
    let (agent_loop, _installed, _adapter, echo) = support::counting_echo_loop([
        call("c1", "echo", r#"{"text": "pong"}"#).with_usage(Usage::new(30, 5)),
        ModelResponse::text("done"),
        ModelResponse::text("never read"),
    ])?;
    let seen = Arc::new(Mutex::new(Vec::new()));
    let observed = agent_loop.clone().observed_by({
        let (seen, echo) = (Arc::clone(&seen), Arc::clone(&echo));
        Arc::new(move |event: LoopEvent<'_>| {
            if let LoopEvent::Response(answer) = event {
                let calls_so_far = echo.calls.load(Ordering::SeqCst);
                seen.lock()
                    .push((answer.step, answer.response.clone(), calls_so_far));
            }
        })
    });
    let mut session = Session::new();
    observed
        .run_turn(&agent(), &mut session, "ping", &CancellationToken::new())
        .await?;
    assert_eq!(
        *seen.lock(),
        [
            (
                1,
                call("c1", "echo", r#"{"text": "pong"}"#).with_usage(Usage::new(30, 5)),
                0
            ),
            (2, ModelResponse::text("done"), 1),
        ]
    );

    let panicking = agent_loop.observed_by(Arc::new(|event: LoopEvent<'_>| {
        if let LoopEvent::Response(_) = event {
            panic!("the observer has a bug");
        }
    }));
    let error = panicking
        .run_turn(&agent(), &mut session, "again", &CancellationToken::new())
        .await
        .err()
        .ok_or("expected the turn to fail")?;
    assert!(
        matches!(&error, TurnError::Panicked { step: 1, what, message }
            if what == "a loop observer of the answer"
                && message.contains("the observer has a bug")),
        "{error:?}"
    );
    assert_eq!(
        last_turn_end(&session).map(|(reason, _)| reason),
        Some(TurnEndReason::Error)
    );
    Ok(())
}

/// The context an answer leaves is the API's count of the request and
/// the answer when it reported one, and the agent's budget's count of
/// both when it did not.
#[tokio::test]
async fn an_answers_context_tokens_are_reported_or_counted() -> TestResult {
    let (agent_loop, _installed, _adapter, _echo) = support::counting_echo_loop([
        call("c1", "echo", r#"{"text": "pong"}"#).with_usage(Usage::new(30, 5)),
        ModelResponse::text("done"),
    ])?;
    let seen = Arc::new(Mutex::new(Vec::new()));
    let observed = agent_loop.observed_by({
        let seen = Arc::clone(&seen);
        Arc::new(move |event: LoopEvent<'_>| {
            let LoopEvent::Response(answer) = event else {
                return;
            };
            let budget = answer.agent.budget();
            let request = answer.request;
            let counted = budget.count_request(
                request.system.as_deref().unwrap_or(""),
                &request.tools,
                &request.messages,
            ) + budget.count_message(&Message::Assistant {
                text: answer.response.text.clone(),
                tool_calls: Vec::new(),
                thoughts: Vec::new(),
            });
            seen.lock().push((answer.context_tokens(), counted));
        })
    });
    let mut session = Session::new();
    observed
        .run_turn(&agent(), &mut session, "ping", &CancellationToken::new())
        .await?;
    let seen = seen.lock().clone();
    assert_eq!(seen.len(), 2);
    assert_eq!(seen[0].0, 35, "the API's prompt and completion tokens");
    assert_eq!(seen[1].0, seen[1].1, "counted without the API's word");
    assert!(seen[1].0 > 0);
    Ok(())
}

/// A recorded session: the recorder gets every event the turn appends,
/// before the observers see it, and none of the history it started with.
#[tokio::test]
async fn the_recorder_gets_each_event_before_the_observers_see_it() -> TestResult {
    let (agent_loop, _installed, _adapter) = support::echo_loop([
        call("c1", "echo", r#"{"text": "pong"}"#),
        ModelResponse::text("done"),
    ])?;
    let order = Arc::new(Mutex::new(Vec::new()));
    let agent_loop = {
        let order = Arc::clone(&order);
        agent_loop.observed_by(Arc::new(move |event: LoopEvent<'_>| {
            if let LoopEvent::Recorded { event, .. } = event {
                order.lock().push(("shown", event.clone()));
            }
        }))
    };
    let earlier = Event::UserMessage {
        text: "earlier".into(),
    };
    let mut session = Session::new()
        .with_recorder({
            let order = Arc::clone(&order);
            move |event: &Event| order.lock().push(("recorded", event.clone()))
        })
        .with_history([earlier.clone()]);
    support::turn(&agent_loop, &agent(), &mut session, "ping").await?;

    let order = order.lock();
    let appended = &session.events()[1..];
    assert_eq!(order.len(), 2 * appended.len(), "{order:?}");
    for (pair, event) in order.chunks(2).zip(appended) {
        assert_eq!(pair[0], ("recorded", event.clone()));
        assert_eq!(pair[1], ("shown", event.clone()));
    }
    assert!(!order.iter().any(|(_, event)| *event == earlier));
    Ok(())
}

//! Compaction with the scripted adapter and a tiny context window: elision
//! alone, a summary when elision is not enough (and what the summary
//! request says), the system prompt and tools untouched, the runtime
//! context re-emitted, compaction on request, and a failed summary that
//! leaves the history intact.

use crate::support::{self, big};

use std::sync::Arc;

use dsh_agent_loop::{
    Agent, AgentOptions, COMPACTION_SECTION, CONTEXT_HEADER, CompactionReport, CompactionTrigger,
    ContextBudget, Event, Message, ModelResponse, Session, ToolCall, TurnError, compaction,
    compaction_context,
};
use dsh_agent_loop::{AgentLoop, ScriptedAdapter};
use dsh_system_prompt::{Registration, render_prompt};
use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;

/// A call of `produce`.
fn produce(id: &str, tag: &str, lines: usize) -> ModelResponse {
    ModelResponse::default().with_tool_call(ToolCall::new(
        id,
        "produce",
        serde_json::json!({ "tag": tag, "lines": lines }).to_string(),
    ))
}

/// A loop with the `produce` tool whose model answers `answers`.
fn produce_loop(
    answers: impl IntoIterator<Item = ModelResponse>,
) -> Result<(AgentLoop, Registration, Arc<ScriptedAdapter>), Box<dyn std::error::Error>> {
    let adapter = Arc::new(ScriptedAdapter::new(answers));
    let (agent_loop, installed) =
        support::agent_loop(vec![Arc::new(support::TestTool::Produce)], adapter.clone())?;
    Ok((agent_loop, installed, adapter))
}

/// An agent whose window is `window` tokens, compacting at 85%.
fn agent(window: u64) -> Agent {
    Agent::new("a", AgentOptions::new("m").with_persona("You echo."))
        .with_budget(ContextBudget::for_model("m", Some(window), None))
}

fn compactions(session: &Session) -> Vec<&Event> {
    session
        .events()
        .iter()
        .filter(|event| matches!(event, Event::Compacted { .. }))
        .collect()
}

/// The texts of the tool messages of a request.
fn tool_texts(messages: &[Message]) -> Vec<&str> {
    messages
        .iter()
        .filter_map(|message| match message {
            Message::Tool { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn eliding_old_results_alone_can_suffice() -> Result<(), Box<dyn std::error::Error>> {
    let (agent_loop, _installed, adapter) = produce_loop([
        produce("c1", "first", 60),
        produce("c2", "second", 60),
        ModelResponse::text("done"),
    ])?;
    let (agent_loop, events) = support::recording_events(agent_loop);
    let agent = agent(2_000);
    let mut session = Session::new();
    support::turn(&agent_loop, &agent, &mut session, "go").await?;

    let requests = adapter.requests();
    assert_eq!(requests.len(), 3, "no summary request");
    let compacted = compactions(&session);
    assert_eq!(compacted.len(), 1, "{:#?}", session.events());
    let Event::Compacted {
        trigger,
        before_tokens,
        after_tokens,
        elided,
        summary,
        replaced,
        ..
    } = compacted[0]
    else {
        unreachable!()
    };
    assert_eq!(*trigger, CompactionTrigger::Budget);
    assert_eq!(summary, &None);
    assert_eq!(*replaced, 0);
    // The first result, oldest; the second is the latest step's, kept.
    let first = session
        .events()
        .iter()
        .position(|event| matches!(event, Event::ToolResult { call_id, .. } if call_id == "c1"));
    assert_eq!(elided, &vec![first.ok_or("the first result")?]);
    let threshold = agent.budget().threshold().ok_or("a threshold")?;
    assert!(*before_tokens >= threshold, "{before_tokens} < {threshold}");
    assert!(
        *after_tokens < threshold,
        "{after_tokens} >= {threshold} (before {before_tokens})"
    );

    // The last request reads the marker, then the second result whole.
    let texts = tool_texts(&requests[2].messages);
    assert!(
        texts[0].starts_with("[elided by compaction: the `produce` result of"),
        "{}",
        texts[0]
    );
    assert!(texts[0].contains("first line 0:"), "{}", texts[0]);
    assert!(!texts[0].contains("first line 10:"), "{}", texts[0]);
    assert_eq!(texts[1], big("second", 60));
    // The full history stays in the log, and the observer saw the event.
    assert!(
        session.events().iter().any(
            |event| matches!(event, Event::ToolResult { text, .. } if *text == big("first", 60))
        )
    );
    assert!(
        events
            .lock()
            .iter()
            .any(|event| CompactionReport::of(event).is_some())
    );
    Ok(())
}

/// Three turns, each with a big result: the third's request is over the
/// budget even with the old results elided, so the first two turns are
/// summarized. Returns the adapter's requests and the session.
async fn summarized_session() -> Result<
    (
        Vec<dsh_agent_loop::ModelRequest>,
        Session,
        Arc<Mutex<String>>,
    ),
    Box<dyn std::error::Error>,
> {
    let (agent_loop, _installed, adapter) = produce_loop([
        produce("c1", "one", 10),
        ModelResponse::text(big("answer one", 40)),
        produce("c2", "two", 10),
        ModelResponse::text(big("answer two", 80)),
        // Turn three, step one: over the budget; the summary comes first.
        ModelResponse::text("SUMMARY: the user asked for one and two; both were read."),
        ModelResponse::text("third answer"),
    ])?;
    // A runtime context that is there from the start.
    let context = Arc::new(Mutex::new("the todo list: write tests".to_owned()));
    let _context = support::shared_context(&agent_loop, "todo", 10, &context)?;
    let agent = agent(2_000);
    // Records as a store does: what it is given must be the log, once.
    let recorded = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&recorded);
    let mut session =
        Session::new().with_recorder(move |event: &Event| sink.lock().push(event.clone()));
    for input in [
        "first turn please",
        "second turn please",
        "third turn please",
    ] {
        support::turn(&agent_loop, &agent, &mut session, input).await?;
    }
    assert_eq!(
        recorded.lock().as_slice(),
        session.events(),
        "the recorder got each event once, the compaction's too"
    );
    Ok((adapter.requests(), session, context))
}

#[tokio::test]
async fn old_turns_are_summarized_when_elision_is_not_enough()
-> Result<(), Box<dyn std::error::Error>> {
    let (requests, session, _context) = summarized_session().await?;
    assert_eq!(requests.len(), 6, "{requests:#?}");

    // The summary request: the compaction instruction as its whole system
    // prompt, no tools, and the transcript of the first two turns.
    let summary_request = &requests[4];
    assert_eq!(
        summary_request.system.as_deref(),
        Some(compaction::COMPACTION_INSTRUCTION)
    );
    assert!(summary_request.tools.is_empty());
    let [Message::User { text }] = &summary_request.messages[..] else {
        panic!("one user message: {:#?}", summary_request.messages);
    };
    assert!(text.starts_with("<transcript>\n"), "{text}");
    assert!(text.contains("[user]\nfirst turn please"), "{text}");
    assert!(text.contains("[assistant calls `produce`]"), "{text}");
    assert!(text.contains("[assistant]\nanswer two line 0:"), "{text}");
    assert!(text.contains(CONTEXT_HEADER), "{text}");
    assert!(
        !text.contains("third turn please"),
        "the latest turn is kept: {text}"
    );

    // The event: the summary, and which events it replaced — every event
    // before the third turn's message.
    let compacted = compactions(&session);
    let [
        Event::Compacted {
            summary, replaced, ..
        },
    ] = &compacted[..]
    else {
        panic!("one compaction: {:#?}", session.events());
    };
    assert_eq!(
        summary.as_deref(),
        Some("SUMMARY: the user asked for one and two; both were read.")
    );
    let third = session.events().iter().position(
        |event| matches!(event, Event::UserMessage { text } if text == "third turn please"),
    );
    assert_eq!(Some(*replaced), third);

    // What the model reads next: the summary, the third turn, and the
    // runtime context again, after the compaction.
    let after = &requests[5].messages;
    let Message::User { text: first } = &after[0] else {
        panic!("{after:#?}");
    };
    assert!(first.starts_with(compaction::SUMMARY_HEADER), "{first}");
    assert!(first.ends_with("both were read."), "{first}");
    assert_eq!(
        after[1],
        Message::User {
            text: "third turn please".into()
        }
    );
    assert_eq!(
        after.last(),
        Some(&Message::User {
            text: format!("{CONTEXT_HEADER}\n\nthe todo list: write tests")
        }),
        "the runtime context is re-emitted after the summary"
    );
    let position = |wanted: fn(&Event) -> bool| session.events().iter().rposition(wanted);
    assert!(
        position(|event| matches!(event, Event::Context { .. }))
            > position(|event| matches!(event, Event::Compacted { .. })),
        "re-emitted after the compaction event"
    );
    // Nothing is lost: the log still holds the first turn.
    assert!(
        session.events().iter().any(
            |event| matches!(event, Event::UserMessage { text } if text == "first turn please")
        )
    );
    Ok(())
}

#[tokio::test]
async fn the_system_prompt_and_tools_are_byte_identical_across_compaction()
-> Result<(), Box<dyn std::error::Error>> {
    let (requests, _session, _context) = summarized_session().await?;
    let agent_requests: Vec<_> = requests
        .iter()
        .enumerate()
        .filter(|(at, _)| *at != 4)
        .map(|(_, request)| request)
        .collect();
    let first = serde_json::to_string(&(&agent_requests[0].system, &agent_requests[0].tools))?;
    for request in &agent_requests {
        assert_eq!(
            serde_json::to_string(&(&request.system, &request.tools))?,
            first
        );
    }
    Ok(())
}

#[tokio::test]
async fn a_failed_summary_leaves_the_history_intact() -> Result<(), Box<dyn std::error::Error>> {
    let (agent_loop, _installed, adapter) = produce_loop([
        produce("c1", "one", 10),
        ModelResponse::text(big("answer one", 40)),
        produce("c2", "two", 10),
        ModelResponse::text(big("answer two", 80)),
        // No answer for the summary request: the script is exhausted.
    ])?;
    let agent = agent(2_000);
    let mut session = Session::new();
    for input in ["first turn please", "second turn please"] {
        support::turn(&agent_loop, &agent, &mut session, input).await?;
    }
    let before = session.messages();
    let error = support::turn(&agent_loop, &agent, &mut session, "third turn please")
        .await
        .err()
        .ok_or("the turn fails")?;
    assert!(matches!(error, TurnError::Compaction { .. }), "{error:?}");
    let message = error.to_string();
    assert!(message.contains("nothing was replaced"), "{message}");
    assert!(message.contains("2000-token context window"), "{message}");
    assert!(message.contains("tokens against"), "{message}");
    assert!(message.contains("no answer left"), "{message}");
    assert!(compactions(&session).is_empty(), "nothing recorded");
    // The history the model reads is what it was, plus the failed turn's
    // message.
    let now = session.messages();
    assert_eq!(now[..before.len()], before[..]);
    assert_eq!(
        tool_texts(&now),
        [big("one", 10).as_str(), big("two", 10).as_str()]
    );

    // The session serves the next turn: this time the summary comes.
    adapter.push(ModelResponse::text("SUMMARY"));
    adapter.push(ModelResponse::text("fourth answer"));
    let summary = support::turn(&agent_loop, &agent, &mut session, "fourth").await?;
    assert_eq!(summary.answer, "fourth answer");
    assert_eq!(compactions(&session).len(), 1);
    Ok(())
}

#[tokio::test]
async fn compaction_on_request_summarizes_every_turn() -> Result<(), Box<dyn std::error::Error>> {
    let (agent_loop, _installed, adapter) = produce_loop([
        produce("c1", "short", 1),
        ModelResponse::text("done"),
        ModelResponse::text("SUMMARY of everything"),
        ModelResponse::text("after"),
    ])?;
    // No window at all: only a request compacts.
    let agent = Agent::new("a", AgentOptions::new("m").with_persona("You echo."));
    assert_eq!(agent.budget().window(), None);
    let mut session = Session::new();
    support::turn(&agent_loop, &agent, &mut session, "go").await?;
    let report = agent_loop
        .compact(&agent, &mut session, &CancellationToken::new())
        .await?
        .ok_or("compacted")?;
    assert_eq!(report.trigger, CompactionTrigger::Request);
    assert!(report.summarized);
    assert!(report.after_tokens < report.before_tokens, "{report}");
    support::turn(&agent_loop, &agent, &mut session, "again").await?;
    let last = adapter.requests().pop().ok_or("a request")?;
    assert_eq!(last.messages.len(), 2, "{:#?}", last.messages);
    assert_eq!(
        last.messages[1],
        Message::User {
            text: "again".into()
        }
    );

    // Nothing new since: nothing to compact, and nothing is asked.
    let fresh = Session::new();
    let mut fresh = fresh;
    let none = agent_loop
        .compact(&agent, &mut fresh, &CancellationToken::new())
        .await?;
    assert_eq!(none, None);
    Ok(())
}

#[tokio::test]
async fn the_instruction_section_renders_only_for_a_compaction_request()
-> Result<(), Box<dyn std::error::Error>> {
    let (agent_loop, _installed, _adapter) = produce_loop([])?;
    let agent = agent(1_000);
    let assembly = agent_loop.assemble(&agent, &Session::new());
    let system = render_prompt(&assembly)?;
    assert_eq!(system, "You echo.");
    assert!(assembly.sections.get(COMPACTION_SECTION).is_some());
    let request = agent_loop.prompt().assemble(&compaction_context());
    assert_eq!(render_prompt(&request)?, compaction::COMPACTION_INSTRUCTION);
    Ok(())
}

/// What a session store does: record every event as JSON, in order, and
/// reload them. The reloaded session reads as the live one did.
#[tokio::test]
async fn a_compacted_log_reloads_to_the_same_conversation() -> Result<(), Box<dyn std::error::Error>>
{
    let (_requests, session, _context) = summarized_session().await?;
    let lines: Vec<String> = session
        .events()
        .iter()
        .map(serde_json::to_string)
        .collect::<Result<_, _>>()?;
    let compacted = lines
        .iter()
        .find(|line| line.contains("\"type\":\"compacted\""))
        .ok_or("a compacted event")?;
    assert!(compacted.contains("\"summary\":\"SUMMARY"), "{compacted}");
    assert!(compacted.contains("\"replaced\":"), "{compacted}");
    let events: Vec<Event> = lines
        .iter()
        .map(|line| serde_json::from_str(line))
        .collect::<Result<_, _>>()?;
    let reloaded = Session::new().with_history(events);
    assert_eq!(reloaded.messages(), session.messages());
    assert_eq!(
        reloaded.events(),
        session.events(),
        "the full history is kept"
    );
    Ok(())
}

/// A window smaller than the system prompt and tools: no compaction can
/// get under it, so none is tried (no summary request on any turn), and
/// one event says so and what to do.
#[tokio::test]
async fn a_window_the_prompt_alone_fills_is_said_once_and_never_summarized()
-> Result<(), Box<dyn std::error::Error>> {
    let turns = 8;
    let (agent_loop, _installed, adapter) =
        produce_loop((0..turns).map(|n| ModelResponse::text(format!("answer {n}"))))?;
    let agent = agent(10);
    let mut session = Session::new();
    for n in 0..turns {
        support::turn(&agent_loop, &agent, &mut session, &format!("turn {n}")).await?;
    }
    assert_eq!(
        adapter.requests().len(),
        turns,
        "one request a turn, no summary"
    );
    let compacted = compactions(&session);
    assert_eq!(compacted.len(), 1, "{:#?}", session.events());
    let report = CompactionReport::of(compacted[0]).ok_or("a report")?;
    assert!(report.unreachable, "{report:?}");
    let said = report.to_string();
    assert!(
        said.starts_with(
            "cannot compact the conversation under its budget: the system prompt and tools \
             alone reach the point where it compacts in the 10-token window"
        ) && said.contains("set a larger `context_window` or `compact_at`"),
        "{said}"
    );
    // The history is the whole conversation, as sent.
    assert_eq!(session.messages().len(), 2 * turns);
    Ok(())
}

//! What an editor sees of the work as it happens: a running command's
//! output (as a terminal when the client draws one), and the same again
//! when the session is loaded.

use agent_client_protocol::v1::schema::{
    ClientCapabilities, CloseSessionRequest, LoadSessionRequest, Meta, ResumeSessionRequest,
    SessionInfoUpdate,
};

use super::*;

/// A bash call that writes three lines a third of a second apart, then an
/// answer.
const THREE_LINES: &str = "[[answers]]\ntext = \"\"\n\
     [[answers.tool_calls]]\nname = \"bash\"\n\
     arguments = { command = \"for n in 1 2 3; do echo line $n; sleep 0.33; done\" }\n\
     [[answers]]\ntext = \"Done.\"\n";

/// Initializes as a client that draws running commands as terminals
/// (Zed's `_meta.terminal_output`).
async fn initialize_with_terminal(cx: &ConnectionTo<Agent>) -> Result<InitializeResponse, Error> {
    let mut meta = Meta::new();
    meta.insert("terminal_output".to_owned(), true.into());
    let capabilities = ClientCapabilities::new().meta(meta);
    cx.send_request(InitializeRequest::new(ProtocolVersion::V1).client_capabilities(capabilities))
        .block_task()
        .await
}

/// `key` of an update's `_meta`.
fn meta_of<'a>(meta: Option<&'a Meta>, key: &str) -> Option<&'a Value> {
    meta.and_then(|meta| meta.get(key))
}

fn updates_of(seen: Vec<Seen>) -> Vec<SessionUpdate> {
    seen.into_iter()
        .filter_map(|item| match item {
            Seen::Update(_, update) => Some(update),
            Seen::Permission(_) => None,
        })
        .collect()
}

/// The updates of the call as short lines: `call` with its terminal,
/// `output <data>`, `exit <terminal> <code> <signal> <status>`, `so far <content>`, `status <status>`.
fn terminal_outline(updates: &[SessionUpdate]) -> Vec<String> {
    let mut lines = Vec::new();
    for update in updates {
        match update {
            SessionUpdate::ToolCall(call) => lines.push(format!(
                "call {} {:?}",
                meta_of(call.meta.as_ref(), "terminal_info").map_or("-".to_owned(), |info| {
                    format!("terminal {}", info["terminal_id"])
                }),
                call.content
            )),
            SessionUpdate::ToolCallUpdate(update) => {
                let meta = update.meta.as_ref();
                if let Some(output) = meta_of(meta, "terminal_output") {
                    lines.push(format!("output {}", output["data"].as_str().unwrap_or("?")));
                } else if let Some(exit) = meta_of(meta, "terminal_exit") {
                    lines.push(format!(
                        "exit {} {} {} {:?}",
                        exit["terminal_id"],
                        exit["exit_code"],
                        exit["signal"],
                        update.fields.status
                    ));
                } else if let Some(status) = update.fields.status {
                    lines.push(format!("status {status:?}"));
                } else {
                    lines.push(format!("so far {:?}", update.fields.content));
                }
            }
            _ => {}
        }
    }
    lines
}

#[tokio::test]
async fn a_running_command_reaches_a_terminal_client_as_a_live_terminal() {
    let fixture = fixture(THREE_LINES, "", &["bash"]);
    let Fixture {
        project,
        config,
        recorded,
        ..
    } = &fixture;
    let seen = with_dsh(config, recorded, Answer::Allow, async |cx, rx| {
        initialize_with_terminal(&cx).await?;
        let session = new_session(&cx, project.path()).await?;
        assert_eq!(prompt(&cx, &session, "Count.").await?, StopReason::EndTurn);
        Ok(updates_of(drain(rx)))
    })
    .await;
    let outline = terminal_outline(&seen);
    let (first, rest) = outline.split_first().expect("updates");
    let call_id = seen
        .iter()
        .find_map(|update| match update {
            SessionUpdate::ToolCall(call) => Some(call.tool_call_id.0.to_string()),
            _ => None,
        })
        .expect("a call");
    assert_eq!(
        first,
        &format!(
            "call terminal \"{call_id}\" [Terminal(Terminal {{ terminal_id: TerminalId(\"{call_id}\"), meta: None }})]"
        )
    );
    assert_eq!(rest.first().map(String::as_str), Some("status InProgress"));
    let outputs: Vec<&str> = rest
        .iter()
        .filter_map(|line| line.strip_prefix("output "))
        .collect();
    assert!(
        outputs.len() >= 2,
        "lines written apart reach the terminal apart: {outline:?}"
    );
    assert_eq!(outputs.concat(), "line 1\nline 2\nline 3\n");
    let exit = format!("exit \"{call_id}\" 0 null Some(Completed)");
    assert_eq!(rest.last(), Some(&exit), "the exit comes last: {outline:?}");
    // The model still reads the result, whole.
    let requests = common::recorded_requests(recorded);
    assert_eq!(
        requests[1]["messages"][2]["text"],
        "line 1\nline 2\nline 3\n"
    );
}

#[tokio::test]
async fn without_a_terminal_the_call_shows_its_output_so_far() {
    let Fixture {
        project,
        config,
        recorded,
        ..
    } = &fixture(THREE_LINES, "", &["bash"]);
    let seen = with_dsh(config, recorded, Answer::Allow, async |cx, rx| {
        initialize(&cx).await?;
        let session = new_session(&cx, project.path()).await?;
        assert_eq!(prompt(&cx, &session, "Count.").await?, StopReason::EndTurn);
        Ok(updates_of(drain(rx)))
    })
    .await;
    let outline = outline(
        &seen
            .into_iter()
            .map(|update| Seen::Update(SessionId::new("s"), update))
            .collect::<Vec<_>>(),
    );
    let so_far: Vec<&str> = outline
        .iter()
        .filter_map(|line| line.strip_prefix("update None "))
        .collect();
    assert!(
        so_far.len() >= 2,
        "the output grows as it runs: {outline:?}"
    );
    assert!(
        so_far.windows(2).all(|pair| pair[1].starts_with(pair[0])),
        "each shows the output so far: {so_far:?}"
    );
    assert_eq!(so_far.last(), Some(&"line 1\nline 2\nline 3"));
    assert!(
        !outline.iter().any(|line| line.contains("Terminal")),
        "no terminal for a client that draws none: {outline:?}"
    );
    assert_eq!(
        outline.iter().rev().nth(1).map(String::as_str),
        Some("update Some(Completed) line 1\nline 2\nline 3")
    );
}

#[tokio::test]
async fn a_loaded_session_replays_the_terminal_it_showed() {
    let Fixture {
        project,
        config,
        recorded,
        ..
    } = &fixture(
        "[[answers]]\ntext = \"\"\n\
         [[answers.tool_calls]]\nname = \"bash\"\narguments = { command = \"echo hi; exit 2\" }\n\
         [[answers]]\ntext = \"Done.\"\n",
        "",
        &["bash"],
    );
    let (id, live) = with_dsh(config, recorded, Answer::Allow, async |cx, rx| {
        initialize_with_terminal(&cx).await?;
        let session = new_session(&cx, project.path()).await?;
        assert_eq!(prompt(&cx, &session, "Hi.").await?, StopReason::EndTurn);
        Ok((session, updates_of(drain(rx))))
    })
    .await;
    let replayed = with_dsh(config, recorded, Answer::Allow, async |cx, rx| {
        initialize_with_terminal(&cx).await?;
        cx.send_request(LoadSessionRequest::new(id.clone(), project.path()))
            .block_task()
            .await?;
        Ok(updates_of(drain(rx)))
    })
    .await;
    let live = terminal_outline(&live);
    assert!(
        live.iter()
            .any(|line| line.ends_with(" 2 null Some(Completed)")),
        "{live:?}"
    );
    assert_eq!(terminal_outline(&replayed), live);
}

#[tokio::test]
async fn an_answer_cut_short_or_refused_is_its_stop_reason() {
    for (finish, stop) in [
        ("max_tokens", StopReason::MaxTokens),
        ("refusal", StopReason::Refusal),
    ] {
        let answers = format!("[[answers]]\ntext = \"Partial\"\nfinish = \"{finish}\"\n");
        let fixture = fixture(&answers, "", &[]);
        let answered = fixture
            .in_session(Answer::Allow, async |cx, session, _| {
                prompt(&cx, &session, "Go.").await
            })
            .await;
        assert_eq!(answered, stop);
    }
}

#[tokio::test]
async fn a_closed_session_is_free_for_another_process() {
    let fixture = fixture("[[answers]]\ntext = \"one\"\n", "", &["bash"]);
    let Fixture {
        project,
        config,
        recorded,
        ..
    } = &fixture;
    with_dsh(config, recorded, Answer::Allow, async |cx, _| {
        let init = initialize(&cx).await?;
        assert!(init.agent_capabilities.session_capabilities.close.is_some());
        let session = new_session(&cx, project.path()).await?;
        prompt(&cx, &session, "first").await?;
        cx.send_request(CloseSessionRequest::new(session.clone()))
            .block_task()
            .await?;
        // This process still runs; another one resumes the session.
        let other_recorded = recorded.with_file_name("other.jsonl");
        let stop = with_dsh(config, &other_recorded, Answer::Allow, async |other, _| {
            initialize(&other).await?;
            other
                .send_request(ResumeSessionRequest::new(session.clone(), project.path()))
                .block_task()
                .await?;
            prompt(&other, &session, "second").await
        })
        .await;
        assert_eq!(stop, StopReason::EndTurn);
        // Here it is gone.
        let again = cx
            .send_request(CloseSessionRequest::new(session.clone()))
            .block_task()
            .await
            .expect_err("closed already");
        assert_error(&again, -32002, |message| {
            message.contains(&format!("no session `{}` is open", session.0))
        });
        let prompted = prompt(&cx, &session, "third").await.expect_err("closed");
        assert_error(&prompted, -32002, |_| true);
        Ok(())
    })
    .await;
}

/// The `usage_update`s among `updates`, as (used, size).
fn usages(updates: &[SessionUpdate]) -> Vec<(u64, u64)> {
    updates
        .iter()
        .filter_map(|update| match update {
            SessionUpdate::UsageUpdate(usage) => Some((usage.used, usage.size)),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn each_response_is_followed_by_its_usage_and_a_load_counts_it() {
    let Fixture {
        project,
        config,
        recorded,
        ..
    } = &fixture(
        "[[answers]]\ntext = \"Looking.\"\n\
         usage = { prompt_tokens = 1200, completion_tokens = 40 }\n\
         [[answers.tool_calls]]\nname = \"bash\"\narguments = { command = \"echo hi\" }\n\
         [[answers]]\ntext = \"Done.\"\n",
        WINDOWED,
        &["bash"],
    );
    let (id, live) = with_dsh(config, recorded, Answer::Allow, async |cx, rx| {
        initialize(&cx).await?;
        let session = new_session(&cx, project.path()).await?;
        assert_eq!(prompt(&cx, &session, "Hi.").await?, StopReason::EndTurn);
        Ok((session, updates_of(drain(rx))))
    })
    .await;
    // The first answer's usage is the API's; the second's, with none
    // reported, is counted.
    let live_usages = usages(&live);
    assert_eq!(live_usages.len(), 2, "{live:?}");
    assert_eq!(live_usages[0], (1240, 100_000));
    let (counted, size) = live_usages[1];
    assert_eq!(size, 100_000);
    assert!(counted > 0);
    // Each follows its answer's text, before its calls; the turn ends with one.
    let first = live
        .iter()
        .position(|u| matches!(u, SessionUpdate::UsageUpdate(_)));
    assert!(
        matches!(
            &live[first.expect("a usage") + 1],
            SessionUpdate::ToolCall(_)
        ),
        "{live:?}"
    );
    assert!(
        matches!(live.last(), Some(SessionUpdate::UsageUpdate(_))),
        "{live:?}"
    );

    // The store keeps no usage: a load counts the context once, at its end.
    let replayed = with_dsh(config, recorded, Answer::Allow, async |cx, rx| {
        initialize(&cx).await?;
        cx.send_request(LoadSessionRequest::new(id.clone(), project.path()))
            .block_task()
            .await?;
        Ok(updates_of(drain(rx)))
    })
    .await;
    let replayed_usages = usages(&replayed);
    assert_eq!(replayed_usages.len(), 1, "{replayed:?}");
    assert_eq!(
        replayed_usages[0],
        (counted, 100_000),
        "the live turn's count"
    );
    let last_of_history = replayed
        .iter()
        .rposition(|u| !matches!(u, SessionUpdate::AvailableCommandsUpdate(_)));
    assert!(
        matches!(
            &replayed[last_of_history.expect("updates")],
            SessionUpdate::UsageUpdate(_)
        ),
        "{replayed:?}"
    );
}

#[tokio::test]
async fn without_a_known_window_no_usage_is_sent() {
    let fixture = fixture("[[answers]]\ntext = \"one\"\n", "", &[]);
    let seen = fixture
        .in_session(Answer::Allow, async |cx, session, rx| {
            prompt(&cx, &session, "Go.").await?;
            Ok(updates_of(drain(rx)))
        })
        .await;
    assert_eq!(usages(&seen), [], "{seen:?}");
}

/// The `session_info_update`s among `updates`.
fn infos(updates: &[SessionUpdate]) -> Vec<SessionInfoUpdate> {
    updates
        .iter()
        .filter_map(|update| match update {
            SessionUpdate::SessionInfoUpdate(info) => Some(info.clone()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_new_session_gets_its_title_after_its_first_prompt() {
    let fixture = fixture(
        "[[answers]]\ntext = \"one\"\n[[answers]]\ntext = \"two\"\n",
        "",
        &[],
    );
    let (first, second) = fixture
        .in_session(Answer::Allow, async |cx, session, rx| {
            prompt(&cx, &session, "\n  Fix the build.\nThen test.").await?;
            let first = updates_of(drain(rx));
            prompt(&cx, &session, "And again.").await?;
            Ok((first, updates_of(drain(rx))))
        })
        .await;
    // The store's title: the first prompt's first line, before the answer
    // (after the commands, announced with the session).
    let turn = first
        .iter()
        .find(|update| !matches!(update, SessionUpdate::AvailableCommandsUpdate(_)));
    assert_eq!(
        turn,
        Some(&SessionUpdate::SessionInfoUpdate(
            SessionInfoUpdate::new().title("Fix the build.")
        )),
        "{first:?}"
    );
    assert_eq!(infos(&first).len(), 1, "{first:?}");
    assert_eq!(infos(&second), [], "a title is given once: {second:?}");
}

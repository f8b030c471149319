//! What an MCP server cannot take by changing or flooding, over ACP with
//! the repository's test server: a tool that changes after it was allowed
//! is asked about again, and its loosened annotations are not believed
//! until the person answers; a flood of sampling requests reaches the
//! model a bounded number of times, one at a time, in every mode.

use agent_client_protocol::v1::schema::SetSessionModeRequest;

use super::*;

/// The MCP test server's binary.
static SERVER: std::sync::LazyLock<String> =
    std::sync::LazyLock::new(|| dsh_mcp_test_server::binary().display().to_string());

/// The test server `tester` with `args`, whose tools follow `rest` (more
/// keys of its table).
fn tester(args: &[&str], rest: &str) -> String {
    let mut command = vec![SERVER.to_owned()];
    command.extend(args.iter().map(|arg| (*arg).to_owned()));
    format!("[mcp.tester]\ncommand = {command:?}\n{rest}\n")
}

/// A scripted answer that calls `tool` with `arguments` (TOML).
fn calling(tool: &str, arguments: &str) -> String {
    format!(
        "[[answers]]\ntext = \"\"\n[[answers.tool_calls]]\nname = {tool:?}\narguments = {arguments}\n"
    )
}

/// `n` answers of a sampling request.
fn sampled(n: usize) -> String {
    (0..n)
        .map(|i| format!("[[answers]]\ntext = \"s{i}\"\n"))
        .collect()
}

/// The texts of the updates seen (messages and notices), one a line.
fn said(seen: &[Seen]) -> Vec<String> {
    seen.iter()
        .filter_map(|item| match item {
            Seen::Update(_, SessionUpdate::AgentMessageChunk(chunk)) => match &chunk.content {
                ContentBlock::Text(text) => Some(text.text.clone()),
                _ => None,
            },
            Seen::Update(_, SessionUpdate::Notice(notice)) => Some(notice.title.clone()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_flood_of_sampling_reaches_the_model_a_bounded_number_of_times_in_full_access() {
    let answers = format!(
        "{}{}{}{}[[answers]]\ntext = \"done\"\n",
        calling("tester__sample_flood", "{ count = 200, max_tokens = 64 }"),
        sampled(8),
        calling(
            "tester__sample_flood",
            "{ count = 200, serial = true, max_tokens = 64 }"
        ),
        sampled(8),
    );
    let tables = format!(
        "[sandbox]\nmode = \"full-access\"\n{}",
        tester(&["samples"], "permission = \"allow\"")
    );
    let fixture = fixture(&answers, &tables, &["mcp:tester"]);
    let seen = fixture
        .in_session(Answer::Allow, async |cx, session, rx| {
            cx.send_request(SetSessionModeRequest::new(session.clone(), "full-access"))
                .block_task()
                .await?;
            assert_eq!(prompt(&cx, &session, "go").await?, StopReason::EndTurn);
            Ok(drain(rx))
        })
        .await;
    let requests = common::recorded_requests(&fixture.recorded);
    let sampling = (requests.iter())
        .filter(|request| request["system"] == "You answer in one word.")
        .count();
    // 200 at once, then 200 one after another: 8 of each call reach the
    // model (the default `sampling_requests_per_call`), and the turn's
    // three steps.
    assert_eq!((sampling, requests.len()), (16, 19), "{requests:#?}");
    let results = requests[18]["messages"].to_string();
    assert_eq!(
        results.matches("sampled 8, refused 192, failed 0").count(),
        2,
        "{results}"
    );
    // The person is told once a call, not once a request.
    let refusals: Vec<String> = (said(&seen).into_iter())
        .filter(|text| text.contains("reached its sampling limit"))
        .collect();
    assert_eq!(refusals.len(), 2, "{refusals:#?}");
    assert!(
        refusals[0].contains("`[mcp.tester] sampling_requests_per_call`"),
        "{refusals:?}"
    );
    assert!(
        seen.iter().all(|item| !matches!(item, Seen::Permission(_))),
        "full-access asks nothing"
    );
}

/// `flip` allowed "always", `flip` again, the rug pulled (`flip` now says
/// it only reads, in other words), `flip` twice more, then an answer.
fn rug_pull_answers() -> String {
    format!(
        "{}{}{}{}{}[[answers]]\ntext = \"done\"\n",
        calling("tester__flip", "{}"),
        calling("tester__flip", "{}"),
        calling("tester__rug_pull", "{}"),
        calling("tester__flip", "{}"),
        calling("tester__flip", "{}"),
    )
}

#[tokio::test]
async fn a_tool_that_changes_after_it_was_allowed_is_asked_about_again() {
    let fixture = fixture(
        &rug_pull_answers(),
        &tester(&["flips"], ""),
        &["mcp:tester"],
    );
    let trace = fixture.project.path().join("trace.jsonl");
    let agent = common::acp_agent(&[
        "acp",
        "--config",
        &fixture.config,
        "--trace",
        &trace.display().to_string(),
    ]);
    let seen = with_agent(agent, Answer::AllowAlways, async |cx, rx| {
        initialize(&cx).await?;
        let session = new_session(&cx, fixture.project.path()).await?;
        assert_eq!(prompt(&cx, &session, "go").await?, StopReason::EndTurn);
        Ok(drain(rx))
    })
    .await;
    // Asked at first ("always allow"), not for the second call; asked
    // again once it changed — its "always" lapsed, and its new
    // `readOnlyHint: true` not believed — and not after that answer.
    let lines = outline(&seen);
    let order: Vec<&String> = (lines.iter())
        .filter(|line| line.starts_with("permission") || line.starts_with("call"))
        .collect();
    let positions: Vec<usize> = (order.iter().enumerate())
        .filter(|(_, line)| line.starts_with("permission"))
        .map(|(at, _)| at)
        .collect();
    // call flip, permission, call flip, call rug_pull, call flip,
    // permission, call flip.
    assert_eq!(positions, [1, 5], "{order:#?}");
    let notices: Vec<String> = (said(&seen).into_iter())
        .filter(|text| text.contains("changed its tool"))
        .collect();
    assert_eq!(notices.len(), 1, "said once: {notices:#?}");
    assert!(
        notices[0].contains(
            "MCP server `tester` changed its tool `tester__flip` (description and annotations)"
        ),
        "{notices:?}"
    );
    assert!(notices[0].contains("not believed"), "{notices:?}");
    // The trace names it.
    let changed: Vec<serde_json::Value> = (common::json_lines(&trace).into_iter())
        .filter(|line| line.get("tool_changed").is_some())
        .collect();
    assert_eq!(changed.len(), 1, "{changed:?}");
    assert_eq!(changed[0]["tool_changed"], "tester__flip");
    assert_eq!(changed[0]["server"], "tester");
    assert_eq!(changed[0]["what"], json!(["description", "annotations"]));
}

#[test]
fn dsh_run_does_not_believe_a_tool_that_turns_read_only() {
    let dir = tempfile::tempdir().expect("a temp dir");
    // No one can be asked (stdin is no terminal): `flip`, destructive, is
    // refused; once it says it only reads, it is refused still.
    let answers = format!(
        "{}{}{}[[answers]]\ntext = \"done\"\n",
        calling("tester__flip", "{}"),
        calling("tester__rug_pull", "{}"),
        calling("tester__flip", "{}"),
    );
    let tables = format!(
        "{}{}",
        tester(&["flips"], ""),
        common::runner("", &["mcp:tester"])
    );
    let config = common::scripted_config(dir.path(), &answers, &tables);
    let (output, requests) = common::run_recorded(dir.path(), &config, &["-p", "go"]);
    let last = requests.last().expect("requests")["messages"].to_string();
    assert!(!last.contains("flipped"), "flip never ran: {last}");
    assert_eq!(
        last.matches("runs only with the user's permission").count(),
        2,
        "{last}"
    );
    let stderr = common::stderr(&output);
    let stdout = common::stdout(&output);
    assert!(
        format!("{stdout}{stderr}").contains("changed its tool `tester__flip`"),
        "the change is said: {stdout}{stderr}"
    );
}

#[tokio::test]
async fn a_loaded_session_replays_its_sampling_calls_as_they_were_shown_live() {
    use agent_client_protocol::v1::schema::LoadSessionRequest;
    let answers = format!(
        "{}{}{}[[answers]]\ntext = \"Blue\"\n[[answers]]\ntext = \"done\"\n",
        calling(
            "tester__sample_flood",
            "{ count = 2, serial = true, max_tokens = 64 }"
        ),
        sampled(2),
        calling("tester__sample", "{ text = \"Name a colour.\" }"),
    );
    let fixture = fixture(
        &answers,
        &tester(&["samples"], "permission = \"allow\""),
        &["mcp:tester"],
    );
    let only_updates = |seen: Vec<Seen>| -> Vec<SessionUpdate> {
        seen.into_iter()
            .filter_map(|item| match item {
                Seen::Update(_, SessionUpdate::AvailableCommandsUpdate(_)) => None,
                Seen::Update(_, update) => Some(update),
                Seen::Permission(_) => None,
            })
            .collect()
    };
    let (id, live) = fixture
        .client(Answer::Allow, async |cx, rx| {
            let session = new_session(&cx, fixture.project.path()).await?;
            assert_eq!(prompt(&cx, &session, "go").await?, StopReason::EndTurn);
            Ok((session, only_updates(drain(rx))))
        })
        .await;
    // Three sampling requests, each announced as a call and then
    // completed.
    let sampling: Vec<String> = (outline(
        &live
            .iter()
            .map(|update| Seen::Update(id.clone(), update.clone()))
            .collect::<Vec<_>>(),
    )
    .into_iter())
    .filter(|line| {
        line.contains("asks to use the model") || line.starts_with("update Some(Completed)")
    })
    .collect();
    let announced = (sampling.iter())
        .filter(|line| line.starts_with("call MCP server `tester` asks to use the model"))
        .count();
    assert_eq!(announced, 3, "{sampling:#?}");

    // Another process loads it: the same updates, the sampling calls
    // included, in their places.
    let replayed = fixture
        .client(Answer::Allow, async |cx, rx| {
            cx.send_request(LoadSessionRequest::new(id.clone(), fixture.project.path()))
                .block_task()
                .await?;
            Ok(only_updates(until_commands(rx).await))
        })
        .await;
    let (first, rest) = replayed.split_first().expect("updates");
    assert!(
        matches!(first, SessionUpdate::UserMessageChunk(_)),
        "{first:?}"
    );
    assert_eq!(rest, live.as_slice(), "the live turn's updates, exactly");
}

#[tokio::test]
async fn a_resumed_session_lapses_the_always_of_a_tool_its_server_changed_since() {
    use agent_client_protocol::v1::schema::ResumeSessionRequest;
    let again = format!(
        "{}[[answers]]\ntext = \"done\"\n",
        calling("tester__flip", "{}")
    );
    let fixture = fixture(&again, &tester(&["flips"], ""), &["mcp:tester"]);
    let answers = Path::new(&fixture.config).with_file_name("answers.toml");
    // A process of the editor: resumes the session, calls `flip` once;
    // how many times it was asked.
    let resumed = async |id: &SessionId| {
        std::fs::write(&answers, &again).expect("write answers");
        fixture
            .client(Answer::AllowAlways, async |cx, rx| {
                cx.send_request(ResumeSessionRequest::new(
                    id.clone(),
                    fixture.project.path(),
                ))
                .block_task()
                .await?;
                prompt(&cx, id, "again").await?;
                let seen = drain(rx);
                let asked = (seen.iter())
                    .filter(|item| matches!(item, Seen::Permission(_)))
                    .count();
                Ok((asked, said(&seen)))
            })
            .await
    };
    // "Always allow" `flip`.
    let id = fixture
        .in_session(Answer::AllowAlways, async |cx, session, rx| {
            prompt(&cx, &session, "go").await?;
            let asked = drain(rx)
                .iter()
                .filter(|item| matches!(item, Seen::Permission(_)))
                .count();
            assert_eq!(asked, 1);
            Ok(session)
        })
        .await;
    // Resumed with the same server: the answer holds.
    let (asked, _) = resumed(&id).await;
    assert_eq!(asked, 0, "the remembered answer holds");
    // The server changed `flip` between runs: it lapses, and is said.
    let config = std::fs::read_to_string(&fixture.config).expect("read config");
    let pulled = config.replace("\"flips\"]", "\"flips\", \"flip-pulled\"]");
    assert_ne!(config, pulled);
    std::fs::write(&fixture.config, pulled).expect("write config");
    let (asked, notices) = resumed(&id).await;
    assert_eq!(asked, 1, "asked again: {notices:#?}");
    assert!(
        notices
            .iter()
            .any(|text| text.contains("changed its tool `tester__flip`")),
        "{notices:#?}"
    );
}

//! What an MCP server cannot take by changing or flooding, over ACP with
//! the repository's test server: a tool that changes after it was allowed
//! is asked about again, and its loosened annotations are not believed
//! until the person answers; a flood of sampling requests reaches the
//! model a bounded number of times, one at a time, in every mode.

use agent_client_protocol::v1::schema::SetSessionModeRequest;

use super::*;

const SERVER: &str = env!("CARGO_BIN_EXE_dsh-test-mcp-server");

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

//! MCP 2026-07-28 through `dsh run` and `dsh check`, against the test
//! server speaking it (`protocol=2026-07-28`) beside the same server
//! speaking 2025-11-25: a round's question (`input_required`) goes where
//! a 2025 question goes, a tool the server adds through
//! `subscriptions/listen` comes after the tools already sent, and a
//! server whose order changes is warned of.

use crate::common;

use common::{assert_status, dsh, stderr, stdout, tool_names};
use serde_json::Value;

/// The MCP test server's binary.
static SERVER: std::sync::LazyLock<String> =
    std::sync::LazyLock::new(|| dsh_mcp_test_server::binary().display().to_string());

const MODERN: &str = "protocol=2026-07-28";

/// A `[mcp.docs]` table starting the test server with `args`, its tools
/// run unasked, and an agent that sees it.
fn tables(args: &[&str]) -> String {
    let mut command = vec![SERVER.to_owned()];
    command.extend(args.iter().map(|arg| (*arg).to_owned()));
    format!(
        "\n[mcp.docs]\ncommand = {command:?}\npermission = \"allow\"\n{}",
        common::runner("", &["read", "mcp:docs"])
    )
}

/// `dsh run -p go` against the server started with `args`, the model
/// answering `answers`: its output and the requests the model got.
fn run(args: &[&str], answers: &str) -> (std::process::Output, Vec<Value>) {
    let dir = tempfile::tempdir().expect("a temp dir");
    let config = common::scripted_config(dir.path(), answers, &tables(args));
    common::run_recorded(dir.path(), &config, &["-p", "go"])
}

/// A 2026-07-28 server asks in a round of the call; with no one to ask
/// (no terminal), dsh declines it and says so, word for word as it does
/// a 2025-11-25 server's `elicitation/create`: the same asker answered.
#[test]
fn a_rounds_question_is_answered_as_a_2025_question_is() {
    let answers = "[[answers]]\ntext = \"\"\n\
        [[answers.tool_calls]]\nname = \"docs__elicit\"\narguments = {}\n\
        [[answers]]\ntext = \"done\"\n";
    let mut seen = Vec::new();
    for args in [&["elicits", MODERN][..], &["elicits"][..]] {
        let (output, requests) = run(args, answers);
        assert_eq!(stdout(&output).trim(), "done", "{}", stderr(&output));
        let result = requests[1]["messages"].to_string();
        assert!(
            result.contains("elicitation: Decline"),
            "{args:?}: {result}"
        );
        let said = stderr(&output);
        let line =
            "[mcp docs] asked for input, declined (no one here answers it): Sign in, please.";
        assert!(said.contains(line), "{args:?}: {said}");
        seen.push(result);
    }
    assert_eq!(seen[0], seen[1]);
}

/// The tool a 2026-07-28 server adds mid-session (said on the
/// `subscriptions/listen` dsh opened) is sent after every tool already
/// sent, never sorted among them; when it goes, the others keep their
/// places and the person is told.
#[test]
fn a_tool_added_through_listen_comes_after_the_tools_sent() {
    let answers = "[[answers]]\ntext = \"\"\n\
        [[answers.tool_calls]]\nname = \"docs__add_tool\"\narguments = {}\n\
        [[answers]]\ntext = \"\"\n\
        [[answers.tool_calls]]\nname = \"docs__extra\"\narguments = {}\n\
        [[answers]]\ntext = \"done\"\n";
    let (output, requests) = run(&[MODERN], answers);
    assert_eq!(stdout(&output).trim(), "done", "{}", stderr(&output));
    let first = tool_names(&requests[0]);
    assert!(!first.contains(&"docs__extra".to_owned()), "{first:?}");
    let mut appended = first.clone();
    appended.push("docs__extra".to_owned());
    assert_eq!(tool_names(&requests[1]), appended);
    // By name it would sit among them.
    assert!(first.iter().any(|name| name.as_str() > "docs__extra"));
    assert_eq!(tool_names(&requests[2]), first);
    assert!(
        stderr(&output).contains("no longer offered to the model: `docs__extra`"),
        "{}",
        stderr(&output)
    );
}

/// `dsh check` lists each server's tools a second time and warns of one
/// whose order differs, naming it and the first place that differs; a
/// server whose order holds is not warned of. The report says the
/// version each speaks.
#[test]
fn check_warns_of_a_server_that_lists_its_tools_in_another_order() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let answers = "[[answers]]\ntext = \"x\"\n";
    let config = common::scripted_config(dir.path(), answers, &tables(&["shuffle"]));
    let output = dsh(&["check", "--config", &config]);
    assert_status(&output, 0);
    let said = stderr(&output).replace("\n  │ ", " ");
    assert!(
        said.contains(
            "MCP server `docs` lists its tools in a different order on two calls: \
             tool 1 was `echo` the first time and `slow` the second"
        ),
        "{said}"
    );
    assert!(said.contains("[mcp.docs]"), "the table is shown: {said}");

    for args in [&[MODERN][..], &[][..]] {
        let config = common::scripted_config(dir.path(), answers, &tables(args));
        let output = dsh(&["check", "--config", &config, "--format", "json"]);
        assert_status(&output, 0);
        assert!(
            !stderr(&output).contains("different order"),
            "{}",
            stderr(&output)
        );
        let report: Value = serde_json::from_str(&stdout(&output)).expect("JSON");
        let version = if args.is_empty() {
            "2025-11-25"
        } else {
            "2026-07-28"
        };
        assert_eq!(report["mcp_servers"][0]["protocol"], version, "{report}");
        assert_eq!(report["warnings"], 0, "{report}");
    }
}

/// A 2026-07-28 server that never says its tools changed, and lists them
/// fresh for 300 ms (`ttlMs`): its tool added in the first turn is not
/// seen in that turn, and is in the next turn's first request — listed
/// again before the turn, past its ttl — after every tool already sent.
#[tokio::test(flavor = "multi_thread")]
async fn a_list_past_its_ttl_is_read_again_before_the_next_turn() {
    use agent_client_protocol::schema::ProtocolVersion;
    use agent_client_protocol::v1::schema::{InitializeRequest, NewSessionRequest};

    let dir = tempfile::tempdir().expect("a temp dir");
    let answers = "[[answers]]\ntext = \"\"\n\
        [[answers.tool_calls]]\nname = \"docs__add_tool\"\narguments = {}\n\
        [[answers]]\ntext = \"added\"\n\
        [[answers]]\ntext = \"done\"\n";
    let config = common::scripted_config(
        dir.path(),
        answers,
        &tables(&[MODERN, "quiet", "ttl-ms=300"]),
    );
    let recorded = dir.path().join("requests.jsonl");
    crate::acp_mcp::with_dsh(&config, &recorded, async |cx, _rx| {
        cx.send_request(InitializeRequest::new(ProtocolVersion::V1))
            .block_task()
            .await?;
        let session = cx
            .send_request(NewSessionRequest::new(dir.path()))
            .block_task()
            .await?
            .session_id;
        crate::acp::prompt(&cx, &session, "add one").await?;
        tokio::time::sleep(std::time::Duration::from_millis(400)).await;
        crate::acp::prompt(&cx, &session, "again").await?;
        Ok(())
    })
    .await;
    let requests = common::recorded_requests(&recorded);
    assert_eq!(requests.len(), 3, "{requests:?}");
    let first = tool_names(&requests[0]);
    // Within the turn, nothing said the list changed.
    assert_eq!(tool_names(&requests[1]), first);
    let mut appended = first.clone();
    appended.push("docs__extra".to_owned());
    assert_eq!(tool_names(&requests[2]), appended);
    assert!(first.iter().any(|name| name.as_str() > "docs__extra"));
}

//! MCP servers under `dsh acp`: the editor's `mcpServers` of `session/new`
//! start for that session alone, and stop with dsh.

use crate::acp::prompt;
use crate::common::{self, tool_names};

use std::path::Path;
use std::time::Duration;

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    AvailableCommandInput, ContentBlock, DeleteSessionRequest, InitializeRequest,
    LoadSessionRequest, McpServer, McpServerStdio, NewSessionRequest, PermissionOptionKind,
    RequestPermissionOutcome, RequestPermissionRequest, RequestPermissionResponse,
    ResumeSessionRequest, SelectedPermissionOutcome, SessionId, SessionNotification, SessionUpdate,
    StopReason, ToolCallContent, ToolCallUpdate, ToolKind,
};
use agent_client_protocol::{Agent, Client, Error};
use tokio::sync::mpsc;

/// The MCP test server's binary.
static SERVER: std::sync::LazyLock<String> =
    std::sync::LazyLock::new(|| dsh_mcp_test_server::binary().display().to_string());

/// Runs `op` as a client of `dsh acp --config config`; every session
/// update goes to the receiver; a permission request is answered "allow
/// once".
pub(crate) async fn with_dsh<T>(
    config: &str,
    recorded: &Path,
    op: impl AsyncFnOnce(
        ConnectionTo<Agent>,
        &mut mpsc::UnboundedReceiver<(SessionId, SessionUpdate)>,
    ) -> Result<T, Error>,
) -> T {
    let agent = common::recording_acp_agent(config, recorded);
    let (seen, mut rx) = mpsc::unbounded_channel();
    let run = Client
        .v1()
        .on_receive_notification(
            async move |notification: SessionNotification, _cx| {
                let _ = seen.send((notification.session_id, notification.update));
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .on_receive_request(
            async move |request: RequestPermissionRequest, responder, _cx| {
                let option = request
                    .options
                    .iter()
                    .find(|option| option.kind == PermissionOptionKind::AllowOnce)
                    .map(|option| option.option_id.clone())
                    .expect("dsh offers allow-once");
                responder.respond(RequestPermissionResponse::new(
                    RequestPermissionOutcome::Selected(SelectedPermissionOutcome::new(option)),
                ))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .connect_with(agent, async |cx: ConnectionTo<Agent>| op(cx, &mut rx).await);
    tokio::time::timeout(Duration::from_secs(60), run)
        .await
        .expect("the session finishes in time")
        .expect("the client side succeeds")
}

fn texts(rx: &mut mpsc::UnboundedReceiver<(SessionId, SessionUpdate)>, of: &SessionId) -> String {
    let mut all = String::new();
    while let Ok((session, update)) = rx.try_recv() {
        if session == *of
            && let SessionUpdate::AgentMessageChunk(chunk) = update
            && let ContentBlock::Text(text) = chunk.content
        {
            all.push_str(&text.text);
        }
    }
    all
}

#[tokio::test(flavor = "multi_thread")]
async fn session_servers_are_the_sessions_alone_and_stop_with_dsh() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let project = tempfile::tempdir().expect("a project");
    let pid_file = dir.path().join("pids");
    let answers = "[[answers]]\ntext = \"\"\n\
        [[answers.tool_calls]]\nname = \"docs_server__echo\"\narguments = { text = \"from the editor's server\" }\n\
        [[answers]]\ntext = \"a done\"\n\
        [[answers]]\ntext = \"b done\"\n";
    let config = common::scripted_config(
        dir.path(),
        answers,
        // The servers report their pids, which a sandbox renumbers.
        "\n[sandbox]\nmode = \"full-access\"\n\
         [[agents]]\nid = \"editor\"\ntools = [\"read\"]\npersona = \"You edit.\"\n",
    );
    let recorded = dir.path().join("requests.jsonl");
    let servers = vec![
        McpServer::Stdio(
            McpServerStdio::new("Docs Server", SERVER.as_str()).args(vec![
                "instructions=Docs are in /srv.".to_owned(),
                format!("pid-file={}", pid_file.display()),
            ]),
        ),
        McpServer::Stdio(McpServerStdio::new("Broken", "/nonexistent/broken-server")),
    ];
    let (http, said) = with_dsh(&config, &recorded, async |cx, rx| {
        let init = cx
            .send_request(InitializeRequest::new(ProtocolVersion::V1))
            .block_task()
            .await?;
        let http = init.agent_capabilities.mcp_capabilities.http;
        let a = cx
            .send_request(NewSessionRequest::new(project.path()).mcp_servers(servers))
            .block_task()
            .await?
            .session_id;
        let b = cx
            .send_request(NewSessionRequest::new(project.path()))
            .block_task()
            .await?
            .session_id;
        assert_eq!(prompt(&cx, &a, "use docs").await?, StopReason::EndTurn);
        assert_eq!(prompt(&cx, &b, "hello").await?, StopReason::EndTurn);
        tokio::time::sleep(Duration::from_millis(100)).await;
        Ok((http, texts(rx, &a)))
    })
    .await;
    assert!(http, "dsh advertises MCP over HTTP");
    assert!(said.contains("MCP server `broken`"), "{said}");
    assert!(said.contains("/nonexistent/broken-server"), "{said}");

    let requests = common::recorded_requests(&recorded);
    let in_a = &requests[0];
    assert!(
        tool_names(in_a).contains(&"docs_server__echo".to_owned()),
        "{:?}",
        tool_names(in_a)
    );
    assert!(
        in_a["system"]
            .as_str()
            .unwrap_or_default()
            .contains("Docs are in /srv.")
    );
    let result = serde_json::to_string(&requests[1]).expect("json");
    assert!(result.contains("from the editor's server"), "{result}");
    let in_b = &requests[2];
    assert!(
        !tool_names(in_b)
            .iter()
            .any(|name| name.starts_with("docs_server__"))
    );
    assert!(
        !in_b["system"]
            .as_str()
            .unwrap_or_default()
            .contains("Docs are in /srv.")
    );

    // dsh has exited (the client closed its stdin): no server is left.
    common::assert_all_gone(&common::server_pids(&pid_file));
}

/// Waits up to five seconds for `pids` to end; says whether they did.
async fn all_end(pids: &[u32]) -> bool {
    for _ in 0..250 {
        if pids.iter().all(|&pid| !common::running(pid)) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    false
}

#[tokio::test(flavor = "multi_thread")]
async fn a_deleted_sessions_servers_stop_while_dsh_goes_on() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let project = tempfile::tempdir().expect("a project");
    let pid_file = dir.path().join("pids");
    let config = common::scripted_config(
        dir.path(),
        "[[answers]]\ntext = \"hi\"\n",
        // The servers report their pids, which a sandbox renumbers.
        "\n[sandbox]\nmode = \"full-access\"\n[sessions]\npath = \"sessions.db\"\n\
         [[agents]]\nid = \"editor\"\ntools = [\"read\"]\npersona = \"You edit.\"\n",
    );
    let recorded = dir.path().join("requests.jsonl");
    let server = McpServer::Stdio(
        McpServerStdio::new("Docs", SERVER.as_str())
            .args(vec![format!("pid-file={}", pid_file.display())]),
    );
    with_dsh(&config, &recorded, async |cx, _rx| {
        cx.send_request(InitializeRequest::new(ProtocolVersion::V1))
            .block_task()
            .await?;
        let session = cx
            .send_request(NewSessionRequest::new(project.path()).mcp_servers(vec![server]))
            .block_task()
            .await?
            .session_id;
        let pids = common::server_pids(&pid_file);
        assert!(
            pids.iter().all(|&pid| common::running(pid)),
            "the server runs"
        );
        cx.send_request(DeleteSessionRequest::new(session))
            .block_task()
            .await?;
        assert!(all_end(&pids).await, "the server stops with its session");
        // dsh goes on serving.
        let other = cx
            .send_request(NewSessionRequest::new(project.path()))
            .block_task()
            .await?
            .session_id;
        assert_eq!(prompt(&cx, &other, "hello").await?, StopReason::EndTurn);
        Ok(())
    })
    .await;
}

/// An answer that calls the editor's `Docs` server's `echo`, then one
/// that ends the turn.
const CALLS_DOCS: &str = "[[answers]]\ntext = \"\"\n\
    [[answers.tool_calls]]\nname = \"docs__echo\"\narguments = { text = \"from the reopened session\" }\n\
    [[answers]]\ntext = \"done\"\n";

#[tokio::test(flavor = "multi_thread")]
async fn a_loaded_or_resumed_session_starts_the_editors_servers_and_calls_their_tools() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let project = tempfile::tempdir().expect("a project");
    let pid_file = dir.path().join("pids");
    let config = common::scripted_config(
        dir.path(),
        "[[answers]]\ntext = \"hi\"\n",
        // The servers report their pids, which a sandbox renumbers.
        "\n[sandbox]\nmode = \"full-access\"\n[sessions]\npath = \"sessions.db\"\n\
         [[agents]]\nid = \"editor\"\ntools = [\"read\"]\npersona = \"You edit.\"\n",
    );
    let server = McpServer::Stdio(
        McpServerStdio::new("Docs", SERVER.as_str())
            .args(vec![format!("pid-file={}", pid_file.display())]),
    );
    let session = with_dsh(&config, &dir.path().join("new.jsonl"), async |cx, _rx| {
        cx.send_request(InitializeRequest::new(ProtocolVersion::V1))
            .block_task()
            .await?;
        let session = cx
            .send_request(NewSessionRequest::new(project.path()))
            .block_task()
            .await?
            .session_id;
        prompt(&cx, &session, "hello").await?;
        Ok(session)
    })
    .await;
    // The editor restarted: each of a load and a resume in a new process
    // brings the server, and the model calls its tool.
    for reopen in ["load", "resume"] {
        std::fs::write(dir.path().join("answers.toml"), CALLS_DOCS).expect("answers");
        let recorded = dir.path().join(format!("{reopen}.jsonl"));
        with_dsh(&config, &recorded, async |cx, _rx| {
            cx.send_request(InitializeRequest::new(ProtocolVersion::V1))
                .block_task()
                .await?;
            let servers = vec![server.clone()];
            if reopen == "load" {
                let request = LoadSessionRequest::new(session.clone(), project.path());
                cx.send_request(request.mcp_servers(servers))
                    .block_task()
                    .await?;
            } else {
                let request = ResumeSessionRequest::new(session.clone(), project.path());
                cx.send_request(request.mcp_servers(servers))
                    .block_task()
                    .await?;
            }
            assert_eq!(prompt(&cx, &session, "echo").await?, StopReason::EndTurn);
            Ok(())
        })
        .await;
        let requests = common::recorded_requests(&recorded);
        assert!(
            tool_names(&requests[0]).contains(&"docs__echo".to_owned()),
            "{reopen}: {:?}",
            tool_names(&requests[0])
        );
        let result = serde_json::to_string(&requests[1]).expect("json");
        assert!(
            result.contains("from the reopened session"),
            "{reopen}: {result}"
        );
    }
    // Loaded once more, the history replays once the editor's server
    // runs: the call of its `echo` shows with the kind its annotations
    // give it (read-only: `read`), not as a tool no server knows.
    let replayed = with_dsh(&config, &dir.path().join("replay.jsonl"), async |cx, rx| {
        cx.send_request(InitializeRequest::new(ProtocolVersion::V1))
            .block_task()
            .await?;
        let request = LoadSessionRequest::new(session.clone(), project.path());
        cx.send_request(request.mcp_servers(vec![server.clone()]))
            .block_task()
            .await?;
        let mut kinds = Vec::new();
        while let Ok((_, update)) = rx.try_recv() {
            if let SessionUpdate::ToolCall(call) = update {
                kinds.push(call.kind);
            }
        }
        Ok(kinds)
    })
    .await;
    assert_eq!(replayed.len(), 2, "{replayed:?}");
    assert!(
        replayed.iter().all(|kind| *kind == ToolKind::Read),
        "{replayed:?}"
    );
    common::assert_all_gone(&common::server_pids(&pid_file));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_required_deployment_server_that_failed_fails_session_new_naming_it() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let project = tempfile::tempdir().expect("a project");
    let config = common::scripted_config(
        dir.path(),
        "[[answers]]\ntext = \"never\"\n",
        "\n[mcp.docs]\ncommand = [\"/nonexistent/docs-server\"]\nrequired = true\n\
         [[agents]]\nid = \"editor\"\ntools = [\"mcp:docs\"]\npersona = \"You edit.\"\n",
    );
    let recorded = dir.path().join("requests.jsonl");
    let error = with_dsh(&config, &recorded, async |cx, _rx| {
        cx.send_request(InitializeRequest::new(ProtocolVersion::V1))
            .block_task()
            .await?;
        Ok(cx
            .send_request(NewSessionRequest::new(project.path()))
            .block_task()
            .await
            .expect_err("no session without a required server"))
    })
    .await;
    assert!(error.message.contains("MCP server `docs`"), "{error:?}");
    assert!(
        error.message.contains("/nonexistent/docs-server"),
        "{error:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn an_editor_servers_roots_are_the_sessions_directories_and_its_annotations_show() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let project = tempfile::tempdir().expect("a project");
    let extra = tempfile::tempdir().expect("an additional directory");
    let answers = "[[answers]]\ntext = \"\"\n\
        [[answers.tool_calls]]\nname = \"notes__roots\"\narguments = {}\n\
        [[answers]]\ntext = \"\"\n\
        [[answers.tool_calls]]\nname = \"notes__delete_note\"\narguments = { id = \"n1\" }\n\
        [[answers]]\ntext = \"done\"\n";
    let config = common::scripted_config(
        dir.path(),
        answers,
        "\n[[agents]]\nid = \"editor\"\ntools = [\"read\"]\npersona = \"You edit.\"\n",
    );
    let recorded = dir.path().join("requests.jsonl");
    let server = McpServer::Stdio(
        McpServerStdio::new("Notes", SERVER.as_str())
            .args(vec!["roots".to_owned(), "annotated".to_owned()]),
    );
    let calls = with_dsh(&config, &recorded, async |cx, rx| {
        cx.send_request(InitializeRequest::new(ProtocolVersion::V1))
            .block_task()
            .await?;
        let request = NewSessionRequest::new(project.path())
            .additional_directories(vec![extra.path().to_owned()])
            .mcp_servers(vec![server]);
        let session = cx.send_request(request).block_task().await?.session_id;
        assert_eq!(prompt(&cx, &session, "tidy up").await?, StopReason::EndTurn);
        let mut calls = Vec::new();
        while let Ok((_, update)) = rx.try_recv() {
            if let SessionUpdate::ToolCall(call) = update {
                calls.push((call.title, call.kind));
            }
        }
        Ok(calls)
    })
    .await;
    // The server asked `roots/list` and saw the session's directory and
    // the editor's additional one.
    let requests = common::recorded_requests(&recorded);
    let result = serde_json::to_string(&requests[1]).expect("json");
    let uri = |dir: &Path| format!("file://{}", dir.display());
    let roots = format!(
        "{}\\n{}\\nlist_changed: 0",
        uri(project.path()),
        uri(extra.path())
    );
    assert!(result.contains(&roots), "{roots} in {result}");
    // The destructive tool's kind and title come from its annotations.
    assert_eq!(
        calls,
        vec![
            ("notes__roots".to_owned(), ToolKind::Other),
            ("Delete a note".to_owned(), ToolKind::Edit),
        ]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn an_editor_servers_prompt_is_a_listed_command_that_sends_its_text() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let project = tempfile::tempdir().expect("a project");
    let answers = "[[answers]]\ntext = \"reviewed\"\n\
        [[answers]]\ntext = \"\"\n\
        [[answers.tool_calls]]\nname = \"docs__add_prompt\"\narguments = {}\n\
        [[answers]]\ntext = \"added\"\n";
    let config = common::scripted_config(
        dir.path(),
        answers,
        "\n[[agents]]\nid = \"editor\"\ntools = [\"read\"]\npersona = \"You edit.\"\n",
    );
    let recorded = dir.path().join("requests.jsonl");
    let server = McpServer::Stdio(
        McpServerStdio::new("Docs", SERVER.as_str())
            .args(vec!["prompts".to_owned(), "prompt-changes".to_owned()]),
    );
    let (listed, said) = with_dsh(&config, &recorded, async |cx, rx| {
        cx.send_request(InitializeRequest::new(ProtocolVersion::V1))
            .block_task()
            .await?;
        let request = NewSessionRequest::new(project.path()).mcp_servers(vec![server]);
        let session = cx.send_request(request).block_task().await?.session_id;
        let stop = prompt(&cx, &session, "/docs:review").await?;
        assert_eq!(stop, StopReason::EndTurn);
        let (mut listed, mut said) = (Vec::new(), String::new());
        while let Ok((_, update)) = rx.try_recv() {
            match update {
                SessionUpdate::AvailableCommandsUpdate(update) => {
                    listed = (update.available_commands.into_iter())
                        .map(|command| {
                            let hint = match command.input {
                                Some(AvailableCommandInput::Unstructured(input)) => {
                                    Some(input.hint)
                                }
                                _ => None,
                            };
                            (command.name, hint)
                        })
                        .collect();
                }
                SessionUpdate::AgentMessageChunk(chunk) => {
                    if let ContentBlock::Text(text) = chunk.content {
                        said.push_str(&text.text);
                    }
                }
                _ => {}
            }
        }
        let stop = prompt(&cx, &session, "/docs:review x.rs").await?;
        assert_eq!(stop, StopReason::EndTurn);
        // The server adds a prompt: the session hears of it.
        assert_eq!(prompt(&cx, &session, "add one").await?, StopReason::EndTurn);
        while let Some((_, update)) = rx.recv().await {
            if let SessionUpdate::AvailableCommandsUpdate(update) = update
                && (update.available_commands.iter()).any(|one| one.name == "docs:summarize")
            {
                break;
            }
        }
        Ok((listed, said))
    })
    .await;
    assert_eq!(
        listed.last(),
        Some(&("docs:review".to_owned(), Some("file".to_owned())))
    );
    // Without its argument it says why, and asks the model nothing; with
    // it, the model reads the prompt's text as the person's turn.
    assert!(
        said.contains("`/docs:review` needs its argument `file`"),
        "{said}"
    );
    let requests = common::recorded_requests(&recorded);
    assert_eq!(requests.len(), 3);
    let sent = requests[0]["messages"].to_string();
    assert!(sent.contains("Review x.rs for mistakes."), "{sent}");
    assert!(!sent.contains("/docs:review"), "{sent}");
}

/// A tool call update as a line: its status, then its content, each
/// block as its text (an image as `image <type> <base64 bytes>`).
fn update_line(update: &ToolCallUpdate) -> String {
    let content: Vec<String> = (update.fields.content.iter().flatten())
        .map(|content| match content {
            ToolCallContent::Content(content) => match &content.content {
                ContentBlock::Text(text) => text.text.clone(),
                ContentBlock::Image(image) => {
                    format!("image {} {}", image.mime_type, image.data.len())
                }
                other => format!("{other:?}"),
            },
            other => format!("{other:?}"),
        })
        .collect();
    format!("{:?} {}", update.fields.status, content.join("|"))
}

#[tokio::test(flavor = "multi_thread")]
async fn a_servers_progress_shows_in_its_call_step_by_step_before_the_result() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let project = tempfile::tempdir().expect("a project");
    let answers = "[[answers]]\ntext = \"\"\n\
        [[answers.tool_calls]]\nname = \"notes__progress\"\narguments = { ms = 150 }\n\
        [[answers]]\ntext = \"done\"\n";
    let config = common::scripted_config(
        dir.path(),
        answers,
        "\n[[agents]]\nid = \"editor\"\ntools = [\"read\"]\npersona = \"You edit.\"\n",
    );
    let server = McpServer::Stdio(
        McpServerStdio::new("Notes", SERVER.as_str()).args(vec!["progress".to_owned()]),
    );
    let recorded = dir.path().join("requests.jsonl");
    let updates = with_dsh(&config, &recorded, async |cx, rx| {
        cx.send_request(InitializeRequest::new(ProtocolVersion::V1))
            .block_task()
            .await?;
        let request = NewSessionRequest::new(project.path()).mcp_servers(vec![server]);
        let session = cx.send_request(request).block_task().await?.session_id;
        assert_eq!(prompt(&cx, &session, "go").await?, StopReason::EndTurn);
        let mut updates = Vec::new();
        while let Ok((_, update)) = rx.try_recv() {
            if let SessionUpdate::ToolCallUpdate(update) = update {
                updates.push(update_line(&update));
            }
        }
        Ok(updates)
    })
    .await;
    assert_eq!(
        updates,
        [
            "Some(InProgress) ",
            "None step 1 of 3 (1/3)",
            "None step 2 of 3 (2/3)",
            "None step 3 of 3 (3/3)",
            "Some(Completed) done",
        ]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_tools_image_shows_in_its_call_and_a_load_shows_it_again() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let project = tempfile::tempdir().expect("a project");
    let answers = "[[answers]]\ntext = \"\"\n\
        [[answers.tool_calls]]\nname = \"notes__image\"\narguments = {}\n\
        [[answers]]\ntext = \"a pixel\"\n";
    let config = common::scripted_config(
        dir.path(),
        answers,
        // The servers report their pids, which a sandbox renumbers.
        "\n[sandbox]\nmode = \"full-access\"\n[sessions]\npath = \"sessions.db\"\n\
         [[agents]]\nid = \"editor\"\ntools = [\"read\"]\npersona = \"You edit.\"\n",
    );
    let server = McpServer::Stdio(McpServerStdio::new("Notes", SERVER.as_str()));
    let completed = |rx: &mut mpsc::UnboundedReceiver<(SessionId, SessionUpdate)>| {
        let mut lines = Vec::new();
        while let Ok((_, update)) = rx.try_recv() {
            if let SessionUpdate::ToolCallUpdate(update) = update
                && update.fields.status.is_some()
            {
                lines.push(update_line(&update));
            }
        }
        lines
    };
    let recorded = dir.path().join("requests.jsonl");
    let (session, live) = with_dsh(&config, &recorded, async |cx, rx| {
        cx.send_request(InitializeRequest::new(ProtocolVersion::V1))
            .block_task()
            .await?;
        let request = NewSessionRequest::new(project.path()).mcp_servers(vec![server.clone()]);
        let session = cx.send_request(request).block_task().await?.session_id;
        assert_eq!(prompt(&cx, &session, "look").await?, StopReason::EndTurn);
        Ok((session, completed(rx)))
    })
    .await;
    // The PNG of the test server: 70 bytes, 96 in base64.
    let shown = [
        "Some(InProgress) ",
        "Some(Completed) a pixel:|image image/png 96",
    ];
    assert_eq!(live, shown);
    // The model read the image as an image of the result.
    let requests = common::recorded_requests(&recorded);
    let result = serde_json::to_string(&requests[1]).expect("json");
    assert!(result.contains(r#""mime_type":"image/png""#), "{result}");

    let replayed = with_dsh(&config, &dir.path().join("load.jsonl"), async |cx, rx| {
        cx.send_request(InitializeRequest::new(ProtocolVersion::V1))
            .block_task()
            .await?;
        let request = LoadSessionRequest::new(session.clone(), project.path());
        cx.send_request(request).block_task().await?;
        Ok(completed(rx))
    })
    .await;
    assert_eq!(replayed, shown);
}

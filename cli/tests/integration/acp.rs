//! `dsh acp`: the real binary, with the scripted adapter, driven through
//! the client side of the `agent-client-protocol` crate (and, for what a
//! well-behaved client never sends, through raw lines on its stdin).

use crate::common;

#[path = "acp_editor.rs"]
mod editor;
#[path = "acp_sessions.rs"]
mod sessions;
#[path = "acp_trust.rs"]
mod trust;

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::time::Duration;

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    CancelNotification, ContentBlock, InitializeRequest, InitializeResponse, NewSessionRequest,
    PermissionOptionKind, PromptRequest, RequestPermissionOutcome, RequestPermissionRequest,
    RequestPermissionResponse, SelectedPermissionOutcome, SessionId, SessionNotification,
    SessionUpdate, StopReason, ToolCallContent, ToolCallStatus, ToolKind,
};
use agent_client_protocol::{Agent, Client, Error};
use serde_json::{Value, json};
use tokio::sync::mpsc;

const TIMEOUT: Duration = Duration::from_secs(60);

/// What the client saw, in order.
#[derive(Debug)]
enum Seen {
    Update(SessionId, SessionUpdate),
    Permission(RequestPermissionRequest),
}

/// How the client answers permission requests.
#[derive(Clone, Copy, Debug)]
enum Answer {
    Allow,
    Reject,
    AllowAlways,
    /// "Always allow" the first time, reject every later question.
    AlwaysThenReject,
}

/// The tables of a scripted model with a 100 000-token window, whose
/// responses are followed by `usage_update`s.
const WINDOWED: &str = "context_window = 100000\n[sessions]\npath = \"sessions.db\"\n";

/// A deployment in `dir`: scripted `answers`, one agent with `tools`, and
/// any extra `tables`.
fn deployment(dir: &Path, answers: &str, tables: &str, tools: &[&str]) -> String {
    std::fs::write(dir.join("answers.toml"), answers).expect("write answers");
    let path = dir.join("dsh.toml");
    // Sessions are recorded beside the deployment, never in the user's store.
    let tables = if tables.contains("[sessions]") {
        tables.to_owned()
    } else {
        format!("[sessions]\npath = \"sessions.db\"\n{tables}")
    };
    std::fs::write(
        &path,
        format!(
            "[adapter.scripted]\nanswers = \"answers.toml\"\nmodel = \"scripted\"\n{tables}\n\
             [[agents]]\nid = \"editor\"\ntools = {tools:?}\n\
             persona = \"You are an editor's agent on <<model>> in <<cwd>>.\"\n"
        ),
    )
    .expect("write deployment");
    path.display().to_string()
}

/// A deployment in a directory of its own (see [`deployment`]), a project
/// directory for sessions, and where the model requests are recorded.
struct Fixture {
    _dir: tempfile::TempDir,
    project: tempfile::TempDir,
    config: String,
    recorded: std::path::PathBuf,
}

fn fixture(answers: &str, tables: &str, tools: &[&str]) -> Fixture {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = deployment(dir.path(), answers, tables, tools);
    Fixture {
        recorded: dir.path().join("requests.jsonl"),
        project: tempfile::tempdir().expect("project dir"),
        config,
        _dir: dir,
    }
}

impl Fixture {
    /// Runs `op` as an initialized client of `dsh acp` on this
    /// deployment; permission requests get `answer`.
    async fn client<T>(
        &self,
        answer: Answer,
        op: impl AsyncFnOnce(
            ConnectionTo<Agent>,
            &mut mpsc::UnboundedReceiver<Seen>,
        ) -> Result<T, Error>,
    ) -> T {
        with_dsh(&self.config, &self.recorded, answer, async |cx, rx| {
            initialize(&cx).await?;
            op(cx, rx).await
        })
        .await
    }

    /// Runs `op` on a new session in the fixture's project, as a
    /// [`Fixture::client`] of `dsh acp`.
    async fn in_session<T>(
        &self,
        answer: Answer,
        op: impl AsyncFnOnce(
            ConnectionTo<Agent>,
            SessionId,
            &mut mpsc::UnboundedReceiver<Seen>,
        ) -> Result<T, Error>,
    ) -> T {
        self.client(answer, async |cx, rx| {
            let session = new_session(&cx, self.project.path()).await?;
            op(cx, session, rx).await
        })
        .await
    }
}

/// Runs `op` as a client of `dsh acp --config config`, recording the
/// model requests to `recorded`; permission requests get `answer`.
async fn with_dsh<T>(
    config: &str,
    recorded: &Path,
    answer: Answer,
    op: impl AsyncFnOnce(ConnectionTo<Agent>, &mut mpsc::UnboundedReceiver<Seen>) -> Result<T, Error>,
) -> T {
    with_agent(common::recording_acp_agent(config, recorded), answer, op).await
}

/// Runs `op` as a client of `agent`; permission requests get `answer`.
async fn with_agent<T>(
    agent: agent_client_protocol::AcpAgent,
    answer: Answer,
    op: impl AsyncFnOnce(ConnectionTo<Agent>, &mut mpsc::UnboundedReceiver<Seen>) -> Result<T, Error>,
) -> T {
    let (seen, mut rx) = mpsc::unbounded_channel();
    let permissions = seen.clone();
    let asked = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let run = Client
        .v1()
        .on_receive_notification(
            async move |notification: SessionNotification, _cx| {
                let _ = seen.send(Seen::Update(notification.session_id, notification.update));
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .on_receive_request(
            async move |request: RequestPermissionRequest, responder, _cx| {
                let before = asked.swap(true, std::sync::atomic::Ordering::Relaxed);
                let kind = match answer {
                    Answer::Allow => PermissionOptionKind::AllowOnce,
                    Answer::Reject => PermissionOptionKind::RejectOnce,
                    Answer::AllowAlways => PermissionOptionKind::AllowAlways,
                    Answer::AlwaysThenReject if before => PermissionOptionKind::RejectOnce,
                    Answer::AlwaysThenReject => PermissionOptionKind::AllowAlways,
                };
                let option = request
                    .options
                    .iter()
                    .find(|option| option.kind == kind)
                    .map(|option| option.option_id.clone())
                    .expect("dsh offers allow-once and reject-once");
                let _ = permissions.send(Seen::Permission(request));
                responder.respond(RequestPermissionResponse::new(
                    RequestPermissionOutcome::Selected(SelectedPermissionOutcome::new(option)),
                ))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .connect_with(agent, async |cx: ConnectionTo<Agent>| op(cx, &mut rx).await);
    tokio::time::timeout(TIMEOUT, run)
        .await
        .expect("the session finishes in time")
        .expect("the client side succeeds")
}

async fn initialize(cx: &ConnectionTo<Agent>) -> Result<InitializeResponse, Error> {
    cx.send_request(InitializeRequest::new(ProtocolVersion::V1))
        .block_task()
        .await
}

async fn new_session(cx: &ConnectionTo<Agent>, cwd: &Path) -> Result<SessionId, Error> {
    let response = cx
        .send_request(NewSessionRequest::new(cwd))
        .block_task()
        .await?;
    Ok(response.session_id)
}

/// Sends `text` as a prompt of `session`; its stop reason.
pub(crate) async fn prompt(
    cx: &ConnectionTo<Agent>,
    session: &SessionId,
    text: &str,
) -> Result<StopReason, Error> {
    let request = PromptRequest::new(session.clone(), vec![ContentBlock::from(text)]);
    Ok(cx.send_request(request).block_task().await?.stop_reason)
}

/// Asserts that `error` has the JSON-RPC `code` and a message that
/// `says` holds for.
#[track_caller]
fn assert_error(error: &Error, code: i32, says: impl Fn(&str) -> bool) {
    assert_eq!(i32::from(error.code), code, "{error:?}");
    assert!(says(&error.message), "{}", error.message);
}

/// Everything seen so far.
fn drain(rx: &mut mpsc::UnboundedReceiver<Seen>) -> Vec<Seen> {
    let mut seen = Vec::new();
    while let Ok(item) = rx.try_recv() {
        seen.push(item);
    }
    seen
}

/// Everything seen until the session's commands are announced (they
/// follow the answer to the request that opened it, so a drain right
/// after that answer may not hold them yet).
async fn until_commands(rx: &mut mpsc::UnboundedReceiver<Seen>) -> Vec<Seen> {
    let mut seen = Vec::new();
    while let Some(item) = rx.recv().await {
        let commands = matches!(
            &item,
            Seen::Update(_, SessionUpdate::AvailableCommandsUpdate(_))
        );
        seen.push(item);
        if commands {
            return seen;
        }
    }
    panic!("the connection ended before the commands were announced: {seen:?}");
}

/// Waits until a tool call of `session` is reported running.
async fn until_running(rx: &mut mpsc::UnboundedReceiver<Seen>) -> Vec<Seen> {
    let mut seen = Vec::new();
    while let Some(item) = rx.recv().await {
        let running = matches!(&item, Seen::Update(_, SessionUpdate::ToolCallUpdate(update))
            if update.fields.status == Some(ToolCallStatus::InProgress));
        seen.push(item);
        if running {
            return seen;
        }
    }
    panic!("the connection ended before a call ran: {seen:?}");
}

/// The updates as short lines, to compare their order; without the
/// commands announced once per session (`the_compact_command_...` sees
/// them) and the title a session gets once (`a_new_session_gets_...`
/// sees it).
fn outline(seen: &[Seen]) -> Vec<String> {
    seen.iter()
        .filter(|item| {
            !matches!(
                item,
                Seen::Update(
                    _,
                    SessionUpdate::AvailableCommandsUpdate(_) | SessionUpdate::SessionInfoUpdate(_)
                )
            )
        })
        .map(|item| match item {
            Seen::Permission(request) => format!(
                "permission {}",
                request.tool_call.fields.title.as_deref().unwrap_or("?")
            ),
            Seen::Update(_, update) => match update {
                SessionUpdate::AgentMessageChunk(chunk) => match &chunk.content {
                    ContentBlock::Text(text) => format!("text {}", text.text),
                    other => format!("content {other:?}"),
                },
                SessionUpdate::AgentThoughtChunk(chunk) => match &chunk.content {
                    ContentBlock::Text(text) => format!("thought {}", text.text),
                    other => format!("thought {other:?}"),
                },
                SessionUpdate::ToolCall(call) => format!(
                    "call {} {:?} {:?} {}",
                    call.title,
                    call.kind,
                    call.status,
                    call.raw_input.clone().unwrap_or_default()
                ),
                SessionUpdate::ToolCallUpdate(update) => {
                    let content = update
                        .fields
                        .content
                        .iter()
                        .flatten()
                        .map(|content| match content {
                            ToolCallContent::Content(content) => match &content.content {
                                ContentBlock::Text(text) => text.text.clone(),
                                other => format!("{other:?}"),
                            },
                            other => format!("{other:?}"),
                        })
                        .collect::<Vec<_>>()
                        .join("|");
                    format!("update {:?} {content}", update.fields.status)
                        .trim_end()
                        .to_owned()
                }
                SessionUpdate::Plan(plan) => format!(
                    "plan {}",
                    plan.entries
                        .iter()
                        .map(|entry| format!("{}={:?}", entry.content, entry.status))
                        .collect::<Vec<_>>()
                        .join(",")
                ),
                other => format!("other {other:?}"),
            },
        })
        .collect()
}

#[tokio::test]
async fn a_turn_streams_its_text_and_its_tool_call_in_order() {
    let Fixture {
        project,
        config,
        recorded,
        ..
    } = &fixture(
        "[[answers]]\ntext = \"Let me check.\"\n\
         [[answers.tool_calls]]\nname = \"bash\"\narguments = { command = \"echo checking; exit 3\" }\n\
         [[answers]]\ntext = \"It failed with exit code 3.\"\n",
        "",
        &["bash"],
    );
    let (init, session, stop, seen) = with_dsh(config, recorded, Answer::Allow, async |cx, rx| {
        let init = initialize(&cx).await?;
        let session = new_session(&cx, project.path()).await?;
        let stop = prompt(&cx, &session, "Run the check.").await?;
        Ok((init, session, stop, drain(rx)))
    })
    .await;

    let info = init.agent_info.expect("agent info");
    assert_eq!(info.name, "dsh");
    assert_eq!(info.version, env!("CARGO_PKG_VERSION"));
    assert!(
        init.agent_capabilities.load_session,
        "dsh loads the sessions its store recorded"
    );
    assert_eq!(stop, StopReason::EndTurn);
    assert_eq!(
        outline(&seen),
        [
            "text Let me check.",
            "call echo checking; exit 3 Execute Pending {\"command\":\"echo checking; exit 3\"}",
            "update Some(InProgress)",
            "update None checking",
            "update Some(Completed) checking\n[exit code: 3]",
            "text It failed with exit code 3.",
        ]
    );
    assert!(
        seen.iter()
            .all(|item| matches!(item, Seen::Update(id, _) if *id == session)),
        "every update is the session's"
    );
    // The marker reached the model, too.
    let requests = common::recorded_requests(recorded);
    assert_eq!(requests.len(), 2);
    let tool_result = &requests[1]["messages"][2];
    assert_eq!(tool_result["role"], "tool");
    assert_eq!(tool_result["text"], "checking\n[exit code: 3]");
}

#[tokio::test]
async fn two_sessions_of_one_process_each_render_their_own_cwd() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (one, two) = (
        tempfile::tempdir().expect("one"),
        tempfile::tempdir().expect("two"),
    );
    let config = deployment(
        dir.path(),
        "[[answers]]\ntext = \"one\"\n[[answers]]\ntext = \"two\"\n",
        "",
        &["bash"],
    );
    let recorded = dir.path().join("requests.jsonl");
    let ids = with_dsh(&config, &recorded, Answer::Allow, async |cx, _rx| {
        initialize(&cx).await?;
        let first = new_session(&cx, one.path()).await?;
        let second = new_session(&cx, two.path()).await?;
        prompt(&cx, &first, "hello").await?;
        prompt(&cx, &second, "hello").await?;
        Ok((first, second))
    })
    .await;

    assert_ne!(ids.0, ids.1);
    let systems = common::recorded_systems(&recorded);
    let expected = |cwd: &Path| {
        format!(
            "You are an editor's agent on scripted in {}.",
            cwd.display()
        )
    };
    assert!(
        systems[0].starts_with(&expected(one.path())),
        "{}",
        systems[0]
    );
    assert!(
        systems[1].starts_with(&expected(two.path())),
        "{}",
        systems[1]
    );
}

#[tokio::test]
async fn the_trace_has_a_line_per_request_of_every_session() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (one, two) = (
        tempfile::tempdir().expect("one"),
        tempfile::tempdir().expect("two"),
    );
    let answers = "[[answers]]\n[[answers.tool_calls]]\nname = \"bash\"\n\
                   arguments = { command = \"echo hi\" }\n\
                   [[answers]]\ntext = \"done\"\n[[answers]]\ntext = \"two\"\n";
    let config = deployment(dir.path(), answers, "", &["bash"]);
    let trace = dir.path().join("trace.jsonl");
    let agent = common::acp_agent(&[
        "acp",
        "--config",
        &config,
        "--trace",
        &trace.display().to_string(),
    ]);
    let ids = with_agent(agent, Answer::Allow, async |cx, _rx| {
        initialize(&cx).await?;
        let first = new_session(&cx, one.path()).await?;
        let second = new_session(&cx, two.path()).await?;
        prompt(&cx, &first, "run it").await?;
        prompt(&cx, &second, "hello").await?;
        Ok((first, second))
    })
    .await;

    let lines = common::json_lines(&trace);
    let seen: Vec<(String, u64, u64)> = lines
        .iter()
        .map(|line| {
            (
                line["session"].as_str().expect("a session").to_owned(),
                line["request"].as_u64().expect("a number"),
                line["step"].as_u64().expect("a step"),
            )
        })
        .collect();
    let (first, second) = (ids.0.0.to_string(), ids.1.0.to_string());
    assert_eq!(
        seen,
        [(first.clone(), 1, 1), (first, 2, 2), (second, 3, 1)],
        "{lines:#?}"
    );
    // The second step of a session sends what the first did, and more.
    assert!(
        lines[1]["shared_prefix_bytes"].as_u64() > Some(0),
        "{lines:#?}"
    );
    assert_eq!(lines[0]["tokenizer"], "o200k_base");
}

#[tokio::test]
async fn cancelling_a_running_turn_answers_cancelled_and_the_session_goes_on() {
    let fixture = &fixture(
        "[[answers]]\n[[answers.tool_calls]]\nname = \"bash\"\narguments = { command = \"sleep 30\" }\n\
         [[answers]]\ntext = \"still here\"\n",
        "",
        &["bash"],
    );
    let started = std::time::Instant::now();
    let (stop, before, after, next) = fixture
        .in_session(Answer::Allow, async |cx, session, rx| {
            let request = PromptRequest::new(session.clone(), vec![ContentBlock::from("wait")]);
            let turn = cx.send_request(request).block_task();
            let cancel = async {
                let before = until_running(rx).await;
                cx.send_notification(CancelNotification::new(session.clone()))?;
                Ok::<_, Error>(before)
            };
            let (stop, before) = tokio::join!(turn, cancel);
            let (stop, before) = (stop?.stop_reason, before?);
            let after = drain(rx);
            let next = prompt(&cx, &session, "are you there?").await?;
            Ok((stop, before, after, next))
        })
        .await;

    assert_eq!(stop, StopReason::Cancelled);
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "the sleep was not waited for"
    );
    assert_eq!(
        outline(&before).last().map(String::as_str),
        Some("update Some(InProgress)")
    );
    assert_eq!(
        outline(&after),
        ["update Some(Failed) not finished: the turn was cancelled"],
        "the call ends failed before the answer"
    );
    assert_eq!(
        next,
        StopReason::EndTurn,
        "the session serves the next turn"
    );
}

#[tokio::test]
async fn bad_requests_get_errors_and_the_session_stays_usable() {
    let fixture = &fixture(
        "[[answers]]\n[[answers.tool_calls]]\nname = \"bash\"\narguments = { command = \"sleep 2\" }\n\
         [[answers]]\ntext = \"done\"\n",
        "",
        &["bash"],
    );
    let errors = fixture
        .client(Answer::Allow, async |cx, rx| {
            let relative = cx
                .send_request(NewSessionRequest::new("relative/dir"))
                .block_task()
                .await
                .expect_err("a relative cwd");
            let unknown = prompt(&cx, &SessionId::new("no-such-session"), "hi")
                .await
                .expect_err("an unknown session");
            let session = new_session(&cx, fixture.project.path()).await?;
            let turn = prompt(&cx, &session, "first");
            let second = async {
                until_running(rx).await;
                prompt(&cx, &session, "second").await
            };
            let (first, busy) = tokio::join!(turn, second);
            let busy = busy.expect_err("a prompt while a turn runs");
            // The script is used up: the model fails, the turn errs, and the
            // session still answers.
            let exhausted = prompt(&cx, &session, "third")
                .await
                .expect_err("no answers left");
            let again = prompt(&cx, &session, "fourth")
                .await
                .expect_err("still none");
            Ok((relative, unknown, first?, busy, exhausted, again))
        })
        .await;
    let (relative, unknown, first, busy, exhausted, again) = errors;

    assert_error(&relative, -32602, |message| {
        message == "`cwd`: the working directory must be an absolute path, got `relative/dir`"
    });
    assert_error(&unknown, -32002, |_| true);
    assert_eq!(first, StopReason::EndTurn);
    assert_error(&busy, -32600, |message| {
        message.contains("already running a turn")
    });
    // The one line `dsh run` prints.
    assert_error(&exhausted, -32603, |message| {
        message.starts_with("step 1: the script has no answer left for request 3")
    });
    assert_error(&again, -32603, |message| {
        message.starts_with("step 1: the script has no answer left for request 4")
    });
}

#[tokio::test]
async fn a_tool_that_asks_first_runs_only_when_the_user_allows_it() {
    for (answer, result) in [
        (Answer::Allow, "update Some(Completed) hi"),
        (
            Answer::Reject,
            "update Some(Failed) not run: the user declined to run `bash`",
        ),
    ] {
        let dir = tempfile::tempdir().expect("tempdir");
        let project = tempfile::tempdir().expect("project dir");
        let config = deployment(
            dir.path(),
            "[[answers]]\n[[answers.tool_calls]]\nname = \"bash\"\narguments = { command = \"echo hi\" }\n\
             [[answers]]\ntext = \"ok\"\n",
            "[tools.bash]\npermission = \"ask\"\n",
            &["bash"],
        );
        let recorded = dir.path().join("requests.jsonl");
        let (stop, seen) = with_dsh(&config, &recorded, answer, async |cx, rx| {
            initialize(&cx).await?;
            let session = new_session(&cx, project.path()).await?;
            let stop = prompt(&cx, &session, "say hi").await?;
            Ok((stop, drain(rx)))
        })
        .await;
        assert_eq!(
            stop,
            StopReason::EndTurn,
            "a refusal does not fail the turn"
        );
        let outline = outline(&seen);
        let expected: Vec<&str> = match answer {
            Answer::AllowAlways | Answer::AlwaysThenReject => {
                unreachable!("not among the answers tried")
            }
            Answer::Allow => vec![
                "call echo hi Execute Pending {\"command\":\"echo hi\"}",
                "permission echo hi",
                "update Some(InProgress)",
                "update None hi",
                result,
                "text ok",
            ],
            Answer::Reject => vec![
                "call echo hi Execute Pending {\"command\":\"echo hi\"}",
                "permission echo hi",
                result,
                "text ok",
            ],
        };
        assert_eq!(outline, expected, "{answer:?}");
    }
}

#[tokio::test]
async fn the_todo_list_is_the_sessions_plan() {
    let fixture = &fixture(
        "[[answers]]\n[[answers.tool_calls]]\nname = \"todo_write\"\n\
         arguments = { todos = [{ content = \"Read the code\", status = \"in_progress\" }, \
         { content = \"Fix the bug\", status = \"pending\" }] }\n\
         [[answers]]\ntext = \"planned\"\n",
        "",
        &["todo_write"],
    );
    let seen = fixture
        .in_session(Answer::Allow, async |cx, session, rx| {
            prompt(&cx, &session, "plan it").await?;
            Ok(drain(rx))
        })
        .await;
    let plans: Vec<String> = outline(&seen)
        .into_iter()
        .filter(|line| line.starts_with("plan"))
        .collect();
    assert_eq!(plans, ["plan Read the code=InProgress,Fix the bug=Pending"]);
    let call = seen.iter().find_map(|item| match item {
        Seen::Update(_, SessionUpdate::ToolCall(call)) => Some(call),
        _ => None,
    });
    assert_eq!(call.map(|call| call.kind), Some(ToolKind::Think));
}

/// What no client library sends: malformed JSON and unknown methods get
/// errors, stdout carries only protocol lines, and closing stdin ends the
/// process with status 0.
#[test]
fn raw_bad_input_gets_errors_and_closing_stdin_exits_cleanly() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = deployment(dir.path(), "answers = []\n", "", &["bash"]);
    let mut child = common::spawn(&["acp", "--config", &config]);
    let mut stdin = child.stdin.take().expect("stdin");
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let mut next = || -> Value {
        let line = lines.next().expect("a line").expect("readable");
        serde_json::from_str(&line).unwrap_or_else(|_| panic!("not JSON on stdout: {line}"))
    };
    let request = |id: u32, method: &str, params: Value| {
        json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string()
    };

    send(
        &mut stdin,
        &request(0, "initialize", json!({"protocolVersion": 1})),
    );
    assert_eq!(next()["result"]["protocolVersion"], 1);
    send(&mut stdin, "this is not json");
    let parse = next();
    assert_eq!(parse["error"]["code"], -32700);
    assert_eq!(parse["id"], Value::Null);
    send(&mut stdin, &request(7, "no/such/method", json!({})));
    let unknown = next();
    assert_eq!(unknown["id"], 7);
    assert_eq!(unknown["error"]["code"], -32601);
    send(
        &mut stdin,
        &request(8, "session/new", json!({"mcpServers": []})),
    );
    let missing = next();
    assert_eq!(missing["error"]["code"], -32602, "{missing}");
    assert!(
        missing.to_string().contains("cwd"),
        "the error names the field: {missing}"
    );

    drop(stdin);
    assert!(lines.next().is_none(), "nothing more on stdout");
    let output = child.wait_with_output().expect("dsh acp ends");
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

fn send(stdin: &mut std::process::ChildStdin, line: &str) {
    writeln!(stdin, "{line}").expect("write a line");
    stdin.flush().expect("flush");
}

/// A parent (`dsh run`) whose `helper` tool is an `acp` instance running
/// `dsh acp` on a child deployment.
fn parent_with_acp_child(dir: &Path, command: &[&str], parent_answers: &str) -> String {
    let instance =
        format!("[tools.helper]\nkind = \"subagent\"\nprovider = \"acp\"\ncommand = {command:?}\n");
    deployment(dir, parent_answers, &instance, &["helper"])
}

#[test]
fn the_acp_provider_runs_dsh_acp_as_a_child_in_the_callers_cwd() {
    let parent = tempfile::tempdir().expect("parent dir");
    let child = tempfile::tempdir().expect("child dir");
    let project = tempfile::tempdir().expect("project dir");
    let child_config = deployment(
        child.path(),
        "[[answers]]\ntext = \"Looking.\"\n\
         [[answers.tool_calls]]\nname = \"bash\"\narguments = { command = \"echo 4\" }\n\
         [[answers]]\ntext = \"The answer is 4.\"\n",
        "",
        &["bash"],
    );
    let child_requests = child.path().join("requests.jsonl");
    let child_recorded = child_requests.display().to_string();
    let command = [
        env!("CARGO_BIN_EXE_dsh"),
        "acp",
        "--config",
        &child_config,
        "--record-requests",
        &child_recorded,
    ];
    let config = parent_with_acp_child(
        parent.path(),
        &command,
        "[[answers]]\n[[answers.tool_calls]]\nname = \"helper\"\n\
         arguments = { prompt = \"What is 2 + 2? Use bash.\" }\n\
         [[answers]]\ntext = \"The child says 4.\"\n",
    );
    let (stdout, parent_requests) = common::run_prompt(
        parent.path(),
        &config,
        Some(project.path()),
        "ask the helper",
    );
    assert_eq!(stdout, "The child says 4.\n");

    let result = &parent_requests[1]["messages"][2];
    assert_eq!(result["role"], "tool");
    assert_eq!(result["is_error"], false);
    assert_eq!(
        result["text"], "The answer is 4.",
        "the child's final message"
    );
    let description = parent_requests[0]["tools"][0]["description"]
        .as_str()
        .expect("the helper's description");
    assert!(
        description.contains("does not see this conversation"),
        "a fresh child, derived from the provider: {description}"
    );

    let child_requests = common::recorded_requests(&child_requests);
    assert_eq!(child_requests.len(), 2);
    let system = child_requests[0]["system"]
        .as_str()
        .expect("a system prompt");
    assert!(
        system.contains(&format!("in {}.", project.path().display())),
        "the child works in the caller's cwd: {system}"
    );
    assert_eq!(
        child_requests[0]["messages"][0]["text"],
        "What is 2 + 2? Use bash."
    );
}

#[test]
fn a_child_that_cannot_start_is_a_failed_call_and_the_turn_goes_on() {
    let parent = tempfile::tempdir().expect("parent dir");
    let config = parent_with_acp_child(
        parent.path(),
        &["/nonexistent/agent", "--flag"],
        "[[answers]]\n[[answers.tool_calls]]\nname = \"helper\"\narguments = { prompt = \"hi\" }\n\
         [[answers]]\ntext = \"It did not start.\"\n",
    );
    let (_, requests) = common::run_prompt(parent.path(), &config, None, "ask the helper");
    let result = &requests[1]["messages"][2];
    assert_eq!(result["is_error"], true);
    let text = result["text"].as_str().expect("text");
    assert!(
        text.contains("`/nonexistent/agent --flag`"),
        "the failure names the command: {text}"
    );
}

/// Whether process `pid` still exists.
/// Whether a process whose command line is `sleep <seconds>` runs: a
/// sandboxed command's own pid is its namespace's, not the host's, so it
/// is found by what it runs.
fn sleeping(seconds: &str) -> bool {
    let cmdline = format!("sleep\0{seconds}\0");
    std::fs::read_dir("/proc")
        .expect("/proc")
        .filter_map(|entry| entry.ok())
        .filter(|entry| {
            entry
                .file_name()
                .to_str()
                .is_some_and(|name| name.parse::<u32>().is_ok())
        })
        .any(|entry| {
            std::fs::read(entry.path().join("cmdline")).is_ok_and(|line| line == cmdline.as_bytes())
        })
}

#[tokio::test]
async fn cancelling_the_parent_cancels_the_acp_child_and_stops_its_process() {
    let parent = tempfile::tempdir().expect("parent dir");
    let child = tempfile::tempdir().expect("child dir");
    let project = tempfile::tempdir().expect("project dir");
    let pid_file = child.path().join("pid");
    let child_config = deployment(
        child.path(),
        &format!(
            "[[answers]]\n[[answers.tool_calls]]\nname = \"bash\"\n\
             arguments = {{ command = \"echo started > {}; sleep 30.4375\" }}\n",
            pid_file.display()
        ),
        "",
        &["bash"],
    );
    let config = parent_with_acp_child(
        parent.path(),
        &[env!("CARGO_BIN_EXE_dsh"), "acp", "--config", &child_config],
        "[[answers]]\n[[answers.tool_calls]]\nname = \"helper\"\narguments = { prompt = \"wait\" }\n",
    );
    let recorded = parent.path().join("requests.jsonl");
    let started = std::time::Instant::now();
    let (stop, seen) = with_dsh(&config, &recorded, Answer::Allow, async |cx, rx| {
        initialize(&cx).await?;
        let session = new_session(&cx, project.path()).await?;
        let request = PromptRequest::new(session.clone(), vec![ContentBlock::from("go")]);
        let turn = cx.send_request(request).block_task();
        let cancel = async {
            let mut seen = until_running(rx).await;
            // The child's own call shows as the helper's progress.
            while let Some(item) = rx.recv().await {
                let progress = matches!(&item, Seen::Update(_, SessionUpdate::ToolCallUpdate(update))
                    if update.fields.status.is_none() && update.fields.content.is_some());
                seen.push(item);
                if progress {
                    break;
                }
            }
            while !pid_file.exists() {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            cx.send_notification(CancelNotification::new(session.clone()))?;
            Ok::<_, Error>(seen)
        };
        let (stop, seen) = tokio::join!(turn, cancel);
        Ok((stop?.stop_reason, seen?))
    })
    .await;

    assert_eq!(stop, StopReason::Cancelled);
    assert!(started.elapsed() < Duration::from_secs(20));
    assert!(
        outline(&seen)
            .iter()
            .any(|line| line.starts_with("update None → echo")),
        "the child's call is the helper's progress: {:?}",
        outline(&seen)
    );
    assert!(pid_file.exists(), "the child's shell ran");
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while sleeping("30.4375") && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(!sleeping("30.4375"), "the child's command was stopped");
}

#[test]
fn dsh_run_cannot_ask_so_it_refuses_a_tool_that_asks_first() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = deployment(
        dir.path(),
        "[[answers]]\n[[answers.tool_calls]]\nname = \"bash\"\narguments = { command = \"echo hi\" }\n\
         [[answers]]\ntext = \"refused\"\n",
        "[tools.bash]\npermission = \"ask\"\n",
        &["bash"],
    );
    let (_, requests) = common::run_prompt(dir.path(), &config, None, "say hi");
    let result = &requests[1]["messages"][2];
    assert_eq!(result["is_error"], true);
    assert_eq!(
        result["text"],
        "not run: `bash` runs only with the user's permission, and `dsh run` cannot ask for \
         it: its input is not a terminal. Run it at a terminal, or from an editor with \
         `dsh acp`, or set `[tools.bash] permission = \"allow\"` to run it unasked"
    );
}

/// `--mode` decides which calls ask in `dsh run` too: in `full-access`
/// the tool that asks by the deployment's policy runs unasked; in `ask`
/// a tool with side effects that the policy lets run asks (and, with no
/// terminal, is refused).
#[test]
fn dsh_runs_mode_decides_which_calls_ask() {
    let dir = tempfile::tempdir().expect("tempdir");
    let answers = "[[answers]]\n[[answers.tool_calls]]\nname = \"bash\"\n\
                   arguments = { command = \"echo hi\" }\n[[answers]]\ntext = \"done\"\n";
    let asks = deployment(
        dir.path(),
        answers,
        "[tools.bash]\npermission = \"ask\"\n",
        &["bash"],
    );
    let args = ["-p", "say hi", "--mode", "full-access"];
    let tool_result = |request: &serde_json::Value| {
        (request["messages"].as_array().into_iter().flatten())
            .find(|message| message["role"] == "tool")
            .cloned()
            .expect("the call's result")
    };
    let (_, requests) = common::run_recorded(dir.path(), &asks, &args);
    let result = &tool_result(&requests[1]);
    assert_eq!(result["is_error"], false, "{result}");
    assert!(
        result["text"]
            .as_str()
            .is_some_and(|text| text.contains("hi")),
        "{result}"
    );

    let other = tempfile::tempdir().expect("tempdir");
    let runs = deployment(other.path(), answers, "", &["bash"]);
    let args = ["-p", "say hi", "--mode", "ask"];
    let (_, requests) = common::run_recorded(other.path(), &runs, &args);
    let result = &tool_result(&requests[1]);
    assert_eq!(result["is_error"], true, "{result}");
    assert!(
        result["text"]
            .as_str()
            .is_some_and(|text| text.contains("cannot ask for it")),
        "{result}"
    );
}

#[tokio::test]
async fn the_compact_command_is_announced_and_compacts_the_session() {
    let fixture = &fixture(
        "[[answers]]\ntext = \"one\"\n\
         [[answers]]\ntext = \"SUMMARY of one\"\n\
         [[answers]]\ntext = \"two\"\n",
        "",
        &["bash"],
    );
    let (stops, seen) = fixture
        .in_session(Answer::Allow, async |cx, session, rx| {
            let mut stops = Vec::new();
            for text in ["first", "/compact", "/compact", "second"] {
                stops.push(prompt(&cx, &session, text).await?);
            }
            Ok((stops, drain(rx)))
        })
        .await;
    assert_eq!(stops, [StopReason::EndTurn; 4]);
    let commands: Vec<String> = seen
        .iter()
        .filter_map(|item| match item {
            Seen::Update(_, SessionUpdate::AvailableCommandsUpdate(update)) => Some(
                update
                    .available_commands
                    .iter()
                    .map(|command| command.name.clone())
                    .collect::<Vec<_>>()
                    .join(","),
            ),
            _ => None,
        })
        .collect();
    assert_eq!(
        commands,
        ["compact,mode,model"],
        "announced once, after session/new"
    );
    let lines = outline(&seen);
    assert_eq!(lines.len(), 4, "{lines:#?}");
    assert_eq!(lines[0], "text one");
    assert!(
        lines[1].starts_with("text [compacted the conversation: ")
            && lines[1].ends_with("(earlier turns summarized, on request)]\n\n"),
        "{lines:#?}"
    );
    // Nothing new since the first: nothing to compact, nothing asked.
    assert_eq!(lines[2], "text [nothing to compact]\n\n");
    assert_eq!(lines[3], "text two");
    let requests = common::recorded_requests(&fixture.recorded);
    assert_eq!(requests.len(), 3);
    assert_eq!(
        requests[1]["system"].as_str(),
        Some(dsh_agent_loop::compaction::COMPACTION_INSTRUCTION)
    );
    assert_eq!(requests[2]["messages"][1]["text"], "second");
}

/// The config option of `category` in `options`, and its current value.
fn option_of(
    options: &[agent_client_protocol::v1::schema::SessionConfigOption],
    category: agent_client_protocol::v1::schema::SessionConfigOptionCategory,
) -> (String, String) {
    use agent_client_protocol::v1::schema::SessionConfigKind;
    let option = options
        .iter()
        .find(|option| option.category.as_ref() == Some(&category))
        .unwrap_or_else(|| panic!("an option of category {category:?}: {options:?}"));
    let SessionConfigKind::Select(select) = &option.kind else {
        panic!("a select: {option:?}");
    };
    (option.id.0.to_string(), select.current_value.0.to_string())
}

#[tokio::test]
async fn the_editor_picks_the_model_and_the_next_request_runs_on_it() {
    use agent_client_protocol::v1::schema::{
        SessionConfigOptionCategory as Category, SetSessionConfigOptionRequest,
    };
    let fixture = fixture(
        "[[answers]]\ntext = \"one\"\n",
        "models = [\"scripted\", \"scripted-large\"]\n[sessions]\npath = \"sessions.db\"\n",
        &["read"],
    );
    let (options, set, seen) = fixture
        .client(Answer::Allow, async |cx, rx| {
            let response = cx
                .send_request(NewSessionRequest::new(fixture.project.path()))
                .block_task()
                .await?;
            let session = response.session_id.clone();
            let options = response.config_options.clone().unwrap_or_default();
            let (model_option, _) = option_of(&options, Category::Model);
            let set = cx
                .send_request(SetSessionConfigOptionRequest::new(
                    session.clone(),
                    model_option,
                    "scripted-large",
                ))
                .block_task()
                .await?;
            prompt(&cx, &session, "hello").await?;
            Ok((options, set.config_options, drain(rx)))
        })
        .await;
    assert_eq!(
        option_of(&options, Category::Mode),
        ("mode".to_owned(), "auto".to_owned())
    );
    assert_eq!(option_of(&options, Category::Model).1, "scripted");
    assert_eq!(option_of(&set, Category::Model).1, "scripted-large");
    assert!(
        seen.iter()
            .any(|item| matches!(item, Seen::Update(_, SessionUpdate::ConfigOptionUpdate(_)))),
        "the change is announced: {seen:?}"
    );
    let requests = common::recorded_requests(&fixture.recorded);
    assert_eq!(requests[0]["model"], "scripted-large");
    assert!(
        requests[0]["system"]
            .as_str()
            .is_some_and(|system| system.contains("on scripted-large in")),
        "{}",
        requests[0]["system"]
    );
}

#[tokio::test]
async fn read_only_mode_refuses_a_write_and_the_disk_is_untouched() {
    use agent_client_protocol::v1::schema::SetSessionModeRequest;
    let fixture = fixture(
        "[[answers]]\n[[answers.tool_calls]]\nname = \"write\"\n\
         arguments = { file_path = \"new.txt\", content = \"x\" }\n\
         [[answers]]\ntext = \"done\"\n",
        "",
        &["write"],
    );
    let seen = fixture
        .in_session(Answer::Allow, async |cx, session, rx| {
            cx.send_request(SetSessionModeRequest::new(session.clone(), "read-only"))
                .block_task()
                .await?;
            prompt(&cx, &session, "write it").await?;
            Ok(drain(rx))
        })
        .await;
    assert!(!fixture.project.path().join("new.txt").exists());
    assert!(
        seen.iter().any(|item| matches!(
            item,
            Seen::Update(_, SessionUpdate::CurrentModeUpdate(update))
                if &*update.current_mode_id.0 == "read-only"
        )),
        "{seen:?}"
    );
    let requests = common::recorded_requests(&fixture.recorded);
    let last = requests.last().expect("a request").to_string();
    assert!(last.contains("sandbox is `read-only`"), "{last}");
    // The mode reaches the model at the tail, the system prompt unchanged.
    assert!(
        last.contains("switched this session to the mode `read-only`"),
        "{last}"
    );
    assert_eq!(requests[0]["system"], requests[1]["system"]);
}

#[tokio::test]
async fn allow_always_lets_the_same_command_run_unasked_for_the_session() {
    let call = "[[answers]]\n[[answers.tool_calls]]\nname = \"bash\"\n\
                arguments = { command = \"echo hi\" }\n";
    let fixture = fixture(
        &format!("{call}{call}[[answers]]\ntext = \"ok\"\n"),
        "[tools.bash]\npermission = \"ask\"\n",
        &["bash"],
    );
    let seen = fixture
        .in_session(Answer::AllowAlways, async |cx, session, rx| {
            prompt(&cx, &session, "twice").await?;
            Ok(drain(rx))
        })
        .await;
    let asked: Vec<&RequestPermissionRequest> = seen
        .iter()
        .filter_map(|item| match item {
            Seen::Permission(request) => Some(request),
            Seen::Update(..) => None,
        })
        .collect();
    assert_eq!(asked.len(), 1, "asked once: {seen:#?}");
    let names: Vec<&str> = asked[0]
        .options
        .iter()
        .map(|option| option.name.as_str())
        .collect();
    assert!(
        names.contains(&"Always allow `echo` (any arguments)"),
        "{names:?}"
    );
    let results = outline(&seen)
        .into_iter()
        .filter(|line| line.starts_with("update Some(Completed)"))
        .count();
    assert_eq!(results, 2, "both ran: {:#?}", outline(&seen));
}

/// "Always allow" on `ls -la` covers `ls` with any arguments, and no
/// command that chains something else onto it: each of these asks again.
#[tokio::test]
async fn allow_always_on_a_command_does_not_cover_what_is_chained_onto_it() {
    let chained = [
        "ls && touch P",
        "ls || touch P",
        "ls & touch P",
        "ls | sh -c 'touch P'",
        "ls $(touch P)",
        "ls `touch P`",
        "ls -la; touch P",
        "ls x; touch P",
        "ls -la\ntouch P",
        "ls > P",
        "  ls && touch P",
    ];
    let call = |command: &str| {
        let arguments = serde_json::json!({ "command": command }).to_string();
        format!("[[answers]]\n[[answers.tool_calls]]\nname = \"bash\"\narguments = {arguments:?}\n")
    };
    let mut answers = call("ls -la") + &call("ls src");
    for command in chained {
        answers.push_str(&call(command));
    }
    answers.push_str("[[answers]]\ntext = \"ok\"\n");
    let fixture = fixture(&answers, "[tools.bash]\npermission = \"ask\"\n", &["bash"]);
    let seen = fixture
        .in_session(Answer::AlwaysThenReject, async |cx, session, rx| {
            prompt(&cx, &session, "go").await?;
            Ok(drain(rx))
        })
        .await;
    let asked: Vec<String> = seen
        .iter()
        .filter_map(|item| match item {
            Seen::Permission(request) => request.tool_call.fields.raw_input.as_ref(),
            Seen::Update(..) => None,
        })
        .map(|input| input["command"].as_str().unwrap_or_default().to_owned())
        .collect();
    let mut expected = vec!["ls -la".to_owned()];
    expected.extend(chained.iter().map(|command| (*command).to_owned()));
    assert_eq!(
        asked, expected,
        "`ls src` ran unasked; every chain asked again"
    );
    let first = seen.iter().find_map(|item| match item {
        Seen::Permission(request) => Some(request),
        Seen::Update(..) => None,
    });
    let names: Vec<&str> = (first.expect("asked").options.iter())
        .map(|option| option.name.as_str())
        .collect();
    assert!(
        names.contains(&"Always allow `ls` (any arguments)"),
        "{names:?}"
    );
}

#[tokio::test]
async fn embedded_resources_and_links_to_project_files_reach_the_model_inline() {
    use agent_client_protocol::v1::schema::{
        EmbeddedResource, EmbeddedResourceResource, ResourceLink, TextResourceContents,
    };
    let fixture = fixture("[[answers]]\ntext = \"seen\"\n", "", &["read"]);
    std::fs::write(
        fixture.project.path().join("notes.md"),
        "Use tabs, not spaces.\n",
    )
    .expect("a project file");
    let outside = tempfile::tempdir().expect("outside");
    std::fs::write(outside.path().join("secret.txt"), "not for the model").expect("a file");
    let capabilities = fixture
        .in_session(Answer::Allow, async |cx, session, _rx| {
            let project_file = format!(
                "file://{}",
                fixture.project.path().join("notes.md").display()
            );
            let outside_file = format!("file://{}", outside.path().join("secret.txt").display());
            let blocks = vec![
                ContentBlock::from("Read these."),
                ContentBlock::Resource(EmbeddedResource::new(
                    EmbeddedResourceResource::TextResourceContents(TextResourceContents::new(
                        "The editor's buffer.",
                        "file:///buffer.rs",
                    )),
                )),
                ContentBlock::ResourceLink(ResourceLink::new("notes.md", project_file)),
                ContentBlock::ResourceLink(ResourceLink::new("secret.txt", outside_file)),
            ];
            cx.send_request(PromptRequest::new(session.clone(), blocks))
                .block_task()
                .await?;
            Ok(initialize(&cx)
                .await?
                .agent_capabilities
                .prompt_capabilities)
        })
        .await;
    assert!(capabilities.embedded_context, "{capabilities:?}");
    let requests = common::recorded_requests(&fixture.recorded);
    let user = requests[0]["messages"]
        .as_array()
        .and_then(|messages| messages.iter().find(|m| m["role"] == "user"))
        .map(|message| message.to_string())
        .expect("the user's message");
    assert!(
        user.contains(
            "<context ref=\\\"file:///buffer.rs\\\">\\nThe editor's buffer.\\n</context>"
        ),
        "{user}"
    );
    assert!(user.contains("Use tabs, not spaces."), "{user}");
    assert!(!user.contains("not for the model"), "{user}");
    assert!(user.contains("[secret.txt](file://"), "{user}");
}

/// The requests an OpenAI-compatible server on 127.0.0.1 received; it
/// answers each with one short text.
type Received = std::sync::Arc<std::sync::Mutex<Vec<Value>>>;

async fn answer_briefly(
    axum::extract::State(received): axum::extract::State<Received>,
    axum::Json(request): axum::Json<Value>,
) -> axum::Json<Value> {
    received.lock().expect("received").push(request);
    axum::Json(json!({
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "choices": [{
            "index": 0,
            "message": { "role": "assistant", "content": "A red square." },
            "finish_reason": "stop",
        }],
    }))
}

#[tokio::test]
async fn an_image_prompt_reaches_an_openai_compatible_server_as_an_image_part() {
    use agent_client_protocol::v1::schema::ImageContent;
    let received = Received::default();
    let app = axum::Router::new()
        .route("/v1/chat/completions", axum::routing::post(answer_briefly))
        .with_state(received.clone());
    let base_url = common::serve(app);
    let dir = tempfile::tempdir().expect("tempdir");
    let project = tempfile::tempdir().expect("project");
    let config = common::config(
        dir.path(),
        &format!(
            "[adapter.openai]\nbase_url = {base_url:?}\nmodel = \"local\"\n\
             [sessions]\nenabled = false\n\
             [[agents]]\nid = \"viewer\"\npersona = \"You look at images.\"\n"
        ),
    );
    let png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGP4z8DwHwAFAAH/iZk9HQAAAABJRU5ErkJggg==";
    let recorded = dir.path().join("requests.jsonl");
    let (capability, refused) = with_dsh(&config, &recorded, Answer::Allow, async |cx, _rx| {
        let init = initialize(&cx).await?;
        let session = new_session(&cx, project.path()).await?;
        let blocks = vec![
            ContentBlock::from("What is this?"),
            ContentBlock::Image(ImageContent::new(png, "image/png")),
        ];
        cx.send_request(PromptRequest::new(session.clone(), blocks))
            .block_task()
            .await?;
        let tiff = vec![ContentBlock::Image(ImageContent::new(png, "image/tiff"))];
        let refused = cx
            .send_request(PromptRequest::new(session.clone(), tiff))
            .block_task()
            .await
            .expect_err("a type the APIs refuse");
        // A JPEG's first bytes, labelled PNG.
        let jpeg = vec![
            ContentBlock::from("And this?"),
            ContentBlock::Image(ImageContent::new("/9j/4AAQ", "image/png")),
        ];
        let mislabelled = cx
            .send_request(PromptRequest::new(session, jpeg))
            .block_task()
            .await
            .expect_err("an image not of its type");
        Ok((
            init.agent_capabilities.prompt_capabilities.image,
            [refused, mislabelled],
        ))
    })
    .await;
    assert!(capability, "images are advertised");
    let [refused, mislabelled] = refused;
    assert_error(&refused, -32602, |message| {
        message.contains("`prompt[0]` is an image of type `image/tiff`")
    });
    assert_error(&mislabelled, -32602, |message| {
        message.contains(
            "`prompt[1]` is an image of type `image/png` dsh cannot send: \
             its bytes are not of the type it declares",
        )
    });
    let received = received.lock().expect("received");
    assert_eq!(received.len(), 1, "the refused prompt sent nothing");
    let messages = received[0]["messages"].as_array().expect("messages");
    let image = messages
        .iter()
        .find(|message| message["role"] == "user" && message["content"].is_array())
        .expect("a user message of parts");
    assert_eq!(
        image["content"][0],
        json!({ "type": "image_url", "image_url": { "url": format!("data:image/png;base64,{png}") } })
    );
    assert!(
        messages
            .iter()
            .any(|message| message["role"] == "user" && message["content"] == "What is this?"),
        "{messages:?}"
    );
}

#[tokio::test]
async fn the_effort_picked_is_the_requests_reasoning_effort() {
    use agent_client_protocol::v1::schema::{
        SessionConfigOptionCategory as Category, SetSessionConfigOptionRequest,
    };
    let received = Received::default();
    let app = axum::Router::new()
        .route("/v1/chat/completions", axum::routing::post(answer_briefly))
        .with_state(received.clone());
    let base_url = common::serve(app);
    let dir = tempfile::tempdir().expect("tempdir");
    let project = tempfile::tempdir().expect("project");
    let config = common::config(
        dir.path(),
        &format!(
            "[adapter.openai]\nbase_url = {base_url:?}\nmodel = \"local\"\n\
             efforts = [\"low\", \"high\"]\n[sessions]\nenabled = false\n\
             [[agents]]\nid = \"thinker\"\npersona = \"You think.\"\n"
        ),
    );
    let recorded = dir.path().join("requests.jsonl");
    let options = with_dsh(&config, &recorded, Answer::Allow, async |cx, _rx| {
        initialize(&cx).await?;
        let response = cx
            .send_request(NewSessionRequest::new(project.path()))
            .block_task()
            .await?;
        let session = response.session_id;
        prompt(&cx, &session, "one").await?;
        let set = SetSessionConfigOptionRequest::new(session.clone(), "effort", "high");
        let options = cx.send_request(set).block_task().await?.config_options;
        prompt(&cx, &session, "two").await?;
        Ok(options)
    })
    .await;
    assert_eq!(
        option_of(&options, Category::ThoughtLevel),
        ("effort".to_owned(), "high".to_owned())
    );
    let received = received.lock().expect("received");
    assert_eq!(
        received[0]["reasoning_effort"], "low",
        "the first is the default"
    );
    assert_eq!(received[1]["reasoning_effort"], "high");
}

#[tokio::test]
async fn the_deployments_sandbox_is_the_ceiling_of_the_editors_mode_switch() {
    use agent_client_protocol::v1::schema::SetSessionModeRequest;
    let fixture = fixture(
        "[[answers]]\ntext = \"done\"\n",
        "[sandbox]\nmode = \"read-only\"\n",
        &["bash"],
    );
    let refused = fixture
        .in_session(Answer::Allow, async |cx, session, _rx| {
            let refused = cx
                .send_request(SetSessionModeRequest::new(session.clone(), "full-access"))
                .block_task()
                .await;
            Ok(refused.err().map(|error| format!("{error:?}")))
        })
        .await
        .expect("set_mode beyond the ceiling is refused");
    assert!(refused.contains("ceiling `read-only`"), "{refused}");
}

//! An MCP server's sampling and elicitation under `dsh acp`: sampling
//! waits for the editor's permission and reaches the model; an
//! elicitation reaches an editor that supports it, and its answer goes
//! back to the server.

use crate::acp::prompt;
use crate::common;

use std::path::Path;
use std::time::Duration;

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    CancelNotification, ClientCapabilities, CreateElicitationRequest, CreateElicitationResponse,
    ElicitationAcceptAction, ElicitationAction, ElicitationCapabilities,
    ElicitationFormCapabilities, ElicitationMode, ElicitationScope, InitializeRequest,
    NewSessionRequest, PermissionOptionKind, RequestPermissionOutcome, RequestPermissionRequest,
    RequestPermissionResponse, SelectedPermissionOutcome, SessionNotification, SessionUpdate,
    StopReason, ToolCallStatus,
};
use agent_client_protocol::{Agent, Client, Error, LineDirection};
use serde_json::Value;
use tokio::sync::mpsc;

/// The MCP test server's binary.
static SERVER: std::sync::LazyLock<String> =
    std::sync::LazyLock::new(|| dsh_mcp_test_server::binary().display().to_string());

/// A deployment whose scripted model answers `answers`, with the test
/// server `tester` started with `args` (its tools run unasked), and an
/// agent that sees it.
fn deployment(dir: &Path, answers: &str, args: &[&str]) -> String {
    let mut command = vec![SERVER.to_owned()];
    command.extend(args.iter().map(|arg| (*arg).to_owned()));
    let tables = format!(
        "\n[mcp.tester]\ncommand = {command:?}\npermission = \"allow\"\n{}",
        common::runner("", &["read", "mcp:tester"])
    );
    common::scripted_config(dir, answers, &tables)
}

/// What the editor was asked.
#[derive(Debug)]
enum Asked {
    Permission(RequestPermissionRequest),
    Elicitation(CreateElicitationRequest),
    /// A sampling request's tool call, announced (`tool_call`).
    Announced(String),
    /// The status a sampling request's tool call was given after.
    Ended(String, Option<ToolCallStatus>),
}

/// How the editor answers a permission request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Answer {
    Allow,
    Reject,
    /// No answer: the person cancels the turn (`session/cancel`) instead.
    CancelTurn,
}

/// Runs one prompt in a new session of `dsh acp --config config`, as an
/// editor that answers permission requests with `answer` and form
/// elicitations, when `elicits`, with a name and an age; returns what it
/// was asked, and what dsh said on stderr.
async fn one_prompt(
    config: &str,
    (recorded, trace): (&Path, &Path),
    answer: Answer,
    elicits: bool,
) -> (Vec<Asked>, String) {
    let stderr = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let said = std::sync::Arc::clone(&stderr);
    let agent = common::acp_agent(&[
        "acp",
        "--config",
        config,
        "--record-requests",
        &recorded.display().to_string(),
        "--trace",
        &trace.display().to_string(),
    ])
    .with_debug(move |line, direction| {
        if direction == LineDirection::Stderr {
            let mut said = said.lock().expect("not poisoned");
            said.push_str(line);
            said.push('\n');
        }
    });
    let (seen, mut rx) = mpsc::unbounded_channel();
    let (elicited, updated) = (seen.clone(), seen.clone());
    let ended = std::sync::Arc::new(tokio::sync::Notify::new());
    let ending = std::sync::Arc::clone(&ended);
    let run = Client
        .v1()
        .on_receive_notification(
            async move |notification: SessionNotification, _cx| {
                match notification.update {
                    SessionUpdate::ToolCall(call)
                        if call.tool_call_id.0.starts_with("sampling-") =>
                    {
                        let _ = updated.send(Asked::Announced(call.tool_call_id.0.to_string()));
                    }
                    SessionUpdate::ToolCallUpdate(update)
                        if update.tool_call_id.0.starts_with("sampling-") =>
                    {
                        let id = update.tool_call_id.0.to_string();
                        let _ = updated.send(Asked::Ended(id, update.fields.status));
                        ending.notify_one();
                    }
                    _ => {}
                }
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .on_receive_request(
            async move |request: RequestPermissionRequest, responder, cx| {
                let kind = match answer {
                    Answer::Allow => PermissionOptionKind::AllowOnce,
                    Answer::Reject => PermissionOptionKind::RejectOnce,
                    Answer::CancelTurn => {
                        cx.send_notification(CancelNotification::new(request.session_id.clone()))?;
                        let _ = seen.send(Asked::Permission(request));
                        // Held unanswered well past the test's end.
                        tokio::spawn(async move {
                            tokio::time::sleep(Duration::from_secs(120)).await;
                            drop(responder);
                        });
                        return Ok(());
                    }
                };
                let option = (request.options.iter())
                    .find(|option| option.kind == kind)
                    .map(|option| option.option_id.clone())
                    .expect("dsh offers allow and reject");
                let _ = seen.send(Asked::Permission(request));
                responder.respond(RequestPermissionResponse::new(
                    RequestPermissionOutcome::Selected(SelectedPermissionOutcome::new(option)),
                ))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: CreateElicitationRequest, responder, _cx| {
                let _ = elicited.send(Asked::Elicitation(request));
                let content = [
                    ("name".to_owned(), "Ada".into()),
                    ("age".to_owned(), 36.into()),
                ];
                responder.respond(CreateElicitationResponse::new(ElicitationAction::Accept(
                    ElicitationAcceptAction::new().content(
                        content
                            .into_iter()
                            .collect::<std::collections::BTreeMap<_, _>>(),
                    ),
                )))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .connect_with(agent, async |cx: ConnectionTo<Agent>| {
            let mut capabilities = ClientCapabilities::new();
            if elicits {
                capabilities = capabilities.elicitation(
                    ElicitationCapabilities::new().form(ElicitationFormCapabilities::new()),
                );
            }
            cx.send_request(
                InitializeRequest::new(ProtocolVersion::V1).client_capabilities(capabilities),
            )
            .block_task()
            .await?;
            let project = tempfile::tempdir().expect("a project");
            let session = cx
                .send_request(NewSessionRequest::new(project.path()))
                .block_task()
                .await?
                .session_id;
            let stop = match answer {
                Answer::CancelTurn => StopReason::Cancelled,
                _ => StopReason::EndTurn,
            };
            assert_eq!(prompt(&cx, &session, "go").await?, stop);
            if answer == Answer::CancelTurn {
                // A cancelled turn ends before its calls wind down.
                let _ = tokio::time::timeout(Duration::from_secs(10), ended.notified()).await;
            }
            Ok::<_, Error>(())
        });
    tokio::time::timeout(Duration::from_secs(60), run)
        .await
        .expect("the session finishes in time")
        .expect("the client side succeeds");
    let mut asked = Vec::new();
    while let Ok(one) = rx.try_recv() {
        asked.push(one);
    }
    let stderr = stderr.lock().expect("not poisoned").clone();
    (asked, stderr)
}

const SAMPLE: &str = "[[answers]]\ntext = \"\"\n\
    [[answers.tool_calls]]\nname = \"tester__sample\"\narguments = { text = \"Name a colour.\" }\n";

#[tokio::test(flavor = "multi_thread")]
async fn a_sampling_request_reaches_the_model_once_the_editor_allows_it() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let answers = format!("{SAMPLE}[[answers]]\ntext = \"Blue\"\n[[answers]]\ntext = \"done\"\n");
    let config = deployment(dir.path(), &answers, &["samples"]);
    let (recorded, trace) = (
        dir.path().join("requests.jsonl"),
        dir.path().join("trace.jsonl"),
    );
    let (asked, _) = one_prompt(&config, (&recorded, &trace), Answer::Allow, false).await;

    // The editor was asked, with the server's name and its request; the
    // call then ended, completed.
    // The call is announced (`tool_call`) before the editor is asked.
    let [
        Asked::Announced(announced),
        Asked::Permission(permission),
        Asked::Ended(id, status),
    ] = asked.as_slice()
    else {
        panic!("the call announced, one permission request, then its end: {asked:?}");
    };
    assert_eq!(*id, permission.tool_call.tool_call_id.0.to_string());
    assert_eq!(announced, id);
    assert_eq!(*status, Some(ToolCallStatus::Completed));
    let title = permission
        .tool_call
        .fields
        .title
        .clone()
        .unwrap_or_default();
    assert_eq!(title, "MCP server `tester` asks to use the model");
    let shown = serde_json::to_string(&permission.tool_call.fields.content).expect("json");
    assert!(
        shown.contains("system prompt: You answer in one word."),
        "{shown}"
    );
    assert!(shown.contains("user: Name a colour."), "{shown}");
    assert!(shown.contains("max tokens: 64"), "{shown}");

    // The model got the server's request alone: its system prompt and
    // message, no tools; the server got the answer.
    let requests = common::recorded_requests(&recorded);
    assert_eq!(requests.len(), 3, "{requests:?}");
    let sampling = &requests[1];
    assert_eq!(sampling["system"], "You answer in one word.");
    assert!(sampling["messages"].to_string().contains("Name a colour."));
    assert!(common::tool_names(sampling).is_empty());
    assert_eq!(sampling["max_tokens"], 64);
    let result = requests[2]["messages"].to_string();
    assert!(
        result.contains(r#"sampled \"Blue\" from model m (endTurn)"#),
        "{result}"
    );

    // The trace counts it, naming the server.
    let lines = common::json_lines(&trace);
    let sampled: Vec<&Value> = (lines.iter())
        .filter(|line| line.get("sampling_for").is_some())
        .collect();
    assert_eq!(sampled.len(), 1, "{lines:?}");
    assert_eq!(sampled[0]["sampling_for"], "tester");
    assert_eq!(sampled[0]["model"], "m");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_sampling_request_the_editor_rejects_never_reaches_the_model() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let answers = format!("{SAMPLE}[[answers]]\ntext = \"done\"\n");
    let config = deployment(dir.path(), &answers, &["samples"]);
    let (recorded, trace) = (
        dir.path().join("requests.jsonl"),
        dir.path().join("trace.jsonl"),
    );
    let (asked, _) = one_prompt(&config, (&recorded, &trace), Answer::Reject, false).await;
    // Rejected, the call the editor shows ends, failed.
    let [
        Asked::Announced(_),
        Asked::Permission(_),
        Asked::Ended(_, status),
    ] = asked.as_slice()
    else {
        panic!("one permission request, then its end: {asked:?}");
    };
    assert_eq!(*status, Some(ToolCallStatus::Failed));
    let requests = common::recorded_requests(&recorded);
    assert_eq!(requests.len(), 2, "{requests:?}");
    let result = requests[1]["messages"].to_string();
    assert!(result.contains("sampling failed"), "{result}");
    assert!(
        result.contains("the user declined MCP server `tester`'s request to use the model"),
        "{result}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn cancelling_the_turn_withdraws_a_sampling_request_the_editor_has_not_answered() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let answers = format!("{SAMPLE}[[answers]]\ntext = \"Blue\"\n[[answers]]\ntext = \"done\"\n");
    let config = deployment(dir.path(), &answers, &["samples"]);
    let (recorded, trace) = (
        dir.path().join("requests.jsonl"),
        dir.path().join("trace.jsonl"),
    );
    let (asked, _) = one_prompt(&config, (&recorded, &trace), Answer::CancelTurn, false).await;
    // The question was withdrawn: its call ended, failed, and the model
    // was never asked to answer it.
    let [
        Asked::Announced(_),
        Asked::Permission(_),
        Asked::Ended(_, status),
    ] = asked.as_slice()
    else {
        panic!("one permission request, then its end: {asked:?}");
    };
    assert_eq!(*status, Some(ToolCallStatus::Failed));
    let requests = common::recorded_requests(&recorded);
    assert_eq!(requests.len(), 1, "{requests:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_elicitation_reaches_an_editor_that_supports_it_and_its_answer_the_server() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let answers = "[[answers]]\ntext = \"\"\n\
        [[answers.tool_calls]]\nname = \"tester__elicit_form\"\narguments = {}\n\
        [[answers]]\ntext = \"\"\n\
        [[answers.tool_calls]]\nname = \"tester__elicit\"\narguments = {}\n\
        [[answers]]\ntext = \"done\"\n";
    let config = deployment(dir.path(), answers, &["elicits"]);
    let (recorded, trace) = (
        dir.path().join("requests.jsonl"),
        dir.path().join("trace.jsonl"),
    );
    let (asked, stderr) = one_prompt(&config, (&recorded, &trace), Answer::Allow, true).await;

    // The form reached the editor, scoped to the session; the URL did not
    // (the editor supports forms only).
    let [Asked::Elicitation(elicitation)] = asked.as_slice() else {
        panic!("one elicitation: {asked:?}");
    };
    assert_eq!(elicitation.message, "Who are you?");
    let ElicitationMode::Form(form) = &elicitation.mode else {
        panic!("a form: {elicitation:?}");
    };
    let ElicitationScope::Session(scope) = &form.scope else {
        panic!("scoped to the session: {form:?}");
    };
    // With the call the server serves, as the editor shows it.
    let call_id = (scope.tool_call_id.as_ref())
        .map(|id| id.0.to_string())
        .expect("the call's id");
    let names: Vec<&String> = form.requested_schema.properties.keys().collect();
    assert_eq!(names, ["age", "name", "subscribe"]);
    assert_eq!(
        form.requested_schema.required,
        Some(vec!["name".to_owned()])
    );

    // The server got the editor's answer, and a decline for the URL.
    let requests = common::recorded_requests(&recorded);
    let form_result = requests[1]["messages"].to_string();
    assert!(
        form_result.contains(&format!("\"{call_id}\"")),
        "{call_id} in {form_result}"
    );
    assert!(
        form_result.contains(r#"elicitation: Accept {\"age\":36,\"name\":\"Ada\"}"#),
        "{form_result}"
    );
    let url_result = requests[2]["messages"].to_string();
    assert!(url_result.contains("elicitation: Decline"), "{url_result}");
    // The decline was said on stderr, with why and the server's message.
    assert!(
        stderr.contains(
            "[mcp tester] asked for input, declined (no one here answers it): Sign in, please."
        ),
        "{stderr}"
    );
}

/// A 2026-07-28 server asks in a round of the call (`input_required`):
/// the question reaches the editor as a 2025-11-25 server's
/// `elicitation/create` does, scoped to the session and the call, and
/// the editor's answer goes back to the server in the retry.
#[tokio::test(flavor = "multi_thread")]
async fn a_rounds_elicitation_reaches_the_editor_as_a_2025_one_does() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let answers = "[[answers]]\ntext = \"\"\n\
        [[answers.tool_calls]]\nname = \"tester__elicit_form\"\narguments = {}\n\
        [[answers]]\ntext = \"done\"\n";
    let config = deployment(dir.path(), answers, &["elicits", "protocol=2026-07-28"]);
    let (recorded, trace) = (
        dir.path().join("requests.jsonl"),
        dir.path().join("trace.jsonl"),
    );
    let (asked, stderr) = one_prompt(&config, (&recorded, &trace), Answer::Allow, true).await;
    let [Asked::Elicitation(elicitation)] = asked.as_slice() else {
        panic!("one elicitation: {asked:?}\n{stderr}");
    };
    assert_eq!(elicitation.message, "Who are you?");
    let ElicitationMode::Form(form) = &elicitation.mode else {
        panic!("a form: {elicitation:?}");
    };
    let ElicitationScope::Session(scope) = &form.scope else {
        panic!("scoped to the session: {form:?}");
    };
    let call_id = (scope.tool_call_id.as_ref())
        .map(|id| id.0.to_string())
        .expect("the call's id");
    let requests = common::recorded_requests(&recorded);
    let form_result = requests[1]["messages"].to_string();
    assert!(
        form_result.contains(&format!("\"{call_id}\"")),
        "{call_id} in {form_result}"
    );
    assert!(
        form_result.contains(r#"elicitation: Accept {\"age\":36,\"name\":\"Ada\"}"#),
        "{form_result}"
    );
}

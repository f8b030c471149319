//! The Anthropic adapter, end to end against a local HTTP server the test
//! starts on 127.0.0.1 (no network), which replays event streams in the
//! Messages API's documented format and records what it was sent.

use crate::support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use dsh_agent_loop::{
    Agent, AgentOptions, AnthropicAdapter, AnthropicConfig, CacheTtl, Event, LoopEvent, Message,
    ModelAdapter, ModelError, ModelRequest, ModelResponse, Piece, ResponseLimit, Session, Thought,
    ToolCall, Usage,
};
use parking_lot::Mutex;
use serde_json::{Value, json};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use support::Echo;

type TestResult = Result<(), Box<dyn std::error::Error>>;

/// One canned HTTP answer of the fake server.
#[derive(Clone)]
struct Canned {
    status: StatusCode,
    headers: Vec<(&'static str, &'static str)>,
    content_type: &'static str,
    body: String,
    /// When set, the body stops after its first event until this fires,
    /// then sends the rest.
    gate: Option<Arc<Notify>>,
}

impl Canned {
    /// A stream of server-sent events, each written as the API writes it:
    /// `event: <type>` and the JSON data.
    fn events(events: impl IntoIterator<Item = Value>) -> Self {
        let body = events
            .into_iter()
            .map(|event| {
                let kind = event["type"].as_str().unwrap_or_default().to_owned();
                format!("event: {kind}\ndata: {event}\n\n")
            })
            .collect();
        Self {
            status: StatusCode::OK,
            headers: Vec::new(),
            content_type: "text/event-stream; charset=utf-8",
            body,
            gate: None,
        }
    }

    /// Holds the rest of the body back after the first `events` until
    /// `gate` fires.
    fn gated_after(mut self, events: usize, gate: Arc<Notify>) -> Self {
        self.gate = Some(gate);
        self.body = self.body.replacen("\n\n", "\n\n\u{0}", events);
        self
    }

    /// An API error: `{"type": "error", "error": {"type": kind, "message": message}}`.
    fn error(status: u16, kind: &str, message: &str) -> Self {
        Self {
            status: StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
            headers: Vec::new(),
            content_type: "application/json",
            body: json!({"type": "error", "error": {"type": kind, "message": message}}).to_string(),
            gate: None,
        }
    }

    fn with_header(mut self, name: &'static str, value: &'static str) -> Self {
        self.headers.push((name, value));
        self
    }
}

/// A request the fake server received.
struct Received {
    body: Value,
    headers: HeaderMap,
    at: Instant,
}

/// The fake Messages API: its canned answers and what it received.
type Server = support::FakeServer<Canned, Received>;

impl Server {
    fn bodies(&self) -> Vec<Value> {
        self.received
            .lock()
            .iter()
            .map(|r| r.body.clone())
            .collect()
    }
}

async fn messages(State(server): State<Arc<Server>>, headers: HeaderMap, body: Bytes) -> Response {
    let received = Received {
        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
        headers,
        at: Instant::now(),
    };
    let Some(answer) = server.answer(received) else {
        return Canned::error(500, "api_error", "the test server ran out of answers")
            .into_response();
    };
    answer.into_response()
}

impl IntoResponse for Canned {
    fn into_response(self) -> Response {
        let body = match self.gate {
            None => Body::from(self.body),
            Some(gate) => {
                // Split where `gated_after` marked: everything before the
                // last mark goes at once, the rest after the gate.
                let (now, later) = self.body.rsplit_once('\u{0}').unwrap_or((&self.body, ""));
                let now = now.replace('\u{0}', "");
                let later = later.to_owned();
                Body::from_stream(futures::stream::unfold(
                    (Some(now), Some(later), gate),
                    |(now, later, gate)| async move {
                        if let Some(now) = now {
                            return Some((Ok::<_, std::io::Error>(now), (None, later, gate)));
                        }
                        let later = later?;
                        gate.notified().await;
                        Some((Ok(later), (None, None, gate)))
                    },
                ))
            }
        };
        support::canned_response(self.status, self.content_type, body, self.headers)
    }
}

/// Starts the fake server; returns its base URL (`http://127.0.0.1:N`,
/// without `/v1`, as `base_url` is written).
async fn serve(
    answers: impl IntoIterator<Item = Canned>,
) -> Result<(String, Arc<Server>), std::io::Error> {
    support::start_fake_server("", "/v1/messages", post(messages), answers).await
}

const KEY: &str = "sk-ant-test-0123456789";

/// An adapter with [`KEY`] for the fake server, retrying after 1 ms when
/// the server names no wait.
async fn local_adapter(
    answers: impl IntoIterator<Item = Canned>,
) -> Result<(AnthropicAdapter, Arc<Server>), Box<dyn std::error::Error>> {
    let (base_url, server) = serve(answers).await?;
    let config = AnthropicConfig::default()
        .with_base_url(base_url)
        .with_max_tokens(1024)
        .with_retries(2, Duration::from_millis(1));
    Ok((AnthropicAdapter::new(config, Some(KEY.into()))?, server))
}

fn request(text: &str) -> ModelRequest {
    ModelRequest {
        model: "claude-test".into(),
        system: Some("You are terse.".into()),
        tools: Vec::new(),
        messages: vec![Message::User { text: text.into() }],
        session: None,
        effort: None,
        max_tokens: None,
    }
}

/// Streams `request`, recording each piece of text the sink gets (a
/// thought's marked `thought: `).
async fn stream(
    adapter: &AnthropicAdapter,
    request: &ModelRequest,
) -> (Result<ModelResponse, ModelError>, Vec<String>) {
    let pieces = Mutex::new(Vec::new());
    let on_text = |piece: Piece<'_>| pieces.lock().push(support::piece_text(piece));
    let response = adapter
        .complete(request, &on_text, &CancellationToken::new())
        .await;
    (response, pieces.into_inner())
}

/// The answer to a request of `text` from a fake server that gives
/// `answers`, the pieces the sink got, and the server.
async fn answer_to(
    text: &str,
    answers: impl IntoIterator<Item = Canned>,
) -> Result<(Result<ModelResponse, ModelError>, Vec<String>, Arc<Server>), Box<dyn std::error::Error>>
{
    let (adapter, server) = local_adapter(answers).await?;
    let (response, pieces) = stream(&adapter, &request(text)).await;
    Ok((response, pieces, server))
}

fn message_start(usage: Value) -> Value {
    json!({"type": "message_start", "message": {
        "id": "msg_1", "type": "message", "role": "assistant", "content": [],
        "model": "claude-test", "stop_reason": null, "stop_sequence": null, "usage": usage,
    }})
}

fn start_usage() -> Value {
    json!({"input_tokens": 12, "output_tokens": 1})
}

fn text_start(index: usize) -> Value {
    json!({"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}})
}

fn text_delta(index: usize, text: &str) -> Value {
    json!({"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": text}})
}

fn tool_start(index: usize, id: &str, name: &str) -> Value {
    json!({"type": "content_block_start", "index": index,
           "content_block": {"type": "tool_use", "id": id, "name": name, "input": {}}})
}

fn json_delta(index: usize, partial: &str) -> Value {
    json!({"type": "content_block_delta", "index": index,
           "delta": {"type": "input_json_delta", "partial_json": partial}})
}

fn block_stop(index: usize) -> Value {
    json!({"type": "content_block_stop", "index": index})
}

fn message_end(stop_reason: &str, output_tokens: u64) -> [Value; 2] {
    [
        json!({"type": "message_delta", "delta": {"stop_reason": stop_reason, "stop_sequence": null},
               "usage": {"output_tokens": output_tokens}}),
        json!({"type": "message_stop"}),
    ]
}

/// An `error` event: the API is overloaded.
fn overloaded_event() -> Value {
    json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})
}

/// A streamed message: its start with `usage`, the events of its `blocks`,
/// and its end.
fn message(
    usage: Value,
    blocks: impl IntoIterator<Item = Value>,
    stop_reason: &str,
    output_tokens: u64,
) -> Canned {
    Canned::events(
        std::iter::once(message_start(usage))
            .chain(blocks)
            .chain(message_end(stop_reason, output_tokens)),
    )
}

/// A streamed answer of text only.
fn text_answer(text: &str) -> Canned {
    message(
        start_usage(),
        [text_start(0), text_delta(0, text), block_stop(0)],
        "end_turn",
        3,
    )
}

#[tokio::test]
async fn text_streams_to_the_sink_piece_by_piece() -> TestResult {
    let (response, pieces, server) = answer_to(
        "hi",
        [message(
            json!({"input_tokens": 12, "cache_creation_input_tokens": 0,
                                 "cache_read_input_tokens": 0, "output_tokens": 1}),
            [
                text_start(0),
                json!({"type": "ping"}),
                text_delta(0, "Hel"),
                text_delta(0, "lo"),
                text_delta(0, " there."),
                block_stop(0),
            ],
            "end_turn",
            5,
        )],
    )
    .await?;
    assert_eq!(pieces, ["Hel", "lo", " there."]);
    assert_eq!(
        response?,
        ModelResponse::text("Hello there.").with_usage(
            Usage::new(12, 5)
                .with_cached_prompt_tokens(0)
                .with_cache_creation_prompt_tokens(0)
        )
    );

    let received = server.received.lock();
    let sent = &received[0];
    assert_eq!(sent.headers["x-api-key"], KEY);
    assert_eq!(sent.headers["anthropic-version"], "2023-06-01");
    assert!(
        sent.headers.get("anthropic-beta").is_none(),
        "five minutes needs no beta"
    );
    assert_eq!(
        sent.body,
        json!({
            "model": "claude-test",
            "max_tokens": 1024,
            "system": [{"type": "text", "text": "You are terse.",
                        "cache_control": {"type": "ephemeral"}}],
            "messages": [{"role": "user", "content": [
                {"type": "text", "text": "hi", "cache_control": {"type": "ephemeral"}},
            ]}],
            "stream": true,
        }),
        "no `tools` key when there are no tools"
    );
    Ok(())
}

/// A request's own limit (an MCP server's sampling asks one) lowers the
/// deployment's `max_tokens`, and never raises it.
#[tokio::test]
async fn a_requests_own_token_limit_only_lowers_the_deployments() -> TestResult {
    let (adapter, server) = local_adapter([text_answer("a"), text_answer("b")]).await?;
    for max in [64, 5000] {
        let mut limited = request("hi");
        limited.max_tokens = Some(max);
        stream(&adapter, &limited).await.0?;
    }
    let received = server.received.lock();
    let sent: Vec<&Value> = received.iter().map(|one| &one.body["max_tokens"]).collect();
    assert_eq!(sent, [&json!(64), &json!(1024)]);
    Ok(())
}

/// The first piece of text reaches the sink while the server still holds
/// the rest of the answer back: the server sends the rest only once the
/// sink has it, so an adapter that waited for the whole answer would time
/// out instead.
#[tokio::test]
async fn text_reaches_the_sink_before_the_answer_is_complete() -> TestResult {
    let gate = Arc::new(Notify::new());
    let (base_url, _server) = serve([message(
        start_usage(),
        [
            text_start(0),
            text_delta(0, "First, "),
            text_delta(0, "then the rest."),
            block_stop(0),
        ],
        "end_turn",
        5,
    )
    .gated_after(3, Arc::clone(&gate))])
    .await?;
    let config = AnthropicConfig::default()
        .with_base_url(base_url)
        .with_timeout(Duration::from_secs(10));
    let adapter = AnthropicAdapter::new(config, None)?;
    let pieces = Mutex::new(Vec::new());
    let on_text = |piece: Piece<'_>| {
        pieces.lock().push(support::piece_text(piece));
        gate.notify_one();
    };
    let response = adapter
        .complete(&request("hi"), &on_text, &CancellationToken::new())
        .await?;
    assert_eq!(response.text, "First, then the rest.");
    assert_eq!(pieces.into_inner(), ["First, ", "then the rest."]);
    Ok(())
}

#[tokio::test]
async fn a_tool_use_whose_json_arrives_in_pieces_is_assembled() -> TestResult {
    let (response, pieces, _server) = answer_to(
        "read main",
        [message(
            start_usage(),
            [
                text_start(0),
                text_delta(0, "Let me look."),
                block_stop(0),
                tool_start(1, "toolu_01", "read"),
                json_delta(1, ""),
                json_delta(1, "{\"pa"),
                json_delta(1, "th\": \"src/"),
                json_delta(1, "main.rs\"}"),
                block_stop(1),
            ],
            "tool_use",
            20,
        )],
    )
    .await?;
    assert_eq!(pieces, ["Let me look."]);
    let response = response?;
    assert_eq!(response.text, "Let me look.");
    assert_eq!(
        response.tool_calls,
        [ToolCall::new(
            "toolu_01",
            "read",
            "{\"path\": \"src/main.rs\"}"
        )]
    );
    Ok(())
}

#[tokio::test]
async fn two_tool_uses_in_one_answer_come_back_in_order() -> TestResult {
    let (response, pieces, _server) = answer_to(
        "look",
        [message(
            start_usage(),
            [
                tool_start(0, "toolu_a", "read"),
                json_delta(0, "{\"path\":"),
                json_delta(0, "\"a.rs\"}"),
                block_stop(0),
                tool_start(1, "toolu_b", "bash"),
                json_delta(1, "{\"command\":\"ls\"}"),
                block_stop(1),
            ],
            "tool_use",
            30,
        )],
    )
    .await?;
    assert!(pieces.is_empty(), "{pieces:?}");
    assert_eq!(
        response?.tool_calls,
        [
            ToolCall::new("toolu_a", "read", r#"{"path":"a.rs"}"#),
            ToolCall::new("toolu_b", "bash", r#"{"command":"ls"}"#),
        ]
    );
    Ok(())
}

/// An `error` event after text has reached the sink ends the answer with
/// the API's error; it is not retried, since the text would show twice.
#[tokio::test]
async fn an_error_event_mid_stream_ends_the_answer() -> TestResult {
    let (response, pieces, server) = answer_to(
        "hi",
        [
            Canned::events([
                message_start(start_usage()),
                text_start(0),
                text_delta(0, "Half an"),
                overloaded_event(),
            ]),
            text_answer("never asked for"),
        ],
    )
    .await?;
    assert_eq!(pieces, ["Half an"]);
    let error = response.err().ok_or("expected an error")?;
    assert!(
        matches!(&error, ModelError::ErrorEvent { kind, message, .. }
            if kind == "overloaded_error" && message == "Overloaded"),
        "{error:?}"
    );
    let text = error.to_string();
    assert!(text.contains("overloaded_error: Overloaded"), "{text}");
    assert_eq!(server.received.lock().len(), 1, "not retried");
    Ok(())
}

/// An `overloaded_error` before any text is retried: nothing was shown.
#[tokio::test]
async fn an_overloaded_stream_before_any_text_is_retried() -> TestResult {
    let (response, pieces, server) = answer_to(
        "hi",
        [
            Canned::events([message_start(start_usage()), overloaded_event()]),
            text_answer("Fine now."),
        ],
    )
    .await?;
    assert_eq!(response?.text, "Fine now.");
    assert_eq!(pieces, ["Fine now."]);
    let bodies = server.bodies();
    assert_eq!(bodies.len(), 2);
    assert_eq!(bodies[0], bodies[1], "the retry sends the same request");
    Ok(())
}

/// A 529 with `retry-after: 1` is sent again no sooner than a second
/// later (the adapter's own wait, 1 ms here, would be far shorter), and
/// the second answer is the response.
#[tokio::test]
async fn a_529_is_retried_after_its_retry_after() -> TestResult {
    let (response, _, server) = answer_to(
        "hi",
        [
            Canned::error(529, "overloaded_error", "Overloaded").with_header("retry-after", "1"),
            text_answer("Back."),
        ],
    )
    .await?;
    assert_eq!(response?.text, "Back.");
    let received = server.received.lock();
    assert_eq!(received.len(), 2);
    let waited = received[1].at.duration_since(received[0].at);
    assert!(waited >= Duration::from_secs(1), "waited only {waited:?}");
    Ok(())
}

/// Cancelling while the adapter waits out a `retry-after` ends the wait:
/// the request is cancelled, not retried.
#[tokio::test]
async fn cancellation_ends_the_wait_before_a_retry() -> TestResult {
    let (adapter, server) = local_adapter([
        Canned::error(529, "overloaded_error", "Overloaded").with_header("retry-after", "30"),
        text_answer("too late"),
    ])
    .await?;
    let cancel = CancellationToken::new();
    let canceller = {
        let cancel = cancel.clone();
        let server = Arc::clone(&server);
        tokio::spawn(async move {
            while server.received.lock().is_empty() {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            cancel.cancel();
        })
    };
    let response = adapter
        .complete(&request("hi"), &|_: Piece<'_>| {}, &cancel)
        .await;
    canceller.await?;
    assert!(
        matches!(response, Err(ModelError::Cancelled)),
        "{response:?}"
    );
    assert_eq!(server.received.lock().len(), 1, "not retried");
    Ok(())
}

/// The API's `x-should-retry` wins over the status: a 529 it says not to
/// retry is the answer, a 500 it says to retry is sent again.
#[tokio::test]
async fn x_should_retry_decides_over_the_status() -> TestResult {
    let (adapter, server) = local_adapter([
        Canned::error(529, "overloaded_error", "Overloaded").with_header("x-should-retry", "false"),
        Canned::error(500, "api_error", "Internal server error")
            .with_header("x-should-retry", "true"),
        text_answer("Recovered."),
    ])
    .await?;
    let (first, _) = stream(&adapter, &request("hi")).await;
    assert!(
        matches!(first, Err(ModelError::Status { status: 529, .. })),
        "{first:?}"
    );
    assert_eq!(server.received.lock().len(), 1);
    let (second, _) = stream(&adapter, &request("hi")).await;
    assert_eq!(second?.text, "Recovered.");
    assert_eq!(server.received.lock().len(), 3);
    Ok(())
}

/// A busy API that stays busy: the last error, saying the retries were
/// spent.
#[tokio::test]
async fn a_429_that_persists_gives_up_after_the_retries() -> TestResult {
    let busy = Canned::error(
        429,
        "rate_limit_error",
        "Number of requests has exceeded your rate limit",
    );
    let (response, _, server) = answer_to("hi", [busy.clone(), busy.clone(), busy]).await?;
    let error = response.err().ok_or("expected an error")?;
    assert!(
        matches!(&error, ModelError::Status { status: 429, .. }),
        "{error:?}"
    );
    let text = error.to_string();
    assert!(text.contains("still busy after 2 retries"), "{text}");
    assert_eq!(server.received.lock().len(), 3);
    Ok(())
}

/// A 401 is one line with the status and the API's message, and the key
/// is nowhere in it — not even when the server echoes it back — nor in
/// the adapter's `Debug`.
#[tokio::test]
async fn a_401_names_the_status_and_the_apis_message_and_never_the_key() -> TestResult {
    let echoed: &'static str = Box::leak(format!("invalid x-api-key {KEY}").into_boxed_str());
    let (adapter, server) = local_adapter([
        Canned::error(401, "authentication_error", "invalid x-api-key"),
        Canned::error(401, "authentication_error", echoed),
    ])
    .await?;
    let (response, _) = stream(&adapter, &request("hi")).await;
    let error = response.err().ok_or("expected an error")?;
    assert!(
        matches!(&error, ModelError::Status { status: 401, message, .. } if message == "invalid x-api-key"),
        "{error:?}"
    );
    let text = error.to_string();
    assert!(
        text.contains("answered HTTP 401: invalid x-api-key"),
        "{text}"
    );
    assert!(text.contains("`api_key_env`"), "{text}");
    assert!(!text.contains('\n'), "{text}");

    let (echo, _) = stream(&adapter, &request("hi")).await;
    let echo = echo.err().ok_or("expected an error")?;
    for shown in [
        echo.to_string(),
        format!("{echo:?}"),
        format!("{adapter:?}"),
    ] {
        assert!(!shown.contains(KEY), "{shown}");
    }
    assert_eq!(server.received.lock().len(), 2, "a 401 is not retried");
    Ok(())
}

/// The three requests of a two-turn conversation, sent by the loop: the
/// system block, the tools, the message structure (both results of one
/// answer in one user message, a failed call's `is_error`), and the
/// breakpoints — each request marks where the one before ended, so it
/// reads what that one wrote.
#[tokio::test]
async fn a_three_request_conversation_places_its_breakpoints_by_the_rule() -> TestResult {
    let (base_url, server) = serve([
        message(
            start_usage(),
            [
                text_start(0),
                text_delta(0, "Echoing."),
                block_stop(0),
                tool_start(1, "toolu_a", "echo"),
                json_delta(1, "{\"text\":\"pong\"}"),
                block_stop(1),
                // No `text`: the tool registry rejects the call.
                tool_start(2, "toolu_b", "echo"),
                block_stop(2),
            ],
            "tool_use",
            40,
        ),
        message(
            json!({"input_tokens": 30, "cache_creation_input_tokens": 400,
                                     "cache_read_input_tokens": 1200, "output_tokens": 1}),
            [text_start(0), text_delta(0, "It said pong."), block_stop(0)],
            "end_turn",
            6,
        ),
        text_answer("Again."),
    ])
    .await?;
    let config = AnthropicConfig::default()
        .with_base_url(base_url)
        .with_cache_ttl(CacheTtl::OneHour);
    let adapter = Arc::new(AnthropicAdapter::new(config, Some(KEY.into()))?);
    let (agent_loop, _installed) = support::agent_loop(vec![Arc::new(Echo::default())], adapter)?;
    let usages = Arc::new(Mutex::new(Vec::new()));
    let agent_loop = agent_loop.observed_by({
        let usages = Arc::clone(&usages);
        Arc::new(move |event: LoopEvent<'_>| {
            if let LoopEvent::Response(answer) = event {
                usages.lock().push(answer.response.usage);
            }
        })
    });
    let agent = Agent::new(
        "coder",
        AgentOptions::new("claude-test").with_persona("You are <<model>>."),
    );
    let mut session = Session::new();
    let cancel = CancellationToken::new();
    let first = agent_loop
        .run_turn(&agent, &mut session, "ping", &cancel)
        .await?;
    assert_eq!(first.answer, "It said pong.");
    agent_loop
        .run_turn(&agent, &mut session, "again", &cancel)
        .await?;

    for received in server.received.lock().iter() {
        assert_eq!(
            received.headers["anthropic-beta"],
            "extended-cache-ttl-2025-04-11"
        );
    }
    let bodies = server.bodies();
    assert_eq!(bodies.len(), 3);
    let mark = json!({"type": "ephemeral", "ttl": "1h"});
    for body in &bodies {
        assert_eq!(
            body["system"],
            json!([{"type": "text", "text": "You are claude-test.", "cache_control": mark}])
        );
        assert_eq!(
            body["tools"],
            json!([{
                "name": "echo",
                "description": "Returns `text` unchanged.",
                "input_schema": {
                    "type": "object",
                    "properties": {"text": {"type": "string", "description": "The text to return."}},
                    "required": ["text"],
                    "additionalProperties": false,
                },
                "cache_control": mark,
            }])
        );
    }
    let results = json!({"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_a", "content": "pong"},
        {"type": "tool_result", "tool_use_id": "toolu_b",
         "content": bodies[1]["messages"][2]["content"][1]["content"], "is_error": true},
    ]});
    let answer = json!({"role": "assistant", "content": [
        {"type": "text", "text": "Echoing."},
        {"type": "tool_use", "id": "toolu_a", "name": "echo", "input": {"text": "pong"}},
        {"type": "tool_use", "id": "toolu_b", "name": "echo", "input": {}},
    ]});
    assert_eq!(
        without_marks(&bodies[2]["messages"]),
        json!([
            {"role": "user", "content": [{"type": "text", "text": "ping"}]},
            answer,
            results,
            {"role": "assistant", "content": [{"type": "text", "text": "It said pong."}]},
            {"role": "user", "content": [{"type": "text", "text": "again"}]},
        ])
    );
    let error_text = bodies[1]["messages"][2]["content"][1]["content"]
        .as_str()
        .unwrap_or_default();
    assert!(error_text.contains("text"), "{error_text}");

    // Tools and system in every request; then the last message, and from
    // the second request on the previous request's last message.
    let expected = [
        vec!["tools[0]", "system[0]", "messages[0].content[0]"],
        vec![
            "tools[0]",
            "system[0]",
            "messages[0].content[0]",
            "messages[2].content[1]",
        ],
        vec![
            "tools[0]",
            "system[0]",
            "messages[2].content[1]",
            "messages[4].content[0]",
        ],
    ];
    for (at, (body, expected)) in bodies.iter().zip(&expected).enumerate() {
        assert_eq!(&breakpoints(body), expected, "request {}", at + 1);
    }
    // Each request's last mark is a mark of the next one, on the same
    // prefix: the next one reads what this one wrote.
    for pair in bodies.windows(2) {
        let written = breakpoints(&pair[0]).pop().unwrap_or_default();
        assert!(breakpoints(&pair[1]).contains(&written), "{written}");
        let end = message_index(&written);
        assert_eq!(
            without_marks(&pair[0]["messages"]),
            without_marks(&json!(pair[1]["messages"].as_array().map(|m| &m[..=end])))
        );
    }
    assert_eq!(
        usages.lock()[1],
        Some(
            Usage::new(1630, 6)
                .with_cached_prompt_tokens(1200)
                .with_cache_creation_prompt_tokens(400)
        )
    );
    Ok(())
}

/// The paths of every `cache_control` in a request body, in order.
fn breakpoints(body: &Value) -> Vec<String> {
    let mut found = Vec::new();
    let list = |key: &str| body[key].as_array().cloned().unwrap_or_default();
    for (at, tool) in list("tools").iter().enumerate() {
        if tool.get("cache_control").is_some() {
            found.push(format!("tools[{at}]"));
        }
    }
    for (at, block) in list("system").iter().enumerate() {
        if block.get("cache_control").is_some() {
            found.push(format!("system[{at}]"));
        }
    }
    for (m, message) in list("messages").iter().enumerate() {
        let blocks = message["content"].as_array().cloned().unwrap_or_default();
        for (b, block) in blocks.iter().enumerate() {
            if block.get("cache_control").is_some() {
                found.push(format!("messages[{m}].content[{b}]"));
            }
        }
    }
    assert!(found.len() <= 4, "more than four breakpoints: {found:?}");
    found
}

/// `m` of `messages[m].content[b]`.
fn message_index(path: &str) -> usize {
    path.trim_start_matches("messages[")
        .split(']')
        .next()
        .and_then(|index| index.parse().ok())
        .unwrap_or(usize::MAX)
}

/// `value` without its `cache_control` keys.
fn without_marks(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(key, _)| *key != "cache_control")
                .map(|(key, value)| (key.clone(), without_marks(value)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(without_marks).collect()),
        other => other.clone(),
    }
}

#[tokio::test]
async fn an_unreachable_api_and_a_bad_url_say_what_to_fix() -> TestResult {
    let bad = AnthropicAdapter::new(
        AnthropicConfig::default().with_base_url("api.anthropic.com"),
        None,
    )
    .err()
    .ok_or("expected an error")?
    .to_string();
    assert!(bad.contains("`https://api.anthropic.com`"), "{bad}");

    let address = support::unused_address()?;
    let adapter = AnthropicAdapter::new(
        AnthropicConfig::default().with_base_url(format!("http://{address}")),
        None,
    )?;
    let (response, _) = stream(&adapter, &request("hi")).await;
    let error = response.err().ok_or("expected an error")?.to_string();
    assert!(error.contains("could not reach"), "{error}");
    assert!(error.contains("/v1/messages"), "{error}");
    Ok(())
}

/// A tool call whose input streams past the answer limit (a server that
/// ignores `max_tokens`) fails the request, naming the limit and the
/// endpoint, before the stream ends.
#[tokio::test]
async fn a_tool_input_past_the_answer_limit_fails_naming_it() -> TestResult {
    let piece = "x".repeat(64 << 10);
    let flood = (0..150).map(|_| json_delta(0, &piece));
    let (response, _, server) = answer_to(
        "hi",
        [message(
            start_usage(),
            std::iter::once(tool_start(0, "toolu_1", "write"))
                .chain(flood)
                .chain([block_stop(0)]),
            "tool_use",
            1,
        )],
    )
    .await?;
    let error = response.err().ok_or("expected an error")?;
    assert!(
        matches!(&error, ModelError::TooLarge { url, limit: ResponseLimit::Answer }
            if url.ends_with("/v1/messages")),
        "{error:?}"
    );
    assert!(
        error.to_string().contains("dsh's answer limit, 8 MiB"),
        "{error}"
    );
    assert_eq!(server.received.lock().len(), 1, "not retried");
    Ok(())
}

/// A 307 from the configured server to another origin (another port of
/// 127.0.0.1) is not followed: `x-api-key`, which reqwest would carry
/// across origins, and the conversation never reach the other server.
#[tokio::test]
async fn a_redirect_to_another_origin_is_refused_naming_both() -> TestResult {
    let (elsewhere, other) = serve([text_answer("leaked")]).await?;
    let location = format!("{elsewhere}/v1/messages");
    let router = axum::Router::new().route(
        "/v1/messages",
        post(move || async move {
            (
                StatusCode::TEMPORARY_REDIRECT,
                [(axum::http::header::LOCATION, location)],
            )
        }),
    );
    let address = support::serve_locally(router).await?;
    let config = AnthropicConfig::default().with_base_url(format!("http://{address}"));
    let adapter = AnthropicAdapter::new(config, Some(KEY.into()))?;
    let (response, _) = stream(&adapter, &request("hi")).await;
    let error = response.err().ok_or("expected an error")?;
    assert!(
        matches!(&error, ModelError::CrossOriginRedirect { from, to, .. }
            if *from == format!("http://{address}") && *to == elsewhere),
        "{error:?}"
    );
    assert!(error.to_string().contains("`base_url`"), "{error}");
    assert!(
        other.received.lock().is_empty(),
        "the other origin got nothing"
    );
    Ok(())
}

fn thinking_start(index: usize) -> Value {
    json!({"type": "content_block_start", "index": index,
           "content_block": {"type": "thinking", "thinking": "", "signature": ""}})
}

fn thinking_delta(index: usize, thinking: &str) -> Value {
    json!({"type": "content_block_delta", "index": index,
           "delta": {"type": "thinking_delta", "thinking": thinking}})
}

fn signature_delta(index: usize, signature: &str) -> Value {
    json!({"type": "content_block_delta", "index": index,
           "delta": {"type": "signature_delta", "signature": signature}})
}

/// With `thinking_budget`, requests ask for extended thinking (and set
/// no temperature, which the API refuses with it); the thoughts stream to
/// the loop's observers (`LoopEvent::Thought`), are recorded with the answer, and go
/// back first in the answer's message, signature and redacted data
/// unchanged, when the tool results are sent — as the API requires
/// during tool use.
#[tokio::test]
async fn thinking_streams_and_goes_back_signed_with_the_tool_results() -> TestResult {
    let (base_url, server) = serve([
        message(
            start_usage(),
            [
                thinking_start(0),
                thinking_delta(0, "Echo "),
                thinking_delta(0, "it."),
                signature_delta(0, "c2lnLTE="),
                block_stop(0),
                json!({"type": "content_block_start", "index": 1,
                       "content_block": {"type": "redacted_thinking", "data": "RU5D"}}),
                block_stop(1),
                tool_start(2, "toolu_a", "echo"),
                json_delta(2, "{\"text\":\"pong\"}"),
                block_stop(2),
            ],
            "tool_use",
            40,
        ),
        text_answer("It said pong."),
    ])
    .await?;
    let config = AnthropicConfig::default()
        .with_base_url(base_url)
        .with_max_tokens(4096)
        .with_thinking_budget(2048);
    let adapter = Arc::new(AnthropicAdapter::new(config, Some(KEY.into()))?);
    let (agent_loop, _installed) = support::agent_loop(vec![Arc::new(Echo::default())], adapter)?;
    let seen = Arc::new(Mutex::new(Vec::new()));
    let agent_loop = agent_loop.observed_by({
        let seen = Arc::clone(&seen);
        Arc::new(move |event: LoopEvent<'_>| {
            if let LoopEvent::Thought { piece, .. } = event {
                seen.lock().push(piece.to_owned());
            }
        })
    });
    let agent = Agent::new("coder", AgentOptions::new("claude-test"));
    let mut session = Session::new();
    let summary = agent_loop
        .run_turn(&agent, &mut session, "ping", &CancellationToken::new())
        .await?;
    assert_eq!(summary.answer, "It said pong.");
    assert_eq!(*seen.lock(), ["Echo ", "it."]);
    let thoughts = vec![
        Thought::Text {
            text: "Echo it.".into(),
            signature: Some("c2lnLTE=".into()),
        },
        Thought::Redacted {
            data: "RU5D".into(),
        },
    ];
    assert!(
        session.events().iter().any(|event| matches!(event,
            Event::AssistantMessage { thoughts: recorded, .. } if *recorded == thoughts)),
        "{:?}",
        session.events()
    );

    let bodies = server.bodies();
    for body in &bodies {
        assert_eq!(
            body["thinking"],
            json!({"type": "enabled", "budget_tokens": 2048})
        );
        assert_eq!(body["max_tokens"], 4096);
        assert!(body.get("temperature").is_none(), "{body}");
    }
    let answer = &bodies[1]["messages"][1];
    assert_eq!(answer["role"], "assistant");
    assert_eq!(
        answer["content"][0],
        json!({"type": "thinking", "thinking": "Echo it.", "signature": "c2lnLTE="})
    );
    assert_eq!(
        answer["content"][1],
        json!({"type": "redacted_thinking", "data": "RU5D"})
    );
    assert_eq!(answer["content"][2]["type"], "tool_use");
    Ok(())
}

/// Without `thinking_budget`, no thinking is asked for, and recorded
/// thoughts (of a session that had it on) are not sent: the API takes
/// them only with thinking on.
#[tokio::test]
async fn without_a_budget_no_thinking_is_asked_for_or_sent() -> TestResult {
    let (adapter, server) = local_adapter([text_answer("ok")]).await?;
    let mut request = request("hi");
    request.messages.extend([
        Message::Assistant {
            text: "Hello.".into(),
            tool_calls: Vec::new(),
            thoughts: vec![Thought::Text {
                text: "A greeting.".into(),
                signature: Some("c2ln".into()),
            }],
        },
        Message::User {
            text: "again".into(),
        },
    ]);
    stream(&adapter, &request).await.0?;
    let body = &server.bodies()[0];
    assert!(body.get("thinking").is_none(), "{body}");
    assert!(!body.to_string().contains("A greeting."), "{body}");
    Ok(())
}

/// A budget the API would refuse fails when the adapter is made, saying
/// what to change.
#[test]
fn a_budget_the_api_refuses_fails_naming_the_bounds() {
    for (budget, max_tokens) in [(512, 8192), (8192, 8192), (9000, 8192)] {
        let config = AnthropicConfig::default()
            .with_max_tokens(max_tokens)
            .with_thinking_budget(budget);
        let error = AnthropicAdapter::new(config, None)
            .err()
            .map(|error| error.to_string())
            .unwrap_or_default();
        assert!(
            error.contains(&format!("`thinking_budget` = {budget}"))
                && error.contains("at least 1024")
                && error.contains(&format!("below `max_tokens` = {max_tokens}")),
            "{budget}: {error}"
        );
    }
    let fine = AnthropicConfig::default()
        .with_max_tokens(8192)
        .with_thinking_budget(1024);
    assert!(AnthropicAdapter::new(fine, None).is_ok());
}

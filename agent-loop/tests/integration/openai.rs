//! The OpenAI-compatible adapter, end to end against a local HTTP server
//! the test starts on 127.0.0.1 (no network).

use crate::support;

use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use dsh_agent_loop::{
    Agent, AgentLoop, AgentOptions, Event, FinishReason, Image, LoopEvent, Message, ModelAdapter,
    ModelError, ModelRequest, ModelResponse, OpenAiAdapter, OpenAiConfig, ResponseLimit, Session,
    Thought, ToolCall, Usage,
};
use dsh_system_prompt::Registration;
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
    content_type: &'static str,
    body: Vec<Piece>,
    delay: Duration,
    headers: Vec<(&'static str, &'static str)>,
}

/// A part of a canned body; the parts are sent in order.
#[derive(Clone)]
enum Piece {
    /// Bytes, written at once.
    Bytes(String),
    /// Waits until this fires, five seconds at most.
    Wait(Arc<Notify>),
    /// Breaks the connection before the body is complete.
    Break,
    /// These bytes, written this many times, made as they are written
    /// (a flood costs the test server no memory).
    Repeat(Bytes, usize),
}

impl Canned {
    fn json(body: Value) -> Self {
        Self {
            content_type: "application/json",
            ..Self::raw(StatusCode::OK, body.to_string())
        }
    }

    fn raw(status: StatusCode, body: impl Into<String>) -> Self {
        Self {
            status,
            content_type: "text/plain; charset=utf-8",
            body: vec![Piece::Bytes(body.into())],
            delay: Duration::ZERO,
            headers: Vec::new(),
        }
    }

    /// A stream of server-sent events.
    fn events(body: impl IntoIterator<Item = Piece>) -> Self {
        Self {
            status: StatusCode::OK,
            content_type: "text/event-stream",
            body: body.into_iter().collect(),
            delay: Duration::ZERO,
            headers: Vec::new(),
        }
    }

    fn after(mut self, delay: Duration) -> Self {
        self.delay = delay;
        self
    }

    fn with_header(mut self, name: &'static str, value: &'static str) -> Self {
        self.headers.push((name, value));
        self
    }
}

/// The body of `pieces`, written as they come.
fn http_body(pieces: Vec<Piece>) -> Body {
    Body::from_stream(futures::stream::unfold(
        pieces.into_iter().peekable(),
        |mut pieces| async move {
            loop {
                if let Some(Piece::Repeat(bytes, times)) = pieces.peek_mut()
                    && *times > 0
                {
                    *times -= 1;
                    let bytes = bytes.clone();
                    return Some((Ok(bytes), pieces));
                }
                match pieces.next()? {
                    Piece::Bytes(bytes) => return Some((Ok(Bytes::from(bytes)), pieces)),
                    Piece::Repeat(..) => {}
                    Piece::Wait(notify) => {
                        // Past five seconds, go on anyway: a test that
                        // needed the notify fails on its time check.
                        let _ =
                            tokio::time::timeout(Duration::from_secs(5), notify.notified()).await;
                    }
                    Piece::Break => {
                        let broken = std::io::Error::other("the test server breaks the connection");
                        return Some((Err(broken), pieces));
                    }
                }
            }
        },
    ))
}

/// What the fake server received: the body and the authorization header
/// of each request.
type Server = support::FakeServer<Canned, (Value, Option<String>)>;

async fn completions(
    State(server): State<Arc<Server>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let body = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let authorization = headers
        .get(header::AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .map(str::to_owned);
    match server.answer((body, authorization)) {
        Some(answer) => {
            tokio::time::sleep(answer.delay).await;
            support::canned_response(
                answer.status,
                answer.content_type,
                http_body(answer.body),
                answer.headers,
            )
        }
        None => (
            StatusCode::INTERNAL_SERVER_ERROR,
            "the test server ran out of answers",
        )
            .into_response(),
    }
}

/// Starts the fake server; returns its base URL (`http://127.0.0.1:N/v1`).
async fn serve(
    answers: impl IntoIterator<Item = Canned>,
) -> Result<(String, Arc<Server>), std::io::Error> {
    support::start_fake_server("/v1", "/chat/completions", post(completions), answers).await
}

fn request(system: Option<&str>, text: &str) -> ModelRequest {
    ModelRequest {
        model: "test-model".into(),
        system: system.map(str::to_owned),
        tools: Vec::new(),
        messages: vec![Message::User { text: text.into() }],
        session: None,
        effort: None,
        max_tokens: None,
    }
}

fn completion(message: Value) -> Value {
    json!({
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
    })
}

/// A whole (not streamed) answer of `text` and no tool call.
fn answer(text: &str) -> Canned {
    Canned::json(completion(json!({"role": "assistant", "content": text})))
}

/// A whole (not streamed) answer of `content` calling `tool_calls`.
fn calling(content: Value, tool_calls: Value) -> Canned {
    Canned::json(completion(json!({
        "role": "assistant",
        "content": content,
        "tool_calls": tool_calls,
    })))
}

/// A loop with the [`Echo`] tool over an adapter without a key for the
/// fake server at `base_url`.
fn echo_loop(base_url: &str) -> Result<(AgentLoop, Registration), Box<dyn std::error::Error>> {
    let adapter = Arc::new(OpenAiAdapter::new(OpenAiConfig::new(base_url), None)?);
    support::agent_loop(vec![Arc::new(Echo::default())], adapter)
}

/// An adapter without a key for a fake server that gives `answers`.
async fn local_adapter(
    answers: impl IntoIterator<Item = Canned>,
) -> Result<(OpenAiAdapter, Arc<Server>), Box<dyn std::error::Error>> {
    let (base_url, server) = serve(answers).await?;
    Ok((
        OpenAiAdapter::new(OpenAiConfig::new(&base_url), None)?,
        server,
    ))
}

/// The error of a request `hi` that must fail.
async fn error_of(adapter: &OpenAiAdapter) -> Result<ModelError, &'static str> {
    complete(adapter, &request(None, "hi"))
        .await
        .err()
        .ok_or("expected an error")
}

async fn complete(
    adapter: &OpenAiAdapter,
    request: &ModelRequest,
) -> Result<ModelResponse, ModelError> {
    adapter
        .complete(
            request,
            &|_: dsh_agent_loop::Piece<'_>| {},
            &CancellationToken::new(),
        )
        .await
}

/// One server-sent event whose data is `chunk`.
fn event(chunk: Value) -> Piece {
    Piece::Bytes(sse(&chunk))
}

fn sse(chunk: &Value) -> String {
    format!("data: {chunk}\n\n")
}

/// The event that ends a stream.
fn done() -> Piece {
    Piece::Bytes("data: [DONE]\n\n".to_owned())
}

/// A chunk of a streamed completion with this `delta`.
fn chunk(delta: Value) -> Value {
    json!({
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": delta, "finish_reason": null}],
    })
}

fn text_delta(text: &str) -> Value {
    chunk(json!({"content": text}))
}

fn tool_delta(call: Value) -> Value {
    chunk(json!({"tool_calls": [call]}))
}

/// Streams a request `hi`, recording each piece of text `on_text` gets;
/// calls `also` with each piece too.
async fn stream(
    adapter: &OpenAiAdapter,
    cancel: &CancellationToken,
    also: impl Fn(&str) + Send + Sync,
) -> (Result<ModelResponse, ModelError>, Vec<String>) {
    let pieces = Mutex::new(Vec::new());
    let on_text = |piece: dsh_agent_loop::Piece<'_>| {
        let piece = support::piece_text(piece);
        also(&piece);
        pieces.lock().push(piece);
    };
    let response = adapter
        .complete(&request(None, "hi"), &on_text, cancel)
        .await;
    (response, pieces.into_inner())
}

#[tokio::test]
async fn a_plain_answer() -> TestResult {
    let (base_url, server) = serve([answer("Hello there.")]).await?;
    let adapter = OpenAiAdapter::new(OpenAiConfig::new(&base_url), Some("sk-test".into()))?;
    let response = complete(&adapter, &request(Some("You are terse."), "hi")).await?;
    assert_eq!(response, ModelResponse::text("Hello there."));

    let received = server.received.lock();
    let (body, authorization) = &received[0];
    assert_eq!(authorization.as_deref(), Some("Bearer sk-test"));
    assert_eq!(
        body,
        &json!({
            "model": "test-model",
            "messages": [
                {"role": "system", "content": "You are terse."},
                {"role": "user", "content": "hi"},
            ],
            "stream": true,
            "stream_options": {"include_usage": true},
        }),
        "no `tools` key when there are no tools"
    );
    Ok(())
}

/// A request's own limit (an MCP server's sampling asks one) is sent as
/// `max_completion_tokens`; without one, no key is.
#[tokio::test]
async fn a_requests_own_token_limit_is_sent_as_max_completion_tokens() -> TestResult {
    let (adapter, server) = local_adapter([answer("a")]).await?;
    let mut limited = request(None, "hi");
    limited.max_tokens = Some(64);
    complete(&adapter, &limited).await?;
    assert_eq!(server.received.lock()[0].0["max_completion_tokens"], 64);
    Ok(())
}

#[tokio::test]
async fn a_tools_image_is_described_in_its_result_for_chat_completions() -> TestResult {
    let (adapter, server) = local_adapter([answer("ok")]).await?;
    let mut with_image = request(None, "look");
    with_image.messages.extend([
        Message::Assistant {
            text: String::new(),
            tool_calls: vec![ToolCall::new("c1", "shot", "{}")],
            thoughts: Vec::new(),
        },
        Message::Tool {
            call_id: "c1".into(),
            name: "shot".into(),
            text: "the screen:".into(),
            is_error: false,
            images: vec![Image {
                mime_type: "image/png".into(),
                data: "iVBORw0KGgo=".into(),
            }],
        },
    ]);
    complete(&adapter, &with_image).await?;
    let received = server.received.lock();
    assert_eq!(
        received[0].0["messages"][2],
        json!({
            "role": "tool",
            "tool_call_id": "c1",
            "content": "the screen:\n[image: image/png, 8 bytes, not shown]",
        })
    );
    Ok(())
}

#[tokio::test]
async fn no_system_prompt_sends_no_system_message_and_no_key_sends_no_header() -> TestResult {
    let (base_url, server) = serve([answer("ok")]).await?;
    let adapter = OpenAiAdapter::new(OpenAiConfig::new(format!("{base_url}/")), None)?;
    complete(&adapter, &request(None, "hi")).await?;
    let received = server.received.lock();
    assert_eq!(
        received[0].0["messages"],
        json!([{"role": "user", "content": "hi"}])
    );
    assert_eq!(received[0].1, None);
    Ok(())
}

#[tokio::test]
async fn a_tool_call_round_trip_through_the_loop() -> TestResult {
    let (base_url, server) = serve([
        calling(
            Value::Null,
            json!([{
                "id": "call_9",
                "type": "function",
                "function": {"name": "echo", "arguments": "{\"text\":\"pong\"}"},
            }]),
        ),
        answer("It said pong."),
    ])
    .await?;
    let (agent_loop, _installed) = echo_loop(&base_url)?;
    let agent = Agent::new(
        "coder",
        AgentOptions::new("test-model").with_persona("You are <<model>>."),
    );
    let summary = support::turn(&agent_loop, &agent, &mut Session::new(), "ping").await?;
    assert_eq!(summary.answer, "It said pong.");

    let received = server.received.lock();
    assert_eq!(received.len(), 2);
    let first = &received[0].0;
    assert_eq!(
        first["tools"],
        json!([{
            "type": "function",
            "function": {
                "name": "echo",
                "description": "Returns `text` unchanged.",
                "parameters": {
                    "type": "object",
                    "properties": {"text": {"type": "string", "description": "The text to return."}},
                    "required": ["text"],
                    "additionalProperties": false,
                },
            },
        }])
    );
    let second = &received[1].0;
    assert_eq!(
        second["messages"],
        json!([
            {"role": "system", "content": "You are test-model."},
            {"role": "user", "content": "ping"},
            {
                "role": "assistant",
                "content": null,
                "tool_calls": [{
                    "id": "call_9",
                    "type": "function",
                    "function": {"name": "echo", "arguments": "{\"text\":\"pong\"}"},
                }],
            },
            {"role": "tool", "tool_call_id": "call_9", "content": "pong"},
        ])
    );
    Ok(())
}

/// The server's word on its prompt cache reaches the loop's observers
/// with each answer, step by step: from the last chunk of a stream, and from a plain
/// completion.
#[tokio::test]
async fn cached_tokens_reach_the_observers_with_the_answer() -> TestResult {
    let usage = |prompt: u64, cached: u64| {
        json!({
            "prompt_tokens": prompt,
            "completion_tokens": 3,
            "total_tokens": prompt + 3,
            "prompt_tokens_details": {"cached_tokens": cached, "audio_tokens": 0},
        })
    };
    let (base_url, _server) = serve([
        Canned::events([
            event(tool_delta(json!({
                "index": 0, "id": "call_1", "type": "function",
                "function": {"name": "echo", "arguments": "{\"text\":\"pong\"}"},
            }))),
            event(json!({"id": "chatcmpl-1", "choices": [], "usage": usage(1_500, 0)})),
            done(),
        ]),
        Canned::json(json!({
            "id": "chatcmpl-2",
            "object": "chat.completion",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "pong"}, "finish_reason": "stop"}],
            "usage": usage(1_540, 1_408),
        })),
    ])
    .await?;
    let (agent_loop, _installed) = echo_loop(&base_url)?;
    let seen = Arc::new(Mutex::new(Vec::new()));
    let agent_loop = agent_loop.observed_by({
        let seen = Arc::clone(&seen);
        Arc::new(move |event: LoopEvent<'_>| {
            if let LoopEvent::Response(answer) = event {
                seen.lock().push((answer.step, answer.response.usage));
            }
        })
    });
    let agent = Agent::new("coder", AgentOptions::new("test-model"));
    support::turn(&agent_loop, &agent, &mut Session::new(), "ping").await?;
    assert_eq!(
        *seen.lock(),
        [
            (1, Some(Usage::new(1_500, 3).with_cached_prompt_tokens(0))),
            (
                2,
                Some(Usage::new(1_540, 3).with_cached_prompt_tokens(1_408))
            ),
        ]
    );
    Ok(())
}

#[tokio::test]
async fn tool_calls_map_from_the_wire() -> TestResult {
    let (adapter, _server) = local_adapter([calling(
        json!("Reading."),
        json!([
            {"id": "a", "type": "function", "function": {"name": "read", "arguments": "{\"file_path\":\"x\"}"}},
            {"type": "function", "function": {"name": "bash"}},
        ]),
    )])
    .await?;
    let response = complete(&adapter, &request(None, "hi")).await?;
    assert_eq!(
        response,
        ModelResponse::text("Reading.")
            .with_tool_call(ToolCall::new("a", "read", r#"{"file_path":"x"}"#))
            .with_tool_call(ToolCall::new("call_2", "bash", "{}"))
    );
    Ok(())
}

#[tokio::test]
async fn a_4xx_is_a_status_error_with_the_servers_message_and_the_fix() -> TestResult {
    let (base_url, _server) = serve([Canned::raw(
        StatusCode::UNAUTHORIZED,
        json!({"error": {"message": "Incorrect API key provided", "type": "invalid_request_error"}}).to_string(),
    )])
    .await?;
    let adapter = OpenAiAdapter::new(OpenAiConfig::new(&base_url), Some("sk-wrong".into()))?;
    let error = error_of(&adapter).await?;
    assert!(
        matches!(&error, ModelError::Status { status: 401, message, .. } if message == "Incorrect API key provided"),
        "{error:?}"
    );
    let message = error.to_string();
    assert!(message.contains("HTTP 401"), "{message}");
    assert!(message.contains("api_key_env"), "{message}");
    Ok(())
}

#[tokio::test]
async fn a_5xx_is_a_status_error_with_the_body() -> TestResult {
    let (adapter, _server) = local_adapter([Canned::raw(
        StatusCode::SERVICE_UNAVAILABLE,
        "upstream unavailable",
    )])
    .await?;
    let error = error_of(&adapter).await?;
    assert!(
        matches!(&error, ModelError::Status { status: 503, message, .. } if message == "upstream unavailable"),
        "{error:?}"
    );
    assert!(error.to_string().contains("try again later"), "{error}");
    Ok(())
}

/// A rate limit's answer: 429, with the server's message.
fn rate_limited() -> Canned {
    Canned::raw(
        StatusCode::TOO_MANY_REQUESTS,
        json!({"error": {"message": "Rate limit reached", "type": "requests"}}).to_string(),
    )
}

/// An adapter for `base_url` whose own wait before a retry is `base`.
fn retrying_adapter(
    base_url: &str,
    max_retries: u32,
    base: Duration,
) -> Result<OpenAiAdapter, ModelError> {
    OpenAiAdapter::new(
        OpenAiConfig::new(base_url).with_retries(max_retries, base),
        None,
    )
}

/// A 429 is sent again, as Anthropic's busy statuses are, after the
/// server's `retry-after` rather than the adapter's own wait (30 s here,
/// which the test would notice).
#[tokio::test]
async fn a_429_is_retried_after_its_retry_after() -> TestResult {
    let (base_url, server) =
        serve([rate_limited().with_header("retry-after", "0"), answer("ok")]).await?;
    let adapter = retrying_adapter(&base_url, 4, Duration::from_secs(30))?;
    let started = std::time::Instant::now();
    let response = complete(&adapter, &request(None, "hi")).await?;
    assert_eq!(response, ModelResponse::text("ok"));
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "waited {:?}",
        started.elapsed()
    );
    let received = server.received.lock();
    assert_eq!(received.len(), 2, "one retry");
    assert_eq!(
        received[0].0, received[1].0,
        "the retry sends the same request"
    );
    Ok(())
}

/// When every retry meets a 429, the last one is the answer, and says how
/// many retries were spent.
#[tokio::test]
async fn a_server_busy_after_every_retry_is_a_status_error() -> TestResult {
    let (base_url, server) = serve([
        rate_limited().with_header("retry-after-ms", "1"),
        rate_limited().with_header("retry-after-ms", "1"),
        rate_limited().with_header("retry-after-ms", "1"),
    ])
    .await?;
    let adapter = retrying_adapter(&base_url, 2, Duration::from_millis(1))?;
    let error = error_of(&adapter).await?;
    assert!(
        matches!(&error, ModelError::Status { status: 429, message, .. }
            if message == "Rate limit reached (still busy after 2 retries)"),
        "{error:?}"
    );
    assert_eq!(server.received.lock().len(), 3);
    Ok(())
}

/// A `retry-after` too large for any wait (`1e20` seconds, `1e300`
/// milliseconds) fails the request at once with the server's status and
/// message, and says why it was not retried; it does not panic the
/// adapter.
#[tokio::test]
async fn a_retry_after_past_the_longest_wait_fails_at_once() -> TestResult {
    for (name, value) in [("retry-after", "1e20"), ("retry-after-ms", "1e300")] {
        let (base_url, server) = serve([rate_limited().with_header(name, value)]).await?;
        let adapter = retrying_adapter(&base_url, 4, Duration::from_millis(1))?;
        let error = error_of(&adapter).await?;
        assert!(
            matches!(&error, ModelError::Status { status: 429, message, .. }
                if message == "Rate limit reached (the server asks for a wait longer than the 60 s dsh accepts)"),
            "{name}: {error:?}"
        );
        assert_eq!(server.received.lock().len(), 1, "{name}: no retry");
    }
    Ok(())
}

/// The server's `x-should-retry` wins over the status: a 429 it says not
/// to retry is the answer, a 500 it says to retry is sent again.
#[tokio::test]
async fn x_should_retry_decides_over_the_status() -> TestResult {
    let (base_url, server) = serve([
        rate_limited().with_header("x-should-retry", "false"),
        Canned::raw(StatusCode::INTERNAL_SERVER_ERROR, "blip")
            .with_header("x-should-retry", "true"),
        answer("ok"),
    ])
    .await?;
    let adapter = retrying_adapter(&base_url, 4, Duration::from_millis(1))?;
    let first = complete(&adapter, &request(None, "hi")).await;
    assert!(
        matches!(first, Err(ModelError::Status { status: 429, .. })),
        "{first:?}"
    );
    let second = complete(&adapter, &request(None, "hi")).await?;
    assert_eq!(second, ModelResponse::text("ok"));
    assert_eq!(server.received.lock().len(), 3);
    Ok(())
}

/// Sends a request `hi` through `adapter`, cancelled `after` it starts;
/// fails unless it ends cancelled, `within` that time of its start.
async fn assert_cancelled(
    adapter: &OpenAiAdapter,
    after: Duration,
    within: Duration,
) -> TestResult {
    let (cancel, canceller) = support::cancel_after(after);
    let started = std::time::Instant::now();
    let result = adapter
        .complete(
            &request(None, "hi"),
            &|_: dsh_agent_loop::Piece<'_>| {},
            &cancel,
        )
        .await;
    canceller.await?;
    assert!(matches!(result, Err(ModelError::Cancelled)), "{result:?}");
    assert!(started.elapsed() < within);
    Ok(())
}

/// Cancelling while the adapter waits out a `retry-after` ends the wait.
#[tokio::test]
async fn cancellation_ends_the_wait_before_a_retry() -> TestResult {
    let (base_url, server) = serve([rate_limited().with_header("retry-after", "30")]).await?;
    let adapter = retrying_adapter(&base_url, 4, Duration::from_millis(1))?;
    assert_cancelled(
        &adapter,
        Duration::from_millis(200),
        Duration::from_secs(10),
    )
    .await?;
    assert_eq!(server.received.lock().len(), 1, "no retry after the cancel");
    Ok(())
}

/// Fails unless `error` says the server sent invalid JSON and quotes it
/// (every invalid text of these tests says `not json`); returns its
/// message.
fn invalid_json_message(error: &ModelError) -> String {
    assert!(
        matches!(error, ModelError::InvalidResponse { .. }),
        "{error:?}"
    );
    let message = error.to_string();
    assert!(message.contains("invalid JSON"), "{message}");
    assert!(
        message.contains("not json"),
        "the text is quoted: {message}"
    );
    message
}

#[tokio::test]
async fn malformed_json_is_an_invalid_response() -> TestResult {
    let (adapter, _server) = local_adapter([
        Canned::raw(StatusCode::OK, "{\"choices\": [ this is not json"),
        Canned::json(json!({"choices": [{"message": {"content": 7}}]})),
        Canned::json(json!({"choices": []})),
    ])
    .await?;

    invalid_json_message(&error_of(&adapter).await?);

    let shape = error_of(&adapter).await?;
    let message = shape.to_string();
    assert!(message.contains("choices[0].message.content"), "{message}");

    let empty = error_of(&adapter).await?;
    assert!(empty.to_string().contains("`choices` is empty"), "{empty}");
    Ok(())
}

/// An answer that comes five seconds late.
fn late() -> Canned {
    Canned::json(completion(json!({"content": "late"}))).after(Duration::from_secs(5))
}

/// The error of a request `hi` to a server that gives `answer`, sent by an
/// adapter whose timeout is `timeout_ms`; fails unless it is that timeout,
/// and reported well before the answer would have come.
async fn timeout_error(
    answer: Canned,
    timeout_ms: u64,
) -> Result<ModelError, Box<dyn std::error::Error>> {
    let (base_url, _server) = serve([answer]).await?;
    let config = OpenAiConfig::new(&base_url).with_timeout(Duration::from_millis(timeout_ms));
    let adapter = OpenAiAdapter::new(config, None)?;
    let started = std::time::Instant::now();
    let error = error_of(&adapter).await?;
    assert!(
        matches!(error, ModelError::Timeout { timeout_ms: ms, .. } if ms == timeout_ms),
        "{error:?}"
    );
    assert!(started.elapsed() < Duration::from_secs(4));
    Ok(error)
}

#[tokio::test]
async fn a_slow_server_times_out() -> TestResult {
    let error = timeout_error(late(), 200).await?;
    assert!(error.to_string().contains("timeout_ms"), "{error}");
    Ok(())
}

#[tokio::test]
async fn cancellation_stops_waiting_for_the_server() -> TestResult {
    let (base_url, _server) = serve([late()]).await?;
    let adapter = OpenAiAdapter::new(OpenAiConfig::new(&base_url), None)?;
    assert_cancelled(&adapter, Duration::from_millis(50), Duration::from_secs(4)).await
}

#[tokio::test]
async fn a_streamed_answer_reaches_on_text_piece_by_piece() -> TestResult {
    let first_piece = Arc::new(Notify::new());
    let split = sse(&text_delta("look"));
    let (head, tail) = split.split_at(10);
    let (adapter, server) = local_adapter([Canned::events([
        event(chunk(json!({"role": "assistant", "content": ""}))),
        event(text_delta("Let me ")),
        // The rest only once the first piece has reached `on_text`.
        Piece::Wait(Arc::clone(&first_piece)),
        // One event over two writes.
        Piece::Bytes(head.to_owned()),
        Piece::Bytes(tail.to_owned()),
        event(tool_delta(json!({
            "index": 0, "id": "call_a", "type": "function",
            "function": {"name": "read", "arguments": ""},
        }))),
        event(tool_delta(json!({
            "index": 1, "id": "call_b", "type": "function",
            "function": {"name": "bash", "arguments": "{\"comm"},
        }))),
        event(tool_delta(
            json!({"index": 0, "function": {"arguments": "{\"file_path\":"}}),
        )),
        event(tool_delta(
            json!({"index": 1, "function": {"arguments": "and\":\"ls\"}"}}),
        )),
        event(tool_delta(
            json!({"index": 0, "function": {"arguments": "\"x\"}"}}),
        )),
        event(text_delta(".")),
        event(json!({
            "id": "chatcmpl-1",
            "object": "chat.completion.chunk",
            "choices": [],
            "usage": {"prompt_tokens": 12, "completion_tokens": 7, "total_tokens": 19},
        })),
        done(),
    ])])
    .await?;
    let started = std::time::Instant::now();
    let (response, pieces) = stream(&adapter, &CancellationToken::new(), |_| {
        first_piece.notify_one()
    })
    .await;
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "the first piece reached `on_text` only after the stream ended"
    );
    assert_eq!(pieces, ["Let me ", "look", "."]);
    assert_eq!(
        response?,
        ModelResponse::text("Let me look.")
            .with_tool_call(ToolCall::new("call_a", "read", r#"{"file_path":"x"}"#))
            .with_tool_call(ToolCall::new("call_b", "bash", r#"{"command":"ls"}"#))
            .with_usage(Usage::new(12, 7))
    );

    let received = server.received.lock();
    assert_eq!(received[0].0["stream"], json!(true));
    assert_eq!(
        received[0].0["stream_options"],
        json!({"include_usage": true})
    );
    Ok(())
}

#[tokio::test]
async fn a_server_that_does_not_stream_still_answers() -> TestResult {
    let (adapter, server) = local_adapter([calling(
        json!("All at once."),
        json!([{"id": "a", "type": "function", "function": {"name": "read", "arguments": "{}"}}]),
    )])
    .await?;
    let (response, pieces) = stream(&adapter, &CancellationToken::new(), |_| {}).await;
    assert_eq!(
        response?,
        ModelResponse::text("All at once.").with_tool_call(ToolCall::new("a", "read", "{}"))
    );
    assert_eq!(pieces, ["All at once."]);
    assert_eq!(server.received.lock()[0].0["stream"], json!(true));
    Ok(())
}

#[tokio::test]
async fn a_stream_that_ends_without_done_is_interrupted() -> TestResult {
    let (adapter, _server) =
        local_adapter([Canned::events([event(text_delta("Half an"))])]).await?;
    let (response, pieces) = stream(&adapter, &CancellationToken::new(), |_| {}).await;
    let error = response.err().ok_or("expected an error")?;
    assert!(
        matches!(&error, ModelError::Interrupted { message, .. } if message.contains("`data: [DONE]`")),
        "{error:?}"
    );
    assert!(error.to_string().contains("try again"), "{error}");
    assert_eq!(pieces, ["Half an"]);
    Ok(())
}

#[tokio::test]
async fn a_stream_that_breaks_mid_way_is_interrupted() -> TestResult {
    let first_piece = Arc::new(Notify::new());
    let (adapter, _server) = local_adapter([Canned::events([
        event(text_delta("Half an")),
        // Break only once the first piece is through, so the break is
        // mid-way and not before the answer's head.
        Piece::Wait(Arc::clone(&first_piece)),
        Piece::Break,
    ])])
    .await?;
    let (response, pieces) = stream(&adapter, &CancellationToken::new(), |_| {
        first_piece.notify_one()
    })
    .await;
    let error = response.err().ok_or("expected an error")?;
    assert!(matches!(error, ModelError::Interrupted { .. }), "{error:?}");
    assert!(error.to_string().contains("broke off"), "{error}");
    assert_eq!(pieces, ["Half an"]);
    Ok(())
}

#[tokio::test]
async fn a_chunk_that_is_not_json_is_an_invalid_response() -> TestResult {
    let (adapter, _server) = local_adapter([Canned::events([
        event(text_delta("ok")),
        Piece::Bytes("data: {\"choices\": [ this is not json\n\n".to_owned()),
        done(),
    ])])
    .await?;
    let message = invalid_json_message(&error_of(&adapter).await?);
    assert!(message.contains("event 2 of the stream"), "{message}");
    Ok(())
}

#[tokio::test]
async fn cancellation_stops_reading_the_stream() -> TestResult {
    let (adapter, _server) = local_adapter([Canned::events([
        event(text_delta("Once")),
        // Never notified.
        Piece::Wait(Arc::new(Notify::new())),
        event(text_delta(" upon")),
        done(),
    ])])
    .await?;
    let cancel = CancellationToken::new();
    let started = std::time::Instant::now();
    let (response, pieces) = stream(&adapter, &cancel, |_| {
        cancel.cancel();
    })
    .await;
    assert!(
        matches!(response, Err(ModelError::Cancelled)),
        "{response:?}"
    );
    assert!(started.elapsed() < Duration::from_secs(4));
    assert_eq!(pieces, ["Once"]);
    Ok(())
}

#[tokio::test]
async fn the_timeout_applies_while_streaming() -> TestResult {
    let never = Arc::new(Notify::new());
    let stalled = Canned::events([event(text_delta("Once")), Piece::Wait(never), done()]);
    timeout_error(stalled, 300).await?;
    Ok(())
}

#[tokio::test]
async fn an_unreachable_server_says_to_check_the_base_url() -> TestResult {
    let address = support::unused_address()?;
    let adapter = OpenAiAdapter::new(OpenAiConfig::new(format!("http://{address}/v1")), None)?;
    let error = error_of(&adapter).await?;
    assert!(matches!(error, ModelError::Unreachable { .. }), "{error:?}");
    assert!(error.to_string().contains("check `base_url`"), "{error}");
    Ok(())
}

#[test]
fn configuration_errors_say_what_to_fix() {
    let missing = OpenAiAdapter::from_env(
        OpenAiConfig::new("http://127.0.0.1:1/v1")
            .with_api_key_env("DSH_TEST_SURELY_UNSET_API_KEY"),
    )
    .err()
    .map(|error| error.to_string())
    .unwrap_or_default();
    assert!(
        missing.contains("`DSH_TEST_SURELY_UNSET_API_KEY`"),
        "{missing}"
    );
    assert!(missing.contains("export"), "{missing}");

    let bad_url = OpenAiAdapter::new(OpenAiConfig::new("localhost:8080/v1"), None)
        .err()
        .map(|error| error.to_string())
        .unwrap_or_default();
    assert!(bad_url.contains("`localhost:8080/v1`"), "{bad_url}");
    assert!(bad_url.contains("base_url"), "{bad_url}");
}

/// Each request names its session as `prompt_cache_key`, so a session's
/// requests reach the same prompt cache; a deployment can turn it off for
/// a server that rejects fields it does not know.
#[tokio::test]
async fn the_session_is_the_prompt_cache_key_unless_turned_off() -> TestResult {
    let answer = || answer("ok");
    let (base_url, server) = serve([answer(), answer(), answer()]).await?;
    let agent = Agent::new("coder", AgentOptions::new("test-model"));
    let cancel = CancellationToken::new();
    for send in [true, false] {
        let config = OpenAiConfig::new(&base_url).with_prompt_cache_key(send);
        let adapter = Arc::new(OpenAiAdapter::new(config, None)?);
        let (agent_loop, _installed) = support::agent_loop(Vec::new(), adapter)?;
        let mut session = Session::new();
        agent_loop
            .run_turn(&agent, &mut session, "hi", &cancel)
            .await?;
        let received = server.received.lock();
        let body = &received.last().ok_or("no request")?.0;
        if send {
            assert_eq!(body["prompt_cache_key"], session.id().as_str());
        } else {
            assert!(body.get("prompt_cache_key").is_none(), "{body}");
        }
    }
    // A request outside any session carries no key.
    let adapter = OpenAiAdapter::new(OpenAiConfig::new(&base_url), None)?;
    complete(&adapter, &request(None, "hi")).await?;
    assert!(
        server.received.lock()[2]
            .0
            .get("prompt_cache_key")
            .is_none()
    );
    Ok(())
}

/// `times` events of `chunk`, made as they are sent.
fn flood_of(chunk: &Value, times: usize) -> Piece {
    Piece::Repeat(Bytes::from(sse(chunk)), times)
}

/// 64 KiB of `x`.
fn block() -> String {
    "x".repeat(64 << 10)
}

/// Fails unless `error` says the server at `adapter`'s endpoint passed
/// `limit`, and names it.
fn assert_too_large(error: &ModelError, adapter: &OpenAiAdapter, limit: ResponseLimit) {
    assert!(
        matches!(error, ModelError::TooLarge { url, limit: passed }
            if url == adapter.endpoint() && *passed == limit),
        "{error:?}"
    );
    let message = error.to_string();
    assert!(message.contains(&limit.to_string()), "{message}");
    assert!(message.contains(adapter.endpoint()), "{message}");
}

/// A server that ignores `max_tokens` and streams 100 MiB of text is cut
/// off at the answer limit, not read to its end.
#[tokio::test]
async fn an_answer_past_the_answer_limit_fails_naming_it() -> TestResult {
    let (adapter, _server) = local_adapter([Canned::events([
        flood_of(&text_delta(&block()), 1600),
        done(),
    ])])
    .await?;
    let (response, pieces) = stream(&adapter, &CancellationToken::new(), |_| {}).await;
    let error = response.err().ok_or("expected an error")?;
    assert_too_large(&error, &adapter, ResponseLimit::Answer);
    let shown: usize = pieces.iter().map(String::len).sum();
    assert!(
        shown <= ResponseLimit::MAX_ANSWER + (64 << 10),
        "shown {shown} bytes"
    );
    Ok(())
}

/// A tool call's arguments count toward the answer limit as text does.
#[tokio::test]
async fn tool_call_arguments_count_toward_the_answer_limit() -> TestResult {
    let (adapter, _server) = local_adapter([Canned::events([
        event(tool_delta(json!({
            "index": 0, "id": "call_a", "type": "function",
            "function": {"name": "write", "arguments": ""},
        }))),
        flood_of(
            &tool_delta(json!({"index": 0, "function": {"arguments": block()}})),
            200,
        ),
        done(),
    ])])
    .await?;
    assert_too_large(&error_of(&adapter).await?, &adapter, ResponseLimit::Answer);
    Ok(())
}

/// One line of 200 MiB, never ended, is cut off at the event limit rather
/// than buffered whole.
#[tokio::test]
async fn an_event_past_the_event_limit_fails_naming_it() -> TestResult {
    let (adapter, _server) = local_adapter([Canned::events([
        event(text_delta("Start")),
        Piece::Bytes("data: ".to_owned()),
        Piece::Repeat(Bytes::from(block()), 3200),
    ])])
    .await?;
    assert_too_large(&error_of(&adapter).await?, &adapter, ResponseLimit::Event);
    Ok(())
}

/// A body that is not streamed is bounded too.
#[tokio::test]
async fn a_body_past_the_body_limit_fails_naming_it() -> TestResult {
    let (adapter, _server) = local_adapter([Canned {
        content_type: "application/json",
        body: vec![
            Piece::Bytes(r#"{"choices": [{"message": {"content": ""#.to_owned()),
            Piece::Repeat(Bytes::from(block()), 320),
            Piece::Bytes(r#""}}]}"#.to_owned()),
        ],
        ..Canned::raw(StatusCode::OK, "")
    }])
    .await?;
    assert_too_large(&error_of(&adapter).await?, &adapter, ResponseLimit::Body);
    Ok(())
}

/// A long answer within the limits is read whole, in small events or in
/// one large one: the limits change nothing for a real answer.
#[tokio::test]
async fn a_long_answer_within_the_limits_is_whole() -> TestResult {
    let large = "y".repeat(1 << 20);
    let (adapter, _server) = local_adapter([Canned::events([
        flood_of(&text_delta(&block()), 96),
        event(text_delta(&large)),
        done(),
    ])])
    .await?;
    let response = complete(&adapter, &request(None, "hi")).await?;
    assert_eq!(response.text.len(), 96 * (64 << 10) + (1 << 20));
    assert!(response.text.ends_with(&large));
    Ok(())
}

/// A router that answers every POST to `path` with a 307 to `location`.
fn redirecting(path: &str, location: String) -> axum::Router {
    axum::Router::new().route(
        path,
        post(move || async move {
            (
                StatusCode::TEMPORARY_REDIRECT,
                [(header::LOCATION, location)],
            )
        }),
    )
}

/// A 307 from the configured server to another origin (another port of
/// 127.0.0.1) is not followed: the request, its key and the conversation
/// never reach the other server, and the error names both origins and
/// says what to configure.
#[tokio::test]
async fn a_redirect_to_another_origin_is_refused_naming_both() -> TestResult {
    let (elsewhere, other) = serve([answer("the key and the conversation")]).await?;
    let router = redirecting(
        "/v1/chat/completions",
        format!("{elsewhere}/chat/completions"),
    );
    let address = support::serve_locally(router).await?;
    let adapter = OpenAiAdapter::new(
        OpenAiConfig::new(format!("http://{address}/v1")),
        Some("sk-secret".into()),
    )?;
    let error = error_of(&adapter).await?;
    let other_origin = elsewhere.trim_end_matches("/v1");
    assert!(
        matches!(&error, ModelError::CrossOriginRedirect { url, from, to }
            if url == adapter.endpoint() && *from == format!("http://{address}") && to == other_origin),
        "{error:?}"
    );
    let message = error.to_string();
    assert!(message.contains(other_origin), "{message}");
    assert!(
        message.contains("set `base_url` to the final URL"),
        "{message}"
    );
    assert!(
        other.received.lock().is_empty(),
        "the other origin got nothing"
    );
    Ok(())
}

/// A redirect within the origin (another path of the same server) is
/// followed, with the key: a server that moved its API within itself
/// still answers.
#[tokio::test]
async fn a_redirect_within_the_origin_is_followed() -> TestResult {
    let server = Arc::new(Server {
        answers: Mutex::new([answer("moved")].into()),
        received: Mutex::new(Vec::new()),
    });
    let router = redirecting("/old/chat/completions", "/v1/chat/completions".to_owned()).merge(
        axum::Router::new()
            .route("/v1/chat/completions", post(completions))
            .with_state(Arc::clone(&server)),
    );
    let address = support::serve_locally(router).await?;
    let adapter = OpenAiAdapter::new(
        OpenAiConfig::new(format!("http://{address}/old")),
        Some("sk-secret".into()),
    )?;
    let response = complete(&adapter, &request(None, "hi")).await?;
    assert_eq!(response, ModelResponse::text("moved"));
    let received = server.received.lock();
    assert_eq!(received.len(), 1);
    assert_eq!(received[0].1.as_deref(), Some("Bearer sk-secret"));
    Ok(())
}

/// A server that redirects to itself forever is left after five
/// redirects, saying so.
#[tokio::test]
async fn a_redirect_loop_within_the_origin_stops() -> TestResult {
    let router = redirecting("/v1/chat/completions", "/v1/chat/completions".to_owned());
    let address = support::serve_locally(router).await?;
    let adapter = OpenAiAdapter::new(OpenAiConfig::new(format!("http://{address}/v1")), None)?;
    let error = error_of(&adapter).await?;
    assert!(
        matches!(&error, ModelError::Unreachable { message, .. } if message.contains("more than 5 redirects")),
        "{error:?}"
    );
    Ok(())
}

/// A streamed answer whose last chunk has `finish_reason`.
fn finishing(text: &str, finish_reason: &str) -> Canned {
    let mut last = chunk(json!({}));
    last["choices"][0]["finish_reason"] = json!(finish_reason);
    Canned::events([event(text_delta(text)), event(last), done()])
}

#[tokio::test]
async fn the_apis_finish_reason_says_why_the_answer_stopped() -> TestResult {
    let refusal = Canned::events([
        event(chunk(json!({"refusal": "I can't "}))),
        event(chunk(json!({"refusal": "help with that."}))),
        done(),
    ]);
    let whole_refusal = Canned::json(completion(
        json!({"role": "assistant", "content": null, "refusal": "No."}),
    ));
    let (base_url, _server) = serve([
        finishing("Cut sho", "length"),
        finishing("", "content_filter"),
        refusal,
        whole_refusal,
        finishing("Done.", "stop"),
    ])
    .await?;
    let adapter = OpenAiAdapter::new(OpenAiConfig::new(&base_url), None)?;
    let mut seen = Vec::new();
    for _ in 0..5 {
        let (answer, _) = stream(&adapter, &CancellationToken::new(), |_| {}).await;
        let answer = answer?;
        seen.push((answer.text, answer.finish));
    }
    assert_eq!(
        seen,
        [
            ("Cut sho".to_owned(), FinishReason::MaxTokens),
            (String::new(), FinishReason::Refusal),
            ("I can't help with that.".to_owned(), FinishReason::Refusal),
            ("No.".to_owned(), FinishReason::Refusal),
            ("Done.".to_owned(), FinishReason::Stop),
        ]
    );
    Ok(())
}

/// Reasoning an OpenAI-compatible server streams — `reasoning_content`
/// (DeepSeek, vLLM, llama.cpp) or `reasoning` (OpenRouter) — reaches the
/// loop's observers (`LoopEvent::Thought`) as it arrives, and is recorded with the
/// answer. It goes back as `reasoning_content` with each answer of a turn
/// that called a tool (DeepSeek's thinking mode answers 400 without it),
/// from the turn's next request on; a turn without a call sends none back.
/// A whole answer's reasoning is read the same.
#[tokio::test]
async fn streamed_reasoning_reaches_the_observers_and_goes_back_for_a_turn_with_tool_calls()
-> TestResult {
    let (base_url, server) = serve([
        Canned::events([
            event(chunk(
                json!({"role": "assistant", "reasoning_content": "The user "}),
            )),
            event(chunk(json!({"reasoning_content": "wants an echo."}))),
            event(tool_delta(json!({
                "index": 0, "id": "call_1", "type": "function",
                "function": {"name": "echo", "arguments": "{\"text\":\"pong\"}"},
            }))),
            done(),
        ]),
        Canned::events([
            event(chunk(json!({"reasoning": "It echoed.", "content": null}))),
            event(text_delta("pong")),
            done(),
        ]),
        Canned::json(completion(json!({
            "role": "assistant", "content": "Hi.", "reasoning_content": "A greeting.",
        }))),
        answer("Bye."),
    ])
    .await?;
    let (agent_loop, _installed) = echo_loop(&base_url)?;
    let seen = Arc::new(Mutex::new(Vec::new()));
    let agent_loop = agent_loop.observed_by({
        let seen = Arc::clone(&seen);
        Arc::new(move |event: LoopEvent<'_>| match event {
            LoopEvent::Thought { piece, .. } => seen.lock().push(format!("thought: {piece}")),
            LoopEvent::Text { piece, .. } => seen.lock().push(piece.to_owned()),
            _ => {}
        })
    });
    let agent = Agent::new("coder", AgentOptions::new("test-model"));
    let mut session = Session::new();
    support::turn(&agent_loop, &agent, &mut session, "ping").await?;
    support::turn(&agent_loop, &agent, &mut session, "hi").await?;
    support::turn(&agent_loop, &agent, &mut session, "bye").await?;
    assert_eq!(
        *seen.lock(),
        [
            "thought: The user ",
            "thought: wants an echo.",
            "thought: It echoed.",
            "pong",
            "thought: A greeting.",
            "Hi.",
            "Bye."
        ]
    );
    let thoughts: Vec<Vec<Thought>> = session
        .events()
        .iter()
        .filter_map(|event| match event {
            Event::AssistantMessage { thoughts, .. } => Some(thoughts.clone()),
            _ => None,
        })
        .collect();
    let thought = |text: &str| Thought::Text {
        text: text.into(),
        signature: None,
    };
    assert_eq!(
        thoughts,
        [
            vec![thought("The user wants an echo.")],
            vec![thought("It echoed.")],
            vec![thought("A greeting.")],
            Vec::new(),
        ]
    );
    let received = server.received.lock();
    let sent_back = |request: usize| -> Vec<Value> {
        received[request].0["messages"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|message| message["role"] == "assistant")
            .map(|message| message["reasoning_content"].clone())
            .collect()
    };
    // Within the turn: the call's reasoning goes with it.
    assert_eq!(sent_back(1), [json!("The user wants an echo.")]);
    // In every later turn: each answer of the turn with the call; the
    // plain turn's answer carries no field at all.
    assert_eq!(
        sent_back(3),
        [
            json!("The user wants an echo."),
            json!("It echoed."),
            Value::Null
        ]
    );
    let plain = &received[3].0["messages"][5];
    assert_eq!(plain, &json!({"role": "assistant", "content": "Hi."}));
    Ok(())
}

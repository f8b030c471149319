//! The OpenAI-compatible adapter, end to end against a local HTTP server
//! the test starts on 127.0.0.1 (no network).

mod support;

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use dsh_agent_loop::{
    Agent, AgentOptions, Message, ModelAdapter, ModelError, ModelRequest, ModelResponse,
    OpenAiAdapter, OpenAiConfig, Session, ToolCall,
};
use parking_lot::Mutex;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use support::Echo;

type TestResult = Result<(), Box<dyn std::error::Error>>;

/// One canned HTTP answer of the fake server.
#[derive(Clone)]
struct Canned {
    status: StatusCode,
    body: String,
    delay: Duration,
}

impl Canned {
    fn json(body: Value) -> Self {
        Self::raw(StatusCode::OK, body.to_string())
    }

    fn raw(status: StatusCode, body: impl Into<String>) -> Self {
        Self {
            status,
            body: body.into(),
            delay: Duration::ZERO,
        }
    }

    fn after(mut self, delay: Duration) -> Self {
        self.delay = delay;
        self
    }
}

/// What the fake server received: the body and the authorization header
/// of each request.
#[derive(Default)]
struct Server {
    answers: Mutex<VecDeque<Canned>>,
    received: Mutex<Vec<(Value, Option<String>)>>,
}

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
    server.received.lock().push((body, authorization));
    let answer = server.answers.lock().pop_front();
    match answer {
        Some(answer) => {
            tokio::time::sleep(answer.delay).await;
            (answer.status, answer.body).into_response()
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
    let server = Arc::new(Server {
        answers: Mutex::new(answers.into_iter().collect()),
        ..Server::default()
    });
    let router = Router::new()
        .route("/v1/chat/completions", post(completions))
        .with_state(Arc::clone(&server));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let address = listener.local_addr()?;
    tokio::spawn(async move { axum::serve(listener, router).await });
    Ok((format!("http://{address}/v1"), server))
}

fn request(system: Option<&str>, text: &str) -> ModelRequest {
    ModelRequest {
        model: "test-model".into(),
        system: system.map(str::to_owned),
        tools: Vec::new(),
        messages: vec![Message::User { text: text.into() }],
    }
}

fn completion(message: Value) -> Value {
    json!({
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
    })
}

async fn complete(
    adapter: &OpenAiAdapter,
    request: &ModelRequest,
) -> Result<ModelResponse, ModelError> {
    adapter.complete(request, &CancellationToken::new()).await
}

#[tokio::test]
async fn a_plain_answer() -> TestResult {
    let (base_url, server) = serve([Canned::json(completion(
        json!({"role": "assistant", "content": "Hello there."}),
    ))])
    .await?;
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
        }),
        "no `tools` key when there are no tools"
    );
    Ok(())
}

#[tokio::test]
async fn no_system_prompt_sends_no_system_message_and_no_key_sends_no_header() -> TestResult {
    let (base_url, server) = serve([Canned::json(completion(
        json!({"role": "assistant", "content": "ok"}),
    ))])
    .await?;
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
        Canned::json(completion(json!({
            "role": "assistant",
            "content": null,
            "tool_calls": [{
                "id": "call_9",
                "type": "function",
                "function": {"name": "echo", "arguments": "{\"text\":\"pong\"}"},
            }],
        }))),
        Canned::json(completion(
            json!({"role": "assistant", "content": "It said pong."}),
        )),
    ])
    .await?;
    let adapter = Arc::new(OpenAiAdapter::new(OpenAiConfig::new(&base_url), None)?);
    let (agent_loop, _installed) = support::agent_loop(vec![Arc::new(Echo::default())], adapter)?;
    let agent = Agent::new(
        "coder",
        AgentOptions::new("test-model").with_persona("You are <<model>>."),
    );
    let summary = agent_loop
        .run_turn(
            &agent,
            &mut Session::new(),
            "ping",
            &CancellationToken::new(),
        )
        .await?;
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

#[tokio::test]
async fn tool_calls_map_from_the_wire() -> TestResult {
    let (base_url, _server) = serve([Canned::json(completion(json!({
        "role": "assistant",
        "content": "Reading.",
        "tool_calls": [
            {"id": "a", "type": "function", "function": {"name": "read", "arguments": "{\"file_path\":\"x\"}"}},
            {"type": "function", "function": {"name": "bash"}},
        ],
    })))])
    .await?;
    let adapter = OpenAiAdapter::new(OpenAiConfig::new(&base_url), None)?;
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
    let error = complete(&adapter, &request(None, "hi"))
        .await
        .err()
        .ok_or("expected an error")?;
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
    let (base_url, _server) = serve([Canned::raw(
        StatusCode::SERVICE_UNAVAILABLE,
        "upstream unavailable",
    )])
    .await?;
    let adapter = OpenAiAdapter::new(OpenAiConfig::new(&base_url), None)?;
    let error = complete(&adapter, &request(None, "hi"))
        .await
        .err()
        .ok_or("expected an error")?;
    assert!(
        matches!(&error, ModelError::Status { status: 503, message, .. } if message == "upstream unavailable"),
        "{error:?}"
    );
    assert!(error.to_string().contains("try again later"), "{error}");
    Ok(())
}

#[tokio::test]
async fn malformed_json_is_an_invalid_response() -> TestResult {
    let (base_url, _server) = serve([
        Canned::raw(StatusCode::OK, "{\"choices\": [ this is not json"),
        Canned::json(json!({"choices": [{"message": {"content": 7}}]})),
        Canned::json(json!({"choices": []})),
    ])
    .await?;
    let adapter = OpenAiAdapter::new(OpenAiConfig::new(&base_url), None)?;

    let syntax = complete(&adapter, &request(None, "hi"))
        .await
        .err()
        .ok_or("expected an error")?;
    assert!(
        matches!(syntax, ModelError::InvalidResponse { .. }),
        "{syntax:?}"
    );
    let message = syntax.to_string();
    assert!(message.contains("invalid JSON"), "{message}");
    assert!(
        message.contains("not json"),
        "the body is quoted: {message}"
    );

    let shape = complete(&adapter, &request(None, "hi"))
        .await
        .err()
        .ok_or("expected an error")?;
    let message = shape.to_string();
    assert!(message.contains("choices[0].message.content"), "{message}");

    let empty = complete(&adapter, &request(None, "hi"))
        .await
        .err()
        .ok_or("expected an error")?;
    assert!(empty.to_string().contains("`choices` is empty"), "{empty}");
    Ok(())
}

#[tokio::test]
async fn a_slow_server_times_out() -> TestResult {
    let (base_url, _server) =
        serve([Canned::json(completion(json!({"content": "late"}))).after(Duration::from_secs(5))])
            .await?;
    let config = OpenAiConfig::new(&base_url).with_timeout(Duration::from_millis(200));
    let adapter = OpenAiAdapter::new(config, None)?;
    let started = std::time::Instant::now();
    let error = complete(&adapter, &request(None, "hi"))
        .await
        .err()
        .ok_or("expected an error")?;
    assert!(
        matches!(
            error,
            ModelError::Timeout {
                timeout_ms: 200,
                ..
            }
        ),
        "{error:?}"
    );
    assert!(started.elapsed() < Duration::from_secs(4));
    assert!(error.to_string().contains("timeout_ms"), "{error}");
    Ok(())
}

#[tokio::test]
async fn cancellation_stops_waiting_for_the_server() -> TestResult {
    let (base_url, _server) =
        serve([Canned::json(completion(json!({"content": "late"}))).after(Duration::from_secs(5))])
            .await?;
    let adapter = OpenAiAdapter::new(OpenAiConfig::new(&base_url), None)?;
    let cancel = CancellationToken::new();
    let canceller = {
        let cancel = cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(50)).await;
            cancel.cancel();
        })
    };
    let started = std::time::Instant::now();
    let result = adapter.complete(&request(None, "hi"), &cancel).await;
    canceller.await?;
    assert!(matches!(result, Err(ModelError::Cancelled)), "{result:?}");
    assert!(started.elapsed() < Duration::from_secs(4));
    Ok(())
}

#[tokio::test]
async fn an_unreachable_server_says_to_check_the_base_url() -> TestResult {
    // Bind a port, then free it: nothing listens there now.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let address = listener.local_addr()?;
    drop(listener);
    let adapter = OpenAiAdapter::new(OpenAiConfig::new(format!("http://{address}/v1")), None)?;
    let error = complete(&adapter, &request(None, "hi"))
        .await
        .err()
        .ok_or("expected an error")?;
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

//! A server over streamable HTTP: a local axum server that speaks the
//! documented wire format (JSON-RPC in a POST, a JSON answer), checking
//! the headers and the bearer token dsh sends.

mod common;

use std::sync::{Arc, Mutex};

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use dsh_tool_mcp::{McpServer, ServerConfig, http_client};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

type Seen = Arc<Mutex<Vec<(String, Option<String>, Option<String>)>>>;

/// The error a server answers a method it does not have with.
fn method_not_found(id: &Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "Method not found"}})
}

async fn mcp(State(seen): State<Seen>, headers: HeaderMap, Json(message): Json<Value>) -> Response {
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|value| value.to_str().ok())
            .map(str::to_owned)
    };
    let method = message["method"].as_str().unwrap_or_default().to_owned();
    seen.lock().expect("not poisoned").push((
        method.clone(),
        header("authorization"),
        header("x-team"),
    ));
    let Some(id) = message.get("id").cloned() else {
        return StatusCode::ACCEPTED.into_response();
    };
    let result = match method.as_str() {
        "initialize" => json!({
            "protocolVersion": message["params"]["protocolVersion"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "http-docs", "version": "1.0"},
            "instructions": "Ask the web docs."
        }),
        "tools/list" => json!({"tools": [{
            "name": "lookup",
            "description": "Looks a word up.",
            "inputSchema": {"type": "object", "properties": {"word": {"type": "string"}}}
        }]}),
        "tools/call" => json!({
            "content": [{"type": "text", "text": format!("looked up {}", message["params"]["arguments"]["word"])}]
        }),
        // A server of 2025-11-25 has no `server/discover`.
        _ => return Json(method_not_found(&id)).into_response(),
    };
    Json(json!({"jsonrpc": "2.0", "id": id, "result": result})).into_response()
}

#[tokio::test]
async fn an_http_server_gets_its_headers_and_token_and_serves_calls() {
    let seen = Seen::default();
    let app = axum::Router::new()
        .route("/mcp", post(mcp))
        .with_state(Arc::clone(&seen));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a port");
    let url = format!("http://{}/mcp", listener.local_addr().expect("an address"));
    tokio::spawn(async move { axum::serve(listener, app).await });

    let config = ServerConfig::http("web", url)
        .with_env([("X-Team", "core")])
        .with_bearer_token("s3cret");
    let server = McpServer::start(config, &http_client().expect("a client"))
        .await
        .expect("starts");
    assert_eq!(server.instructions(), Some("Ask the web docs."));
    assert_eq!(server.server_info(), Some("http-docs 1.0"));
    assert_eq!(common::tool_names(&server), ["web__lookup"]);
    let output = server
        .call(
            "web__lookup",
            json!({"word": "mcp"}),
            &CancellationToken::new(),
        )
        .await
        .expect("answers");
    assert_eq!(output.text, "looked up \"mcp\"");

    let seen = seen.lock().expect("not poisoned").clone();
    let methods: Vec<&str> = seen.iter().map(|(method, ..)| method.as_str()).collect();
    assert_eq!(
        methods,
        [
            // dsh asks for 2026-07-28 first, then 2025-11-25.
            "server/discover",
            "initialize",
            "notifications/initialized",
            "tools/list",
            "tools/call"
        ]
    );
    for (method, authorization, team) in &seen {
        assert_eq!(authorization.as_deref(), Some("Bearer s3cret"), "{method}");
        assert_eq!(team.as_deref(), Some("core"), "{method}");
    }
    server.shutdown().await;
}

/// A 307 from the configured server to another origin (another port of
/// 127.0.0.1) is not followed: the other server gets nothing — neither
/// the headers nor the requests — and the error names both origins and
/// says what to configure.
#[tokio::test]
async fn a_redirect_to_another_origin_is_refused_naming_both() {
    let seen = Seen::default();
    let elsewhere = axum::Router::new()
        .route("/mcp", post(mcp))
        .with_state(Arc::clone(&seen));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a port");
    let other = format!("http://{}", listener.local_addr().expect("an address"));
    tokio::spawn(async move { axum::serve(listener, elsewhere).await });

    let location = format!("{other}/mcp");
    let redirecting = axum::Router::new().route(
        "/mcp",
        post(move || async move {
            (
                StatusCode::TEMPORARY_REDIRECT,
                [(axum::http::header::LOCATION, location)],
            )
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a port");
    let origin = format!("http://{}", listener.local_addr().expect("an address"));
    tokio::spawn(async move { axum::serve(listener, redirecting).await });

    let config = ServerConfig::http("web", format!("{origin}/mcp"))
        .with_env([("X-Team", "core")])
        .with_bearer_token("s3cret");
    let Err(error) = McpServer::start(config, &http_client().expect("a client")).await else {
        panic!("the start through a redirect to another origin succeeded");
    };
    let message = error.to_string();
    assert!(
        message.contains(&format!("from {origin} to {other}")),
        "{message}"
    );
    assert!(message.contains("`url`"), "{message}");
    assert!(
        seen.lock().expect("not poisoned").is_empty(),
        "the other origin got nothing"
    );
}

/// A server that answers `tools/list` as an event stream, as the official
/// SDKs do by default, listing a tool that runs only as a task: the tool
/// is read off the stream and left out.
#[tokio::test]
async fn a_task_only_tool_in_an_event_stream_is_left_out() {
    async fn streaming(Json(message): Json<Value>) -> Response {
        let Some(id) = message.get("id").cloned() else {
            return StatusCode::ACCEPTED.into_response();
        };
        let result = match message["method"].as_str() {
            Some("initialize") => json!({
                "protocolVersion": message["params"]["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "http-tasks", "version": "1.0"}
            }),
            Some("tools/list") => json!({"tools": [
                {"name": "lookup", "inputSchema": {"type": "object"}},
                {"name": "research", "inputSchema": {"type": "object"},
                 "execution": {"taskSupport": "required"}}
            ]}),
            _ => return Json(method_not_found(&id)).into_response(),
        };
        let answer = json!({"jsonrpc": "2.0", "id": id, "result": result});
        (
            [(axum::http::header::CONTENT_TYPE, "text/event-stream")],
            format!("event: message\ndata: {answer}\n\n"),
        )
            .into_response()
    }
    let app = axum::Router::new().route("/mcp", post(streaming));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a port");
    let url = format!("http://{}/mcp", listener.local_addr().expect("an address"));
    tokio::spawn(async move { axum::serve(listener, app).await });

    let server = McpServer::start(
        ServerConfig::http("web", url),
        &http_client().expect("a client"),
    )
    .await
    .expect("starts");
    assert_eq!(common::tool_names(&server), ["web__lookup"]);
    assert_eq!(
        server.left_out(),
        [("research".to_owned(), dsh_tool_mcp::LeftOut::TaskOnly)]
    );
    server.shutdown().await;
}

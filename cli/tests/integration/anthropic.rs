//! `[adapter.anthropic]`: a whole `dsh run` against a local server that
//! speaks the Messages API's event streams, and `dsh prompt --format
//! explain` saying its token counts are estimates.

use crate::common;

use std::sync::{Arc, Mutex};

use axum::extract::State;
use axum::http::{HeaderMap, header};
use axum::response::IntoResponse;
use axum::routing::post;
use common::{assert_status, command, stderr, stdout};
use serde_json::{Value, json};

const KEY: &str = "sk-ant-e2e-secret-42";

#[derive(Default)]
struct Server {
    requests: Vec<Value>,
    keys: Vec<Option<String>>,
}

/// The events of one streamed answer: `blocks` (each a start block and
/// its deltas), then the usage the API reports.
fn events(blocks: &[(Value, Vec<Value>)], usage: Value) -> String {
    let mut events = vec![json!({"type": "message_start", "message": {
        "id": "msg_1", "type": "message", "role": "assistant", "content": [],
        "model": "claude-test", "usage": usage}})];
    for (index, (start, deltas)) in blocks.iter().enumerate() {
        events.push(json!({"type": "content_block_start", "index": index, "content_block": start}));
        for delta in deltas {
            events.push(json!({"type": "content_block_delta", "index": index, "delta": delta}));
        }
        events.push(json!({"type": "content_block_stop", "index": index}));
    }
    events.push(
        json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"},
                       "usage": {"output_tokens": 9}}),
    );
    events.push(json!({"type": "message_stop"}));
    events
        .iter()
        .map(|event| {
            format!(
                "event: {}\ndata: {event}\n\n",
                event["type"].as_str().unwrap_or("")
            )
        })
        .collect()
}

/// The MCP test server's tool that returns a PNG, called first, then an
/// answer.
async fn calls_for_an_image(
    State(server): State<Arc<Mutex<Server>>>,
    body: String,
) -> impl IntoResponse {
    let mut server = server.lock().expect("server state");
    server
        .requests
        .push(serde_json::from_str(&body).unwrap_or(Value::Null));
    let usage = json!({"input_tokens": 20, "output_tokens": 1});
    let body = if server.requests.len() == 1 {
        events(
            &[(
                json!({"type": "tool_use", "id": "toolu_1", "name": "docs__image", "input": {}}),
                vec![json!({"type": "input_json_delta", "partial_json": "{}"})],
            )],
            usage,
        )
    } else {
        events(
            &[(
                json!({"type": "text", "text": ""}),
                vec![json!({"type": "text_delta", "text": "A pixel."})],
            )],
            usage,
        )
    };
    ([(header::CONTENT_TYPE, "text/event-stream")], body)
}

async fn messages(
    State(server): State<Arc<Mutex<Server>>>,
    headers: HeaderMap,
    body: String,
) -> impl IntoResponse {
    let mut server = server.lock().expect("server state");
    server.keys.push(
        headers
            .get("x-api-key")
            .and_then(|value| value.to_str().ok())
            .map(str::to_owned),
    );
    server
        .requests
        .push(serde_json::from_str(&body).unwrap_or(Value::Null));
    let body = if server.requests.len() == 1 {
        events(
            &[(
                json!({"type": "tool_use", "id": "toolu_1", "name": "bash", "input": {}}),
                vec![
                    json!({"type": "input_json_delta", "partial_json": "{\"command\": "}),
                    json!({"type": "input_json_delta", "partial_json": "\"echo hi\"}"}),
                ],
            )],
            json!({"input_tokens": 20, "cache_creation_input_tokens": 1500,
                   "cache_read_input_tokens": 0, "output_tokens": 1}),
        )
    } else {
        events(
            &[(
                json!({"type": "text", "text": ""}),
                vec![
                    json!({"type": "text_delta", "text": "It printed "}),
                    json!({"type": "text_delta", "text": "hi."}),
                ],
            )],
            json!({"input_tokens": 30, "cache_creation_input_tokens": 60,
                   "cache_read_input_tokens": 1500, "output_tokens": 1}),
        )
    };
    ([(header::CONTENT_TYPE, "text/event-stream")], body)
}

#[test]
fn a_run_on_the_anthropic_adapter_streams_calls_tools_and_reports_the_cache() {
    let state = Arc::new(Mutex::new(Server::default()));
    let app = axum::Router::new()
        .route("/v1/messages", post(messages))
        .with_state(Arc::clone(&state));
    let base_url = common::serve(app);
    let base_url = base_url.trim_end_matches("/v1");
    let dir = tempfile::tempdir().expect("a temp dir");
    let config = common::config(
        dir.path(),
        &format!(
            "[adapter.anthropic]\nbase_url = {base_url:?}\nmodel = \"claude-test\"\n\
             api_key_env = \"DSH_TEST_ANTHROPIC_KEY\"\n{}",
            common::runner("", &["bash"])
        ),
    );
    let trace = dir.path().join("trace.jsonl");
    let (cwd, trace_arg) = (
        dir.path().display().to_string(),
        trace.display().to_string(),
    );
    let (mut run, recorded) = common::recording_run(
        dir.path(),
        &config,
        &["--cwd", &cwd, "--trace", &trace_arg, "-p", "Say hi."],
    );
    let output = run
        .env("DSH_TEST_ANTHROPIC_KEY", KEY)
        .output()
        .expect("dsh runs");
    assert_status(&output, 0);
    assert_eq!(stdout(&output), "It printed hi.\n");

    let server = state.lock().expect("server state");
    assert_eq!(server.keys, [Some(KEY.to_owned()), Some(KEY.to_owned())]);
    let second = &server.requests[1];
    assert_eq!(second["model"], "claude-test");
    assert_eq!(second["tools"][0]["name"], "bash");
    assert_eq!(second["tools"][0]["cache_control"]["type"], "ephemeral");
    assert_eq!(
        second["messages"][1]["content"][0]["input"]["command"],
        "echo hi"
    );
    let result = &second["messages"][2]["content"][0];
    assert_eq!(result["type"], "tool_result");
    assert_eq!(result["tool_use_id"], "toolu_1");

    // The key went to the server, and nowhere else.
    let summary = stderr(&output);
    for (what, text) in [
        ("stderr", summary.clone()),
        ("stdout", stdout(&output)),
        (
            "--record-requests",
            std::fs::read_to_string(&recorded).expect("recorded"),
        ),
        ("--trace", std::fs::read_to_string(&trace).expect("traced")),
    ] {
        assert!(!text.contains(KEY), "the key is in {what}: {text}");
    }
    let lines = common::json_lines(&trace);
    assert_eq!(lines[0]["api_cache_creation_tokens"], 1500);
    assert_eq!(lines[1]["api_cached_tokens"], 1500);
    assert_eq!(lines[1]["api_cache_creation_tokens"], 60);
    assert_eq!(lines[1]["api_prompt_tokens"], 1590);
    assert_eq!(lines[0]["tokenizer"], "o200k_base");
    assert!(
        summary.contains("the API's cache read 1500 of 3110 prompt tokens and wrote 1560"),
        "{summary}"
    );
}

#[test]
fn an_image_a_tool_returns_goes_to_claude_inside_its_tool_result() {
    let state = Arc::new(Mutex::new(Server::default()));
    let app = axum::Router::new()
        .route("/v1/messages", post(calls_for_an_image))
        .with_state(Arc::clone(&state));
    let base_url = common::serve(app);
    let base_url = base_url.trim_end_matches("/v1");
    let dir = tempfile::tempdir().expect("a temp dir");
    let server = dsh_mcp_test_server::binary().display().to_string();
    let config = common::config(
        dir.path(),
        &format!(
            "[adapter.anthropic]\nbase_url = {base_url:?}\nmodel = \"claude-test\"\n\
             api_key_env = \"DSH_TEST_ANTHROPIC_KEY\"\n\
             [mcp.docs]\ncommand = [{server:?}]\npermission = \"allow\"\n{}",
            common::runner("", &["mcp:docs"])
        ),
    );
    let output = command(&["run", "--config", &config, "-p", "Show me."])
        .env("DSH_TEST_ANTHROPIC_KEY", KEY)
        .output()
        .expect("dsh runs");
    assert_status(&output, 0);
    assert_eq!(stdout(&output), "A pixel.\n");
    let server = state.lock().expect("server state");
    let result = &server.requests[1]["messages"][2]["content"][0];
    assert_eq!(result["type"], "tool_result", "{result}");
    assert_eq!(
        result["content"][0],
        json!({"type": "text", "text": "a pixel:"})
    );
    assert_eq!(result["content"][1]["type"], "image", "{result}");
    assert_eq!(result["content"][1]["source"]["type"], "base64");
    assert_eq!(result["content"][1]["source"]["media_type"], "image/png");
    assert_eq!(
        result["content"][1]["source"]["data"]
            .as_str()
            .map(str::len),
        Some(96)
    );
}

#[test]
fn explain_says_claude_counts_are_estimates() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let config = common::config(
        dir.path(),
        &format!(
            "[adapter.anthropic]\nmodel = \"claude-sonnet-4-5\"\n{}",
            common::runner("", &["bash"])
        ),
    );
    let cwd = dir.path().display().to_string();
    let output = command(&[
        "prompt", "--config", &config, "--cwd", &cwd, "--format", "explain",
    ])
    .env_remove("ANTHROPIC_API_KEY")
    .output()
    .expect("dsh runs");
    assert_status(&output, 0);
    let explain = stdout(&output);
    let line = explain
        .lines()
        .find(|line| line.starts_with("tokenizer"))
        .unwrap_or_default();
    assert!(
        line.contains("o200k_base (an estimate: Anthropic ships no offline tokenizer"),
        "{explain}"
    );
}

//! `dsh run --trace`: the prefix-stability report of a session, and the
//! summary every `dsh run` ends with.

use crate::common;

use std::path::Path;
use std::sync::{Arc, Mutex};

use axum::Json;
use axum::extract::State;
use axum::routing::post;
use common::{assert_status, dsh, stderr, stdout, workspace, write};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

/// Steps of the scripted session: each but the last replaces the todo
/// list.
const STEPS: usize = 20;

/// The session's task, as a developer writes one: what fails, with the
/// terminal's output of the test run pasted in.
///
/// Request 2 shares the least: the first request, B, over B plus one
/// step's messages, s. With the example's 1.7k tokens before any message,
/// this task makes B about 2.9k tokens, so the share stays at least 95 %
/// while s is at most B / 19, ~150 tokens. A step appends ~127: the
/// `todo_write` call and its result as canonical JSON (~94), and the
/// runtime-context snapshot of the new list (~33).
fn task() -> String {
    let passed = [
        "good_deployments_pass",
        "unknown_variable",
        "a_non_ascii_persona_points_at_the_right_columns",
        "cwd_without_a_working_directory",
        "unknown_key",
        "type_error",
        "unknown_tool",
        "a_missing_file_is_one_line",
        "every_problem_is_reported",
        "unknown_subagent_provider",
        "a_child_table_needs_the_spawn_provider",
        "a_childs_persona_is_checked",
        "a_childs_persona_that_renders_passes",
        "an_unlisted_childs_persona_is_checked",
        "a_childs_provider_is_private_to_its_instance",
        "the_summary_counts_the_children_checked",
    ];
    let compiled = [
        "dsh-prompt-template v0.1.0 (/work/dsh-rs/template)",
        "dsh-system-prompt-macros v0.1.0 (/work/dsh-rs/macros)",
        "dsh-system-prompt v0.1.0 (/work/dsh-rs/core)",
        "dsh-tools v0.1.0 (/work/dsh-rs/tools/registry)",
        "dsh-tool-bash v0.1.0 (/work/dsh-rs/tools/bash)",
        "dsh-tool-fs v0.1.0 (/work/dsh-rs/tools/fs)",
        "dsh-tool-todo v0.1.0 (/work/dsh-rs/tools/todo)",
        "dsh-agent-loop v0.1.0 (/work/dsh-rs/agent-loop)",
        "dsh-tool-subagent v0.1.0 (/work/dsh-rs/tools/subagent)",
        "dsh-cli v0.1.0 (/work/dsh-rs/cli)",
    ];
    let mut log = String::new();
    for krate in compiled {
        log.push_str(&format!("   Compiling {krate}\n"));
    }
    log.push_str(
        "warning: unused variable: `raw`\n\
         \u{20}  --> cli/src/config/string_offsets.rs:41:13\n\
         \u{20}   |\n\
         41 |         let raw = &self.raw[start..];\n\
         \u{20}   |             ^^^ help: if this is intentional, prefix it with an underscore: `_raw`\n\
         \u{20}   |\n\
         \u{20}   = note: `#[warn(unused_variables)]` on by default\n\n\
         warning: `dsh-cli` (bin \"dsh\") generated 1 warning\n\
         \u{20}   Finished `test` profile [unoptimized + debuginfo] target(s) in 41.27s\n\
         \u{20}    Running tests/check.rs (target/debug/deps/check-5c1e0b7d2f4a9e31)\n\n",
    );
    log.push_str("running 17 tests\n");
    for name in passed {
        log.push_str(&format!("test {name} ... ok\n"));
    }
    log.push_str(
        "test malformed_reference_behind_escapes ... FAILED\n\n\
         failures:\n\n\
         ---- malformed_reference_behind_escapes stdout ----\n\n\
         thread 'malformed_reference_behind_escapes' panicked at cli/tests/check.rs:58:5:\n\
         expected `[cli/tests/fixtures/malformed-reference.toml:9:41]` in:\n\
         \u{20}\u{20}× malformed reference `<< model >>` in the persona of agent `escapes`\n\
         \u{20}  ╭─[cli/tests/fixtures/malformed-reference.toml:9:37]\n\
         \u{20}8 │ id = \"escapes\"\n\
         \u{20}9 │ persona = \"Tab:\\t, caf\\u00e9, then << model >> and cat \\\\<<EOF\"\n\
         \u{20}  ·                                     ─────┬─────\n\
         \u{20}  ·                                          ╰── malformed reference\n\
         \u{20}  ╰────\n\
         \u{20} help: did you mean `<<model>>`? Write `\\<<` for a literal `<<`\n\n\
         stack backtrace:\n\
         \u{20}  0: __rustc::rust_begin_unwind\n\
         \u{20}            at /rustc/library/std/src/panicking.rs:689:5\n\
         \u{20}  1: core::panicking::panic_fmt\n\
         \u{20}            at /rustc/library/core/src/panicking.rs:80:14\n\
         \u{20}  2: check::assert_contains\n\
         \u{20}            at ./tests/check.rs:20:9\n\
         \u{20}  3: check::malformed_reference_behind_escapes\n\
         \u{20}            at ./tests/check.rs:58:5\n\
         \u{20}  4: check::malformed_reference_behind_escapes::{{closure}}\n\
         \u{20}            at ./tests/check.rs:54:40\n\
         \u{20}  5: core::ops::function::FnOnce::call_once\n\
         \u{20}            at /rustc/library/core/src/ops/function.rs:250:5\n\
         note: Some details are omitted, run with `RUST_BACKTRACE=full` for a verbose backtrace.\n\n\
         failures:\n    malformed_reference_behind_escapes\n\n\
         test result: FAILED. 16 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.61s\n\n\
         error: test failed, to rerun pass `-p dsh-cli --test check`\n",
    );
    format!(
        "The check's diagnostic points four columns too far left when a persona has escapes \
         before the reference. `cargo test -p dsh-cli --test check` fails:\n\n```\n{log}```\n\n\
         Find why the column is off, fix it without changing what the diagnostic says, and \
         make the test pass. Plan the work as a todo list and keep it current as you go."
    )
}

/// The coding-agent example, its persona and tools as they are, answered
/// by `answers.toml` as model `gpt-5`.
fn coding_agent_scripted(dir: &Path) -> String {
    let example = std::fs::read_to_string(workspace().join("examples/coding-agent/dsh.toml"))
        .expect("the example");
    let start = example.find("[adapter.openai]").expect("an openai table");
    let end = start + example[start..].find("\n\n").expect("the table's end");
    let deployment = format!(
        "{}[adapter.scripted]\nanswers = \"answers.toml\"\nmodel = \"gpt-5\"{}",
        &example[..start],
        &example[end..]
    );
    common::config(dir, &deployment)
}

/// A 20-step session whose todo list changes at every step keeps its
/// system prompt and tools byte for byte, so each request after the first
/// starts with all of the one before: at least 95 % of it, in bytes and in
/// tokens, is a prefix a cache can serve. (The share is the request before
/// over that plus one step's messages, so it is lowest at request 2.)
#[test]
fn a_changing_todo_list_keeps_the_prefix_stable() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let mut answers = String::new();
    for step in 1..STEPS {
        let status = if step % 2 == 0 {
            "in_progress"
        } else {
            "pending"
        };
        answers.push_str(&format!(
            "[[answers]]\n[[answers.tool_calls]]\nid = \"t{step}\"\nname = \"todo_write\"\n\
             arguments = {{ todos = [{{ content = \"Step {step}\", status = \"{status}\" }}] }}\n"
        ));
    }
    answers.push_str("[[answers]]\ntext = \"Done.\"\n");
    write(&dir.path().join("answers.toml"), &answers);
    let config = coding_agent_scripted(dir.path());
    let cwd = dir.path().display().to_string();
    let trace = dir.path().join("trace.jsonl");
    let (output, requests) = common::run_recorded(
        dir.path(),
        &config,
        &[
            "--cwd",
            &cwd,
            "-p",
            &task(),
            "--trace",
            &trace.display().to_string(),
        ],
    );
    assert_eq!(stdout(&output), "Done.\n");

    // The todo list did change at every step: each result is another list.
    assert_eq!(requests.len(), STEPS);
    let results: Vec<&str> = requests[STEPS - 1]["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .filter(|message| message["role"] == "tool")
        .map(|message| message["text"].as_str().expect("a result"))
        .collect();
    assert_eq!(results.len(), STEPS - 1);
    for (step, result) in results.iter().enumerate() {
        assert!(result.ends_with(&format!("Step {}", step + 1)), "{result}");
    }

    let trace = common::json_lines(&trace);
    assert_eq!(trace.len(), STEPS);
    // The system prompt is exactly what `dsh prompt` prints, at every step.
    let printed = dsh(&["prompt", "--config", &config, "--cwd", &cwd]);
    assert_status(&printed, 0);
    let system: String = Sha256::digest(&printed.stdout)
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect();
    for (index, line) in trace.iter().enumerate() {
        assert_eq!(line["request"], index + 1);
        assert_eq!(line["step"], index + 1);
        assert_eq!(line["tokenizer"], "o200k_base");
        assert_eq!(
            line["system_prompt_sha256"],
            system.as_str(),
            "request {}",
            index + 1
        );
        assert_eq!(
            line["tools_sha256"],
            trace[0]["tools_sha256"],
            "request {}",
            index + 1
        );
        assert_eq!(line["prefix_broke_in"], Value::Null, "{line}");
        assert_eq!(
            line["api_cached_tokens"],
            Value::Null,
            "a script reports no usage"
        );
    }
    let count = |line: &Value, key: &str| line[key].as_u64().expect("a count") as f64;
    for pair in trace.windows(2) {
        let (before, now) = (&pair[0], &pair[1]);
        // All of the request before, and nothing else, is the prefix.
        assert_eq!(now["shared_prefix_bytes"], before["bytes"]);
        assert_eq!(now["shared_prefix_tokens"], before["tokens"]);
        for (shared, total) in [
            ("shared_prefix_bytes", "bytes"),
            ("shared_prefix_tokens", "tokens"),
        ] {
            let ratio = count(now, shared) / count(now, total);
            assert!(
                ratio >= 0.95,
                "request {}: {shared} {ratio:.3}",
                now["request"]
            );
        }
    }

    let stderr = stderr(&output);
    let summary = stderr.lines().last().expect("a summary");
    assert!(
        summary.starts_with("session: 20 requests, mean cacheable prefix 9"),
        "{stderr}"
    );
    assert!(summary.ends_with(", the cache never broke"), "{summary}");
}

/// The local server: answers each request with a completion whose usage
/// says how much of the prompt its cache served.
#[derive(Default)]
struct Server {
    requests: usize,
}

async fn chat_completions(
    State(server): State<Arc<Mutex<Server>>>,
    Json(_request): Json<Value>,
) -> Json<Value> {
    let mut server = server.lock().expect("server state");
    server.requests += 1;
    let (message, prompt, cached) = if server.requests == 1 {
        let call = json!({
            "id": "call_1",
            "type": "function",
            "function": {"name": "bash", "arguments": json!({"command": "true"}).to_string()},
        });
        (
            json!({"role": "assistant", "content": null, "tool_calls": [call]}),
            900,
            0,
        )
    } else {
        (json!({"role": "assistant", "content": "Done."}), 960, 896)
    };
    Json(json!({
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": 5,
            "total_tokens": prompt + 5,
            "prompt_tokens_details": {"cached_tokens": cached},
        },
    }))
}

/// Starts the server on a free port of 127.0.0.1, in a thread of its own.
fn start_server() -> String {
    let state = Arc::new(Mutex::new(Server::default()));
    let app = axum::Router::new()
        .route("/v1/chat/completions", post(chat_completions))
        .with_state(state);
    common::serve(app)
}

/// The API's cached tokens are recorded beside the prediction, request
/// by request.
#[test]
fn the_apis_cached_tokens_are_recorded_beside_the_prediction() {
    let base_url = start_server();
    let dir = tempfile::tempdir().expect("a temp dir");
    let config = common::config(
        dir.path(),
        &format!(
            "[adapter.openai]\nbase_url = {base_url:?}\nmodel = \"gpt-4o\"\n\
             [[agents]]\nid = \"runner\"\ntools = [\"bash\"]\npersona = \"You are a test agent.\"\n"
        ),
    );
    let trace = dir.path().join("trace.jsonl");
    let output = dsh(&[
        "run",
        "--config",
        &config,
        "--cwd",
        &dir.path().display().to_string(),
        "-p",
        "Run it.",
        "--trace",
        &trace.display().to_string(),
    ]);
    assert_status(&output, 0);
    let trace = common::json_lines(&trace);
    assert_eq!(trace.len(), 2);
    assert_eq!(
        (
            &trace[0]["api_prompt_tokens"],
            &trace[0]["api_cached_tokens"]
        ),
        (&json!(900), &json!(0))
    );
    assert_eq!(
        (
            &trace[1]["api_prompt_tokens"],
            &trace[1]["api_cached_tokens"]
        ),
        (&json!(960), &json!(896))
    );
    assert_eq!(trace[1]["shared_prefix_tokens"], trace[0]["tokens"]);
    assert!(
        trace[1]["shared_prefix_tokens"].as_u64() > Some(0),
        "{}",
        trace[1]
    );
}

/// Without `--trace`, the summary still says how much was cacheable, in
/// bytes: no tokenizer runs.
#[test]
fn every_session_ends_with_a_summary() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let config = common::scripted_runner(
        dir.path(),
        "[[answers]]\ntext = \"one\"\n[[answers]]\ntext = \"two\"\n",
        &["read"],
    );
    let output = common::with_stdin(&["run", "--config", &config], "first\nsecond\n");
    assert_status(&output, 0);
    let stderr = stderr(&output);
    let summary = stderr.lines().last().expect("a summary");
    assert!(
        summary.starts_with("session: 2 requests, mean cacheable prefix "),
        "{summary}"
    );
    assert!(!summary.contains("tokens"), "{summary}");
    assert!(
        summary.ends_with(" of bytes, the cache never broke"),
        "{summary}"
    );
}

#[test]
fn an_unwritable_trace_is_one_problem_before_any_request() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let config = common::scripted_runner(dir.path(), "[[answers]]\ntext = \"hi\"\n", &[]);
    let missing = dir.path().join("no such dir").join("trace.jsonl");
    let output = dsh(&[
        "run",
        "--config",
        &config,
        "-p",
        "hi",
        "--trace",
        &missing.display().to_string(),
    ]);
    let stderr = common::assert_fails_saying(&output, "to write the trace");
    assert_eq!(stdout(&output), "");
    assert!(stderr.starts_with("error: cannot create `"), "{stderr}");
}

//! `dsh run`: whole turns through the agent loop, with the scripted
//! adapter and with the OpenAI-compatible adapter against a local server.

use crate::common;

use std::path::Path;
use std::sync::{Arc, Mutex};

use axum::Json;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::routing::post;
use common::{assert_status, command, dsh, stderr, stdout, write};
use serde_json::{Value, json};

/// A bash command that fails with exit code 3, so the marker must reach
/// the model's next request.
const FAILING_COMMAND: &str = "echo checking; exit 3";

/// A deployment of `runner` with bash, on `adapter`.
fn deployment(dir: &Path, adapter: &str) -> String {
    common::config(dir, &format!("{adapter}{}", common::runner("", &["bash"])))
}

/// A deployment of `runner` with bash, whose model `m` answers with
/// `answers`.
fn scripted_deployment(dir: &Path, answers: &str) -> String {
    common::scripted_runner(dir, answers, &["bash"])
}

/// `dsh run` of `config` with `input` as stdin, which must succeed: its
/// stdout, and the model requests it recorded into `dir`.
fn run_lines(dir: &Path, config: &str, input: &str) -> (String, Vec<Value>) {
    let recorded = dir.join("requests.jsonl");
    let recorded_arg = recorded.display().to_string();
    let output = common::with_stdin(
        &[
            "run",
            "--config",
            config,
            "--record-requests",
            &recorded_arg,
        ],
        input,
    );
    assert_status(&output, 0);
    (stdout(&output), common::recorded_requests(&recorded))
}

/// `dsh run -p hello` of `config`, to add environment to.
fn run_hello(config: &str) -> std::process::Command {
    command(&["run", "--config", config, "-p", "hello"])
}

/// `dsh` run as `run` exits 1 with one line on stderr, which contains
/// `needle`.
#[track_caller]
fn assert_fails_in_one_line(run: &mut std::process::Command, needle: &str) {
    let output = run.output().expect("dsh runs");
    let stderr = common::assert_fails_saying(&output, needle);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
}

#[test]
fn scripted_turn_with_a_failing_bash_call() {
    let dir = tempfile::tempdir().expect("a temp dir");
    write(
        &dir.path().join("answers.toml"),
        &format!(
            "[[answers]]\ntext = \"Let me check.\"\n\
             [[answers.tool_calls]]\nname = \"bash\"\narguments = {{ command = {FAILING_COMMAND:?} }}\n\
             [[answers]]\ntext = \"The check failed with exit code 3.\"\n"
        ),
    );
    let config = deployment(
        dir.path(),
        "[adapter.scripted]\nanswers = \"answers.toml\"\nmodel = \"scripted-model\"\n",
    );
    let cwd = dir.path().display().to_string();
    let (output, requests) = common::run_recorded(
        dir.path(),
        &config,
        &["--cwd", &cwd, "-p", "Run the check."],
    );

    // Answers on stdout, tool activity on stderr.
    assert_eq!(
        stdout(&output),
        "Let me check.\nThe check failed with exit code 3.\n"
    );
    let stderr = stderr(&output);
    assert!(stderr.contains("→ bash"), "{stderr}");
    assert!(stderr.contains("[exit code: 3]"), "{stderr}");

    assert_eq!(requests.len(), 2);
    // Every request's system prompt is exactly what `dsh prompt` prints.
    let prompt = dsh(&["prompt", "--config", &config, "--cwd", &cwd]);
    assert_status(&prompt, 0);
    for request in &requests {
        assert_eq!(request["system"], common::stdout(&prompt));
        assert_eq!(request["model"], "scripted-model");
    }
    // The exit-code marker reaches the next request.
    let messages = requests[1]["messages"].as_array().expect("messages");
    let result = messages
        .iter()
        .find(|message| message["role"] == "tool")
        .expect("a tool result");
    let text = result["text"].as_str().expect("result text");
    assert!(text.contains("checking"), "{text}");
    assert!(text.ends_with("[exit code: 3]"), "{text}");
}

#[test]
fn an_exhausted_script_fails_the_run_in_one_line() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let config = scripted_deployment(dir.path(), "answers = []\n");
    assert_fails_in_one_line(&mut run_hello(&config), "no answer left");
}

#[test]
fn lines_of_stdin_are_turns_of_one_session() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let config = scripted_deployment(
        dir.path(),
        "[[answers]]\ntext = \"one\"\n[[answers]]\ntext = \"two\"\n",
    );
    let (stdout, requests) = run_lines(dir.path(), &config, "first\n\nsecond\n");
    assert_eq!(stdout, "one\ntwo\n");
    // The second turn's request carries the first turn.
    assert_eq!(requests[1]["messages"].as_array().map(Vec::len), Some(3));
}

/// The two subagent instances: `task` starts a fresh child, `fork` a child
/// that sees the completed turns, not the one in flight.
#[test]
fn spawn_and_fork_instances_run_their_children() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let config = common::scripted_config(
        dir.path(),
        "[[answers]]\ntext = \"Noted.\"\n\
         [[answers]]\n[[answers.tool_calls]]\nname = \"task\"\narguments = { prompt = \"What is 2 + 2?\" }\n\
         [[answers]]\ntext = \"4\"\n\
         [[answers]]\n[[answers.tool_calls]]\nname = \"fork\"\narguments = { prompt = \"Which word?\" }\n\
         [[answers]]\ntext = \"apple\"\n\
         [[answers]]\ntext = \"4, and the word is apple.\"\n",
        &common::runner(
            "[tools.task]\nkind = \"subagent\"\nprovider = \"spawn\"\n\
             [tools.fork]\nkind = \"subagent\"\nprovider = \"fork\"\n",
            &["task", "fork"],
        ),
    );
    let (stdout, requests) = run_lines(dir.path(), &config, "The word is apple.\nAsk both.\n");
    assert!(stdout.ends_with("4, and the word is apple.\n"));

    assert_eq!(requests.len(), 6);
    let texts = |request: &Value| -> Vec<String> {
        request["messages"]
            .as_array()
            .expect("messages")
            .iter()
            .filter_map(|message| message["text"].as_str().map(str::to_owned))
            .collect()
    };
    // The spawned child sees its prompt only.
    assert_eq!(texts(&requests[2]), ["What is 2 + 2?"]);
    // The forked child sees the completed turn, then its prompt; not the
    // turn in flight.
    assert_eq!(
        texts(&requests[4]),
        ["The word is apple.", "Noted.", "Which word?"]
    );
    // Each instance is worded after its provider.
    let tools = requests[0]["tools"].as_array().expect("tools");
    let description = |name: &str| {
        tools
            .iter()
            .find(|tool| tool["name"] == name)
            .map(|tool| tool["description"].clone())
            .expect("the tool")
    };
    assert_ne!(description("task"), description("fork"));
}

/// A spawn instance with a `child` table: its children run on the table's
/// model, with its persona and only its tools, so only the guidance of
/// those tools.
#[test]
fn a_child_table_says_who_spawned_children_are() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let config = common::scripted_config(
        dir.path(),
        "[[answers]]\n[[answers.tool_calls]]\nname = \"review\"\narguments = { prompt = \"Review it.\" }\n\
         [[answers]]\ntext = \"Looks fine.\"\n\
         [[answers]]\ntext = \"The reviewer says it looks fine.\"\n",
        &common::runner(
            "[tools.review]\nkind = \"subagent\"\nprovider = \"spawn\"\n\
             [tools.review.child]\nmodel = \"small\"\npersona = \"You review on <<model>>.\"\ntools = [\"read\"]\n",
            &["bash", "review"],
        ),
    );
    let (stdout, requests) = run_lines(dir.path(), &config, "Get it reviewed.\n");
    assert!(stdout.ends_with("The reviewer says it looks fine.\n"));

    assert_eq!(requests.len(), 3);
    let (parent, child) = (&requests[0], &requests[1]);
    assert_eq!(parent["model"], "m");
    assert_eq!(child["model"], "small");
    let system = child["system"].as_str().expect("the child's system prompt");
    assert!(
        system.starts_with("You review on small.\n\n"),
        "the child's persona comes first: {system}"
    );
    assert!(system.contains("Use read, not shell commands"), "{system}");
    assert!(!system.contains("exit code"), "no bash guidance: {system}");
    let tools: Vec<&str> = child["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|tool| tool["name"].as_str())
        .collect();
    assert_eq!(tools, ["read"]);
}

/// `dsh prompt --agent <agent>/<instance>` prints exactly the system prompt
/// the subagent provider's child is sent, whatever the child table leaves
/// to the parent: both come from the provider's one rule.
#[test]
fn a_childs_printed_prompt_is_the_one_it_is_sent() {
    let tables = [
        "model = \"small\"\npersona = \"You review on <<model>> in <<cwd>>.\"\ntools = [\"read\"]\n",
        // Persona and tools left to the parent.
        "model = \"small\"\n",
        // Only the tools the child's own.
        "tools = [\"read\"]\n",
    ];
    for table in tables {
        let dir = tempfile::tempdir().expect("a temp dir");
        let config = common::scripted_config(
            dir.path(),
            "[[answers]]\n[[answers.tool_calls]]\nname = \"review\"\narguments = { prompt = \"Review it.\" }\n\
             [[answers]]\ntext = \"Looks fine.\"\n\
             [[answers]]\ntext = \"Done.\"\n",
            &common::runner(
                &format!(
                    "[tools.review]\nkind = \"subagent\"\nprovider = \"spawn\"\n[tools.review.child]\n{table}"
                ),
                &["bash", "review"],
            ),
        );
        let (_, requests) =
            common::run_prompt(dir.path(), &config, Some(dir.path()), "Get it reviewed.");
        let cwd = dir.path().display().to_string();
        let sent = requests[1]["system"]
            .as_str()
            .expect("the child's system prompt");

        let printed = dsh(&[
            "prompt",
            "--config",
            &config,
            "--cwd",
            &cwd,
            "--agent",
            "runner/review",
        ]);
        assert_status(&printed, 0);
        assert_eq!(stdout(&printed), sent, "child table:\n{table}");
        assert_ne!(
            requests[0]["system"], requests[1]["system"],
            "the child differs from its parent: {table}"
        );
    }
}

/// What the local server saw, and what it answers.
#[derive(Default)]
struct Server {
    requests: Vec<Value>,
    authorization: Vec<Option<String>>,
}

async fn chat_completions(
    State(server): State<Arc<Mutex<Server>>>,
    headers: HeaderMap,
    Json(request): Json<Value>,
) -> Json<Value> {
    let mut server = server.lock().expect("server state");
    server.authorization.push(
        headers
            .get("authorization")
            .and_then(|value| value.to_str().ok())
            .map(str::to_owned),
    );
    server.requests.push(request);
    let message = if server.requests.len() == 1 {
        json!({
            "role": "assistant",
            "content": null,
            "tool_calls": [{
                "id": "call_1",
                "type": "function",
                "function": {
                    "name": "bash",
                    "arguments": json!({ "command": FAILING_COMMAND }).to_string(),
                },
            }],
        })
    } else {
        json!({ "role": "assistant", "content": "It exited with 3." })
    };
    Json(json!({
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "choices": [{ "index": 0, "message": message, "finish_reason": "stop" }],
    }))
}

/// Starts the server on a free port of 127.0.0.1, in a thread of its own.
fn start_server() -> (String, Arc<Mutex<Server>>) {
    let state = Arc::new(Mutex::new(Server::default()));
    let app = axum::Router::new()
        .route("/v1/chat/completions", post(chat_completions))
        .with_state(Arc::clone(&state));
    (common::serve(app), state)
}

#[test]
fn openai_compatible_turn_against_a_local_server() {
    let (base_url, server) = start_server();
    let dir = tempfile::tempdir().expect("a temp dir");
    let config = deployment(
        dir.path(),
        &format!(
            "[adapter.openai]\nbase_url = {base_url:?}\nmodel = \"local-model\"\napi_key_env = \"DSH_TEST_API_KEY\"\n"
        ),
    );
    let cwd = dir.path().display().to_string();
    let output = command(&["run", "--config", &config, "--cwd", &cwd, "-p", "Run it."])
        .env("DSH_TEST_API_KEY", "sk-test")
        .output()
        .expect("dsh runs");
    assert_status(&output, 0);
    assert_eq!(stdout(&output), "It exited with 3.\n");

    let server = server.lock().expect("server state");
    assert_eq!(server.requests.len(), 2);
    assert_eq!(server.authorization[0].as_deref(), Some("Bearer sk-test"));
    let first = &server.requests[0];
    assert_eq!(first["model"], "local-model");
    assert_eq!(first["messages"][0]["role"], "system");
    assert_eq!(
        first["messages"][0]["content"]
            .as_str()
            .map(|system| system.starts_with("You are a test agent running on local-model in ")),
        Some(true)
    );
    assert_eq!(first["tools"][0]["function"]["name"], "bash");
    // The exit-code marker reaches the next request.
    let tool_message = server.requests[1]["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .find(|message| message["role"] == "tool")
        .cloned()
        .expect("a tool message");
    assert_eq!(tool_message["tool_call_id"], "call_1");
    let content = tool_message["content"].as_str().expect("content");
    assert!(content.ends_with("[exit code: 3]"), "{content}");
}

#[test]
fn a_missing_api_key_is_one_line() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let config = deployment(
        dir.path(),
        "[adapter.openai]\nbase_url = \"http://127.0.0.1:9/v1\"\nmodel = \"m\"\napi_key_env = \"DSH_TEST_UNSET_KEY\"\n",
    );
    assert_fails_in_one_line(
        run_hello(&config).env_remove("DSH_TEST_UNSET_KEY"),
        "`DSH_TEST_UNSET_KEY`",
    );
}

#[test]
fn an_unreachable_model_is_one_line() {
    // A port that was free a moment ago: nothing listens there.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free port")
        .port();
    let dir = tempfile::tempdir().expect("a temp dir");
    let config = deployment(
        dir.path(),
        &format!("[adapter.openai]\nbase_url = \"http://127.0.0.1:{port}/v1\"\nmodel = \"m\"\n"),
    );
    assert_fails_in_one_line(&mut run_hello(&config), "could not reach the model server");
}

/// Ctrl-C (SIGINT) cancels the running turn; the session goes on and
/// serves the next line.
#[test]
fn an_interrupt_cancels_the_turn_not_the_session() {
    use std::io::{BufRead, BufReader, Write};

    let dir = tempfile::tempdir().expect("a temp dir");
    let config = scripted_deployment(
        dir.path(),
        "[[answers]]\n[[answers.tool_calls]]\nname = \"bash\"\narguments = { command = \"sleep 30\" }\n\
         [[answers]]\ntext = \"Still here.\"\n",
    );
    let mut child = common::spawn(&["run", "--config", &config]);
    let mut stdin = child.stdin.take().expect("stdin");
    stdin.write_all(b"Sleep.\n").expect("write stdin");

    // Wait until the tool runs, then interrupt.
    let mut stderr = BufReader::new(child.stderr.take().expect("stderr"));
    let mut seen = String::new();
    while !seen.contains("→ bash") {
        let mut line = String::new();
        if stderr.read_line(&mut line).expect("read stderr") == 0 {
            panic!("dsh ended before running the tool:\n{seen}");
        }
        seen.push_str(&line);
    }
    std::thread::sleep(std::time::Duration::from_millis(300));
    let killed = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(killed.success());

    stdin.write_all(b"Are you there?\n").expect("write stdin");
    drop(stdin);
    let started = std::time::Instant::now();
    let output = child.wait_with_output().expect("dsh ends");
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stderr, &mut rest).expect("read stderr");
    seen.push_str(&rest);

    assert!(
        started.elapsed() < std::time::Duration::from_secs(20),
        "the sleep was not cancelled"
    );
    assert_eq!(output.status.code(), Some(0), "stderr:\n{seen}");
    assert!(seen.contains("turn cancelled"), "{seen}");
    assert_eq!(stdout(&output), "Still here.\n");
}

#[test]
fn attach_puts_a_project_file_in_the_first_prompt_and_refuses_one_outside() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let project = tempfile::tempdir().expect("a project");
    std::fs::write(project.path().join("spec.md"), "The answer is 42.\n").expect("write");
    let config = common::scripted_runner(dir.path(), "[[answers]]\ntext = \"ok\"\n", &["read"]);
    let cwd = project.path().display().to_string();
    let (_, requests) = common::run_recorded(
        dir.path(),
        &config,
        &["--cwd", &cwd, "--attach", "spec.md", "-p", "Read the spec."],
    );
    let user = requests[0]["messages"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(
        user.starts_with("Read the spec.\n\n<context ref=\"file://"),
        "{user}"
    );
    assert!(user.contains("The answer is 42."), "{user}");

    // An image goes as an image of the user's turn, after its text.
    std::fs::write(project.path().join("shot.png"), *b"\x89PNG\r\n\x1a\n").expect("write");
    let (_, requests) = common::run_recorded(
        dir.path(),
        &config,
        &["--cwd", &cwd, "--attach", "shot.png", "-p", "Look."],
    );
    assert_eq!(requests[0]["messages"][0]["text"], "Look.");
    assert_eq!(
        requests[0]["messages"][1],
        json!({ "role": "user_image", "image": { "mime_type": "image/png", "data": "iVBORw0KGgo=" } })
    );

    let outside = dir.path().join("answers.toml").display().to_string();
    let output = common::command(&[
        "run", "--config", &config, "--cwd", &cwd, "--attach", &outside, "-p", "x",
    ])
    .output()
    .expect("dsh runs");
    common::assert_fails_saying(&output, "is outside the session's directories");
}

#[test]
fn an_answer_cut_short_or_refused_says_so_and_the_run_succeeds() {
    let dir = tempfile::tempdir().expect("a temp dir");
    for (finish, said) in [
        (
            "max_tokens",
            "[the answer stopped at the model's output limit]",
        ),
        ("refusal", "[the model refused]"),
    ] {
        let answers = format!("[[answers]]\ntext = \"Partial\"\nfinish = \"{finish}\"\n");
        let config = scripted_deployment(dir.path(), &answers);
        let output = run_hello(&config).output().expect("dsh runs");
        assert_status(&output, 0);
        assert_eq!(stdout(&output), "Partial\n");
        assert!(stderr(&output).contains(said), "{}", stderr(&output));
    }
}

/// What the model thinks before it answers is shown on stderr, dimmed
/// where stderr shows styles (`CLICOLOR_FORCE` stands for a terminal
/// here), apart from the answer on stdout; it goes to the model's next
/// request with its answer.
#[test]
fn thoughts_show_dimmed_on_stderr_apart_from_the_answer() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let config = scripted_deployment(
        dir.path(),
        "[[answers]]\ntext = \"one\"\nthoughts = [\"Count first.\"]\n\
         [[answers]]\ntext = \"two\"\n",
    );
    let output = run_hello(&config)
        .env("CLICOLOR_FORCE", "1")
        .output()
        .expect("dsh runs");
    assert_status(&output, 0);
    assert_eq!(stdout(&output), "one\n");
    let stderr = stderr(&output);
    let dimmed = format!(
        "{}\n",
        console::style("Count first.").dim().force_styling(true)
    );
    assert!(stderr.contains(&dimmed), "{stderr:?}");

    let plain = run_hello(&config).output().expect("dsh runs");
    assert_status(&plain, 0);
    assert_eq!(stdout(&plain), "one\n");
    let stderr = common::stderr(&plain);
    assert!(stderr.contains("Count first.\n"), "{stderr:?}");
    assert!(!stderr.contains('\x1b'), "{stderr:?}");

    // A second turn's request carries the first answer with its thought.
    let (_, requests) = run_lines(dir.path(), &config, "first\nsecond\n");
    assert_eq!(
        requests[1]["messages"][1]["thoughts"],
        json!([{"kind": "text", "text": "Count first."}])
    );
}

/// `-p` with input the session refuses (a model there is not) fails the
/// command, saying why; a command it runs (`/mode ask`) succeeds with no
/// turn.
#[test]
fn a_refused_prompt_fails_and_a_command_runs_without_a_turn() {
    let dir = tempfile::tempdir().unwrap();
    let config = scripted_deployment(dir.path(), "[[answers]]\ntext = \"unused\"\n");
    let refused = command(&[
        "run",
        "--no-store",
        "--config",
        &config,
        "-p",
        "/model nope",
    ])
    .output()
    .unwrap();
    assert_status(&refused, 1);
    assert!(
        stderr(&refused).contains("`nope` is not a model of this deployment"),
        "{}",
        stderr(&refused)
    );
    let ran = command(&["run", "--no-store", "--config", &config, "-p", "/mode ask"])
        .output()
        .unwrap();
    assert_status(&ran, 0);
    assert!(stderr(&ran).contains("mode: ask"), "{}", stderr(&ran));
    assert_eq!(stdout(&ran), "", "no turn, no answer");
}

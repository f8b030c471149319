//! Hostile and careless use (issue 34): an editor that closes its end
//! mid-turn, bytes that are not a protocol, signals, secrets, files that
//! are not files. Each test drives the real `dsh` binary.

use crate::common;

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// A deployment in `dir`: scripted `answers`, one agent `editor` with
/// `tools`, and any extra `tables`. Returns the config's path.
fn deployment(dir: &Path, answers: &str, tables: &str, tools: &[&str]) -> String {
    deployment_with(dir, UNSANDBOXED, answers, tables, tools)
}

/// These tests follow a command's processes by the pid it reports
/// (`echo $$`), which a sandbox's PID namespace renumbers: their commands
/// run unsandboxed. A sandboxed command's end with its waiter is
/// `tools/sandbox/tests/hostile.rs`'s.
const UNSANDBOXED: &str = "[sandbox]\nmode = \"full-access\"\n";

/// [`deployment`] with top-level keys `top` first.
fn deployment_with(dir: &Path, top: &str, answers: &str, tables: &str, tools: &[&str]) -> String {
    common::write(&dir.join("answers.toml"), answers);
    common::config(
        dir,
        &format!(
            "{top}[adapter.scripted]\nanswers = \"answers.toml\"\nmodel = \"scripted\"\n{tables}\n\
             [[agents]]\nid = \"editor\"\ntools = {tools:?}\n\
             persona = \"You are an editor's agent on <<model>> in <<cwd>>.\"\n"
        ),
    )
}

/// Scripted answers whose first calls `bash` with `command`.
fn bash_answer(command: &str) -> String {
    format!(
        "[[answers]]\n[[answers.tool_calls]]\nname = \"bash\"\narguments = {{ command = {command:?} }}\n"
    )
}

/// `dsh acp` driven by raw lines.
struct Acp {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
}

impl Acp {
    fn start(config: &str) -> Self {
        Self::start_with(common::command(&["acp", "--config", config]))
    }

    /// `dsh acp` of a deployment in `dir` whose model has no answers,
    /// initialized: for what happens on the wire before any turn.
    fn initialized_without_answers(dir: &Path) -> Self {
        let config = deployment(dir, "answers = []\n", "", &["bash"]);
        let mut acp = Self::start(&config);
        acp.initialize();
        acp
    }

    fn start_with(mut command: std::process::Command) -> Self {
        let mut child = command
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("dsh starts");
        let stdin = child.stdin.take();
        let stdout = BufReader::new(child.stdout.take().expect("stdout"));
        Self {
            child,
            stdin,
            stdout,
        }
    }

    fn send_bytes(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin is open");
        stdin.write_all(bytes).expect("write stdin");
        stdin.write_all(b"\n").expect("write stdin");
        stdin.flush().expect("flush");
    }

    fn request(&mut self, id: u32, method: &str, params: Value) {
        let line = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.send_bytes(line.to_string().as_bytes());
    }

    /// The next line on stdout, as JSON.
    fn next(&mut self) -> Value {
        let mut line = String::new();
        let read = self
            .stdout
            .read_line(&mut line)
            .expect("stdout is readable");
        assert!(read > 0, "dsh acp ended its output early");
        serde_json::from_str(&line).unwrap_or_else(|_| panic!("not JSON on stdout: {line}"))
    }

    /// Lines until the answer to request `id`.
    fn answer(&mut self, id: u32) -> Value {
        loop {
            let line = self.next();
            if line["id"] == id && line.get("method").is_none() {
                return line;
            }
        }
    }

    fn initialize(&mut self) {
        self.request(0, "initialize", json!({"protocolVersion": 1}));
        assert_eq!(self.answer(0)["result"]["protocolVersion"], 1);
    }

    fn new_session(&mut self, id: u32, cwd: &Path) -> String {
        self.request(id, "session/new", json!({"cwd": cwd, "mcpServers": []}));
        let answer = self.answer(id);
        answer["result"]["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("a session: {answer}"))
            .to_owned()
    }

    fn prompt(&mut self, id: u32, session: &str, text: &str) {
        self.request(
            id,
            "session/prompt",
            json!({"sessionId": session, "prompt": [{"type": "text", "text": text}]}),
        );
    }

    fn close_stdin(&mut self) {
        self.stdin = None;
    }

    /// Waits for the process to end, which must exit 0; its stderr.
    #[track_caller]
    fn wait_success(mut self) -> String {
        let mut rest = Vec::new();
        let _ = self.stdout.read_to_end(&mut rest);
        let status = self.child.wait().expect("dsh ends");
        let mut stderr = String::new();
        if let Some(mut pipe) = self.child.stderr.take() {
            let _ = pipe.read_to_string(&mut stderr);
        }
        assert_eq!(status.code(), Some(0), "stderr:\n{stderr}");
        stderr
    }
}

/// Waits until `path` holds a pid; returns it.
fn pid_in(path: &Path) -> u32 {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(pid) = std::fs::read_to_string(path)
            .ok()
            .and_then(|text| text.trim().parse().ok())
        {
            return pid;
        }
        assert!(
            Instant::now() < deadline,
            "{} was never written",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Asserts that `pid` ends (it may take the moment a killed process
/// needs to be reaped).
#[track_caller]
fn assert_ends(pid: u32, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while common::running(pid) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(!common::running(pid), "{what} (pid {pid}) outlived dsh");
}

/// A deployment in `dir` whose agent runs one bash command that writes
/// its pid to the returned file and sleeps a minute.
fn sleeping_command(dir: &Path) -> (String, PathBuf) {
    let pid_file = dir.join("pid");
    let answer = bash_answer(&format!("echo $$ > {}; sleep 60", pid_file.display()));
    (deployment(dir, &answer, "", &["bash"]), pid_file)
}

/// `dsh acp` on [`sleeping_command`]'s deployment, in the middle of a turn
/// running that command; and the command's pid.
fn acp_running_a_command(dir: &Path) -> (Acp, u32) {
    let (config, pid_file) = sleeping_command(dir);
    let mut acp = Acp::start(&config);
    acp.initialize();
    let session = acp.new_session(1, dir);
    acp.prompt(2, &session, "run it");
    (acp, pid_in(&pid_file))
}

// ---- 1. An editor that closes mid-turn ----

#[test]
fn closing_stdin_mid_turn_exits_0_and_stops_the_running_command() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (mut acp, pid) = acp_running_a_command(dir.path());
    acp.close_stdin();
    let stderr = acp.wait_success();
    assert!(!stderr.contains("internal error"), "stderr:\n{stderr}");
    assert_ends(pid, "the turn's command");
}

// ---- 2. Bytes that are not UTF-8 ----

#[test]
fn an_invalid_utf8_line_is_a_parse_error_and_the_server_goes_on() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut acp = Acp::initialized_without_answers(dir.path());
    acp.send_bytes(b"{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"x\xff\"}");
    let error = acp.next();
    assert_eq!(error["error"]["code"], -32700, "{error}");
    assert_eq!(error["id"], Value::Null);
    assert!(
        error.to_string().contains("UTF-8"),
        "the error says what was wrong: {error}"
    );
    let session = acp.new_session(6, dir.path());
    assert!(!session.is_empty());
    acp.close_stdin();
    acp.wait_success();
}

/// The processes of process group `group` that still run.
fn group_members(group: u32) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
                let Some((_, rest)) = stat.rsplit_once(')') else {
                    return false;
                };
                // state, ppid, pgrp
                let fields: Vec<&str> = rest.split_whitespace().collect();
                fields.first() != Some(&"Z") && fields.get(2) == Some(&group.to_string().as_str())
            })
        })
        .collect()
}

/// A parent `dsh acp` whose agent asks `helper`, an `acp` child running
/// `dsh acp` on a deployment whose model runs a long command that writes
/// its pid and its parent's (the child dsh) to `pids`.
fn parent_child_tree(dir: &Path) -> (String, PathBuf) {
    let child_dir = dir.join("child");
    std::fs::create_dir_all(&child_dir).expect("child dir");
    let pids = dir.join("pids");
    let child_config = deployment(
        &child_dir,
        &bash_answer(&format!("echo $$ $PPID > {}; sleep 60", pids.display())),
        "",
        &["bash"],
    );
    let tables = format!(
        "[tools.helper]\nkind = \"subagent\"\nprovider = \"acp\"\ncommand = {:?}\n",
        [env!("CARGO_BIN_EXE_dsh"), "acp", "--config", &child_config]
    );
    let config = deployment(
        dir,
        "[[answers]]\n[[answers.tool_calls]]\nname = \"helper\"\narguments = { prompt = \"wait\" }\n",
        &tables,
        &["helper"],
    );
    (config, pids)
}

/// Starts the tree and waits until the grandchild command runs: the
/// parent's session, and the pids of the command and the child dsh.
fn start_tree(dir: &Path) -> (Acp, u32, u32) {
    let (config, pids) = parent_child_tree(dir);
    let mut acp = Acp::start(&config);
    acp.initialize();
    let session = acp.new_session(1, dir);
    acp.prompt(2, &session, "ask the helper");
    let deadline = Instant::now() + Duration::from_secs(60);
    let (command, child) = loop {
        if let Some((command, child)) = std::fs::read_to_string(&pids).ok().and_then(|text| {
            let (a, b) = text.trim().split_once(' ')?;
            Some((a.parse().ok()?, b.parse().ok()?))
        }) {
            break (command, child);
        }
        assert!(Instant::now() < deadline, "the grandchild never ran");
        std::thread::sleep(Duration::from_millis(20));
    };
    (acp, command, child)
}

#[track_caller]
fn assert_tree_gone(parent: u32, child: u32, command: u32) {
    assert_ends(parent, "the parent dsh");
    assert_ends(child, "the child dsh acp");
    assert_ends(command, "the grandchild command");
    let deadline = Instant::now() + Duration::from_secs(30);
    while !group_members(command).is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(
        group_members(command),
        Vec::<u32>::new(),
        "a process of the command's group outlived dsh"
    );
}

// ---- The class: no process of the tree survives ----

#[test]
fn closing_stdin_stops_every_process_of_the_tree() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (mut acp, command, child) = start_tree(dir.path());
    let parent = acp.child.id();
    acp.close_stdin();
    acp.wait_success();
    assert_tree_gone(parent, child, command);
}

#[test]
fn sigterm_stops_every_process_of_the_tree() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (acp, command, child) = start_tree(dir.path());
    let parent = acp.child.id();
    let killed = std::process::Command::new("kill")
        .args(["-TERM", &parent.to_string()])
        .status()
        .expect("kill runs");
    assert!(killed.success());
    acp.wait_success();
    assert_tree_gone(parent, child, command);
}

#[test]
fn sighup_stops_the_running_command_of_dsh_acp() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (acp, pid) = acp_running_a_command(dir.path());
    let parent = acp.child.id();
    std::process::Command::new("kill")
        .args(["-HUP", &parent.to_string()])
        .status()
        .expect("kill runs");
    acp.wait_success();
    assert_ends(pid, "the turn's command");
}

// ---- 8. Bounded input ----

#[test]
fn a_line_over_the_cap_is_refused_with_a_short_echo_and_the_server_goes_on() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut acp = Acp::initialized_without_answers(dir.path());
    // 17 MiB of a JSON string: over the 16 MiB a line may have.
    let mut line = b"{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"x\",\"params\":\"".to_vec();
    line.resize(17 * 1024 * 1024, b'a');
    line.extend_from_slice(b"\"}");
    acp.send_bytes(&line);
    let error = acp.next();
    assert_eq!(error["error"]["code"], -32700, "{error}");
    let text = error.to_string();
    assert!(text.contains("limit"), "the error names the limit: {text}");
    assert!(text.len() < 2000, "the echo is short: {} bytes", text.len());
    // A long line that is not JSON: the echo is cut too.
    acp.send_bytes(&vec![b'x'; 100_000]);
    let error = acp.next();
    assert_eq!(error["error"]["code"], -32700);
    assert!(error.to_string().len() < 2000, "{error}");
    let session = acp.new_session(4, dir.path());
    assert!(!session.is_empty());
    acp.close_stdin();
    acp.wait_success();
}

// ---- 6. Signals end `dsh run` cleanly ----

#[test]
fn sigterm_and_sighup_stop_the_running_command_of_dsh_run() {
    for signal in ["-TERM", "-HUP"] {
        let dir = tempfile::tempdir().expect("tempdir");
        let (config, pid_file) = sleeping_command(dir.path());
        let mut run = common::command(&["run", "--config", &config, "-p", "go"])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("dsh run starts");
        let pid = pid_in(&pid_file);
        std::process::Command::new("kill")
            .args([signal, &run.id().to_string()])
            .status()
            .expect("kill runs");
        let status = run.wait().expect("dsh run ends");
        let mut stderr = String::new();
        if let Some(mut pipe) = run.stderr.take() {
            let _ = pipe.read_to_string(&mut stderr);
        }
        assert_eq!(status.code(), Some(1), "{signal}: {stderr}");
        assert!(stderr.contains("stopped by SIG"), "{signal}: {stderr}");
        assert_ends(pid, "the command of `dsh run`");
    }
}

// ---- 5. Secrets never reach the model or the log ----

/// A chat-completions server whose model first runs `command` with
/// `bash`, then answers; it keeps every request it got.
fn model_running(command: &'static str) -> (String, std::sync::Arc<std::sync::Mutex<Vec<Value>>>) {
    use axum::extract::{Json, State};
    type Seen = std::sync::Arc<std::sync::Mutex<Vec<Value>>>;
    let seen: Seen = Seen::default();
    let app = axum::Router::new()
        .route(
            "/v1/chat/completions",
            axum::routing::post(
                async move |State(seen): State<Seen>, Json(request): Json<Value>| {
                    let mut seen = seen.lock().expect("requests");
                    seen.push(request);
                    let message = if seen.len() == 1 {
                        json!({"role": "assistant", "content": null, "tool_calls": [{
                            "id": "call_1", "type": "function",
                            "function": {"name": "bash",
                                         "arguments": json!({"command": command}).to_string()}}]})
                    } else {
                        json!({"role": "assistant", "content": "done"})
                    };
                    Json(json!({"id": "x", "object": "chat.completion",
                        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}]}))
                },
            ),
        )
        .with_state(seen.clone());
    (common::serve(app), seen)
}

#[test]
fn bash_runs_without_the_api_key_and_no_request_log_holds_it() {
    const KEY: &str = "sk-secret-0123456789abcdef";
    const OTHER: &str = "token-listed-in-env-remove";
    let (base_url, seen) =
        model_running("echo \"key=$DSH_TEST_SECRET_KEY other=$DSH_TEST_OTHER_TOKEN\"");
    let dir = tempfile::tempdir().expect("tempdir");
    let config = common::config(
        dir.path(),
        &format!(
            "[adapter.openai]\nbase_url = {base_url:?}\nmodel = \"m\"\n\
             api_key_env = \"DSH_TEST_SECRET_KEY\"\n\
             [tools.bash]\nenv_remove = [\"DSH_TEST_OTHER_TOKEN\"]\n\
             [[agents]]\nid = \"a\"\ntools = [\"bash\"]\npersona = \"You help.\"\n"
        ),
    );
    let cwd = dir.path().display().to_string();
    let (mut run, log) =
        common::recording_run(dir.path(), &config, &["--cwd", &cwd, "-p", "print the key"]);
    let output = run
        .env("DSH_TEST_SECRET_KEY", KEY)
        .env("DSH_TEST_OTHER_TOKEN", OTHER)
        .output()
        .expect("dsh runs");
    common::assert_status(&output, 0);

    let seen = seen.lock().expect("requests");
    assert_eq!(seen.len(), 2);
    let conversation = seen[1].to_string();
    assert!(
        conversation.contains("key= other="),
        "the command ran, without either variable: {conversation}"
    );
    let logged = std::fs::read_to_string(&log).expect("the log");
    for secret in [KEY, OTHER] {
        assert!(!conversation.contains(secret), "{secret} reached the model");
        assert!(!logged.contains(secret), "{secret} reached the log");
    }
}

#[test]
fn env_remove_belongs_to_the_bash_table() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = deployment_with(
        dir.path(),
        "",
        "answers = []\n",
        "[tools.read]\nenv_remove = [\"X\"]\n",
        &["bash"],
    );
    let output = common::dsh(&["check", "--config", &config]);
    // `[tools.read]` is the read tool's own table, which has no such key.
    let stderr =
        common::assert_fails_saying(&output, "unknown field `env_remove`, expected `permission`");
    assert!(stderr.contains("dsh.toml:5:1"), "{stderr}");
}

// ---- 3. A diagnostic past column 65,535 ----

#[test]
fn a_problem_past_column_65535_is_shown_with_its_snippet_clipped() {
    let dir = tempfile::tempdir().expect("tempdir");
    common::write(&dir.path().join("answers.toml"), "answers = []\n");
    let config = common::config(
        dir.path(),
        &format!(
            "[adapter.scripted]\nanswers = \"answers.toml\"\nmodel = \"m\"\n\
             [[agents]]\nid = \"a\"\ntools = []\npersona = \"{} <<nope>>\"\n",
            "x".repeat(70_000)
        ),
    );
    let output = common::dsh(&["check", "--config", &config]);
    // The problem is shown.
    let stderr = common::assert_fails_saying(&output, "unknown variable `<<nope>>`");
    assert!(stderr.contains(":7:70013]"), "at its real column: {stderr}");
    assert!(stderr.contains("…x"), "the snippet is clipped: {stderr}");
    assert!(stderr.len() < 2_000, "{} bytes", stderr.len());
}

// ---- 10. Reports: linear, capped, escaped ----

#[test]
fn a_report_shows_50_problems_then_counts_the_rest() {
    let dir = tempfile::tempdir().expect("tempdir");
    common::write(&dir.path().join("answers.toml"), "answers = []\n");
    let references: Vec<String> = (0..16_000).map(|n| format!("<<bad{n}>>")).collect();
    let config = common::config(
        dir.path(),
        &format!(
            "[adapter.scripted]\nanswers = \"answers.toml\"\nmodel = \"m\"\n\
             [[agents]]\nid = \"a\"\ntools = []\npersona = \"\"\"{}\"\"\"\n",
            references.join("\n")
        ),
    );
    let output = common::dsh(&["check", "--config", &config]);
    common::assert_status(&output, 1);
    let stderr = common::stderr(&output);
    assert_eq!(stderr.matches("unknown variable").count(), 50);
    assert!(
        stderr
            .trim_end()
            .ends_with("and 15950 more problems (fix these first)"),
        "{}",
        &stderr[stderr.len().saturating_sub(300)..]
    );
}

#[test]
fn terminal_escapes_from_the_file_are_shown_escaped() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = common::config(
        dir.path(),
        "[adapter.scripted]\nanswers = \"a.toml\"\n# \x1b]0;pwned\x07 \x1b[2J\n[[agents]]\n",
    );
    let output = common::dsh(&["check", "--config", &config]);
    // Shown escaped.
    let stderr = common::assert_fails_saying(&output, "\\u{1b}");
    assert!(
        !stderr.contains('\x1b') && !stderr.contains('\x07'),
        "raw escapes reached the terminal: {stderr:?}"
    );
}

// ---- 7. Outputs never replace what the deployment reads ----

#[test]
fn trace_and_record_requests_never_replace_a_file_the_deployment_reads() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = deployment(dir.path(), "[[answers]]\ntext = \"hi\"\n", "", &["bash"]);
    let answers = dir.path().join("answers.toml");
    let before = std::fs::read_to_string(&config).expect("config");
    let answers_before = std::fs::read_to_string(&answers).expect("answers");
    // The same files under other names, too.
    let other_name = dir.path().join(".").join("dsh.toml");
    for (flag, target) in [
        ("--trace", config.clone()),
        ("--record-requests", config.clone()),
        ("--trace", answers.display().to_string()),
        ("--record-requests", other_name.display().to_string()),
    ] {
        let output = common::dsh(&["run", "--config", &config, flag, &target, "-p", "hi"]);
        common::assert_status(&output, 1);
        let stderr = common::stderr(&output);
        assert!(
            stderr.contains("which the deployment reads"),
            "{flag} {target}: {stderr}"
        );
        assert_eq!(std::fs::read_to_string(&config).expect("config"), before);
        assert_eq!(
            std::fs::read_to_string(&answers).expect("answers"),
            answers_before
        );
    }
}

// ---- 11. Inputs that are not regular files ----

#[test]
fn a_deployment_or_answers_path_that_is_no_regular_file_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let fifo = dir.path().join("fifo.toml");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo runs");
    assert!(made.success());
    let fifo = fifo.display().to_string();
    for (path, kind) in [
        (fifo.as_str(), "a FIFO"),
        ("/dev/zero", "a character device"),
    ] {
        let output = common::dsh(&["check", "--config", path]);
        common::assert_status(&output, 1);
        let stderr = common::stderr(&output);
        assert!(stderr.contains(kind), "{path}: {stderr}");
    }
    // The adapter's script, too.
    let config = common::config(
        dir.path(),
        "[adapter.scripted]\nanswers = \"/dev/zero\"\nmodel = \"m\"\n\
         [[agents]]\nid = \"a\"\ntools = []\npersona = \"Hi.\"\n",
    );
    let output = common::dsh(&["run", "--config", &config, "-p", "hi"]);
    common::assert_fails_saying(&output, "a character device");
    // Too large.
    let big = dir.path().join("big.toml");
    let file = std::fs::File::create(&big).expect("create");
    file.set_len(17 * 1024 * 1024).expect("grow");
    let output = common::dsh(&["check", "--config", &big.display().to_string()]);
    common::assert_fails_saying(&output, "larger than");
}

// ---- 9 and 4. `dsh check` on subagent children's tools ----

/// `dsh check` of a deployment with the spawn instances `instances`
/// (name, the tools of its children).
fn check_children(instances: &[(&str, &[&str])]) -> std::process::Output {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut tables = String::new();
    for (name, tools) in instances {
        tables.push_str(&format!(
            "[tools.{name}]\nkind = \"subagent\"\nprovider = \"spawn\"\n\
             [tools.{name}.child]\ntools = {tools:?}\n"
        ));
    }
    let names: Vec<&str> = instances.iter().map(|(name, _)| *name).collect();
    let config = deployment(dir.path(), "answers = []\n", &tables, &names);
    common::dsh(&["check", "--config", &config])
}

#[test]
fn a_child_may_list_another_instance_whatever_their_names() {
    // `a` before `b` and `b` before `a`, alphabetically.
    for instances in [
        [("a", &["b"][..]), ("b", &["bash"][..])],
        [("z", &["b"][..]), ("b", &["bash"][..])],
    ] {
        let output = check_children(&instances);
        assert_eq!(
            output.status.code(),
            Some(0),
            "{instances:?}: {}",
            common::stderr(&output)
        );
    }
}

#[test]
fn a_child_listing_its_own_tool_is_a_cycle_not_an_unknown_tool() {
    let stderr = common::assert_fails_saying(
        &check_children(&[("task", &["bash", "task"])]),
        "the children of `task` list `task` itself",
    );
    assert!(!stderr.contains("unknown tool"), "{stderr}");
}

#[test]
fn children_that_start_each_other_are_a_cycle() {
    let stderr = common::assert_fails_saying(
        &check_children(&[("a", &["b"]), ("b", &["c"]), ("c", &["a"])]),
        "`a` → `b` → `c` → `a`",
    );
    assert_eq!(
        stderr.matches("in a cycle").count(),
        1,
        "one report: {stderr}"
    );
}

// ---- 4. Subagent recursion is bounded at run time ----

/// A scripted answer calling `tool` with a prompt.
fn call(tool: &str) -> String {
    format!(
        "[[answers]]\n[[answers.tool_calls]]\nname = {tool:?}\narguments = {{ prompt = \"go deeper\" }}\n"
    )
}

/// Asserts that a tool result in the recorded `requests` contains
/// `needle`; `what` says what that shows.
#[track_caller]
fn assert_a_tool_result_says(requests: &[Value], needle: &str, what: &str) {
    let results: Vec<&str> = requests
        .iter()
        .filter_map(|request| request["messages"].as_array())
        .flatten()
        .filter(|message| message["role"] == "tool")
        .filter_map(|message| message["text"].as_str())
        .collect();
    assert!(
        results.iter().any(|text| text.contains(needle)),
        "{what}: {needle:?} in none of {results:?}"
    );
}

#[test]
fn a_spawn_child_that_starts_itself_stops_at_the_depth_limit() {
    let dir = tempfile::tempdir().expect("tempdir");
    // The child inherits its parent's tools, `task` included.
    let answers = format!(
        "{}{}{}[[answers]]\ntext = \"level 2\"\n[[answers]]\ntext = \"level 1\"\n\
         [[answers]]\ntext = \"top\"\n",
        call("task"),
        call("task"),
        call("task")
    );
    let config = deployment_with(
        dir.path(),
        "max_subagent_depth = 2\n",
        &answers,
        "[tools.task]\nkind = \"subagent\"\nprovider = \"spawn\"\n",
        &["task"],
    );
    let (stdout, requests) = common::run_prompt(dir.path(), &config, None, "recurse");
    assert!(stdout.ends_with("top\n"), "{stdout}");
    assert_a_tool_result_says(
        &requests,
        "subagent level 3, over the limit of 2",
        "the third level was refused",
    );
}

#[test]
fn an_acp_child_running_the_same_deployment_inherits_the_depth() {
    let dir = tempfile::tempdir().expect("tempdir");
    let child_log = dir.path().join("child.jsonl");
    let config_path = dir.path().join("dsh.toml");
    let command = [
        env!("CARGO_BIN_EXE_dsh").to_owned(),
        "acp".to_owned(),
        "--config".to_owned(),
        config_path.display().to_string(),
        "--record-requests".to_owned(),
        child_log.display().to_string(),
    ];
    // Parent and child read the same script from its start: call the
    // helper, then answer.
    let config = deployment_with(
        dir.path(),
        "max_subagent_depth = 1\n",
        &format!("{}[[answers]]\ntext = \"done\"\n", call("helper")),
        &format!(
            "[tools.helper]\nkind = \"subagent\"\nprovider = \"acp\"\n\
             command = {command:?}\n"
        ),
        &["helper"],
    );
    let (stdout, _) = common::run_prompt(dir.path(), &config, None, "recurse");
    assert_eq!(stdout, "done\n");
    let child = common::recorded_requests(&child_log);
    assert_a_tool_result_says(
        &child,
        "subagent level 2, over the limit of 1",
        "the child, at depth 1, could not start another",
    );
}

// ---- 6. An `acp` child that never answers ----

#[test]
fn an_acp_child_that_never_answers_times_out_and_is_stopped() {
    let dir = tempfile::tempdir().expect("tempdir");
    let pid_file = dir.path().join("pid");
    // A "child agent" that reads nothing and answers nothing.
    let command = [
        "bash".to_owned(),
        "-c".to_owned(),
        format!("echo $$ > {}; exec sleep 60", pid_file.display()),
    ];
    let config = deployment(
        dir.path(),
        &format!("{}[[answers]]\ntext = \"gave up\"\n", call("helper")),
        &format!(
            "[tools.helper]\nkind = \"subagent\"\nprovider = \"acp\"\ncommand = {command:?}\n\
             timeout_secs = 1\n"
        ),
        &["helper"],
    );
    let (stdout, requests) = common::run_prompt(dir.path(), &config, None, "ask");
    assert_eq!(stdout, "gave up\n");
    assert_a_tool_result_says(&requests, "did not answer within 1 s", "the call timed out");
    assert_ends(pid_in(&pid_file), "the child that never answered");
}

// ---- 13. The persona renders first ----

#[test]
fn a_deployment_section_ordered_before_the_persona_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    for order in [-5, 0] {
        let config = deployment(dir.path(), "answers = []\n", "", &["bash"]);
        let text = std::fs::read_to_string(&config).expect("config");
        common::write(
            Path::new(&config),
            &format!(
                "{text}[[agents.sections]]\nname = \"aaa:first\"\norder = {order}\ntext = \"Before.\"\n"
            ),
        );
        let output = common::dsh(&["check", "--config", &config]);
        common::assert_fails_saying(&output, &format!("has order {order}, before the persona"));
    }
}

// ---- Issue 58, item 3. Attachments that are not regular files ----

/// `dsh` with `args`, its address space capped at 4 GB (so a read that
/// never ends fails instead of filling the machine), stopped if it runs
/// past a minute: a hang is a failure here, not a stuck test (a guard,
/// not a benchmark: the goals are far under it).
fn bounded_output(args: &[&str]) -> std::process::Output {
    let mut shell = std::process::Command::new("sh");
    shell
        .arg("-c")
        .arg("ulimit -v 4000000; exec \"$0\" \"$@\"")
        .arg(env!("CARGO_BIN_EXE_dsh"))
        .args(args)
        .current_dir(common::workspace())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    // The environment every test's `dsh` has, removals included.
    for (key, value) in common::command(&[]).get_envs() {
        match value {
            Some(value) => shell.env(key, value),
            None => shell.env_remove(key),
        };
    }
    let mut child = shell.spawn().expect("dsh starts");
    // Read both pipes meanwhile: a full pipe would stop dsh, not end it.
    let drain = |pipe: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            if let Some(mut pipe) = pipe {
                pipe.read_to_end(&mut bytes).expect("read a pipe");
            }
            bytes
        })
    };
    let stdout = drain(child.stdout.take().map(|pipe| Box::new(pipe) as _));
    let stderr = drain(child.stderr.take().map(|pipe| Box::new(pipe) as _));
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if Instant::now() > deadline {
            child.kill().expect("kill");
            let _ = child.wait();
            panic!("dsh {args:?} ran past a minute");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    std::process::Output {
        status,
        stdout: stdout.join().expect("stdout"),
        stderr: stderr.join().expect("stderr"),
    }
}

#[test]
fn attaching_a_fifo_or_a_device_named_png_is_refused_at_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let project = tempfile::tempdir().expect("a project");
    let config = deployment(dir.path(), "[[answers]]\ntext = \"ok\"\n", "", &["read"]);
    let cwd = project.path().display().to_string();
    for (name, node, said) in [
        (
            "pic.png",
            &["p"][..],
            "is a FIFO (named pipe), not a regular file",
        ),
        (
            "zero.png",
            &["c", "1", "5"][..],
            "is a character device, not a regular file",
        ),
        (
            "pipe.txt",
            &["p"][..],
            "is a FIFO (named pipe), not a regular file",
        ),
    ] {
        let path = project.path().join(name);
        let made = std::process::Command::new("mknod")
            .arg(&path)
            .args(node)
            .status()
            .expect("mknod runs");
        assert!(made.success(), "mknod {name} (tests run as root)");
        let output = bounded_output(&[
            "run", "--config", &config, "--cwd", &cwd, "--attach", name, "-p", "Look.",
        ]);
        let stderr = common::assert_fails_saying(&output, said);
        assert!(stderr.contains(name), "{stderr}");
    }
}

// ---- Issue 58, item 4. `dsh diff` of a rewritten section ----

/// `count` words of prose drawn by `seed`, a line every ninety.
fn prose(count: usize, seed: u64) -> String {
    const WORDS: [&str; 12] = [
        "alpha", "beta", "gamma", "delta", "code", "test", "file", "run", "make", "keep", "the",
        "a",
    ];
    let mut state = seed;
    let mut text = String::new();
    for at in 0..count {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1);
        let word = WORDS[usize::try_from(state >> 60).expect("small") % WORDS.len()];
        text.push_str(word);
        text.push(if at % 90 == 89 { '\n' } else { ' ' });
    }
    text
}

/// A deployment in `dir`, named `name`, whose agent has one section of
/// `text`.
fn one_section(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    common::write(
        &path,
        &format!(
            "[adapter.scripted]\nanswers = \"answers.toml\"\nmodel = \"m\"\n\
             [[agents]]\nid = \"a\"\ntools = []\npersona = \"Hi.\"\n\
             [[agents.sections]]\nname = \"big\"\norder = 300\ntext = '''\n{text}'''\n"
        ),
    );
    path.display().to_string()
}

/// A section of 40,000 words, rewritten: the old word diff weighed every
/// word against every other (minutes; BENCHMARKS.md has the figures). The
/// guard of [`bounded_output`] is a minute, thirty times the goal.
#[test]
fn a_rewritten_section_of_40k_words_is_diffed_and_its_runs_make_both_texts() {
    let dir = tempfile::tempdir().expect("tempdir");
    common::write(&dir.path().join("answers.toml"), "answers = []\n");
    let (old_text, new_text) = (prose(40_000, 1), prose(40_000, 2));
    let old = one_section(dir.path(), "old.toml", &old_text);
    let new = one_section(dir.path(), "new.toml", &new_text);
    let output = bounded_output(&[
        "diff", &old, &new, "--no-mcp", "--no-cwd", "--format", "json",
    ]);
    common::assert_status(&output, 1);
    let json: Value = serde_json::from_str(&common::stdout(&output)).expect("JSON");
    let change = &json["sections"]["changes"][0];
    assert_eq!(
        (&change["name"], &change["change"]),
        (&json!("big"), &json!("changed"))
    );
    let side = |skip: &str| -> String {
        (change["words"].as_array().expect("runs").iter())
            .filter(|run| run["op"] != skip)
            .map(|run| run["text"].as_str().expect("text"))
            .collect()
    };
    assert_eq!(side("insert").trim_end(), old_text.trim_end());
    assert_eq!(side("delete").trim_end(), new_text.trim_end());
}

// ---- Issue 58, item 5. Many sections ----

/// A deployment in `dir` whose agent has `count` sections of its own.
fn many_sections(dir: &Path, count: usize) -> String {
    let mut tables = String::new();
    for at in 0..count {
        tables.push_str(&format!(
            "[[agents.sections]]\nname = \"s{at}\"\norder = {}\n\
             text = \"Section {at} keeps rule {at} of the project, about file {at}.\"\n",
            300 + at
        ));
    }
    common::write(&dir.join("answers.toml"), "answers = []\n");
    common::config(
        dir,
        &format!(
            "[adapter.scripted]\nanswers = \"answers.toml\"\nmodel = \"m\"\n\
             [[agents]]\nid = \"a\"\ntools = [\"read\"]\npersona = \"Hi.\"\n{tables}"
        ),
    )
}

/// 10,000 sections: each registered copied the registry's state, each
/// owner's line was searched from the file's start, each section's text
/// and origin searched among all (minutes; BENCHMARKS.md has the
/// figures). `check`, `prompt --format explain` and `diff` each finish
/// within [`bounded_output`]'s guard, and say what they should.
#[test]
fn check_explain_and_diff_of_10k_sections_finish_and_see_them_all() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = many_sections(dir.path(), 10_000);
    let output = bounded_output(&["check", "--config", &config]);
    common::assert_status(&output, 0);
    let output = bounded_output(&[
        "prompt", "--config", &config, "--no-cwd", "--format", "explain",
    ]);
    common::assert_status(&output, 0);
    let explained = common::stdout(&output);
    assert!(explained.contains("s9999"), "{}", &explained[..400]);
    let output = bounded_output(&["diff", &config, &config, "--no-mcp", "--no-cwd"]);
    common::assert_status(&output, 0);
    assert!(common::stdout(&output).contains("no difference"));
}

// ---- Issue 58, item 11. `write` in read-only mode ----

/// In read-only mode a change of files is refused at once, saying the
/// mode — not asked about, then failed in the sandbox.
#[test]
fn write_in_read_only_mode_is_refused_at_once_saying_the_mode() {
    let dir = tempfile::tempdir().expect("tempdir");
    let project = tempfile::tempdir().expect("a project");
    let answers = "[[answers]]\n[[answers.tool_calls]]\nname = \"write\"\n\
                   arguments = { file_path = \"new.txt\", content = \"hi\" }\n\
                   [[answers]]\ntext = \"done\"\n";
    let config = deployment(
        dir.path(),
        answers,
        "[tools.write]\npermission = \"ask\"\n",
        &["write"],
    );
    let cwd = project.path().display().to_string();
    let (output, requests) = common::run_recorded(
        dir.path(),
        &config,
        &["--cwd", &cwd, "--mode", "read-only", "-p", "write it"],
    );
    common::assert_status(&output, 0);
    assert_a_tool_result_says(
        &requests,
        "this session's mode is `read-only`",
        "the refusal",
    );
    let results = format!("{requests:?}");
    assert!(
        !results.contains("runs only with the user's permission"),
        "{results}"
    );
    assert!(!project.path().join("new.txt").exists());
}

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
    common::write(&dir.join("answers.toml"), answers);
    common::config(
        dir,
        &format!(
            "[adapter.scripted]\nanswers = \"answers.toml\"\nmodel = \"scripted\"\n{tables}\n\
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

    /// Waits for the process to end; its status code and stderr.
    fn wait(mut self) -> (Option<i32>, String) {
        let mut rest = Vec::new();
        let _ = self.stdout.read_to_end(&mut rest);
        let status = self.child.wait().expect("dsh ends");
        let mut stderr = String::new();
        if let Some(mut pipe) = self.child.stderr.take() {
            let _ = pipe.read_to_string(&mut stderr);
        }
        (status.code(), stderr)
    }
}

/// Whether process `pid` still exists (and is not a zombie).
fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
        Err(_) => false,
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
    while alive(pid) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(!alive(pid), "{what} (pid {pid}) outlived dsh");
}

// ---- 1. An editor that closes mid-turn ----

#[test]
fn closing_stdin_mid_turn_exits_0_and_stops_the_running_command() {
    let dir = tempfile::tempdir().expect("tempdir");
    let pid_file = dir.path().join("pid");
    let config = deployment(
        dir.path(),
        &bash_answer(&format!("echo $$ > {}; sleep 60", pid_file.display())),
        "",
        &["bash"],
    );
    let mut acp = Acp::start(&config);
    acp.initialize();
    let session = acp.new_session(1, dir.path());
    acp.prompt(2, &session, "run it");
    let pid = pid_in(&pid_file);
    acp.close_stdin();
    let (code, stderr) = acp.wait();
    assert_eq!(code, Some(0), "stderr:\n{stderr}");
    assert!(!stderr.contains("internal error"), "stderr:\n{stderr}");
    assert_ends(pid, "the turn's command");
}

// ---- 2. Bytes that are not UTF-8 ----

#[test]
fn an_invalid_utf8_line_is_a_parse_error_and_the_server_goes_on() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = deployment(dir.path(), "answers = []\n", "", &["bash"]);
    let mut acp = Acp::start(&config);
    acp.initialize();
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
    let (code, stderr) = acp.wait();
    assert_eq!(code, Some(0), "stderr:\n{stderr}");
}

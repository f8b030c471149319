//! Running the `dsh` binary the way a user does.

#![allow(dead_code, unreachable_pub)] // Each test file uses a part.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The workspace root: tests run `dsh` from there, so paths in its output
/// (`examples/acp-agent/dsh.toml`) are the same on every machine.
pub fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the cli crate is inside the workspace")
        .to_path_buf()
}

/// `dsh` with `args`, from the workspace root, without colors and without
/// any API key of the environment, its session store under the tests'
/// own directory (never the user's).
pub fn dsh(args: &[&str]) -> Output {
    command(args).output().expect("dsh runs")
}

/// The command `dsh(args)` runs, to add environment or stdin.
pub fn command(args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_dsh"));
    command
        .args(args)
        .current_dir(workspace())
        .envs(environment())
        .env_remove("OPENAI_API_KEY")
        .env_remove("CLICOLOR_FORCE");
    command
}

/// A temporary directory of its own for a `dsh` whose test needs one
/// (`TMPDIR`): a directory the test makes elsewhere under the system's
/// temporary directory is then outside what the sandbox lets commands
/// write, wherever the machine keeps its temporary files.
pub fn own_tmpdir() -> &'static str {
    const DIR: &str = "/tmp/dsh-tests/tmp";
    std::fs::create_dir_all(DIR).expect("the tests' temporary directory");
    DIR
}

/// What every `dsh` of the tests runs with: no colors, no user's global
/// instruction file (tests see only the files they write), and the
/// session store under the tests' own directory, never the user's.
fn environment() -> [(&'static str, PathBuf); 3] {
    [
        ("NO_COLOR", PathBuf::from("1")),
        ("XDG_CONFIG_HOME", workspace().join("target/no-user-config")),
        (
            "XDG_STATE_HOME",
            Path::new(env!("CARGO_TARGET_TMPDIR")).join("state"),
        ),
    ]
}

/// `dsh acp --config config`, recording its model requests to
/// `recorded`, as [`acp_agent`] starts it.
pub fn recording_acp_agent(config: &str, recorded: &Path) -> agent_client_protocol::AcpAgent {
    let recorded = recorded.display().to_string();
    acp_agent(&["acp", "--config", config, "--record-requests", &recorded])
}

/// `dsh` with `args` as an ACP agent for the client side of the crate, in
/// the tests' [`environment`]; `args` may start with `NAME=value`
/// settings of its own, which come after (and so override) those.
pub fn acp_agent(args: &[&str]) -> agent_client_protocol::AcpAgent {
    let settings = environment()
        .into_iter()
        .map(|(name, value)| format!("{name}={}", value.display()));
    let (own, rest): (Vec<&str>, Vec<&str>) = {
        let split = args.iter().take_while(|arg| arg.contains('=')).count();
        (args[..split].to_vec(), args[split..].to_vec())
    };
    let argv = settings
        .chain(own.into_iter().map(str::to_owned))
        .chain(std::iter::once(env!("CARGO_BIN_EXE_dsh").to_owned()))
        .chain(rest.into_iter().map(str::to_owned));
    agent_client_protocol::AcpAgent::from_args(argv).expect("an agent command")
}

/// `dsh` with `args` started with stdin, stdout and stderr piped, for a
/// test that talks to it.
pub fn spawn(args: &[&str]) -> std::process::Child {
    command(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("dsh starts")
}

/// `dsh` with `args`, fed `input` on stdin until it ends.
pub fn with_stdin(args: &[&str], input: &str) -> Output {
    use std::io::Write;
    let mut child = spawn(args);
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(input.as_bytes())
        .expect("write stdin");
    child.wait_with_output().expect("dsh ends")
}

pub fn stdout(output: &Output) -> String {
    String::from_utf8(output.stdout.clone()).expect("stdout is UTF-8")
}

pub fn stderr(output: &Output) -> String {
    String::from_utf8(output.stderr.clone()).expect("stderr is UTF-8")
}

/// Asserts the exit status, showing the streams when it differs.
#[track_caller]
pub fn assert_status(output: &Output, code: i32) {
    assert_eq!(
        output.status.code(),
        Some(code),
        "stdout:\n{}\nstderr:\n{}",
        stdout(output),
        stderr(output)
    );
}

/// Asserts that `output` failed (exit status 1) saying `needle` on
/// stderr, showing the streams when it did not; returns its stderr, for
/// the test's further checks.
#[track_caller]
pub fn assert_fails_saying(output: &Output, needle: &str) -> String {
    assert_status(output, 1);
    let stderr = stderr(output);
    assert!(stderr.contains(needle), "{needle:?} not in:\n{stderr}");
    stderr
}

pub fn write(path: &Path, text: &str) {
    std::fs::write(path, text).expect("write a test file");
}

/// Writes the deployment `tables` to `dsh.toml` in `dir`; returns its path,
/// as `--config` takes it.
pub fn config(dir: &Path, tables: &str) -> String {
    let path = dir.join("dsh.toml");
    write(&path, tables);
    path.display().to_string()
}

/// Writes a deployment to `dsh.toml` in `dir`: an `[adapter.scripted]`
/// table whose model `m` answers with `answers` (TOML, which it writes to
/// `answers.toml`), then `tables`. Returns the config's path.
pub fn scripted_config(dir: &Path, answers: &str, tables: &str) -> String {
    write(&dir.join("answers.toml"), answers);
    config(
        dir,
        &format!("[adapter.scripted]\nanswers = \"answers.toml\"\nmodel = \"m\"\n{tables}"),
    )
}

/// The tables after a deployment's adapter: the tool `instances`, then
/// the agent `runner` with `tools`.
pub fn runner(instances: &str, tools: &[&str]) -> String {
    format!(
        "\n{instances}\n\
         [[agents]]\n\
         id = \"runner\"\n\
         tools = {tools:?}\n\
         persona = \"You are a test agent running on <<model>> in <<cwd>>.\"\n"
    )
}

/// A deployment of `runner` with `tools`, whose model `m` answers with
/// `answers`: see [`scripted_config`].
pub fn scripted_runner(dir: &Path, answers: &str, tools: &[&str]) -> String {
    scripted_config(dir, answers, &runner("", tools))
}

/// The model requests `--record-requests` wrote to `path`, one JSON value
/// a line.
pub fn recorded_requests(path: &Path) -> Vec<serde_json::Value> {
    json_lines(path)
}

/// The JSON values of a file written one a line (`--record-requests`,
/// `--trace`), which must exist.
pub fn json_lines(path: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .unwrap_or_else(|error| panic!("{} was not written: {error}", path.display()))
        .lines()
        .map(|line| serde_json::from_str(line).expect("one JSON value a line"))
        .collect()
}

/// Serves `app` on a free port of 127.0.0.1, in a thread of its own;
/// returns its base URL as an OpenAI-compatible adapter takes it
/// (`http://127.0.0.1:N/v1`).
pub fn serve(app: axum::Router) -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
    listener.set_nonblocking(true).expect("nonblocking");
    let address = listener.local_addr().expect("an address");
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime");
        runtime.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener).expect("a listener");
            axum::serve(listener, app).await.expect("the server runs");
        });
    });
    format!("http://{address}/v1")
}

/// The command of `dsh run --config config` with `args`, recording its
/// model requests into `dir`, and the file it records them to.
pub fn recording_run(dir: &Path, config: &str, args: &[&str]) -> (Command, PathBuf) {
    let recorded = dir.join("run-requests.jsonl");
    let recorded_arg = recorded.display().to_string();
    let mut all = vec![
        "run",
        "--config",
        config,
        "--record-requests",
        &recorded_arg,
    ];
    all.extend(args);
    (command(&all), recorded)
}

/// `dsh run --config config` with `args`, which must succeed: its output,
/// and the model requests it recorded into `dir`.
pub fn run_recorded(dir: &Path, config: &str, args: &[&str]) -> (Output, Vec<serde_json::Value>) {
    let (mut run, recorded) = recording_run(dir, config, args);
    let output = run.output().expect("dsh runs");
    assert_status(&output, 0);
    (output, recorded_requests(&recorded))
}

/// `dsh run -p prompt` of `config` (in `cwd`, if given), which must
/// succeed: its stdout, and the model requests it recorded into `dir`.
pub fn run_prompt(
    dir: &Path,
    config: &str,
    cwd: Option<&Path>,
    prompt: &str,
) -> (String, Vec<serde_json::Value>) {
    let cwd = cwd.map(|cwd| cwd.display().to_string());
    let mut args = vec!["-p", prompt];
    if let Some(cwd) = &cwd {
        args.extend(["--cwd", cwd]);
    }
    let (output, requests) = run_recorded(dir, config, &args);
    (stdout(&output), requests)
}

/// The session directory of the snapshots: a fixed path, so they do not
/// depend on where the tests run, that exists (a working directory must)
/// and holds no instruction file.
pub fn snapshot_cwd() -> &'static str {
    const CWD: &str = "/tmp/dsh-tests/project";
    std::fs::create_dir_all(CWD).expect("the snapshots' working directory");
    CWD
}

/// Whether process `pid` still runs: it exists and is not a zombie (a
/// zombie has exited).
pub fn running(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        !stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'))
    })
}

/// The pids an MCP test server wrote (its own, then its `sleep` child's).
pub fn server_pids(path: &Path) -> Vec<u32> {
    std::fs::read_to_string(path)
        .expect("the server wrote its pids")
        .lines()
        .map(|line| line.parse().expect("a pid"))
        .collect()
}

/// Asserts that none of `pids` runs, once the signals dsh sent them have
/// been delivered (a killed process takes a moment to go).
#[track_caller]
pub fn assert_all_gone(pids: &[u32]) {
    for _ in 0..250 {
        if pids.iter().all(|&pid| !running(pid)) {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    for &pid in pids {
        assert!(!running(pid), "process {pid} outlived dsh");
    }
}

/// The names of the tools a recorded model request offers, in its order,
/// in either wire format (`function.name` or `name`).
pub fn tool_names(request: &serde_json::Value) -> Vec<String> {
    request["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|tool| {
            tool["function"]["name"]
                .as_str()
                .or(tool["name"].as_str())
                .map(str::to_owned)
        })
        .collect()
}

/// The system prompt of each model request recorded at `path`.
pub fn recorded_systems(path: &Path) -> Vec<String> {
    recorded_requests(path)
        .iter()
        .map(|request| {
            request["system"]
                .as_str()
                .expect("a system prompt")
                .to_owned()
        })
        .collect()
}
